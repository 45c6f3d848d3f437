// serve/governance_api.cpp — GET /api/gw/v1/teams and GET /api/gw/v1/reclaim.
#include "serve/governance_api.h"

#include "jobs/gpu_unit.h"

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <utility>

#include "http/prom_api.h"
#include "http/server.h"
#include "serve/governance_metrics.h"

namespace gw::serve {

namespace {

nlohmann::json CostJson(const governance::CostTotals& c) {
  return {{"allocated_gpu_hours", c.allocated_gpu_s / 3600},
          {"used_gpu_hours", c.used_gpu_s / 3600},
          {"idle_gpu_hours", c.idle_gpu_s / 3600},
          {"energy_kwh", c.energy_j / 3.6e6},
          {"allocation_cost", c.allocation_cost},
          {"energy_cost", c.energy_cost},
          {"idle_allocated_cost", c.idle_cost},
          {"total_cost", c.Total()},
          {"efficiency", c.Efficiency()},
          {"idle_ratio", c.allocated_gpu_s > 0 ? c.idle_gpu_s / c.allocated_gpu_s : 0}};
}

}  // namespace

std::string TeamsJson(const GovernanceState& state) {
  nlohmann::json teams = nlohmann::json::array();
  for (const auto& [name, t] : state.usage.teams()) {
    // No quota is null, never 0 (docs/governance.md "API"): the team's quota object only when it
    // has a limit, and each limit null when unset.
    auto limit = [](double v) { return v > 0 ? nlohmann::json(v) : nlohmann::json(nullptr); };
    nlohmann::json quota = nullptr;
    if (t.has_quota && (t.quota.gpus > 0 || t.quota.gpu_hours > 0))
      quota = {{"gpus", limit(t.quota.gpus)},
               {"gpu_hours", limit(t.quota.gpu_hours)},
               {"period_s", t.quota.period_s},
               {"period_start", t.period_start_s},
               {"period_allocated_gpu_hours", t.period_allocated_gpu_h},
               {"period_used_gpu_hours", t.period_used_gpu_h},
               {"deviation_allocated", t.deviation_allocated},
               {"deviation_used", t.deviation_used},
               {"over_quota", t.over_quota},
               {"under_use", t.under_use},
               {"under_use_for_s", t.under_use_for_s}};
    auto idle = state.idle.by_team().find(name);
    teams.push_back({{"team", name},
                     {"allocated_gpus", t.allocated_gpus},
                     {"used_gpus", t.used_gpus},
                     {"quota", quota},
                     {"idle_ratio", idle == state.idle.by_team().end() ? 0 : idle->second.Ratio()},
                     {"cost", CostJson(t.cost)}});
  }
  nlohmann::json partitions = nlohmann::json::array();
  for (const auto& [name, c] : state.usage.partitions()) {
    nlohmann::json entry = {{"partition", name}, {"cost", CostJson(c)}};
    if (auto p = state.pools.pools().find(name); p != state.pools.pools().end()) {
      nlohmann::json waits = nlohmann::json::array();
      for (const governance::QueueWaitWindow& w : p->second.waits)
        waits.push_back({{"window", WindowLabel(w.window_s)},
                         {"jobs", w.jobs},
                         {"p50_s", w.p50_s},
                         {"p95_s", w.p95_s}});
      entry["pool"] = {
          {"capacity", p->second.capacity},       {"allocated", p->second.allocated},
          {"pending", p->second.pending},         {"free", p->second.free},
          {"congestion", p->second.congestion},   {"scale_out_gpus", p->second.scale_out_gpus},
          {"shrink_gpus", p->second.shrink_gpus}, {"queue_wait", waits}};
    }
    partitions.push_back(entry);
  }
  // Pools without local jobs.
  for (const auto& [name, p] : state.pools.pools()) {
    if (state.usage.partitions().count(name)) continue;
    partitions.push_back({{"partition", name},
                          {"pool",
                           {{"capacity", p.capacity},
                            {"allocated", p.allocated},
                            {"pending", p.pending},
                            {"free", p.free},
                            {"congestion", p.congestion},
                            {"scale_out_gpus", p.scale_out_gpus},
                            {"shrink_gpus", p.shrink_gpus}}}});
  }
  nlohmann::json jobs = nlohmann::json::array();
  auto job_json = [](const governance::JobCost& j, bool running) {
    return nlohmann::json{{"job_id", j.id},        {"user", j.user},
                          {"team", j.team},        {"partition", j.partition},
                          {"running", running},    {"first_seen", j.start_s},
                          {"last_seen", j.last_s}, {"cost", CostJson(j.cost)}};
  };
  for (const auto& [id, j] : state.usage.jobs()) jobs.push_back(job_json(j, true));
  for (auto it = state.usage.ended_jobs().rbegin(); it != state.usage.ended_jobs().rend(); ++it)
    jobs.push_back(job_json(*it, false));
  const governance::NodeCost& node = state.usage.node();
  nlohmann::json data = {{"currency", state.usage.prices().currency},
                         {"idle_threshold", state.idle.threshold()},
                         {"teams", teams},
                         {"partitions", partitions},
                         {"jobs", jobs},
                         {"node",
                          {{"capacity_cost", node.capacity_cost},
                           {"allocation_cost", node.allocation_cost},
                           {"idle_cost", node.idle_cost},
                           {"idle_cost_ratio", node.IdleRatio()},
                           {"energy_kwh", node.energy_j / 3.6e6},
                           {"energy_cost", node.energy_cost}}}};
  return nlohmann::json{{"status", "success"}, {"data", data}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string ReclaimJson(const GovernanceState& state, const DecisionsLog& log, std::size_t limit) {
  nlohmann::json policies = nlohmann::json::array();
  for (const governance::ReclaimPolicy& p : state.reclaim.policies())
    policies.push_back({{"policy", p.Describe()},
                        {"idle_for_s", p.idle_for_s},
                        {"grace_s", p.grace_s},
                        {"memory", MemoryFilterName(p.memory)},
                        {"action", ReclaimActionName(p.action)}});
  nlohmann::json decisions = nlohmann::json::array();
  for (const std::string& line : log.Recent(limit))
    decisions.push_back(nlohmann::json::parse(line));
  nlohmann::json idle = nlohmann::json::array();
  for (const auto& [unit, g] : state.idle.gpus()) {
    if (!g.idle) continue;
    idle.push_back({{"gpu", jobs::UnitGpu(unit)},
                    {"uuid", g.uuid},
                    {"idle_s", state.idle.StreakS(unit, state.last_now_s)},
                    {"memory_held", g.memory_held}});
    if (jobs::IsMigUnit(unit)) {  // a MIG instance: which, and its share of the GPU
      idle.back()["mig_instance"] = jobs::UnitMigInstance(unit);
      idle.back()["mig_profile"] = g.mig_profile;
      idle.back()["share"] = g.share;
    }
  }
  nlohmann::json data = {{"policies", policies},
                         {"noticed_jobs", state.reclaim.noticed()},
                         {"idle_gpus", idle},
                         {"decisions_log", log.path()},
                         {"decisions", decisions}};
  return nlohmann::json{{"status", "success"}, {"data", data}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void RegisterGovernanceRoutes(http::Server* server, std::function<std::string()> teams,
                              std::function<std::string(std::size_t limit)> reclaim) {
  server->Get("/api/gw/v1/teams", [teams](const http::Request&, http::Response& res) {
    res.body = teams();
    res.content_type = "application/json";
  });
  server->Get("/api/gw/v1/reclaim", [reclaim](const http::Request& req, http::Response& res) {
    std::size_t limit = 100;
    if (const std::string l = req.param("limit"); !l.empty()) {
      char* end = nullptr;
      const long long v = std::strtoll(l.c_str(), &end, 10);
      if (end == l.c_str() || *end != '\0' || v <= 0 || v > 1000)
        return http::WriteApiError(res, 400, "bad_data", "limit: expected 1-1000, got '" + l + "'");
      limit = static_cast<std::size_t>(v);
    }
    res.body = reclaim(limit);
    res.content_type = "application/json";
  });
}

}  // namespace gw::serve
