// The hub's self-metrics (hub_metrics.h, docs/metrics.md "The hub").
#include "hub/hub_metrics.h"

#include "base/build_info.h"

namespace gw::hub {

void HubMetrics::CountRequest(const std::string& route, int code) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[{route, code}];
}

void HubMetrics::CacheLookup(bool hit) {
  std::lock_guard<std::mutex> lock(mu_);
  ++(hit ? hits_ : misses_);
}

void HubMetrics::StoreRequest(double seconds, bool failed) {
  std::lock_guard<std::mutex> lock(mu_);
  ++store_requests_;
  if (failed) ++store_failures_;
  latency_sum_s_ += seconds;
  for (size_t i = 0; i < kBuckets.size(); ++i)
    if (seconds <= kBuckets[i]) ++buckets_[i];
}

void HubMetrics::Render(const HubFigures& figures, expo::Format format, std::string* out) const {
  using expo::Type;
  expo::Writer w(format, out);
  const BuildInfo& build = GetBuildInfo();
  w.Family("gpuwarden_build_info", Type::kGauge,
           "gpuwarden's version and the git commit it was built from (value 1).");
  w.Sample()
      .Label("version", figures.version)
      .Label("revision", build.revision)
      .Label("branch", build.branch)
      .Value(1);
  // A family of one sample without labels.
  auto family = [&w](std::string_view name, Type type, std::string_view help, double v,
                     std::string_view unit = {}) {
    w.Family(name, type, help, unit);
    w.Sample(v);
  };
  family("gpuwarden_hub_agents", Type::kGauge, "Agents listed in the --agents file.",
         static_cast<double>(figures.agents_known));
  family("gpuwarden_hub_agents_reachable", Type::kGauge,
         "Listed agents whose last answer (a /healthz probe or a request) came.",
         static_cast<double>(figures.agents_reachable));
  {
    std::lock_guard<std::mutex> lock(mu_);
    w.Family("gpuwarden_hub_http_requests_total", Type::kCounter,
             "Requests the hub answered, by the route that took them and the HTTP status.");
    for (const auto& [key, n] : requests_)
      w.Sample()
          .Label("route", key.first)
          .Label("code", std::to_string(key.second))
          .Value(static_cast<double>(n));
    family("gpuwarden_hub_store_requests_total", Type::kCounter,
           "Requests sent to the store (answers from the cache not counted).",
           static_cast<double>(store_requests_));
    family("gpuwarden_hub_store_request_failures_total", Type::kCounter,
           "Requests to the store that got no answer or an HTTP status other than 2xx.",
           static_cast<double>(store_failures_));
    w.Family("gpuwarden_hub_store_request_duration_seconds", Type::kHistogram,
             "Time from sending a request to the store to its answer (or failure).", "seconds");
    for (size_t i = 0; i < kBuckets.size(); ++i) {
      std::string le;
      expo::AppendValue(&le, kBuckets[i]);
      w.Sample("_bucket").Label("le", le).Value(static_cast<double>(buckets_[i]));
    }
    w.Sample("_bucket").Label("le", "+Inf").Value(static_cast<double>(store_requests_));
    w.Sample("_sum").Value(latency_sum_s_);
    w.Sample("_count").Value(static_cast<double>(store_requests_));
    family("gpuwarden_hub_store_cache_hits_total", Type::kCounter,
           "Store answers taken from the hub's cache, or from a request already in flight.",
           static_cast<double>(hits_));
    family("gpuwarden_hub_store_cache_misses_total", Type::kCounter,
           "Store answers that needed a request of their own.", static_cast<double>(misses_));
  }
  if (figures.notify) notify::WriteMetrics(*figures.notify, notify::Options().max_queue, &w);
  if (!figures.rules) return;
  const rules::Manager::Stats& s = *figures.rules;
  family("gpuwarden_rules", Type::kGauge, "Rules loaded (recording and alerting).",
         static_cast<double>(s.rules));
  family("gpuwarden_rule_evaluations_total", Type::kCounter, "Rule group evaluations.",
         static_cast<double>(s.evaluations));
  family("gpuwarden_rule_evaluation_failures_total", Type::kCounter,
         "Rule evaluations that failed (the store did not answer or refused, duplicate series, "
         "limit exceeded).",
         static_cast<double>(s.evaluation_failures));
  family("gpuwarden_rule_evaluation_duration_seconds", Type::kGauge,
         "How long the last evaluation of a due group took, its store queries included.",
         s.last_duration_s, "seconds");
  family("gpuwarden_alerts_firing", Type::kGauge, "Alerts firing now.",
         static_cast<double>(s.alerts_firing));
  family("gpuwarden_alerts_pending", Type::kGauge,
         "Alerts pending (condition true, `for` not yet elapsed).",
         static_cast<double>(s.alerts_pending));
}

http::Handler CountedRoutes::Counted(std::string route, http::Handler handler) const {
  return [metrics = metrics_, route = std::move(route), handler = std::move(handler)](
             const http::Request& req, http::Response& res) {
    handler(req, res);
    metrics->CountRequest(route, res.status);
  };
}

void CountedRoutes::Get(const std::string& path, http::Handler handler) {
  server_->Get(path, Counted(path, std::move(handler)));
}

void CountedRoutes::Post(const std::string& path, http::Handler handler) {
  server_->Post(path, Counted(path, std::move(handler)));
}

void CountedRoutes::GetPrefix(const std::string& prefix, http::Handler handler) {
  server_->GetPrefix(prefix, Counted(prefix + "*", std::move(handler)));
}

}  // namespace gw::hub
