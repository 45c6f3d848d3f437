// config/governance_config.h — the `governance` section of the configuration file: reclaim
// policies, pools, quotas, prices (docs/configuration.md, "Governance"). config/config.cpp hands
// each `governance.*` key's YAML node to ParseGovernanceKey; errors name the file and line like
// every other key ("gpuwarden.yaml:12: governance.reclaim[0].action: expected dry-run, requeue,
// cancel or command, got 'kill'").
#ifndef GPUWARDEN_CONFIG_GOVERNANCE_CONFIG_H_
#define GPUWARDEN_CONFIG_GOVERNANCE_CONFIG_H_

#include <string>
#include <vector>

#include "base/error.h"
#include "governance/settings.h"

namespace YAML {
class Node;
}

namespace gw::config {

struct GovernanceConfig {
  governance::Settings settings;  // idle_threshold is taken from jobs.idle_threshold
  std::string decisions_log;      // "" = STORAGE_PATH/governance/decisions.jsonl
  std::vector<std::string> requeue_command = {"scontrol", "requeue"};  // + job id
  std::vector<std::string> cancel_command = {"scancel"};               // + job id
  std::vector<std::string> capacity_command = {"sinfo", "-h", "-o", "%R %D %G"};
  double command_timeout_s = 30;
};

// The configuration keys this section has ("governance.reclaim", ...).
const std::vector<std::string>& GovernanceKeys();

// Reads one key's node into *out. `file` names the file in errors.
Status ParseGovernanceKey(const std::string& file, const std::string& key, const YAML::Node& node,
                          GovernanceConfig* out);

}  // namespace gw::config

#endif  // GPUWARDEN_CONFIG_GOVERNANCE_CONFIG_H_
