// serve/governance_checkpoint.h — the governance figures a restarted agent continues: the cost
// totals, each team's GPU-hour period, the reclaim counters and (with Slurm) the pools' queue-wait
// windows, in STORAGE_PATH/governance/usage.json (format "gpuwarden-governance-state", version 1:
// `usage` and `pools` are the checkpoints of governance/usage.h and pool.h, `reclaim_actions` and
// `reclaim_failures` the counters). Written through serve/state_file.h: replaced atomically,
// fsync'ed; an unreadable file is set aside as usage.json.corrupt and the figures start from zero.
//
//   GovernanceCheckpoint checkpoint(UsageCheckpointPath(config), /*pools=*/slurm, logger);
//   checkpoint.Load(&state);              // at construction, before any snapshot
//   checkpoint.Write(&mu, &state);        // once a minute of snapshot time, and at Stop
//
// Threading: Write may be called from any thread; one write at a time.
#ifndef GPUWARDEN_SERVE_GOVERNANCE_CHECKPOINT_H_
#define GPUWARDEN_SERVE_GOVERNANCE_CHECKPOINT_H_

#include <mutex>
#include <string>

#include "base/log.h"
#include "config/config.h"
#include "serve/governance_state.h"

namespace gw::serve {

// Where the running totals are kept across restarts: STORAGE_PATH/governance/usage.json.
std::string UsageCheckpointPath(const config::Config& config);

class GovernanceCheckpoint {
 public:
  // `with_pools`: the pools' windows are kept too (jobs.scheduler: slurm).
  GovernanceCheckpoint(std::string path, bool with_pools, Logger* log);

  // Reads the file into `state` (nothing there: the first start).
  void Load(GovernanceState* state);
  // Encodes `state` under `state_mu` (and sets its checkpoint_s), then replaces the file. Does
  // nothing before the first snapshot, so a file from a previous run is kept.
  void Write(std::mutex* state_mu, GovernanceState* state);

  // A snapshot at `now_s` is due to write one: a minute after the last, or the clock stepped back.
  static bool Due(const GovernanceState& state, double now_s);

 private:
  const std::string path_;
  const bool with_pools_;
  Logger* log_;
  std::mutex write_mu_;  // one checkpoint written at a time (recorder thread, Stop)
  bool failed_ = false;  // said once in the log until a write succeeds (write_mu_)
};

}  // namespace gw::serve

#endif  // GPUWARDEN_SERVE_GOVERNANCE_CHECKPOINT_H_
