// serve/alerting.h — the serve command's alerting: rule files (the built-in pack and the user's)
// evaluated over the store, alerts handed to the notifier (Alertmanagers, webhooks).
//
//   Alerting alerting(config, db, listen_port, logger);   // db may be null: no rules then
//   alerting.StartNotifier();
//   alerting.Load();                      // at start; again on SIGHUP and POST /-/reload
//   alerting.Tick(t_ms);                  // after each recorded snapshot (serve.cpp's list)
//   alerting.Stop();
//
// Time: rules are evaluated at the time of the data just recorded (Tick, on the recorder's
// thread, which is also the store's only writer — so recording-rule results and ALERTS series
// are appended without a second writer). In simulated time this is simulated time, so a `for:
// 5m` means five simulated minutes. Without any GPU collection (no NVML) nothing is recorded, and
// `StartWallClock()` evaluates on the wall clock instead. Alerts sent out of a simulation have
// their times moved onto the wall clock (same distance to "now"), because receivers such as
// Alertmanager judge firing and resolved by their own clock.
#ifndef GPUWARDEN_SERVE_ALERTING_H_
#define GPUWARDEN_SERVE_ALERTING_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/log.h"
#include "collect/exposition.h"
#include "config/config.h"
#include "notify/notify.h"
#include "rules/manager.h"
#include "tsdb/db.h"

namespace gw::http {
class Server;
}

namespace gw::serve {

// The built-in rule pack (deploy/rules/*.yml compiled in): file name → text.
struct EmbeddedRuleFile {
  const char* name;
  const char* text;
};
std::vector<EmbeddedRuleFile> BuiltinRuleFiles();

class Alerting {
 public:
  // `db` (may be null: no history, so no rules) and `log` must outlive this object. `port` is the
  // port serve listens on (for the default external URL).
  Alerting(const config::Config& config, tsdb::DB* db, int port, Logger* log);
  ~Alerting();  // Stop()s
  Alerting(const Alerting&) = delete;
  Alerting& operator=(const Alerting&) = delete;

  // Creates the notifier (queue under alerting.queue_dir). Errors are logged; alerts are then
  // still evaluated and shown in the API, just not sent.
  void StartNotifier();
  // (Re)loads the built-in pack and rules.files. On error the rules already loaded keep running
  // and the error (FILE:LINE: reason) is returned and logged.
  Status Load();
  // Evaluates the groups that are due at t_ms (data up to t_ms is in the store).
  void Tick(int64_t t_ms);
  // Evaluates on the wall clock every second (for an agent that records nothing).
  // `writer`: held around each wall-clock evaluation (its results go into the store, whose writer
  // must be one thread at a time: the recorder's, collect::Recorder::writer_mutex); may be null.
  void StartWallClock(std::mutex* writer = nullptr);

  // Stops the wall-clock evaluation and the notifier (its queues are durable). Safe to call twice.
  void Stop();

  // GET /api/v1/rules, GET /api/v1/alerts, POST /-/reload on `server`.
  void RegisterRoutes(http::Server* server);
  // gpuwarden_rule_* and gpuwarden_notification_* families for /metrics.
  void RenderMetrics(collect::Format format, std::string* out) const;

 private:
  void Send(std::vector<rules::Alert> alerts);

  config::Config config_;
  tsdb::DB* db_;
  Logger* log_;
  std::string external_url_;
  std::unique_ptr<tsdb::Appender> sink_;  // rule results into db_ (a tsdb::DBAppender)
  std::unique_ptr<rules::Manager> manager_;
  std::unique_ptr<notify::Notifier> notifier_;
  int64_t max_queue_ = 0;
  std::mutex eval_mu_;                    // one evaluation at a time (Tick vs the wall clock)
  std::atomic<int64_t> eval_time_ms_{0};  // the time being evaluated (Send runs inside EvalDue)
  std::atomic<uint64_t> reloads_{0}, reload_failures_{0};
  std::atomic<bool> last_reload_ok_{true};
  std::atomic<double> last_reload_unix_{0};
  std::mutex clock_mu_;
  std::condition_variable clock_cv_;
  bool stopping_ = false;
  std::thread clock_;
};

}  // namespace gw::serve

#endif  // GPUWARDEN_SERVE_ALERTING_H_
