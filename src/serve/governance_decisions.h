// serve/governance_decisions.h — the reclaim decisions log: every decision as one JSON line
// (governance::DecisionToJson), appended to governance.decisions_log and fsync'ed, and the last
// 1000 kept in memory for GET /api/gw/v1/reclaim.
//
//   DecisionsLog log(DecisionsLogPath(config));
//   log.Add(decision);     // any thread, cheap: queued for the file
//   log.Flush(logger);     // off any lock a request waits on: appends what was queued
//   log.Recent(100);       // newest first, parsed back for the API
//
// A failed append is said in the log and counted (errors(): gpuwarden_reclaim_log_errors_total);
// those lines are not retried.
//
// Threading: every method is thread-safe; Flush calls are serialised on the file.
#ifndef GPUWARDEN_SERVE_GOVERNANCE_DECISIONS_H_
#define GPUWARDEN_SERVE_GOVERNANCE_DECISIONS_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "base/log.h"
#include "config/config.h"
#include "governance/reclaim.h"

namespace gw::serve {

// The decisions log a configuration names (governance.decisions_log, else
// STORAGE_PATH/governance/decisions.jsonl).
std::string DecisionsLogPath(const config::Config& config);

class DecisionsLog {
 public:
  // Creates the file's directory if missing.
  explicit DecisionsLog(std::string path);

  const std::string& path() const { return path_; }

  // Keeps `decision` for the API and queues its line for the file.
  void Add(const governance::Decision& decision);
  // Appends the queued lines to the file (fsync).
  void Flush(Logger* log);
  // The last `limit` decisions' JSON lines, newest first.
  std::vector<std::string> Recent(std::size_t limit) const;
  // Decisions that could not be appended.
  std::uint64_t errors() const;

 private:
  const std::string path_;
  mutable std::mutex mu_;
  std::deque<std::string> recent_;      // newest last, at most 1000 (mu_)
  std::vector<std::string> unwritten_;  // not yet in the file (mu_)
  std::uint64_t errors_ = 0;            // (mu_)
  std::mutex file_mu_;                  // one append at a time
};

}  // namespace gw::serve

#endif  // GPUWARDEN_SERVE_GOVERNANCE_DECISIONS_H_
