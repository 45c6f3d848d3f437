// cli/hub_command.h — `gpuwarden hub`: the web console, findings and reports of a whole fleet
// over a central store (hub/hub.h, docs/hub.md).
//
//   gpuwarden hub --store URL [--agents FILE] [--listen ADDR] [--node-label instance]
//                 [--findings-window 1h] [--findings-interval 30s] [--cache-ttl 1.5s]
//                 [--store-timeout 5s] [--web.config.file FILE] [--config FILE]
//                 [--rules FILE]... [--rules-interval 15s] [--alertmanager URL]...
//
// Runs until SIGINT or SIGTERM. Exit codes: 0 stopped by a signal, 1 could not start (address
// in use, web config), 2 bad arguments (store URL, agents file, durations).
#ifndef GPUWARDEN_CLI_HUB_COMMAND_H_
#define GPUWARDEN_CLI_HUB_COMMAND_H_

#include <string>
#include <vector>

#include "base/log.h"
#include "config/config.h"

namespace gw::cli {

struct HubArgs {
  std::string store, agents, listen = ":9967", node_label = "instance";
  std::string findings_window = "1h", findings_interval = "30s";
  std::string cache_ttl = "1.5s", store_timeout = "5s";
  std::string web_config_file;
  std::vector<std::string> rules;  // alert rule files the hub evaluates over the store
  std::string rules_interval = "15s";
  std::vector<std::string> alertmanagers;  // where the hub's own alerts are sent
};
int RunHub(const config::Config& config, const HubArgs& args, Logger* logger);

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_HUB_COMMAND_H_
