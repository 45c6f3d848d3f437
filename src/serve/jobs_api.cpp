// The task layer's read side (serve/jobs_service.h): running jobs as records, the jobs and queue
// documents and their routes, and the platform layer's views. Memory only: no disk read, no
// scheduler call on a request.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <tuple>

#include "base/clock.h"
#include "http/prom_api.h"
#include "http/server.h"
#include "serve/jobs_service.h"

namespace gw::serve {

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
    if (auto j = slurm_jobs.find(key);
        j != slurm_jobs.end() && (meta.source == "slurm" || meta.source == "kubernetes")) {
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
    if (cost_lookup_) r.cost = cost_lookup_(r.job_id);             // so far
    if (throughput_lookup_) r.throughput = throughput_lookup_(r);  // so far (training_service.h)
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
  return queue_api_->Json(team, SystemClock().NowSeconds());  // the poller's clock
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
          h.pod_namespace = m->second.pod_namespace;
          h.pod_name = m->second.pod_name;
        }
        if (h.team.empty()) h.team = std::string(jobs::kUnassignedTeam);
        if (auto port = metrics_ports_.find(key); port != metrics_ports_.end())
          h.metrics_port = port->second;
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
