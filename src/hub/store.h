// hub/store.h — the central store's Prometheus HTTP API as the hub reads it (VictoriaMetrics or
// Prometheus; docs/hub.md).
//
//   auto store = hub::Store::Create({.url = "http://vm:8428"});
//   auto data = (*store)->Query("count by (instance) (gpu_up)", now_s);   // the "data" object
//   if (!data.ok()) banner(data.error().message);   // "the store at http://vm:8428 did not ..."
//
// Every request is a POST of a form (the Prometheus API and VictoriaMetrics both take them) over
// kept-alive connections, one per concurrent caller. Answers are kept for `cache_ttl_s` (1.5 s
// by default) by path and form, and concurrent callers asking the same thing while it is being
// fetched wait for that one request instead of sending their own: a page load that asks the
// same query from several tabs, or many tiles, sends it once. Failures are cached the same way,
// so a store that is down costs one connection attempt per query and TTL, not one per caller.
// Each request waits at most `timeout_s` (5 s by default) for the store.
//
// Several queries of one page: Store::RunAll runs them at once on the store's FanOut, at most
// `max_parallel` (6) at a time for the caller, the cache and its in-flight sharing unchanged.
//
// Threading: every method may be called from any thread.
#ifndef GPUWARDEN_HUB_STORE_H_
#define GPUWARDEN_HUB_STORE_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "http/client.h"

namespace gw::hub {

struct StoreOptions {
  std::string url;  // http(s)://host:port[/prefix], the base of /api/v1/...
  double timeout_s = 5;
  double cache_ttl_s = 1.5;
  size_t max_parallel = 6;  // queries of one RunAll at once (the caller's thread among them)
  // Optional, for the hub's /metrics (hub_metrics.h): each answer Post gives, whether from the
  // cache or a request in flight (hit); each request sent, its seconds and whether it failed
  // (no answer, or a status other than 2xx).
  std::function<void(bool hit)> on_lookup;
  std::function<void(double seconds, bool failed)> on_request;
};

// Runs a batch of tasks on a fixed set of threads plus the caller's: Run returns when every task
// has run. The caller takes tasks too, so a batch always progresses even when every thread is
// busy with other callers' batches (no thread per request, no wait behind a full queue); at most
// threads + 1 tasks of one batch run at once, and at most `threads` of all batches together
// besides their callers.
class FanOut {
 public:
  explicit FanOut(size_t threads);
  ~FanOut();
  FanOut(const FanOut&) = delete;
  FanOut& operator=(const FanOut&) = delete;
  void Run(std::vector<std::function<void()>> tasks);

 private:
  struct Batch;
  void Work();

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Batch>> queue_;  // one entry per thread invited to help a batch
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// A store answer: the HTTP status and body as the store sent them.
struct StoreReply {
  int status = 0;
  std::string body;
};

class Store {
 public:
  // Fails when `url` is not an http(s) URL.
  static Expected<std::unique_ptr<Store>> Create(StoreOptions options);
  ~Store();

  // POSTs `form` (application/x-www-form-urlencoded) to `path` ("/api/v1/query"). Any HTTP
  // answer is a StoreReply; no answer is an Error naming the store and why.
  Expected<StoreReply> Post(const std::string& path, const std::string& form);

  // An instant query at `time_s` (0: the store's now): the reply's "data" object
  // ({"resultType":…,"result":[…]}). Errors name the store and carry its own message.
  Expected<nlohmann::json> Query(const std::string& expr, double time_s = 0);
  // Instant query returning an instant vector: each series' labels and value.
  struct Sample {
    std::map<std::string, std::string> labels;
    double t_s = 0;
    double value = 0;
  };
  Expected<std::vector<Sample>> Vector(const std::string& expr, double time_s = 0);
  // Vector of each of `exprs` at once (at most max_parallel at a time), in their order.
  std::vector<Expected<std::vector<Sample>>> Vectors(const std::vector<std::string>& exprs,
                                                     double time_s = 0);
  // Runs `tasks` (store requests) at once, at most max_parallel at a time; returns when all ran.
  void RunAll(std::vector<std::function<void()>> tasks);

  const std::string& url() const { return options_.url; }
  // What the last request that reached no answer said ("" after an answer): for the hub's
  // status and the console's banner.
  std::string LastError() const;
  // Requests sent to the store (not answered from the cache), for the benchmark and tests.
  uint64_t requests_sent() const;

 private:
  struct Entry;
  explicit Store(StoreOptions options);
  Expected<StoreReply> Send(const std::string& path, const std::string& form);

  StoreOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Entry>> cache_;                         // path + "?" + form
  std::map<std::string, std::vector<std::unique_ptr<http::PostClient>>> idle_;  // by path
  std::string last_error_;
  uint64_t sent_ = 0;
  std::unique_ptr<FanOut> fanout_;  // max_parallel - 1 threads: the caller is the last
};

// "a=1&b=2" from pairs, each value percent-encoded.
std::string Form(const std::vector<std::pair<std::string, std::string>>& fields);

// The message of a store's error reply ({"status":"error","error":"…"}), or "HTTP <status>".
std::string StoreErrorMessage(const StoreReply& reply);

}  // namespace gw::hub

#endif  // GPUWARDEN_HUB_STORE_H_
