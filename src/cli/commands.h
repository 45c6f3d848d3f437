// cli/commands.h — the subcommands, each returning the process exit code.
#ifndef GPUWARDEN_CLI_COMMANDS_H_
#define GPUWARDEN_CLI_COMMANDS_H_

#include <string>

#include "base/log.h"
#include "cli/config.h"

namespace gw::cli {

// Serves until SIGINT/SIGTERM. Exit 0 on a clean stop, 1 if the listener cannot start.
// Without NVML it keeps serving self-metrics and logs why.
int RunServe(const Config& config, const std::string& version, Logger* logger);

// Collects once (one slow and one fast cycle) and prints. Exit 0, or 2 when there is no NVML.
// `sim_time` (stepped simulator only) advances simulated time first, e.g. "90s".
int RunSnapshot(const Config& config, bool json, const std::string& sim_time, Logger* logger);

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_COMMANDS_H_
