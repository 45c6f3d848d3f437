// serve/governance_state.cpp — the governance service's state built from the configuration, and
// how a reclaim decision is counted.
#include "serve/governance_state.h"

namespace gw::serve {

GovernanceState::GovernanceState(const config::Config& config)
    : idle(config.jobs.idle_threshold),
      reclaim(config.governance.settings.reclaim,
              governance::ReclaimCommands{config.governance.requeue_command,
                                          config.governance.cancel_command}),
      usage(config.governance.settings.quotas, config.governance.settings.prices,
            config.jobs.idle_threshold),
      pools(config.governance.settings.pool) {}

void GovernanceState::Count(const governance::Decision& d) {
  if (d.stage != "done" && d.stage != "failed") actions[{d.reason, d.action}] += 1;
  if (d.stage == "failed" && d.action != "notify" &&
      d.detail.find("not a Slurm job") != std::string::npos)
    failures[d.action] += 1;
}

}  // namespace gw::serve
