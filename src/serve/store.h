// serve/store.h — the agent's history: the tsdb::DB in the data directory, fed by the collector's
// Recorder and read by the Prometheus API and `gpuwarden query`.
#ifndef GPUWARDEN_SERVE_STORE_H_
#define GPUWARDEN_SERVE_STORE_H_

#include <chrono>
#include <memory>
#include <string>

#include "base/log.h"
#include "collect/exposition.h"
#include "collect/recorder.h"
#include "config/config.h"
#include "tsdb/db.h"
#include "tsdb/dir_lock.h"

namespace gw::serve {

// Writes snapshots into a DB: the Recorder's only writer. A tsdb::DBAppender that also flushes
// chunks to SQLite every storage.flush_interval and applies retention every hour, both in
// Commit on the recorder thread.
class StoreAppender : public tsdb::DBAppender {
 public:
  StoreAppender(tsdb::DB* db, const config::StorageConfig& config, Logger* log);
  Status Append(Ref ref, int64_t t_ms, double v) override;
  Status Commit() override;
  // Flush and retention follow the newest appended sample's time instead of the wall clock
  // (a stepped simulator: housekeeping then happens in simulated time, like rule evaluation).
  void FollowDataClock() { follow_data_clock_ = true; }

 private:
  config::StorageConfig config_;
  Logger* log_;
  std::chrono::steady_clock::time_point last_flush_, last_retention_;
  bool follow_data_clock_ = false;
  int64_t data_now_ms_ = 0;  // the newest appended sample (FollowDataClock)
  int64_t data_last_flush_ms_ = 0, data_last_retention_ms_ = 0;
};

enum class StoreMode {
  kWriter,      // serve: the WAL and everything (hold the data directory's lock: LockDataDir)
  kBulkImport,  // no write-ahead log (an import is made durable by its final Flush and can be
                // re-run); hold the lock too
  kReadOnly,    // query, export, diagnose, report: beside a running agent, changing nothing
};

// Opens the DB under config.path (a writer creates it), reporting problems in one line.
Expected<std::unique_ptr<tsdb::DB>> OpenStore(const config::StorageConfig& config, Logger* log,
                                              StoreMode mode = StoreMode::kWriter);

// OpenStore for a one-shot command: on failure prints "gpuwarden: <why>" to stderr and returns
// null (the command then exits 1).
std::unique_ptr<tsdb::DB> OpenStoreForCommand(const config::StorageConfig& config, Logger* log,
                                              StoreMode mode);

// The data directory's writer lock for `command` ("serve", "tsdb import"): held until the
// returned object is destroyed. Refused with "data directory DIR is in use by gpuwarden pid N
// (serve)" when another process holds it.
Expected<std::unique_ptr<tsdb::DirLock>> LockDataDir(const config::StorageConfig& config,
                                                     const std::string& command);

// The figures /metrics shows for the store and its recorder.
collect::StoreFigures StoreFiguresOf(const tsdb::DB& db, const collect::Recorder* recorder);

}  // namespace gw::serve

#endif  // GPUWARDEN_SERVE_STORE_H_
