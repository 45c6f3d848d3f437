// cli/agent.h — the agent moved to serve/agent.h (gw::serve::Agent). This name stays only until
// `gpuwarden top` stops including it (issue 14 makes top/ independent of cli/); new code includes
// serve/agent.h.
#ifndef GPUWARDEN_CLI_AGENT_H_
#define GPUWARDEN_CLI_AGENT_H_

#include "serve/agent.h"

namespace gw::cli {

using serve::Agent;

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_AGENT_H_
