// hub/hub_metrics.h — the hub's own /metrics (docs/metrics.md, "The hub"): requests by route
// and code, the store's requests, failures, latency and cache, the rules the hub evaluates, the
// agents it knows and reaches, its build.
//
//   HubMetrics metrics;
//   CountedRoutes routes(server, &metrics);      // routes.Get(path, h): h, counted
//   store options: .on_lookup / .on_request = metrics.StoreHooks()
//   metrics.Render(figures, expo::Format::kText, &page);
//
// Routes are counted by the path they were registered with (a prefix route as "PREFIX*"), never
// by the path asked, so the label's values stay few. Threading: every method may be called from
// any thread.
#ifndef GPUWARDEN_HUB_HUB_METRICS_H_
#define GPUWARDEN_HUB_HUB_METRICS_H_

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "expo/expo.h"
#include "http/server.h"
#include "notify/notify.h"
#include "rules/manager.h"

namespace gw::hub {

// What the hub knows at render time besides the counters.
struct HubFigures {
  std::string version;
  size_t agents_known = 0, agents_reachable = 0;
  std::optional<rules::Manager::Stats> rules;     // none without --rules
  std::optional<notify::Notifier::Stats> notify;  // none without --alertmanager
};

class HubMetrics {
 public:
  // Bucket upper bounds of the store request latency histogram, seconds.
  static constexpr std::array<double, 10> kBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025,
                                                      0.05,  0.1,    0.25,  1,    5};

  void CountRequest(const std::string& route, int code);
  // An answer of the store client: from its cache (or a request in flight) or not.
  void CacheLookup(bool hit);
  // A request sent to the store: how long it took, whether it failed (no answer, or an HTTP
  // status other than 2xx).
  void StoreRequest(double seconds, bool failed);

  void Render(const HubFigures& figures, expo::Format format, std::string* out) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  uint64_t hits_ = 0, misses_ = 0, store_requests_ = 0, store_failures_ = 0;
  std::array<uint64_t, kBuckets.size()> buckets_{};
  double latency_sum_s_ = 0;
};

// Registers handlers on `server` that count each request in `metrics` by route and code, then
// answer as the handler given. Same calls as http::Server's, so a block of registrations moves
// over by changing what it registers on.
class CountedRoutes {
 public:
  CountedRoutes(http::Server* server, HubMetrics* metrics) : server_(server), metrics_(metrics) {}
  void Get(const std::string& path, http::Handler handler);
  void Post(const std::string& path, http::Handler handler);
  void GetPrefix(const std::string& prefix, http::Handler handler);

 private:
  http::Handler Counted(std::string route, http::Handler handler) const;
  http::Server* server_;
  HubMetrics* metrics_;
};

}  // namespace gw::hub

#endif  // GPUWARDEN_HUB_HUB_METRICS_H_
