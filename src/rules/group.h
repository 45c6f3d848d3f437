// rules/group.h — evaluation of one rule group at a time, Prometheus 2.42 semantics.
//
// Usage:
//   rules::Group group(spec, "rules.yml", interval_ms, env);
//   group.Eval(t_ms, querier, engine, &sink);   // every rule in order, results into the sink
//   for (const rules::AlertRule& r : group.rules()) ... r.alerts() ...
//
// Recording rules write `record{labels}` (rule labels override the result's); alerting rules
// keep alert state (pending → firing after `for`, keep_firing_for, resolved kept 15 minutes) and
// write ALERTS{alertname, alertstate, ...} = 1 and ALERTS_FOR_STATE{...} = active-since seconds.
// A series written at the previous evaluation and missing now gets a stale marker. After each
// rule the sink is committed, so later rules in the group see earlier rules' results (when the
// querier reads what the sink writes). A failing rule keeps its error (health "err") and does
// not stop the group. Not thread-safe: the Manager serialises access.
#ifndef GPUWARDEN_RULES_GROUP_H_
#define GPUWARDEN_RULES_GROUP_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "promql/engine.h"
#include "rules/rule_file.h"
#include "tsdb/storage.h"

namespace gw::rules {

enum class AlertState { kInactive, kPending, kFiring };
const char* AlertStateName(AlertState s);  // "inactive", "pending", "firing"

// One alert of an alerting rule (Prometheus' rules.Alert). Times are ms; 0 = unset.
struct AlertInstance {
  tsdb::Labels labels, annotations;
  AlertState state = AlertState::kPending;
  double value = 0;
  int64_t active_at_ms = 0, fired_at_ms = 0, resolved_at_ms = 0, last_sent_at_ms = 0,
          valid_until_ms = 0, keep_firing_since_ms = 0;
  bool sent = false;  // last_sent_at_ms is meaningful
};

// Evaluates an instant query elsewhere than the engine over the querier — the hub asks a
// central store's own /api/v1/query (docs/hub.md) — and returns what QueryVector would: an
// instant vector, a scalar as one series without labels, an Error with the reason otherwise.
using InstantQueryFunc =
    std::function<Expected<std::vector<promql::Series>>(const std::string& expr, int64_t t_ms)>;

// What templates see besides the alert: the global external labels and URL. When
// `instant_query` is set, rules and the templates' `query` evaluate through it (the querier
// and engine passed to Eval are then not read for them).
struct EvalEnv {
  tsdb::Labels external_labels;
  std::string external_url;
  InstantQueryFunc instant_query;
};

// One rule and its state across evaluations.
class Rule {
 public:
  Rule(RuleSpec spec, const EvalEnv* env) : spec_(std::move(spec)), env_(env) {}

  const RuleSpec& spec() const { return spec_; }
  bool is_alert() const { return spec_.is_alert(); }
  const std::string& name() const { return spec_.name(); }
  // The expression as Prometheus prints it (for generatorURL and the API).
  const std::string& query() const;

  // Evaluates at t_ms and returns the samples to write (recording results, or ALERTS and
  // ALERTS_FOR_STATE once restored). `limit` as the group's. Errors use Prometheus' wording.
  Expected<std::vector<tsdb::SeriesData>> Eval(int64_t t_ms, tsdb::Querier& q,
                                               const promql::Engine& engine, int limit);

  // Alerts (alerting rules), including resolved ones kept for sending, by label set.
  const std::map<tsdb::Labels, AlertInstance>& alerts() const { return active_; }
  std::map<tsdb::Labels, AlertInstance>& mutable_alerts() { return active_; }
  // The rule's state: firing if any alert fires, else pending if any is pending, else inactive.
  AlertState state() const;

  // Prometheus writes ALERTS/ALERTS_FOR_STATE only once the `for` state has been restored.
  bool restored() const { return restored_; }
  void set_restored(bool r) { restored_ = r; }

  // Alerts due to be sent at t_ms (Prometheus' sendAlerts): marks them sent.
  std::vector<AlertInstance> TakeAlertsToSend(int64_t t_ms, int64_t resend_delay_ms,
                                              int64_t interval_ms);

  // Health: "unknown" before the first evaluation, then "ok" or "err".
  const std::string& health() const { return health_; }
  const std::string& last_error() const { return last_error_; }
  int64_t last_eval_ms() const { return last_eval_ms_; }
  double eval_duration_s() const { return eval_duration_s_; }
  void set_result(Status s, int64_t t_ms, double duration_s);

 private:
  Expected<std::vector<tsdb::SeriesData>> EvalAlert(int64_t t_ms, std::vector<promql::Series> v,
                                                    tsdb::Querier& q, const promql::Engine& e,
                                                    int limit);

  RuleSpec spec_;
  const EvalEnv* env_;
  mutable std::string query_;
  std::map<tsdb::Labels, AlertInstance> active_;
  bool restored_ = false;
  std::string health_ = "unknown", last_error_;
  int64_t last_eval_ms_ = 0;
  double eval_duration_s_ = 0;
};

class Group {
 public:
  // `env` must outlive the group.
  Group(GroupSpec spec, std::string file, int64_t interval_ms, const EvalEnv* env);
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

  const std::string& name() const { return spec_.name; }
  const std::string& file() const { return file_; }
  int64_t interval_ms() const { return interval_ms_; }
  int limit() const { return spec_.limit; }
  const GroupSpec& spec() const { return spec_; }
  std::vector<std::unique_ptr<Rule>>& rules() { return rules_; }
  const std::vector<std::unique_ptr<Rule>>& rules() const { return rules_; }

  // Evaluates every rule in order at t_ms. Returns the number of rules that failed.
  // `wall_seconds` (optional) measures each rule's duration; pass nullptr in tests.
  int Eval(int64_t t_ms, tsdb::Querier& q, const promql::Engine& engine, tsdb::Appender* sink,
           double (*wall_seconds)() = nullptr);

  // Prometheus' RestoreForState at t_ms: reads ALERTS_FOR_STATE from `q` within the outage
  // tolerance and moves active-since times forward; marks every alerting rule restored.
  void RestoreForState(int64_t t_ms, tsdb::Querier& q, int64_t outage_tolerance_ms,
                       int64_t for_grace_period_ms);

  // Takes over alert state and previously written series from `old` for rules with the same
  // name and labels (Prometheus' CopyState on reload).
  void CopyState(Group& old);

  // Stale markers for every series the group wrote last time (when the group is removed).
  void MarkAllStale(int64_t t_ms, tsdb::Appender* sink);

  int64_t last_eval_ms() const { return last_eval_ms_; }
  double last_duration_s() const { return last_duration_s_; }
  bool should_restore = false;
  int evals_since_load = 0;
  int64_t next_eval_ms = -1;  // scheduling state for the Manager

 private:
  GroupSpec spec_;
  std::string file_;
  int64_t interval_ms_;
  std::vector<std::unique_ptr<Rule>> rules_;
  std::vector<std::vector<tsdb::Labels>> previous_;  // per rule: series written last time
  std::vector<tsdb::Labels> stale_next_;  // series of rules removed by a reload: stale next Eval
  int64_t last_eval_ms_ = 0;
  double last_duration_s_ = 0;
};

// Converts an instant query result into samples (a scalar becomes one sample without labels),
// as Prometheus' EngineQueryFunc; other types are an error.
Expected<std::vector<promql::Series>> QueryVector(tsdb::Querier& q, const promql::Engine& e,
                                                  const std::string& expr, int64_t t_ms);

}  // namespace gw::rules

#endif  // GPUWARDEN_RULES_GROUP_H_
