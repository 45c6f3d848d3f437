#include "governance/reclaim.h"

#include "jobs/gpu_unit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

namespace gw::governance {

void IdleTracker::Observe(const Cycle& cycle) {
  const double now = cycle.now_s;
  double dt = last_s_ > 0 ? now - last_s_ : 0;
  if (!(dt > 0) || dt > max_gap_s_) dt = 0;
  last_s_ = now;

  std::map<unsigned, unsigned> holders;
  for (const RunningJob& job : cycle.jobs)
    for (unsigned g : job.gpus) ++holders[g];

  // A GPU this cycle did not read loses its streak.
  std::set<unsigned> read;
  for (const GpuReading& r : cycle.gpus) read.insert(r.index);
  streaks_.Retain([&read](unsigned index) { return read.count(index) > 0; });
  std::map<unsigned, GpuIdle> next;
  for (const GpuReading& r : cycle.gpus) {
    GpuIdle g;
    g.uuid = r.uuid;
    g.share = r.share;
    g.mig_profile = r.mig_profile;
    g.allocated = holders.count(r.index) > 0;
    g.util_ratio = r.util_ratio;
    g.memory_held = r.memory_held;
    g.idle = streaks_.Observe(r.index, g.allocated, r.util_known, r.util_ratio, now);
    if (g.idle) g.idle_since_s = *streaks_.Since(r.index);
    next[r.index] = g;
  }
  gpus_ = std::move(next);

  std::set<std::string> live;
  for (const RunningJob& job : cycle.jobs) {
    live.insert(job.id);
    IdleTotals& j = by_job_[job.id];
    for (unsigned g : job.gpus) {
      auto it = gpus_.find(g);
      if (it == gpus_.end()) continue;  // not one of this node's GPUs (or not read)
      const double share = dt * it->second.share / holders[g];
      const double idle = it->second.idle ? share : 0;
      for (IdleTotals* t : {&j, &by_team_[job.team], &by_partition_[job.partition],
                            &by_team_partition_[{job.team, job.partition}]}) {
        t->allocated_gpu_s += share;
        t->idle_gpu_s += idle;
      }
    }
  }
  for (auto it = by_job_.begin(); it != by_job_.end();)
    it = live.count(it->first) ? std::next(it) : by_job_.erase(it);
}

double IdleTracker::StreakS(unsigned index, double now_s) const {
  auto it = gpus_.find(index);
  if (it == gpus_.end() || !it->second.idle) return 0;
  return std::max(0.0, now_s - it->second.idle_since_s);
}

namespace {

// The decision's evidence: the thresholds, and per GPU unit its utilization, memory state and
// since when it has been idle.
nlohmann::json EvidenceOf(const Decision& d) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const GpuEvidence& g : d.gpus) {
    gpus.push_back({{"gpu", g.gpu},
                    {"uuid", g.uuid},
                    {"util_ratio", g.util_ratio},
                    {"memory_held", g.memory_held},
                    {"idle_s", g.idle_s},
                    {"idle_since", d.time_s - g.idle_s}});
    if (g.mig_instance) {
      gpus.back()["mig_instance"] = *g.mig_instance;
      gpus.back()["mig_profile"] = g.mig_profile;
      gpus.back()["share"] = g.share;
    }
  }
  return {{"idle_s", d.idle_s},          {"idle_threshold", d.idle_threshold},
          {"idle_for_s", d.idle_for_s},  {"grace_s", d.grace_s},
          {"noticed_time", d.noticed_s}, {"gpus", std::move(gpus)}};
}

}  // namespace

std::string DecisionEvidenceJson(const Decision& d) {
  return EvidenceOf(d).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string DecisionToJson(const Decision& d) {
  nlohmann::json j = {
      {"time", d.time_s},         {"job_id", d.job_id},       {"job_name", d.job_name},
      {"user", d.user},           {"account", d.account},     {"qos", d.qos},
      {"partition", d.partition}, {"team", d.team},           {"policy", d.policy},
      {"stage", d.stage},         {"action", d.action},       {"reason", d.reason},
      {"detail", d.detail},       {"evidence", EvidenceOf(d)}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string ExemptionOf(const Exemptions& e, const RunningJob& job) {
  auto listed = [](const std::vector<std::string>& list, const std::string& v) {
    return !v.empty() && std::find(list.begin(), list.end(), v) != list.end();
  };
  if (listed(e.users, job.user)) return "exempt_user";
  if (listed(e.accounts, job.account)) return "exempt_account";
  if (listed(e.qos, job.qos)) return "exempt_qos";
  for (const std::string& pattern : e.names)
    if (GlobMatch(pattern, job.name)) return "exempt_name";
  if (!e.comment_tag.empty() && job.comment.find(e.comment_tag) != std::string::npos)
    return "exempt_comment";
  return "";
}

ReclaimEngine::ReclaimEngine(std::vector<ReclaimPolicy> policies, ReclaimCommands commands)
    : policies_(std::move(policies)), commands_(std::move(commands)) {}

const ReclaimPolicy* ReclaimEngine::PolicyFor(const RunningJob& job) const {
  for (const ReclaimPolicy& p : policies_) {
    if (!p.partition.empty() && p.partition != job.partition) continue;
    if (!p.team.empty() && p.team != job.team) continue;
    return &p;
  }
  return nullptr;
}

std::size_t ReclaimEngine::noticed() const {
  std::size_t n = 0;
  for (const auto& [id, s] : jobs_)
    if (s.stage == JobStage::kNoticed) ++n;
  return n;
}

namespace {

Decision Base(const RunningJob& job, const ReclaimPolicy& p, double threshold, double now_s) {
  Decision d;
  d.time_s = now_s;
  d.job_id = job.id;
  d.job_name = job.name;
  d.user = job.user;
  d.account = job.account;
  d.qos = job.qos;
  d.partition = job.partition;
  d.team = job.team;
  d.policy = p.Describe();
  d.idle_threshold = threshold;
  d.idle_for_s = p.idle_for_s;
  d.grace_s = p.grace_s;
  return d;
}

// "2 idle GPU(s)", or with MIG instances their share: "0.43 GPU (3g.40gb) idle".
std::string HeldText(const std::vector<GpuEvidence>& gpus) {
  double share = 0;
  bool mig = false;
  std::string profile;
  for (const GpuEvidence& g : gpus) {
    share += g.share;
    if (!g.mig_instance) continue;
    profile = mig && profile != g.mig_profile ? "MIG" : g.mig_profile;
    mig = true;
  }
  if (!mig) return std::to_string(gpus.size()) + " idle GPU(s)";
  return jobs::ShareText(share, profile) + " idle";
}

std::vector<std::string> CommandEnv(const Decision& d, const RunningJob& job, const char* stage) {
  std::string gpus;
  for (unsigned g : job.gpus) gpus += (gpus.empty() ? "" : ",") + jobs::UnitText(g);
  char idle[32];
  std::snprintf(idle, sizeof idle, "%.0f", d.idle_s);
  return {"GPUWARDEN_JOB_ID=" + job.id,
          "GPUWARDEN_JOB_NAME=" + job.name,
          "GPUWARDEN_JOB_USER=" + job.user,
          "GPUWARDEN_JOB_ACCOUNT=" + job.account,
          "GPUWARDEN_JOB_QOS=" + job.qos,
          "GPUWARDEN_JOB_PARTITION=" + job.partition,
          "GPUWARDEN_JOB_TEAM=" + job.team,
          "GPUWARDEN_JOB_GPUS=" + gpus,
          std::string("GPUWARDEN_IDLE_SECONDS=") + idle,
          std::string("GPUWARDEN_RECLAIM_STAGE=") + stage,
          "GPUWARDEN_RECLAIM_ACTION=" + d.action,
          "GPUWARDEN_RECLAIM_REASON=" + d.reason,
          "GPUWARDEN_RECLAIM_POLICY=" + d.policy,
          "GPUWARDEN_JOB_SOURCE=" + job.source,
          "GPUWARDEN_POD_NAMESPACE=" + job.pod_namespace,
          "GPUWARDEN_POD_NAME=" + job.pod_name,
          "GPUWARDEN_RECLAIM_EVIDENCE=" + DecisionEvidenceJson(d)};
}

}  // namespace

std::vector<ReclaimCommand> ReclaimEngine::Evaluate(const Cycle& cycle, const IdleTracker& idle,
                                                    std::vector<Decision>* decisions) {
  std::vector<ReclaimCommand> commands;
  const double now = cycle.now_s;
  std::set<std::string> live;
  for (const RunningJob& job : cycle.jobs) {
    live.insert(job.id);
    const ReclaimPolicy* policy = PolicyFor(job);
    if (!policy) continue;  // no policy opted in: never touched
    JobState& state = jobs_[job.id];
    if (state.stage == JobStage::kExempt || state.stage == JobStage::kActing ||
        state.stage == JobStage::kDone || state.stage == JobStage::kFailed)
      continue;
    Decision d = Base(job, *policy, idle.threshold(), now);
    if (std::string why = ExemptionOf(policy->exempt, job); !why.empty()) {
      state.stage = JobStage::kExempt;
      d.stage = "exempt";
      d.action = "none";
      d.reason = why;
      d.detail = "job " + job.id + " is exempt from reclaim (" + why.substr(7) + ")";
      decisions->push_back(std::move(d));
      continue;
    }
    // The job's idle streak: all of its GPUs idle, the shortest streak; memory as the filter says.
    bool all_idle = !job.gpus.empty(), any_held = false;
    double streak = job.gpus.empty() ? 0 : 1e300;
    for (unsigned g : job.gpus) {
      auto it = idle.gpus().find(g);
      GpuEvidence e;
      e.gpu = jobs::UnitGpu(g);
      if (jobs::IsMigUnit(g)) e.mig_instance = jobs::UnitMigInstance(g);
      if (it != idle.gpus().end()) {
        e.uuid = it->second.uuid;
        e.share = it->second.share;
        e.mig_profile = it->second.mig_profile;
        e.util_ratio = it->second.util_ratio;
        e.memory_held = it->second.memory_held;
        e.idle_s = idle.StreakS(g, now);
        all_idle = all_idle && it->second.idle;
      } else {
        all_idle = false;
      }
      any_held = any_held || e.memory_held;
      streak = std::min(streak, e.idle_s);
      d.gpus.push_back(e);
    }
    if (!all_idle) streak = 0;
    const bool passes = policy->memory == MemoryFilter::kAny ||
                        (policy->memory == MemoryFilter::kHeld && any_held) ||
                        (policy->memory == MemoryFilter::kFree && !any_held);
    d.idle_s = streak;
    d.noticed_s = state.noticed_s;
    d.reason = any_held ? "idle_memory_held" : "idle_memory_free";
    if (streak <= 0 || !passes) {
      if (state.stage == JobStage::kNoticed) {
        d.stage = "withdrawn";
        d.action = "none";
        d.reason = "active_again";
        d.detail = "job " + job.id + " is no longer idle; the notice is withdrawn";
        decisions->push_back(std::move(d));
      }
      state = JobState{};
      continue;
    }
    if (state.stage == JobStage::kWatching && streak >= policy->idle_for_s) {
      state.stage = JobStage::kNoticed;
      state.noticed_s = now;
      d.noticed_s = now;
      d.stage = "notice";
      d.action = "notify";
      d.detail = "job " + job.id + " has held " + HeldText(d.gpus) + " for " +
                 FormatSeconds(streak) + "; " + ReclaimActionName(policy->action) +
                 " after a grace period of " + FormatSeconds(policy->grace_s) +
                 " unless it becomes active";
      if (!policy->notify_command.empty())
        commands.push_back({d, policy->notify_command, CommandEnv(d, job, "notice"), true});
      decisions->push_back(std::move(d));
      continue;
    }
    if (state.stage != JobStage::kNoticed || now - state.noticed_s < policy->grace_s) continue;
    // The grace period is over and the job is still idle.
    d.stage = "action";
    d.action = ReclaimActionName(policy->action);
    std::vector<std::string> argv;
    switch (policy->action) {
      case ReclaimAction::kDryRun:
        break;
      case ReclaimAction::kRequeue:
        argv = commands_.requeue;
        argv.push_back(job.id);
        break;
      case ReclaimAction::kCancel:
        argv = commands_.cancel;
        argv.push_back(job.id);
        break;
      case ReclaimAction::kCommand:
        argv = policy->command;
        break;
    }
    const bool slurm_action =
        policy->action == ReclaimAction::kRequeue || policy->action == ReclaimAction::kCancel;
    if (policy->action == ReclaimAction::kDryRun) {
      state.stage = JobStage::kDone;
      d.detail =
          "dry-run: job " + job.id + " is still idle after its grace period; no action taken";
    } else if (slurm_action && job.source != "slurm") {
      state.stage = JobStage::kFailed;
      d.stage = "failed";
      d.detail = std::string("cannot ") + ReclaimActionName(policy->action) + " job " + job.id +
                 ": " + ReclaimActionName(policy->action) + " is for Slurm jobs only (" +
                 (policy->action == ReclaimAction::kRequeue ? "scontrol requeue" : "scancel") +
                 ") and this is " +
                 (job.source == "kubernetes" ? std::string("a Kubernetes pod")
                                             : "a " + job.source + " job") +
                 "; use action: command" +
                 (job.source == "kubernetes"
                      ? " (deploy/kubernetes/reclaim-hook.sh deletes the pod) or dry-run"
                      : " or dry-run");
    } else {
      state.stage = JobStage::kActing;
      d.detail = "job " + job.id +
                 " is still idle after its grace period: " + ReclaimActionName(policy->action);
      commands.push_back({d, std::move(argv), CommandEnv(d, job, "action"), false});
    }
    decisions->push_back(std::move(d));
  }
  for (auto it = jobs_.begin(); it != jobs_.end();)
    it = live.count(it->first) ? std::next(it) : jobs_.erase(it);
  return commands;
}

Decision ReclaimEngine::Completed(const ReclaimCommand& command, const std::string& error,
                                  double now_s) {
  Decision d = command.decision;
  d.time_s = now_s;
  d.stage = error.empty() ? "done" : "failed";
  const std::string what = command.is_notice ? "notify command" : d.action;
  d.detail = error.empty() ? what + " for job " + d.job_id + " succeeded"
                           : what + " for job " + d.job_id + " failed: " + error;
  if (!command.is_notice) {
    auto it = jobs_.find(d.job_id);
    if (it != jobs_.end()) it->second.stage = error.empty() ? JobStage::kDone : JobStage::kFailed;
  }
  return d;
}

std::string FormatSeconds(double seconds) {
  char buf[32];
  if (seconds >= 3600 && std::fmod(seconds, 3600) < 1)
    std::snprintf(buf, sizeof buf, "%.0fh", seconds / 3600);
  else if (seconds >= 60 && std::fmod(seconds, 60) < 1)
    std::snprintf(buf, sizeof buf, "%.0fm", seconds / 60);
  else
    std::snprintf(buf, sizeof buf, "%.0fs", seconds);
  return buf;
}

}  // namespace gw::governance
