// governance/reclaim.h — idle-but-allocated GPUs and the reclaim policy loop.
//
//   IdleTracker idle(settings.idle_threshold);
//   ReclaimEngine reclaim(settings.reclaim, settings.idle_threshold);
//   each cycle:  idle.Observe(cycle);
//                for (ReclaimCommand& c : reclaim.Evaluate(cycle, idle, &decisions)) run c.argv
//                ... later, on the runner's thread's result: reclaim.Completed(c, error, now_s)
//
// GPU units: every "GPU" here is a unit of governance/cycle.h — a whole GPU or a MIG instance —
// and GPU-seconds count a MIG instance by its share of the GPU.
//
// Idle: an allocated GPU is idle in a cycle when its utilization is at or below the threshold (no
// reading = not idle). Its streak starts at the first idle cycle and resets on any activity
// (jobs::IdleStreaks, jobs/idle_streak.h: the task layer's rule too); a GPU a cycle did not read
// loses its streak. A job
// is idle when all of its GPUs are; its streak is the shortest of theirs. Idle ratio = GPU-seconds
// in idle cycles / allocated GPU-seconds (each interval between two cycles is charged to the state
// at its end; intervals over 120 s — an agent stall — are not charged).
//
// Reclaim, per job, under the first policy matching its partition/team (none: never touched):
//   exempt (user, account, QOS, name glob, comment tag)  -> one "exempt" decision, nothing else
//   idle streak >= idle_for (GPUs passing the memory filter) -> "notice" (+ notify_command)
//   still idle grace_s after the notice                    -> "action": dry-run (decided, logged,
//                                                             nothing run) or a command to run:
//                                                             requeue / cancel / the hook
//   active again before the action                         -> "withdrawn"; a later idle streak
//                                                             starts over
// A command's result comes back through Completed: "done" or "failed" (with the error). A failed
// action is reported and never retried for that job; a job that acted on stays "done" until it
// leaves the node. Every decision carries its evidence (each GPU's utilization, memory state and
// idle-since time; the thresholds).
//
// Threading: none; one owner (the governance service's recorder-thread callback).
#ifndef GPUWARDEN_GOVERNANCE_RECLAIM_H_
#define GPUWARDEN_GOVERNANCE_RECLAIM_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "governance/cycle.h"
#include "governance/settings.h"
#include "jobs/idle_streak.h"

namespace gw::governance {

struct GpuIdle {
  std::string uuid;
  double share = 1;         // of a GPU (GpuReading::share)
  std::string mig_profile;  // "" for a whole GPU
  bool allocated = false;
  bool idle = false;
  double idle_since_s = 0;  // valid when idle
  double util_ratio = 0;
  bool memory_held = false;
};

// Allocated and idle GPU-seconds of one group (a team, a partition, a job).
struct IdleTotals {
  double allocated_gpu_s = 0;
  double idle_gpu_s = 0;
  double Ratio() const { return allocated_gpu_s > 0 ? idle_gpu_s / allocated_gpu_s : 0; }
};

class IdleTracker {
 public:
  explicit IdleTracker(double idle_threshold, double max_gap_s = 120)
      : streaks_(idle_threshold), max_gap_s_(max_gap_s) {}

  void Observe(const Cycle& cycle);

  double threshold() const { return streaks_.threshold(); }
  // Per GPU unit id, as of the last cycle.
  const std::map<unsigned, GpuIdle>& gpus() const { return gpus_; }
  // Seconds GPU `index` has been idle at `now_s`; 0 when active or not allocated.
  double StreakS(unsigned index, double now_s) const;
  // Totals since the tracker started, keyed by team, by partition, and by (team, partition).
  const std::map<std::string, IdleTotals>& by_team() const { return by_team_; }
  const std::map<std::string, IdleTotals>& by_partition() const { return by_partition_; }
  const std::map<std::pair<std::string, std::string>, IdleTotals>& by_team_partition() const {
    return by_team_partition_;
  }
  // Running jobs' totals (jobs that left are dropped).
  const std::map<std::string, IdleTotals>& by_job() const { return by_job_; }

 private:
  jobs::IdleStreaks streaks_;
  double max_gap_s_;
  double last_s_ = 0;
  std::map<unsigned, GpuIdle> gpus_;
  std::map<std::string, IdleTotals> by_team_, by_partition_, by_job_;
  std::map<std::pair<std::string, std::string>, IdleTotals> by_team_partition_;
};

struct GpuEvidence {
  unsigned gpu = 0;                      // the GPU's index
  std::optional<unsigned> mig_instance;  // set for a MIG instance (then uuid is the MIG UUID)
  std::string mig_profile;
  double share = 1;  // of the GPU
  std::string uuid;
  double util_ratio = 0;
  bool memory_held = false;
  double idle_s = 0;
};

// One decision of the reclaim loop, as logged (decisions.jsonl) and served (/api/gw/v1/reclaim).
struct Decision {
  double time_s = 0;
  std::string job_id, job_name, user, account, qos, partition, team;
  std::string policy;  // ReclaimPolicy::Describe()
  std::string stage;   // notice | action | withdrawn | exempt | done | failed
  std::string action;  // notify | dry-run | requeue | cancel | command | none
  std::string reason;  // idle_memory_held | idle_memory_free | active_again | exempt_<what>
  std::string detail;  // a sentence for people (and the command's error on failure)
  double idle_s = 0;   // the job's idle streak at the decision
  double idle_threshold = 0, idle_for_s = 0, grace_s = 0;
  double noticed_s = 0;  // when the notice was given (0: none)
  std::vector<GpuEvidence> gpus;
};

std::string DecisionToJson(const Decision& decision);  // one line, no newline
// The decision's "evidence" object alone (thresholds; per GPU unit uuid, util_ratio, memory_held,
// idle_s, idle_since), one line: GPUWARDEN_RECLAIM_EVIDENCE of the commands.
std::string DecisionEvidenceJson(const Decision& decision);

// A command the caller must run (off the recorder thread) and report back with Completed. Its
// environment: GPUWARDEN_JOB_ID, _NAME, _USER, _ACCOUNT, _QOS, _PARTITION, _TEAM, _GPUS,
// GPUWARDEN_IDLE_SECONDS, GPUWARDEN_RECLAIM_STAGE, _ACTION, _REASON, _POLICY, GPUWARDEN_JOB_SOURCE
// ("slurm", "kubernetes", "process"), GPUWARDEN_POD_NAMESPACE and GPUWARDEN_POD_NAME (a pod's;
// empty otherwise) and GPUWARDEN_RECLAIM_EVIDENCE (DecisionEvidenceJson).
struct ReclaimCommand {
  Decision decision;              // the decision that asked for it
  std::vector<std::string> argv;  // no shell
  std::vector<std::string> env;   // "GPUWARDEN_JOB_ID=…" etc. added to the child's environment
  bool is_notice = false;         // a notify_command (its failure does not stop the policy)
};

struct ReclaimCommands {
  std::vector<std::string> requeue = {"scontrol", "requeue"};  // + job id
  std::vector<std::string> cancel = {"scancel"};               // + job id
};

class ReclaimEngine {
 public:
  ReclaimEngine(std::vector<ReclaimPolicy> policies, ReclaimCommands commands = {});

  // Decides for every running job of the cycle; appends the decisions to *decisions and returns
  // the commands to run. Jobs no longer running are forgotten.
  std::vector<ReclaimCommand> Evaluate(const Cycle& cycle, const IdleTracker& idle,
                                       std::vector<Decision>* decisions);
  // A command's outcome (`error` empty = success) at `now_s`: the "done" or "failed" decision.
  Decision Completed(const ReclaimCommand& command, const std::string& error, double now_s);

  // Jobs noticed and waiting out their grace period.
  std::size_t noticed() const;
  const std::vector<ReclaimPolicy>& policies() const { return policies_; }

 private:
  enum class JobStage { kWatching, kNoticed, kActing, kDone, kFailed, kExempt };
  struct JobState {
    JobStage stage = JobStage::kWatching;
    double noticed_s = 0;
  };
  const ReclaimPolicy* PolicyFor(const RunningJob& job) const;

  std::vector<ReclaimPolicy> policies_;
  ReclaimCommands commands_;
  std::map<std::string, JobState> jobs_;
};

// Why a job is exempt ("exempt_user", "exempt_account", "exempt_qos", "exempt_name",
// "exempt_comment"), or "" when it is not.
std::string ExemptionOf(const Exemptions& exempt, const RunningJob& job);

// 90 -> "90s", 1800 -> "30m", 7200 -> "2h" (for decision texts).
std::string FormatSeconds(double seconds);

}  // namespace gw::governance

#endif  // GPUWARDEN_GOVERNANCE_RECLAIM_H_
