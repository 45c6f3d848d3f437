// The hub's own rule evaluation over the store (rules_eval.h, docs/hub.md).
#include "hub/rules_eval.h"

#include <glob.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "base/clock.h"

namespace gw::hub {

using nlohmann::json;

namespace {

constexpr double kPollS = 0.25;  // how often the thread looks for a group that is due

// The hub writes nothing back to the store: recording results and ALERTS are dropped.
class Discard : public tsdb::Appender {
 public:
  Expected<Ref> GetRef(const tsdb::Labels&) override { return Ref{0}; }
  Status Append(Ref, int64_t, double) override { return Status::Ok(); }
  Status Commit() override { return Status::Ok(); }
};

bool OfNode(const json& alert, const std::string& label, const std::string& node) {
  return alert.contains("labels") && alert["labels"].is_object() &&
         alert["labels"].value(label, "") == node;
}

}  // namespace

Expected<std::vector<promql::Series>> SeriesFromStoreData(const json& data) {
  const std::string type = data.value("resultType", "");
  auto number = [](const json& v, promql::Point* p) {
    if (!v.is_array() || v.size() != 2 || !v[0].is_number() || !v[1].is_string()) return false;
    p->t_ms = static_cast<int64_t>(v[0].get<double>() * 1000);
    p->v = std::strtod(v[1].get<std::string>().c_str(), nullptr);
    return true;
  };
  std::vector<promql::Series> out;
  if (type == "scalar") {
    promql::Series s;
    promql::Point p;
    if (!data.contains("result") || !number(data["result"], &p))
      return Error{"the store's scalar result is malformed"};
    s.points.push_back(p);
    out.push_back(std::move(s));
    return out;
  }
  if (type != "vector") return Error{"rule result is not a vector or scalar"};
  for (const json& r : data.value("result", json::array())) {
    promql::Series s;
    promql::Point p;
    if (!r.contains("value") || !number(r["value"], &p))
      return Error{"the store's vector result is malformed"};
    if (r.contains("metric") && r["metric"].is_object())
      for (const auto& [name, value] : r["metric"].items())
        if (value.is_string()) s.labels.push_back({name, value.get<std::string>()});
    std::sort(s.labels.begin(), s.labels.end());
    s.points.push_back(p);
    out.push_back(std::move(s));
  }
  return out;
}

RuleEvaluator::RuleEvaluator(RulesOptions options, Store* store, Logger* log)
    : options_(std::move(options)), store_(store), discard_(std::make_unique<Discard>()) {
  rules::ManagerOptions mo;
  mo.default_interval_ms = static_cast<int64_t>(options_.interval_s * 1000);
  mo.instant_query = [this](const std::string& expr, int64_t t_ms) { return Instant(expr, t_ms); };
  // The querier only serves the `for` restore, which reads ALERTS_FOR_STATE: the hub has none.
  manager_ = std::make_unique<rules::Manager>(
      std::move(mo), [] { return std::make_unique<tsdb::MemoryQuerier>(); }, discard_.get(),
      [this](std::vector<rules::Alert> alerts) { Send(std::move(alerts)); }, log);
}

Expected<std::unique_ptr<RuleEvaluator>> RuleEvaluator::Create(RulesOptions options, Store* store,
                                                               Logger* log) {
  if (options.interval_s <= 0) return Error{"--rules-interval: must be more than 0"};
  // A pattern the user named that matches nothing would leave the hub evaluating no rules and
  // its alert views silently empty (a plain path that does not exist is said by the parser).
  for (const std::string& pattern : options.files) {
    if (pattern.find_first_of("*?[") == std::string::npos) continue;
    glob_t g{};
    const bool matched = glob(pattern.c_str(), 0, nullptr, &g) == 0 && g.gl_pathc > 0;
    globfree(&g);
    if (!matched) return Error{"--rules: '" + pattern + "' matches no file"};
  }
  auto files = options.files;
  std::unique_ptr<RuleEvaluator> r(new RuleEvaluator(std::move(options), store, log));
  if (!r->options_.alertmanagers.empty()) {
    notify::Options no;
    for (const std::string& url : r->options_.alertmanagers)
      no.targets.push_back({.kind = notify::Target::kAlertmanager, .url = url});
    auto notifier = notify::Notifier::Create(std::move(no), log);
    if (!notifier.ok()) return Error{"--alertmanager: " + notifier.error().message};
    r->notifier_ = std::move(*notifier);
  }
  if (Status st = r->manager_->Load(files); !st.ok()) return Error{"--rules: " + st.message()};
  return r;
}

RuleEvaluator::~RuleEvaluator() {
  Stop();
}

Expected<std::vector<promql::Series>> RuleEvaluator::Instant(const std::string& expr,
                                                             int64_t t_ms) {
  auto data = store_->Query(expr, static_cast<double>(t_ms) / 1000);
  if (!data.ok()) return data.error();
  return SeriesFromStoreData(*data);
}

void RuleEvaluator::Send(std::vector<rules::Alert> alerts) {
  if (!notifier_) return;
  std::vector<notify::Alert> out;
  for (rules::Alert& a : alerts) out.push_back(notify::FromRuleAlert(std::move(a)));
  notifier_->Send(std::move(out));
}

std::optional<notify::Notifier::Stats> RuleEvaluator::notify_stats() const {
  if (!notifier_) return std::nullopt;
  return notifier_->stats();
}

void RuleEvaluator::EvalDue(int64_t t_ms) {
  manager_->EvalDue(t_ms);
}

void RuleEvaluator::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    lock.unlock();
    EvalDue(SystemClock().NowMs());
    lock.lock();
    wake_.wait_for(lock, std::chrono::duration<double>(kPollS), [this] { return stopping_; });
  }
}

void RuleEvaluator::Start() {
  thread_ = std::thread([this] { Run(); });
}

void RuleEvaluator::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (notifier_) notifier_->Stop();
}

json RuleEvaluator::AlertsApi(const std::string& node) const {
  json data = manager_->AlertsApi();
  if (node.empty()) return data;
  json kept = json::array();
  for (json& a : data["alerts"])
    if (OfNode(a, options_.node_label, node)) kept.push_back(std::move(a));
  return {{"alerts", std::move(kept)}};
}

json RuleEvaluator::RulesApi(std::string_view type, const std::string& node) const {
  json data = manager_->RulesApi(type);
  if (node.empty() || data.is_null()) return data;
  for (json& g : data["groups"])
    for (json& r : g["rules"]) {
      if (!r.contains("alerts")) continue;
      json kept = json::array();
      std::string state = "inactive";
      for (json& a : r["alerts"]) {
        if (!OfNode(a, options_.node_label, node)) continue;
        const std::string s = a.value("state", "");
        if (s == "firing" || (s == "pending" && state == "inactive")) state = s;
        kept.push_back(std::move(a));
      }
      r["alerts"] = std::move(kept);
      r["state"] = state;
    }
  return data;
}

std::map<std::string, std::map<std::string, int>> RuleEvaluator::FiringByNode() const {
  std::map<std::string, std::map<std::string, int>> out;
  const json data = manager_->AlertsApi();
  for (const json& a : data["alerts"]) {
    if (a.value("state", "") != "firing") continue;
    const json& ls = a["labels"];
    const std::string node = ls.value(options_.node_label, "");
    if (!node.empty()) ++out[node][ls.value("severity", "")];
  }
  return out;
}

rules::Manager::Stats RuleEvaluator::stats() const {
  return manager_->stats();
}

}  // namespace gw::hub
