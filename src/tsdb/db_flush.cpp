// tsdb/db_flush.cpp — moving data from memory to SQLite: Flush (the head's chunks, as chunk
// rows or, with compact_on_flush, merged straight into blocks) and Compact (chunk rows into
// blocks), both one SQLite transaction; CompactLocked is the block builder they share.
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <unordered_map>

#include "tsdb/block.h"
#include "tsdb/chunk.h"
#include "tsdb/db.h"
#include "tsdb/db_internal.h"

namespace gw::tsdb {

// One series' work in a compaction: the fresh samples (from the head) plus, filled in by
// CompactLocked, what SQLite holds for the windows they touch, and the blocks to write.
struct DB::BlockJob {
  SeriesRef ref = 0;
  std::vector<Sample> fresh;  // time-ordered
  bool had_chunk_rows = false;
  struct Window {
    int64_t window = 0;
    std::vector<Sample> samples;  // existing block first, then newer; sorted before encoding
    size_t existing = 0;          // how many of `samples` came from the block
    // The block's rollups: format 3 (`full`) stands for every sample the block ever had;
    // older ones only for samples retention deleted.
    std::vector<Rollup> kept_rollups;
    bool full = false;
    std::string data, rollups;
    // Timestamps stored apart (docs/tsdb-format.md §1b, "Shared timestamps"): their encoding,
    // when `data` holds only the values; empty otherwise.
    std::string timestamps;
    int64_t mint = 0, maxt = 0;
  };
  std::vector<Window> windows;
};

Status DB::Flush() {
  const auto start = std::chrono::steady_clock::now();
  if (!wal_) return Error{"tsdb: " + options_.dir + " is open read-only"};
  // A failed WAL write (logged there) does not stop the flush: SQLite makes the data durable.
  (void)Commit();
  auto collected = head_.CutAndCollect(/*cut_open=*/true);
  uint64_t written = 0;
  std::vector<BlockJob> jobs;
  if (options_.compact_on_flush) {
    // Decode the head's chunks for the blocks, on two threads.
    jobs.resize(collected.size());
    std::atomic<size_t> next{0};
    std::atomic<bool> bad{false};
    auto decode = [&] {
      for (size_t i; (i = next.fetch_add(1)) < collected.size();) {
        jobs[i].ref = collected[i].first;
        size_t n = 0;
        for (const EncodedChunk& c : collected[i].second) n += c.num_samples;
        jobs[i].fresh.reserve(n);
        for (const EncodedChunk& c : collected[i].second)
          if (!DecodeChunk(c.data, &jobs[i].fresh).ok()) bad = true;
      }
    };
    std::thread helper;
    if (collected.size() > 1) helper = std::thread(decode);
    decode();
    if (helper.joinable()) helper.join();
    // The head encoded these chunks itself: failing to decode one is a bug, not bad data.
    if (bad) return Error{"tsdb: flush: an in-memory chunk does not decode"};
    for (const auto& c : collected) written += c.second.size();
  }
  {
    std::lock_guard lock(sql_mu_);
    auto exec = [this](const char* sql) {
      return sqlite3_exec(sql_, sql, nullptr, nullptr, nullptr) == SQLITE_OK;
    };
    if (!exec("BEGIN IMMEDIATE")) return Error{std::string("tsdb: flush: ") + sqlite3_errmsg(sql_)};
    Stmt ins_series(sql_, "INSERT OR REPLACE INTO series(id, labels) VALUES(?, ?)");
    bool ok = ins_series.ok();
    for (size_t i = 0; ok && i < unpersisted_series_.size(); ++i) {
      const std::string blob = EncodeLabels(head_.LabelsOf(unpersisted_series_[i]));
      sqlite3_stmt* s = ins_series.get();
      sqlite3_bind_int64(s, 1, static_cast<sqlite3_int64>(unpersisted_series_[i]));
      sqlite3_bind_blob(s, 2, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
      ok = sqlite3_step(s) == SQLITE_DONE;
      sqlite3_reset(s);
    }
    std::string error;
    if (ok && options_.compact_on_flush) {
      const auto cstart = std::chrono::steady_clock::now();
      Status cst = CompactLocked(&jobs);
      if (!cst.ok()) {
        ok = false;
        error = cst.message();
      } else {
        const double secs =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - cstart).count();
        last_compaction_seconds_ = secs;
        compaction_seconds_total_.fetch_add(secs);
        if (!jobs.empty()) ++compactions_;
      }
    } else if (ok) {
      chunk_rows_ = true;  // before the rows exist: reads look from now on (sql_mu_ held)
      Stmt ins_chunk(sql_,
                     "INSERT OR REPLACE INTO chunks(series_id, mint, maxt, num_samples, encoding, "
                     "crc32, data) VALUES(?, ?, ?, ?, ?, ?, ?)");
      Stmt sel_rollup(sql_,
                      "SELECT t, min_v, max_v, sum_v, count_v, last_v, last_t, ext FROM rollups "
                      "WHERE series_id = ? AND t >= ? AND t <= ?");
      Stmt ins_rollup(sql_,
                      "INSERT OR REPLACE INTO rollups(series_id, t, min_v, max_v, sum_v, count_v, "
                      "last_v, last_t, ext) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)");
      ok = ins_chunk.ok() && sel_rollup.ok() && ins_rollup.ok();
      for (size_t i = 0; ok && i < collected.size(); ++i) {
        for (const EncodedChunk& c : collected[i].second) {
          sqlite3_stmt* s = ins_chunk.get();
          sqlite3_bind_int64(s, 1, static_cast<sqlite3_int64>(collected[i].first));
          sqlite3_bind_int64(s, 2, c.mint_ms);
          sqlite3_bind_int64(s, 3, c.maxt_ms);
          sqlite3_bind_int64(s, 4, c.num_samples);
          sqlite3_bind_int(s, 5, ChunkEncodingOf(c.data));
          sqlite3_bind_int64(s, 6, Crc32(c.data));
          sqlite3_bind_blob(s, 7, c.data.data(), static_cast<int>(c.data.size()), SQLITE_STATIC);
          ok = sqlite3_step(s) == SQLITE_DONE;
          sqlite3_reset(s);
          if (!ok) break;
          ++written;
        }
        if (ok)
          ok = InsertRollups(sel_rollup.get(), ins_rollup.get(), collected[i].first,
                             collected[i].second);
      }
    }
    if (!ok || !exec("COMMIT")) {
      std::string msg = error.empty() ? sqlite3_errmsg(sql_) : error;
      exec("ROLLBACK");
      flush_log_->Failed(msg, std::chrono::steady_clock::now());
      return Error{"tsdb: flush: " + msg};
    }
    flush_log_->Succeeded(std::chrono::steady_clock::now());
    // Fold SQLite's own journal into the database file and truncate it, so the data is not on
    // disk twice between SQLite's automatic checkpoints; return pages freed by compaction to
    // the file system. Failure here loses nothing.
    exec("PRAGMA incremental_vacuum");
    exec("PRAGMA wal_checkpoint(TRUNCATE)");
  }
  // Persisted: drop from memory (readers look at the head before SQLite, so they never miss a
  // chunk in between), then forget the WAL that held it.
  for (const auto& [ref, chunks] : collected) head_.DropPersisted(ref, chunks.size());
  unpersisted_series_.clear();
  chunks_persisted_ += written;
  // Everything appended so far is in SQLite: the WAL (and any records it kept after failed
  // writes) is no longer needed.
  Status st = wal_->Checkpoint();
  wal_pending_bytes_ = wal_->pending_bytes();
  last_flush_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return st;
}

Status DB::Compact() {
  const auto start = std::chrono::steady_clock::now();
  if (!wal_) return Error{"tsdb: " + options_.dir + " is open read-only"};
  std::lock_guard lock(sql_mu_);
  std::vector<BlockJob> jobs;
  {
    Stmt q(sql_, "SELECT DISTINCT series_id FROM chunks ORDER BY series_id");
    if (!q.ok()) return Error{std::string("tsdb: compact: ") + sqlite3_errmsg(sql_)};
    while (sqlite3_step(q.get()) == SQLITE_ROW)
      jobs.emplace_back().ref = static_cast<SeriesRef>(sqlite3_column_int64(q.get(), 0));
  }
  if (jobs.empty()) return Status::Ok();
  auto exec = [this](const char* sql) {
    return sqlite3_exec(sql_, sql, nullptr, nullptr, nullptr) == SQLITE_OK;
  };
  if (!exec("BEGIN IMMEDIATE")) return Error{std::string("tsdb: compact: ") + sqlite3_errmsg(sql_)};
  Status st = CompactLocked(&jobs);
  if (!st.ok() || !exec("COMMIT")) {
    std::string msg = st.ok() ? sqlite3_errmsg(sql_) : st.message();
    exec("ROLLBACK");
    return Error{"tsdb: compact: " + msg};
  }
  exec("PRAGMA incremental_vacuum");
  exec("PRAGMA wal_checkpoint(TRUNCATE)");
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  last_compaction_seconds_ = secs;
  compaction_seconds_total_.fetch_add(secs);
  ++compactions_;
  return Status::Ok();
}

namespace {

// The rollups of every sample a window's block will stand for (format 3), and `samples` sorted
// and unique. `samples` holds the block's `existing` samples, then the new ones; `kept` is what
// the block stored: with `full` (format 3) the rollups of every sample it ever had, else those
// of samples retention deleted. The present samples are summarised afresh (the same sums, bit
// for bit, as one pass over them, whatever the flushes were); stored rollups are kept for
// samples no longer there: all of them when the block had no samples left (and the new ones
// are newer), else those of windows wholly before the first sample (format 3) or all (older
// formats, which hold only deleted samples' windows).
// *only_present: the result is just the present samples' rollups (none kept for deleted ones).
std::vector<Rollup> WindowRollups(std::vector<Sample>* samples, size_t existing,
                                  std::vector<Rollup> kept, bool full, bool* only_present) {
  const bool deleted_only = !full || existing == 0;
  const bool newer =
      kept.empty() || existing > 0 || (*samples)[existing].t_ms > kept.back().last_raw_t_ms;
  SortUniqueByTime(samples);
  if (!deleted_only || !newer) {
    // Keep only windows that cannot hold a present sample.
    const int64_t first = samples->front().t_ms;
    std::erase_if(kept, [&](const Rollup& r) { return r.t_ms > first - kRollupWindowMs; });
  }
  *only_present = kept.empty();
  std::vector<Rollup> computed;
  AddToRollups(*samples, &computed);
  MergeRollups(&kept, computed);
  return kept;
}

// Compaction's timestamps rows: the id of the row holding `encoded` for `window` — one this run
// wrote (`written`), one already there (`find`), or a new one (`put`).
Expected<int64_t> StoreTimestamps(sqlite3* sql, int64_t window, const std::string& encoded,
                                  sqlite3_stmt* find, sqlite3_stmt* put,
                                  std::unordered_map<std::string, int64_t>* written) {
  std::string key(reinterpret_cast<const char*>(&window), sizeof window);
  key += encoded;
  if (auto it = written->find(key); it != written->end()) return it->second;
  const uint32_t crc = Crc32(encoded);
  // A row of an earlier run, still used by the blocks this run did not rewrite.
  sqlite3_bind_int64(find, 1, window);
  sqlite3_bind_int64(find, 2, crc);
  sqlite3_bind_blob(find, 3, encoded.data(), static_cast<int>(encoded.size()), SQLITE_STATIC);
  int64_t id = sqlite3_step(find) == SQLITE_ROW ? sqlite3_column_int64(find, 0) : 0;
  sqlite3_reset(find);
  if (id == 0) {
    sqlite3_bind_int64(put, 1, window);
    sqlite3_bind_int64(put, 2, crc);
    sqlite3_bind_blob(put, 3, encoded.data(), static_cast<int>(encoded.size()), SQLITE_STATIC);
    const bool ok = sqlite3_step(put) == SQLITE_DONE;
    sqlite3_reset(put);
    if (!ok) return Error{sqlite3_errmsg(sql)};
    id = sqlite3_last_insert_rowid(sql);
  }
  written->emplace(std::move(key), id);
  return id;
}

}  // namespace

Status DB::CompactLocked(std::vector<BlockJob>* jobs) {
  Stmt sel_chunks(sql_, "SELECT crc32, data FROM chunks WHERE series_id = ? ORDER BY maxt");
  Stmt sel_block(sql_, "SELECT crc32, data, rollups, ts_id FROM blocks WHERE id = ?");
  Stmt sel_ts(sql_, kSelectTimestampsSql);
  Stmt find_ts(sql_, "SELECT id FROM timestamps WHERE window = ? AND crc32 = ? AND data = ?");
  Stmt put_ts(sql_, "INSERT INTO timestamps(window, crc32, data) VALUES(?, ?, ?)");
  Stmt put_block(sql_,
                 "INSERT OR REPLACE INTO blocks(id, mint, maxt, num_samples, crc32, rollups, data, "
                 "ts_id) VALUES(?, ?, ?, ?, ?, ?, ?, ?)");
  Stmt del_chunks(sql_, "DELETE FROM chunks WHERE series_id = ?");
  Stmt del_rollups(sql_, "DELETE FROM rollups WHERE series_id = ? AND t >= ? AND t < ?");
  if (!sel_chunks.ok() || !sel_block.ok() || !sel_ts.ok() || !find_ts.ok() || !put_ts.ok() ||
      !put_block.ok() || !del_chunks.ok() || !del_rollups.ok())
    return Error{sqlite3_errmsg(sql_)};
  // Timestamps rows written or found in this run, by window and encoding.
  std::unordered_map<std::string, int64_t> ts_ids;
  int64_t min_window = INT64_MAX, max_window = INT64_MIN;  // the windows written
  auto corrupt = [this](SeriesRef ref, const std::string& what) {
    ++chunk_corruptions_;
    Warn("tsdb: corrupt chunk of series " + std::to_string(ref) + ": " + what + "; skipped");
  };
  const int64_t range = block_range_ms_;
  const int level = options_.zstd_level;
  // rollup_min_samples is per 6 h: a block range of 24 h needs 4 times the samples, the same
  // samples per 5-minute window.
  const uint64_t min_samples = static_cast<uint64_t>(options_.rollup_min_samples) *
                               static_cast<uint64_t>(range) / (6ULL * 3600 * 1000);
  // Series in batches, to bound memory: read (SQLite), encode (2 threads), write (SQLite).
  constexpr size_t kBatch = 64;
  for (size_t b0 = 0; b0 < jobs->size(); b0 += kBatch) {
    const size_t b1 = std::min(jobs->size(), b0 + kBatch);
    for (size_t j = b0; j < b1; ++j) {
      BlockJob& job = (*jobs)[j];
      // Chunk rows left by flushes without compaction: older than the fresh samples.
      std::vector<Sample> merged;
      sqlite3_stmt* s = sel_chunks.get();
      sqlite3_bind_int64(s, 1, static_cast<sqlite3_int64>(job.ref));
      while (sqlite3_step(s) == SQLITE_ROW) {
        job.had_chunk_rows = true;
        const std::string_view data = BlobColumn(s, 1);
        if (Crc32(data) != static_cast<uint32_t>(sqlite3_column_int64(s, 0))) {
          corrupt(job.ref, "checksum mismatch");
          continue;
        }
        const size_t before = merged.size();
        if (Status dst = DecodeChunk(data, &merged); !dst.ok()) {
          merged.resize(before);
          corrupt(job.ref, dst.message());
        }
      }
      sqlite3_reset(s);
      if (merged.empty())
        merged.swap(job.fresh);
      else
        merged.insert(merged.end(), job.fresh.begin(), job.fresh.end());
      job.fresh = std::vector<Sample>();
      // Normally already in order (chunk rows are older than the head); a window must come out
      // as one run below, or a later write of the same block would replace an earlier one.
      auto by_time = [](const Sample& a, const Sample& b) { return a.t_ms < b.t_ms; };
      if (!std::is_sorted(merged.begin(), merged.end(), by_time))
        std::stable_sort(merged.begin(), merged.end(), by_time);
      // Split by window; merge each with the block already there.
      for (size_t i = 0; i < merged.size();) {
        const int64_t w = WindowOf(merged[i].t_ms, range);
        size_t k = i;
        while (k < merged.size() && WindowOf(merged[k].t_ms, range) == w) ++k;
        BlockJob::Window win;
        win.window = w;
        sqlite3_stmt* q = sel_block.get();
        sqlite3_bind_int64(q, 1, static_cast<sqlite3_int64>(BlockId(job.ref, w)));
        if (sqlite3_step(q) == SQLITE_ROW) {
          const std::string_view blob = BlobColumn(q, 2);
          if (!blob.empty() && !DecodeRollups(blob, &win.kept_rollups).ok()) {
            win.kept_rollups.clear();
            corrupt(job.ref,
                    "rollups of block " + std::to_string(w) + " (recomputed from its samples)");
          } else {
            win.full = RollupsFormat(blob) == 3;
          }
          if (sqlite3_column_type(q, 1) != SQLITE_NULL) {
            const std::string_view data = BlobColumn(q, 1);
            Status dst = Crc32(data) == static_cast<uint32_t>(sqlite3_column_int64(q, 0))
                             ? DecodeStoredBlock(data, sqlite3_column_int64(q, 3), sel_ts.get(),
                                                 &win.samples)
                             : Status(Error{"checksum mismatch"});
            if (!dst.ok()) {
              win.samples.clear();
              corrupt(job.ref, "block " + dst.message());
            }
          }
        }
        sqlite3_reset(q);
        win.existing = win.samples.size();
        win.samples.insert(win.samples.end(), merged.begin() + static_cast<ptrdiff_t>(i),
                           merged.begin() + static_cast<ptrdiff_t>(k));
        min_window = std::min(min_window, w);
        max_window = std::max(max_window, w);
        job.windows.push_back(std::move(win));
        i = k;
      }
    }
    // Encode: pure CPU, on two threads.
    std::vector<BlockJob::Window*> work;
    for (size_t j = b0; j < b1; ++j)
      for (auto& w : (*jobs)[j].windows) work.push_back(&w);
    std::atomic<size_t> next{0};
    auto encode = [&] {
      for (size_t i; (i = next.fetch_add(1)) < work.size();) {
        BlockJob::Window& w = *work[i];
        bool only_present = false;
        std::vector<Rollup> rollups =
            WindowRollups(&w.samples, w.existing, std::move(w.kept_rollups), w.full, &only_present);
        // A sparse block whose rollups are exactly its samples' keeps no rollups column: readers
        // compute them from the samples (docs/tsdb-format.md §1b, "Sparse blocks").
        w.rollups = only_present && w.samples.size() < min_samples ? std::string()
                                                                   : EncodeRollups(rollups, level);
        // Timestamps that cost more than a regular grid's few bytes go to the timestamps table,
        // where the series scraped with this one share them.
        w.timestamps = SharedTimestamps(w.samples, level);
        w.data = w.timestamps.empty() ? EncodeBlock(w.samples, level)
                                      : EncodeBlockValues(w.samples, level);
        w.mint = w.samples.front().t_ms;
        w.maxt = w.samples.back().t_ms;
      }
    };
    {
      std::thread helper;
      if (work.size() > 1) helper = std::thread(encode);
      encode();
      if (helper.joinable()) helper.join();
    }
    // Write.
    for (size_t j = b0; j < b1; ++j) {
      BlockJob& job = (*jobs)[j];
      for (BlockJob::Window& w : job.windows) {
        int64_t ts_id = 0;
        if (!w.timestamps.empty()) {
          Expected<int64_t> id =
              StoreTimestamps(sql_, w.window, w.timestamps, find_ts.get(), put_ts.get(), &ts_ids);
          if (!id.ok()) return Error{id.error().message};
          ts_id = *id;
        }
        sqlite3_stmt* s = put_block.get();
        sqlite3_bind_int64(s, 1, static_cast<sqlite3_int64>(BlockId(job.ref, w.window)));
        sqlite3_bind_int64(s, 2, w.mint);
        sqlite3_bind_int64(s, 3, w.maxt);
        sqlite3_bind_int64(s, 4, static_cast<sqlite3_int64>(w.samples.size()));
        sqlite3_bind_int64(s, 5, Crc32(w.data));
        sqlite3_bind_blob(s, 6, w.rollups.data(), static_cast<int>(w.rollups.size()),
                          SQLITE_STATIC);
        sqlite3_bind_blob(s, 7, w.data.data(), static_cast<int>(w.data.size()), SQLITE_STATIC);
        if (ts_id > 0)
          sqlite3_bind_int64(s, 8, ts_id);
        else
          sqlite3_bind_null(s, 8);
        const bool ok = sqlite3_step(s) == SQLITE_DONE;
        sqlite3_reset(s);
        if (!ok) return Error{sqlite3_errmsg(sql_)};
        ++blocks_written_;
        if (job.had_chunk_rows) {
          sqlite3_stmt* d = del_rollups.get();
          sqlite3_bind_int64(d, 1, static_cast<sqlite3_int64>(job.ref));
          sqlite3_bind_int64(d, 2, w.window * range);
          sqlite3_bind_int64(d, 3, (w.window + 1) * range);
          const bool dok = sqlite3_step(d) == SQLITE_DONE;
          sqlite3_reset(d);
          if (!dok) return Error{sqlite3_errmsg(sql_)};
        }
      }
      if (job.had_chunk_rows) {
        sqlite3_stmt* d = del_chunks.get();
        sqlite3_bind_int64(d, 1, static_cast<sqlite3_int64>(job.ref));
        const bool dok = sqlite3_step(d) == SQLITE_DONE;
        sqlite3_reset(d);
        if (!dok) return Error{sqlite3_errmsg(sql_)};
      }
      job.windows = {};
    }
  }
  // Rewritten blocks may have left timestamps rows nothing refers to, in the windows written.
  return min_window <= max_window ? DropUnusedTimestampsLocked(min_window, max_window)
                                  : Status::Ok();
}

Status DB::DropUnusedTimestampsLocked(int64_t min_window, int64_t max_window) {
  Stmt drop(sql_,
            "DELETE FROM timestamps WHERE window BETWEEN ? AND ? AND NOT EXISTS (SELECT 1 FROM "
            "blocks WHERE blocks.ts_id = timestamps.id)");
  if (!drop.ok()) return Error{sqlite3_errmsg(sql_)};
  sqlite3_bind_int64(drop.get(), 1, min_window);
  sqlite3_bind_int64(drop.get(), 2, max_window);
  if (sqlite3_step(drop.get()) != SQLITE_DONE) return Error{sqlite3_errmsg(sql_)};
  return Status::Ok();
}

}  // namespace gw::tsdb
