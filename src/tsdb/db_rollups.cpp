// tsdb/db_rollups.cpp — the 5-minute rollups: written beside chunk rows at a flush without
// compaction (InsertRollups), read back from the rollups table and from blocks (ReadRollups), and
// standing in for raw data that retention deleted in the ...WithRollups reads.
#include <sqlite3.h>

#include <algorithm>

#include "tsdb/block.h"
#include "tsdb/chunk.h"
#include "tsdb/db.h"
#include "tsdb/db_internal.h"

namespace gw::tsdb {

bool DB::InsertRollups(sqlite3_stmt* s, SeriesRef ref, const std::vector<EncodedChunk>& chunks) {
  std::vector<Sample> samples;
  std::vector<Rollup> rollups;
  for (const EncodedChunk& c : chunks) {
    samples.clear();
    if (DecodeChunk(c.data, &samples).ok()) AddToRollups(samples, &rollups);
  }
  for (const Rollup& r : rollups) {
    sqlite3_bind_int64(s, 1, static_cast<sqlite3_int64>(ref));
    sqlite3_bind_int64(s, 2, r.t_ms);
    sqlite3_bind_double(s, 3, r.min);
    sqlite3_bind_double(s, 4, r.max);
    sqlite3_bind_double(s, 5, r.sum);
    sqlite3_bind_int64(s, 6, static_cast<sqlite3_int64>(r.count));
    sqlite3_bind_double(s, 7, r.last);
    sqlite3_bind_int64(s, 8, r.last_t_ms);
    const bool ok = sqlite3_step(s) == SQLITE_DONE;
    sqlite3_reset(s);
    if (!ok) return false;
  }
  return true;
}

Status DB::ReadRollups(SeriesRef ref, int64_t mint_ms, int64_t maxt_ms, std::vector<Rollup>* out) {
  out->clear();
  const int64_t window_start =
      mint_ms < INT64_MIN + kRollupWindowMs ? INT64_MIN : RollupWindowStart(mint_ms);
  const int64_t from = std::max(window_start, rollup_horizon_.load());
  if (from > maxt_ms) return Status::Ok();
  std::lock_guard lock(sql_mu_);
  {
    Stmt q(sql_,
           "SELECT t, min_v, max_v, sum_v, count_v, last_v, last_t FROM rollups "
           "WHERE series_id = ? AND t >= ? AND t <= ? ORDER BY t");
    if (!q.ok()) return Error{std::string("tsdb: rollups: ") + sqlite3_errmsg(sql_)};
    sqlite3_stmt* s = q.get();
    sqlite3_bind_int64(s, 1, static_cast<sqlite3_int64>(ref));
    sqlite3_bind_int64(s, 2, from);
    sqlite3_bind_int64(s, 3, maxt_ms);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      Rollup r;
      r.t_ms = sqlite3_column_int64(s, 0);
      r.min = sqlite3_column_double(s, 1);
      r.max = sqlite3_column_double(s, 2);
      r.sum = sqlite3_column_double(s, 3);
      r.count = static_cast<uint64_t>(sqlite3_column_int64(s, 4));
      r.last = sqlite3_column_double(s, 5);
      r.last_t_ms = sqlite3_column_int64(s, 6);
      r.exact = false;  // this table's rows carry no first/NaN/stale fields (rollup.h)
      out->push_back(r);
    }
    if (rc != SQLITE_DONE) return Error{std::string("tsdb: rollups: ") + sqlite3_errmsg(sql_)};
  }
  {
    Stmt q(sql_,
           "SELECT id, crc32, data, rollups FROM blocks WHERE id BETWEEN ? AND ? ORDER BY id");
    if (!q.ok()) return Error{std::string("tsdb: rollups: ") + sqlite3_errmsg(sql_)};
    sqlite3_stmt* s = q.get();
    sqlite3_bind_int64(s, 1,
                       static_cast<sqlite3_int64>(BlockId(ref, WindowOf(from, block_range_ms_))));
    sqlite3_bind_int64(
        s, 2, static_cast<sqlite3_int64>(BlockId(ref, WindowOf(maxt_ms, block_range_ms_))));
    std::vector<Rollup> decoded;
    while (sqlite3_step(s) == SQLITE_ROW) {
      decoded.clear();
      // Stored rollups (of samples already expired), plus those of the samples still there.
      if (!BlobColumn(s, 3).empty()) {
        if (Status st = DecodeRollups(BlobColumn(s, 3), &decoded); !st.ok()) {
          ++chunk_corruptions_;
          Warn("tsdb: corrupt rollups of series " + std::to_string(ref) + ": " + st.message() +
               "; skipped");
          decoded.clear();
        }
      }
      if (sqlite3_column_type(s, 2) != SQLITE_NULL) {
        if (Decoded d = LoadBlockLocked(ref, s)) AddToRollups(*d, &decoded);
      }
      for (const Rollup& r : decoded)
        if (r.t_ms >= from && r.t_ms <= maxt_ms) out->push_back(r);
    }
  }
  auto by_t = [](const Rollup& a, const Rollup& b) { return a.t_ms < b.t_ms; };
  std::stable_sort(out->begin(), out->end(), by_t);
  size_t n = 0;
  for (size_t i = 0; i < out->size(); ++i) {
    if (n > 0 && (*out)[n - 1].t_ms == (*out)[i].t_ms)
      MergeRollup(&(*out)[n - 1], (*out)[i]);
    else
      (*out)[n++] = (*out)[i];
  }
  out->resize(n);
  return Status::Ok();
}

Status DB::RollupsBefore(SeriesRef ref, int64_t mint_ms, int64_t maxt_ms, int64_t first_raw_ms,
                         std::vector<Sample>* out) {
  out->clear();
  if (mint_ms >= raw_horizon_.load()) return Status::Ok();
  // Raw data before the horizon may be gone: one sample per rollup window (its last), up to the
  // first raw sample.
  const int64_t upto = first_raw_ms == INT64_MAX ? maxt_ms : first_raw_ms - 1;
  if (upto < mint_ms) return Status::Ok();
  std::vector<Rollup> rollups;
  Status st = ReadRollups(ref, mint_ms, upto, &rollups);
  if (!st.ok()) return st;
  for (const Rollup& r : rollups)
    if (r.count > 0 && r.last_t_ms >= mint_ms && r.last_t_ms <= upto)
      out->push_back({r.last_t_ms, r.last});
  return Status::Ok();
}

Status DB::ReadSeriesWithRollups(SeriesRef ref, int64_t mint_ms, int64_t maxt_ms,
                                 std::vector<Sample>* out) {
  Status st = ReadSeries(ref, mint_ms, maxt_ms, out);
  if (!st.ok()) return st;
  std::vector<Sample> merged;
  st = RollupsBefore(ref, mint_ms, maxt_ms, out->empty() ? INT64_MAX : out->front().t_ms, &merged);
  if (!st.ok() || merged.empty()) return st;
  merged.insert(merged.end(), out->begin(), out->end());
  out->swap(merged);
  return st;
}

Status DB::ReadSeriesRunsWithRollups(SeriesRef ref, int64_t mint_ms, int64_t maxt_ms,
                                     SeriesRuns* out) {
  Status st = ReadSeriesRuns(ref, mint_ms, maxt_ms, out);
  if (!st.ok()) return st;
  std::vector<Sample> rollups;
  st = RollupsBefore(ref, mint_ms, maxt_ms,
                     out->runs.empty() ? INT64_MAX : out->runs.front().front().t_ms, &rollups);
  if (!st.ok() || rollups.empty()) return st;
  auto owned = std::make_shared<const std::vector<Sample>>(std::move(rollups));
  out->runs.emplace(out->runs.begin(), owned->data(), owned->size());
  out->owners.push_back(std::move(owned));
  return st;
}

}  // namespace gw::tsdb
