#include "serve/findings_service.h"

#include <algorithm>
#include <chrono>
#include <string_view>

#include "base/clock.h"
#include "http/prom_api.h"
#include "http/prom_format.h"
#include "report/report.h"

namespace gw::serve {

namespace {

int64_t NowMs() {
  return SystemClock().NowMs();
}

}  // namespace

FindingsService::FindingsService(tsdb::DB* db, bool synchronous, Logger* log,
                                 const config::DiagnoseConfig& config, tsdb::Appender* appender)
    : db_(db), synchronous_(synchronous), log_(log), config_(config), appender_(appender) {}

FindingsService::~FindingsService() {
  Stop();
}

void FindingsService::Start() {
  if (synchronous_ || db_ == nullptr || thread_.joinable()) return;
  thread_ = std::thread([this] { Run(); });
}

void FindingsService::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void FindingsService::Tick(int64_t t_ms) {
  if (db_ == nullptr) return;
  bool due = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    latest_ms_ = std::max(latest_ms_, t_ms);
    if (last_eval_ms_ == 0 ||
        t_ms - last_eval_ms_ >= static_cast<int64_t>(config_.interval_s * 1000)) {
      last_eval_ms_ = t_ms;
      pending_ms_ = t_ms;
      due = true;
    }
  }
  if (due && synchronous_) {
    Evaluate(t_ms);
  } else if (due) {
    cv_.notify_all();
  }
  AppendToStore(t_ms);
}

void FindingsService::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stopping_ || pending_ms_ != 0; });
    if (stopping_) return;
    const int64_t t = pending_ms_;
    pending_ms_ = 0;
    lock.unlock();
    Evaluate(t);
    lock.lock();
  }
}

void FindingsService::Evaluate(int64_t t_ms) {
  const auto started = std::chrono::steady_clock::now();
  auto querier = db_->NewQuerier();
  diagnose::Options options;
  options.time_ms = t_ms;
  options.window_s = config_.window_s;
  options.thresholds = config_.thresholds;
  auto d = diagnose::Diagnose(*querier, engine_, options);
  const double took_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!d.ok()) {
    log_->Warn("diagnose: " + d.error().message);
    std::lock_guard<std::mutex> lock(mu_);
    evaluations_ += 1;
    errors_ += 1;
    last_duration_s_ = took_s;
    return;
  }
  for (const std::string& e : d->errors) log_->Debug("diagnose: " + e);
  std::vector<Figure> figures = BuildFigures(*d);
  const double errors = static_cast<double>(d->errors.size());
  auto shared = std::make_shared<const diagnose::Diagnosis>(std::move(*d));
  std::lock_guard<std::mutex> lock(mu_);
  cached_ = std::move(shared);
  figures_ = std::move(figures);
  evaluations_ += 1;
  errors_ += errors;
  last_duration_s_ = took_s;
  last_evaluated_ms_ = t_ms;
}

namespace {

constexpr const char* kFindings = "gpuwarden_findings";
constexpr const char* kFindingActive = "gpuwarden_finding_active";
constexpr diagnose::Severity kSeverities[] = {
    diagnose::Severity::kCritical, diagnose::Severity::kWarning, diagnose::Severity::kInfo};

}  // namespace

std::vector<FindingsService::Figure> FindingsService::BuildFigures(const diagnose::Diagnosis& d) {
  std::vector<Figure> out;
  // A count for every kind and severity, 0 included, so that a kind that clears reads 0.
  for (const diagnose::KindLayer& k : diagnose::Kinds()) {
    for (diagnose::Severity severity : kSeverities) {
      double n = 0;
      for (const diagnose::Finding& f : d.findings)
        if (f.active && f.kind == k.kind && f.layer == k.layer && f.severity == severity) ++n;
      out.push_back(Figure{kFindings,
                           {{"kind", std::string(k.kind)},
                            {"layer", std::string(diagnose::LayerName(k.layer))},
                            {"severity", std::string(diagnose::SeverityName(severity))}},
                           n});
    }
  }
  // One series per active finding: at most the findings of one evaluation (one per check and
  // subject), and a subject's labels stay put while the finding holds.
  for (const diagnose::Finding& f : d.findings) {
    if (!f.active) continue;
    Figure fig{kFindingActive, {}, 1};
    auto add = [&fig](const char* name, const std::string& value) {
      if (!value.empty()) fig.labels.emplace_back(name, value);
    };
    add("id", f.id);
    add("kind", f.kind);
    add("cause", f.cause);
    add("layer", std::string(diagnose::LayerName(f.layer)));
    add("severity", std::string(diagnose::SeverityName(f.severity)));
    add("gpu", f.subject.gpu);
    add("uuid", f.subject.uuid);
    add("job_id", f.subject.job);
    add("team", f.subject.team);
    add("partition", f.subject.partition);
    add("target", f.subject.target);
    out.push_back(std::move(fig));
  }
  return out;
}

void FindingsService::Walk(TaskFamilySink* sink, std::vector<TaskLabel>* scratch) const {
  if (db_ == nullptr) return;
  sink->Family("gpuwarden_diagnose_evaluations_total", "counter", "",
               "Findings evaluations (diagnose.interval of recorded time apart).");
  sink->Sample("gpuwarden_diagnose_evaluations_total", {}, evaluations_);
  sink->Family("gpuwarden_diagnose_errors_total", "counter", "",
               "Checks that could not run in an evaluation, and evaluations that failed.");
  sink->Sample("gpuwarden_diagnose_errors_total", {}, errors_);
  if (evaluations_ == 0) return;
  sink->Family("gpuwarden_diagnose_duration_seconds", "gauge", "seconds",
               "How long the last findings evaluation took.");
  sink->Sample("gpuwarden_diagnose_duration_seconds", {}, last_duration_s_);
  if (last_evaluated_ms_ == 0) return;  // every evaluation so far failed: no findings to show
  sink->Family("gpuwarden_diagnose_last_evaluation_timestamp_seconds", "gauge", "seconds",
               "The recorded time (end of the window) the exported findings were evaluated at.");
  sink->Sample("gpuwarden_diagnose_last_evaluation_timestamp_seconds", {},
               static_cast<double>(last_evaluated_ms_) / 1000);
  const char* family = nullptr;
  for (const Figure& fig : figures_) {
    if (family == nullptr || std::string_view(family) != fig.family) {
      family = fig.family;
      if (family == std::string_view(kFindings)) {
        sink->Family(kFindings, "gauge", "",
                     "Active findings (GET /api/gw/v1/findings) by kind, layer and severity.");
      } else {
        sink->Family(kFindingActive, "gauge", "",
                     "1 for each active finding, labelled with its id, kind, cause, layer, "
                     "severity and subject.");
      }
    }
    scratch->clear();
    for (const auto& [name, value] : fig.labels) scratch->push_back(TaskLabel{name, value});
    sink->Sample(fig.family, *scratch, fig.value);
  }
}

void FindingsService::RenderMetrics(collect::Format format, std::string* out) const {
  ExpositionSink sink(format, out);
  std::vector<TaskLabel> scratch;
  std::lock_guard<std::mutex> lock(mu_);
  Walk(&sink, &scratch);
}

void FindingsService::AppendToStore(int64_t t_ms) {
  if (appender_ == nullptr) return;
  if (!series_) series_ = std::make_unique<TaskSeriesRecorder>(appender_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    series_->BeginCycle(t_ms);
    Walk(series_.get(), &labels_);
    series_->EndCycle();  // a finding that ended gets a stale marker
  }
  (void)series_->Commit();  // the WAL write, outside the lock /metrics waits on
  if (series_->stats().errors > store_errors_seen_) {
    store_errors_seen_ = series_->stats().errors;
    log_->Warn("diagnose: some findings figures could not be appended to the store");
  }
}

void FindingsService::ServeReport(const http::Request& req, http::Response& res) {
  if (db_ == nullptr)
    return http::WriteApiError(res, 503, "unavailable",
                               "no history store: the report needs --data-dir");
  const std::string time = req.param("time");
  auto asked = report::ParseReportRequest(req.param("period"), req.param("format"));
  if (!asked.ok()) return http::WriteApiError(res, 400, "bad_data", asked.error().message);
  const double period_s = asked->period_s;
  int64_t t_ms = 0;
  if (!time.empty() && !http::ParsePromTime(time, &t_ms))
    return http::WriteApiError(res, 400, "bad_data",
                               "time: expected Unix seconds or RFC 3339, got '" + time + "'");
  if (time.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    t_ms = latest_ms_ != 0 ? latest_ms_ : NowMs();
  }
  // A report reads the whole period: one at a time, so that a retrying client cannot pile them up.
  std::unique_lock<std::mutex> busy(report_mu_, std::try_to_lock);
  if (!busy.owns_lock())
    return http::WriteApiError(res, 503, "unavailable",
                               "another report is being built; try again when it is done");
  auto querier = db_->NewQuerier();
  report::Options options;
  options.time_ms = t_ms;
  options.period_s = period_s;
  options.thresholds = config_.thresholds;
  auto r = report::Build(*querier, engine_, options);
  if (!r.ok()) return http::WriteApiError(res, 400, "bad_data", r.error().message);
  if (asked->json) {
    res.body = report::ToJson(*r);
    res.content_type = "application/json";
  } else {
    res.body = report::ToHtml(*r);
    res.content_type = "text/html; charset=utf-8";
  }
}

void FindingsService::RegisterRoutes(http::Server* server) {
  server->Get("/api/gw/v1/report",
              [this](const http::Request& req, http::Response& res) { ServeReport(req, res); });
  server->Get("/api/gw/v1/findings", [this](const http::Request& req, http::Response& res) {
    if (db_ == nullptr)
      return http::WriteApiError(res, 503, "unavailable",
                                 "no history store: findings need --data-dir");
    const diagnose::FindingFilter filter{req.param("gpu"), req.param("job"), req.param("team")};
    const std::string since = req.param("since"), time = req.param("time");
    double window_s = config_.window_s;
    if (!since.empty() && (!ParseDurationSeconds(since, &window_s) || window_s < 60))
      return http::WriteApiError(
          res, 400, "bad_data",
          "since: expected a duration of at least 1m such as 1h, got '" + since + "'");
    int64_t t_ms = 0;
    if (!time.empty() && !http::ParsePromTime(time, &t_ms))
      return http::WriteApiError(res, 400, "bad_data",
                                 "time: expected Unix seconds or RFC 3339, got '" + time + "'");
    std::shared_ptr<const diagnose::Diagnosis> d;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (time.empty() && window_s == config_.window_s) d = cached_;
      if (time.empty()) t_ms = latest_ms_ != 0 ? latest_ms_ : NowMs();
    }
    if (d == nullptr) {
      // Another window or time than the cached one (or none cached yet): evaluate now.
      auto querier = db_->NewQuerier();
      diagnose::Options options;
      options.time_ms = t_ms;
      options.window_s = window_s;
      options.thresholds = config_.thresholds;
      auto fresh = diagnose::Diagnose(*querier, engine_, options);
      if (!fresh.ok()) return http::WriteApiError(res, 400, "bad_data", fresh.error().message);
      d = std::make_shared<const diagnose::Diagnosis>(std::move(*fresh));
    }
    res.body = diagnose::ToJson(diagnose::Filter(*d, filter));
    res.content_type = "application/json";
  });
}

}  // namespace gw::serve
