// cli/top_command.h — `gpuwarden top` wired to the configuration: the one place that knows both
// the configuration (config/config.h) and top/ (top/top.h). It copies what a local view needs into
// top::Options and hands top a collector built like the agent's (cli/agent.h), so top/ depends on
// nothing in cli/.
#ifndef GPUWARDEN_CLI_TOP_COMMAND_H_
#define GPUWARDEN_CLI_TOP_COMMAND_H_

#include "base/log.h"
#include "config/config.h"
#include "top/top.h"

namespace gw::cli {

// `flags`: top's own flags (url, once, refresh, sim_time, width); the rest is taken from `config`.
// Returns the exit code of top::RunTop.
int RunTop(const config::Config& config, top::Options flags, Logger* logger);

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_TOP_COMMAND_H_
