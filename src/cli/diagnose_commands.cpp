#include "cli/diagnose_commands.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/store.h"
#include "http/client.h"
#include "http/prom_api.h"
#include "http/prom_format.h"
#include "report/report.h"

namespace gw::cli {

namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// --time (default now) and --since; prints the problem and returns false when malformed.
bool ParseWhen(const std::string& time, const std::string& since, const char* since_flag,
               int64_t* t_ms, double* window_s) {
  *t_ms = NowMs();
  if (!time.empty() && !http::ParsePromTime(time, t_ms)) {
    std::fprintf(stderr, "gpuwarden: --time: expected Unix seconds or RFC 3339, got '%s'\n",
                 time.c_str());
    return false;
  }
  if (!ParseDurationSeconds(since, window_s) || *window_s <= 0) {
    std::fprintf(stderr, "gpuwarden: %s: expected a duration such as 1h or 7d, got '%s'\n",
                 since_flag, since.c_str());
    return false;
  }
  return true;
}

void Print(const diagnose::Diagnosis& d, bool json) {
  std::string text =
      json ? nlohmann::json::parse(diagnose::ToJson(d)).dump(2) + "\n" : diagnose::ToText(d);
  std::fwrite(text.data(), 1, text.size(), stdout);
}

}  // namespace

int RunDiagnose(const Config& config, const DiagnoseArgs& args, Logger* logger) {
  if (int(!args.gpu.empty()) + int(!args.job.empty()) + int(!args.team.empty()) > 1) {
    std::fprintf(stderr, "gpuwarden: --gpu, --job and --team exclude each other\n");
    return 2;
  }
  int64_t t_ms = 0;
  double window_s = 0;
  if (!ParseWhen(args.time, args.since, "--since", &t_ms, &window_s)) return 2;
  const diagnose::FindingFilter filter{args.gpu, args.job, args.team};
  if (!args.url.empty()) {
    std::string base = args.url;
    while (!base.empty() && base.back() == '/') base.pop_back();
    std::string path = "/api/gw/v1/findings?since=" + http::UrlEncode(args.since);
    if (!args.time.empty()) path += "&time=" + http::UrlEncode(args.time);
    if (!args.gpu.empty()) path += "&gpu=" + http::UrlEncode(args.gpu);
    if (!args.job.empty()) path += "&job=" + http::UrlEncode(args.job);
    if (!args.team.empty()) path += "&team=" + http::UrlEncode(args.team);
    auto reply = http::GetUrl(base + path, 120);
    if (!reply.ok()) {
      std::fprintf(stderr, "gpuwarden: %s\n", reply.error().message.c_str());
      return 1;
    }
    auto d = diagnose::FromJson(reply->body);
    if (!d.ok()) {
      std::fprintf(stderr, "gpuwarden: %s%s (HTTP %d)\n", base.c_str(), path.c_str(),
                   reply->status);
      std::fprintf(stderr, "gpuwarden: %s\n", d.error().message.c_str());
      return 1;
    }
    Print(*d, args.json);
    return 0;
  }
  auto db = OpenStore(config.storage, logger);
  if (!db.ok()) {
    std::fprintf(stderr, "gpuwarden: %s\n", db.error().message.c_str());
    return 1;
  }
  auto querier = (*db)->NewQuerier();
  promql::Engine engine;
  diagnose::Options options;
  options.time_ms = t_ms;
  options.window_s = window_s;
  auto d = diagnose::Diagnose(*querier, engine, options);
  if (!d.ok()) {
    std::fprintf(stderr, "gpuwarden: %s\n", d.error().message.c_str());
    return 2;
  }
  Print(diagnose::Filter(*d, filter), args.json);
  return 0;
}

int RunReport(const Config& config, const ReportArgs& args, Logger* logger) {
  int64_t t_ms = 0;
  double period_s = 0;
  if (!ParseWhen(args.time, args.period, "--period", &t_ms, &period_s)) return 2;
  if (period_s < 600) {
    std::fprintf(stderr, "gpuwarden: --period: at least 10m, got '%s'\n", args.period.c_str());
    return 2;
  }
  auto db = OpenStore(config.storage, logger);
  if (!db.ok()) {
    std::fprintf(stderr, "gpuwarden: %s\n", db.error().message.c_str());
    return 1;
  }
  auto querier = (*db)->NewQuerier();
  promql::Engine engine;
  report::Options options;
  options.time_ms = t_ms;
  options.period_s = period_s;
  auto r = report::Build(*querier, engine, options);
  if (!r.ok()) {
    std::fprintf(stderr, "gpuwarden: %s\n", r.error().message.c_str());
    return 2;
  }
  const std::string text = args.json ? report::ToJson(*r) : report::ToHtml(*r);
  if (args.out.empty() || args.out == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  // Written beside the target and renamed, so a reader never sees half a report.
  const std::string tmp = args.out + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (!out.good()) {
      std::fprintf(stderr, "gpuwarden: %s: cannot write the report\n", args.out.c_str());
      std::remove(tmp.c_str());
      return 1;
    }
  }
  if (std::rename(tmp.c_str(), args.out.c_str()) != 0) {
    std::fprintf(stderr, "gpuwarden: %s: cannot write the report\n", args.out.c_str());
    std::remove(tmp.c_str());
    return 1;
  }
  std::fprintf(stderr, "report for %s written to %s (%zu findings)\n", args.period.c_str(),
               args.out.c_str(), r->diagnosis.findings.size());
  return 0;
}

FindingsService::FindingsService(tsdb::DB* db, bool synchronous, Logger* log)
    : db_(db), synchronous_(synchronous), log_(log) {}

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
  {
    std::lock_guard<std::mutex> lock(mu_);
    latest_ms_ = std::max(latest_ms_, t_ms);
    if (last_eval_ms_ != 0 && t_ms - last_eval_ms_ < static_cast<int64_t>(kIntervalS * 1000))
      return;
    last_eval_ms_ = t_ms;
    pending_ms_ = t_ms;
  }
  if (synchronous_) {
    Evaluate(t_ms);
  } else {
    cv_.notify_all();
  }
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
  auto querier = db_->NewQuerier();
  diagnose::Options options;
  options.time_ms = t_ms;
  options.window_s = kWindowS;
  auto d = diagnose::Diagnose(*querier, engine_, options);
  if (!d.ok()) {
    log_->Warn("diagnose: " + d.error().message);
    return;
  }
  for (const std::string& e : d->errors) log_->Debug("diagnose: " + e);
  auto shared = std::make_shared<const diagnose::Diagnosis>(std::move(*d));
  std::lock_guard<std::mutex> lock(mu_);
  cached_ = std::move(shared);
}

void FindingsService::RegisterRoutes(http::Server* server) {
  server->Get("/api/gw/v1/findings", [this](const http::Request& req, http::Response& res) {
    if (db_ == nullptr)
      return http::WriteApiError(res, 503, "unavailable",
                                 "no history store: findings need --data-dir");
    const diagnose::FindingFilter filter{req.param("gpu"), req.param("job"), req.param("team")};
    const std::string since = req.param("since"), time = req.param("time");
    double window_s = kWindowS;
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
      if (time.empty() && window_s == kWindowS) d = cached_;
      if (time.empty()) t_ms = latest_ms_ != 0 ? latest_ms_ : NowMs();
    }
    if (d == nullptr) {
      // Another window or time than the cached one (or none cached yet): evaluate now.
      auto querier = db_->NewQuerier();
      diagnose::Options options;
      options.time_ms = t_ms;
      options.window_s = window_s;
      auto fresh = diagnose::Diagnose(*querier, engine_, options);
      if (!fresh.ok()) return http::WriteApiError(res, 400, "bad_data", fresh.error().message);
      d = std::make_shared<const diagnose::Diagnosis>(std::move(*fresh));
    }
    res.body = diagnose::ToJson(diagnose::Filter(*d, filter));
    res.content_type = "application/json";
  });
}

}  // namespace gw::cli
