// Evaluates every case of testdata/compat.txt — expressions with the results the real
// Prometheus 2.42 gave on the same data (see gen_compat.py) — and compares series by series:
// same label sets, values equal within 1e-9 relative, NaN = NaN, same error text.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "promql/engine.h"
#include "promql/parser.h"

namespace gw::promql {
namespace {

struct Case {
  int line = 0;
  int64_t t_ms = 0;
  std::string expr;
  std::vector<std::string> expected;  // "<labels> <value>" lines or "error <message>"
};

// "{a=\"b\", c=\"d\"}" or the selector form "name{a=\"b\",c=\"d\"}" into sorted labels.
tsdb::Labels ParseLabels(const std::string& text) {
  tsdb::Labels out;
  size_t brace = text.find('{');
  if (brace > 0 && brace != std::string::npos) out.push_back({"__name__", text.substr(0, brace)});
  if (brace == std::string::npos) {
    out.push_back({"__name__", text});
    return out;
  }
  size_t i = brace + 1;
  while (i < text.size() && text[i] != '}') {
    while (text[i] == ' ' || text[i] == ',') ++i;
    size_t eq = text.find('=', i);
    std::string name = text.substr(i, eq - i);
    i = eq + 2;  // skip ="
    std::string value;
    while (text[i] != '"') {
      if (text[i] == '\\') ++i;
      value.push_back(text[i++]);
    }
    ++i;
    out.push_back({name, value});
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string LabelsText(const tsdb::Labels& l) {
  std::string out = "{";
  for (size_t i = 0; i < l.size(); ++i) {
    if (i) out += ", ";
    out += l[i].name + "=\"" + l[i].value + "\"";
  }
  return out + "}";
}

int64_t DurationMs(const std::string& d) {
  int64_t ms = 0;
  EXPECT_TRUE(ParsePromDuration(d, &ms)) << d;
  return ms;
}

// Prometheus names the two clashing series of a match group in storage order (series creation
// order), which differs between stores; compare the pair in either order.
std::string NormalizeError(const std::string& msg) {
  size_t open = msg.find(": [{"), close = msg.find("}];");
  if (msg.rfind("found duplicate series", 0) != 0 || open == std::string::npos ||
      close == std::string::npos)
    return msg;
  std::string pair = msg.substr(open + 3, close + 1 - (open + 3));
  size_t split = pair.find("}, {");
  std::string a = pair.substr(0, split + 1), b = pair.substr(split + 3);
  if (b < a) std::swap(a, b);
  return msg.substr(0, open + 3) + a + ", " + b + msg.substr(close + 1);
}

bool SameValue(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (a == b) return true;
  return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b));
}

class CompatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ifstream in(std::string(GW_SOURCE_DIR) + "/tests/promql/testdata/compat.txt");
    ASSERT_TRUE(in) << "missing testdata/compat.txt";
    std::string line;
    int64_t interval_ms = 30000;
    int n = 0;
    while (std::getline(in, line)) {
      ++n;
      if (line.rfind("# interval ", 0) == 0) {
        interval_ms = std::stoll(line.substr(11)) * 1000;
      } else if (line.rfind("series ", 0) == 0) {
        std::istringstream ss(line.substr(7));
        std::string labels, token;
        ss >> labels;
        tsdb::Labels l = ParseLabels(labels);
        for (int64_t t = 0; ss >> token; t += interval_ms) {
          if (token == "_") continue;
          double v = token == "stale" ? tsdb::StaleNaN() : std::strtod(token.c_str(), nullptr);
          ASSERT_TRUE(querier_.Append(l, t, v).ok());
        }
      } else if (line.rfind("eval ", 0) == 0) {
        Case c;
        c.line = n;
        size_t sp = line.find(' ', 5);
        c.t_ms = DurationMs(line.substr(5, sp - 5));
        c.expr = line.substr(sp + 1);
        cases_.push_back(c);
      } else if (line.rfind("  ", 0) == 0 && !cases_.empty()) {
        cases_.back().expected.push_back(line.substr(2));
      }
    }
  }

  tsdb::MemoryQuerier querier_;
  std::vector<Case> cases_;
};

TEST_F(CompatTest, MatchesPrometheus242) {
  ASSERT_GT(cases_.size(), 1000u);
  Engine engine;
  int failures = 0;
  for (const Case& c : cases_) {
    QueryResult r = engine.Instant(querier_, c.expr, c.t_ms);
    std::string where = "compat.txt:" + std::to_string(c.line) + ": " + c.expr + " @ " +
                        std::to_string(c.t_ms / 1000) + "s";
    if (c.expected.size() == 1 && c.expected[0] == "matrix") {
      // A range vector or string result, which promtool does not report.
      if (!r.ok() ||
          (r.value().type != ValueType::kMatrix && r.value().type != ValueType::kString)) {
        ++failures;
        ADD_FAILURE() << where << ": want a range vector";
      }
      continue;
    }
    bool want_error = !c.expected.empty() && c.expected[0].rfind("error ", 0) == 0;
    if (want_error || !r.ok()) {
      std::string got = r.ok() ? "(no error)" : r.error().message;
      std::string want = want_error ? c.expected[0].substr(6) : "(no error)";
      if (NormalizeError(got) != NormalizeError(want)) {
        ++failures;
        ADD_FAILURE() << where << "\n  want: " << want << "\n  got:  " << got;
      }
      continue;
    }
    std::map<std::string, double> got;
    const Value& v = r.value();
    if (v.type == ValueType::kScalar) got["{}"] = v.scalar;
    for (const Series& s : v.series) got[LabelsText(s.labels)] = s.points.at(0).v;
    std::map<std::string, double> want;
    for (const std::string& e : c.expected) {
      size_t sp = e.rfind(' ');
      want[LabelsText(ParseLabels(e.substr(0, sp)))] = std::strtod(e.c_str() + sp + 1, nullptr);
    }
    bool same = got.size() == want.size();
    for (auto& [labels, value] : want) {
      auto it = got.find(labels);
      if (it == got.end() || !SameValue(it->second, value)) same = false;
    }
    if (!same) {
      ++failures;
      std::ostringstream msg;
      msg << where << "\n  want:";
      for (auto& [l, x] : want) msg << "\n    " << l << " " << x;
      msg << "\n  got:";
      for (auto& [l, x] : got) msg << "\n    " << l << " " << x;
      ADD_FAILURE() << msg.str();
    }
  }
  EXPECT_EQ(failures, 0) << "of " << cases_.size() << " cases";
}

// Range queries against Prometheus 2.42's /api/v1/query_range on the same series (without
// stale markers), from testdata/range_compat.txt (see gen_range_compat.py).
TEST(RangeCompatTest, MatchesPrometheus242) {
  std::ifstream in(std::string(GW_SOURCE_DIR) + "/tests/promql/testdata/range_compat.txt");
  ASSERT_TRUE(in) << "missing testdata/range_compat.txt";
  tsdb::MemoryQuerier querier;
  struct RangeCase {
    int line;
    int64_t start, end, step;
    std::string expr;
    std::vector<std::string> expected;
  };
  std::vector<RangeCase> cases;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.rfind("series ", 0) == 0) {
      std::istringstream ss(line.substr(7));
      std::string labels, token;
      ss >> labels;
      tsdb::Labels l = ParseLabels(labels);
      for (int64_t t = 0; ss >> token; t += 30000) {
        if (token != "_") {
          ASSERT_TRUE(querier.Append(l, t, std::strtod(token.c_str(), nullptr)).ok());
        }
      }
    } else if (line.rfind("range ", 0) == 0) {
      std::istringstream ss(line.substr(6));
      RangeCase c{n, 0, 0, 0, "", {}};
      ss >> c.start >> c.end >> c.step;
      std::getline(ss >> std::ws, c.expr);
      cases.push_back(c);
    } else if (line.rfind("  ", 0) == 0 && !cases.empty()) {
      cases.back().expected.push_back(line.substr(2));
    }
  }
  ASSERT_GT(cases.size(), 100u);
  Engine engine;
  for (const RangeCase& c : cases) {
    std::string where = "range_compat.txt:" + std::to_string(c.line) + ": " + c.expr;
    QueryResult r = engine.Range(querier, c.expr, c.start * 1000, c.end * 1000, c.step * 1000);
    if (!c.expected.empty() && c.expected[0].rfind("error ", 0) == 0) {
      EXPECT_FALSE(r.ok()) << where;
      if (!r.ok()) {
        EXPECT_EQ(NormalizeError(r.error().message), NormalizeError(c.expected[0].substr(6)))
            << where;
      }
      continue;
    }
    ASSERT_TRUE(r.ok()) << where << ": " << r.error().message;
    std::map<std::string, std::vector<Point>> want;
    for (const std::string& e : c.expected) {
      size_t close = e.find("} ");
      std::vector<Point>& points = want[LabelsText(ParseLabels(e.substr(0, close + 1)))];
      std::istringstream ss(e.substr(close + 2));
      std::string tv;
      while (ss >> tv) {
        size_t eq = tv.find('=');
        points.push_back(
            Point{std::stoll(tv.substr(0, eq)), std::strtod(tv.c_str() + eq + 1, nullptr)});
      }
    }
    std::map<std::string, std::vector<Point>> got;
    for (const Series& s : r.value().series) got[LabelsText(s.labels)] = s.points;
    EXPECT_EQ(got.size(), want.size()) << where;
    for (const auto& [labels, points] : want) {
      auto it = got.find(labels);
      if (it == got.end()) {
        ADD_FAILURE() << where << ": missing series " << labels;
        continue;
      }
      ASSERT_EQ(it->second.size(), points.size()) << where << " " << labels;
      for (size_t i = 0; i < points.size(); ++i) {
        EXPECT_EQ(it->second[i].t_ms, points[i].t_ms) << where << " " << labels;
        EXPECT_TRUE(SameValue(it->second[i].v, points[i].v))
            << where << " " << labels << " at " << points[i].t_ms << ": want " << points[i].v
            << " got " << it->second[i].v;
      }
    }
  }
}

// A range query is the instant query at every step, merged by label set.
TEST_F(CompatTest, RangeQueriesAgreeWithInstantQueries) {
  const char* exprs[] = {
      "http_requests_total",
      "rate(http_requests_total[2m13s])",
      "sum by (host) (gpu_temp) / on(host) group_left sum by (host) (gpu_power)",
      "max_over_time(gpu_temp[3m:45s])",
      "gpu_temp @ 300 - gpu_temp offset 1m",
      "time() - timestamp(up)",
      "topk(1, gpu_power) or absent(nothing)",
      "histogram_quantile(0.9, rate(req_duration_seconds_bucket[5m]))",
      "1 + 2",
  };
  Engine engine;
  const int64_t start = 0, end = 26 * 60000, step = 37000;
  for (const char* expr : exprs) {
    QueryResult range = engine.Range(querier_, expr, start, end, step);
    ASSERT_TRUE(range.ok()) << expr << ": " << range.error().message;
    std::map<tsdb::Labels, std::vector<Point>> want;
    for (int64_t t = start; t <= end; t += step) {
      QueryResult r = engine.Instant(querier_, expr, t);
      ASSERT_TRUE(r.ok()) << expr;
      if (r.value().type == ValueType::kScalar) want[{}].push_back(Point{t, r.value().scalar});
      for (const Series& s : r.value().series) want[s.labels].push_back(Point{t, s.points[0].v});
    }
    ASSERT_EQ(range.value().series.size(), want.size()) << expr;
    for (const Series& s : range.value().series) {
      const std::vector<Point>& w = want[s.labels];
      ASSERT_EQ(s.points.size(), w.size()) << expr << " " << LabelsText(s.labels);
      for (size_t i = 0; i < w.size(); ++i) {
        EXPECT_EQ(s.points[i].t_ms, w[i].t_ms) << expr;
        EXPECT_TRUE(SameValue(s.points[i].v, w[i].v)) << expr;
      }
    }
  }
}

}  // namespace
}  // namespace gw::promql
