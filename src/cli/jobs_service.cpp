#include "cli/jobs_service.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "http/server.h"

namespace gw::cli {

namespace {

constexpr std::string_view kProcessPrefix = "process:";

// Bucket bounds (seconds). Queue waits run from seconds to days; start latency is a model load;
// run times from minutes to a week.
const std::vector<double> kQueueWaitBounds = {1,   5,    10,   30,   60,    120,   300,
                                              600, 1800, 3600, 7200, 14400, 28800, 86400};
const std::vector<double> kStartLatencyBounds = {0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800};
const std::vector<double> kRunTimeBounds = {60,    300,   900,   1800,   3600,  7200,
                                            14400, 43200, 86400, 172800, 604800};

double WallNowS() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string ShortHostName() {
  char name[256] = {0};
  if (gethostname(name, sizeof name - 1) != 0) return "";
  std::string host = name;
  return host.substr(0, host.find('.'));
}

// The job id a person knows: the ledger keys process jobs "process:<GPUWARDEN_JOB>".
std::string VisibleJobId(const std::string& key) {
  return key.rfind(kProcessPrefix, 0) == 0 ? key.substr(kProcessPrefix.size()) : key;
}

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Whether `number` (digits) falls in one bracket item: "3", "01-04".
bool InRange(std::string_view item, std::string_view number) {
  size_t dash = item.find('-');
  std::string_view lo = item.substr(0, dash);
  std::string_view hi = dash == std::string_view::npos ? lo : item.substr(dash + 1);
  if (!AllDigits(lo) || !AllDigits(hi) || lo.size() > 18 || hi.size() > 18 || number.size() > 18)
    return false;
  if (lo.size() > 1 && lo[0] == '0' && number.size() != lo.size()) return false;  // zero-padded
  auto value = [](std::string_view d) { return std::stoull(std::string(d)); };
  unsigned long long n = value(number);
  return n >= value(lo) && n <= value(hi);
}

// Label text for one job: job_id="…",user="…",team="…",partition="…".
std::string JobLabels(const std::string& job_id, const std::string& user, const std::string& team,
                      const std::string& partition) {
  std::string out;
  auto add = [&out](std::string_view name, const std::string& value) {
    if (!out.empty()) out += ',';
    out += name;
    out += "=\"";
    collect::AppendEscapedLabelValue(&out, value);
    out += '"';
  };
  add("job_id", job_id);
  add("user", user);
  add("team", team);
  add("partition", partition);
  return out;
}

// Family headers as collect/exposition.cpp writes them: a counter family is NAME_total in text
// 0.0.4 and NAME in OpenMetrics (samples keep _total); UNIT only where the family ends with it.
void Header(std::string* out, collect::Format format, std::string_view name, std::string_view type,
            std::string_view unit, std::string_view help) {
  std::string family(name);
  const bool counter = type == "counter";
  if (counter && format == collect::Format::kOpenMetrics && family.size() > 6 &&
      family.compare(family.size() - 6, 6, "_total") == 0)
    family.resize(family.size() - 6);
  *out += "# HELP " + family + " ";
  *out += help;
  *out += "\n# TYPE " + family + " ";
  *out += type;
  *out += '\n';
  if (format == collect::Format::kOpenMetrics && !unit.empty() && family.size() > unit.size() &&
      family.compare(family.size() - unit.size(), unit.size(), unit) == 0 &&
      family[family.size() - unit.size() - 1] == '_') {
    *out += "# UNIT " + family + " ";
    *out += unit;
    *out += '\n';
  }
}

void Sample(std::string* out, std::string_view name, std::string_view labels, double value) {
  *out += name;
  if (!labels.empty()) {
    *out += '{';
    *out += labels;
    *out += '}';
  }
  *out += ' ';
  collect::AppendValue(out, value);
  *out += '\n';
}

std::string Join(std::string_view a, std::string_view b) {
  if (a.empty()) return std::string(b);
  if (b.empty()) return std::string(a);
  return std::string(a) + "," + std::string(b);
}

void ErrorJson(http::Response& res, int status, const std::string& type, const std::string& what) {
  res.status = status;
  res.body = nlohmann::json{{"status", "error"}, {"errorType", type}, {"error", what}}.dump();
  res.content_type = "application/json";
}

}  // namespace

std::string JobRecordsDir(const Config& config) {
  return config.jobs.records_dir.empty() ? config.storage.path + "/jobs" : config.jobs.records_dir;
}

bool HostListContains(std::string_view list, std::string_view host) {
  if (host.empty()) return false;
  size_t begin = 0;
  while (begin <= list.size()) {
    // Items are separated by commas outside brackets.
    size_t end = begin;
    int depth = 0;
    while (end < list.size() && (list[end] != ',' || depth > 0)) {
      if (list[end] == '[') ++depth;
      if (list[end] == ']') --depth;
      ++end;
    }
    std::string_view item = list.substr(begin, end - begin);
    size_t open = item.find('[');
    size_t close = item.find(']');
    if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
      if (item == host) return true;
    } else {
      std::string_view prefix = item.substr(0, open), suffix = item.substr(close + 1);
      std::string_view inside = item.substr(open + 1, close - open - 1);
      if (host.size() > prefix.size() + suffix.size() && host.substr(0, prefix.size()) == prefix &&
          host.substr(host.size() - suffix.size()) == suffix) {
        std::string_view number =
            host.substr(prefix.size(), host.size() - prefix.size() - suffix.size());
        size_t r = 0;
        while (r <= inside.size()) {
          size_t comma = inside.find(',', r);
          if (comma == std::string_view::npos) comma = inside.size();
          if (InRange(inside.substr(r, comma - r), number)) return true;
          r = comma + 1;
        }
      }
    }
    begin = end + 1;
  }
  return false;
}

void JobsService::Histogram::Observe(const std::string& partition, double v) {
  auto& c = counts[partition];
  if (c.empty()) c.assign(bounds.size() + 1, 0);
  size_t i = 0;
  while (i < bounds.size() && v > bounds[i]) ++i;
  ++c[i];
  sums[partition] += v;
}

JobsService::JobsService(const Config& config, Logger* logger, JobsServiceOptions options)
    : config_(config),
      log_(logger),
      teams_(jobs::TeamConfig{config.teams.accounts, config.teams.users, true}),
      attributor_(jobs::AttributorOptions{options.proc_root}) {
  node_name_ = options.node_name.empty() ? ShortHostName() : options.node_name;
  const std::string dir = JobRecordsDir(config);
  if (auto opened = jobs::JobRecordStore::Open(dir); opened.ok()) {
    store_ = std::move(*opened);
  } else {
    log_->Error("jobs: cannot open the records directory: " + opened.error().message +
                "; jobs are tracked without records");
  }
  jobs::JobStatsOptions stats;
  stats.idle_util_pct = config.jobs.idle_threshold * 100;
  // Job ends are learnt one scheduler poll late at most; keep that much uncommitted.
  stats.retention_s = std::max(300.0, 3 * config.jobs.poll_interval_s);
  ledger_ = std::make_unique<jobs::JobLedger>(teams_, store_.get(), stats);
  queue_wait_.bounds = kQueueWaitBounds;
  submit_wait_.bounds = kQueueWaitBounds;
  start_latency_.bounds = kStartLatencyBounds;
  run_time_.bounds = kRunTimeBounds;
  if (config.jobs.scheduler == "slurm") {
    jobs::SlurmPollerOptions o;
    o.command = config.jobs.squeue_command;
    o.interval_s = config.jobs.poll_interval_s;
    o.timeout_s = std::min(10.0, std::max(1.0, config.jobs.poll_interval_s));
    poller_ = std::make_unique<jobs::SlurmPoller>(o, logger);
  }
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

void JobsService::OnSnapshot(const collect::Snapshot& snapshot) {
  std::lock_guard<std::mutex> lock(mu_);
  const double now = snapshot.taken_unix_seconds;
  last_snapshot_s_ = now;
  jobs::CycleInput cycle;
  for (const collect::GpuSnapshot& gpu : snapshot.gpus) {
    using collect::Slot;
    const unsigned index = gpu.identity.index;
    gpu_ids_[index] = {std::to_string(index), gpu.identity.uuid};
    if (gpu.lost) continue;
    auto value = [&gpu](Slot s, double fallback) {
      double v = gpu.value(s);
      return collect::IsAbsent(v) ? fallback : v;
    };
    jobs::GpuCycleSample s;
    s.index = index;
    s.time_s = now;
    s.util_pct = value(Slot::kUtilization, 0) * 100;
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
  }
  ledger_->OnCycle(cycle);
  allocations_.clear();
  TakeSchedulerEvents(now);
  Attribute(snapshot, now);
  running_ = ledger_->Running(now);
  for (const jobs::JobGpuStats& s : running_) {
    if (!s.start_latency_s || latency_seen_.count(s.job_id)) continue;
    latency_seen_.insert(s.job_id);
    auto meta = meta_.find(s.job_id);
    start_latency_.Observe(meta == meta_.end() ? "" : meta->second.partition, *s.start_latency_s);
  }
  NoteEndedJobs(now);
  TrackIdle(snapshot, now);
}

void JobsService::TakeSchedulerEvents(double now_s) {
  jobs_by_state_.clear();
  jobs_by_state_["PENDING"] = 0;
  jobs_by_state_["RUNNING"] = 0;
  if (!poller_) return;
  for (const jobs::JobEvent& e : poller_->TakeEvents()) {
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
    if (!HostListContains(job.nodes, node_name_)) continue;
    if (Status s = ledger_->OnEvent(e); !s.ok()) {
      ++record_errors_;
      log_->Error("jobs: writing the record of job " + e.job_id + ": " + s.message());
    }
  }
  for (const auto& [id, job] : poller_->Jobs()) {
    jobs_by_state_[std::string(jobs::JobStateName(job.state))] += 1;
    if (job.state != jobs::JobState::kRunning || !HostListContains(job.nodes, node_name_)) continue;
    JobMeta& m = meta_[id];
    m.source = "slurm";
    m.name = job.name;
    m.user = job.user;
    m.account = job.account;
    m.partition = job.partition;
    m.team = teams_.TeamOf(job.account, job.user);
    m.start_s = double(job.start_time);
    for (unsigned gpu : job.gpu_indices) allocations_[gpu].insert(id);
  }
  (void)now_s;
}

void JobsService::Attribute(const collect::Snapshot& snapshot, double now_s) {
  std::vector<jobs::GpuProcessRef> refs;
  for (const collect::GpuSnapshot& gpu : snapshot.gpus)
    for (const collect::ProcessSample& p : gpu.processes)
      refs.push_back({static_cast<pid_t>(p.pid), gpu.identity.uuid});
  std::map<pid_t, jobs::ProcessAttribution> by_pid;
  for (jobs::ProcessAttribution& a : attributor_.AttributeAll(refs)) by_pid[a.pid] = std::move(a);
  std::vector<jobs::JobLedger::AttributedGpuProcess> processes;
  for (const collect::GpuSnapshot& gpu : snapshot.gpus) {
    for (const collect::ProcessSample& p : gpu.processes) {
      auto it = by_pid.find(static_cast<pid_t>(p.pid));
      if (it == by_pid.end()) continue;
      const jobs::ProcessAttribution& a = it->second;
      processes.push_back({a, gpu.identity.index});
      if (a.job_id.empty()) continue;
      const bool process_job = a.job_source == "gpuwarden-env";
      const std::string key = process_job ? std::string(kProcessPrefix) + a.job_id : a.job_id;
      allocations_[gpu.identity.index].insert(key);
      if (meta_.count(key)) continue;
      JobMeta& m = meta_[key];
      m.source = process_job ? "process" : "slurm";
      m.user = a.slurm_user.empty() || process_job ? a.user : a.slurm_user;
      m.account = a.slurm_account;
      m.partition = a.slurm_partition;
      m.team = teams_.TeamOf(a.slurm_account, m.user, a.gpuwarden_team);
      m.start_s = now_s;
    }
  }
  if (Status s = ledger_->OnProcesses(processes, now_s); !s.ok()) {
    ++record_errors_;
    log_->Error("jobs: writing a job record: " + s.message());
  }
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
  for (auto it = idle_since_s_.begin(); it != idle_since_s_.end();)
    it = allocations_.count(it->first) ? std::next(it) : idle_since_s_.erase(it);
  for (const collect::GpuSnapshot& gpu : snapshot.gpus) {
    const unsigned index = gpu.identity.index;
    if (!allocations_.count(index)) continue;
    const double util = gpu.value(collect::Slot::kUtilization);
    if (collect::IsAbsent(util) || util > config_.jobs.idle_threshold) {
      idle_since_s_.erase(index);
    } else {
      idle_since_s_.emplace(index, now_s);
    }
  }
}

void JobsService::RenderMetrics(collect::Format format, std::string* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  const double now = NowS();
  auto gpu_labels = [this](unsigned index) {
    std::string l = "gpu=\"" + std::to_string(index) + "\",uuid=\"";
    auto it = gpu_ids_.find(index);
    if (it != gpu_ids_.end()) collect::AppendEscapedLabelValue(&l, it->second.second);
    return l + "\"";
  };
  auto labels_of = [this](const std::string& key) {
    auto m = meta_.find(key);
    static const JobMeta kNone;
    const JobMeta& meta = m == meta_.end() ? kNone : m->second;
    return JobLabels(VisibleJobId(key), meta.user,
                     meta.team.empty() ? std::string(jobs::kUnassignedTeam) : meta.team,
                     meta.partition);
  };

  Header(out, format, "gpu_allocation_info", "gauge", "",
         "1 for each GPU and the job holding it (job labels live here, not on device series).");
  for (const auto& [gpu, keys] : allocations_)
    for (const std::string& key : keys)
      Sample(out, "gpu_allocation_info", Join(gpu_labels(gpu), labels_of(key)), 1);

  Header(out, format, "gpu_idle_allocated_gpus", "gauge", "",
         "Allocated GPUs idle (utilization at or below jobs.idle_threshold) for at least "
         "jobs.idle_window.");
  double idle_gpus = 0;
  for (const auto& [gpu, since] : idle_since_s_)
    if (now - since >= config_.jobs.idle_window_s) idle_gpus += 1;
  Sample(out, "gpu_idle_allocated_gpus", "", idle_gpus);
  Header(out, format, "gpu_idle_streak_seconds", "gauge", "seconds",
         "How long an allocated GPU has been idle; 0 when active.");
  for (const auto& [gpu, keys] : allocations_) {
    auto it = idle_since_s_.find(gpu);
    Sample(out, "gpu_idle_streak_seconds", gpu_labels(gpu),
           it == idle_since_s_.end() ? 0 : now - it->second);
  }

  Header(out, format, "gpu_jobs", "gauge", "",
         "Jobs by state (Slurm's states; process jobs RUNNING).");
  std::map<std::string, double> states = jobs_by_state_;
  for (const auto& [key, meta] : meta_)
    if (meta.source == "process") states["RUNNING"] += 1;
  for (const auto& [state, n] : states) {
    std::string l = "state=\"";
    collect::AppendEscapedLabelValue(&l, state);
    Sample(out, "gpu_jobs", l + "\"", n);
  }

  // Per running job.
  struct PerJob {
    const char* name;
    const char* type;
    const char* unit;
    const char* help;
  };
  const PerJob families[] = {
      {"gpu_job_gpus", "gauge", "", "GPUs allocated to the job."},
      {"gpu_job_gpu_seconds_total", "counter", "", "Allocated GPUs x run time so far."},
      {"gpu_job_energy_joules_total", "counter", "joules",
       "Energy used by the job's GPUs since it started."},
      {"gpu_job_sm_utilization_ratio", "gauge", "ratio",
       "SM utilization over the job's GPUs and lifetime: time-weighted avg, or max (stat label)."},
      {"gpu_job_memory_peak_bytes", "gauge", "bytes", "Peak device memory used on any job GPU."},
      {"gpu_job_memory_used_ratio", "gauge", "ratio",
       "Device memory used / total now, highest over the job's GPUs."},
      {"gpu_job_throttle_seconds_total", "counter", "",
       "GPU-seconds during which each clock-event reason was active on the job's GPUs."},
      {"gpu_job_ecc_errors_total", "counter", "", "ECC errors on the job's GPUs during the job."},
      {"gpu_job_xid_errors_total", "counter", "", "XID events on the job's GPUs during the job."},
      {"gpu_job_idle_gpu_seconds_total", "counter", "",
       "GPU-seconds the job's GPUs spent at or below jobs.idle_threshold."},
      {"gpu_job_idle_streak_seconds", "gauge", "seconds",
       "How long all of the job's GPUs have been idle; 0 when any is active."},
  };
  for (const PerJob& f : families) {
    Header(out, format, f.name, f.type, f.unit, f.help);
    const std::string name = f.name;
    for (const jobs::JobGpuStats& s : running_) {
      const std::string l = labels_of(s.job_id);
      if (name == "gpu_job_gpus") {
        Sample(out, f.name, l, double(s.gpus.size()));
      } else if (name == "gpu_job_gpu_seconds_total") {
        Sample(out, f.name, l, s.gpu_seconds);
      } else if (name == "gpu_job_energy_joules_total") {
        Sample(out, f.name, l, s.energy_j);
      } else if (name == "gpu_job_sm_utilization_ratio") {
        Sample(out, f.name, Join(l, "stat=\"avg\""), s.util_avg_pct / 100);
        Sample(out, f.name, Join(l, "stat=\"max\""), s.util_max_pct / 100);
      } else if (name == "gpu_job_memory_peak_bytes") {
        Sample(out, f.name, l, double(s.memory_peak_bytes));
      } else if (name == "gpu_job_memory_used_ratio") {
        double ratio = 0;
        for (unsigned g : s.gpus)
          if (auto it = memory_used_ratio_.find(g); it != memory_used_ratio_.end())
            ratio = std::max(ratio, it->second);
        Sample(out, f.name, l, ratio);
      } else if (name == "gpu_job_throttle_seconds_total") {
        // Every reason from the job's start (0 until seen), so that rate() sees the first one.
        std::map<std::string, double> reasons = s.throttle_s;
        for (const collect::ClockEventReason& r : collect::kClockEventReasons)
          reasons.emplace(std::string(r.label), 0.0);
        for (const auto& [reason, seconds] : reasons)
          Sample(out, f.name, Join(l, "reason=\"" + reason + "\""), seconds);
      } else if (name == "gpu_job_ecc_errors_total") {
        Sample(out, f.name, Join(l, "type=\"corrected\""), double(s.ecc_corrected));
        Sample(out, f.name, Join(l, "type=\"uncorrected\""), double(s.ecc_uncorrected));
      } else if (name == "gpu_job_xid_errors_total") {
        Sample(out, f.name, l, double(s.xid_count));
      } else if (name == "gpu_job_idle_gpu_seconds_total") {
        Sample(out, f.name, l, s.idle_gpu_seconds);
      } else if (name == "gpu_job_idle_streak_seconds") {
        double streak = s.gpus.empty() ? 0 : 1e300;
        for (unsigned g : s.gpus) {
          auto it = idle_since_s_.find(g);
          streak = std::min(streak, it == idle_since_s_.end() ? 0 : now - it->second);
        }
        Sample(out, f.name, l, streak);
      }
    }
  }

  auto histogram = [&](const Histogram& h, const char* name, const char* help) {
    Header(out, format, name, "histogram", "seconds", help);
    for (const auto& [partition, counts] : h.counts) {
      std::string p = "partition=\"";
      collect::AppendEscapedLabelValue(&p, partition);
      p += '"';
      std::uint64_t cumulative = 0;
      for (size_t i = 0; i <= h.bounds.size(); ++i) {
        cumulative += counts[i];
        std::string le;
        if (i == h.bounds.size()) {
          le = "+Inf";
        } else {
          collect::AppendValue(&le, h.bounds[i]);
          // OpenMetrics wants canonical floats in le ("1.0"); text 0.0.4 accepts either.
          if (le.find_first_of(".e") == std::string::npos) le += ".0";
        }
        Sample(out, std::string(name) + "_bucket", p + ",le=\"" + le + "\"", double(cumulative));
      }
      Sample(out, std::string(name) + "_sum", p, h.sums.at(partition));
      Sample(out, std::string(name) + "_count", p, double(cumulative));
    }
  };
  histogram(queue_wait_, "gpu_job_queue_wait_seconds",
            "Jobs that started, by partition: start - eligible time.");
  histogram(submit_wait_, "gpu_job_submit_wait_seconds",
            "Jobs that started, by partition: start - submit time.");
  histogram(start_latency_, "gpu_job_start_latency_seconds",
            "Allocation start to the first activity on an allocated GPU.");
  histogram(run_time_, "gpu_job_run_seconds", "Jobs that ended, by partition: end - start.");

  Header(out, format, "gpuwarden_job_record_errors_total", "counter", "",
         "Job records that could not be written.");
  Sample(out, "gpuwarden_job_record_errors_total", "", double(record_errors_));
  if (!poller_) return;
  const jobs::SlurmHealth health = poller_->Health();
  Header(out, format, "gpuwarden_slurm_up", "gauge", "", "1 if the last squeue poll succeeded.");
  Sample(out, "gpuwarden_slurm_up", "", health.up ? 1 : 0);
  Header(out, format, "gpuwarden_slurm_last_success_timestamp_seconds", "gauge", "seconds",
         "When squeue last answered (unix seconds; 0 if never).");
  Sample(out, "gpuwarden_slurm_last_success_timestamp_seconds", "",
         health.ever_succeeded ? health.last_success_s : 0);
  Header(out, format, "gpuwarden_slurm_polls_total", "counter", "", "squeue polls.");
  Sample(out, "gpuwarden_slurm_polls_total", "", double(health.polls_total));
  Header(out, format, "gpuwarden_slurm_poll_failures_total", "counter", "",
         "squeue polls that failed (timed out, exit code, bad JSON).");
  Sample(out, "gpuwarden_slurm_poll_failures_total", "", double(health.failures_total));
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
      r.job_id = VisibleJobId(key);
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
    out.push_back(std::move(r));
  };
  for (const jobs::JobGpuStats& s : running_) add(s.job_id, s);
  for (const auto& [key, meta] : meta_) add(key, std::nullopt);
  return out;
}

std::string JobsService::JobsJson(const JobsQuery& query) const {
  std::vector<jobs::JobRecord> running;
  double now = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    running = RunningRecords();
    now = NowS();
  }
  nlohmann::json list = nlohmann::json::array();
  auto keep = [&query](const jobs::JobRecord& r) {
    return query.team.empty() || r.team == query.team;
  };
  for (const jobs::JobRecord& r : running)
    if (keep(r)) list.push_back(nlohmann::json::parse(jobs::JobRecordToJson(r)));
  if (!query.running_only && store_) {
    auto records = store_->ReadAll();
    if (records.ok()) {
      for (auto it = records->rbegin(); it != records->rend(); ++it) {
        if (!keep(*it)) continue;
        if (query.since_s > 0 && double(it->end_time) < now - query.since_s) continue;
        list.push_back(nlohmann::json::parse(jobs::JobRecordToJson(*it)));
      }
    } else {
      log_->Error("jobs: reading the records: " + records.error().message);
    }
  }
  return nlohmann::json{{"status", "success"}, {"data", {{"jobs", list}}}}.dump();
}

std::optional<std::string> JobsService::JobJson(const std::string& job_id) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const jobs::JobRecord& r : RunningRecords())
      if (r.job_id == job_id)
        return nlohmann::json{{"status", "success"},
                              {"data", nlohmann::json::parse(jobs::JobRecordToJson(r))}}
            .dump();
  }
  if (!store_) return std::nullopt;
  auto found = store_->Find(job_id);
  if (!found.ok() || !*found) return std::nullopt;
  return nlohmann::json{{"status", "success"},
                        {"data", nlohmann::json::parse(jobs::JobRecordToJson(**found))}}
      .dump();
}

void JobsService::RegisterRoutes(http::Server* server) {
  server->Get("/api/gw/v1/jobs", [this](const http::Request& req, http::Response& res) {
    JobsQuery q;
    const std::string running = req.param("running");
    q.running_only = running == "1" || running == "true";
    q.team = req.param("team");
    if (const std::string since = req.param("since"); !since.empty()) {
      if (!ParseDurationSeconds(since, &q.since_s) || q.since_s <= 0)
        return ErrorJson(res, 400, "bad_data",
                         "since: expected a duration such as 1h or 30m, got '" + since + "'");
    }
    res.body = JobsJson(q);
    res.content_type = "application/json";
  });
  server->GetPrefix("/api/gw/v1/jobs/", [this](const http::Request& req, http::Response& res) {
    const std::string id = req.path.substr(std::string_view("/api/gw/v1/jobs/").size());
    auto body = id.empty() ? std::nullopt : JobJson(id);
    if (!body) return ErrorJson(res, 404, "not_found", "no such job: " + id);
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

}  // namespace gw::cli
