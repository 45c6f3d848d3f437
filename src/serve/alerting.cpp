#include "serve/alerting.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/secret_file.h"
#include "expo/expo.h"
#include "http/prom_api.h"
#include "http/server.h"
#include "serve/query_metrics.h"

namespace gw::serve {

namespace {

std::string HostName() {
  char name[256] = {0};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

Expected<notify::Target> ToTarget(const config::ReceiverConfig& r, notify::Target::Kind kind,
                                  const std::string& external_url) {
  notify::Target t;
  t.kind = kind;
  t.url = r.url;
  t.timeout_s = r.timeout_s;
  t.basic_auth_user = r.basic_auth_username;
  if (!r.basic_auth_password_file.empty()) {
    auto secret = ReadSecretFile(r.basic_auth_password_file);
    if (!secret.ok()) return Error{r.url + ": basic_auth.password_file: " + secret.error().message};
    t.basic_auth_password = *secret;
  }
  if (!r.bearer_token_file.empty()) {
    auto secret = ReadSecretFile(r.bearer_token_file);
    if (!secret.ok()) return Error{r.url + ": bearer_token_file: " + secret.error().message};
    t.bearer_token = *secret;
  }
  t.ca_file = r.tls_ca_file;
  t.insecure_skip_verify = r.tls_insecure_skip_verify;
  t.external_url = external_url;
  return t;
}

void ApiJson(http::Response& res, const nlohmann::json& data) {
  nlohmann::json body = {{"status", "success"}, {"data", data}};
  res.body = body.dump();
  res.content_type = "application/json";
}

}  // namespace

Alerting::Alerting(const config::Config& config, tsdb::DB* db, int port, Logger* log)
    : config_(config), db_(db), log_(log) {
  external_url_ = config.rules.external_url;
  if (external_url_.empty()) external_url_ = "http://" + HostName() + ":" + std::to_string(port);
  while (!external_url_.empty() && external_url_.back() == '/') external_url_.pop_back();
  if (db_ == nullptr) return;
  rules::ManagerOptions options;
  options.default_interval_ms = static_cast<int64_t>(config.rules.evaluation_interval_s * 1000);
  for (const auto& [name, value] : config.rules.external_labels)
    options.external_labels.push_back({name, value});
  std::sort(options.external_labels.begin(), options.external_labels.end());
  options.external_url = external_url_;
  options.resend_delay_ms = static_cast<int64_t>(config.alerting.resend_delay_s * 1000);
  // Rules run on the recorder thread: the query timeout and sample limit, never the HTTP gate.
  options.engine = QueryEngineOptions(config);
  sink_ = std::make_unique<tsdb::DBAppender>(db_);
  manager_ = std::make_unique<rules::Manager>(
      options, [db] { return db->NewQuerier(); }, sink_.get(),
      [this](std::vector<rules::Alert> alerts) { Send(std::move(alerts)); }, log_);
}

Alerting::~Alerting() {
  Stop();
}

void Alerting::Stop() {
  {
    std::lock_guard<std::mutex> lock(clock_mu_);
    stopping_ = true;
  }
  clock_cv_.notify_all();
  if (clock_.joinable()) clock_.join();
  if (notifier_) notifier_->Stop();
}

void Alerting::StartNotifier() {
  notify::Options options;
  auto add = [&](const std::vector<config::ReceiverConfig>& receivers, notify::Target::Kind kind) {
    for (const config::ReceiverConfig& r : receivers) {
      auto target = ToTarget(r, kind, external_url_);
      if (!target.ok()) {
        log_->Error("alerting: " + target.error().message + "; not sending there");
        continue;
      }
      options.targets.push_back(std::move(*target));
    }
  };
  add(config_.alerting.alertmanagers, notify::Target::kAlertmanager);
  add(config_.alerting.webhooks, notify::Target::kWebhook);
  if (options.targets.empty()) return;
  options.queue_dir = config_.alerting.queue_dir.empty()
                          ? (std::filesystem::path(config_.storage.path) / "notify").string()
                          : config_.alerting.queue_dir;
  max_queue_ = options.max_queue;
  auto created = notify::Notifier::Create(options, log_);
  if (!created.ok()) {
    log_->Error("alerting: " + created.error().message + "; alerts are evaluated but not sent");
    return;
  }
  notifier_ = std::move(*created);
}

Status Alerting::Load() {
  if (!manager_) return Status::Ok();
  std::vector<std::string> files;
  if (config_.rules.builtin) {
    // The pack is compiled in; written out so that it can be read and checked with promtool.
    std::filesystem::path dir = std::filesystem::path(config_.storage.path) / "rules" / "builtin";
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    for (const EmbeddedRuleFile& f : BuiltinRuleFiles()) {
      std::filesystem::path path = dir / f.name;
      std::filesystem::path tmp = path;
      tmp += ".tmp";
      {
        std::ofstream out(tmp, std::ios::trunc);
        out << f.text;
        if (!out) {
          ++reload_failures_;
          last_reload_ok_ = false;
          return Error{"rules: cannot write the built-in pack to " + path.string()};
        }
      }
      std::filesystem::rename(tmp, path, ec);
      if (ec) return Error{"rules: cannot write " + path.string() + ": " + ec.message()};
      files.push_back(path.string());
    }
  }
  files.insert(files.end(), config_.rules.files.begin(), config_.rules.files.end());
  Status s;
  {
    std::lock_guard<std::mutex> lock(eval_mu_);
    s = manager_->Load(files);
  }
  ++reloads_;
  last_reload_ok_ = s.ok();
  last_reload_unix_ = SystemClock().NowSeconds();
  if (!s.ok()) {
    ++reload_failures_;
    log_->Error("rules: " + s.message() + " (the rules loaded before keep running)");
    return s;
  }
  return s;  // the manager logs what it loaded
}

void Alerting::Tick(int64_t t_ms) {
  if (!manager_) return;
  std::lock_guard<std::mutex> lock(eval_mu_);
  eval_time_ms_ = t_ms;
  manager_->EvalDue(t_ms);
}

void Alerting::StartWallClock(std::mutex* writer) {
  if (!manager_ || clock_.joinable()) return;
  clock_ = std::thread([this, writer] {
    std::unique_lock<std::mutex> lock(clock_mu_);
    while (!stopping_) {
      lock.unlock();
      const int64_t now = SystemClock().NowMs();
      if (writer != nullptr) {
        std::lock_guard<std::mutex> write(*writer);
        Tick(now);
      } else {
        Tick(now);
      }
      lock.lock();
      clock_cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_; });
    }
  });
}

void Alerting::Send(std::vector<rules::Alert> alerts) {
  if (!notifier_ || alerts.empty()) return;
  std::vector<notify::Alert> out;
  out.reserve(alerts.size());
  // Simulated time runs ahead of (or behind) the wall clock; receivers judge firing/resolved by
  // their own clock, so alert times are moved to the wall clock, keeping their distance to now.
  int64_t shift = 0;
  if (!config_.simulate.scenario.empty()) {
    const int64_t wall = SystemClock().NowMs();
    shift = wall - eval_time_ms_.load();
  }
  for (rules::Alert& a : alerts) {  // external labels are already on them (rules::Manager)
    if (a.starts_at_ms != 0) a.starts_at_ms += shift;
    if (a.ends_at_ms != 0) a.ends_at_ms += shift;
    out.push_back(notify::FromRuleAlert(std::move(a)));
  }
  notifier_->Send(std::move(out));
}

void Alerting::RegisterRoutes(http::Server* server) {
  server->Get("/api/v1/rules", [this](const http::Request& req, http::Response& res) {
    std::string type = req.param("type");
    if (!type.empty() && type != "alert" && type != "record") {
      http::WriteApiError(res, 400, "bad_data",
                          "invalid parameter \"type\": not supported value \"" + type + "\"");
      return;
    }
    ApiJson(res, manager_ ? manager_->RulesApi(type)
                          : nlohmann::json{{"groups", nlohmann::json::array()}});
  });
  server->Get("/api/v1/alerts", [this](const http::Request&, http::Response& res) {
    ApiJson(res,
            manager_ ? manager_->AlertsApi() : nlohmann::json{{"alerts", nlohmann::json::array()}});
  });
  server->Post("/-/reload", [this](const http::Request&, http::Response& res) {
    // Lifecycle endpoints are opt-in, as in Prometheus (--web.enable-lifecycle), with its answer.
    if (!config_.web_enable_lifecycle) {
      res.status = 403;
      res.body = "Lifecycle API is not enabled.\n";
      return;
    }
    Status s = Load();
    if (!s.ok()) {
      res.status = 500;
      res.body = "failed to reload config: " + s.message() + "\n";
      return;
    }
    res.body = "reloaded\n";
  });
}

void Alerting::RenderMetrics(collect::Format format, std::string* out) const {
  expo::Writer w(format, out);
  auto family = [&w](std::string_view name, expo::Type type, std::string_view help, double v) {
    w.Family(name, type, help);
    w.Sample(v);
  };
  family("gpuwarden_rules_config_last_reload_successful", expo::Type::kGauge,
         "Whether the last rule reload succeeded (1) or failed (0).", last_reload_ok_ ? 1 : 0);
  family("gpuwarden_rules_config_last_reload_success_timestamp_seconds", expo::Type::kGauge,
         "When the rules were last (re)loaded.", last_reload_unix_);
  if (manager_) {
    rules::Manager::Stats s = manager_->stats();
    family("gpuwarden_rules", expo::Type::kGauge, "Rules loaded.", static_cast<double>(s.rules));
    family("gpuwarden_rule_evaluations_total", expo::Type::kCounter, "Rule group evaluations.",
           static_cast<double>(s.evaluations));
    family("gpuwarden_rule_evaluation_failures_total", expo::Type::kCounter,
           "Rule evaluations that failed.", static_cast<double>(s.evaluation_failures));
    family("gpuwarden_rule_evaluation_duration_seconds", expo::Type::kGauge,
           "Duration of the last evaluation of the groups that were due.", s.last_duration_s);
    family("gpuwarden_alerts_firing", expo::Type::kGauge, "Alerts firing.",
           static_cast<double>(s.alerts_firing));
    family("gpuwarden_alerts_pending", expo::Type::kGauge, "Alerts pending.",
           static_cast<double>(s.alerts_pending));
  }
  if (notifier_) notify::WriteMetrics(notifier_->stats(), max_queue_, &w);
}

}  // namespace gw::serve
