// tsdb/db_read.cpp — reading one series: what the head, chunk rows and blocks hold in a time
// range (ReadParts), merged into one time-ordered vector (ReadSeries) or handed out as runs that
// share the cached blocks (ReadSeriesRuns).
#include <sqlite3.h>

#include <algorithm>
#include <span>

#include "tsdb/chunk.h"
#include "tsdb/db.h"
#include "tsdb/db_internal.h"

namespace gw::tsdb {

// Reads of one series spanning more blocks than this put none in the cache (db.h).
constexpr int64_t kAdmitBlocks = 4;

namespace {
thread_local DB::ReadBatch* t_batch = nullptr;  // the thread's innermost ReadBatch
}  // namespace

DB::ReadBatch::ReadBatch(DB* db) : db_(db), outer_(t_batch) {
  for (ReadBatch* b = outer_; b; b = b->outer_)
    if (b->db_ == db) inert_ = true;
  t_batch = this;
}

DB::ReadBatch::~ReadBatch() {
  auto end = [](sqlite3* c) {
    if (sqlite3_exec(c, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK)
      sqlite3_exec(c, "ROLLBACK", nullptr, nullptr, nullptr);
  };
  if (in_transaction_) end(db_->sql_);
  if (data_in_transaction_) end(db_->data_sql_);
  t_batch = outer_;
}

void DB::BeginDataRead() {
  if (data_sql_ == nullptr) return;
  for (ReadBatch* b = t_batch; b; b = b->outer_) {
    if (b->db_ != this || b->inert_) continue;
    if (!b->data_in_transaction_)
      b->data_in_transaction_ =
          sqlite3_get_autocommit(data_sql_) &&
          sqlite3_exec(data_sql_, "BEGIN", nullptr, nullptr, nullptr) == SQLITE_OK;
    return;
  }
}

std::unique_lock<std::mutex> DB::LockForRead() {
  for (ReadBatch* b = t_batch; b; b = b->outer_) {
    if (b->db_ != this || b->inert_) continue;
    if (!b->lock_.owns_lock()) {
      b->lock_ = std::unique_lock(sql_mu_);
      // A deferred BEGIN takes no lock itself; the first SELECT takes SQLite's read lock and
      // the transaction keeps it until COMMIT. Without it the reads run in autocommit as usual.
      b->in_transaction_ = sqlite3_get_autocommit(sql_) &&
                           sqlite3_exec(sql_, "BEGIN", nullptr, nullptr, nullptr) == SQLITE_OK;
    }
    return {};
  }
  return std::unique_lock(sql_mu_);
}

// What one series holds in [mint_ms, maxt_ms], by source: views of decoded blocks (shared with
// the cache), samples decoded from chunk rows, and the head's samples.
struct DB::SeriesParts {
  std::vector<Decoded> blocks;
  std::vector<std::span<const Sample>> block_spans;  // the window's part of each block
  std::vector<Sample> chunks, head;
};

Status DB::ReadChunkRowsLocked(SeriesRef ref, int64_t mint_ms, int64_t maxt_ms,
                               std::vector<Sample>* out) {
  sqlite3_stmt* s = select_chunks_;
  sqlite3_bind_int64(s, 1, static_cast<sqlite3_int64>(ref));
  sqlite3_bind_int64(s, 2, mint_ms);
  sqlite3_bind_int64(s, 3, maxt_ms);
  std::vector<Sample> decoded;
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    const auto crc = static_cast<uint32_t>(sqlite3_column_int64(s, 0));
    const std::string_view data = BlobColumn(s, 1);
    decoded.clear();
    Status dst =
        Crc32(data) == crc ? DecodeChunk(data, &decoded) : Status(Error{"checksum mismatch"});
    if (!dst.ok()) {
      ++chunk_corruptions_;
      Warn("tsdb: corrupt chunk of series " + std::to_string(ref) + ": " + dst.message() +
           "; skipped");
      continue;
    }
    for (const Sample& smp : decoded)
      if (smp.t_ms >= mint_ms && smp.t_ms <= maxt_ms) out->push_back(smp);
  }
  sqlite3_reset(s);
  if (rc != SQLITE_DONE) return Error{std::string("tsdb: read: ") + sqlite3_errmsg(sql_)};
  return Status::Ok();
}

Status DB::ReadParts(SeriesRef ref, int64_t mint_ms, int64_t maxt_ms, SeriesParts* parts) {
  // The head first, then SQLite: a chunk flushed in between is then seen at least once.
  int64_t persisted_maxt = INT64_MIN;
  Status st = head_.ReadSamples(ref, mint_ms, maxt_ms, &parts->head, &persisted_maxt);
  if (!st.ok()) return st;
  // Nothing persisted reaches the range (the usual case for rules and recent queries): no
  // SQLite read transaction. Why this cannot miss a sample moving from the head to SQLite: a
  // Flush commits its transaction first and only then, in Head::DropPersisted, removes the
  // chunks from the head and raises the series' persisted time, both under the series' lock
  // that ReadSamples took above. So either the head still held the chunks when we read it (we
  // have their samples), or the persisted time we got already covers them and we go on to
  // SQLite, which has them committed. Compact and retention only move or delete persisted
  // samples, never newer ones; the persisted time starts at the newest one found at open.
  if (mint_ms > persisted_maxt) return Status::Ok();
  {
    const std::unique_lock lock = LockForRead();
    sqlite3_stmt* s = select_blocks_;
    sqlite3_bind_int64(
        s, 1, static_cast<sqlite3_int64>(BlockId(ref, WindowOf(mint_ms, block_range_ms_))));
    sqlite3_bind_int64(
        s, 2, static_cast<sqlite3_int64>(BlockId(ref, WindowOf(maxt_ms, block_range_ms_))));
    sqlite3_bind_int64(s, 3, mint_ms);
    sqlite3_bind_int64(s, 4, maxt_ms);
    // A scan (see db.h) takes cached blocks but admits none.
    const bool admit =
        WindowOf(maxt_ms, block_range_ms_) - WindowOf(mint_ms, block_range_ms_) < kAdmitBlocks;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      // A range starting inside the block needs only its newest parts (db.h, LoadBlockLocked).
      const int64_t block_mint = sqlite3_column_int64(s, 2);
      if (Decoded d = LoadBlockLocked(ref, s, admit, mint_ms > block_mint ? mint_ms : INT64_MIN))
        parts->blocks.push_back(std::move(d));
    }
    sqlite3_reset(s);
    if (rc != SQLITE_DONE) return Error{std::string("tsdb: read: ") + sqlite3_errmsg(sql_)};

    // Chunk rows exist only where flushes do not compact (and until Compact moves them): while
    // the table is empty, no statement per series for them.
    if (chunk_rows_.load(std::memory_order_relaxed)) {
      if (Status cst = ReadChunkRowsLocked(ref, mint_ms, maxt_ms, &parts->chunks); !cst.ok())
        return cst;
    }
  }
  // Blocks are decoded once and shared (cache); only the part inside the window is wanted.
  auto t_less = [](const Sample& a, int64_t t) { return a.t_ms < t; };
  auto t_greater = [](int64_t t, const Sample& a) { return t < a.t_ms; };
  for (const Decoded& b : parts->blocks) {
    auto lo = std::lower_bound(b->begin(), b->end(), mint_ms, t_less);
    auto hi = std::upper_bound(lo, b->end(), maxt_ms, t_greater);
    parts->block_spans.emplace_back(b->data() + (lo - b->begin()), static_cast<size_t>(hi - lo));
  }
  return Status::Ok();
}

namespace {

// Every sample of `parts` in one time-ordered vector, one sample per timestamp (the first seen:
// blocks, then chunk rows, then the head).
void Flatten(std::span<const std::span<const Sample>> block_spans,
             const std::vector<Sample>& chunks, const std::vector<Sample>& head,
             std::vector<Sample>* out) {
  size_t total = chunks.size() + head.size();
  for (const auto& span : block_spans) total += span.size();
  out->clear();
  out->reserve(total);  // one allocation: large copies into fresh memory fault pages in once
  for (const auto& span : block_spans) out->insert(out->end(), span.begin(), span.end());
  out->insert(out->end(), chunks.begin(), chunks.end());
  out->insert(out->end(), head.begin(), head.end());
  SortUniqueByTime(out);
}

bool StrictlyIncreasing(const std::vector<Sample>& v) {
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i].t_ms <= v[i - 1].t_ms) return false;
  return true;
}

}  // namespace

Status DB::ReadSeries(SeriesRef ref, int64_t mint_ms, int64_t maxt_ms, std::vector<Sample>* out) {
  out->clear();
  if (mint_ms > maxt_ms) return Status::Ok();
  SeriesParts parts;
  Status st = ReadParts(ref, mint_ms, maxt_ms, &parts);
  if (!st.ok()) return st;
  Flatten(parts.block_spans, parts.chunks, parts.head, out);
  return Status::Ok();
}

Status DB::ReadSeriesRuns(SeriesRef ref, int64_t mint_ms, int64_t maxt_ms, SeriesRuns* out) {
  out->runs.clear();
  out->owners.clear();
  if (mint_ms > maxt_ms) return Status::Ok();
  SeriesParts parts;
  Status st = ReadParts(ref, mint_ms, maxt_ms, &parts);
  if (!st.ok()) return st;
  // Usually the sources follow each other in time (old blocks, then chunk rows, then the head):
  // then the blocks are handed out as they are and only the small rest is owned. Overlaps (a
  // chunk flushed while it was read, a block rewritten) take the merging path.
  std::vector<std::span<const Sample>> runs;
  for (const auto& span : parts.block_spans)
    if (!span.empty()) runs.push_back(span);
  bool in_order = StrictlyIncreasing(parts.chunks) && StrictlyIncreasing(parts.head);
  for (size_t i = 1; in_order && i < runs.size(); ++i)
    in_order = runs[i - 1].back().t_ms < runs[i].front().t_ms;
  int64_t last = runs.empty() ? INT64_MIN : runs.back().back().t_ms;
  for (const std::vector<Sample>* rest : {&parts.chunks, &parts.head}) {
    if (!in_order || rest->empty()) continue;
    in_order = last < rest->front().t_ms;
    last = rest->back().t_ms;
  }
  if (!in_order) {
    std::vector<Sample> merged;
    Flatten(parts.block_spans, parts.chunks, parts.head, &merged);
    out->Own(std::move(merged));
    return Status::Ok();
  }
  out->runs = std::move(runs);
  for (Decoded& b : parts.blocks) out->owners.push_back(std::move(b));
  for (std::vector<Sample>* rest : {&parts.chunks, &parts.head}) {
    if (rest->empty()) continue;
    auto owned = std::make_shared<const std::vector<Sample>>(std::move(*rest));
    out->runs.emplace_back(owned->data(), owned->size());
    out->owners.push_back(std::move(owned));
  }
  return Status::Ok();
}

}  // namespace gw::tsdb
