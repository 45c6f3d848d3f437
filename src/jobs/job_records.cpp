#include "jobs/job_records.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace gw::jobs {
namespace {

using nlohmann::json;

// Times: an unset time (0) is written as null, and read back from null or 0 alike (records
// written before null was used have 0).
json TimeOrNull(double t) {
  return t > 0 ? json(t) : json(nullptr);
}
json TimeOrNull(std::int64_t t) {
  return t > 0 ? json(t) : json(nullptr);
}
template <class T>
T ReadTime(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return T{0};
  return it->get<T>();
}

// "gpus" holds the index of every GPU the job ran on, whole or through a MIG instance (what
// readers that know nothing of MIG expect); "mig" names the instances, and a GPU that has one
// there is not held whole (a MIG-enabled GPU runs work only in its instances).
json StatsToJson(const JobGpuStats& s) {
  std::vector<unsigned> gpus;
  for (unsigned unit : s.gpus) gpus.push_back(UnitGpu(unit));
  std::sort(gpus.begin(), gpus.end());
  gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
  json j = {{"gpus", gpus},
            {"start_s", TimeOrNull(s.start_s)},
            {"end_s", TimeOrNull(s.end_s)},
            {"gpu_seconds", s.gpu_seconds},
            {"observed_gpu_seconds", s.observed_gpu_seconds},
            {"energy_j", s.energy_j},
            {"power_integral_j", s.power_integral_j},
            {"util_avg", s.util_avg},
            {"util_max", s.util_max},
            {"memory_peak_bytes", s.memory_peak_bytes},
            {"throttle_s", s.throttle_s},
            {"ecc_corrected", s.ecc_corrected},
            {"ecc_uncorrected", s.ecc_uncorrected},
            {"xid_count", s.xid_count},
            {"idle_gpu_seconds", s.idle_gpu_seconds},
            {"idle_while_allocated", s.idle_while_allocated}};
  if (s.first_activity_s) j["first_activity_s"] = *s.first_activity_s;
  if (s.start_latency_s) j["start_latency_s"] = *s.start_latency_s;
  if (s.sm_active_avg) j["sm_active_avg"] = *s.sm_active_avg;
  if (s.sm_active_max) j["sm_active_max"] = *s.sm_active_max;
  if (s.tensor_active_avg) j["tensor_active_avg"] = *s.tensor_active_avg;
  if (s.tensor_active_max) j["tensor_active_max"] = *s.tensor_active_max;
  if (!s.mig.empty()) {
    json mig = json::array();
    for (const MigUnitInfo& m : s.mig)
      mig.push_back({{"gpu", m.gpu},
                     {"mig_instance", m.gpu_instance_id},
                     {"mig_profile", m.profile},
                     {"mig_uuid", m.uuid},
                     {"share", m.share}});
    j["mig"] = std::move(mig);
    j["gpu_equivalents"] = GpuEquivalents(s);
  }
  return j;
}

JobGpuStats StatsFromJson(const json& j, const std::string& job_id) {
  JobGpuStats s;
  s.job_id = job_id;
  s.gpus = j.value("gpus", std::vector<unsigned>{});
  s.start_s = ReadTime<double>(j, "start_s");
  s.end_s = ReadTime<double>(j, "end_s");
  s.gpu_seconds = j.value("gpu_seconds", 0.0);
  s.observed_gpu_seconds = j.value("observed_gpu_seconds", 0.0);
  s.energy_j = j.value("energy_j", 0.0);
  s.power_integral_j = j.value("power_integral_j", 0.0);
  // Ratios 0-1; records written before 2026-12 kept percent under "util_avg_pct"/"util_max_pct".
  s.util_avg =
      j.contains("util_avg") ? j.value("util_avg", 0.0) : j.value("util_avg_pct", 0.0) / 100;
  s.util_max =
      j.contains("util_max") ? j.value("util_max", 0.0) : j.value("util_max_pct", 0.0) / 100;
  s.memory_peak_bytes = j.value("memory_peak_bytes", std::uint64_t{0});
  s.throttle_s = j.value("throttle_s", std::map<std::string, double>{});
  s.ecc_corrected = j.value("ecc_corrected", std::uint64_t{0});
  s.ecc_uncorrected = j.value("ecc_uncorrected", std::uint64_t{0});
  s.xid_count = j.value("xid_count", std::uint64_t{0});
  s.idle_gpu_seconds = j.value("idle_gpu_seconds", 0.0);
  s.idle_while_allocated = j.value("idle_while_allocated", false);
  if (j.contains("first_activity_s")) s.first_activity_s = j["first_activity_s"].get<double>();
  if (j.contains("start_latency_s")) s.start_latency_s = j["start_latency_s"].get<double>();
  // Older records have none of these: absent, never 0.
  auto optional = [&j](const char* key, std::optional<double>* to) {
    if (j.contains(key) && j[key].is_number()) *to = j[key].get<double>();
  };
  optional("sm_active_avg", &s.sm_active_avg);
  optional("sm_active_max", &s.sm_active_max);
  optional("tensor_active_avg", &s.tensor_active_avg);
  optional("tensor_active_max", &s.tensor_active_max);
  if (j.contains("mig") && j["mig"].is_array()) {
    // The GPUs of the instances were listed in "gpus" too: they are not held whole.
    for (const json& m : j["mig"]) {
      const unsigned gpu = m.value("gpu", 0u);
      s.gpus.erase(std::remove(s.gpus.begin(), s.gpus.end(), gpu), s.gpus.end());
    }
    for (const json& m : j["mig"]) {
      MigUnitInfo info;
      info.gpu = m.value("gpu", 0u);
      info.gpu_instance_id = m.value("mig_instance", 0u);
      info.profile = m.value("mig_profile", "");
      info.uuid = m.value("mig_uuid", "");
      info.share = m.value("share", 0.0);
      s.gpus.push_back(info.unit());
      s.mig.push_back(std::move(info));
    }
    std::sort(s.gpus.begin(), s.gpus.end());
  }
  return s;
}

}  // namespace

std::string JobRecordToJson(const JobRecord& r) {
  json j = {{"job_id", r.job_id},
            {"source", r.source},
            {"name", r.name},
            {"user", r.user},
            {"account", r.account},
            {"partition", r.partition},
            {"team", r.team},
            {"state", r.state},
            {"state_reason", r.state_reason},
            {"submit_time", TimeOrNull(r.submit_time)},
            {"eligible_time", TimeOrNull(r.eligible_time)},
            {"start_time", TimeOrNull(r.start_time)},
            {"end_time", TimeOrNull(r.end_time)}};
  if (r.exit_code) j["exit_code"] = *r.exit_code;
  if (r.queue_wait_s) j["queue_wait_s"] = *r.queue_wait_s;
  if (r.submit_wait_s) j["submit_wait_s"] = *r.submit_wait_s;
  if (r.gpu) j["gpu"] = StatsToJson(*r.gpu);
  if (r.cost)
    j["cost"] = {
        {"currency", r.cost->currency},       {"allocated_gpu_hours", r.cost->allocated_gpu_hours},
        {"energy_kwh", r.cost->energy_kwh},   {"allocation_cost", r.cost->allocation_cost},
        {"energy_cost", r.cost->energy_cost}, {"idle_allocated_cost", r.cost->idle_allocated_cost},
        {"total_cost", r.cost->Total()}};
  if (r.outcome) {
    json evidence = json::array();
    for (const JobOutcomeEvidence& e : r.outcome->evidence) {
      json ej = {
          {"time", TimeOrNull(e.time)}, {"kind", e.kind}, {"value", e.value}, {"detail", e.detail}};
      if (e.gpu) ej["gpu"] = *e.gpu;
      evidence.push_back(std::move(ej));
    }
    j["outcome"] = {{"outcome", r.outcome->outcome},
                    {"cause", r.outcome->cause},
                    {"summary", r.outcome->summary},
                    {"evidence", std::move(evidence)}};
  }
  if (r.throughput) {
    const JobThroughputRecord& t = *r.throughput;
    json tj = {
        {"unit", t.unit}, {"metric", t.metric}, {"total", t.total}, {"avg_per_s", t.avg_per_s}};
    if (t.per_gpu_hour) tj["per_gpu_hour"] = *t.per_gpu_hour;
    if (t.per_kwh) tj["per_kwh"] = *t.per_kwh;
    if (t.per_cost) tj["per_cost"] = *t.per_cost;
    j["throughput"] = std::move(tj);
  }
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Expected<JobRecord> JobRecordFromJson(std::string_view line) {
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("job_id")) return Error{"not a job record"};
  try {
    JobRecord r;
    r.job_id = j.value("job_id", "");
    r.source = j.value("source", "");
    r.name = j.value("name", "");
    r.user = j.value("user", "");
    r.account = j.value("account", "");
    r.partition = j.value("partition", "");
    r.team = j.value("team", "");
    r.state = j.value("state", "");
    r.state_reason = j.value("state_reason", "");
    r.submit_time = ReadTime<std::int64_t>(j, "submit_time");
    r.eligible_time = ReadTime<std::int64_t>(j, "eligible_time");
    r.start_time = ReadTime<std::int64_t>(j, "start_time");
    r.end_time = ReadTime<std::int64_t>(j, "end_time");
    if (j.contains("exit_code")) r.exit_code = j["exit_code"].get<int>();
    if (j.contains("queue_wait_s")) r.queue_wait_s = j["queue_wait_s"].get<std::int64_t>();
    if (j.contains("submit_wait_s")) r.submit_wait_s = j["submit_wait_s"].get<std::int64_t>();
    if (j.contains("gpu") && j["gpu"].is_object()) r.gpu = StatsFromJson(j["gpu"], r.job_id);
    if (j.contains("cost") && j["cost"].is_object()) {
      const json& c = j["cost"];
      JobCostRecord cost;
      cost.currency = c.value("currency", "");
      cost.allocated_gpu_hours = c.value("allocated_gpu_hours", 0.0);
      cost.energy_kwh = c.value("energy_kwh", 0.0);
      cost.allocation_cost = c.value("allocation_cost", 0.0);
      cost.energy_cost = c.value("energy_cost", 0.0);
      cost.idle_allocated_cost = c.value("idle_allocated_cost", 0.0);
      r.cost = cost;  // total_cost is derived
    }
    if (j.contains("outcome") && j["outcome"].is_object()) {
      const json& o = j["outcome"];
      JobOutcomeRecord outcome;
      outcome.outcome = o.value("outcome", "");
      outcome.cause = o.value("cause", "");
      outcome.summary = o.value("summary", "");
      if (o.contains("evidence") && o["evidence"].is_array()) {
        for (const json& ej : o["evidence"]) {
          JobOutcomeEvidence e;
          e.time = ReadTime<std::int64_t>(ej, "time");
          if (ej.contains("gpu") && ej["gpu"].is_number_unsigned())
            e.gpu = ej["gpu"].get<unsigned>();
          e.kind = ej.value("kind", "");
          e.value = ej.value("value", 0.0);
          e.detail = ej.value("detail", "");
          outcome.evidence.push_back(std::move(e));
        }
      }
      r.outcome = std::move(outcome);
    }
    if (j.contains("throughput") && j["throughput"].is_object()) {
      const json& t = j["throughput"];
      JobThroughputRecord tr;
      tr.unit = t.value("unit", "");
      tr.metric = t.value("metric", "");
      tr.total = t.value("total", 0.0);
      tr.avg_per_s = t.value("avg_per_s", 0.0);
      auto optional = [&t](const char* key, std::optional<double>* to) {
        if (t.contains(key) && t[key].is_number()) *to = t[key].get<double>();
      };
      optional("per_gpu_hour", &tr.per_gpu_hour);
      optional("per_kwh", &tr.per_kwh);
      optional("per_cost", &tr.per_cost);
      r.throughput = std::move(tr);
    }
    return r;
  } catch (const json::exception& e) {
    return Error{std::string("malformed job record: ") + e.what()};
  }
}

namespace {

StoredJobRecord StoredOf(const JobRecord& r, std::string line) {
  StoredJobRecord stored;
  stored.job_id = r.job_id;
  stored.team = r.team;
  stored.partition = r.partition;
  if (r.outcome) {
    stored.outcome = r.outcome->outcome;
    stored.cause = r.outcome->cause;
  }
  stored.start_time = r.start_time;
  stored.end_time = r.end_time;
  stored.json = std::move(line);
  return stored;
}

}  // namespace

Expected<std::unique_ptr<JobRecordStore>> JobRecordStore::Open(const std::string& dir,
                                                               JobRecordStoreOptions options) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error{dir + ": " + ec.message()};
  std::unique_ptr<JobRecordStore> store(new JobRecordStore(dir + "/jobs.jsonl", options));
  if (options.memory_records == 0) return store;
  std::ifstream in(store->path_);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    Expected<JobRecord> r = JobRecordFromJson(line);
    if (!r.ok()) continue;  // a torn line
    // Kept as this version writes it (unset times null, ratios), so that the API serves every
    // record in one form whichever version wrote it.
    store->Remember(StoredOf(*r, JobRecordToJson(*r)));
  }
  return store;
}

void JobRecordStore::Remember(StoredJobRecord record) {
  newest_end_ = std::max(newest_end_, record.end_time);
  latest_seq_[record.job_id] = first_seq_ + recent_.size();
  recent_.push_back(std::move(record));
  auto too_old = [this](const StoredJobRecord& r) {
    return options_.memory_keep_s > 0 &&
           static_cast<double>(r.end_time) <
               static_cast<double>(newest_end_) - options_.memory_keep_s;
  };
  while (!recent_.empty() &&
         (recent_.size() > options_.memory_records || too_old(recent_.front()))) {
    auto latest = latest_seq_.find(recent_.front().job_id);
    if (latest != latest_seq_.end() && latest->second == first_seq_) latest_seq_.erase(latest);
    recent_.pop_front();
    ++first_seq_;
  }
}

void JobRecordStore::VisitRecent(const std::function<bool(const StoredJobRecord&)>& visit) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = recent_.rbegin(); it != recent_.rend(); ++it)
    if (!visit(*it)) return;
}

std::optional<std::string> JobRecordStore::RecentJson(const std::string& job_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = latest_seq_.find(job_id);
  if (it == latest_seq_.end()) return std::nullopt;
  return recent_[it->second - first_seq_].json;
}

bool JobRecordStore::RecentlyRecorded(const std::string& job_id, std::int64_t start_time,
                                      std::int64_t end_time) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = latest_seq_.find(job_id);
  if (it == latest_seq_.end()) return false;
  const StoredJobRecord& r = recent_[it->second - first_seq_];
  return r.start_time == start_time && r.end_time == end_time;
}

std::size_t JobRecordStore::RecentCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  return recent_.size();
}

Status JobRecordStore::Append(const JobRecord& record) {
  std::string json = JobRecordToJson(record);
  const std::string line = json + "\n";
  std::lock_guard<std::mutex> file_lock(file_mu_);
  Status written = AppendLine(line);
  std::lock_guard<std::mutex> lock(mu_);
  if (options_.memory_records > 0) Remember(StoredOf(record, std::move(json)));
  return written;
}

Status JobRecordStore::AppendLine(const std::string& line) {
  const int fd = open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (fd < 0) return Error{path_ + ": " + std::strerror(errno)};
  // A torn previous line (crash) must not swallow this record: start on a fresh line.
  struct stat st {};
  std::string data = line;
  if (fstat(fd, &st) == 0 && st.st_size > 0) {
    char last = '\n';
    const int rfd = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (rfd >= 0) {
      if (pread(rfd, &last, 1, st.st_size - 1) != 1) last = '\n';
      close(rfd);
    }
    if (last != '\n') data = "\n" + line;
  }
  std::size_t written = 0;
  while (written < data.size()) {
    const ssize_t n = write(fd, data.data() + written, data.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      return Error{path_ + ": " + std::strerror(err)};
    }
    written += static_cast<std::size_t>(n);
  }
  const bool synced = fsync(fd) == 0;
  close(fd);
  if (!synced) return Error{path_ + ": fsync failed"};
  return Status::Ok();
}

Expected<std::vector<JobRecord>> JobRecordStore::ReadAll() const {
  std::lock_guard<std::mutex> lock(file_mu_);
  std::vector<JobRecord> out;
  std::ifstream in(path_);
  if (!in) return out;  // no jobs finished yet
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    Expected<JobRecord> r = JobRecordFromJson(line);
    if (r.ok()) out.push_back(std::move(r.value()));
  }
  return out;
}

Expected<std::optional<JobRecord>> JobRecordStore::Find(const std::string& job_id) const {
  Expected<std::vector<JobRecord>> all = ReadAll();
  if (!all.ok()) return all.error();
  std::optional<JobRecord> found;
  for (JobRecord& r : *all)
    if (r.job_id == job_id) found = std::move(r);
  return found;
}

JobLedger::JobLedger(TeamMap teams, JobRecordStore* store, JobStatsOptions options)
    : teams_(std::move(teams)), store_(store), stats_(options) {}

JobRecord JobLedger::MakeRecord(const SlurmJob& job, std::string_view final_state,
                                std::optional<JobGpuStats> gpu) const {
  JobRecord r;
  r.job_id = job.id;
  r.source = job.source.empty() ? "slurm" : job.source;
  r.name = job.name;
  r.user = job.user;
  r.account = job.account;
  r.partition = job.partition;
  r.team = teams_.TeamOfJob(job);
  r.state = std::string(final_state);
  r.state_reason = job.state_reason;
  r.exit_code = job.exit_code;
  r.submit_time = job.submit_time;
  r.eligible_time = job.eligible_time;
  if (job.started()) {
    r.start_time = job.start_time;
    r.end_time = job.end_time;
    r.queue_wait_s = job.QueueWaitS();
    if (job.submit_time > 0) r.submit_wait_s = job.start_time - job.submit_time;
  } else {
    r.end_time = job.end_time;
  }
  r.gpu = std::move(gpu);
  return r;
}

Status JobLedger::OnEvent(const JobEvent& event) {
  switch (event.kind) {
    case JobEventKind::kStarted:
      if (!event.job.gpu_indices.empty())
        stats_.Begin(event.job_id, event.job.gpu_indices, static_cast<double>(event.time));
      return Status::Ok();
    case JobEventKind::kFinished:
    case JobEventKind::kVanished: {
      std::optional<JobGpuStats> gpu = stats_.End(event.job_id, static_cast<double>(event.time));
      const std::string state =
          event.kind == JobEventKind::kVanished ? "VANISHED" : event.job.state_text;
      JobRecord record = MakeRecord(event.job, state, std::move(gpu));
      if (event.kind == JobEventKind::kVanished && record.start_time > 0)
        record.end_time = event.time;  // the projected end is not an end
      if (cost_lookup_ && record.start_time > 0) record.cost = cost_lookup_(record.job_id);
      if (outcome_lookup_) record.outcome = outcome_lookup_(record);
      if (store_) return store_->Append(record);
      finished_.push_back(std::move(record));
      return Status::Ok();
    }
    default:
      return Status::Ok();
  }
}

Status JobLedger::OnProcesses(const std::vector<AttributedGpuProcess>& processes, double now_s) {
  // Process jobs live in the stats tracker under a prefixed key, apart from Slurm ids.
  std::map<std::string, std::vector<unsigned>> seen;
  std::map<std::string, const ProcessAttribution*> first;
  for (const AttributedGpuProcess& p : processes) {
    if (p.process.job_source != "gpuwarden-env") continue;
    const std::string key = "process:" + p.process.job_id;
    seen[key].push_back(p.gpu);
    first.emplace(key, &p.process);
  }
  for (auto& [key, gpus] : seen) {
    if (process_jobs_.count(key)) continue;
    const ProcessAttribution& p = *first[key];
    process_jobs_[key] = ProcessJob{p.user, teams_.TeamOf("", p.user, p.gpuwarden_team), now_s};
    stats_.Begin(key, gpus, now_s);
  }
  Status status = Status::Ok();
  for (auto it = process_jobs_.begin(); it != process_jobs_.end();) {
    if (seen.count(it->first)) {
      ++it;
      continue;
    }
    JobRecord r;
    r.job_id = it->first.substr(8);
    r.source = "process";
    r.user = it->second.user;
    r.team = it->second.team;
    r.state = "ENDED";
    r.start_time = static_cast<std::int64_t>(it->second.start_s);
    r.end_time = static_cast<std::int64_t>(now_s);
    r.gpu = stats_.End(it->first, now_s);
    if (r.gpu) r.gpu->job_id = r.job_id;
    if (cost_lookup_) r.cost = cost_lookup_(r.job_id);
    if (outcome_lookup_) r.outcome = outcome_lookup_(r);
    if (store_) {
      Status s = store_->Append(r);
      if (!s.ok()) status = s;
    } else {
      finished_.push_back(std::move(r));
    }
    it = process_jobs_.erase(it);
  }
  return status;
}

std::vector<JobRecord> JobLedger::TakeFinished() {
  std::vector<JobRecord> out;
  out.swap(finished_);
  return out;
}

std::vector<JobGpuStats> JobLedger::Running(double now_s) const {
  std::vector<JobGpuStats> out;
  for (const std::string& id : stats_.RunningJobs())
    if (auto s = stats_.Current(id, now_s)) out.push_back(std::move(*s));
  return out;
}

}  // namespace gw::jobs
