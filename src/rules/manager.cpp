// The rule manager (Prometheus 2.42 rules/manager.go, driven by the caller's clock).
#include "rules/manager.h"

#include <glob.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <map>

#include "base/utc_time.h"
#include "rules/template.h"
#include "rules/template_funcs.h"

namespace gw::rules {
namespace {

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

std::vector<std::string> ExpandGlobs(const std::vector<std::string>& patterns) {
  std::vector<std::string> out;
  for (const std::string& p : patterns) {
    glob_t g{};
    if (glob(p.c_str(), 0, nullptr, &g) == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) out.push_back(g.gl_pathv[i]);
    } else if (p.find_first_of("*?[") == std::string::npos) {
      out.push_back(p);  // a plain path that does not exist: let the parser say so
    }
    globfree(&g);
  }
  return out;
}

nlohmann::json LabelsJson(const tsdb::Labels& ls) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& l : ls) j[l.name] = l.value;
  return j;
}

nlohmann::json AlertJson(const AlertInstance& a) {
  return {{"labels", LabelsJson(a.labels)},
          {"annotations", LabelsJson(a.annotations)},
          {"state", AlertStateName(a.state)},
          {"activeAt", FormatRfc3339(a.active_at_ms)},
          {"value", FormatGoFloat(a.value, 'e')}};
}

}  // namespace

std::string FormatRfc3339(int64_t t_ms, bool zero_is_go_zero) {
  if (t_ms == 0 && zero_is_go_zero) return "0001-01-01T00:00:00Z";
  const UtcTime u = ToUtc(t_ms);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &u.tm);
  return buf + GoFraction(u.millis) + "Z";
}

Manager::Manager(ManagerOptions options, QuerierFactory querier, tsdb::Appender* sink,
                 SendFunc send, Logger* log)
    : options_(std::move(options)),
      engine_(options_.engine),
      querier_(std::move(querier)),
      sink_(sink),
      send_(std::move(send)),
      log_(log) {
  env_.external_labels = options_.external_labels;
  env_.external_url = options_.external_url;
  env_.instant_query = options_.instant_query;
}

Manager::~Manager() = default;

Status Manager::Load(const std::vector<std::string>& files) {
  std::vector<RuleFile> parsed;
  std::string errors;
  for (const std::string& f : ExpandGlobs(files)) {
    auto r = ParseRuleFile(f);
    if (!r.ok()) {
      errors += (errors.empty() ? "" : "\n") + r.error().message;
      continue;
    }
    parsed.push_back(std::move(*r));
  }
  if (!errors.empty()) return Error{errors};

  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::unique_ptr<Group>> next;
  for (RuleFile& file : parsed) {
    for (GroupSpec& spec : file.groups) {
      int64_t interval = spec.interval_ms > 0 ? spec.interval_ms : options_.default_interval_ms;
      auto old = std::find_if(groups_.begin(), groups_.end(), [&](const auto& g) {
        return g && g->name() == spec.name && g->file() == file.path;
      });
      if (old != groups_.end() && (*old)->interval_ms() == interval &&
          (*old)->limit() == spec.limit && (*old)->spec().rules == spec.rules) {
        next.push_back(std::move(*old));  // unchanged: keeps running as it was
        continue;
      }
      auto g = std::make_unique<Group>(std::move(spec), file.path, interval, &env_);
      g->should_restore = !loaded_once_;
      if (loaded_once_)
        for (auto& r : g->rules()) r->set_restored(true);
      if (old != groups_.end()) {
        g->CopyState(**old);
        g->next_eval_ms = (*old)->next_eval_ms;
        old->reset();
      }
      next.push_back(std::move(g));
    }
  }
  for (auto& g : groups_)
    if (g) removed_.push_back(std::move(g));
  groups_ = std::move(next);
  std::sort(groups_.begin(), groups_.end(), [](const auto& a, const auto& b) {
    return a->file() != b->file() ? a->file() < b->file() : a->name() < b->name();
  });
  loaded_once_ = true;
  size_t rules = 0;
  for (auto& g : groups_) rules += g->rules().size();
  if (log_)
    log_->Info("rules: loaded " + std::to_string(groups_.size()) + " groups, " +
               std::to_string(rules) + " rules");
  return Status::Ok();
}

void Manager::EvalDue(int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& g : removed_) g->MarkAllStale(now_ms, sink_);
  removed_.clear();
  for (auto& gp : groups_) {
    Group& g = *gp;
    int64_t interval = std::max<int64_t>(g.interval_ms(), 1);
    int64_t offset =
        static_cast<int64_t>(Fnv1a(g.name() + "\xff" + g.file()) % static_cast<uint64_t>(interval));
    int64_t adj = now_ms - offset;
    int64_t base = adj - (((adj % interval) + interval) % interval);
    int64_t slot = base + offset;
    if (g.next_eval_ms >= 0 && now_ms < g.next_eval_ms) continue;
    if (slot <= g.last_eval_ms() && g.evals_since_load > 0) continue;
    std::unique_ptr<tsdb::Querier> q = querier_();
    if (!q) continue;
    double start = SteadySeconds();
    int failed = g.Eval(slot, *q, engine_, sink_, &SteadySeconds);
    last_duration_s_ = SteadySeconds() - start;
    ++evaluations_;
    failures_ += static_cast<uint64_t>(failed);
    if (failed > 0 && log_) {
      // One line per distinct error: a store that does not answer fails every rule of the group
      // with the same message, which would otherwise be a line per rule per evaluation.
      std::map<std::string, std::vector<std::string>> rules_by_error;
      for (const auto& r : g.rules())
        if (r->health() == "err") rules_by_error[r->last_error()].push_back(r->name());
      for (const auto& [err, names] : rules_by_error) {
        std::string list;
        for (const std::string& n : names) list += (list.empty() ? "" : ",") + n;
        log_->Warn("rules: evaluating rule failed: group=" + g.name() +
                   (names.size() == 1 ? " rule=" : " rules=") + list + " err=" + err);
      }
    }
    if (g.should_restore && g.evals_since_load >= 2) {
      std::unique_ptr<tsdb::Querier> rq = querier_();
      if (rq)
        g.RestoreForState(slot, *rq, options_.outage_tolerance_ms, options_.for_grace_period_ms);
      g.should_restore = false;
    }
    g.next_eval_ms = slot + interval;
    SendDue(g, slot);
  }
}

void Manager::SendDue(Group& g, int64_t t_ms) {
  std::vector<Alert> out;
  for (auto& r : g.rules()) {
    if (!r->is_alert()) continue;
    for (AlertInstance& a : r->TakeAlertsToSend(t_ms, options_.resend_delay_ms, g.interval_ms())) {
      Alert s;
      s.labels = a.labels;
      for (const auto& l : options_.external_labels)
        if (tsdb::LabelValue(s.labels, l.name).empty()) {
          s.labels.push_back(l);
          std::sort(s.labels.begin(), s.labels.end());
        }
      s.annotations = a.annotations;
      s.starts_at_ms = a.fired_at_ms;
      s.ends_at_ms = a.resolved_at_ms != 0 ? a.resolved_at_ms : a.valid_until_ms;
      s.generator_url =
          options_.external_url + "/graph?g0.expr=" + tmpl::QueryEscape(r->query()) + "&g0.tab=1";
      out.push_back(std::move(s));
    }
  }
  if (!out.empty() && send_) send_(std::move(out));
}

nlohmann::json Manager::RulesApi(std::string_view type_filter) const {
  bool alerts = type_filter.empty() || type_filter == "alert";
  bool records = type_filter.empty() || type_filter == "record";
  if (!alerts && !records) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : groups_) {
    nlohmann::json rules = nlohmann::json::array();
    for (const auto& r : g->rules()) {
      nlohmann::json j;
      if (r->is_alert()) {
        if (!alerts) continue;
        nlohmann::json list = nlohmann::json::array();
        for (const auto& [_, a] : r->alerts())
          if (a.state != AlertState::kInactive) list.push_back(AlertJson(a));
        j = {{"state", AlertStateName(r->state())},
             {"name", r->name()},
             {"query", r->query()},
             {"duration", static_cast<double>(r->spec().for_ms) / 1000.0},
             {"keepFiringFor", static_cast<double>(r->spec().keep_firing_for_ms) / 1000.0},
             {"labels", LabelsJson(r->spec().labels)},
             {"annotations", LabelsJson(r->spec().annotations)},
             {"alerts", list},
             {"health", r->health()}};
      } else {
        if (!records) continue;
        j = {{"name", r->name()}, {"query", r->query()}};
        if (!r->spec().labels.empty()) j["labels"] = LabelsJson(r->spec().labels);
        j["health"] = r->health();
      }
      if (!r->last_error().empty()) j["lastError"] = r->last_error();
      j["evaluationTime"] = r->eval_duration_s();
      j["lastEvaluation"] = FormatRfc3339(r->last_eval_ms());
      j["type"] = r->is_alert() ? "alerting" : "recording";
      rules.push_back(std::move(j));
    }
    groups.push_back({{"name", g->name()},
                      {"file", g->file()},
                      {"rules", rules},
                      {"interval", static_cast<double>(g->interval_ms()) / 1000.0},
                      {"limit", g->limit()},
                      {"evaluationTime", g->last_duration_s()},
                      {"lastEvaluation", FormatRfc3339(g->last_eval_ms())}});
  }
  return {{"groups", groups}};
}

nlohmann::json Manager::AlertsApi() const {
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json list = nlohmann::json::array();
  for (const auto& g : groups_)
    for (const auto& r : g->rules())
      for (const auto& [_, a] : r->alerts())
        if (a.state != AlertState::kInactive) list.push_back(AlertJson(a));
  return {{"alerts", list}};
}

Manager::Stats Manager::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stats s;
  s.evaluations = evaluations_;
  s.evaluation_failures = failures_;
  s.last_duration_s = last_duration_s_;
  for (const auto& g : groups_) {
    s.rules += g->rules().size();
    for (const auto& r : g->rules())
      for (const auto& [_, a] : r->alerts()) {
        if (a.state == AlertState::kFiring) ++s.alerts_firing;
        if (a.state == AlertState::kPending) ++s.alerts_pending;
      }
  }
  return s;
}

}  // namespace gw::rules
