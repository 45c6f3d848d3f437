#include "governance/usage.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace gw::governance {

UsageLedger::UsageLedger(QuotaSettings quotas, PriceSettings prices, double idle_threshold,
                         double max_gap_s)
    : quotas_(std::move(quotas)),
      prices_(std::move(prices)),
      threshold_(idle_threshold),
      max_gap_s_(max_gap_s) {
  for (const auto& [team, quota] : quotas_.teams) {
    TeamUsage& t = teams_[team];
    t.team = team;
    t.quota = quota;
    t.has_quota = true;
  }
}

void UsageLedger::Observe(const Cycle& cycle) {
  const double now = cycle.now_s;
  double dt = last_s_ > 0 ? now - last_s_ : 0;
  if (!(dt > 0) || dt > max_gap_s_) dt = 0;
  last_s_ = now;
  const double hours = dt / 3600;

  std::map<unsigned, unsigned> holders;
  for (const RunningJob& job : cycle.jobs)
    for (unsigned g : job.gpus) ++holders[g];

  // Per GPU: price, energy used in this interval, and the node's capacity figures.
  struct GpuInterval {
    double price = 0, energy_j = 0, util = 0;
    bool idle = false;
  };
  std::map<unsigned, GpuInterval> gpus;
  for (const GpuReading& r : cycle.gpus) {
    GpuInterval g;
    g.price = prices_.GpuHourPrice(r.model);
    g.util = r.util_known ? std::clamp(r.util_ratio, 0.0, 1.0) : 0;
    g.idle = r.util_known && r.util_ratio <= threshold_;
    if (r.energy_j) {
      auto last = last_energy_j_.find(r.index);
      if (last != last_energy_j_.end() && *r.energy_j >= last->second && dt > 0)
        g.energy_j = *r.energy_j - last->second;
      else if (dt > 0)
        g.energy_j = r.power_w * dt;  // the counter went backwards (reset): the power integral
      last_energy_j_[r.index] = *r.energy_j;
    } else {
      g.energy_j = r.power_w * dt;
    }
    gpus[r.index] = g;
    node_.capacity_gpu_s += dt;
    node_.capacity_cost += g.price * hours;
    node_.energy_j += g.energy_j;
    node_.energy_cost += g.energy_j / 3.6e6 * prices_.energy_per_kwh;
  }

  // Every team seen this cycle starts at zero GPUs now.
  for (auto& [name, t] : teams_) t.allocated_gpus = t.used_gpus = 0;
  std::set<std::string> live;
  for (const RunningJob& job : cycle.jobs) {
    live.insert(job.id);
    JobCost& jc = jobs_[job.id];
    if (jc.id.empty()) {
      jc.id = job.id;
      jc.start_s = now;
    }
    jc.team = job.team;
    jc.partition = job.partition;
    jc.user = job.user;
    jc.last_s = now;
    TeamUsage& team = teams_[job.team];
    team.team = job.team;
    CostTotals& part = partitions_[job.partition];
    CostTotals& pair = by_team_partition_[{job.team, job.partition}];
    for (unsigned index : job.gpus) {
      auto it = gpus.find(index);
      if (it == gpus.end()) continue;
      const GpuInterval& g = it->second;
      const double share = 1.0 / holders[index];
      team.allocated_gpus += share;
      team.used_gpus += share * g.util;
      for (CostTotals* c : {&jc.cost, &team.cost, &part, &pair}) {
        c->allocated_gpu_s += share * dt;
        c->used_gpu_s += share * g.util * dt;
        c->allocation_cost += share * g.price * hours;
        c->energy_j += share * g.energy_j;
        c->energy_cost += share * g.energy_j / 3.6e6 * prices_.energy_per_kwh;
        if (g.idle) {
          c->idle_gpu_s += share * dt;
          c->idle_cost += share * g.price * hours;
        }
      }
      node_.allocation_cost += share * g.price * hours;
    }
  }
  node_.idle_cost = std::max(0.0, node_.capacity_cost - node_.allocation_cost);
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    if (live.count(it->first)) {
      ++it;
      continue;
    }
    ended_.push_back(it->second);
    if (ended_.size() > 200) ended_.erase(ended_.begin());
    it = jobs_.erase(it);
  }

  // Quotas.
  for (auto& [name, t] : teams_) {
    if (!t.has_quota) continue;
    const TeamQuota& q = t.quota;
    // This period's GPU-hours (the interval just charged belongs to the period holding `now`).
    if (q.period_s > 0) {
      const double start = std::floor(now / q.period_s) * q.period_s;
      if (start != t.period_start_s) {
        t.period_start_s = start;
        t.period_allocated_gpu_h = t.period_used_gpu_h = 0;
      }
      t.period_allocated_gpu_h += t.allocated_gpus * hours;
      t.period_used_gpu_h += t.used_gpus * hours;
    }
    double used_share = 1;  // used / quota (pro-rated for GPU-hours)
    t.over_quota = false;
    if (q.gpus > 0) {
      t.deviation_allocated = (t.allocated_gpus - q.gpus) / q.gpus;
      t.deviation_used = (t.used_gpus - q.gpus) / q.gpus;
      t.over_quota = t.allocated_gpus > q.gpus + 1e-9;
      used_share = t.used_gpus / q.gpus;
    }
    if (q.gpu_hours > 0) {
      if (q.gpus <= 0) {
        t.deviation_allocated = (t.period_allocated_gpu_h - q.gpu_hours) / q.gpu_hours;
        t.deviation_used = (t.period_used_gpu_h - q.gpu_hours) / q.gpu_hours;
      }
      t.over_quota = t.over_quota || t.period_allocated_gpu_h > q.gpu_hours + 1e-9;
      const double elapsed =
          q.period_s > 0 ? std::clamp((now - t.period_start_s) / q.period_s, 0.0, 1.0) : 1.0;
      const double due = q.gpu_hours * elapsed;
      const double share = due > 0 ? t.period_used_gpu_h / due : 1;
      used_share = q.gpus > 0 ? std::min(used_share, share) : share;
    }
    auto since = under_since_s_.find(name);
    if (used_share < quotas_.under_use_ratio) {
      if (since == under_since_s_.end()) since = under_since_s_.emplace(name, now).first;
      t.under_use_for_s = now - since->second;
      t.under_use = t.under_use_for_s >= quotas_.under_use_for_s;
    } else {
      if (since != under_since_s_.end()) under_since_s_.erase(since);
      t.under_use_for_s = 0;
      t.under_use = false;
    }
  }
}

}  // namespace gw::governance
