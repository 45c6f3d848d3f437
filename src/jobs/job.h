// jobs/job.h — a scheduler's job as the task layer keeps it (Slurm's, or a Kubernetes pod's),
// its lifecycle events and the health of the poller that reads them. Values; the parsers that
// fill them are jobs/slurm.h (squeue --json) and k8s/ (the kubelet's pod-resources API).
#ifndef GPUWARDEN_JOBS_JOB_H_
#define GPUWARDEN_JOBS_JOB_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gw::jobs {

enum class JobState {
  kPending,
  kRunning,
  kSuspended,
  kCompleting,
  kCompleted,
  kFailed,
  kCancelled,
  kTimeout,
  kNodeFail,
  kPreempted,
  kOutOfMemory,
  kBootFail,
  kDeadline,
  kOther,
};
std::string_view JobStateName(JobState state);  // "RUNNING", "COMPLETED", ...
JobState ParseJobState(std::string_view text);
bool IsFinished(JobState state);  // every state after which the job holds nothing

// How GPUs were requested: `--gres=gpu:N`, `--gpus-per-node=N` (both show as tres_per_node),
// `--gpus=N` (tres_per_job).
struct GpuRequest {
  unsigned per_node = 0;  // from tres_per_node "gres:gpu:N" / "gres/gpu:N" / "gres:gpu:type:N"
  unsigned per_job = 0;   // from tres_per_job "gres:gpu:N" / "gres/gpu=N"
  unsigned total = 0;     // from tres_req_str / tres_alloc_str "gres/gpu=N" (0 if absent)
};

// A scheduler's job: Slurm's, or a Kubernetes pod holding GPUs (jobs/job_source.h; the fields
// from `source` down are the Kubernetes source's, k8s/poller.h).
struct SlurmJob {
  std::string id;  // job id as text ("1234"; array tasks keep their own id; a pod: "ns/pod")
  std::string name;
  JobState state = JobState::kOther;
  std::string state_text;  // as Slurm wrote it
  std::string state_reason;
  std::string user;
  std::string account;
  std::string partition;
  std::string nodes;
  std::int64_t submit_time = 0;  // epoch seconds; 0 = unknown / not yet
  std::int64_t eligible_time = 0;
  std::int64_t accrue_time = 0;
  std::int64_t start_time = 0;
  std::int64_t end_time = 0;  // projected while running; real once finished
  // The exit status (0-255; killed by a signal: 128 + its number, as the shell says it), decoded
  // from 22.05's raw wait status.
  std::optional<int> exit_code;
  std::vector<unsigned> gpu_indices;  // from gres_detail, per node concatenated
  GpuRequest gpus;
  std::string tres_alloc;
  std::string qos;      // "qos" (governance exemptions)
  std::string comment;  // "comment" (--comment; governance exemption tags)
  // "priority": the scheduler's order among pending jobs (higher first).
  std::int64_t priority = 0;

  // Which scheduler: "slurm" or "kubernetes".
  std::string source = "slurm";
  // Kubernetes: the pod (account = pod_namespace, name = pod_name; uid only from a pod list).
  std::string pod_namespace, pod_name, pod_uid;
  // Devices the scheduler handed the job by id, as the kubelet names them: GPU UUIDs ("GPU-…"),
  // MIG UUIDs ("MIG-…"), or NVML indices as text. The serve layer resolves them into
  // gpu_indices' units (jobs/gpu_unit.h) against the snapshot; Slurm leaves this empty.
  struct Device {
    std::string id;
    std::string resource;   // "nvidia.com/gpu", "nvidia.com/mig-3g.40gb"
    std::string container;  // the container it was given to
    bool operator==(const Device&) const = default;
  };
  std::vector<Device> devices;

  // GPUs the job asks for: the TRES total, else --gpus, else per node (pending jobs' demand).
  unsigned RequestedGpus() const;

  // start_time set and the job really ran (not pending, not cancelled while pending, not rejected).
  bool started() const;
  // start − eligible (seconds) once started; nullopt before or when never started.
  std::optional<std::int64_t> QueueWaitS() const;
};

enum class JobEventKind { kSubmitted, kEligible, kStarted, kFinished, kVanished };
std::string_view JobEventKindName(JobEventKind kind);

struct JobEvent {
  JobEventKind kind = JobEventKind::kSubmitted;
  std::string job_id;
  std::int64_t time = 0;                // Slurm's timestamp (poll time for kVanished)
  JobState state = JobState::kPending;  // the job's state with this event (kFinished: final)
  SlurmJob job;                         // the job as last seen
};

struct SlurmHealth {
  bool ever_succeeded = false;
  bool up = false;            // the last poll succeeded
  double last_success_s = 0;  // caller's clock (seconds) of the last successful poll
  double last_attempt_s = 0;
  double first_attempt_s = 0;
  std::uint64_t failures_total = 0;
  std::uint64_t polls_total = 0;
  std::string last_error;
  std::uint64_t successes_total() const { return polls_total - failures_total; }
  // Seconds since the last successful poll, at `now_s` (0 when up; since the first attempt if never
  // up).
  double StalenessS(double now_s) const;
  // One poll at `now_s` that succeeded / failed with `error` (a poller's table calls one of them
  // per poll).
  void NoteSuccess(double now_s) {
    if (polls_total == 0) first_attempt_s = now_s;
    ever_succeeded = up = true;
    last_success_s = last_attempt_s = now_s;
    last_error.clear();
    ++polls_total;
  }
  void NoteFailure(const std::string& error, double now_s) {
    if (polls_total == 0) first_attempt_s = now_s;
    up = false;
    last_attempt_s = now_s;
    last_error = error;
    ++failures_total;
    ++polls_total;
  }
};

}  // namespace gw::jobs

#endif  // GPUWARDEN_JOBS_JOB_H_
