#include "serve/governance_service.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <tuple>

#include "serve/state_file.h"

#include "http/prom_api.h"
#include "http/server.h"
#include "jobs/slurm.h"

namespace gw::serve {

namespace {

using governance::Decision;

struct Family {
  const char* name;
  const char* type;
  const char* unit;
  const char* help;
};

// Every family this service exports, in the order of docs/metrics.md's "Governance" section.
const Family kFamilies[] = {
    {"gpu_allocated_gpu_seconds_total", "counter", "",
     "GPU-seconds allocated to jobs on this node, by team and partition."},
    {"gpu_idle_allocated_gpu_seconds_total", "counter", "",
     "Allocated GPU-seconds at or below jobs.idle_threshold, by team and partition."},
    {"gpu_idle_allocated_ratio", "gauge", "ratio",
     "Idle allocated GPU-seconds / allocated GPU-seconds (kept across restarts)."},
    {"gpu_team_idle_gpus", "gauge", "", "Allocated GPUs idle now, by team, partition and memory."},
    {"gpu_reclaim_actions_total", "counter", "",
     "Reclaim decisions: notices, actions, exemptions, withdrawals (reason, action)."},
    {"gpu_reclaim_failures_total", "counter", "", "Reclaim commands that failed, by action."},
    {"gpu_reclaim_noticed_jobs", "gauge", "", "Jobs noticed as idle and in their grace period."},
    {"gpu_pool_capacity_gpus", "gauge", "", "GPUs in the partition."},
    {"gpu_pool_allocated_gpus", "gauge", "", "GPUs held by the partition's running jobs."},
    {"gpu_pool_free_gpus", "gauge", "", "Capacity minus allocated GPUs."},
    {"gpu_pool_pending_gpus", "gauge", "", "GPUs requested by the partition's pending jobs."},
    {"gpu_pool_pending_jobs", "gauge", "", "Pending jobs that request GPUs."},
    {"gpu_pool_congestion_ratio", "gauge", "ratio",
     "(allocated + pending GPUs) / capacity: above 1 jobs queue for want of GPUs."},
    {"gpu_pool_queue_wait_seconds", "gauge", "seconds",
     "Queue wait (start - eligible) quantiles of jobs that started within the window."},
    {"gpu_pool_recommendation_gpus", "gauge", "",
     "GPUs to add (direction scale_out) or remove (shrink); 0 = no recommendation."},
    {"gpuwarden_pool_capacity_up", "gauge", "",
     "1 if the last governance.capacity_command succeeded."},
    {"gpu_team_quota_gpus", "gauge", "", "The team's quota of GPUs held at once."},
    {"gpu_team_quota_gpu_hours", "gauge", "", "The team's quota of GPU-hours per period."},
    {"gpu_team_allocated_gpus", "gauge", "", "GPUs the team's jobs hold now on this node."},
    {"gpu_team_used_gpus", "gauge", "", "The team's allocated GPUs weighted by utilization."},
    {"gpu_team_period_gpu_hours", "gauge", "",
     "GPU-hours in the quota's current period (kind allocated or used)."},
    {"gpu_team_quota_deviation_ratio", "gauge", "ratio",
     "(allocated or used - quota) / quota (basis label)."},
    {"gpu_team_over_quota", "gauge", "", "1 while the team is above its quota."},
    {"gpu_team_under_use", "gauge", "",
     "1 while the team's use has stayed below governance.under_use_ratio of its quota for "
     "governance.under_use_for."},
    {"gpu_team_efficiency_ratio", "gauge", "ratio",
     "Used / allocated GPU-hours, kept across restarts (OpenCost's efficiency)."},
    {"gpu_cost_allocation_total", "counter", "",
     "Allocated GPU-hours x the GPU's price, by team and partition (currency units)."},
    {"gpu_cost_energy_total", "counter", "",
     "Energy of the allocated GPUs x the energy price, by team and partition."},
    {"gpu_cost_idle_allocated_total", "counter", "",
     "Allocation cost of GPU-time spent idle, by team and partition."},
    {"gpu_cost_capacity_total", "counter", "", "Every GPU of this node x its price."},
    {"gpu_cost_idle_total", "counter", "",
     "Capacity cost - allocation cost: GPUs nobody held (OpenCost's idle)."},
    {"gpu_idle_cost_ratio", "gauge", "ratio", "Idle cost / capacity cost (kept across restarts)."},
    {"gpu_job_cost_total", "counter", "", "A running job's allocation + energy cost so far."},
    {"gpu_cost_info", "gauge", "", "1, with the currency of every gpu_cost_* figure."},
    {"gpuwarden_reclaim_log_errors_total", "counter", "",
     "Reclaim decisions that could not be appended to the decisions log."},
};

double WallNowS() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void Header(std::string* out, collect::Format format, const Family& f) {
  std::string family = f.name;
  const bool counter = std::string_view(f.type) == "counter";
  if (counter && format == collect::Format::kOpenMetrics) family.resize(family.size() - 6);
  *out += "# HELP " + family + " " + f.help + "\n# TYPE " + family + " " + f.type + "\n";
  const std::string unit = f.unit;
  if (format == collect::Format::kOpenMetrics && !unit.empty() && family.size() > unit.size() &&
      family.compare(family.size() - unit.size(), unit.size(), unit) == 0)
    *out += "# UNIT " + family + " " + unit + "\n";
}

// 3600 -> "1h", 86400 -> "1d", 90 -> "90s": the `window` label.
std::string WindowLabel(double seconds) {
  const long long s = std::llround(seconds);
  if (s > 0 && s % 86400 == 0) return std::to_string(s / 86400) + "d";
  if (s > 0 && s % 3600 == 0) return std::to_string(s / 3600) + "h";
  if (s > 0 && s % 60 == 0) return std::to_string(s / 60) + "m";
  return std::to_string(s) + "s";
}

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

std::string DecisionsLogPath(const config::Config& config) {
  return config.governance.decisions_log.empty()
             ? config.storage.path + "/governance/decisions.jsonl"
             : config.governance.decisions_log;
}

std::string UsageCheckpointPath(const config::Config& config) {
  return config.storage.path + "/governance/usage.json";
}

namespace {

governance::Settings SettingsOf(const config::Config& config) {
  governance::Settings s = config.governance.settings;
  s.idle_threshold = config.jobs.idle_threshold;
  return s;
}

}  // namespace

GovernanceService::GovernanceService(const config::Config& config, const JobsService* jobs,
                                     collect::SampleAppender* appender, Logger* logger)
    : config_(config),
      jobs_(jobs),
      appender_(appender),
      log_(logger),
      slurm_(config.jobs.scheduler == "slurm"),
      decisions_path_(DecisionsLogPath(config)),
      idle_(config.jobs.idle_threshold),
      reclaim_(SettingsOf(config).reclaim,
               governance::ReclaimCommands{config.governance.requeue_command,
                                           config.governance.cancel_command}),
      usage_(config.governance.settings.quotas, config.governance.settings.prices,
             config.jobs.idle_threshold),
      pools_(config.governance.settings.pool),
      checkpoint_path_(UsageCheckpointPath(config)) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(decisions_path_).parent_path(), ec);
  LoadCheckpoint();
  for (const governance::ReclaimPolicy& p : reclaim_.policies())
    log_->Info(std::string("governance: reclaim policy ") + p.Describe() + ": idle " +
               governance::FormatSeconds(p.idle_for_s) + " (" + MemoryFilterName(p.memory) +
               " memory) -> notice, grace " + governance::FormatSeconds(p.grace_s) + " -> " +
               ReclaimActionName(p.action));
}

GovernanceService::~GovernanceService() {
  Stop();
}

void GovernanceService::Start() {
  std::lock_guard<std::mutex> lock(queue_mu_);
  if (worker_.joinable()) return;
  stopping_ = false;
  worker_ = std::thread([this] { Loop(); });
}

void GovernanceService::Stop() {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
  WriteCheckpoint();
}

void GovernanceService::LoadCheckpoint() {
  const std::optional<std::string> text = ReadStateFile(checkpoint_path_);
  if (!text) return;  // the first start
  const nlohmann::json doc = nlohmann::json::parse(*text, nullptr, false);
  Status s;
  if (doc.is_discarded() || !doc.is_object() ||
      doc.value("format", "") != "gpuwarden-governance-state" || !doc.contains("usage")) {
    s = Error{"not a gpuwarden governance state file"};
  } else {
    s = usage_.Restore(doc["usage"].dump());
  }
  if (!s.ok()) {
    SetAsideStateFile(checkpoint_path_, "governance", s.message(),
                      "cost, quota and reclaim figures start from zero", log_);
    return;
  }
  for (const nlohmann::json& a : doc.value("reclaim_actions", nlohmann::json::array()))
    if (a.is_object() && a.value("n", nlohmann::json()).is_number())
      actions_[{a.value("reason", ""), a.value("action", "")}] = a["n"].get<double>();
  for (const nlohmann::json& f : doc.value("reclaim_failures", nlohmann::json::array()))
    if (f.is_object() && f.value("n", nlohmann::json()).is_number())
      failures_[f.value("action", "")] = f["n"].get<double>();
  if (auto pools = doc.find("pools"); pools != doc.end()) {
    if (Status p = pools_.Restore(pools->dump()); !p.ok())
      log_->Error("governance: " + checkpoint_path_ + ": pools: " + p.message() +
                  "; the queue-wait windows start empty");
  }
  log_->Info("governance: continuing the cost, quota, reclaim and queue-wait figures of " +
             checkpoint_path_);
}

void GovernanceService::WriteCheckpoint() {
  std::lock_guard<std::mutex> writing(checkpoint_mu_);
  std::string text;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (last_now_s_ <= 0) return;  // nothing observed: keep what is there
    nlohmann::json actions = nlohmann::json::array(), failures = nlohmann::json::array();
    for (const auto& [key, n] : actions_)
      actions.push_back({{"reason", key.first}, {"action", key.second}, {"n", n}});
    for (const auto& [action, n] : failures_) failures.push_back({{"action", action}, {"n", n}});
    nlohmann::json doc = {{"format", "gpuwarden-governance-state"},
                          {"version", 1},
                          {"usage", nlohmann::json::parse(usage_.Checkpoint())},
                          {"reclaim_actions", std::move(actions)},
                          {"reclaim_failures", std::move(failures)}};
    if (slurm_) doc["pools"] = nlohmann::json::parse(pools_.Checkpoint());
    text = doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    checkpoint_s_ = last_now_s_;
  }
  WriteStateFile(checkpoint_path_, text, "governance", &checkpoint_failed_, log_);
}

void GovernanceService::Loop() {
  const bool poll = slurm_ && !config_.governance.capacity_command.empty();
  auto next_poll = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(queue_mu_);
  while (!stopping_) {
    if (!queue_.empty()) {
      governance::ReclaimCommand command = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      auto ran = jobs::RunCommandCapture(command.argv, command.env,
                                         config_.governance.command_timeout_s, 1 << 20);
      const std::string error = ran.ok() ? "" : ran.error().message;
      {
        std::lock_guard<std::mutex> state(mu_);
        const double now = last_now_s_ > 0 ? last_now_s_ : WallNowS();
        Decision d = reclaim_.Completed(command, error, now);
        if (!error.empty()) failures_[command.is_notice ? "notify" : d.action] += 1;
        Record(d);
      }
      WriteDecisions();
      lock.lock();
      continue;
    }
    if (poll && std::chrono::steady_clock::now() >= next_poll) {
      lock.unlock();
      PollCapacity();
      lock.lock();
      next_poll = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(config_.jobs.poll_interval_s));
      continue;
    }
    if (poll)
      wake_.wait_until(lock, next_poll);
    else
      wake_.wait(lock);
  }
}

void GovernanceService::PollCapacity() {
  const double timeout = std::min(10.0, std::max(1.0, config_.jobs.poll_interval_s));
  auto text = jobs::RunCommandCapture(config_.governance.capacity_command, {}, timeout, 4 << 20);
  std::lock_guard<std::mutex> lock(mu_);
  if (text.ok()) {
    pools_.SetCapacity(governance::ParsePartitionCapacity(*text));
    capacity_known_ = capacity_up_ = true;
    capacity_error_.clear();
    return;
  }
  capacity_up_ = false;
  if (capacity_error_ != text.error().message) {
    capacity_error_ = text.error().message;
    log_->Error("governance: reading the partitions' capacity: " + capacity_error_ +
                " (set governance.pools.capacity to configure it)");
  }
}

void GovernanceService::Record(const Decision& d) {
  const std::string line = governance::DecisionToJson(d);
  // Counted once per decision; "done" and "failed" are outcomes of a counted action.
  if (d.stage != "done" && d.stage != "failed") actions_[{d.reason, d.action}] += 1;
  if (d.stage == "failed" && d.action != "notify" &&
      d.detail.find("not a Slurm job") != std::string::npos)
    failures_[d.action] += 1;
  recent_.push_back(line);
  while (recent_.size() > 1000) recent_.pop_front();
  const std::string message = "governance: reclaim " + d.stage + ": " + d.detail + " [policy " +
                              d.policy + ", idle " + governance::FormatSeconds(d.idle_s) + "]";
  if (d.stage == "failed")
    log_->Error(message);
  else
    log_->Info(message);
  unwritten_.push_back(line);
}

void GovernanceService::WriteDecisions() {
  std::vector<std::string> lines;
  {
    std::lock_guard<std::mutex> lock(mu_);
    lines.swap(unwritten_);
  }
  if (lines.empty()) return;
  std::lock_guard<std::mutex> file(file_mu_);  // the recorder thread and the worker both write
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  const int fd = ::open(decisions_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  bool ok = fd >= 0;
  if (ok) {
    ok = ::write(fd, out.data(), out.size()) == static_cast<ssize_t>(out.size());
    ok = ::fsync(fd) == 0 && ok;
    ::close(fd);
  }
  if (!ok) {
    log_->Error("governance: cannot append to " + decisions_path_ + "; " +
                std::to_string(lines.size()) + " decision(s) are in the log only");
    std::lock_guard<std::mutex> lock(mu_);
    decision_log_errors_ += lines.size();
  }
}

void GovernanceService::OnSnapshot(const collect::Snapshot& snapshot, int64_t t_ms) {
  using collect::Slot;
  governance::Cycle cycle;
  cycle.now_s = snapshot.taken_unix_seconds;
  for (const collect::GpuSnapshot& gpu : snapshot.gpus) {
    governance::GpuReading r;
    r.index = gpu.identity.index;
    r.uuid = gpu.identity.uuid;
    r.model = gpu.identity.name;
    const double util = gpu.value(Slot::kUtilization);
    r.util_known = !collect::IsAbsent(util);
    r.util_ratio = r.util_known ? util : 0;
    const double used = gpu.value(Slot::kMemoryUsed), total = gpu.value(Slot::kMemoryTotal);
    r.memory_used_bytes = collect::IsAbsent(used) ? 0 : used;
    r.memory_held = config_.governance.settings.MemoryHeld(
        !gpu.processes.empty(), r.memory_used_bytes, collect::IsAbsent(total) ? 0 : total);
    if (const double e = gpu.value(Slot::kEnergy); !collect::IsAbsent(e)) r.energy_j = e;
    const double p = gpu.value(Slot::kPower);
    r.power_w = collect::IsAbsent(p) ? 0 : p;
    cycle.gpus.push_back(std::move(r));
  }
  // The Slurm job table: copied only when a poll has changed it (it may hold a whole cluster's
  // queue; snapshots come every second, polls every few).
  if (slurm_) {
    const std::uint64_t version = jobs_->SlurmJobsVersion();
    if (version == 0 || version != slurm_version_) {
      slurm_jobs_ = jobs_->SlurmJobs();
      slurm_version_ = version;
    }
  }
  const std::map<std::string, jobs::SlurmJob>& slurm_jobs = slurm_jobs_;
  for (JobsService::HeldGpus& h : jobs_->AllocatedJobs()) {
    governance::RunningJob j;
    j.id = h.job_id;
    j.source = h.source;
    j.name = h.name;
    j.user = h.user;
    j.account = h.account;
    j.partition = h.partition;
    j.team = h.team;
    j.gpus = std::move(h.gpus);
    if (auto it = slurm_jobs.find(j.id); it != slurm_jobs.end() && j.source == "slurm") {
      j.qos = it->second.qos;
      j.comment = it->second.comment;
      if (j.name.empty()) j.name = it->second.name;
    }
    cycle.jobs.push_back(std::move(j));
  }

  std::vector<governance::ReclaimCommand> commands;
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_now_s_ = cycle.now_s;
    idle_.Observe(cycle);
    std::vector<Decision> decisions;
    commands = reclaim_.Evaluate(cycle, idle_, &decisions);
    for (const Decision& d : decisions) Record(d);
    usage_.Observe(cycle);
    if (slurm_) pools_.Observe(slurm_jobs, cycle.now_s, slurm_version_);
    BuildFigures(cycle);
  }
  WriteDecisions();
  bool checkpoint_due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    checkpoint_due = checkpoint_s_ <= 0 || cycle.now_s - checkpoint_s_ >= 60 ||
                     cycle.now_s < checkpoint_s_;  // a clock stepped back
  }
  if (checkpoint_due) WriteCheckpoint();
  if (!commands.empty()) {
    {
      std::lock_guard<std::mutex> lock(queue_mu_);
      for (governance::ReclaimCommand& c : commands) queue_.push_back(std::move(c));
    }
    wake_.notify_all();
  }
  AppendToStore(t_ms);
}

void GovernanceService::BuildFigures(const governance::Cycle& cycle) {
  figures_.clear();
  auto add = [this](const char* family, std::initializer_list<tsdb::Label> labels, double v) {
    Figure f;
    f.family = family;
    f.labels.push_back({"__name__", family});
    for (const tsdb::Label& l : labels) f.labels.push_back(l);
    std::sort(f.labels.begin(), f.labels.end());
    f.value = v;
    figures_.push_back(std::move(f));
  };
  // Idle allocation, by team and partition.
  for (const auto& [key, t] : idle_.by_team_partition()) {
    const tsdb::Label team{"team", key.first}, partition{"partition", key.second};
    add("gpu_allocated_gpu_seconds_total", {team, partition}, t.allocated_gpu_s);
    add("gpu_idle_allocated_gpu_seconds_total", {team, partition}, t.idle_gpu_s);
    add("gpu_idle_allocated_ratio", {team, partition}, t.Ratio());
  }
  // Idle now: per (team, partition, memory), from the jobs' GPUs (a shared GPU counts once).
  {
    std::map<std::tuple<std::string, std::string, std::string>, double> idle_now;
    std::set<unsigned> counted;
    for (const auto& [key, t] : idle_.by_team_partition()) {
      idle_now[{key.first, key.second, "held"}] += 0;
      idle_now[{key.first, key.second, "free"}] += 0;
    }
    for (const governance::RunningJob& h : cycle.jobs) {
      for (unsigned g : h.gpus) {
        auto it = idle_.gpus().find(g);
        if (it == idle_.gpus().end() || !it->second.idle || !counted.insert(g).second) continue;
        idle_now[{h.team, h.partition, it->second.memory_held ? "held" : "free"}] += 1;
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
  std::map<std::pair<std::string, std::string>, double> actions = actions_;
  if (!reclaim_.policies().empty()) {
    for (const char* reason : {"idle_memory_held", "idle_memory_free"}) {
      actions.emplace(std::make_pair(std::string(reason), std::string("notify")), 0.0);
      for (const governance::ReclaimPolicy& p : reclaim_.policies())
        actions.emplace(
            std::make_pair(std::string(reason), std::string(ReclaimActionName(p.action))), 0.0);
    }
  }
  for (const auto& [key, n] : actions)
    add("gpu_reclaim_actions_total", {{"reason", key.first}, {"action", key.second}}, n);
  std::map<std::string, double> failures = failures_;
  if (!reclaim_.policies().empty()) failures.emplace("notify", 0.0);  // notify_command failures
  for (const governance::ReclaimPolicy& p : reclaim_.policies())
    if (p.action != governance::ReclaimAction::kDryRun)
      failures.emplace(ReclaimActionName(p.action), 0.0);
  for (const auto& [action, n] : failures)
    add("gpu_reclaim_failures_total", {{"action", action}}, n);
  add("gpu_reclaim_noticed_jobs", {}, double(reclaim_.noticed()));
  // Pools.
  for (const auto& [name, p] : pools_.pools()) {
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
  if (slurm_ && !config_.governance.capacity_command.empty())
    add("gpuwarden_pool_capacity_up", {}, capacity_up_ ? 1 : 0);
  // Quotas and per-team figures.
  for (const auto& [name, t] : usage_.teams()) {
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
  for (const auto& [key, c] : usage_.by_team_partition()) {
    const tsdb::Label team{"team", key.first}, partition{"partition", key.second};
    add("gpu_cost_allocation_total", {team, partition}, c.allocation_cost);
    add("gpu_cost_energy_total", {team, partition}, c.energy_cost);
    add("gpu_cost_idle_allocated_total", {team, partition}, c.idle_cost);
  }
  const governance::NodeCost& node = usage_.node();
  add("gpu_cost_capacity_total", {}, node.capacity_cost);
  add("gpu_cost_idle_total", {}, node.idle_cost);
  add("gpu_idle_cost_ratio", {}, node.IdleRatio());
  for (const auto& [id, j] : usage_.jobs())
    add("gpu_job_cost_total",
        {{"job_id", j.id}, {"user", j.user}, {"team", j.team}, {"partition", j.partition}},
        j.cost.Total());
  add("gpu_cost_info", {{"currency", usage_.prices().currency}}, 1);
  add("gpuwarden_reclaim_log_errors_total", {}, double(decision_log_errors_));
}

void GovernanceService::AppendToStore(int64_t t_ms) {
  if (!appender_) return;
  if (!series_) series_ = std::make_unique<TaskSeriesRecorder>(appender_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    series_->BeginCycle(t_ms);
    for (const Figure& f : figures_) {
      labels_.clear();
      for (const tsdb::Label& l : f.labels)
        if (l.name != "__name__") labels_.push_back({l.name, l.value});
      series_->Sample(f.family, labels_, f.value);
    }
    series_->EndCycle();  // series no longer present (a job ended) get a stale marker
  }
  (void)series_->Commit();  // the WAL write, outside the lock /metrics waits on
  if (series_->stats().errors > store_errors_seen_) {
    store_errors_seen_ = series_->stats().errors;
    log_->Warn("governance: some figures could not be appended to the store");
  }
}

void GovernanceService::RenderMetrics(collect::Format format, std::string* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Family& f : kFamilies) {
    bool any = false;
    for (const Figure& fig : figures_) {
      if (std::string_view(fig.family) != f.name) continue;
      if (!any) Header(out, format, f);
      any = true;
      *out += f.name;
      bool first = true;
      for (const tsdb::Label& l : fig.labels) {
        if (l.name == "__name__") continue;
        *out += first ? '{' : ',';
        first = false;
        *out += l.name + "=\"";
        collect::AppendEscapedLabelValue(out, l.value);
        *out += '"';
      }
      if (!first) *out += '}';
      *out += ' ';
      collect::AppendValue(out, fig.value);
      *out += '\n';
    }
  }
}

std::string GovernanceService::TeamsJson() const {
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json teams = nlohmann::json::array();
  for (const auto& [name, t] : usage_.teams()) {
    nlohmann::json quota = nullptr;
    if (t.has_quota)
      quota = {{"gpus", t.quota.gpus},
               {"gpu_hours", t.quota.gpu_hours},
               {"period_s", t.quota.period_s},
               {"period_start", t.period_start_s},
               {"period_allocated_gpu_hours", t.period_allocated_gpu_h},
               {"period_used_gpu_hours", t.period_used_gpu_h},
               {"deviation_allocated", t.deviation_allocated},
               {"deviation_used", t.deviation_used},
               {"over_quota", t.over_quota},
               {"under_use", t.under_use},
               {"under_use_for_s", t.under_use_for_s}};
    auto idle = idle_.by_team().find(name);
    teams.push_back({{"team", name},
                     {"allocated_gpus", t.allocated_gpus},
                     {"used_gpus", t.used_gpus},
                     {"quota", quota},
                     {"idle_ratio", idle == idle_.by_team().end() ? 0 : idle->second.Ratio()},
                     {"cost", CostJson(t.cost)}});
  }
  nlohmann::json partitions = nlohmann::json::array();
  for (const auto& [name, c] : usage_.partitions()) {
    nlohmann::json entry = {{"partition", name}, {"cost", CostJson(c)}};
    if (auto p = pools_.pools().find(name); p != pools_.pools().end()) {
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
  for (const auto& [name, p] : pools_.pools()) {
    if (usage_.partitions().count(name)) continue;
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
  for (const auto& [id, j] : usage_.jobs()) jobs.push_back(job_json(j, true));
  for (auto it = usage_.ended_jobs().rbegin(); it != usage_.ended_jobs().rend(); ++it)
    jobs.push_back(job_json(*it, false));
  const governance::NodeCost& node = usage_.node();
  nlohmann::json data = {{"currency", usage_.prices().currency},
                         {"idle_threshold", idle_.threshold()},
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

std::string GovernanceService::ReclaimJson(std::size_t limit) const {
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json policies = nlohmann::json::array();
  for (const governance::ReclaimPolicy& p : reclaim_.policies())
    policies.push_back({{"policy", p.Describe()},
                        {"idle_for_s", p.idle_for_s},
                        {"grace_s", p.grace_s},
                        {"memory", MemoryFilterName(p.memory)},
                        {"action", ReclaimActionName(p.action)}});
  nlohmann::json decisions = nlohmann::json::array();
  for (auto it = recent_.rbegin(); it != recent_.rend() && decisions.size() < limit; ++it)
    decisions.push_back(nlohmann::json::parse(*it));
  nlohmann::json idle = nlohmann::json::array();
  for (const auto& [gpu, g] : idle_.gpus())
    if (g.idle)
      idle.push_back({{"gpu", gpu},
                      {"uuid", g.uuid},
                      {"idle_s", idle_.StreakS(gpu, last_now_s_)},
                      {"memory_held", g.memory_held}});
  nlohmann::json data = {{"policies", policies},
                         {"noticed_jobs", reclaim_.noticed()},
                         {"idle_gpus", idle},
                         {"decisions_log", decisions_path_},
                         {"decisions", decisions}};
  return nlohmann::json{{"status", "success"}, {"data", data}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<jobs::JobCostRecord> GovernanceService::FinalJobCost(
    const std::string& job_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  const governance::PriceSettings& prices = usage_.prices();
  if (prices.gpu_hour_by_model.empty() && prices.default_gpu_hour == 0 &&
      prices.energy_per_kwh == 0)
    return std::nullopt;  // no prices configured: no cost to record
  const governance::JobCost* found = nullptr;
  if (auto it = usage_.jobs().find(job_id); it != usage_.jobs().end()) found = &it->second;
  for (auto it = usage_.ended_jobs().rbegin(); !found && it != usage_.ended_jobs().rend(); ++it)
    if (it->id == job_id) found = &*it;
  if (!found) return std::nullopt;
  const governance::CostTotals& c = found->cost;
  jobs::JobCostRecord r;
  r.currency = usage_.prices().currency;
  r.allocated_gpu_hours = c.allocated_gpu_s / 3600;
  r.energy_kwh = c.energy_j / 3.6e6;
  r.allocation_cost = c.allocation_cost;
  r.energy_cost = c.energy_cost;
  r.idle_allocated_cost = c.idle_cost;
  return r;
}

void GovernanceService::RegisterRoutes(http::Server* server) {
  server->Get("/api/gw/v1/teams", [this](const http::Request&, http::Response& res) {
    res.body = TeamsJson();
    res.content_type = "application/json";
  });
  server->Get("/api/gw/v1/reclaim", [this](const http::Request& req, http::Response& res) {
    std::size_t limit = 100;
    if (const std::string l = req.param("limit"); !l.empty()) {
      char* end = nullptr;
      const long long v = std::strtoll(l.c_str(), &end, 10);
      if (end == l.c_str() || *end != '\0' || v <= 0 || v > 1000)
        return http::WriteApiError(res, 400, "bad_data", "limit: expected 1-1000, got '" + l + "'");
      limit = static_cast<std::size_t>(v);
    }
    res.body = ReclaimJson(limit);
    res.content_type = "application/json";
  });
}

}  // namespace gw::serve
