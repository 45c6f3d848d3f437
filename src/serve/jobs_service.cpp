#include "serve/jobs_service.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <tuple>

#include "base/clock.h"
#include "http/prom_api.h"
#include "http/server.h"
#include "jobs/gpu_unit.h"
#include "jobs/slurm_hostlist.h"
#include "k8s/attribution_source.h"
#include "k8s/grpc_module.h"

namespace gw::serve {

namespace {

constexpr std::string_view kProcessPrefix = "process:";
// Job records kept in memory for the API (and storage.retention; jobs/job_records.h).
constexpr std::size_t kRecordsInMemory = 100000;

// Bucket bounds (seconds). Queue waits run from seconds to days; start latency is a model load;
// run times from minutes to a week.
const std::vector<double> kQueueWaitBounds = {1,   5,    10,   30,   60,    120,   300,
                                              600, 1800, 3600, 7200, 14400, 28800, 86400};
const std::vector<double> kStartLatencyBounds = {0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800};
const std::vector<double> kRunTimeBounds = {60,    300,   900,   1800,   3600,  7200,
                                            14400, 43200, 86400, 172800, 604800};

double WallNowS() {
  return SystemClock().NowSeconds();
}

// The job source jobs.scheduler names (none: null).
std::unique_ptr<jobs::JobSource> MakeJobSource(const config::Config& config,
                                               const std::string& node_name, Logger* logger) {
  if (config.jobs.scheduler == "slurm") {
    jobs::SlurmPollerOptions o;
    o.command = config.jobs.squeue_command;
    o.interval_s = config.jobs.poll_interval_s;
    o.timeout_s = std::min(10.0, std::max(1.0, config.jobs.poll_interval_s));
    return std::make_unique<jobs::SlurmPoller>(o, logger);
  }
  if (config.jobs.scheduler == "kubernetes") {
    const config::KubernetesConfig& k = config.jobs.kubernetes;
    k8s::KubernetesPollerOptions o;
    o.table.resources = k.resources;
    o.table.node_name = node_name;
    o.table.user_label = k.user_label;
    o.table.user_annotation = k.user_annotation;
    o.interval_s = k.poll_interval_s > 0 ? k.poll_interval_s : config.jobs.poll_interval_s;
    o.timeout_s = k.timeout_s;
    o.pod_list_command = k.pod_list_command;
    // The gRPC client is a module (k8s/grpc_module.h): without it the source stays down
    // (gpuwarden_kubernetes_up 0, the reason in the log) and everything else runs.
    Expected<std::unique_ptr<k8s::PodResourcesApi>> api = k8s::LoadPodResourcesApi(k.socket);
    if (!api) {
      if (logger)
        logger->Error("kubernetes: " + api.error().message +
                      "; the agent runs without the Kubernetes source");
      api = k8s::MakeUnavailablePodResourcesApi(k.socket, api.error().message);
    }
    return std::make_unique<k8s::KubernetesPoller>(o, std::move(*api), logger);
  }
  return nullptr;
}

// Self-metric names and helps of a job source (gpuwarden_<name>_...).
template <typename Families>
void NameSourceFamilies(const std::string& name, Families* f) {
  const std::string prefix = "gpuwarden_" + name;
  f->up = prefix + "_up";
  f->last_success = prefix + "_last_success_timestamp_seconds";
  f->staleness = prefix + "_staleness_seconds";
  f->polls = prefix + "_polls_total";
  f->failures = prefix + "_poll_failures_total";
  const bool slurm = name == "slurm";
  const std::string what = slurm ? "squeue" : name == "kubernetes" ? "the kubelet" : name;
  f->up_help = slurm                  ? "1 if the last squeue poll succeeded."
               : name == "kubernetes" ? "1 if the last call to the kubelet's pod-resources API "
                                        "(List) succeeded."
                                      : "1 if the last " + name + " poll succeeded.";
  f->last_success_help = "When " + what + " last answered (unix seconds; 0 if never).";
  f->staleness_help = "Seconds since " + what +
                      " last answered (wall clock; 0 while it answers): how old the job table is.";
  f->polls_help = slurm ? "squeue polls." : "Polls of " + what + ".";
  f->failures_help = slurm ? "squeue polls that failed (timed out, exit code, bad JSON)."
                           : "Polls of " + what + " that failed (unreachable, timed out, error).";
}

std::string ShortHostName() {
  char name[256] = {0};
  if (gethostname(name, sizeof name - 1) != 0) return "";
  std::string host = name;
  return host.substr(0, host.find('.'));
}

}  // namespace

std::string JobRecordsDir(const config::Config& config) {
  return config.jobs.records_dir.empty() ? config.storage.path + "/jobs" : config.jobs.records_dir;
}

JobsService::JobsService(const config::Config& config, Logger* logger, JobsServiceOptions options)
    : config_(config),
      log_(logger),
      teams_(jobs::TeamConfig{config.teams.accounts, config.teams.users, true,
                              config.teams.namespaces}),
      mapping_(options.proc_root),
      idle_(config.jobs.idle_threshold) {
  node_name_ = options.node_name.empty() ? config.jobs.node_name : options.node_name;
  if (node_name_.empty()) node_name_ = ShortHostName();
  const std::string dir = JobRecordsDir(config);
  jobs::JobRecordStoreOptions records;
  records.memory_records = kRecordsInMemory;
  records.memory_keep_s = config.storage.retention_s;
  if (auto opened = jobs::JobRecordStore::Open(dir, records); opened.ok()) {
    store_ = std::move(*opened);
  } else {
    log_->Error("jobs: cannot open the records directory: " + opened.error().message +
                "; jobs are tracked without records");
  }
  jobs::JobStatsOptions stats;
  stats.idle_util_pct = config.jobs.idle_threshold * 100;
  // Job ends are learnt one scheduler poll late at most; keep that much uncommitted.
  stats.retention_s = std::max(300.0, 3 * config.jobs.poll_interval_s);
  // No store for the ledger: OnSnapshot takes the finished records and writes them itself, after
  // releasing mu_.
  ledger_ = std::make_unique<jobs::JobLedger>(teams_, nullptr, stats);
  ledger_->SetOutcomeLookup([this](const jobs::JobRecord& r) { return ClassifyRecord(r); });
  // gpu_job_outcomes_total goes on from the records kept (those of storage.retention).
  if (store_) {
    store_->VisitRecent([this](const jobs::StoredJobRecord& r) {
      if (!r.outcome.empty())
        outcomes_total_[{r.outcome, r.cause,
                         r.team.empty() ? std::string(jobs::kUnassignedTeam) : r.team,
                         r.partition}] += 1;
      return true;
    });
  }
  queue_wait_.Init("gpu_job_queue_wait_seconds", kQueueWaitBounds);
  submit_wait_.Init("gpu_job_submit_wait_seconds", kQueueWaitBounds);
  start_latency_.Init("gpu_job_start_latency_seconds", kStartLatencyBounds);
  run_time_.Init("gpu_job_run_seconds", kRunTimeBounds);
  jobs_by_state_ = {{"PENDING", 0}, {"RUNNING", 0}};
  poller_ = options.job_source ? options.job_source(config, logger)
                               : MakeJobSource(config, node_name_, logger);
  if (poller_) NameSourceFamilies(poller_->Name(), &source_families_);
  pod_source_ = poller_ && poller_->Name() == "kubernetes";
  kubernetes_ = dynamic_cast<k8s::KubernetesPoller*>(poller_.get());
  if (kubernetes_) {
    auto pods = std::make_unique<k8s::PodAttributionSource>();
    pods_ = pods.get();
    mapping_.AddSource(std::move(pods));
  }
  queue_api_ = std::make_unique<QueueApi>(poller_.get(), &teams_);
}

JobsService::~JobsService() {
  Stop();
}

void JobsService::Start() {
  if (poller_) poller_->Start();
}

void JobsService::Stop() {
  if (poller_) poller_->Stop();
}

double JobsService::NowS() const {
  return last_snapshot_s_ > 0 ? last_snapshot_s_ : WallNowS();
}

void JobsService::SetJobThroughputLookup(ThroughputLookup lookup) {
  std::lock_guard<std::mutex> lock(mu_);
  throughput_lookup_ = std::move(lookup);
}

void JobsService::SetJobCostLookup(jobs::JobLedger::CostLookup lookup) {
  std::lock_guard<std::mutex> lock(mu_);
  cost_lookup_ = lookup;
  ledger_->SetCostLookup(std::move(lookup));
}

void JobsService::SetReclaimLookup(ReclaimLookup lookup) {
  std::lock_guard<std::mutex> lock(mu_);
  reclaim_lookup_ = std::move(lookup);
}

std::optional<jobs::JobOutcomeRecord> JobsService::ClassifyRecord(
    const jobs::JobRecord& record) const {
  jobs::OutcomeOptions options;
  options.window_s = config_.jobs.outcome_window_s;
  jobs::OutcomeInput in;
  in.state = record.state;
  in.exit_code = record.exit_code;
  in.start_time = record.start_time;
  in.end_time = record.end_time;
  if (record.gpu) in.units = record.gpu->gpus;
  if (!in.units.empty() && record.start_time > 0) {
    const double end = static_cast<double>(record.end_time);
    in.events = device_events_.Collect(in.units, end - options.window_s, end + options.late_s);
  }
  if (reclaim_lookup_) in.reclaim = reclaim_lookup_(record.job_id);
  return jobs::ClassifyOutcome(in, options);
}

void JobsService::NoteDeviceEvents(const collect::Snapshot& snapshot) {
  const double now = snapshot.taken_unix_seconds;
  for (const collect::GpuSnapshot& gpu : snapshot.gpus) {
    using collect::Slot;
    jobs::DeviceReading r;
    r.unit = gpu.identity.index;
    r.time_s = now;
    r.lost = gpu.lost;
    r.xid_counts = gpu.xid_counts;
    if (const double ecc = gpu.value(Slot::kEccUncorrectedVolatile); !collect::IsAbsent(ecc))
      r.ecc_uncorrected_total = static_cast<std::uint64_t>(ecc);
    const double used = gpu.value(Slot::kMemoryUsed), total = gpu.value(Slot::kMemoryTotal);
    double reserved = gpu.value(Slot::kMemoryReserved);
    if (collect::IsAbsent(reserved)) reserved = 0;
    if (!gpu.lost && !collect::IsAbsent(used) && !collect::IsAbsent(total) && total > reserved)
      r.memory_used_ratio = used / (total - reserved);
    device_events_.Observe(r);
    for (const collect::MigInstanceSnapshot& m : gpu.mig) {
      jobs::DeviceReading u;
      u.unit = jobs::MigUnit(gpu.identity.index, m.gpu_instance_id);
      u.time_s = now;
      if (!gpu.lost && !collect::IsAbsent(m.memory_used_bytes) && m.memory_total_bytes > 0)
        u.memory_used_ratio = m.memory_used_bytes / m.memory_total_bytes;
      device_events_.Observe(u);
    }
  }
}

void JobsService::RecordSeriesInto(tsdb::Appender* appender) {
  std::lock_guard<std::mutex> lock(mu_);
  series_ = appender ? std::make_unique<TaskSeriesRecorder>(appender) : nullptr;
}

void JobsService::OnSnapshot(const collect::Snapshot& snapshot) {
  std::optional<jobs::SlurmHealth> health;
  if (poller_) health = poller_->Health();
  std::optional<k8s::KubernetesStatus> kubernetes;
  TaskSeriesRecorder* series = nullptr;
  std::vector<jobs::JobRecord> finished;
  {
    std::unique_lock<std::mutex> lock(mu_);
    // The kubelet's figures only for the store (the poller's lock, never under mu_).
    if (series_ && kubernetes_) {
      lock.unlock();
      kubernetes = kubernetes_->Status();
      lock.lock();
    }
    Observe(snapshot);
    finished = ledger_->TakeFinished();
    // Training throughput (serve/training_service.h) into the finished records.
    if (throughput_lookup_)
      for (jobs::JobRecord& r : finished) r.throughput = throughput_lookup_(r);
    for (const jobs::JobRecord& r : finished)
      if (r.outcome)
        outcomes_total_[{r.outcome->outcome, r.outcome->cause,
                         r.team.empty() ? std::string(jobs::kUnassignedTeam) : r.team,
                         r.partition}] += 1;
    writing_.insert(writing_.end(), finished.begin(), finished.end());
    series = series_.get();
    if (series) {
      // At the snapshot's time, as the recorder stamps it, so rules evaluated at that time see it.
      series->BeginCycle(
          static_cast<std::int64_t>(std::llround(snapshot.taken_unix_seconds * 1e3)));
      EmitFamilies(series, snapshot.taken_unix_seconds, health ? &*health : nullptr,
                   kubernetes ? &*kubernetes : nullptr);
      series->EndCycle();
    }
  }
  // The record writes and the WAL write happen outside the lock that /metrics and the API wait on.
  WriteRecords(finished);
  if (series) {
    if (Status s = series->Commit(); !s.ok())
      log_->Error("jobs: committing the task-layer series: " + s.message());
  }
}

double MigUtilization(const collect::MigInstanceSnapshot& m) {
  const double graphics = m.value(collect::Gpm::kGraphicsActive);
  return collect::IsAbsent(graphics) ? m.value(collect::Gpm::kSmActive) : graphics;
}

void JobsService::NoteUnit(unsigned unit, const collect::GpuSnapshot& gpu,
                           const collect::MigInstanceSnapshot* mig) {
  auto known = gpu_ids_.find(unit);
  if (known != gpu_ids_.end() && known->second.uuid == gpu.identity.uuid &&
      (mig == nullptr ||
       (known->second.mig_uuid == mig->uuid && known->second.mig_profile == mig->profile &&
        known->second.share == mig->slice_ratio)))
    return;  // unchanged: nothing built
  UnitLabels& l = gpu_ids_[unit];
  l.gpu = std::to_string(gpu.identity.index);
  l.uuid = gpu.identity.uuid;
  if (mig == nullptr) return;
  l.mig_instance = std::to_string(mig->gpu_instance_id);
  l.mig_profile = mig->profile;
  l.mig_uuid = mig->uuid;
  l.share = collect::IsAbsent(mig->slice_ratio) ? 1 : mig->slice_ratio;
  jobs::MigUnitInfo info;
  info.gpu = gpu.identity.index;
  info.gpu_instance_id = mig->gpu_instance_id;
  info.profile = mig->profile;
  info.uuid = mig->uuid;
  info.share = l.share;
  ledger_->DescribeUnit(info);
}

void JobsService::Observe(const collect::Snapshot& snapshot) {
  const double now = snapshot.taken_unix_seconds;
  last_snapshot_s_ = now;
  // Device events first: a job that ends in this snapshot sees this snapshot's XIDs.
  NoteDeviceEvents(snapshot);
  jobs::CycleInput& cycle = cycle_;  // reused: its capacity stays
  cycle.gpus.clear();
  for (const collect::GpuSnapshot& gpu : snapshot.gpus) {
    using collect::Slot;
    const unsigned index = gpu.identity.index;
    NoteUnit(index, gpu, nullptr);
    if (gpu.lost) continue;
    auto value = [&gpu](Slot s, double fallback) {
      double v = gpu.value(s);
      return collect::IsAbsent(v) ? fallback : v;
    };
    jobs::GpuCycleSample s;
    s.index = index;
    s.time_s = now;
    s.util_pct = value(Slot::kUtilization, 0) * 100;
    s.sm_active = gpu.value(Slot::kSmActive);
    s.tensor_active = gpu.value(Slot::kTensorAny);
    s.power_w = value(Slot::kPower, 0);
    if (!collect::IsAbsent(gpu.value(Slot::kEnergy))) s.energy_j = gpu.value(Slot::kEnergy);
    s.memory_used_bytes = static_cast<std::uint64_t>(value(Slot::kMemoryUsed, 0));
    const Slot events[] = {
        Slot::kEventGpuIdle,    Slot::kEventAppClocks,    Slot::kEventSwPowerCap,
        Slot::kEventHwSlowdown, Slot::kEventSyncBoost,    Slot::kEventSwThermal,
        Slot::kEventHwThermal,  Slot::kEventHwPowerBrake, Slot::kEventDisplayClock};
    for (size_t i = 0; i < std::size(events); ++i)
      if (value(events[i], 0) > 0) s.throttle_reasons |= collect::kClockEventReasons[i].bit;
    s.ecc_corrected_total = static_cast<std::uint64_t>(value(Slot::kEccCorrectedVolatile, 0));
    s.ecc_uncorrected_total = static_cast<std::uint64_t>(value(Slot::kEccUncorrectedVolatile, 0));
    for (const auto& [xid, count] : gpu.xid_counts) s.xid_total += count;
    cycle.gpus.push_back(s);
    const double total = value(Slot::kMemoryTotal, 0);
    memory_used_ratio_[index] = total > 0 ? value(Slot::kMemoryUsed, 0) / total : 0;
    // Each MIG instance is a unit of its own: its share of the GPU's power and energy, its own
    // memory and GPM signals, the GPU's clock events, ECC and XIDs.
    for (const collect::MigInstanceSnapshot& m : gpu.mig) {
      const unsigned unit = jobs::MigUnit(index, m.gpu_instance_id);
      NoteUnit(unit, gpu, &m);
      jobs::GpuCycleSample u = s;
      u.index = unit;
      u.share = gpu_ids_[unit].share;
      const double util = MigUtilization(m);
      u.util_known = !collect::IsAbsent(util);
      u.util_pct = u.util_known ? util * 100 : 0;
      u.sm_active = m.value(collect::Gpm::kSmActive);
      u.tensor_active = m.value(collect::Gpm::kTensorAny);
      u.power_w = s.power_w * u.share;
      if (s.energy_j) u.energy_j = *s.energy_j * u.share;
      u.memory_used_bytes = collect::IsAbsent(m.memory_used_bytes)
                                ? 0
                                : static_cast<std::uint64_t>(m.memory_used_bytes);
      cycle.gpus.push_back(u);
      memory_used_ratio_[unit] = m.memory_total_bytes > 0 && !collect::IsAbsent(m.memory_used_bytes)
                                     ? m.memory_used_bytes / m.memory_total_bytes
                                     : 0;
    }
  }
  // Per-job statistics accumulate every snapshot; who holds which GPU is recomputed only when the
  // scheduler's job table or the process mapping changed (serve/jobs_mapping.h).
  ledger_->OnCycle(cycle);
  // Kubernetes: pods name devices by UUID; a new GPU/MIG layout resolves them again.
  bool layout_moved = false;
  if (pod_source_ && NoteLayout(snapshot)) {
    ResolveKubernetesJobs();
    StartResolvedPods();
    layout_moved = true;
  }
  const bool scheduler_changed = TakeSchedulerEvents(now) || layout_moved;
  const bool remapped = mapping_.Update(snapshot);
  if (remapped) Attribute(now);
  const bool jobs_changed = scheduler_changed || remapped;
  if (jobs_changed) {
    allocations_ = slurm_allocations_;
    for (const auto& [gpu, keys] : process_allocations_)
      allocations_[gpu].insert(keys.begin(), keys.end());
    NarrowToMigUnits();
    if (pod_source_) RebuildDevicePods();
  }
  ledger_->RunningInto(now, &running_);
  for (const jobs::JobGpuStats& s : running_) {
    if (!s.start_latency_s || latency_seen_.count(s.job_id)) continue;
    latency_seen_.insert(s.job_id);
    auto meta = meta_.find(s.job_id);
    start_latency_.Observe(meta == meta_.end() ? "" : meta->second.partition, *s.start_latency_s);
  }
  if (jobs_changed) NoteEndedJobs(now);  // meta_, running_ and allocations_ move only then
  TrackIdle(snapshot, now);
}

bool JobsService::TakeSchedulerEvents(double now_s) {
  if (!poller_) return false;
  bool changed = false;  // an event may start or end a job in the ledger
  for (jobs::JobEvent& e : poller_->TakeEvents()) {
    changed = true;
    // A pod's GPUs are its devices, resolved against the snapshot (the ledger counts from them).
    if (e.job.source == "kubernetes" && e.job.gpu_indices.empty())
      e.job.gpu_indices = ResolveDevices(e.job, nullptr);
    const jobs::SlurmJob& job = e.job;
    // Scheduling figures are the cluster's, as squeue shows them.
    if (e.kind == jobs::JobEventKind::kStarted) {
      if (job.eligible_time > 0)
        queue_wait_.Observe(job.partition, double(e.time - job.eligible_time));
      if (job.submit_time > 0)
        submit_wait_.Observe(job.partition, double(e.time - job.submit_time));
    }
    const bool ended =
        e.kind == jobs::JobEventKind::kFinished || e.kind == jobs::JobEventKind::kVanished;
    if (ended && job.started() && job.start_time > 0 && e.time >= job.start_time)
      run_time_.Observe(job.partition, double(e.time - job.start_time));
    // GPU accounting and records: only jobs on this node (the kubelet knows only its own pods).
    if (job.source != "kubernetes" && !jobs::HostListContains(job.nodes, node_name_)) continue;
    // squeue lists finished jobs for a while (MinJobAge): after a restart, those recorded before
    // are not recorded again (without their GPU figures).
    if (e.kind == jobs::JobEventKind::kFinished && store_ &&
        store_->RecentlyRecorded(e.job_id, job.started() ? job.start_time : 0, job.end_time))
      continue;
    (void)ledger_->OnEvent(e);  // no store: cannot fail; records are queued for OnSnapshot
  }
  // The job table moves only with a successful poll: copy and walk it only then.
  const std::uint64_t version = poller_->JobsVersion();
  if (version == slurm_version_) return changed;
  slurm_version_ = version;
  jobs_by_state_.clear();
  jobs_by_state_["PENDING"] = 0;
  jobs_by_state_["RUNNING"] = 0;
  slurm_allocations_.clear();
  kubernetes_jobs_.clear();
  for (auto& [id, job] : poller_->Jobs()) {
    jobs_by_state_[std::string(jobs::JobStateName(job.state))] += 1;
    const bool pod = job.source == "kubernetes";
    if (job.state != jobs::JobState::kRunning ||
        (!pod && !jobs::HostListContains(job.nodes, node_name_)))
      continue;
    NoteMeta(id, job);
    if (pod) {
      kubernetes_jobs_.emplace(id, std::move(job));
    } else {
      for (unsigned gpu : job.gpu_indices) slurm_allocations_[gpu].insert(id);
    }
  }
  if (pod_source_) ResolveKubernetesJobs();
  // Processes are matched to pods through the poller's index of this poll.
  if (pods_) {
    pods_->Set(kubernetes_->Index());
    mapping_.Invalidate();
  }
  (void)now_s;
  return true;
}

void JobsService::NoteMeta(const std::string& id, const jobs::SlurmJob& job) {
  JobMeta& m = meta_[id];
  m.source = job.source == "kubernetes" ? "kubernetes" : "slurm";
  m.name = job.name;
  m.user = job.user;
  m.account = job.account;
  m.partition = job.partition;
  m.team = teams_.TeamOfJob(job);
  m.pod_namespace = job.pod_namespace;
  m.pod_name = job.pod_name;
  m.start_s = double(job.start_time);
}

void JobsService::Attribute(double now_s) {
  process_allocations_.clear();
  metrics_ports_.clear();
  for (const jobs::JobLedger::AttributedGpuProcess& p : mapping_.processes()) {
    const jobs::ProcessAttribution& a = p.process;
    if (a.job_id.empty()) continue;
    const bool process_job = a.job_source == "gpuwarden-env";
    const std::string key = process_job ? std::string(kProcessPrefix) + a.job_id : a.job_id;
    process_allocations_[p.gpu].insert(key);
    // A pod's loopback is not the node's: its endpoint is named in scrape.targets instead.
    if (const int port = a.gpuwarden_metrics_port; port > 0 && a.job_source != "kubernetes") {
      auto [it, fresh] = metrics_ports_.emplace(key, port);
      if (!fresh) it->second = std::min(it->second, port);
    }
    if (meta_.count(key)) continue;
    JobMeta& m = meta_[key];
    m.start_s = now_s;
    if (a.job_source == "kubernetes") {  // a pod the job table has not listed (yet)
      m.source = "kubernetes";
      m.name = m.pod_name = a.pod_name;
      m.account = m.pod_namespace = a.pod_namespace;
      m.team = teams_.TeamOfNamespace(a.pod_namespace, "");
      continue;
    }
    m.source = process_job ? "process" : "slurm";
    m.user = a.slurm_user.empty() || process_job ? a.user : a.slurm_user;
    m.account = a.slurm_account;
    m.partition = a.slurm_partition;
    m.team = teams_.TeamOf(a.slurm_account, m.user, a.gpuwarden_team);
  }
  (void)ledger_->OnProcesses(mapping_.processes(), now_s);  // no store: cannot fail (queued)
}

void JobsService::NarrowToMigUnits() {
  // A job the scheduler gave GPU g whose processes run on MIG instances of g holds those
  // instances, not g (Slurm's gres_detail counts devices; the processes name the instances).
  std::map<std::pair<std::string, unsigned>, std::vector<unsigned>> narrowed;  // (key, gpu)
  for (const auto& [unit, keys] : process_allocations_) {
    if (!jobs::IsMigUnit(unit)) continue;
    for (const std::string& key : keys) narrowed[{key, jobs::UnitGpu(unit)}].push_back(unit);
  }
  for (const auto& [what, units] : narrowed) {
    const auto& [key, gpu] = what;
    auto whole = allocations_.find(gpu);
    if (whole == allocations_.end() || whole->second.erase(key) == 0) continue;
    if (whole->second.empty()) allocations_.erase(whole);
    ledger_->Narrow(key, gpu, units);
  }
}

void JobsService::WriteRecords(const std::vector<jobs::JobRecord>& records) {
  if (records.empty()) return;
  std::uint64_t errors = 0;
  if (store_) {
    for (const jobs::JobRecord& r : records) {
      if (Status s = store_->Append(r); !s.ok()) {
        ++errors;
        log_->Error("jobs: writing the record of job " + r.job_id + ": " + s.message());
      }
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  record_errors_ += errors;
  // OnSnapshot is the only writer and runs on one thread: these are writing_'s first records.
  writing_.erase(writing_.begin(), writing_.begin() + static_cast<std::ptrdiff_t>(std::min(
                                                          records.size(), writing_.size())));
}

void JobsService::NoteEndedJobs(double now_s) {
  std::set<std::string> live;
  for (const jobs::JobGpuStats& s : running_) live.insert(s.job_id);
  for (const auto& [gpu, keys] : allocations_) live.insert(keys.begin(), keys.end());
  for (auto it = meta_.begin(); it != meta_.end();) {
    if (live.count(it->first)) {
      ++it;
      continue;
    }
    // Slurm jobs' run times come from the scheduler's events; process jobs end when last seen.
    if (it->second.source == "process" && now_s >= it->second.start_s)
      run_time_.Observe(it->second.partition, now_s - it->second.start_s);
    latency_seen_.erase(it->first);
    it = meta_.erase(it);
  }
}

void JobsService::TrackIdle(const collect::Snapshot& snapshot, double now_s) {
  // A GPU's streak ends when it is no longer allocated; a snapshot without it keeps the streak.
  idle_.Retain([this](unsigned index) { return allocations_.count(index) > 0; });
  for (const collect::GpuSnapshot& gpu : snapshot.gpus) {
    const unsigned index = gpu.identity.index;
    if (allocations_.count(index)) {
      const double util = gpu.value(collect::Slot::kUtilization);
      (void)idle_.Observe(index, true, !collect::IsAbsent(util), util, now_s);
    }
    for (const collect::MigInstanceSnapshot& m : gpu.mig) {
      const unsigned unit = jobs::MigUnit(index, m.gpu_instance_id);
      if (!allocations_.count(unit)) continue;
      const double util = MigUtilization(m);
      (void)idle_.Observe(unit, true, !collect::IsAbsent(util), util, now_s);
    }
  }
}

}  // namespace gw::serve
