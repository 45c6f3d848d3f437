// hub/views.h — the console's documents built from the store's latest samples (docs/hub.md):
// pure functions from instant-query results to the JSON the agent's own endpoints answer, so
// that the same pages read them. The queries that feed them are in hub.cpp.
//
//   NodeSnapshot   /api/snapshot?node=N: GPUs of node N from `{__name__=~"gpu_.+",<label>="N"}`
//                  (metrics keyed as the agent keys them), with the processes, health, MIG and
//                  NVLink details of the node's agent's own snapshot when it answered
//   NodeSummaries  the fleet's nodes (GPUs, up, utilization, power, newest sample, firing alerts)
//   AlertsJson     /api/v1/alerts from the store's ALERTS series
//   JobsFromStore  running jobs from gpu_allocation_info and the gpu_job_* families
//   MergeJobs      /api/gw/v1/jobs over the fleet: each node's records from its agent when it
//                  answered (running and finished, each given its node), else the store's
//                  running jobs of that node; the agents that did not answer named
//   TeamsJson      /api/gw/v1/teams from the gpu_team_* families summed over nodes, and each
//                  team's cost from the nodes' gpu_cost_* counters (or why there is none)
#ifndef GPUWARDEN_HUB_VIEWS_H_
#define GPUWARDEN_HUB_VIEWS_H_

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hub/store.h"

namespace gw::hub {

using Samples = std::vector<Store::Sample>;

// One node's /api/snapshot. `series`: the node's gpu_* series (any family; the task-layer ones
// are skipped); `agent`: the node's agent's /api/snapshot document, or null when unreachable.
// Labels every series of the node carries (its target labels: instance, job, rack, …) are not
// part of a metric's key; they are read from gpu_up's labels.
nlohmann::json NodeSnapshot(const std::string& node, const Samples& series,
                            const nlohmann::json& agent, double now_s);

struct NodeFigures {
  std::string node;
  double gpus = 0, gpus_up = 0, utilization = -1, power_w = -1, newest_s = 0;
  int alerts_critical = 0, alerts_warning = 0;
  bool agent_known = false;  // listed in --agents
  int agent_reachable = -1;  // its /healthz answered: 1, did not: 0, not asked yet: -1
};
nlohmann::json NodeSummaries(const std::vector<NodeFigures>& nodes);

// Prometheus' /api/v1/alerts shape: {"status":"success","data":{"alerts":[{labels, annotations,
// state, activeAt, value}]}}; `alerts`: ALERTS samples (labels include alertstate).
std::string AlertsJson(const Samples& alerts);

// Running jobs as the agent's job records ("source":"store", "node"), from gpu_allocation_info
// samples and gpu_job_* samples (keyed by node label and job_id).
nlohmann::json JobsFromStore(const Samples& allocations, const Samples& job_series,
                             const std::string& node_label);

// One node's agent's answer to /api/gw/v1/jobs: `doc` its document when it answered, else
// `error` says why (not asked, refused, timed out, HTTP status).
struct AgentJobs {
  std::string node;
  bool answered = false;
  nlohmann::json doc;
  std::string error;
};

// Whether the agent answered with a jobs list ({"data": {"jobs": [...]}}).
bool HasJobsList(const AgentJobs& a);

// The "data" of /api/gw/v1/jobs over the fleet: {"jobs": […], "nodes_unreachable": [names],
// "agent_errors": {node: why}}. A node whose agent answered: the agent's records (running and
// finished, as the agent filtered them), each given "node"; any other node: its running jobs
// from the store (`store_jobs`, JobsFromStore's, each with "node"). Running jobs first, then the
// finished ones newest first.
nlohmann::json MergeJobs(const nlohmann::json& store_jobs, const std::vector<AgentJobs>& agents);

// /api/gw/v1/teams over the fleet, the agent's document (serve/governance_api.cpp) built from
// the latest sample of each node's series:
//   allocated, used now     gpu_team_allocated_gpus, gpu_team_used_gpus summed over nodes;
//   quota                   gpu_team_quota_gpus, the largest;
//   cost                    gpu_cost_allocation_total, gpu_cost_energy_total,
//                           gpu_cost_idle_allocated_total summed over nodes and partitions (the
//                           agents' running totals, as each agent's own answer has them); GPU-hours
//                           from gpu_allocated_gpu_seconds_total and
//                           gpu_idle_allocated_gpu_seconds_total, used GPU-hours from each node's
//                           gpu_team_efficiency_ratio; the currency from gpu_cost_info;
//   idle_ratio              idle / allocated GPU-seconds (the counters; without them, the
//                           gpu_team_idle_gpus now / allocated now);
//   energy_kwh              the team's jobs in `jobs` (the store keeps no team energy family).
// Without any gpu_cost_* or gpu_cost_info series (governance off on the nodes), or with nodes
// pricing in different currencies, every cost figure is null, "currency" null and
// "cost_unavailable" says why; never a 0 that reads as a price. "cost_nodes": the nodes whose cost
// series counted.
std::string TeamsJson(const Samples& series, const nlohmann::json& jobs,
                      const std::string& node_label);

// Prometheus text lines `name{labels} value` for the console's scrape() of task-layer families.
std::string ExpositionText(const Samples& series);

}  // namespace gw::hub

#endif  // GPUWARDEN_HUB_VIEWS_H_
