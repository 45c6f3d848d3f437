// Rule and group evaluation (Prometheus 2.42 rules/alerting.go, recording.go, group.go).
#include "rules/group.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "promql/parser.h"
#include "rules/template.h"

namespace gw::rules {
namespace {

constexpr int64_t kResolvedRetentionMs = 15 * 60 * 1000;

// labels.Builder.Set: an empty value deletes the label.
void SetLabel(tsdb::Labels* ls, const std::string& name, const std::string& value) {
  auto it = std::lower_bound(ls->begin(), ls->end(), name,
                             [](const tsdb::Label& l, const std::string& n) { return l.name < n; });
  if (it != ls->end() && it->name == name) {
    if (value.empty())
      ls->erase(it);
    else
      it->value = value;
  } else if (!value.empty()) {
    ls->insert(it, tsdb::Label{name, value});
  }
}

tsdb::SeriesData OneSample(tsdb::Labels ls, int64_t t_ms, double v) {
  tsdb::SeriesData s;
  s.labels = std::move(ls);
  s.samples.push_back({t_ms, v});
  return s;
}

int64_t FloorSeconds(int64_t ms) {
  return ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
}

}  // namespace

const char* AlertStateName(AlertState s) {
  switch (s) {
    case AlertState::kInactive:
      return "inactive";
    case AlertState::kPending:
      return "pending";
    case AlertState::kFiring:
      return "firing";
  }
  return "inactive";
}

Expected<std::vector<promql::Series>> QueryVector(tsdb::Querier& q, const promql::Engine& e,
                                                  const std::string& expr, int64_t t_ms) {
  promql::QueryResult r = e.Instant(q, expr, t_ms);
  if (!r.ok()) return Error{r.error().message};
  promql::Value& v = r.value();
  if (v.type == promql::ValueType::kVector) return std::move(v.series);
  if (v.type == promql::ValueType::kScalar) {
    promql::Series s;
    s.points.push_back({v.t_ms, v.scalar});
    return std::vector<promql::Series>{std::move(s)};
  }
  return Error{"rule result is not a vector or scalar"};
}

const std::string& Rule::query() const {
  if (query_.empty()) {
    auto e = promql::Parse(spec_.expr);
    query_ = e.ok() ? promql::Format(**e) : spec_.expr;
  }
  return query_;
}

AlertState Rule::state() const {
  AlertState s = AlertState::kInactive;
  for (const auto& [_, a] : active_) {
    if (a.state == AlertState::kFiring) return AlertState::kFiring;
    if (a.state == AlertState::kPending) s = AlertState::kPending;
  }
  return s;
}

void Rule::set_result(Status s, int64_t t_ms, double duration_s) {
  health_ = s.ok() ? "ok" : "err";
  last_error_ = s.ok() ? "" : s.message();
  last_eval_ms_ = t_ms;
  eval_duration_s_ = duration_s;
}

Expected<std::vector<tsdb::SeriesData>> Rule::Eval(int64_t t_ms, tsdb::Querier& q,
                                                   const promql::Engine& engine, int limit) {
  auto v = env_->instant_query ? env_->instant_query(spec_.expr, t_ms)
                               : QueryVector(q, engine, query(), t_ms);
  if (!v.ok()) return v.error();
  if (is_alert()) return EvalAlert(t_ms, std::move(*v), q, engine, limit);
  std::vector<tsdb::SeriesData> out;
  std::set<tsdb::Labels> seen;
  for (promql::Series& s : *v) {
    tsdb::Labels ls = std::move(s.labels);
    SetLabel(&ls, "__name__", spec_.record);
    for (const auto& l : spec_.labels) SetLabel(&ls, l.name, l.value);
    if (!seen.insert(ls).second)
      return Error{"vector contains metrics with the same labelset after applying rule labels"};
    out.push_back(OneSample(std::move(ls), t_ms, s.points.empty() ? 0 : s.points[0].v));
  }
  if (limit > 0 && static_cast<int>(out.size()) > limit)
    return Error{"exceeded limit " + std::to_string(limit) + " with " + std::to_string(out.size()) +
                 " series"};
  return out;
}

Expected<std::vector<tsdb::SeriesData>> Rule::EvalAlert(int64_t t_ms,
                                                        std::vector<promql::Series> result,
                                                        tsdb::Querier& q,
                                                        const promql::Engine& engine, int limit) {
  TemplateContext ctx;
  ctx.external_url = env_->external_url;
  ctx.query = [&](const std::string& expr) -> Expected<std::vector<QuerySample>> {
    auto r =
        env_->instant_query ? env_->instant_query(expr, t_ms) : QueryVector(q, engine, expr, t_ms);
    if (!r.ok()) return r.error();
    std::vector<QuerySample> out;
    for (auto& s : *r) out.push_back({std::move(s.labels), s.points.empty() ? 0 : s.points[0].v});
    return out;
  };
  const std::string tmpl_name = "__alert_" + spec_.alert;
  std::map<tsdb::Labels, AlertInstance> fresh;
  for (promql::Series& s : result) {
    double value = s.points.empty() ? 0 : s.points[0].v;
    TemplateData data{s.labels, env_->external_labels, env_->external_url, value};
    auto expand = [&](const std::string& text) {
      auto r = ExpandAlertTemplate(tmpl_name, text, data, ctx);
      return r.ok() ? *r : "<error expanding template: " + r.error().message + ">";
    };
    tsdb::Labels ls = s.labels;
    SetLabel(&ls, "__name__", "");
    for (const auto& l : spec_.labels) SetLabel(&ls, l.name, expand(l.value));
    SetLabel(&ls, "alertname", spec_.alert);
    tsdb::Labels annotations;
    for (const auto& a : spec_.annotations) annotations.push_back({a.name, expand(a.value)});
    if (fresh.count(ls))
      return Error{"vector contains metrics with the same labelset after applying alert labels"};
    AlertInstance a;
    a.labels = ls;
    a.annotations = std::move(annotations);
    a.active_at_ms = t_ms;
    a.value = value;
    fresh.emplace(std::move(ls), std::move(a));
  }
  for (auto& [ls, a] : fresh) {
    auto it = active_.find(ls);
    if (it != active_.end() && it->second.state != AlertState::kInactive) {
      it->second.value = a.value;
      it->second.annotations = a.annotations;
      continue;
    }
    active_[ls] = std::move(a);
  }
  std::vector<tsdb::SeriesData> out;
  int active_pending = 0;
  for (auto it = active_.begin(); it != active_.end();) {
    AlertInstance& a = it->second;
    if (!fresh.count(it->first)) {
      bool keep_firing = false;
      if (a.state == AlertState::kFiring && spec_.keep_firing_for_ms > 0) {
        if (a.keep_firing_since_ms == 0) a.keep_firing_since_ms = t_ms;
        if (t_ms - a.keep_firing_since_ms < spec_.keep_firing_for_ms) keep_firing = true;
      }
      if (a.state == AlertState::kPending ||
          (a.resolved_at_ms != 0 && t_ms - a.resolved_at_ms > kResolvedRetentionMs)) {
        it = active_.erase(it);
        continue;
      }
      if (a.state != AlertState::kInactive && !keep_firing) {
        a.state = AlertState::kInactive;
        a.resolved_at_ms = t_ms;
      }
      if (!keep_firing) {
        ++it;
        continue;
      }
    } else {
      a.keep_firing_since_ms = 0;
    }
    ++active_pending;
    if (a.state == AlertState::kPending && t_ms - a.active_at_ms >= spec_.for_ms) {
      a.state = AlertState::kFiring;
      a.fired_at_ms = t_ms;
    }
    if (restored_) {
      tsdb::Labels ls = a.labels;
      SetLabel(&ls, "__name__", "ALERTS");
      SetLabel(&ls, "alertstate", AlertStateName(a.state));
      out.push_back(OneSample(std::move(ls), t_ms, 1));
      tsdb::Labels fs = a.labels;
      SetLabel(&fs, "__name__", "ALERTS_FOR_STATE");
      out.push_back(
          OneSample(std::move(fs), t_ms, static_cast<double>(FloorSeconds(a.active_at_ms))));
    }
    ++it;
  }
  if (limit > 0 && active_pending > limit) {
    active_.clear();
    return Error{"exceeded limit of " + std::to_string(limit) + " with " +
                 std::to_string(active_pending) + " alerts"};
  }
  return out;
}

std::vector<AlertInstance> Rule::TakeAlertsToSend(int64_t t_ms, int64_t resend_delay_ms,
                                                  int64_t interval_ms) {
  std::vector<AlertInstance> out;
  for (auto& [_, a] : active_) {
    if (a.state == AlertState::kPending) continue;
    // Prometheus' needsSending, with "never sent" standing for Go's zero LastSentAt.
    bool resolved_since_sent =
        a.state == AlertState::kInactive && (!a.sent || a.resolved_at_ms > a.last_sent_at_ms);
    bool due = resolved_since_sent || !a.sent || a.last_sent_at_ms + resend_delay_ms < t_ms;
    if (!due) continue;
    a.last_sent_at_ms = t_ms;
    a.sent = true;
    a.valid_until_ms = t_ms + 4 * std::max(resend_delay_ms, interval_ms);
    out.push_back(a);
  }
  return out;
}

Group::Group(GroupSpec spec, std::string file, int64_t interval_ms, const EvalEnv* env)
    : spec_(std::move(spec)), file_(std::move(file)), interval_ms_(interval_ms) {
  for (const RuleSpec& r : spec_.rules) rules_.push_back(std::make_unique<Rule>(r, env));
  previous_.resize(rules_.size());
}

int Group::Eval(int64_t t_ms, tsdb::Querier& q, const promql::Engine& engine, tsdb::Appender* sink,
                double (*wall_seconds)()) {
  int failures = 0;
  double group_start = wall_seconds ? wall_seconds() : 0;
  if (!stale_next_.empty()) {
    for (const tsdb::Labels& ls : stale_next_) (void)sink->AppendSample(ls, t_ms, tsdb::StaleNaN());
    (void)sink->Commit();
    stale_next_.clear();
  }
  for (size_t i = 0; i < rules_.size(); ++i) {
    Rule& rule = *rules_[i];
    double start = wall_seconds ? wall_seconds() : 0;
    auto result = rule.Eval(t_ms, q, engine, spec_.limit);
    double took = wall_seconds ? wall_seconds() - start : 0;
    if (!result.ok()) {
      rule.set_result(result.error(), t_ms, took);
      ++failures;
      continue;
    }
    Status status;
    std::vector<tsdb::Labels> returned;
    for (const tsdb::SeriesData& s : *result) {
      Status a = sink->AppendSample(s.labels, s.samples[0].t_ms, s.samples[0].v);
      if (!a.ok()) {
        status = a;
      } else {
        returned.push_back(s.labels);
      }
    }
    std::sort(returned.begin(), returned.end());
    for (const tsdb::Labels& prev : previous_[i]) {
      if (!std::binary_search(returned.begin(), returned.end(), prev))
        (void)sink->AppendSample(prev, t_ms, tsdb::StaleNaN());
    }
    if (Status c = sink->Commit(); !c.ok() && status.ok()) status = c;
    previous_[i] = std::move(returned);
    rule.set_result(status, t_ms, took);
    if (!status.ok()) ++failures;
  }
  last_eval_ms_ = t_ms;
  last_duration_s_ = wall_seconds ? wall_seconds() - group_start : 0;
  ++evals_since_load;
  return failures;
}

void Group::RestoreForState(int64_t t_ms, tsdb::Querier& q, int64_t outage_tolerance_ms,
                            int64_t for_grace_period_ms) {
  int64_t mint = t_ms - outage_tolerance_ms;
  for (auto& rule : rules_) {
    if (!rule->is_alert()) continue;
    int64_t hold = rule->spec().for_ms;
    if (hold < for_grace_period_ms) {
      rule->set_restored(true);
      continue;
    }
    for (auto& [ls, a] : rule->mutable_alerts()) {
      std::vector<tsdb::Matcher> matchers;
      auto m = tsdb::Matcher::Make(tsdb::MatchType::kEqual, "__name__", "ALERTS_FOR_STATE");
      if (!m.ok()) continue;
      matchers.push_back(*m);
      for (const auto& l : a.labels) {
        auto lm = tsdb::Matcher::Make(tsdb::MatchType::kEqual, l.name, l.value);
        if (lm.ok()) matchers.push_back(*lm);
      }
      std::vector<tsdb::SeriesData> found;
      if (!q.Select(matchers, mint, t_ms, &found).ok()) continue;
      const tsdb::SeriesData* series = nullptr;
      for (const auto& s : found)
        if (s.labels.size() == a.labels.size() + 1 && !s.samples.empty()) series = &s;
      if (!series) continue;
      const tsdb::Sample& last = series->samples.back();
      if (tsdb::IsStaleNaN(last.v)) continue;
      // Prometheus works in whole seconds here (time.Unix(t/1000, 0), time.Unix(int64(v), 0)).
      int64_t down_at = FloorSeconds(last.t_ms) * 1000;
      int64_t restored_active_at = static_cast<int64_t>(last.v) * 1000;
      int64_t spent_pending = down_at - restored_active_at;
      int64_t remaining = hold - spent_pending;
      if (remaining <= 0) {
        // It was firing when we went down; the next evaluation fires it again if still true.
      } else if (remaining < for_grace_period_ms) {
        restored_active_at = t_ms + for_grace_period_ms - hold;
      } else {
        restored_active_at += t_ms - down_at;
      }
      a.active_at_ms = restored_active_at;
    }
    rule->set_restored(true);
  }
}

void Group::CopyState(Group& old) {
  auto key = [](const Rule& r) {
    std::string k = r.name() + "{";
    for (const auto& l : r.spec().labels) k += l.name + "=" + GoQuote(l.value) + ",";
    return k + "}";
  };
  std::map<std::string, std::vector<size_t>> by_key;
  for (size_t i = 0; i < old.rules_.size(); ++i) by_key[key(*old.rules_[i])].push_back(i);
  std::vector<bool> taken(old.rules_.size());
  for (size_t i = 0; i < rules_.size(); ++i) {
    auto& idx = by_key[key(*rules_[i])];
    if (idx.empty()) continue;
    size_t from = idx.front();
    idx.erase(idx.begin());
    taken[from] = true;
    previous_[i] = old.previous_[from];
    if (rules_[i]->is_alert() && old.rules_[from]->is_alert())
      rules_[i]->mutable_alerts() = old.rules_[from]->alerts();
  }
  for (size_t i = 0; i < old.rules_.size(); ++i)
    if (!taken[i])
      stale_next_.insert(stale_next_.end(), old.previous_[i].begin(), old.previous_[i].end());
  last_eval_ms_ = old.last_eval_ms_;
  last_duration_s_ = old.last_duration_s_;
}

void Group::MarkAllStale(int64_t t_ms, tsdb::Appender* sink) {
  for (auto& series : previous_)
    for (const auto& ls : series) (void)sink->AppendSample(ls, t_ms, tsdb::StaleNaN());
  (void)sink->Commit();
}

}  // namespace gw::rules
