// serve/governance_metrics.cpp — the governance family table, the figures built from the state
// each snapshot, and their writing through expo::Writer.
#include "serve/governance_metrics.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string_view>
#include <tuple>

namespace gw::serve {

namespace {

struct Family {
  const char* name;
  expo::Type type;
  const char* unit;
  const char* help;
};

// Every family this service exports, in the order of docs/metrics.md's "Governance" section.
const Family kFamilies[] = {
    {"gpu_allocated_gpu_seconds_total", expo::Type::kCounter, "",
     "GPU-seconds allocated to jobs on this node, by team and partition."},
    {"gpu_idle_allocated_gpu_seconds_total", expo::Type::kCounter, "",
     "Allocated GPU-seconds at or below jobs.idle_threshold, by team and partition."},
    {"gpu_idle_allocated_ratio", expo::Type::kGauge, "ratio",
     "Idle allocated GPU-seconds / allocated GPU-seconds (kept across restarts)."},
    {"gpu_team_idle_gpus", expo::Type::kGauge, "",
     "Allocated GPUs idle now, by team, partition and memory."},
    {"gpu_reclaim_actions_total", expo::Type::kCounter, "",
     "Reclaim decisions: notices, actions, exemptions, withdrawals (reason, action)."},
    {"gpu_reclaim_failures_total", expo::Type::kCounter, "",
     "Reclaim commands that failed, by action."},
    {"gpu_reclaim_noticed_jobs", expo::Type::kGauge, "",
     "Jobs noticed as idle and in their grace period."},
    {"gpu_pool_capacity_gpus", expo::Type::kGauge, "", "GPUs in the partition."},
    {"gpu_pool_allocated_gpus", expo::Type::kGauge, "",
     "GPUs held by the partition's running jobs."},
    {"gpu_pool_free_gpus", expo::Type::kGauge, "", "Capacity minus allocated GPUs."},
    {"gpu_pool_pending_gpus", expo::Type::kGauge, "",
     "GPUs requested by the partition's pending jobs."},
    {"gpu_pool_pending_jobs", expo::Type::kGauge, "", "Pending jobs that request GPUs."},
    {"gpu_pool_congestion_ratio", expo::Type::kGauge, "ratio",
     "(allocated + pending GPUs) / capacity: above 1 jobs queue for want of GPUs."},
    {"gpu_pool_queue_wait_seconds", expo::Type::kGauge, "seconds",
     "Queue wait (start - eligible) quantiles of jobs that started within the window."},
    {"gpu_pool_recommendation_gpus", expo::Type::kGauge, "",
     "GPUs to add (direction scale_out) or remove (shrink); 0 = no recommendation."},
    {"gpuwarden_pool_capacity_up", expo::Type::kGauge, "",
     "1 if the last governance.capacity_command succeeded."},
    {"gpu_team_quota_gpus", expo::Type::kGauge, "", "The team's quota of GPUs held at once."},
    {"gpu_team_quota_gpu_hours", expo::Type::kGauge, "",
     "The team's quota of GPU-hours per period."},
    {"gpu_team_allocated_gpus", expo::Type::kGauge, "",
     "GPUs the team's jobs hold now on this node."},
    {"gpu_team_used_gpus", expo::Type::kGauge, "",
     "The team's allocated GPUs weighted by utilization."},
    {"gpu_team_period_gpu_hours", expo::Type::kGauge, "",
     "GPU-hours in the quota's current period (kind allocated or used)."},
    {"gpu_team_quota_deviation_ratio", expo::Type::kGauge, "ratio",
     "(allocated or used - quota) / quota (basis label)."},
    {"gpu_team_over_quota", expo::Type::kGauge, "", "1 while the team is above its quota."},
    {"gpu_team_under_use", expo::Type::kGauge, "",
     "1 while the team's use has stayed below governance.under_use_ratio of its quota for "
     "governance.under_use_for."},
    {"gpu_team_efficiency_ratio", expo::Type::kGauge, "ratio",
     "Used / allocated GPU-hours, kept across restarts (OpenCost's efficiency)."},
    {"gpu_cost_allocation_total", expo::Type::kCounter, "",
     "Allocated GPU-hours x the GPU's price, by team and partition (currency units)."},
    {"gpu_cost_energy_total", expo::Type::kCounter, "",
     "Energy of the allocated GPUs x the energy price, by team and partition."},
    {"gpu_cost_idle_allocated_total", expo::Type::kCounter, "",
     "Allocation cost of GPU-time spent idle, by team and partition."},
    {"gpu_cost_capacity_total", expo::Type::kCounter, "", "Every GPU of this node x its price."},
    {"gpu_cost_idle_total", expo::Type::kCounter, "",
     "Capacity cost - allocation cost: GPUs nobody held (OpenCost's idle)."},
    {"gpu_idle_cost_ratio", expo::Type::kGauge, "ratio",
     "Idle cost / capacity cost (kept across restarts)."},
    {"gpu_job_cost_total", expo::Type::kCounter, "",
     "A running job's allocation + energy cost so far."},
    {"gpu_cost_info", expo::Type::kGauge, "", "1, with the currency of every gpu_cost_* figure."},
    {"gpuwarden_reclaim_log_errors_total", expo::Type::kCounter, "",
     "Reclaim decisions that could not be appended to the decisions log."},
};

}  // namespace

std::string WindowLabel(double seconds) {
  const long long s = std::llround(seconds);
  if (s > 0 && s % 86400 == 0) return std::to_string(s / 86400) + "d";
  if (s > 0 && s % 3600 == 0) return std::to_string(s / 3600) + "h";
  if (s > 0 && s % 60 == 0) return std::to_string(s / 60) + "m";
  return std::to_string(s) + "s";
}

std::vector<GovernanceFigure> BuildGovernanceFigures(const GovernanceState& state,
                                                     const governance::Cycle& cycle,
                                                     const GovernanceFigureInputs& inputs) {
  std::vector<GovernanceFigure> figures;
  auto add = [&figures](const char* family, std::initializer_list<tsdb::Label> labels, double v) {
    GovernanceFigure f;
    f.family = family;
    f.labels.push_back({"__name__", family});
    for (const tsdb::Label& l : labels) f.labels.push_back(l);
    std::sort(f.labels.begin(), f.labels.end());
    f.value = v;
    figures.push_back(std::move(f));
  };
  // Idle allocation, by team and partition.
  for (const auto& [key, t] : state.idle.by_team_partition()) {
    const tsdb::Label team{"team", key.first}, partition{"partition", key.second};
    add("gpu_allocated_gpu_seconds_total", {team, partition}, t.allocated_gpu_s);
    add("gpu_idle_allocated_gpu_seconds_total", {team, partition}, t.idle_gpu_s);
    add("gpu_idle_allocated_ratio", {team, partition}, t.Ratio());
  }
  // Idle now: per (team, partition, memory), from the jobs' GPUs (a shared GPU counts once).
  {
    std::map<std::tuple<std::string, std::string, std::string>, double> idle_now;
    std::set<unsigned> counted;
    for (const auto& [key, t] : state.idle.by_team_partition()) {
      idle_now[{key.first, key.second, "held"}] += 0;
      idle_now[{key.first, key.second, "free"}] += 0;
    }
    for (const governance::RunningJob& h : cycle.jobs) {
      for (unsigned g : h.gpus) {
        auto it = state.idle.gpus().find(g);
        if (it == state.idle.gpus().end() || !it->second.idle || !counted.insert(g).second)
          continue;
        // A MIG instance counts as its share of the GPU.
        idle_now[{h.team, h.partition, it->second.memory_held ? "held" : "free"}] +=
            it->second.share;
      }
    }
    for (const auto& [key, n] : idle_now)
      add("gpu_team_idle_gpus",
          {{"team", std::get<0>(key)},
           {"partition", std::get<1>(key)},
           {"memory", std::get<2>(key)}},
          n);
  }
  // Reclaim: every action from the start (0 until taken), so that increase() sees the first.
  std::map<std::pair<std::string, std::string>, double> actions = state.actions;
  if (!state.reclaim.policies().empty()) {
    for (const char* reason : {"idle_memory_held", "idle_memory_free"}) {
      actions.emplace(std::make_pair(std::string(reason), std::string("notify")), 0.0);
      for (const governance::ReclaimPolicy& p : state.reclaim.policies())
        actions.emplace(
            std::make_pair(std::string(reason), std::string(ReclaimActionName(p.action))), 0.0);
    }
  }
  for (const auto& [key, n] : actions)
    add("gpu_reclaim_actions_total", {{"reason", key.first}, {"action", key.second}}, n);
  std::map<std::string, double> failures = state.failures;
  if (!state.reclaim.policies().empty())
    failures.emplace("notify", 0.0);  // notify_command failures
  for (const governance::ReclaimPolicy& p : state.reclaim.policies())
    if (p.action != governance::ReclaimAction::kDryRun)
      failures.emplace(ReclaimActionName(p.action), 0.0);
  for (const auto& [action, n] : failures)
    add("gpu_reclaim_failures_total", {{"action", action}}, n);
  add("gpu_reclaim_noticed_jobs", {}, double(state.reclaim.noticed()));
  // Pools.
  for (const auto& [name, p] : state.pools.pools()) {
    const tsdb::Label partition{"partition", name};
    if (p.capacity > 0) {
      add("gpu_pool_capacity_gpus", {partition}, p.capacity);
      add("gpu_pool_free_gpus", {partition}, p.free);
      add("gpu_pool_congestion_ratio", {partition}, p.congestion);
      add("gpu_pool_recommendation_gpus", {partition, {"direction", "scale_out"}},
          p.scale_out_gpus);
      add("gpu_pool_recommendation_gpus", {partition, {"direction", "shrink"}}, p.shrink_gpus);
    }
    add("gpu_pool_allocated_gpus", {partition}, p.allocated);
    add("gpu_pool_pending_gpus", {partition}, p.pending);
    add("gpu_pool_pending_jobs", {partition}, p.pending_jobs);
    for (const governance::QueueWaitWindow& w : p.waits) {
      if (w.jobs == 0) continue;
      const tsdb::Label window{"window", WindowLabel(w.window_s)};
      add("gpu_pool_queue_wait_seconds", {partition, window, {"quantile", "0.5"}}, w.p50_s);
      add("gpu_pool_queue_wait_seconds", {partition, window, {"quantile", "0.95"}}, w.p95_s);
    }
  }
  if (inputs.capacity_polled) add("gpuwarden_pool_capacity_up", {}, state.capacity_up ? 1 : 0);
  // Quotas and per-team figures.
  for (const auto& [name, t] : state.usage.teams()) {
    const tsdb::Label team{"team", name};
    add("gpu_team_allocated_gpus", {team}, t.allocated_gpus);
    add("gpu_team_used_gpus", {team}, t.used_gpus);
    add("gpu_team_efficiency_ratio", {team}, t.cost.Efficiency());
    if (!t.has_quota) continue;
    if (t.quota.gpus > 0) add("gpu_team_quota_gpus", {team}, t.quota.gpus);
    if (t.quota.gpu_hours > 0) {
      add("gpu_team_quota_gpu_hours", {team}, t.quota.gpu_hours);
      add("gpu_team_period_gpu_hours", {team, {"kind", "allocated"}}, t.period_allocated_gpu_h);
      add("gpu_team_period_gpu_hours", {team, {"kind", "used"}}, t.period_used_gpu_h);
    }
    add("gpu_team_quota_deviation_ratio", {team, {"basis", "allocated"}}, t.deviation_allocated);
    add("gpu_team_quota_deviation_ratio", {team, {"basis", "used"}}, t.deviation_used);
    add("gpu_team_over_quota", {team}, t.over_quota ? 1 : 0);
    add("gpu_team_under_use", {team}, t.under_use ? 1 : 0);
  }
  // Cost.
  for (const auto& [key, c] : state.usage.by_team_partition()) {
    const tsdb::Label team{"team", key.first}, partition{"partition", key.second};
    add("gpu_cost_allocation_total", {team, partition}, c.allocation_cost);
    add("gpu_cost_energy_total", {team, partition}, c.energy_cost);
    add("gpu_cost_idle_allocated_total", {team, partition}, c.idle_cost);
  }
  const governance::NodeCost& node = state.usage.node();
  add("gpu_cost_capacity_total", {}, node.capacity_cost);
  add("gpu_cost_idle_total", {}, node.idle_cost);
  add("gpu_idle_cost_ratio", {}, node.IdleRatio());
  for (const auto& [id, j] : state.usage.jobs())
    add("gpu_job_cost_total",
        {{"job_id", j.id}, {"user", j.user}, {"team", j.team}, {"partition", j.partition}},
        j.cost.Total());
  add("gpu_cost_info", {{"currency", state.usage.prices().currency}}, 1);
  add("gpuwarden_reclaim_log_errors_total", {}, double(inputs.log_errors));
  return figures;
}

void WriteGovernanceFamilies(const std::vector<GovernanceFigure>& figures, expo::Writer* writer) {
  for (const Family& f : kFamilies) {
    bool any = false;
    for (const GovernanceFigure& fig : figures) {
      if (std::string_view(fig.family) != f.name) continue;
      if (!any) writer->Family(f.name, f.type, f.help, f.unit);
      any = true;
      expo::Writer::Line line = writer->Sample();
      for (const tsdb::Label& l : fig.labels)
        if (l.name != "__name__") line.Label(l.name, l.value);
      line.Value(fig.value);
    }
  }
}

}  // namespace gw::serve
