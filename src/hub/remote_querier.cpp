#include "hub/remote_querier.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "promql/parser.h"

namespace gw::hub {

namespace {

std::string SecondsText(int64_t ms) {
  char b[48];
  std::snprintf(b, sizeof b, "%.3f", double(ms) / 1000);
  return b;
}

void Scope(promql::Expr* e, const tsdb::Matcher& add) {
  using promql::ExprKind;
  switch (e->kind) {
    case ExprKind::kNumber:
    case ExprKind::kString:
      return;
    case ExprKind::kVectorSelector: {
      auto* vs = static_cast<promql::VectorSelector*>(e);
      std::erase_if(vs->matchers,
                    [&add](const tsdb::Matcher& m) { return m.name() == add.name(); });
      vs->matchers.push_back(add);
      return;
    }
    case ExprKind::kMatrixSelector:
      return Scope(static_cast<promql::MatrixSelector*>(e)->selector.get(), add);
    case ExprKind::kSubquery:
      return Scope(static_cast<promql::Subquery*>(e)->expr.get(), add);
    case ExprKind::kParen:
      return Scope(static_cast<promql::ParenExpr*>(e)->expr.get(), add);
    case ExprKind::kUnary:
      return Scope(static_cast<promql::UnaryExpr*>(e)->expr.get(), add);
    case ExprKind::kBinary: {
      auto* b = static_cast<promql::BinaryExpr*>(e);
      Scope(b->lhs.get(), add);
      return Scope(b->rhs.get(), add);
    }
    case ExprKind::kAggregate: {
      auto* a = static_cast<promql::AggregateExpr*>(e);
      Scope(a->expr.get(), add);
      if (a->param) Scope(a->param.get(), add);
      return;
    }
    case ExprKind::kCall:
      for (auto& arg : static_cast<promql::Call*>(e)->args) Scope(arg.get(), add);
      return;
  }
}

}  // namespace

std::string SelectorText(const std::vector<tsdb::Matcher>& matchers) {
  promql::VectorSelector selector;  // no name: every matcher inside the braces
  selector.matchers = matchers;
  return promql::Format(selector);
}

Expected<std::string> ScopeQuery(const std::string& query, const std::string& label,
                                 const std::string& value) {
  auto add = tsdb::Matcher::Make(tsdb::MatchType::kEqual, label, value);
  if (!add.ok()) return add.error();
  auto expr = promql::Parse(query);
  if (!expr.ok()) return expr.error();
  Scope(expr->get(), *add);
  return promql::Format(**expr);
}

Status RemoteQuerier::Select(const std::vector<tsdb::Matcher>& matchers, int64_t mint_ms,
                             int64_t maxt_ms, std::vector<tsdb::SeriesData>* out) {
  out->clear();
  if (maxt_ms < mint_ms) return Status::Ok();
  std::vector<tsdb::Matcher> all = matchers;
  for (const tsdb::Matcher& s : scope_) {
    std::erase_if(all, [&s](const tsdb::Matcher& m) { return m.name() == s.name(); });
    all.push_back(s);
  }
  // The store's range selector reaches back `range` from maxt; one millisecond more covers a
  // store whose window is open on the left (VictoriaMetrics), and the samples are cut to
  // [mint, maxt] below.
  const std::string expr = SelectorText(all) + "[" + std::to_string(maxt_ms - mint_ms + 1) + "ms]";
  auto data = store_->Query(expr, double(maxt_ms) / 1000);
  if (!data.ok()) return Error{data.error().message};
  if (data->value("resultType", "") != "matrix")
    return Error{"the store answered `" + expr + "` with a " + data->value("resultType", "?") +
                 ", not a matrix of samples"};
  for (const auto& r : (*data)["result"]) {
    tsdb::SeriesData s;
    if (r.contains("metric") && r["metric"].is_object())
      for (const auto& [name, value] : r["metric"].items())
        if (value.is_string()) s.labels.push_back({name, value.get<std::string>()});
    std::sort(s.labels.begin(), s.labels.end());
    for (const auto& p : r.value("values", nlohmann::json::array())) {
      if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_string()) continue;
      const auto t = static_cast<int64_t>(std::llround(p[0].get<double>() * 1000));
      if (t < mint_ms || t > maxt_ms) continue;
      if (!s.samples.empty() && t <= s.samples.back().t_ms) continue;
      s.samples.push_back({t, std::strtod(p[1].get<std::string>().c_str(), nullptr)});
    }
    if (!s.samples.empty()) out->push_back(std::move(s));
  }
  std::sort(out->begin(), out->end(), [](const tsdb::SeriesData& a, const tsdb::SeriesData& b) {
    return a.labels < b.labels;
  });
  return Status::Ok();
}

Status RemoteQuerier::Labels(const std::string& path,
                             const std::vector<std::vector<tsdb::Matcher>>& sets, int64_t mint_ms,
                             int64_t maxt_ms, std::vector<std::string>* out) {
  std::vector<std::pair<std::string, std::string>> fields = {{"start", SecondsText(mint_ms)},
                                                             {"end", SecondsText(maxt_ms)}};
  for (const auto& set : sets) {
    std::vector<tsdb::Matcher> all = set;
    all.insert(all.end(), scope_.begin(), scope_.end());
    fields.emplace_back("match[]", SelectorText(all));
  }
  if (sets.empty() && !scope_.empty()) fields.emplace_back("match[]", SelectorText(scope_));
  // Label values are a GET in Prometheus 2.42; both stores take the form as the query string.
  auto reply = http::GetUrl(store_->url() + path + "?" + Form(fields), 5);
  if (!reply.ok()) return Error{"the store at " + store_->url() + ": " + reply.error().message};
  nlohmann::json j = nlohmann::json::parse(reply->body, nullptr, false);
  if (reply->status != 200 || !j.is_object() || !j.contains("data") || !j["data"].is_array())
    return Error{"the store at " + store_->url() + path + ": " +
                 StoreErrorMessage({reply->status, reply->body})};
  std::set<std::string> names;
  for (const auto& v : j["data"])
    if (v.is_string()) names.insert(v.get<std::string>());
  out->assign(names.begin(), names.end());
  return Status::Ok();
}

Status RemoteQuerier::LabelNames(const std::vector<std::vector<tsdb::Matcher>>& matcher_sets,
                                 int64_t mint_ms, int64_t maxt_ms, std::vector<std::string>* out) {
  return Labels("/api/v1/labels", matcher_sets, mint_ms, maxt_ms, out);
}

Status RemoteQuerier::LabelValues(const std::string& name,
                                  const std::vector<std::vector<tsdb::Matcher>>& matcher_sets,
                                  int64_t mint_ms, int64_t maxt_ms, std::vector<std::string>* out) {
  if (!tsdb::IsValidLabelName(name)) return Error{"invalid label name '" + name + "'"};
  return Labels("/api/v1/label/" + name + "/values", matcher_sets, mint_ms, maxt_ms, out);
}

}  // namespace gw::hub
