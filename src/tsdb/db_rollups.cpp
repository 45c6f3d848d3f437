// tsdb/db_rollups.cpp — the 5-minute rollups: written beside chunk rows at a flush without
// compaction (InsertRollups), read back from the rollups table and from blocks (ReadRollups), and
// standing in for raw data that retention deleted in the ...WithRollups reads.
#include <sqlite3.h>

#include <algorithm>
#include <bit>
#include <iterator>
#include <memory>

#include "tsdb/block.h"
#include "tsdb/chunk.h"
#include "tsdb/db.h"
#include "tsdb/db_internal.h"

namespace gw::tsdb {

namespace {

// The rollups table's `ext` column (format 3; docs/tsdb-format.md §3): the fields its REAL
// columns lack. byte 3, 8-byte little-endian first, 8-byte counter_correction, varint
// (first_t - t), uvarint nan_count, uvarint stale_count, varint (first_raw_t - t), varint
// (last_raw_t - t), byte flags (1: newest_stale, 2: inexact). NULL in rows written by version 2.
constexpr char kExtFormat = 3;

void PutDouble(std::string* out, double v) {
  const auto bits = std::bit_cast<uint64_t>(v);
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(bits >> (8 * i)));
}

bool GetDouble(std::string_view* in, double* v) {
  if (in->size() < 8) return false;
  uint64_t bits = 0;
  for (int i = 0; i < 8; ++i)
    bits |= static_cast<uint64_t>(static_cast<unsigned char>((*in)[i])) << (8 * i);
  in->remove_prefix(8);
  *v = std::bit_cast<double>(bits);
  return true;
}

int64_t Offset(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}

int64_t Add(int64_t a, int64_t d) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(d));
}

std::string EncodeExt(const Rollup& r) {
  std::string out(1, kExtFormat);
  PutDouble(&out, r.first);
  PutDouble(&out, r.counter_correction);
  PutVarint(&out, Offset(r.first_t_ms, r.t_ms));
  PutUvarint(&out, r.nan_count);
  PutUvarint(&out, r.stale_count);
  PutVarint(&out, Offset(r.first_raw_t_ms, r.t_ms));
  PutVarint(&out, Offset(r.last_raw_t_ms, r.t_ms));
  out.push_back(static_cast<char>((r.newest_stale ? 1 : 0) | (r.exact ? 0 : 2)));
  return out;
}

bool DecodeExt(std::string_view in, Rollup* r) {
  int64_t d0, d1, d2;
  uint64_t nan, stale;
  if (in.empty() || in[0] != kExtFormat) return false;
  in.remove_prefix(1);
  if (!GetDouble(&in, &r->first) || !GetDouble(&in, &r->counter_correction) ||
      !GetVarint(&in, &d0) || !GetUvarint(&in, &nan) || !GetUvarint(&in, &stale) ||
      !GetVarint(&in, &d1) || !GetVarint(&in, &d2) || in.size() != 1 || nan > UINT32_MAX ||
      stale > UINT32_MAX || (in[0] & ~3) != 0)
    return false;
  r->first_t_ms = Add(r->t_ms, d0);
  r->nan_count = static_cast<uint32_t>(nan);
  r->stale_count = static_cast<uint32_t>(stale);
  r->first_raw_t_ms = Add(r->t_ms, d1);
  r->last_raw_t_ms = Add(r->t_ms, d2);
  r->newest_stale = in[0] & 1;
  r->exact = !(in[0] & 2);
  return r->raw_count() > 0 && r->first_raw_t_ms <= r->last_raw_t_ms;
}

// A row of the rollups table (columns t, min_v, max_v, sum_v, count_v, last_v, last_t, ext).
// False when its ext is malformed.
bool RollupFromRow(sqlite3_stmt* s, Rollup* r) {
  *r = Rollup{};
  r->t_ms = sqlite3_column_int64(s, 0);
  r->min = sqlite3_column_double(s, 1);
  r->max = sqlite3_column_double(s, 2);
  r->sum = sqlite3_column_double(s, 3);
  r->count = static_cast<uint64_t>(std::max<sqlite3_int64>(0, sqlite3_column_int64(s, 4)));
  r->last = sqlite3_column_double(s, 5);
  r->last_t_ms = sqlite3_column_int64(s, 6);
  if (sqlite3_column_type(s, 7) != SQLITE_NULL) return DecodeExt(BlobColumn(s, 7), r);
  // Written by version 2: no first/NaN/stale fields (rollup.h); the known raw-sample bounds.
  r->first_raw_t_ms = r->t_ms;
  r->last_raw_t_ms = r->last_t_ms;
  r->exact = false;
  return true;
}

}  // namespace

bool DB::InsertRollups(sqlite3_stmt* select, sqlite3_stmt* insert, SeriesRef ref,
                       const std::vector<EncodedChunk>& chunks) {
  std::vector<Sample> samples;
  std::vector<Rollup> rollups;
  for (const EncodedChunk& c : chunks) {
    samples.clear();
    if (DecodeChunk(c.data, &samples).ok()) AddToRollups(samples, &rollups);
  }
  rollup_rows_ = true;
  for (Rollup r : rollups) {
    // A window split across flushes: the row there holds its older samples.
    sqlite3_bind_int64(select, 1, static_cast<sqlite3_int64>(ref));
    sqlite3_bind_int64(select, 2, r.t_ms);
    sqlite3_bind_int64(select, 3, r.t_ms);
    if (sqlite3_step(select) == SQLITE_ROW) {
      Rollup old;
      if (RollupFromRow(select, &old)) {
        MergeRollup(&old, r);
        r = old;
      } else {
        ++chunk_corruptions_;
        Warn("tsdb: corrupt rollups row of series " + std::to_string(ref) + " at " +
             std::to_string(r.t_ms) + "; replaced by the newer samples' rollup");
      }
    }
    sqlite3_reset(select);
    const std::string ext = EncodeExt(r);
    sqlite3_stmt* s = insert;
    sqlite3_bind_int64(s, 1, static_cast<sqlite3_int64>(ref));
    sqlite3_bind_int64(s, 2, r.t_ms);
    sqlite3_bind_double(s, 3, r.min);
    sqlite3_bind_double(s, 4, r.max);
    sqlite3_bind_double(s, 5, r.sum);
    sqlite3_bind_int64(s, 6, static_cast<sqlite3_int64>(r.count));
    sqlite3_bind_double(s, 7, r.last);
    sqlite3_bind_int64(s, 8, r.last_t_ms);
    sqlite3_bind_blob(s, 9, ext.data(), static_cast<int>(ext.size()), SQLITE_TRANSIENT);
    const bool ok = sqlite3_step(s) == SQLITE_DONE;
    sqlite3_reset(s);
    if (!ok) return false;
  }
  return true;
}

bool DB::DecodeRollupsCounted(SeriesRef ref, std::string_view blob, std::vector<Rollup>* out) {
  ++rollups_decoded_;
  if (Status st = DecodeRollups(blob, out); !st.ok()) {
    ++chunk_corruptions_;
    Warn("tsdb: corrupt rollups of series " + std::to_string(ref) + ": " + st.message() +
         "; skipped");
    return false;
  }
  return true;
}

DB::RollupCache::Ptr DB::DecodeRollupsCached(SeriesRef ref, sqlite3_stmt* s) {
  const std::string_view blob = BlobColumn(s, 3);
  const auto id = static_cast<uint64_t>(sqlite3_column_int64(s, 0));
  // Keyed by the block, checked against the column's own CRC: a rewritten block (compaction,
  // retention converting older rollups) is never answered from an older decode.
  const uint32_t crc = Crc32(blob);
  if (RollupCache::Ptr hit = rollup_cache_->Get(id, crc)) return hit;
  auto decoded = std::make_shared<std::vector<Rollup>>();
  if (!DecodeRollupsCounted(ref, blob, decoded.get())) return nullptr;
  decoded->shrink_to_fit();
  const size_t bytes = decoded->capacity() * sizeof(Rollup);
  rollup_cache_->Put(id, crc, decoded, bytes);
  return decoded;
}

Status DB::ReadRollups(SeriesRef ref, int64_t mint_ms, int64_t maxt_ms, std::vector<Rollup>* out) {
  out->clear();
  const int64_t window_start =
      mint_ms < INT64_MIN + kRollupWindowMs ? INT64_MIN : RollupWindowStart(mint_ms);
  const int64_t from = std::max(window_start, rollup_horizon_.load());
  if (from > maxt_ms) return Status::Ok();
  std::vector<Rollup> rows;  // the rollups table's (chunk rows left by non-compacting flushes)
  const std::unique_lock lock = LockForRead();
  if (rollup_rows_) {
    sqlite3_stmt* s = select_rollup_rows_;
    sqlite3_bind_int64(s, 1, static_cast<sqlite3_int64>(ref));
    sqlite3_bind_int64(s, 2, from);
    sqlite3_bind_int64(s, 3, maxt_ms);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      Rollup r;
      if (RollupFromRow(s, &r)) {
        rows.push_back(r);
      } else {
        ++chunk_corruptions_;
        Warn("tsdb: corrupt rollups row of series " + std::to_string(ref) + "; skipped");
      }
    }
    sqlite3_reset(s);
    if (rc != SQLITE_DONE) return Error{std::string("tsdb: rollups: ") + sqlite3_errmsg(sql_)};
  }
  sqlite3_stmt* s = select_block_rollups_;
  sqlite3_bind_int64(s, 1,
                     static_cast<sqlite3_int64>(BlockId(ref, WindowOf(from, block_range_ms_))));
  sqlite3_bind_int64(s, 2,
                     static_cast<sqlite3_int64>(BlockId(ref, WindowOf(maxt_ms, block_range_ms_))));
  // Each block's rollups, in time order (the cache's shared decode, or computed here), then
  // copied into `out` at its exact size: grown by doubling, a week's 2016 windows of 120 bytes
  // per series were copied again at each regrowth, into fresh pages.
  std::vector<RollupCache::Ptr> parts;
  std::vector<Rollup> computed;
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    const std::string_view blob = BlobColumn(s, 3);
    // Format 3 stands for every sample the block ever had; older rollups only for samples
    // retention deleted, so those of the samples still there are computed (column 2: 1 when
    // the block has samples and its rollups are not format 3).
    if (sqlite3_column_int(s, 2) == 0) {
      if (blob.empty()) continue;
      if (RollupCache::Ptr r = DecodeRollupsCached(ref, s)) parts.push_back(std::move(r));
      continue;
    }
    if (blob.empty()) {
      // A sparse block (DBOptions::rollup_min_samples): its rollups are its samples', computed
      // once and cached like a decoded column, keyed by the data's CRC (the other half of the
      // key space from the columns' CRCs).
      const auto id = static_cast<uint64_t>(sqlite3_column_int64(s, 0));
      const uint32_t key = static_cast<uint32_t>(sqlite3_column_int64(s, 1)) ^ 0xffffffffu;
      if (RollupCache::Ptr hit = rollup_cache_->Get(id, key)) {
        parts.push_back(std::move(hit));
        continue;
      }
      auto own = std::make_shared<std::vector<Rollup>>();
      if (Decoded d = LoadBlockLocked(ref, s, /*admit=*/false)) {
        AddToRollups(*d, own.get());
        own->shrink_to_fit();
        rollup_cache_->Put(id, key, own, own->capacity() * sizeof(Rollup));
      }
      parts.push_back(std::move(own));
      continue;
    }
    auto decoded = std::make_shared<std::vector<Rollup>>();
    if (!DecodeRollupsCounted(ref, blob, decoded.get())) decoded->clear();
    if (Decoded d = LoadBlockLocked(ref, s, /*admit=*/false)) {
      computed.clear();
      AddToRollups(*d, &computed);
      MergeRollups(decoded.get(), computed);
    }
    parts.push_back(std::move(decoded));
  }
  sqlite3_reset(s);
  if (rc != SQLITE_DONE) return Error{std::string("tsdb: rollups: ") + sqlite3_errmsg(sql_)};
  auto in_range = [&](const Rollup& r) { return r.t_ms >= from && r.t_ms <= maxt_ms; };
  size_t n = 0;
  for (const RollupCache::Ptr& p : parts)
    n += static_cast<size_t>(std::count_if(p->begin(), p->end(), in_range));
  out->reserve(n + rows.size());
  for (const RollupCache::Ptr& p : parts)
    std::copy_if(p->begin(), p->end(), std::back_inserter(*out), in_range);
  // Rows of the table are of samples newer than the blocks' of the same window (a block is
  // written from the chunk rows, whose rows are then deleted) — or the only ones there.
  MergeRollups(out, rows);
  return Status::Ok();
}

Status DB::ReadCompleteRollups(SeriesRef ref, int64_t mint_ms, int64_t maxt_ms,
                               std::vector<Rollup>* out, int64_t* complete_before_ms) {
  out->clear();
  // Read before SQLite: a flush in between only adds rows for windows this leaves out.
  const int64_t settled = head_.SettledBefore(ref);
  // Rollups retention deleted while raw samples stayed (only when the options keep rollups for
  // less time than samples; the configuration refuses that): no window before it is known.
  const int64_t rollup_h = rollup_horizon_.load();
  *complete_before_ms = rollup_h > raw_horizon_.load() && mint_ms < rollup_h ? INT64_MIN : settled;
  const int64_t end = maxt_ms == INT64_MAX ? settled : std::min(maxt_ms + 1, settled);
  if (end < INT64_MIN + kRollupWindowMs) return Status::Ok();
  const int64_t last_start = end - kRollupWindowMs;  // windows [t, t + 5m) with t + 5m <= end
  if (last_start < mint_ms) return Status::Ok();
  Status st = ReadRollups(ref, mint_ms, last_start, out);
  if (!st.ok()) return st;
  out->erase(
      std::remove_if(out->begin(), out->end(), [&](const Rollup& r) { return r.t_ms < mint_ms; }),
      out->end());
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
