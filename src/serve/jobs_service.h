// serve/jobs_service.h — the serve command's task layer: who holds each GPU, what the scheduler
// says about jobs, per-job GPU figures on /metrics, job records on disk, and the jobs API.
//
//   JobsService jobs(config, logger);
//   jobs.Start();                          // polls squeue / the kubelet (jobs.scheduler)
//   recorder.SetAfterRecord([&](const Snapshot& s, int64_t) { jobs.OnSnapshot(s); });
//   page.SetExtra([&](Format f, std::string* out) { jobs.RenderMetrics(f, out); });
//   jobs.RecordSeriesInto(&store_appender);              // the same families into the store
//   jobs.RegisterRoutes(server);                         // GET /api/gw/v1/jobs[/<id>], /queue
//   ...
//   jobs.Stop();                                         // also done by the destructor
//
// Each snapshot: the GPUs' readings feed the JobLedger (jobs/job_records.h), which accumulates
// per-job statistics; the scheduler's events taken since the last snapshot (jobs/slurm.h) feed it
// too. Who holds each GPU — the GPU processes NVML reported, attributed through /proc
// (jobs/attribution.h), and the scheduler's allocations — is recomputed only when its inputs
// change: the process lists or a listed pid's process (serve/jobs_mapping.h: nothing is read
// between the collector's slow cycles, one stat read per pid at a slow cycle with unchanged lists),
// or the scheduler's job table (a successful poll). Otherwise the last mapping is reused. When a
// job ends, its record is appended to `jobs.records_dir`/jobs.jsonl (fsync'ed) by OnSnapshot after
// it has released the lock. Time is the snapshot's (simulated time under
// --simulate); Slurm's event times are its own (the wall clock: with a simulated fleet, only the
// realtime clock at speed 1 lines the two up; a stepped clock does not).
//
// The store: with RecordSeriesInto, every family below is also appended to the agent's store at
// each snapshot's time, before the rules evaluate (RunServe calls OnSnapshot, then the rules), so
// deploy/rules/task.yml fires in the agent as in Prometheus. Series references are reused; a job's
// series get stale markers at the snapshot that no longer has it (serve/jobs_series.h).
//
// Job records: loaded from jobs.jsonl once at start and kept in memory — the latest 100,000 that
// ended within storage.retention of the newest — so the API never reads the disk; each record is
// appended to the file and then to memory when its job ends. Older records are on disk only
// (`gpuwarden jobs` without --url reads the whole file). What is guaranteed: the API lists a job as
// finished (with its record) only once the record is written and fsync'ed, so every finished job
// the API has shown survives a crash of the agent or the machine. In between — from the snapshot
// that ends the job until its append returns (one write + fsync on the recorder's thread, the lock
// released) — the API lists the job as RUNNING with its final figures. A crash in that window
// loses the record (as it did when the write was under the lock); a Slurm job that squeue still
// lists as finished after the restart is recorded again, without its GPU figures. A failed write
// keeps the record in memory only (gpuwarden_job_record_errors_total counts it).
//
// Outcomes (jobs/outcome.h, docs/jobs.md "Outcomes"): every snapshot's device readings (XID counts,
// uncorrectable ECC, lost, memory used / usable, per GPU and MIG instance) feed a ring of recent
// device events per unit, in memory. When a job's record is made, its outcome and cause are
// classified from the final state, the reclaim lookup (SetReclaimLookup) and the events of its
// units in its last jobs.outcome_window — no disk or NVML read — and counted in
// gpu_job_outcomes_total{outcome, cause, team, partition}, which starts from the records loaded
// at construction (so it survives restarts as far as the records kept in memory reach).
//
// GPU units: wherever this says GPU, a MIG instance is a unit of its own (jobs/gpu_unit.h): its
// processes and CUDA_VISIBLE_DEVICES tie a job to it (serve/jobs_mapping.h), a scheduler job whose
// processes run on instances of a GPU it was given holds those instances instead of the GPU, and
// per-job figures count it by its share. Its utilization is its GPM graphics activity (SM
// activity where that is absent); without GPM it has none and is never idle.
//
// Metrics (docs/metrics.md, "Task layer"): allocation info per GPU and job (job labels go on job
// series only, never on device series), per running job figures (labels job_id, user, team,
// partition; and pod, namespace for a pod), queue-wait / start-latency / run-time histograms by
// partition, jobs by state, idle allocated GPUs, and the job source's health
// (gpuwarden_<source>_up, ...: slurm or kubernetes).
//
// Kubernetes (jobs.scheduler: kubernetes; docs/kubernetes.md): the source is a
// k8s::KubernetesPoller reading the kubelet's pod-resources socket. A pod holding GPUs is the job
// "namespace/pod"; the kubelet names its devices by id (SlurmJob::devices), which are resolved
// into this node's GPU units against the snapshot: a GPU UUID -> its index, a MIG UUID -> the
// instance's unit, a decimal number -> that index; any other id is counted in
// gpuwarden_kubernetes_unknown_devices and logged once. Resolution runs when the job table moves
// or the GPU/MIG layout of the snapshot does (a hash of indices and UUIDs, computed without
// allocating), never otherwise. A pod holds its GPUs whether or not a process runs on them
// (allocated, utilization 0: idle). GPU processes whose cgroup names a pod UID are matched to
// the same job through k8s::PodAttributionSource, given the poller's index whenever its
// JobsVersion moves (and the mapping recomputed then). For dcgm-exporter mode, PodOfDevice
// answers which pod holds a GPU or MIG UUID from a map rebuilt only when allocations change.
// Nothing read from a process' environment beyond the allow-list of jobs/environ.h reaches metrics,
// the API, the log or the disk.
//
// Threading: OnSnapshot runs on the recorder's thread (one thread: the record writes rely on it);
// RenderMetrics and the API handlers on the HTTP server's threads. One mutex guards the state;
// OnSnapshot holds it for the statistics and, when the inputs changed, the mapping (no disk
// write, no fsync under it; /proc reads only when the mapping is checked or recomputed). Request
// handlers read memory only. Errors (records dir not writable, squeue failing) are logged and
// shown in metrics; the service keeps running.
//
// Allocation: in a steady state (same processes, same jobs, no new squeue poll) OnSnapshot
// allocates nothing, slow-cycle pid checks included (tested without a store attached);
// allocation happens when something changes (docs/benchmarks.md, "Task layer").
#ifndef GPUWARDEN_SERVE_JOBS_SERVICE_H_
#define GPUWARDEN_SERVE_JOBS_SERVICE_H_

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/log.h"
#include "collect/dcgm_exposition.h"
#include "collect/exposition.h"
#include "collect/snapshot.h"
#include "config/config.h"
#include "jobs/attribution.h"
#include "jobs/idle_streak.h"
#include "jobs/job_records.h"
#include "jobs/job_source.h"
#include "jobs/outcome.h"
#include "jobs/slurm.h"
#include "k8s/poller.h"
#include "serve/jobs_mapping.h"
#include "serve/jobs_series.h"
#include "serve/queue_api.h"

namespace gw::http {
class Server;
}

namespace gw::serve {

struct JobsServiceOptions {
  std::string proc_root = "/proc";  // tests point it at a fake tree
  // This machine's name in Slurm's node lists ("" = the host name, short form). Only jobs
  // running on it are attributed, accounted and recorded here.
  std::string node_name;
  // The scheduler to use instead of the one jobs.scheduler names (tests: a fake source, or a
  // k8s::KubernetesPoller over a fake PodResourcesApi). Unset: SlurmPoller for slurm,
  // KubernetesPoller over the gRPC client for kubernetes, none for none.
  std::function<std::unique_ptr<jobs::JobSource>(const config::Config&, Logger*)> job_source;
};

// The utilization ratio of a MIG instance for the task and platform layers: NVML reads none per
// instance, so its GPM graphics-engine activity stands in (SM activity where that is absent);
// kAbsent without GPM.
double MigUtilization(const collect::MigInstanceSnapshot& instance);

// The records directory a configuration names (jobs.records_dir, else STORAGE_PATH/jobs).
std::string JobRecordsDir(const config::Config& config);

// Which jobs GET /api/gw/v1/jobs and `gpuwarden jobs` list.
struct JobsQuery {
  bool running_only = false;
  double since_s = 0;  // > 0: finished jobs that ended within this long before now (running kept)
  std::string team;    // "" = every team
};

class JobsService {
 public:
  // `logger` must outlive this object. Opens (creates) the records directory; if that fails, the
  // error is logged and jobs are tracked without records.
  JobsService(const config::Config& config, Logger* logger, JobsServiceOptions options = {});
  ~JobsService();
  JobsService(const JobsService&) = delete;
  JobsService& operator=(const JobsService&) = delete;

  // Starts the job source's thread (jobs.scheduler slurm or kubernetes; first poll right away).
  void Start();
  void Stop();

  // One recorded snapshot (the recorder's thread, after it is stored).
  void OnSnapshot(const collect::Snapshot& snapshot);

  // Appends the task-layer families (docs/metrics.md "Task layer") in `format`.
  void RenderMetrics(collect::Format format, std::string* out) const;

  // From now on, OnSnapshot also appends those families to `appender` at the snapshot's time and
  // commits (stale markers for series that went away). `appender` must outlive this object and
  // OnSnapshot must run on its writer thread. Call before the first OnSnapshot.
  void RecordSeriesInto(tsdb::Appender* appender);

  // Where a finished job's final cost comes from (GovernanceService::FinalJobCost), asked on
  // OnSnapshot's thread (and, for running jobs' cost so far, on the API's) with this service's
  // lock held — so `lookup` must not call back into this service. Before the first OnSnapshot;
  // unset, records carry no cost.
  void SetJobCostLookup(jobs::JobLedger::CostLookup lookup);
  // Training throughput (serve/training_service.h): fills JobRecord::throughput of finished
  // records (final) and of running ones in the API (so far). Asked with this service's lock held,
  // so `lookup` must not call back into this service. Before the first OnSnapshot.
  using ThroughputLookup =
      std::function<std::optional<jobs::JobThroughputRecord>(const jobs::JobRecord&)>;
  void SetJobThroughputLookup(ThroughputLookup lookup);

  // Whether our reclaim policy acted on a job (GovernanceService::ReclaimOf), asked when the job
  // ends, like the cost lookup (this service's lock held; `lookup` must not call back into it).
  // A job it acted on that ended other than COMPLETED is `reclaimed` (jobs/outcome.h). Before the
  // first OnSnapshot; unset, no job is reclaimed.
  using ReclaimLookup = std::function<std::optional<jobs::ReclaimNote>(const std::string& job_id)>;
  void SetReclaimLookup(ReclaimLookup lookup);

  // GET /api/gw/v1/jobs (?running=1, ?since=DURATION, ?team=T), GET /api/gw/v1/jobs/<id>, and
  // GET /api/gw/v1/queue (?team=T; serve/queue_api.h).
  void RegisterRoutes(http::Server* server);

  // The API's documents: {"status":"success","data":{"jobs":[...]}} and one job's
  // {"status":"success","data":{...}}; nullopt for an unknown id. Records use the field names of
  // jobs.jsonl (jobs/job_records.h); running jobs have state "RUNNING" and end_time 0.
  std::string JobsJson(const JobsQuery& query) const;
  std::optional<std::string> JobJson(const std::string& job_id) const;
  // The queue document of serve/queue_api.h (the last poll's pending jobs; no Slurm call).
  std::string QueueJson(const std::string& team) const;

  // Read-only views for the platform layer (serve/governance_service.h), as of the last snapshot.
  struct HeldGpus {
    std::string job_id;  // as a person knows it (process jobs: the GPUWARDEN_JOB name)
    std::string source, name, user, account, team, partition;
    std::string pod_namespace, pod_name;  // a Kubernetes pod (source "kubernetes")
    std::vector<unsigned> gpus;  // this node's GPU units (jobs/gpu_unit.h): indices, MIG ids
    // The port of the job's own /metrics on 127.0.0.1 that one of its processes declares with
    // GPUWARDEN_METRICS_PORT (1-65535; the lowest when they differ), 0 when none does. Never for
    // a Kubernetes pod (its loopback is its own). serve/training_service.h scrapes it.
    int metrics_port = 0;
  };
  std::vector<HeldGpus> AllocatedJobs() const;
  // The scheduler's jobs as last polled (empty without a scheduler).
  std::map<std::string, jobs::SlurmJob> SlurmJobs() const;
  // Moves with every successful poll, never otherwise (0 without a scheduler): a reader that saw
  // this version need not copy SlurmJobs() again (JobSource::JobsVersion).
  std::uint64_t SlurmJobsVersion() const;
  // "slurm", "kubernetes", or "" without a scheduler.
  std::string SchedulerName() const { return poller_ ? poller_->Name() : std::string(); }

  // dcgm-exporter mode (collect::DcgmOptions::pod_of): the pod holding the GPU or MIG instance
  // with `uuid`, from the last allocation change. Any thread; allocation-free: the views stay
  // valid until this thread's next call.
  bool PodOfDevice(std::string_view uuid, collect::DcgmPodLabels* out) const;

 private:
  struct JobMeta {
    std::string source;  // "slurm", "kubernetes" or "process"
    std::string name, user, account, team, partition;
    std::string pod_namespace, pod_name;  // a Kubernetes pod
    double start_s = 0;
  };
  struct Histogram {
    std::string name, bucket_name, sum_name, count_name;
    std::vector<double> bounds;
    std::vector<std::string> le;  // bound texts as OpenMetrics wants them ("1.0"), then "+Inf"
    std::map<std::string, std::vector<std::uint64_t>> counts;  // by partition, per bound + Inf
    std::map<std::string, double> sums;
    void Init(std::string family, std::vector<double> bucket_bounds);
    void Observe(const std::string& partition, double v);
  };

  void Observe(const collect::Snapshot& snapshot);  // mu_ held
  // Scheduler events into the ledger; true when there were any, or when the job table changed
  // (then slurm_allocations_ and the Slurm jobs' meta_ were rebuilt).
  bool TakeSchedulerEvents(double now_s);
  // meta_[id] from a scheduler's job.
  void NoteMeta(const std::string& id, const jobs::SlurmJob& job);
  // From the process mapping (just recomputed): process_allocations_, meta_, the ledger.
  void Attribute(double now_s);
  // Appends finished jobs' records to the store; mu_ NOT held (takes it at the end).
  void WriteRecords(const std::vector<jobs::JobRecord>& records);
  void TrackIdle(const collect::Snapshot& snapshot, double now_s);
  // Keeps gpu_ids_ (and the ledger's MIG descriptions) up to date for one unit; builds nothing
  // when it is unchanged.
  void NoteUnit(unsigned unit, const collect::GpuSnapshot& gpu,
                const collect::MigInstanceSnapshot* mig);
  // allocations_: whole GPUs of scheduler jobs whose processes run on MIG instances -> those.
  void NarrowToMigUnits();
  void NoteEndedJobs(double now_s);
  // A finished job's outcome from its record, the device events of its GPUs and our reclaim
  // decision (mu_ held; jobs/outcome.h).
  std::optional<jobs::JobOutcomeRecord> ClassifyRecord(const jobs::JobRecord& record) const;
  // The devices' readings of a snapshot into device_events_ (mu_ held).
  void NoteDeviceEvents(const collect::Snapshot& snapshot);
  std::vector<jobs::JobRecord> RunningRecords() const;  // mu_ held
  double NowS() const;                                  // mu_ held
  // Hands every task-layer family to `sink` (jobs_metrics.cpp); mu_ held. Allocates nothing
  // per sample, so the store's steady state does not either.
  void EmitFamilies(TaskFamilySink* sink, double now_s, const jobs::SlurmHealth* health,
                    const k8s::KubernetesStatus* kubernetes) const;
  void EmitSourceHealth(TaskFamilySink* sink, const jobs::SlurmHealth& health,
                        const k8s::KubernetesStatus* kubernetes) const;
  // Kubernetes: the device -> unit table when the snapshot's GPU/MIG layout changed (true then).
  bool NoteLayout(const collect::Snapshot& snapshot);
  // device_units_' entry for a kubelet device id (a time-sliced replica: its GPU's), or end().
  std::map<std::string, unsigned, std::less<>>::const_iterator FindDeviceUnit(
      std::string_view id) const;
  // A Kubernetes job's devices as this node's units (unknown ids into `unknown`, if given).
  std::vector<unsigned> ResolveDevices(const jobs::SlurmJob& job,
                                       std::vector<const jobs::SlurmJob::Device*>* unknown) const;
  // slurm_allocations_, containers_ and the unknown ids from kubernetes_jobs_ (mu_ held).
  void ResolveKubernetesJobs();
  // After a layout change: the ledger's statistics for pods whose devices resolved only now (a
  // MIG instance that appeared after its pod). Pods the ledger has already are left as they are.
  void StartResolvedPods();
  // device_pods_ from allocations_ (after they changed).
  void RebuildDevicePods();
  template <typename JobLabels>  // jobs_metrics.cpp only
  void EmitPerJob(TaskFamilySink* sink, double now_s, const JobLabels& job_labels) const;
  void EmitHistogram(TaskFamilySink* sink, const Histogram& h, std::string_view help) const;
  // The job id a person knows: the ledger keys process jobs "process:<GPUWARDEN_JOB>".
  static std::string_view VisibleJobId(std::string_view key);

  config::Config config_;
  Logger* log_;
  std::unique_ptr<jobs::JobRecordStore> store_;
  std::unique_ptr<jobs::JobSource> poller_;
  bool pod_source_ = false;                      // poller_ is Kubernetes (its jobs are pods)
  k8s::KubernetesPoller* kubernetes_ = nullptr;  // poller_, when it is the KubernetesPoller
  k8s::PodAttributionSource* pods_ = nullptr;    // owned by mapping_; with kubernetes_
  // The source's self-metric names and helps (gpuwarden_<name>_up, ...), built once.
  struct SourceFamilies {
    std::string up, last_success, staleness, polls, failures;
    std::string up_help, last_success_help, staleness_help, polls_help, failures_help;
  };
  SourceFamilies source_families_;
  jobs::TeamMap teams_;
  std::unique_ptr<QueueApi> queue_api_;  // the pending jobs of the poller's last poll

  mutable std::mutex mu_;
  ProcessJobMapping mapping_;
  jobs::CycleInput cycle_;           // Observe's scratch (its capacity is kept)
  std::uint64_t slurm_version_ = 0;  // the poller's JobsVersion last walked
  std::unique_ptr<jobs::JobLedger> ledger_;
  jobs::JobLedger::CostLookup cost_lookup_;  // running jobs' cost so far (API)
  ThroughputLookup throughput_lookup_;       // training throughput (finished and running)
  double last_snapshot_s_ = 0;
  // Running jobs as the ledger keys them ("process:<name>" for process jobs) and who they are.
  std::map<std::string, JobMeta> meta_;
  std::vector<jobs::JobGpuStats> running_;  // the ledger's view after the last snapshot
  std::set<std::string> latency_seen_;      // jobs whose start latency was observed
  // gpu index -> (ledger key of each job holding it): the union of the two below, rebuilt when
  // either changes.
  std::map<unsigned, std::set<std::string>> allocations_;
  std::map<unsigned, std::set<std::string>> slurm_allocations_;    // from the job table
  std::map<unsigned, std::set<std::string>> process_allocations_;  // from the process mapping
  std::map<std::string, int> metrics_ports_;  // job key -> GPUWARDEN_METRICS_PORT (same source)
  // Finished jobs' records taken from the ledger, being written by OnSnapshot outside mu_.
  std::vector<jobs::JobRecord> writing_;
  // Label texts per unit (jobs/gpu_unit.h): gpu, uuid (the GPU's), and for a MIG instance its
  // mig_instance, mig_profile, MIG UUID and share of the GPU.
  struct UnitLabels {
    std::string gpu, uuid, mig_instance, mig_profile, mig_uuid;
    double share = 1;
  };
  std::map<unsigned, UnitLabels> gpu_ids_;
  jobs::IdleStreaks idle_;  // allocated GPUs idle since (jobs.idle_threshold)
  std::map<unsigned, double> memory_used_ratio_;
  std::map<std::string, double> jobs_by_state_;
  Histogram queue_wait_, submit_wait_, start_latency_, run_time_;
  std::uint64_t record_errors_ = 0;
  // Outcomes (jobs/outcome.h): recent device events per GPU unit, our reclaim decisions, and
  // gpu_job_outcomes_total by (outcome, cause, team, partition) — counted from the records loaded
  // at start, then from each record written.
  jobs::DeviceEventLog device_events_;
  ReclaimLookup reclaim_lookup_;
  std::map<std::array<std::string, 4>, double> outcomes_total_;
  // Kubernetes: the layout hash the device table was built for, the table (GPU UUID, MIG UUID and
  // index text -> unit), the running pods as last polled, each unit's container per job, and the
  // device ids that match nothing here (logged once each: unknown_logged_).
  std::size_t layout_hash_ = 0;
  std::map<std::string, unsigned, std::less<>> device_units_;
  std::map<std::string, jobs::SlurmJob> kubernetes_jobs_;
  std::map<unsigned, std::map<std::string, std::string>> containers_;
  std::set<std::string> unknown_devices_, unknown_logged_;
  // dcgm-exporter mode: GPU or MIG UUID -> the pod holding it; replaced (never changed) under
  // device_pods_mu_ when allocations change, read by PodOfDevice.
  struct DevicePod {
    std::string pod, pod_namespace, container;
  };
  using DevicePods = std::map<std::string, DevicePod, std::less<>>;
  mutable std::mutex device_pods_mu_;
  std::shared_ptr<const DevicePods> device_pods_;
  std::string node_name_;
  std::unique_ptr<TaskSeriesRecorder> series_;  // the store (RecordSeriesInto); OnSnapshot's thread
};

}  // namespace gw::serve

#endif  // GPUWARDEN_SERVE_JOBS_SERVICE_H_
