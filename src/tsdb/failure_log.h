// tsdb/failure_log.h — a recurring failure (the WAL cannot be written, flushes fail) told in a
// few log lines instead of one per attempt: one when it starts, a summary every interval while it
// lasts, one when it ends.
//
//   FailureLog wal("tsdb: WAL write", 60, logger);
//   wal.Failed(st.message(), now);   // each failed attempt
//   wal.Succeeded(now);              // each attempt that worked
//
// Not thread-safe (one writer); failing() and failures() may be read from any thread.
#ifndef GPUWARDEN_TSDB_FAILURE_LOG_H_
#define GPUWARDEN_TSDB_FAILURE_LOG_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "base/log.h"

namespace gw::tsdb {

class FailureLog {
 public:
  using Clock = std::chrono::steady_clock;
  // `what` starts every line ("tsdb: WAL write"); `first_note` is added to the first line (what
  // happens to the data meanwhile); `logger` may be null (silent).
  FailureLog(std::string what, std::string first_note, double interval_s, Logger* logger);

  void Failed(const std::string& error, Clock::time_point now);
  void Succeeded(Clock::time_point now);

  bool failing() const { return failing_.load(std::memory_order_relaxed); }
  uint64_t failures() const { return failures_.load(std::memory_order_relaxed); }

 private:
  std::string what_, first_note_;
  Clock::duration interval_;
  Logger* logger_;
  std::atomic<bool> failing_{false};
  std::atomic<uint64_t> failures_{0};  // since construction
  uint64_t episode_failures_ = 0, since_summary_ = 0;
  Clock::time_point episode_start_, last_summary_;
  std::string last_error_;
};

}  // namespace gw::tsdb

#endif  // GPUWARDEN_TSDB_FAILURE_LOG_H_
