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
//   TeamsJson      /api/gw/v1/teams from the gpu_team_* families summed over nodes
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

// /api/gw/v1/teams from gpu_team_allocated_gpus, gpu_team_used_gpus, gpu_team_quota_gpus and
// gpu_team_idle_gpus samples (each with a team label), summed over nodes (quota: the largest).
std::string TeamsJson(const Samples& team_series, const nlohmann::json& jobs);

// Prometheus text lines `name{labels} value` for the console's scrape() of task-layer families.
std::string ExpositionText(const Samples& series);

}  // namespace gw::hub

#endif  // GPUWARDEN_HUB_VIEWS_H_
