// promtool test rules, as cmd/promtool/unittest.go in Prometheus 2.42.
#include "rules/unit_test.h"

#include <glob.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "base/yaml_load.h"
#include "promql/ast.h"
#include "promql/parser.h"
#include "rules/group.h"
#include "rules/rule_file.h"
#include "rules/template.h"

namespace gw::rules {
namespace {

bool Duration(const YAML::Node& n, int64_t* ms) {
  std::string s = n.Scalar();
  if (s == "0") {
    *ms = 0;
    return true;
  }
  if (s.find_first_not_of("0123456789") == std::string::npos) return false;
  return promql::ParsePromDuration(s, ms);
}

Expected<tsdb::Labels> ParseMetric(const std::string& text) {
  std::string t = text;
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
  if (t.empty() || t == "{}") return tsdb::Labels{};
  auto e = promql::Parse(t);
  if (!e.ok()) return e.error();
  if ((*e)->kind != promql::ExprKind::kVectorSelector)
    return Error{"1:1: parse error: unexpected expression, expected a series description"};
  const auto& sel = static_cast<const promql::VectorSelector&>(**e);
  tsdb::Labels ls;
  for (const auto& m : sel.matchers) {
    if (m.type() != tsdb::MatchType::kEqual)
      return Error{"1:1: parse error: unexpected matcher type in series description"};
    ls.push_back({m.name(), m.value()});
  }
  std::sort(ls.begin(), ls.end());
  return ls;
}

struct ExpAlert {
  tsdb::Labels labels, annotations;
  bool operator<(const ExpAlert& o) const {
    return labels != o.labels ? labels < o.labels : annotations < o.annotations;
  }
  bool operator==(const ExpAlert& o) const = default;
};

std::string IndentLines(const std::string& lines, const std::string& indent) {
  std::string out;
  size_t start = 0;
  bool first = true;
  while (true) {
    size_t nl = lines.find('\n', start);
    if (!first) out += indent;
    out += lines.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    first = false;
    if (nl == std::string::npos) break;
    out += '\n';
    start = nl + 1;
  }
  return out;
}

std::string AlertsString(const std::vector<ExpAlert>& la) {
  if (la.empty()) return "[]";
  auto one = [](const ExpAlert& a) {
    return "Labels:" + LabelsString(a.labels) + "\nAnnotations:" + LabelsString(a.annotations);
  };
  std::string s = "[\n0:" + IndentLines("\n" + one(la[0]), "  ");
  for (size_t i = 1; i < la.size(); ++i)
    s += ",\n" + std::to_string(i) + ":" + IndentLines("\n" + one(la[i]), "  ");
  return s + "\n]";
}

std::string SamplesString(const std::vector<std::pair<tsdb::Labels, double>>& ss) {
  if (ss.empty()) return "nil";
  std::string s;
  for (size_t i = 0; i < ss.size(); ++i)
    s += (i ? ", " : "") + LabelsString(ss[i].first) + " " + FormatGoFloat(ss[i].second, 'E');
  return s;
}

std::vector<std::string> ResolveRuleFiles(const std::string& test_path, const YAML::Node& list) {
  std::vector<std::string> out;
  std::filesystem::path dir = std::filesystem::path(test_path).parent_path();
  for (const YAML::Node& n : list) {
    std::string p = n.Scalar();
    if (!p.empty() && p[0] != '/') p = (dir / p).string();
    glob_t g{};
    if (glob(p.c_str(), 0, nullptr, &g) == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) out.push_back(g.gl_pathv[i]);
    } else if (p.find_first_of("*?[") == std::string::npos) {
      out.push_back(p);
    }
    globfree(&g);
  }
  return out;
}

class TestGroupRunner {
 public:
  TestGroupRunner(const YAML::Node& tg, const std::vector<RuleFile>& files, int64_t eval_interval,
                  const std::vector<std::string>& order)
      : tg_(tg), files_(files), eval_interval_(eval_interval), order_(order) {}

  std::vector<std::string> Run() {
    std::vector<std::string> errs;
    int64_t interval = 0;
    if (tg_["interval"] && !Duration(tg_["interval"], &interval))
      return {"not a valid duration string: \"" + tg_["interval"].Scalar() + "\""};
    if (tg_["external_labels"])
      for (const auto& item : tg_["external_labels"])
        env_.external_labels.push_back({item.first.Scalar(), item.second.Scalar()});
    std::sort(env_.external_labels.begin(), env_.external_labels.end());
    if (tg_["external_url"]) env_.external_url = tg_["external_url"].Scalar();

    // Input series.
    for (const YAML::Node& s : tg_["input_series"]) {
      auto ls = ParseMetric(s["series"].Scalar());
      if (!ls.ok()) return {ls.error().message};
      auto vals = ExpandSeriesValues(s["values"] ? s["values"].Scalar() : "");
      if (!vals.ok()) return {vals.error().message};
      for (size_t i = 0; i < vals->values.size(); ++i) {
        if (!vals->present[i]) continue;
        (void)store_.AppendSample(*ls, static_cast<int64_t>(i) * interval, vals->values[i]);
      }
    }

    // Groups, in group_eval_order when given (file order otherwise).
    std::vector<std::unique_ptr<Group>> groups;
    for (const RuleFile& f : files_)
      for (const GroupSpec& g : f.groups)
        groups.push_back(std::make_unique<Group>(g, f.path, eval_interval_, &env_));
    if (!order_.empty()) {
      std::map<std::string, size_t> rank;
      for (size_t i = 0; i < order_.size(); ++i) rank[order_[i]] = i;
      for (const auto& g : groups)
        if (!rank.count(g->name()))
          return {"    group \"" + g->name() + "\" is not in group_eval_order"};
      std::stable_sort(groups.begin(), groups.end(), [&](const auto& a, const auto& b) {
        return rank[a->name()] < rank[b->name()];
      });
    }
    for (auto& g : groups)
      for (auto& r : g->rules()) r->set_restored(true);

    // Alert tests by eval time.
    std::map<int64_t, std::vector<YAML::Node>> alert_tests;
    int64_t max_t = 0;
    for (const YAML::Node& a : tg_["alert_rule_test"]) {
      int64_t t = 0;
      if (a["eval_time"] && !Duration(a["eval_time"], &t))
        return {"not a valid duration string: \"" + a["eval_time"].Scalar() + "\""};
      if (!a["alertname"] || a["alertname"].Scalar().empty())
        return {"    alertname can't be empty"};
      alert_tests[t].push_back(a);
      max_t = std::max(max_t, t);
    }
    std::vector<std::pair<int64_t, YAML::Node>> expr_tests;
    for (const YAML::Node& e : tg_["promql_expr_test"]) {
      int64_t t = 0;
      if (e["eval_time"] && !Duration(e["eval_time"], &t))
        return {"not a valid duration string: \"" + e["eval_time"].Scalar() + "\""};
      expr_tests.push_back({t, e});
      max_t = std::max(max_t, t);
    }

    promql::EngineOptions eo;
    eo.default_subquery_step_ms = eval_interval_;
    promql::Engine engine(eo);
    auto next_alert = alert_tests.begin();
    for (int64_t ts = 0; ts <= max_t; ts += eval_interval_) {
      std::vector<std::string> eval_errs;
      for (auto& g : groups) {
        g->Eval(ts, querier_, engine, &store_);
        for (const auto& r : g->rules())
          if (r->health() == "err")
            eval_errs.push_back("    rule: " + r->name() + ", time: " + GoDurationString(ts) +
                                ", err: " + r->last_error());
      }
      if (!eval_errs.empty()) {
        errs.insert(errs.end(), eval_errs.begin(), eval_errs.end());
        return errs;
      }
      for (; next_alert != alert_tests.end() && ts <= next_alert->first &&
             next_alert->first < ts + eval_interval_;
           ++next_alert) {
        CheckAlerts(next_alert->first, next_alert->second, groups, &errs);
      }
    }

    for (const auto& [t, e] : expr_tests) CheckExpr(t, e, engine, &errs);
    return errs;
  }

 private:
  void CheckAlerts(int64_t t, const std::vector<YAML::Node>& tests,
                   const std::vector<std::unique_ptr<Group>>& groups,
                   std::vector<std::string>* errs) {
    for (const YAML::Node& tc : tests) {
      std::string name = tc["alertname"].Scalar();
      std::vector<ExpAlert> got, exp;
      for (const auto& g : groups)
        for (const auto& r : g->rules()) {
          if (!r->is_alert() || r->name() != name) continue;
          for (const auto& [_, a] : r->alerts())
            if (a.state == AlertState::kFiring) got.push_back({a.labels, a.annotations});
        }
      for (const YAML::Node& ea : tc["exp_alerts"]) {
        ExpAlert x;
        bool has_name = false;
        for (const auto& item : ea["exp_labels"]) {
          if (item.first.Scalar() == "alertname") has_name = true;
          x.labels.push_back({item.first.Scalar(), item.second.Scalar()});
        }
        if (has_name) {
          for (auto& l : x.labels)
            if (l.name == "alertname") l.value = name;
        } else {
          x.labels.push_back({"alertname", name});
        }
        for (const auto& item : ea["exp_annotations"])
          x.annotations.push_back({item.first.Scalar(), item.second.Scalar()});
        std::sort(x.labels.begin(), x.labels.end());
        std::sort(x.annotations.begin(), x.annotations.end());
        exp.push_back(std::move(x));
      }
      std::sort(got.begin(), got.end());
      std::sort(exp.begin(), exp.end());
      if (got != exp) {
        const std::string ind = "            ";
        errs->push_back("    alertname: " + name + ", time: " + promql::FormatPromDuration(t) +
                        ", \n        exp:" + IndentLines(AlertsString(exp), ind) +
                        ", \n        got:" + IndentLines(AlertsString(got), ind));
      }
    }
  }

  void CheckExpr(int64_t t, const YAML::Node& tc, const promql::Engine& engine,
                 std::vector<std::string>* errs) {
    std::string expr = tc["expr"].Scalar();
    std::string head = "    expr: " + GoQuote(expr) + ", time: " + promql::FormatPromDuration(t);
    auto r = QueryVector(querier_, engine, expr, t);
    if (!r.ok()) {
      errs->push_back(head + ", err: " + r.error().message);
      return;
    }
    std::vector<std::pair<tsdb::Labels, double>> got, exp;
    for (auto& s : *r) got.push_back({s.labels, s.points.empty() ? 0 : s.points[0].v});
    for (const YAML::Node& es : tc["exp_samples"]) {
      std::string text = es["labels"] ? es["labels"].Scalar() : "";
      auto ls = ParseMetric(text);
      if (!ls.ok()) {
        errs->push_back(head + ", err: labels " + GoQuote(text) + ": " + ls.error().message);
        return;
      }
      double v = 0;
      if (es["value"]) {
        std::string vs = es["value"].Scalar();
        if (vs == "NaN" || vs == "nan" || vs == ".nan")
          v = NAN;
        else if (vs == "Inf" || vs == "+Inf" || vs == ".inf")
          v = INFINITY;
        else if (vs == "-Inf" || vs == "-.inf")
          v = -INFINITY;
        else
          v = std::strtod(vs.c_str(), nullptr);
      }
      exp.push_back({*ls, v});
    }
    auto by_labels = [](const auto& a, const auto& b) { return a.first < b.first; };
    std::sort(got.begin(), got.end(), by_labels);
    std::sort(exp.begin(), exp.end(), by_labels);
    bool equal = got.size() == exp.size();
    for (size_t i = 0; equal && i < got.size(); ++i)
      equal = got[i].first == exp[i].first && got[i].second == exp[i].second;  // NaN != NaN, as Go
    if (!equal)
      errs->push_back(head + ",\n        exp: " + SamplesString(exp) +
                      "\n        got: " + SamplesString(got));
  }

  const YAML::Node& tg_;
  const std::vector<RuleFile>& files_;
  int64_t eval_interval_;
  const std::vector<std::string>& order_;
  EvalEnv env_;
  // The test store: input series plus everything the rules write.
  tsdb::MemoryQuerier querier_;
  tsdb::MemoryAppender store_{&querier_};
};

}  // namespace

std::string LabelsString(const tsdb::Labels& ls) {
  std::string s = "{";
  for (size_t i = 0; i < ls.size(); ++i)
    s += (i ? ", " : "") + ls[i].name + "=" + GoQuote(ls[i].value);
  return s + "}";
}

std::string GoDurationString(int64_t ms) {
  if (ms == 0) return "0s";
  std::string sign = ms < 0 ? "-" : "";
  if (ms < 0) ms = -ms;
  if (ms < 1000) return sign + std::to_string(ms) + "ms";
  int64_t h = ms / 3600000, m = (ms / 60000) % 60, s = (ms / 1000) % 60, frac = ms % 1000;
  std::string secs = std::to_string(s);
  if (frac) {
    char buf[8];
    std::snprintf(buf, sizeof buf, ".%03d", static_cast<int>(frac));
    std::string f = buf;
    while (f.back() == '0') f.pop_back();
    secs += f;
  }
  std::string out = sign;
  if (h) out += std::to_string(h) + "h";
  if (h || m) out += std::to_string(m) + "m";
  return out + secs + "s";
}

Expected<SeriesValues> ExpandSeriesValues(const std::string& text) {
  SeriesValues out;
  size_t i = 0;
  auto number = [](const std::string& s, double* v) {
    if (s == "Inf" || s == "+Inf" || s == "inf" || s == "+inf") return *v = INFINITY, true;
    if (s == "-Inf" || s == "-inf") return *v = -INFINITY, true;
    if (s == "NaN" || s == "nan") return *v = NAN, true;
    if (s == "stale") return *v = tsdb::StaleNaN(), true;
    if (s.empty()) return false;
    char* end = nullptr;
    *v = std::strtod(s.c_str(), &end);
    return *end == 0;
  };
  auto count = [](const std::string& s, uint64_t* n) {
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) return false;
    *n = std::strtoull(s.c_str(), nullptr, 10);
    return true;
  };
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i >= text.size()) break;
    size_t j = i;
    while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j]))) ++j;
    std::string item = text.substr(i, j - i);
    i = j;
    auto bad = [&] {
      return Error{"1:1: parse error: unexpected \"" + item + "\" in series values"};
    };
    size_t x = item.rfind('x');
    std::string head = item, times;
    if (x != std::string::npos && x > 0 &&
        item.find_first_not_of("0123456789", x + 1) == std::string::npos && x + 1 < item.size()) {
      head = item.substr(0, x);
      times = item.substr(x + 1);
    }
    uint64_t n = 0;
    if (!times.empty() && !count(times, &n)) return bad();
    if (head == "_") {
      uint64_t k = times.empty() ? 1 : n;
      for (uint64_t c = 0; c < k; ++c) {
        out.values.push_back(0);
        out.present.push_back(false);
      }
      continue;
    }
    if (times.empty()) {
      double v;
      if (!number(head, &v)) return bad();
      out.values.push_back(v);
      out.present.push_back(true);
      continue;
    }
    // a, a+b or a-b before xN: find the operator after the first character (a may be signed).
    size_t op = std::string::npos;
    for (size_t k = 1; k < head.size(); ++k)
      if ((head[k] == '+' || head[k] == '-') && head[k - 1] != 'e' && head[k - 1] != 'E') {
        op = k;
        break;
      }
    double start = 0, step = 0;
    if (op == std::string::npos) {
      if (!number(head, &start)) return bad();
    } else {
      if (!number(head.substr(0, op), &start) || !number(head.substr(op + 1), &step)) return bad();
      if (head[op] == '-') step = -step;
    }
    double v = start;
    for (uint64_t c = 0; c <= n; ++c) {
      out.values.push_back(v);
      out.present.push_back(true);
      v += step;
    }
  }
  return out;
}

std::vector<std::string> RunRuleUnitTestFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {path + ": cannot read the file"};
  std::stringstream text;
  text << in.rdbuf();
  // promtool's strict decoding refuses a key given twice in one mapping; so does this.
  auto loaded = LoadYamlStrict(text.str(), path);
  if (!loaded.ok()) return {loaded.error().message};
  const YAML::Node& root = *loaded;
  static const std::set<std::string> kTop = {"rule_files", "evaluation_interval",
                                             "group_eval_order", "tests"};
  if (!root.IsMap()) return {path + ": expected a mapping (rule_files, tests, ...)"};
  for (const auto& item : root)
    if (!kTop.count(item.first.Scalar()))
      return {path + ":" + std::to_string(item.first.Mark().line + 1) + ": field " +
              item.first.Scalar() + " not found in type main.unitTestFile"};
  int64_t eval_interval = 60000;
  if (root["evaluation_interval"] && !Duration(root["evaluation_interval"], &eval_interval))
    return {"not a valid duration string: \"" + root["evaluation_interval"].Scalar() + "\""};
  if (eval_interval <= 0) eval_interval = 60000;
  std::vector<std::string> order;
  std::set<std::string> seen;
  for (const YAML::Node& n : root["group_eval_order"]) {
    if (!seen.insert(n.Scalar()).second)
      return {"group name repeated in evaluation order: " + n.Scalar()};
    order.push_back(n.Scalar());
  }
  std::vector<RuleFile> files;
  std::vector<std::string> errs;
  for (const std::string& f : ResolveRuleFiles(path, root["rule_files"])) {
    auto r = ParseRuleFile(f);
    if (!r.ok()) {
      errs.push_back(r.error().message);
      continue;
    }
    files.push_back(std::move(*r));
  }
  if (!errs.empty()) return errs;
  for (const YAML::Node& tg : root["tests"]) {
    TestGroupRunner runner(tg, files, eval_interval, order);
    auto e = runner.Run();
    errs.insert(errs.end(), e.begin(), e.end());
  }
  return errs;
}

int RunRuleUnitTests(const std::vector<std::string>& files, std::ostream& out, std::ostream& err) {
  bool failed = false;
  for (const std::string& f : files) {
    out << "Unit Testing:  " << f << "\n";
    std::vector<std::string> errs = RunRuleUnitTestFile(f);
    if (!errs.empty()) {
      err << "  FAILED:\n";
      for (const std::string& e : errs) {
        err << e << "\n";
        out << "\n";
      }
      failed = true;
    } else {
      out << "  SUCCESS\n";
    }
    out << "\n";
  }
  out.flush();
  err.flush();
  return failed ? 1 : 0;
}

}  // namespace gw::rules
