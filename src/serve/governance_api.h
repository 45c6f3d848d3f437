// serve/governance_api.h — the governance JSON API: GET /api/gw/v1/teams (teams with quotas and
// cost, partitions with their pools, jobs' cost, the node's idle cost) and GET
// /api/gw/v1/reclaim (policies, noticed jobs, the notices still in their grace period, idle GPUs,
// the latest decisions; `?limit=N`, 1-1000, default 100; `?job=ID`, `?team=NAME`, `?gpu=INDEX`
// keep the decisions and notices of that job, team or GPU). Both answer
// {"status":"success","data":...} (docs/configuration.md lists the fields). Everything comes from
// memory (the state and the decisions log's recent lines): no disk read per request.
//
//   RegisterGovernanceRoutes(server, [&] { lock; return TeamsJson(state); },
//                            [&](const ReclaimQuery& q) { lock; return ReclaimJson(state, log, q);
//                            });
//
// Threading: the JSON functions read `state` under the caller's lock; routes run on HTTP threads.
#ifndef GPUWARDEN_SERVE_GOVERNANCE_API_H_
#define GPUWARDEN_SERVE_GOVERNANCE_API_H_

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "serve/governance_decisions.h"
#include "serve/governance_state.h"

namespace gw::http {
class Server;
}

namespace gw::serve {

std::string TeamsJson(const GovernanceState& state);

// Which decisions GET /api/gw/v1/reclaim lists: at most `limit`, newest first, of those matching
// every filter that is set (job id, team, GPU index among the decision's evidence GPUs).
struct ReclaimQuery {
  std::size_t limit = 100;
  std::string job, team;
  std::optional<unsigned> gpu;
};

// The decisions come from `decisions` (its recent lines, in memory). "notices": the jobs whose
// latest decision is a notice and that still run, with the time their grace period ends.
std::string ReclaimJson(const GovernanceState& state, const DecisionsLog& decisions,
                        const ReclaimQuery& query);

void RegisterGovernanceRoutes(http::Server* server, std::function<std::string()> teams,
                              std::function<std::string(const ReclaimQuery&)> reclaim);

}  // namespace gw::serve

#endif  // GPUWARDEN_SERVE_GOVERNANCE_API_H_
