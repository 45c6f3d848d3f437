// hub/rules_eval.h — the alert rules the hub evaluates itself over the central store
// (`gpuwarden hub --rules FILE`; docs/hub.md, "Alert rules").
//
//   auto rules = hub::RuleEvaluator::Create({.files = {"deploy/rules/*.yml"}}, store, &log);
//   (*rules)->Start();                       // its own thread: the groups due, every 250 ms
//   json alerts = (*rules)->AlertsApi("node-07");   // /api/v1/alerts' "data", one node
//
// A VictoriaMetrics store has no ALERTS series (no vmalert), so the hub runs the same rule files
// as the agent (rules.files, deploy/rules/) with rules::Manager — pending → firing after `for`,
// keep_firing_for, labels and annotations templated — but every rule's expression, and every
// template's `query`, is one instant query to the store's own /api/v1/query at the evaluation's
// time (rules::InstantQueryFunc), never raw series pulled through a RemoteQuerier. Alerts keep
// the store's labels, the node label (`instance`) among them.
//
// With `alertmanagers`, alerts go to them through notify/ (an in-memory queue per Alertmanager,
// retries with backoff) as Prometheus sends them: firing ones every minute, resolved ones for 15
// minutes. Nothing is written back: recording rules are evaluated (their health shows) and their
// results dropped; the hub keeps no ALERTS history and restores no `for` state at start. A store
// that fails an evaluation marks the rule `health: err` with the store's words in `lastError`; its
// alerts keep their state until the next answer, as Prometheus' do.
//
// Threading: Start() runs evaluations on the evaluator's own thread (never on a request);
// AlertsApi, RulesApi, FiringByNode and stats may be called from any thread.
#ifndef GPUWARDEN_HUB_RULES_EVAL_H_
#define GPUWARDEN_HUB_RULES_EVAL_H_

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/log.h"
#include "hub/store.h"
#include "notify/notify.h"
#include "rules/manager.h"

namespace gw::hub {

struct RulesOptions {
  std::vector<std::string> files;  // rule files, globs allowed (Prometheus' rule_files)
  double interval_s = 15;          // for groups without an `interval` of their own
  std::string node_label = "instance";
  std::vector<std::string> alertmanagers;  // base URLs ("http://am:9093"); none: nothing sent
};

// The answer of one instant query as rules::InstantQueryFunc returns it, from the store's
// "data" object: a vector's series, a scalar as one series without labels, else an Error.
Expected<std::vector<promql::Series>> SeriesFromStoreData(const nlohmann::json& data);

class RuleEvaluator {
 public:
  // Reads the rule files now: a file that does not parse is an Error ("FILE:LINE: reason").
  // `store` and `log` must outlive the evaluator; `log` may be null.
  static Expected<std::unique_ptr<RuleEvaluator>> Create(RulesOptions options, Store* store,
                                                         Logger* log);
  ~RuleEvaluator();

  void Start();
  void Stop();  // idempotent; also the destructor's
  // Evaluates the groups due at `t_ms` (what the thread does with the wall clock).
  void EvalDue(int64_t t_ms);

  // The "data" of /api/v1/alerts and of /api/v1/rules (Prometheus 2.42 shapes, as the agent's),
  // for one node when `node` is not empty: only its alerts, and each alerting rule's state
  // from them. RulesApi returns null for a `type` other than "", "alert" or "record".
  nlohmann::json AlertsApi(const std::string& node) const;
  nlohmann::json RulesApi(std::string_view type, const std::string& node) const;
  // Firing alerts per node and severity (the fleet tiles' counts).
  std::map<std::string, std::map<std::string, int>> FiringByNode() const;
  rules::Manager::Stats stats() const;
  // The Alertmanagers' delivery figures; none without `alertmanagers`.
  std::optional<notify::Notifier::Stats> notify_stats() const;

 private:
  RuleEvaluator(RulesOptions options, Store* store, Logger* log);
  Expected<std::vector<promql::Series>> Instant(const std::string& expr, int64_t t_ms);
  void Run();
  void Send(std::vector<rules::Alert> alerts);

  RulesOptions options_;
  Store* store_;
  std::unique_ptr<tsdb::Appender> discard_;
  std::unique_ptr<notify::Notifier> notifier_;  // with alertmanagers
  std::unique_ptr<rules::Manager> manager_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace gw::hub

#endif  // GPUWARDEN_HUB_RULES_EVAL_H_
