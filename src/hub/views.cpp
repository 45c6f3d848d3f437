#include "hub/views.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

namespace gw::hub {

using nlohmann::json;

namespace {

// Families that are not a GPU's own state (the task layer, governance, services): left out of
// a snapshot's per-GPU metrics, as the agent's snapshot leaves them out.
bool TaskFamily(const std::string& name) {
  return name.starts_with("gpu_job_") || name.starts_with("gpu_team_") ||
         name == "gpu_allocation_info" || name.starts_with("gpu_service_") ||
         name.starts_with("gpu_pool_") || name == "gpu_jobs" || name.starts_with("gpu_cost_");
}

std::string LabelOr(const std::map<std::string, std::string>& labels, const std::string& name,
                    const std::string& fallback = "") {
  auto it = labels.find(name);
  return it == labels.end() ? fallback : it->second;
}

// A metric key as the agent writes it: name{a="1",b="2"} with the family's own labels.
std::string Key(const std::string& name, const std::map<std::string, std::string>& labels,
                const std::set<std::string>& skip) {
  std::string extra;
  for (const auto& [k, v] : labels) {
    if (k == "__name__" || skip.count(k)) continue;
    if (!extra.empty()) extra += ',';
    extra += k + "=" + json(v).dump();
  }
  return extra.empty() ? name : name + "{" + extra + "}";
}

// Per-GPU details of the agent's snapshot by UUID.
std::map<std::string, json> AgentGpus(const json& agent) {
  std::map<std::string, json> out;
  if (!agent.is_object()) return out;
  for (const auto& g : agent.value("gpus", json::array()))
    if (g.is_object()) out[g.value("uuid", "")] = g;
  return out;
}

}  // namespace

json NodeSnapshot(const std::string& node, const Samples& series, const json& agent, double now_s) {
  // The node's target labels: what gpu_up carries besides its own labels.
  std::set<std::string> skip = {"gpu", "uuid"};
  for (const auto& s : series) {
    if (LabelOr(s.labels, "__name__") != "gpu_up") continue;
    for (const auto& [k, v] : s.labels)
      if (k != "__name__" && k != "gpu" && k != "uuid") skip.insert(k);
  }
  struct Gpu {
    json metrics = json::object();
    json xids = json::object();
    std::map<std::string, std::string> info;
    std::string uuid;
    double up = -1;
    bool gpm = false;
  };
  std::map<long, Gpu> gpus;
  double newest = 0;
  for (const auto& s : series) {
    const std::string name = LabelOr(s.labels, "__name__");
    const std::string index = LabelOr(s.labels, "gpu");
    if (name.empty() || index.empty() || TaskFamily(name)) continue;
    char* end = nullptr;
    const long i = std::strtol(index.c_str(), &end, 10);
    if (end == index.c_str() || *end != 0) continue;
    Gpu& g = gpus[i];
    newest = std::max(newest, s.t_s);
    if (g.uuid.empty()) g.uuid = LabelOr(s.labels, "uuid");
    if (name == "gpu_info") {
      g.info = s.labels;
      continue;
    }
    if (name == "gpu_up") g.up = s.value;
    if (name == "gpu_sm_active_ratio") g.gpm = true;
    if (name == "gpu_xid_errors_total") {
      g.xids[LabelOr(s.labels, "xid", "?")] = s.value;
      continue;
    }
    // MIG instances and NVLink links are the agent's details (below), not tile metrics.
    if (name.starts_with("gpu_mig_") && s.labels.count("mig_instance")) continue;
    if (name.starts_with("gpu_nvlink_") && s.labels.count("link")) continue;
    if (!std::isfinite(s.value)) continue;
    g.metrics[Key(name, s.labels, skip)] = s.value;
  }
  const auto details = AgentGpus(agent);
  json out_gpus = json::array();
  for (auto& [index, g] : gpus) {
    json j;
    j["index"] = index;
    j["uuid"] = g.uuid;
    j["name"] = LabelOr(g.info, "name");
    j["serial"] = LabelOr(g.info, "serial");
    j["pci_bus_id"] = LabelOr(g.info, "pci_bus_id");
    j["up"] = g.up == 1;
    j["lost"] = g.up == 0;
    j["gpm_supported"] = g.gpm;
    j["metrics"] = std::move(g.metrics);
    j["throttle_reasons"] = json::array();
    j["xid_counts"] = std::move(g.xids);
    j["processes"] = json::array();
    j["mig"] = json::array();
    j["nvlinks"] = json::array();
    j["health"] = json::array();
    auto d = details.find(g.uuid);
    if (d != details.end()) {
      for (const char* k : {"processes", "mig", "nvlinks", "health", "throttle_reasons"})
        if (d->second.contains(k)) j[k] = d->second[k];
      j["details"] = "agent";
    } else {
      j["details"] = "store";  // the agent did not answer: no processes, MIG or links
    }
    out_gpus.push_back(std::move(j));
  }
  json root;
  root["nvml_up"] = true;
  root["taken_at"] = newest > 0 ? newest : now_s;
  std::string driver, nvml, cuda;
  if (!gpus.empty()) {
    const auto& info = gpus.begin()->second.info;
    driver = LabelOr(info, "driver_version");
    nvml = LabelOr(info, "nvml_version");
    cuda = LabelOr(info, "cuda_driver_version");
  }
  root["driver_version"] = driver;
  root["nvml_version"] = nvml;
  root["cuda_driver_version"] = cuda;
  root["node"] = node;
  root["agent_reachable"] = agent.is_object();
  root["gpus"] = std::move(out_gpus);
  return root;
}

json NodeSummaries(const std::vector<NodeFigures>& nodes) {
  json out = json::array();
  for (const NodeFigures& n : nodes) {
    json j = {{"node", n.node},
              {"gpus", n.gpus},
              {"gpus_up", n.gpus_up},
              {"newest_sample", n.newest_s},
              {"alerts_critical", n.alerts_critical},
              {"alerts_warning", n.alerts_warning}};
    j["utilization"] = n.utilization >= 0 ? json(n.utilization) : json(nullptr);
    j["power_watts"] = n.power_w >= 0 ? json(n.power_w) : json(nullptr);
    const char* agent = !n.agent_known           ? "not listed"
                        : n.agent_reachable == 1 ? "reachable"
                        : n.agent_reachable == 0 ? "unreachable"
                                                 : "unknown";
    j["agent"] = agent;
    out.push_back(std::move(j));
  }
  return out;
}

std::string AlertsJson(const Samples& alerts) {
  json list = json::array();
  for (const auto& a : alerts) {
    json labels = json::object();
    for (const auto& [k, v] : a.labels)
      if (k != "__name__" && k != "alertstate") labels[k] = v;
    list.push_back({{"labels", std::move(labels)},
                    {"annotations", json::object()},
                    {"state", LabelOr(a.labels, "alertstate", "firing")},
                    {"activeAt", nullptr},
                    {"value", "1"}});
  }
  return json{{"status", "success"}, {"data", {{"alerts", std::move(list)}}}}.dump(
      -1, ' ', false, json::error_handler_t::replace);
}

json JobsFromStore(const Samples& allocations, const Samples& job_series,
                   const std::string& node_label) {
  struct Job {
    std::string node, id, user, team, partition;
    std::set<long> gpus;
    std::map<std::string, double> figures;
  };
  std::map<std::pair<std::string, std::string>, Job> jobs;  // (node, job id)
  for (const auto& a : allocations) {
    const std::string id = LabelOr(a.labels, "job_id");
    if (id.empty()) continue;
    Job& j = jobs[{LabelOr(a.labels, node_label), id}];
    j.node = LabelOr(a.labels, node_label);
    j.id = id;
    j.user = LabelOr(a.labels, "user");
    j.team = LabelOr(a.labels, "team");
    j.partition = LabelOr(a.labels, "partition");
    j.gpus.insert(std::strtol(LabelOr(a.labels, "gpu", "-1").c_str(), nullptr, 10));
  }
  for (const auto& s : job_series) {
    auto it = jobs.find({LabelOr(s.labels, node_label), LabelOr(s.labels, "job_id")});
    if (it == jobs.end()) continue;
    std::string name = LabelOr(s.labels, "__name__");
    if (s.labels.count("stat")) name += "/" + LabelOr(s.labels, "stat");
    it->second.figures[name] = s.value;
  }
  json out = json::array();
  for (auto& [key, j] : jobs) {
    auto figure = [&j](const std::string& name) {
      auto f = j.figures.find(name);
      return f == j.figures.end() ? json(nullptr) : json(f->second);
    };
    json gpu = {{"gpus", json(std::vector<long>(j.gpus.begin(), j.gpus.end()))},
                {"util_avg", figure("gpu_job_sm_utilization_ratio/avg")},
                {"util_max", figure("gpu_job_sm_utilization_ratio/max")},
                {"memory_peak_bytes", figure("gpu_job_memory_peak_bytes")},
                {"energy_j", figure("gpu_job_energy_joules_total")},
                {"gpu_seconds", figure("gpu_job_gpu_seconds_total")},
                {"idle_gpu_seconds", figure("gpu_job_idle_gpu_seconds_total")}};
    out.push_back({{"job_id", j.id},
                   {"source", "store"},
                   {"name", ""},
                   {"user", j.user},
                   {"account", ""},
                   {"partition", j.partition},
                   {"team", j.team},
                   {"state", "RUNNING"},
                   {"state_reason", ""},
                   {"submit_time", nullptr},
                   {"eligible_time", nullptr},
                   {"start_time", nullptr},
                   {"end_time", nullptr},
                   {"node", j.node},
                   {"gpu", std::move(gpu)}});
  }
  return out;
}

bool HasJobsList(const AgentJobs& a) {
  return a.answered && a.doc.is_object() && a.doc.contains("data") && a.doc["data"].is_object() &&
         a.doc["data"].contains("jobs") && a.doc["data"]["jobs"].is_array();
}

json MergeJobs(const json& store_jobs, const std::vector<AgentJobs>& agents) {
  std::set<std::string> answered;
  json running = json::array(), finished = json::array(), unreachable = json::array();
  json errors = json::object();
  for (const AgentJobs& a : agents) {
    const json* list = HasJobsList(a) ? &a.doc["data"]["jobs"] : nullptr;
    if (!list) {
      unreachable.push_back(a.node);
      errors[a.node] =
          a.answered ? "the agent of " + a.node + " answered without a jobs list" : a.error;
      continue;
    }
    answered.insert(a.node);
    for (json j : *list) {
      if (!j.is_object()) continue;
      j["node"] = a.node;
      (j.value("state", "") == "RUNNING" ? running : finished).push_back(std::move(j));
    }
  }
  for (const json& j : store_jobs)
    if (j.is_object() && !answered.count(j.value("node", ""))) running.push_back(j);
  auto end_time = [](const json& j) {
    return j.contains("end_time") && j["end_time"].is_number() ? j["end_time"].get<double>() : 0.0;
  };
  std::stable_sort(finished.begin(), finished.end(),
                   [&](const json& a, const json& b) { return end_time(a) > end_time(b); });
  for (json& j : finished) running.push_back(std::move(j));
  return {{"jobs", std::move(running)},
          {"nodes_unreachable", std::move(unreachable)},
          {"agent_errors", std::move(errors)}};
}

namespace {

// The cost figures of one team or partition summed over nodes (serve/governance_api.cpp's
// CostJson from the store's counters).
struct CostSums {
  double allocated_s = 0, idle_s = 0, used_s = 0, energy_j = 0;
  double allocation = 0, energy = 0, idle = 0;
  bool counters = false;  // any gpu_allocated / idle_allocated GPU-seconds series
};

json CostDoc(const CostSums& c, bool priced) {
  auto money = [priced](double v) { return priced ? json(v) : json(nullptr); };
  const double idle_ratio = c.allocated_s > 0 ? c.idle_s / c.allocated_s : 0;
  return {{"allocated_gpu_hours", c.allocated_s / 3600},
          {"used_gpu_hours", c.used_s / 3600},
          {"idle_gpu_hours", c.idle_s / 3600},
          {"energy_kwh", c.energy_j / 3.6e6},
          {"allocation_cost", money(c.allocation)},
          {"energy_cost", money(c.energy)},
          {"idle_allocated_cost", money(c.idle)},
          {"total_cost", money(c.allocation + c.energy)},
          {"efficiency", c.allocated_s > 0 ? json(c.used_s / c.allocated_s) : json(nullptr)},
          {"idle_ratio", idle_ratio}};
}

}  // namespace

std::string TeamsJson(const Samples& series, const json& jobs, const std::string& node_label) {
  struct Team {
    double allocated = 0, used = 0, idle_now = 0, quota = -1;
    CostSums cost;
  };
  std::map<std::string, Team> teams;
  std::map<std::string, CostSums> partitions;
  std::map<std::string, std::set<std::string>> currencies;  // currency -> nodes
  std::set<std::string> cost_nodes;
  // (node, team) -> allocated GPU-seconds and the efficiency ratio: used = ratio x allocated.
  std::map<std::pair<std::string, std::string>, std::pair<double, double>> efficiency;
  for (const auto& s : series) {
    if (!std::isfinite(s.value)) continue;
    const std::string name = LabelOr(s.labels, "__name__");
    const std::string node = LabelOr(s.labels, node_label);
    if (name == "gpu_cost_info") {
      currencies[LabelOr(s.labels, "currency")].insert(node);
      cost_nodes.insert(node);
      continue;
    }
    const std::string team = LabelOr(s.labels, "team");
    if (team.empty()) continue;
    Team& t = teams[team];
    CostSums* p =
        s.labels.count("partition") ? &partitions[LabelOr(s.labels, "partition")] : nullptr;
    auto add = [&](double CostSums::*field) {
      t.cost.*field += s.value;
      if (p) p->*field += s.value;
    };
    if (name == "gpu_team_allocated_gpus") t.allocated += s.value;
    if (name == "gpu_team_used_gpus") t.used += s.value;
    if (name == "gpu_team_idle_gpus") t.idle_now += s.value;
    if (name == "gpu_team_quota_gpus") t.quota = std::max(t.quota, s.value);
    if (name == "gpu_team_efficiency_ratio") efficiency[{node, team}].second = s.value;
    if (name == "gpu_allocated_gpu_seconds_total") {
      add(&CostSums::allocated_s);
      efficiency[{node, team}].first += s.value;
      t.cost.counters = true;
    }
    if (name == "gpu_idle_allocated_gpu_seconds_total") add(&CostSums::idle_s);
    if (name.starts_with("gpu_cost_")) cost_nodes.insert(node);
    if (name == "gpu_cost_allocation_total") add(&CostSums::allocation);
    if (name == "gpu_cost_energy_total") add(&CostSums::energy);
    if (name == "gpu_cost_idle_allocated_total") add(&CostSums::idle);
  }
  for (const auto& [key, e] : efficiency) teams[key.second].cost.used_s += e.first * e.second;
  // Teams of jobs that no team family names (governance off on their nodes), and the energy of
  // each team's jobs (running ones so far, finished ones in the agents' records).
  for (const auto& j : jobs) {
    if (!j.is_object() || j.value("team", "").empty()) continue;
    Team& t = teams[j.value("team", "")];
    if (j.contains("gpu") && j["gpu"].is_object() && j["gpu"].contains("energy_j") &&
        j["gpu"]["energy_j"].is_number())
      t.cost.energy_j += j["gpu"]["energy_j"].get<double>();
  }
  std::string unavailable;
  json currency = nullptr;
  if (cost_nodes.empty()) {
    unavailable =
        "the store has no gpu_cost_* series: governance (governance.prices) is off on the nodes, "
        "or the store does not keep those families, so the fleet has no cost to show";
  } else if (currencies.size() > 1) {
    unavailable = "the nodes price in different currencies (";
    bool first = true;
    for (const auto& [c, nodes] : currencies) {
      unavailable += (first ? "" : ", ") + (c.empty() ? std::string("none") : c) + " on " +
                     std::to_string(nodes.size()) + (nodes.size() == 1 ? " node" : " nodes");
      first = false;
    }
    unavailable += "): the hub does not add them up";
  } else if (currencies.size() == 1) {
    currency = currencies.begin()->first;
  }
  const bool priced = unavailable.empty();
  json list = json::array();
  for (auto& [name, t] : teams) {
    json quota = nullptr;
    if (t.quota > 0) quota = {{"gpus", t.quota}, {"gpu_hours", nullptr}};
    // The agent's idle_ratio: idle / allocated GPU-seconds over its whole record.
    const double idle_ratio =
        t.cost.counters   ? (t.cost.allocated_s > 0 ? t.cost.idle_s / t.cost.allocated_s : 0)
        : t.allocated > 0 ? t.idle_now / t.allocated
                          : 0;
    json cost = CostDoc(t.cost, priced);
    cost["idle_ratio"] = idle_ratio;
    list.push_back({{"team", name},
                    {"allocated_gpus", t.allocated},
                    {"used_gpus", t.used},
                    {"quota", quota},
                    {"idle_ratio", idle_ratio},
                    {"cost", std::move(cost)}});
  }
  json parts = json::array();
  for (const auto& [name, c] : partitions)
    parts.push_back({{"partition", name}, {"cost", CostDoc(c, priced)}});
  json data = {{"currency", currency},     {"idle_threshold", 0.05},
               {"teams", std::move(list)}, {"partitions", std::move(parts)},
               {"jobs", json::array()},    {"cost_nodes", cost_nodes.size()},
               {"source", "store"}};
  if (!priced) data["cost_unavailable"] = unavailable;
  return json{{"status", "success"}, {"data", std::move(data)}}.dump(
      -1, ' ', false, json::error_handler_t::replace);
}

std::string ExpositionText(const Samples& series) {
  std::string out;
  for (const auto& s : series) {
    const std::string name = LabelOr(s.labels, "__name__");
    if (name.empty()) continue;
    out += name;
    std::string labels;
    for (const auto& [k, v] : s.labels) {
      if (k == "__name__") continue;
      labels += (labels.empty() ? "" : ",") + k + "=" + json(v).dump();
    }
    if (!labels.empty()) out += "{" + labels + "}";
    char b[64];
    std::snprintf(b, sizeof b, " %.17g\n", s.value);
    out += b;
  }
  return out;
}

}  // namespace gw::hub
