// QueueApi: the poll's pending jobs rendered once per poll; the header written per request.
#include "serve/queue_api.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace gw::serve {

QueueApi::QueueApi(const jobs::JobSource* poller, const jobs::TeamMap* teams)
    : poller_(poller), teams_(teams) {}

std::string QueueApi::JobJson(const jobs::QueuedJob& q, const std::string& team) {
  const jobs::SlurmJob& j = q.job;
  auto time_or_null = [](std::int64_t t) { return t > 0 ? nlohmann::json(t) : nlohmann::json(); };
  nlohmann::json out = {
      {"job_id", j.id},
      {"name", j.name},
      {"user", j.user},
      {"account", j.account},
      {"team", team},
      {"partition", j.partition},
      {"qos", j.qos},
      {"gpus", q.gpus},
      {"submit_time", time_or_null(j.submit_time)},
      {"eligible_time", time_or_null(j.eligible_time)},
      {"eligible", q.eligible},
      {"wait_s", q.wait_s},
      {"submit_wait_s", q.submit_wait_s},
      {"reason", j.state_reason},
      {"priority", j.priority},
      {"position", q.position},
      // The backfill scheduler's estimate, when it made one (pending start_time > 0).
      {"start_estimate", time_or_null(j.start_time)},
  };
  return out.dump();
}

void QueueApi::Refresh() const {
  jobs::SlurmHealth health = poller_->Health();
  if (rendered_any_ && health.successes_total() == revision_) {
    health_ = health;  // failures move only the health
    return;
  }
  std::vector<jobs::SlurmJob> pending = poller_->PendingJobs(&health);
  health_ = health;
  revision_ = health.successes_total();
  rendered_any_ = true;
  rendered_.clear();
  for (const jobs::QueuedJob& q : jobs::PendingQueue(std::move(pending), health.last_success_s)) {
    std::string team = teams_->TeamOfJob(q.job);
    std::string json = JobJson(q, team);
    rendered_.push_back({std::move(team), std::move(json)});
  }
}

std::string QueueApi::Json(std::string_view team, double now_s) const {
  if (!poller_) {
    return R"js({"data":{"error":"this agent polls no scheduler (jobs.scheduler is not slurm)",)js"
           R"js("jobs":[],"known":false,"polled_at":null,"scheduler":"none","staleness_s":null,)js"
           R"js("up":false},"status":"success"})js";
  }
  std::lock_guard<std::mutex> lock(mu_);
  Refresh();
  using nlohmann::json;
  const bool known = health_.ever_succeeded;
  const bool attempted = health_.polls_total > 0;
  const std::string error = health_.up                   ? std::string()
                            : attempted                  ? health_.last_error
                            : poller_->Name() == "slurm" ? std::string("no squeue poll yet")
                                                         : "no " + poller_->Name() + " poll yet";
  const json polled_at = known ? json(health_.last_success_s) : json();
  const json staleness =
      attempted ? json(std::round(health_.StalenessS(now_s) * 1000) / 1000) : json();
  // Keys in the order nlohmann writes them, with the rendered jobs spliced in.
  std::string body = "{\"data\":{\"error\":" + json(error).dump() + ",\"jobs\":[";
  bool first = true;
  for (const Rendered& r : rendered_) {
    if (!team.empty() && r.team != team) continue;
    if (!first) body += ',';
    first = false;
    body += r.json;
  }
  body += "],\"known\":" + json(known).dump() + ",\"polled_at\":" + polled_at.dump() +
          ",\"scheduler\":" + json(poller_->Name()).dump() +
          ",\"staleness_s\":" + staleness.dump() + ",\"up\":" + json(health_.up).dump() +
          "},\"status\":\"success\"}";
  return body;
}

}  // namespace gw::serve
