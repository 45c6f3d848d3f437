#include "governance/usage.h"

#include "jobs/gpu_unit.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <utility>

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
    double share = 1;  // of a GPU
    double price = 0, energy_j = 0, util = 0;
    bool idle = false;
  };
  // Energy per GPU, from the GPU's own reading (a MIG instance's carries its GPU's counter).
  std::map<unsigned, double> gpu_energy_j;
  for (const GpuReading& r : cycle.gpus) {
    if (jobs::IsMigUnit(r.index)) continue;
    double& e = gpu_energy_j[r.index];
    if (r.energy_j) {
      auto last = last_energy_j_.find(r.index);
      if (last != last_energy_j_.end() && *r.energy_j >= last->second && dt > 0)
        e = *r.energy_j - last->second;
      else if (dt > 0)
        e = r.power_w * dt;  // the counter went backwards (reset): the power integral
      last_energy_j_[r.index] = *r.energy_j;
    } else {
      e = r.power_w * dt;
    }
    node_.energy_j += e;
    node_.energy_cost += e / 3.6e6 * prices_.energy_per_kwh;
  }
  // Per unit: its share of the GPU's price and energy (jobs/gpu_unit.h).
  std::map<unsigned, GpuInterval> gpus;
  for (const GpuReading& r : cycle.gpus) {
    GpuInterval g;
    g.share = r.share;
    g.price = prices_.GpuHourPrice(r.model) * r.share;
    g.util = r.util_known ? std::clamp(r.util_ratio, 0.0, 1.0) : 0;
    g.idle = r.util_known && r.util_ratio <= threshold_;
    if (auto e = gpu_energy_j.find(jobs::UnitGpu(r.index)); e != gpu_energy_j.end())
      g.energy_j = e->second * r.share;
    gpus[r.index] = g;
    node_.capacity_gpu_s += r.share * dt;
    node_.capacity_cost += g.price * hours;
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
      // Shared 1/n among the jobs holding the unit; price and energy are the unit's already.
      const double share = 1.0 / holders[index];
      const double gpus_held = share * g.share;
      team.allocated_gpus += gpus_held;
      team.used_gpus += gpus_held * g.util;
      for (CostTotals* c : {&jc.cost, &team.cost, &part, &pair}) {
        c->allocated_gpu_s += gpus_held * dt;
        c->used_gpu_s += gpus_held * g.util * dt;
        c->allocation_cost += share * g.price * hours;
        c->energy_j += share * g.energy_j;
        c->energy_cost += share * g.energy_j / 3.6e6 * prices_.energy_per_kwh;
        if (g.idle) {
          c->idle_gpu_s += gpus_held * dt;
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

namespace {

using Json = nlohmann::json;

constexpr const char* kFormat = "gpuwarden-usage-checkpoint";

Json CostToJson(const CostTotals& c) {
  return {{"allocated_gpu_s", c.allocated_gpu_s},
          {"used_gpu_s", c.used_gpu_s},
          {"idle_gpu_s", c.idle_gpu_s},
          {"energy_j", c.energy_j},
          {"allocation_cost", c.allocation_cost},
          {"energy_cost", c.energy_cost},
          {"idle_cost", c.idle_cost}};
}

// Readers throw std::runtime_error naming the field; Restore turns that into an Error.
double Number(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number() || !std::isfinite(it->get<double>()))
    throw std::runtime_error(std::string(key) + ": expected a finite number");
  return it->get<double>();
}

std::string Text(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string())
    throw std::runtime_error(std::string(key) + ": expected a string");
  return it->get<std::string>();
}

const Json& Array(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_array())
    throw std::runtime_error(std::string(key) + ": expected an array");
  return *it;
}

CostTotals CostFromJson(const Json& j) {
  if (!j.is_object()) throw std::runtime_error("cost: expected an object");
  CostTotals c;
  c.allocated_gpu_s = Number(j, "allocated_gpu_s");
  c.used_gpu_s = Number(j, "used_gpu_s");
  c.idle_gpu_s = Number(j, "idle_gpu_s");
  c.energy_j = Number(j, "energy_j");
  c.allocation_cost = Number(j, "allocation_cost");
  c.energy_cost = Number(j, "energy_cost");
  c.idle_cost = Number(j, "idle_cost");
  return c;
}

}  // namespace

std::string UsageLedger::Checkpoint() const {
  Json teams = Json::array();
  for (const auto& [name, t] : teams_)
    teams.push_back({{"team", name},
                     {"cost", CostToJson(t.cost)},
                     {"period_start_s", t.period_start_s},
                     {"period_allocated_gpu_h", t.period_allocated_gpu_h},
                     {"period_used_gpu_h", t.period_used_gpu_h}});
  Json partitions = Json::array();
  for (const auto& [name, c] : partitions_)
    partitions.push_back({{"partition", name}, {"cost", CostToJson(c)}});
  Json pairs = Json::array();
  for (const auto& [key, c] : by_team_partition_)
    pairs.push_back({{"team", key.first}, {"partition", key.second}, {"cost", CostToJson(c)}});
  Json jobs = Json::array();
  for (const auto& [id, j] : jobs_)
    jobs.push_back({{"id", id},
                    {"team", j.team},
                    {"partition", j.partition},
                    {"user", j.user},
                    {"start_s", j.start_s},
                    {"last_s", j.last_s},
                    {"cost", CostToJson(j.cost)}});
  Json energy = Json::array();
  for (const auto& [index, j] : last_energy_j_) energy.push_back({{"gpu", index}, {"j", j}});
  Json doc = {{"format", kFormat},
              {"version", 1},
              {"last_s", last_s_},
              {"energy", std::move(energy)},
              {"teams", std::move(teams)},
              {"partitions", std::move(partitions)},
              {"team_partitions", std::move(pairs)},
              {"jobs", std::move(jobs)},
              {"node",
               {{"capacity_gpu_s", node_.capacity_gpu_s},
                {"capacity_cost", node_.capacity_cost},
                {"allocation_cost", node_.allocation_cost},
                {"energy_j", node_.energy_j},
                {"energy_cost", node_.energy_cost}}}};
  return doc.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Status UsageLedger::Restore(std::string_view text) {
  Json doc = Json::parse(text.begin(), text.end(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return Error{"not JSON"};
  if (doc.value("format", "") != kFormat) return Error{std::string("format: expected ") + kFormat};
  if (doc.value("version", 0) != 1)
    return Error{"version: expected 1, got " + doc.value("version", Json()).dump()};
  // Read everything first; the ledger changes only once all of it is valid.
  double last_s = 0;
  std::map<unsigned, double> energy;
  std::map<std::string, TeamUsage> teams;
  std::map<std::string, CostTotals> partitions;
  std::map<std::pair<std::string, std::string>, CostTotals> pairs;
  std::map<std::string, JobCost> jobs;
  NodeCost node;
  try {
    last_s = Number(doc, "last_s");
    for (const Json& e : Array(doc, "energy")) {
      const double gpu = Number(e, "gpu");
      if (gpu < 0 || gpu != std::floor(gpu)) throw std::runtime_error("energy: bad GPU index");
      energy[static_cast<unsigned>(gpu)] = Number(e, "j");
    }
    for (const Json& t : Array(doc, "teams")) {
      TeamUsage u;
      u.team = Text(t, "team");
      u.cost = CostFromJson(t.value("cost", Json()));
      u.period_start_s = Number(t, "period_start_s");
      u.period_allocated_gpu_h = Number(t, "period_allocated_gpu_h");
      u.period_used_gpu_h = Number(t, "period_used_gpu_h");
      teams[u.team] = std::move(u);
    }
    for (const Json& p : Array(doc, "partitions"))
      partitions[Text(p, "partition")] = CostFromJson(p.value("cost", Json()));
    for (const Json& p : Array(doc, "team_partitions"))
      pairs[{Text(p, "team"), Text(p, "partition")}] = CostFromJson(p.value("cost", Json()));
    for (const Json& j : Array(doc, "jobs")) {
      JobCost c;
      c.id = Text(j, "id");
      c.team = Text(j, "team");
      c.partition = Text(j, "partition");
      c.user = Text(j, "user");
      c.start_s = Number(j, "start_s");
      c.last_s = Number(j, "last_s");
      c.cost = CostFromJson(j.value("cost", Json()));
      jobs[c.id] = std::move(c);
    }
    auto n = doc.find("node");
    if (n == doc.end() || !n->is_object()) throw std::runtime_error("node: expected an object");
    node.capacity_gpu_s = Number(*n, "capacity_gpu_s");
    node.capacity_cost = Number(*n, "capacity_cost");
    node.allocation_cost = Number(*n, "allocation_cost");
    node.energy_j = Number(*n, "energy_j");
    node.energy_cost = Number(*n, "energy_cost");
    node.idle_cost = std::max(0.0, node.capacity_cost - node.allocation_cost);
  } catch (const std::exception& e) {
    return Error{e.what()};
  }
  last_s_ = last_s;
  last_energy_j_ = std::move(energy);
  for (auto& [name, restored] : teams) {
    TeamUsage& t = teams_[name];
    t.team = name;
    t.cost = restored.cost;
    t.period_start_s = restored.period_start_s;
    t.period_allocated_gpu_h = restored.period_allocated_gpu_h;
    t.period_used_gpu_h = restored.period_used_gpu_h;
  }
  partitions_ = std::move(partitions);
  by_team_partition_ = std::move(pairs);
  jobs_ = std::move(jobs);
  node_ = node;
  return Status::Ok();
}

std::optional<jobs::JobCostRecord> UsageLedger::JobCostRecordOf(const std::string& job_id) const {
  if (prices_.gpu_hour_by_model.empty() && prices_.default_gpu_hour == 0 &&
      prices_.energy_per_kwh == 0)
    return std::nullopt;  // no prices configured: no cost to record
  const JobCost* found = nullptr;
  if (auto it = jobs_.find(job_id); it != jobs_.end()) found = &it->second;
  for (auto it = ended_.rbegin(); !found && it != ended_.rend(); ++it)
    if (it->id == job_id) found = &*it;
  if (!found) return std::nullopt;
  const CostTotals& c = found->cost;
  jobs::JobCostRecord r;
  r.currency = prices_.currency;
  r.allocated_gpu_hours = c.allocated_gpu_s / 3600;
  r.energy_kwh = c.energy_j / 3.6e6;
  r.allocation_cost = c.allocation_cost;
  r.energy_cost = c.energy_cost;
  r.idle_allocated_cost = c.idle_cost;
  return r;
}

}  // namespace gw::governance
