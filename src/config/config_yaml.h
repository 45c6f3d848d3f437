// config/config_yaml.h — the effective configuration as YAML (/api/v1/status/config).
//
// Every key LoadConfigFile reads, with the value in effect (file, flags and defaults together), in
// the file's own spelling, so the text loads back to the same configuration (secrets aside).
// Files holding secrets are printed as they are; a secret written in the file itself — a
// remote_write basic_auth password, authorization credentials or bearer_token, the value of a
// header whose name says auth, key, token, secret, password, session, cookie, credential or
// signature, the password in a url's user:password@ — is printed as `<secret>`, as Prometheus
// 2.42 prints its secrets (docs/configuration.md).
#ifndef GPUWARDEN_CONFIG_CONFIG_YAML_H_
#define GPUWARDEN_CONFIG_CONFIG_YAML_H_

#include <string>

#include "config/config.h"

namespace gw::config {

std::string EffectiveYaml(const Config& config);

}  // namespace gw::config

#endif  // GPUWARDEN_CONFIG_CONFIG_YAML_H_
