#include "serve/store.h"
#include "base/clock.h"

#include <cmath>
#include <cstdio>

namespace gw::serve {

namespace {
int64_t Ms(double seconds) {
  return static_cast<int64_t>(std::llround(seconds * 1000));
}
}  // namespace

StoreAppender::StoreAppender(tsdb::DB* db, const config::StorageConfig& config, Logger* log)
    : tsdb::DBAppender(db),
      config_(config),
      log_(log),
      last_flush_(std::chrono::steady_clock::now()),
      last_retention_(std::chrono::steady_clock::time_point{}) {}

Status StoreAppender::Append(Ref ref, int64_t t_ms, double v) {
  if (t_ms > data_now_ms_) data_now_ms_ = t_ms;
  return tsdb::DBAppender::Append(ref, t_ms, v);
}

Status StoreAppender::Commit() {
  // A failed WAL write or flush is the store's to report (see tsdb::DBAppender), not ours.
  (void)tsdb::DBAppender::Commit();
  if (follow_data_clock_) {
    if (data_last_flush_ms_ == 0) data_last_flush_ms_ = data_now_ms_;
    if (data_now_ms_ - data_last_flush_ms_ >= Ms(config_.flush_interval_s)) {
      data_last_flush_ms_ = data_now_ms_;
      (void)db()->Flush();
    }
    if (data_last_retention_ms_ == 0 || data_now_ms_ - data_last_retention_ms_ >= 3'600'000) {
      data_last_retention_ms_ = data_now_ms_;
      if (Status s = db()->ApplyRetention(data_now_ms_); !s.ok())
        log_->Error("store: retention failed: " + s.message());
    }
    return Status::Ok();
  }
  auto now = std::chrono::steady_clock::now();
  if (now - last_flush_ >= std::chrono::duration<double>(config_.flush_interval_s)) {
    last_flush_ = now;
    (void)db()->Flush();
  }
  if (now - last_retention_ >= std::chrono::hours(1)) {
    last_retention_ = now;
    const int64_t wall = SystemClock().NowMs();
    if (Status s = db()->ApplyRetention(wall); !s.ok())
      log_->Error("store: retention failed: " + s.message());
  }
  return Status::Ok();
}

Expected<std::unique_ptr<tsdb::DB>> OpenStore(const config::StorageConfig& config, Logger* log,
                                              StoreMode mode) {
  tsdb::DBOptions options;
  options.write_wal = mode == StoreMode::kWriter;
  options.read_only = mode == StoreMode::kReadOnly;
  options.dir = config.path;
  options.retention_ms = Ms(config.retention_s);
  options.rollup_retention_ms = Ms(config.rollup_retention_s);
  options.logger = log;
  if (config.block_range_s > 0) options.block_range_ms = Ms(config.block_range_s);
  auto db = tsdb::DB::Open(options);
  if (!db.ok())
    return Error{"cannot open the store in '" + config.path + "': " + db.error().message};
  if (config.block_range_s > 0 && (*db)->block_range_ms() != options.block_range_ms &&
      log != nullptr)
    log->Warn("storage.block_range " + FormatDuration(config.block_range_s) +
              " applies to new data directories; " + config.path + " keeps the " +
              FormatDuration(static_cast<double>((*db)->block_range_ms()) / 1000) +
              " it was created with");
  return std::move(*db);
}

std::unique_ptr<tsdb::DB> OpenStoreForCommand(const config::StorageConfig& config, Logger* log,
                                              StoreMode mode) {
  auto db = OpenStore(config, log, mode);
  if (!db.ok()) {
    std::fprintf(stderr, "gpuwarden: %s\n", db.error().message.c_str());
    return nullptr;
  }
  return std::move(*db);
}

Expected<std::unique_ptr<tsdb::DirLock>> LockDataDir(const config::StorageConfig& config,
                                                     const std::string& command) {
  return tsdb::DirLock::Acquire(config.path, command);
}

collect::StoreFigures StoreFiguresOf(const tsdb::DB& db, const collect::Recorder* recorder) {
  collect::StoreFigures f;
  f.present = true;
  tsdb::DBStats s = db.stats();
  f.series = static_cast<double>(s.series);
  f.samples_appended = static_cast<double>(s.samples_appended);
  f.out_of_order = static_cast<double>(s.out_of_order);
  f.bytes_on_disk = static_cast<double>(s.bytes_on_disk);
  f.wal_bytes = static_cast<double>(s.wal_bytes);
  f.wal_corruptions = static_cast<double>(s.wal_corruptions);
  f.wal_write_failures = static_cast<double>(s.wal_write_failures);
  f.wal_writes_failing = s.wal_writes_failing ? 1 : 0;
  f.wal_pending_bytes = static_cast<double>(s.wal_pending_bytes);
  f.wal_dropped_samples = static_cast<double>(s.wal_dropped_samples);
  f.flush_failures = static_cast<double>(s.flush_failures);
  f.chunk_corruptions = static_cast<double>(s.chunk_corruptions);
  f.chunks_persisted = static_cast<double>(s.chunks_persisted);
  f.last_flush_seconds = s.last_flush_seconds;
  f.compactions = static_cast<double>(s.compactions);
  f.blocks_written = static_cast<double>(s.blocks_written);
  f.compaction_seconds = s.compaction_seconds_total;
  f.last_compaction_seconds = s.last_compaction_seconds;
  f.selects = static_cast<double>(s.selects);
  f.select_seconds = s.select_seconds_total;
  f.block_cache_hits = static_cast<double>(s.block_cache_hits);
  f.block_cache_misses = static_cast<double>(s.block_cache_misses);
  f.block_cache_bytes = static_cast<double>(s.block_cache_bytes);
  f.rollups_decoded = static_cast<double>(s.rollups_decoded);
  f.rollup_cache_hits = static_cast<double>(s.rollup_cache_hits);
  f.rollup_cache_bytes = static_cast<double>(s.rollup_cache_bytes);
  if (recorder != nullptr) {
    collect::RecorderStats r = recorder->stats();
    f.snapshots_recorded = static_cast<double>(r.snapshots_recorded);
    f.snapshots_skipped = static_cast<double>(r.snapshots_skipped);
    f.stale_markers = static_cast<double>(r.stale_markers);
    f.append_errors = static_cast<double>(r.append_errors);
  }
  return f;
}

}  // namespace gw::serve
