// serve/governance_state.h — what the governance service keeps between snapshots: the domain's
// trackers (idle, reclaim, usage, pools), the reclaim counters and the capacity poll's outcome.
// The service owns one, guarded by its mutex; the checkpoint, the families and the JSON API read
// it (serve/governance_checkpoint.h, governance_metrics.h, governance_api.h).
//
// Threading: none of its own; every access under the owning service's mutex.
#ifndef GPUWARDEN_SERVE_GOVERNANCE_STATE_H_
#define GPUWARDEN_SERVE_GOVERNANCE_STATE_H_

#include <map>
#include <string>
#include <utility>

#include "config/config.h"
#include "governance/pool.h"
#include "governance/reclaim.h"
#include "governance/usage.h"

namespace gw::serve {

struct GovernanceState {
  explicit GovernanceState(const config::Config& config);

  governance::IdleTracker idle;
  governance::ReclaimEngine reclaim;
  governance::UsageLedger usage;
  governance::PoolTracker pools;
  bool capacity_known = false;
  bool capacity_up = false;
  std::string capacity_error;
  std::map<std::pair<std::string, std::string>, double> actions;  // (reason, action) -> count
  std::map<std::string, double> failures;                         // action -> count
  double last_now_s = 0;    // the last snapshot's time (0: none yet)
  double checkpoint_s = 0;  // snapshot time of the last checkpoint

  // Counts one decision in `actions` (once per decision: "done" and "failed" are outcomes of an
  // action already counted) and, for an action refused before it ran, in `failures`.
  void Count(const governance::Decision& d);
};

}  // namespace gw::serve

#endif  // GPUWARDEN_SERVE_GOVERNANCE_STATE_H_
