// config/config_yaml.h — the effective configuration as YAML (/api/v1/status/config).
//
// Every key LoadConfigFile reads, with the value in effect (file, flags and defaults together), in
// the file's own spelling, so the text loads back to the same configuration. Secrets are never in
// what it prints (only the files holding them), so nothing is masked. The `governance:`,
// `diagnose:` and `remote_write:` sections are left out (their settings stay at what the file gave;
// remote_write may hold inline secrets; see docs/configuration.md).
#ifndef GPUWARDEN_CONFIG_CONFIG_YAML_H_
#define GPUWARDEN_CONFIG_CONFIG_YAML_H_

#include <string>

#include "config/config.h"

namespace gw::config {

std::string EffectiveYaml(const Config& config);

}  // namespace gw::config

#endif  // GPUWARDEN_CONFIG_CONFIG_YAML_H_
