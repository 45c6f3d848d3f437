// cli/diagnose_commands.h — `gpuwarden diagnose` and `gpuwarden report`.
//
//   gpuwarden diagnose [--gpu G | --job J | --team T] [--since D] [--time T] [--json]
//                      [--url U | --data-dir DIR] [--config FILE]
//   gpuwarden report [--period D] [--time T] [--out FILE] [--json] [--url U | --data-dir DIR]
//                    [--config FILE]
//   with --store URL [--node-label L] instead: the whole fleet in a central store's Prometheus
//   API (VictoriaMetrics, Prometheus), each finding and GPU with its node (docs/hub.md).
//
// diagnose and report read the data directory (offline) or ask a running agent (--url: GET
// /api/gw/v1/findings, GET /api/gw/v1/report — useful while the agent holds the data directory).
// Both evaluate at --time (Unix seconds or RFC 3339; default now, or the agent's latest recorded
// time with --url). Offline, the thresholds and diagnose's default window are the configuration's
// `diagnose` section (config/diagnose_config.h); with --url, the agent's. Exit codes: 0 ok, 1
// failure (store unreadable, agent unreachable or refusing, file not written), 2 bad arguments.
// The agent's side of both endpoints is serve/findings_service.h.
#ifndef GPUWARDEN_CLI_DIAGNOSE_COMMANDS_H_
#define GPUWARDEN_CLI_DIAGNOSE_COMMANDS_H_

#include <string>

#include "base/log.h"
#include "config/config.h"

namespace gw::cli {

struct DiagnoseArgs {
  std::string gpu, job, team;  // at most one
  std::string since;           // empty: diagnose.window
  std::string time;            // empty: now
  bool json = false;
  std::string url;                             // a running gpuwarden
  std::string store, node_label = "instance";  // a central store (hub/fleet.h)
};
int RunDiagnose(const config::Config& config, const DiagnoseArgs& args, Logger* logger);

struct ReportArgs {
  std::string period = "7d";
  std::string time;  // empty: now
  std::string out;   // file to write; empty: stdout
  bool json = false;
  std::string url;                             // a running gpuwarden: GET /api/gw/v1/report
  std::string store, node_label = "instance";  // a central store (hub/fleet.h)
};
int RunReport(const config::Config& config, const ReportArgs& args, Logger* logger);

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_DIAGNOSE_COMMANDS_H_
