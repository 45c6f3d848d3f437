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
      teams_(jobs::TeamConfig{config.teams.accounts, config.teams.users, true}),
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
  queue_wait_.Init("gpu_job_queue_wait_seconds", kQueueWaitBounds);
  submit_wait_.Init("gpu_job_submit_wait_seconds", kQueueWaitBounds);
  start_latency_.Init("gpu_job_start_latency_seconds", kStartLatencyBounds);
  run_time_.Init("gpu_job_run_seconds", kRunTimeBounds);
  jobs_by_state_ = {{"PENDING", 0}, {"RUNNING", 0}};
  if (config.jobs.scheduler == "slurm") {
    jobs::SlurmPollerOptions o;
    o.command = config.jobs.squeue_command;
    o.interval_s = config.jobs.poll_interval_s;
    o.timeout_s = std::min(10.0, std::max(1.0, config.jobs.poll_interval_s));
    poller_ = std::make_unique<jobs::SlurmPoller>(o, logger);
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

void JobsService::SetJobCostLookup(jobs::JobLedger::CostLookup lookup) {
  std::lock_guard<std::mutex> lock(mu_);
  cost_lookup_ = lookup;
  ledger_->SetCostLookup(std::move(lookup));
}

void JobsService::RecordSeriesInto(tsdb::Appender* appender) {
  std::lock_guard<std::mutex> lock(mu_);
  series_ = appender ? std::make_unique<TaskSeriesRecorder>(appender) : nullptr;
}

void JobsService::OnSnapshot(const collect::Snapshot& snapshot) {
  std::optional<jobs::SlurmHealth> health;
  if (poller_) health = poller_->Health();
  TaskSeriesRecorder* series = nullptr;
  std::vector<jobs::JobRecord> finished;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Observe(snapshot);
    finished = ledger_->TakeFinished();
    writing_.insert(writing_.end(), finished.begin(), finished.end());
    series = series_.get();
    if (series) {
      // At the snapshot's time, as the recorder stamps it, so rules evaluated at that time see it.
      series->BeginCycle(
          static_cast<std::int64_t>(std::llround(snapshot.taken_unix_seconds * 1e3)));
      EmitFamilies(series, snapshot.taken_unix_seconds, health ? &*health : nullptr);
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
  const bool scheduler_changed = TakeSchedulerEvents(now);
  const bool remapped = mapping_.Update(snapshot);
  if (remapped) Attribute(now);
  const bool jobs_changed = scheduler_changed || remapped;
  if (jobs_changed) {
    allocations_ = slurm_allocations_;
    for (const auto& [gpu, keys] : process_allocations_)
      allocations_[gpu].insert(keys.begin(), keys.end());
    NarrowToMigUnits();
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
  for (const jobs::JobEvent& e : poller_->TakeEvents()) {
    changed = true;
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
    // GPU accounting and records: only jobs on this node.
    if (!jobs::HostListContains(job.nodes, node_name_)) continue;
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
  for (const auto& [id, job] : poller_->Jobs()) {
    jobs_by_state_[std::string(jobs::JobStateName(job.state))] += 1;
    if (job.state != jobs::JobState::kRunning || !jobs::HostListContains(job.nodes, node_name_))
      continue;
    JobMeta& m = meta_[id];
    m.source = "slurm";
    m.name = job.name;
    m.user = job.user;
    m.account = job.account;
    m.partition = job.partition;
    m.team = teams_.TeamOf(job.account, job.user);
    m.start_s = double(job.start_time);
    for (unsigned gpu : job.gpu_indices) slurm_allocations_[gpu].insert(id);
  }
  (void)now_s;
  return true;
}

void JobsService::Attribute(double now_s) {
  process_allocations_.clear();
  for (const jobs::JobLedger::AttributedGpuProcess& p : mapping_.processes()) {
    const jobs::ProcessAttribution& a = p.process;
    if (a.job_id.empty()) continue;
    const bool process_job = a.job_source == "gpuwarden-env";
    const std::string key = process_job ? std::string(kProcessPrefix) + a.job_id : a.job_id;
    process_allocations_[p.gpu].insert(key);
    if (meta_.count(key)) continue;
    JobMeta& m = meta_[key];
    m.source = process_job ? "process" : "slurm";
    m.user = a.slurm_user.empty() || process_job ? a.user : a.slurm_user;
    m.account = a.slurm_account;
    m.partition = a.slurm_partition;
    m.team = teams_.TeamOf(a.slurm_account, m.user, a.gpuwarden_team);
    m.start_s = now_s;
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

std::vector<jobs::JobRecord> JobsService::RunningRecords() const {
  std::map<std::string, jobs::SlurmJob> slurm_jobs;
  if (poller_) slurm_jobs = poller_->Jobs();
  std::vector<jobs::JobRecord> out;
  std::set<std::string> done;
  auto add = [&](const std::string& key, std::optional<jobs::JobGpuStats> stats) {
    if (!done.insert(key).second) return;
    auto m = meta_.find(key);
    const JobMeta meta = m == meta_.end() ? JobMeta{} : m->second;
    jobs::JobRecord r;
    if (auto j = slurm_jobs.find(key); j != slurm_jobs.end() && meta.source == "slurm") {
      r = ledger_->MakeRecord(j->second, "RUNNING", stats);
      r.end_time = 0;
      r.exit_code.reset();
    } else {
      r.job_id = std::string(VisibleJobId(key));
      r.source = meta.source.empty() ? "process" : meta.source;
      r.name = meta.name;
      r.user = meta.user;
      r.account = meta.account;
      r.partition = meta.partition;
      r.team = meta.team.empty() ? std::string(jobs::kUnassignedTeam) : meta.team;
      r.state = "RUNNING";
      r.start_time = static_cast<std::int64_t>(stats ? stats->start_s : meta.start_s);
      r.gpu = std::move(stats);
    }
    if (r.gpu) r.gpu->job_id = r.job_id;
    if (cost_lookup_) r.cost = cost_lookup_(r.job_id);  // so far
    out.push_back(std::move(r));
  };
  for (const jobs::JobGpuStats& s : running_) add(s.job_id, s);
  for (const auto& [key, meta] : meta_) add(key, std::nullopt);
  // Jobs that ended and whose records are being written (OnSnapshot, outside mu_): listed as
  // running, with their final figures, until the record is on disk — so the API never lists as
  // finished a record that a crash could still lose.
  for (const jobs::JobRecord& w : writing_) {
    if (std::any_of(out.begin(), out.end(),
                    [&w](const jobs::JobRecord& r) { return r.job_id == w.job_id; }))
      continue;
    jobs::JobRecord r = w;
    r.state = "RUNNING";
    r.end_time = 0;
    r.exit_code.reset();
    if (r.gpu) r.gpu->end_s = 0;
    out.push_back(std::move(r));
  }
  return out;
}

// The documents are written as nlohmann's dump writes them (keys in order), with each record's
// JSON as stored: no parse, no disk read.
std::string JobsService::JobsJson(const JobsQuery& query) const {
  std::vector<jobs::JobRecord> running;
  std::vector<std::tuple<std::string, std::int64_t, std::int64_t>> being_written;
  double now = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    running = RunningRecords();
    now = NowS();
    for (const jobs::JobRecord& w : writing_)
      being_written.emplace_back(w.job_id, w.start_time, w.end_time);
  }
  std::string body = "{\"data\":{\"jobs\":[";
  bool first = true;
  auto add = [&](std::string_view json) {
    if (!first) body += ',';
    first = false;
    body += json;
  };
  for (const jobs::JobRecord& r : running)
    if (query.team.empty() || r.team == query.team) add(jobs::JobRecordToJson(r));
  if (!query.running_only && store_) {
    store_->VisitRecent([&](const jobs::StoredJobRecord& r) {
      if (!query.team.empty() && r.team != query.team) return true;
      // Written since `running` was taken: listed there already.
      if (std::find(being_written.begin(), being_written.end(),
                    std::make_tuple(r.job_id, r.start_time, r.end_time)) != being_written.end())
        return true;
      if (query.since_s > 0 && double(r.end_time) < now - query.since_s) return true;
      add(r.json);
      return true;
    });
  }
  body += "]},\"status\":\"success\"}";
  return body;
}

std::optional<std::string> JobsService::JobJson(const std::string& job_id) const {
  auto document = [](std::string_view json) {
    return "{\"data\":" + std::string(json) + ",\"status\":\"success\"}";
  };
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const jobs::JobRecord& r : RunningRecords())
      if (r.job_id == job_id) return document(jobs::JobRecordToJson(r));
  }
  if (!store_) return std::nullopt;
  std::optional<std::string> json = store_->RecentJson(job_id);
  if (!json) return std::nullopt;
  return document(*json);
}

std::string JobsService::QueueJson(const std::string& team) const {
  return queue_api_->Json(team, WallNowS());  // the poller's clock
}

void JobsService::RegisterRoutes(http::Server* server) {
  server->Get("/api/gw/v1/queue", [this](const http::Request& req, http::Response& res) {
    res.body = QueueJson(req.param("team"));
    res.content_type = "application/json";
  });
  server->Get("/api/gw/v1/jobs", [this](const http::Request& req, http::Response& res) {
    JobsQuery q;
    const std::string running = req.param("running");
    q.running_only = running == "1" || running == "true";
    q.team = req.param("team");
    if (const std::string since = req.param("since"); !since.empty()) {
      if (!ParseDurationSeconds(since, &q.since_s) || q.since_s <= 0)
        return http::WriteApiError(
            res, 400, "bad_data",
            "since: expected a duration such as 1h or 30m, got '" + since + "'");
    }
    res.body = JobsJson(q);
    res.content_type = "application/json";
  });
  server->GetPrefix("/api/gw/v1/jobs/", [this](const http::Request& req, http::Response& res) {
    const std::string id = req.path.substr(std::string_view("/api/gw/v1/jobs/").size());
    auto body = id.empty() ? std::nullopt : JobJson(id);
    if (!body) return http::WriteApiError(res, 404, "not_found", "no such job: " + id);
    res.body = *body;
    res.content_type = "application/json";
  });
}

std::vector<JobsService::HeldGpus> JobsService::AllocatedJobs() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, HeldGpus> by_key;
  for (const auto& [gpu, keys] : allocations_) {
    for (const std::string& key : keys) {
      HeldGpus& h = by_key[key];
      if (h.job_id.empty()) {
        h.job_id = VisibleJobId(key);
        auto m = meta_.find(key);
        if (m != meta_.end()) {
          h.source = m->second.source;
          h.name = m->second.name;
          h.user = m->second.user;
          h.account = m->second.account;
          h.team = m->second.team;
          h.partition = m->second.partition;
        }
        if (h.team.empty()) h.team = std::string(jobs::kUnassignedTeam);
      }
      h.gpus.push_back(gpu);
    }
  }
  std::vector<HeldGpus> out;
  for (auto& [key, h] : by_key) out.push_back(std::move(h));
  return out;
}

std::map<std::string, jobs::SlurmJob> JobsService::SlurmJobs() const {
  if (!poller_) return {};
  return poller_->Jobs();
}

std::uint64_t JobsService::SlurmJobsVersion() const {
  return poller_ ? poller_->JobsVersion() : 0;
}

}  // namespace gw::serve
