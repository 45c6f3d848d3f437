// rules/manager.h — the rule manager: loads rule files, evaluates groups when due, hands alerts
// to a sender, and answers /api/v1/rules and /api/v1/alerts.
//
// Usage (serve):
//   rules::Manager m(options, [&] { return db->NewQuerier(); }, &sink, send_to_notify, &logger);
//   if (Status s = m.Load({"rules/*.yml"}); !s.ok()) log(s.message());   // "FILE:LINE: reason"
//   ... after each collection cycle: m.EvalDue(sample_time_ms);
//   http: m.RulesApi(type) / m.AlertsApi()  (the "data" part of Prometheus' responses)
//
// The manager owns no thread and reads no clock: the caller drives EvalDue with the time to
// evaluate at (the simulator's virtual time may run faster than real time). Groups run at
// base + offset(group) multiples of their interval like Prometheus (offset from a hash of the
// group's name and file), the first time at the first call. Alerts are never sent from here:
// what Prometheus' sendAlerts would send (firing every resend_delay, resolved ones until 15m
// after resolution) goes to SendFunc, with the external labels added as Prometheus' notifier
// adds them. Load(), EvalDue() and stats() are for one caller thread; RulesApi() and
// AlertsApi() may be called from any thread at the same time.
#ifndef GPUWARDEN_RULES_MANAGER_H_
#define GPUWARDEN_RULES_MANAGER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "base/log.h"
#include "promql/engine.h"
#include "rules/group.h"
#include "tsdb/storage.h"

namespace gw::rules {

struct ManagerOptions {
  int64_t default_interval_ms = 60000;  // global evaluation_interval
  tsdb::Labels external_labels;
  std::string external_url;  // for $externalURL and generatorURL
  int64_t resend_delay_ms = 60000;
  int64_t outage_tolerance_ms = 3600000, for_grace_period_ms = 600000;
  promql::EngineOptions engine;
  // Set: every rule is evaluated through it instead of the engine over the querier (the hub:
  // the central store's query API); the querier then only serves the `for` state restore.
  InstantQueryFunc instant_query;
};

struct Alert {  // one alert ready to send (Alertmanager v2 fields)
  tsdb::Labels labels, annotations;
  int64_t starts_at_ms = 0,
          ends_at_ms = 0;     // ends_at: resolved time, or now + 4*max(resend, interval)
  std::string generator_url;  // external_url + "/graph?g0.expr=...&g0.tab=1"
};

using QuerierFactory = std::function<std::unique_ptr<tsdb::Querier>()>;
using SendFunc = std::function<void(std::vector<Alert>)>;

class Manager {
 public:
  // `sink` and `log` must outlive the manager; `send` may be empty (nothing is sent).
  Manager(ManagerOptions options, QuerierFactory querier, tsdb::Appender* sink, SendFunc send,
          Logger* log);
  ~Manager();
  Manager(const Manager&) = delete;
  Manager& operator=(const Manager&) = delete;

  // Parses every file (globs allowed like Prometheus' rule_files). On any error returns it
  // ("FILE:LINE: reason", one per line) and KEEPS the rules currently loaded. On success swaps
  // in the new groups, carrying alert state over for rules that are unchanged; groups that
  // are gone get stale markers for their series at the next EvalDue.
  Status Load(const std::vector<std::string>& files);

  // Evaluates every group whose next evaluation is due at or before now_ms, then sends what is
  // due. Missed evaluations are skipped (the latest due slot is evaluated), as Prometheus does.
  void EvalDue(int64_t now_ms);

  // Prometheus' `data` of GET /api/v1/rules (type_filter "", "alert" or "record"; groups are
  // sorted by file then name and kept even when the filter empties them, as 2.42 does) and of
  // GET /api/v1/alerts (pending and firing alerts). Any other type_filter returns null: answer
  // 400 bad_data `invalid parameter "type": not supported value "X"` as Prometheus does.
  nlohmann::json RulesApi(std::string_view type_filter) const;
  nlohmann::json AlertsApi() const;

  struct Stats {
    uint64_t evaluations = 0, evaluation_failures = 0;
    double last_duration_s = 0;
    size_t rules = 0, alerts_firing = 0, alerts_pending = 0;
  };
  Stats stats() const;

 private:
  void SendDue(Group& g, int64_t t_ms);

  ManagerOptions options_;
  EvalEnv env_;
  promql::Engine engine_;
  QuerierFactory querier_;
  tsdb::Appender* sink_;
  SendFunc send_;
  Logger* log_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Group>> groups_;
  std::vector<std::unique_ptr<Group>> removed_;  // stale markers pending
  bool loaded_once_ = false;
  uint64_t evaluations_ = 0, failures_ = 0;
  double last_duration_s_ = 0;
};

// RFC 3339 with Go's RFC3339Nano trimming ("2026-11-29T21:40:12.123Z"); 0 → Go's zero time.
std::string FormatRfc3339(int64_t t_ms, bool zero_is_go_zero = true);

}  // namespace gw::rules

#endif  // GPUWARDEN_RULES_MANAGER_H_
