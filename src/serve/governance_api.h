// serve/governance_api.h — the governance JSON API: GET /api/gw/v1/teams (teams with quotas and
// cost, partitions with their pools, jobs' cost, the node's idle cost) and GET
// /api/gw/v1/reclaim (policies, noticed jobs, idle GPUs, the latest decisions; `?limit=N`, 1-1000,
// default 100). Both answer {"status":"success","data":...} (docs/metrics.md lists the fields).
//
//   RegisterGovernanceRoutes(server, [&] { lock; return TeamsJson(state); },
//                            [&](size_t n) { lock; return ReclaimJson(state, log, n); });
//
// Threading: the JSON functions read `state` under the caller's lock; routes run on HTTP threads.
#ifndef GPUWARDEN_SERVE_GOVERNANCE_API_H_
#define GPUWARDEN_SERVE_GOVERNANCE_API_H_

#include <cstddef>
#include <functional>
#include <string>

#include "serve/governance_decisions.h"
#include "serve/governance_state.h"

namespace gw::http {
class Server;
}

namespace gw::serve {

std::string TeamsJson(const GovernanceState& state);
// The latest `limit` decisions come from `decisions`, newest first.
std::string ReclaimJson(const GovernanceState& state, const DecisionsLog& decisions,
                        std::size_t limit);

void RegisterGovernanceRoutes(http::Server* server, std::function<std::string()> teams,
                              std::function<std::string(std::size_t limit)> reclaim);

}  // namespace gw::serve

#endif  // GPUWARDEN_SERVE_GOVERNANCE_API_H_
