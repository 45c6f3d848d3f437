// tsdb/db.cpp — the DB object itself and its write path: construction and teardown, series
// refs, Append and Commit into the head and the write-ahead log, and stats(). Opening a data
// directory is in db_open.cpp, Flush/Compact in db_flush.cpp, retention in db_retention.cpp,
// rollups in db_rollups.cpp, the block cache in db_cache.cpp and reads in db_read.cpp; the helpers
// they share are in db_internal.h.
#include "tsdb/db.h"

#include <sqlite3.h>

#include <chrono>
#include <filesystem>

#include "tsdb/db_internal.h"

namespace gw::tsdb {
namespace {

uint64_t FileSize(const std::string& path) {
  std::error_code ec;
  const auto n = std::filesystem::file_size(path, ec);
  return ec ? 0 : n;
}

}  // namespace

DB::DB(const DBOptions& options)
    : options_(options),
      head_(options.head),
      wal_log_(std::make_unique<FailureLog>(
          "tsdb: WAL write",
          "the samples stay in memory (queries see them) and are written at the next WAL write "
          "or flush that works",
          options.failure_summary_interval_s, options.logger)),
      flush_log_(std::make_unique<FailureLog>("tsdb: flush to " + options.dir + "/" + kDbFile,
                                              "the data stays in memory and in the WAL",
                                              options.failure_summary_interval_s, options.logger)),
      cache_(std::make_unique<BlockCache>()),
      rollup_cache_(std::make_unique<RollupCache>()),
      ts_cache_(std::make_unique<TimestampCache>()) {
  cache_->limit = options.block_cache_bytes;
  // Shared timestamps are small next to the samples: an eighth of the block cache's budget.
  ts_cache_->limit = options.block_cache_bytes / 8;
  rollup_cache_->limit = options.rollup_cache_bytes;
}

DB::~DB() {
  if (wal_) (void)Commit();  // a failure is logged there
  sqlite3_finalize(select_chunks_);
  sqlite3_finalize(select_blocks_);
  sqlite3_finalize(select_block_rollups_);
  sqlite3_finalize(select_block_data_);
  sqlite3_finalize(select_timestamps_);
  sqlite3_finalize(select_rollup_rows_);
  sqlite3_close(data_sql_);
  sqlite3_close(sql_);
}

void DB::Warn(const std::string& message) const {
  if (options_.logger) options_.logger->Warn(message);
}

Expected<SeriesRef> DB::GetRef(const Labels& labels) {
  bool created = false;
  auto ref = head_.GetOrCreate(labels, &created);
  if (ref.ok() && created) {
    LogSeries(*ref, &labels);
    unpersisted_series_.push_back(*ref);
  }
  return ref;
}

void DB::LogSeries(SeriesRef ref, const Labels* labels) {
  if (!options_.write_wal || !wal_) return;
  if (ref >= wal_series_gen_.size()) wal_series_gen_.resize(ref + 1 + ref / 4, 0);
  const uint64_t generation = wal_->generation();
  if (wal_series_gen_[ref] == generation) return;
  wal_series_gen_[ref] = generation;
  if (labels != nullptr) {
    wal_->AddSeries(ref, *labels);
  } else {
    wal_->AddSeries(ref, head_.LabelsOf(ref));
  }
}

Status DB::Append(SeriesRef ref, int64_t t_ms, double v) {
  Status st = head_.Append(ref, t_ms, v);
  if (st.ok() && options_.write_wal && wal_) {
    if (ref >= wal_series_gen_.size() || wal_series_gen_[ref] != wal_->generation())
      LogSeries(ref, nullptr);
    wal_->AddSample(ref, t_ms, v);
  }
  return st;
}

Status DB::Append(const Labels& labels, int64_t t_ms, double v) {
  auto ref = GetRef(labels);
  if (!ref.ok()) return Error{ref.error().message};
  return Append(*ref, t_ms, v);
}

Status DB::Commit() {
  if (!wal_) return Error{"tsdb: " + options_.dir + " is open read-only"};
  const bool writes = wal_->has_buffered();
  Status st = wal_->Commit();
  const auto now = std::chrono::steady_clock::now();
  if (st.ok()) {
    if (writes) wal_log_->Succeeded(now);
  } else {
    wal_log_->Failed(st.message(), now);
  }
  wal_pending_bytes_ = wal_->pending_bytes();
  wal_dropped_samples_ = wal_->dropped_samples();
  return st;
}

void DB::RecordSelect(double seconds) {
  ++selects_;
  select_seconds_total_.fetch_add(seconds);
}

DBStats DB::stats() const {
  DBStats s;
  s.series = head_.num_series();
  s.samples_appended = head_.samples_appended();
  s.out_of_order = head_.out_of_order() - out_of_order_at_open_;
  s.wal_replayed_samples = wal_replayed_samples_;
  s.wal_corruptions = wal_corruptions_;
  s.wal_skipped_bytes = wal_skipped_bytes_;
  s.wal_orphan_samples = wal_orphan_samples_;
  s.wal_write_failures = wal_log_->failures();
  s.wal_writes_failing = wal_log_->failing();
  s.wal_pending_bytes = wal_pending_bytes_.load();
  s.wal_dropped_samples = wal_dropped_samples_.load();
  s.flush_failures = flush_log_->failures();
  s.chunk_corruptions = chunk_corruptions_.load();
  s.chunks_persisted = chunks_persisted_.load();
  s.wal_bytes = wal_ ? wal_->size_bytes() : 0;
  const std::string db = options_.dir + "/" + kDbFile;
  s.sqlite_bytes = FileSize(db) + FileSize(db + "-wal");  // -shm is SQLite's in-memory index
  s.bytes_on_disk = s.wal_bytes + s.sqlite_bytes;
  s.last_flush_seconds = last_flush_seconds_.load();
  s.compactions = compactions_.load();
  s.blocks_written = blocks_written_.load();
  s.compaction_seconds_total = compaction_seconds_total_.load();
  s.last_compaction_seconds = last_compaction_seconds_.load();
  s.blocks_decoded = blocks_decoded_.load();
  s.rollups_decoded = rollups_decoded_.load();
  s.selects = selects_.load();
  s.select_seconds_total = select_seconds_total_.load();
  {
    std::lock_guard lock(cache_->mu);
    s.block_cache_hits = cache_->hits;
    s.block_cache_misses = cache_->misses;
    s.block_cache_bytes = cache_->bytes;
  }
  {
    std::lock_guard lock(rollup_cache_->mu);
    s.rollup_cache_hits = rollup_cache_->hits;
    s.rollup_cache_bytes = rollup_cache_->bytes;
  }
  return s;
}

}  // namespace gw::tsdb
