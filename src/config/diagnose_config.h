// config/diagnose_config.h — the `diagnose` section of the configuration file: every threshold the
// findings compare with (diagnose::Thresholds), the window they look back over and how often
// `serve` evaluates them (docs/configuration.md, "diagnose.*"; docs/diagnose.md says what each
// threshold does). Used by serve's FindingsService, `gpuwarden diagnose` and `gpuwarden report`.
//
//   diagnose:
//     window: 1h            # serve's findings and `diagnose` without --since
//     interval: 1m          # recorded time between serve's evaluations
//     thresholds:
//       busy_utilization: 0.5
//       thermal_margin_c: 5
//       queue_wait_p90: 30m # durations take Prometheus' syntax
//
// config/config.cpp hands each `diagnose.*` key's YAML node to ParseDiagnoseKey; a bad value is
// refused with the file and line ("gpuwarden.yaml:7: diagnose.thresholds.throttled_share: expected
// a ratio 0-1, got '1.5'"). Rules between two keys (idle_utilization below starved_utilization,
// quota_under below quota_over, interval within window) are checked by ValidateDiagnose, which
// names the file and line of the key set last when it came from a file.
//
// Threading: plain data and pure functions.
#ifndef GPUWARDEN_CONFIG_DIAGNOSE_CONFIG_H_
#define GPUWARDEN_CONFIG_DIAGNOSE_CONFIG_H_

#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "diagnose/diagnose.h"

namespace YAML {
class Node;
}

namespace gw::config {

struct DiagnoseConfig {
  diagnose::Thresholds thresholds;
  double window_s = 3600;  // serve's evaluation window; `diagnose` without --since
  double interval_s = 60;  // recorded time between serve's evaluations
  // Where each key was set ("FILE:LINE"), for ValidateDiagnose's messages; empty for defaults.
  std::map<std::string, std::string> origin;
};

// The configuration keys of this section ("diagnose.window", "diagnose.thresholds.…").
const std::vector<std::string>& DiagnoseKeys();

// Reads one key's node into *out. `file` names the file in errors.
Status ParseDiagnoseKey(const std::string& file, const std::string& key, const YAML::Node& node,
                        DiagnoseConfig* out);

// One diagnose.thresholds key and its value, as the file spells it (EffectiveYaml).
struct ThresholdSetting {
  const char* key;  // under diagnose.thresholds
  double value;
  bool duration;  // seconds, written as a duration ("30m")
};
// Every threshold of `t`, in the order of diagnose::Thresholds.
std::vector<ThresholdSetting> ThresholdSettings(const diagnose::Thresholds& t);

// Checks the rules between keys (each key's own range is checked when it is read).
Status ValidateDiagnose(const DiagnoseConfig& config);

}  // namespace gw::config

#endif  // GPUWARDEN_CONFIG_DIAGNOSE_CONFIG_H_
