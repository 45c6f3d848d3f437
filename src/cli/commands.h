// cli/commands.h — the subcommands, each returning the process exit code.
#ifndef GPUWARDEN_CLI_COMMANDS_H_
#define GPUWARDEN_CLI_COMMANDS_H_

#include <string>

#include "base/log.h"
#include "config/config.h"
#include "promql/engine.h"

namespace gw::cli {

// Collects once (one slow and one fast cycle) and prints. Exit 0, or 2 when there is no NVML.
// `sim_time` (stepped simulator only) advances simulated time first, e.g. "90s".
int RunSnapshot(const config::Config& config, bool json, const std::string& sim_time,
                Logger* logger);

struct QueryArgs {
  std::string expr;
  std::string time, start, end, step;  // Prometheus time/duration syntax; empty = not given
  bool json = false;
  std::string url;  // ask a running agent (or any Prometheus) instead of opening the data dir
};

// `gpuwarden query`: instant (at --time, default now) or range (--start/--end/--step) PromQL,
// on the local data directory or a --url. Exit 0, 1 on a failed query, 2 on bad arguments.
int RunQuery(const config::Config& config, const QueryArgs& args, Logger* logger);

// `gpuwarden tsdb import FILE`: OpenMetrics text (with timestamps) into the data directory.
int RunTsdbImport(const config::Config& config, const std::string& file, Logger* logger);
// `gpuwarden tsdb export [--match SELECTOR]`: every sample as OpenMetrics text on stdout.
int RunTsdbExport(const config::Config& config, const std::string& match, Logger* logger);

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_COMMANDS_H_
