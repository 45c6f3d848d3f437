// Engine tests with hand-worked expectations: lookback and stale markers, range queries,
// counter resets, limits and errors.
#include "promql/engine.h"
#include "promql/parser.h"

#include <gtest/gtest.h>

#include <cmath>

#include "engine_fixture.h"

namespace gw::promql {
namespace {

using test_support::L;

class EngineTest : public test_support::EngineFixture {};

TEST_F(EngineTest, LookbackIsClosedOnBothEnds) {
  Add(L({{"__name__", "x"}}), 0, 1);
  EXPECT_EQ(One("x", 0), 1);
  EXPECT_EQ(One("x", 300), 1);  // exactly 5m later: still found
  QueryResult r = engine_.Instant(q_, "x", 300001);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.value().series.empty());
}

TEST_F(EngineTest, StaleMarkerEndsASeriesAtOnce) {
  tsdb::Labels x = L({{"__name__", "x"}});
  Add(x, 0, 1);
  Add(x, 60, tsdb::StaleNaN());
  EXPECT_EQ(One("x", 30), 1);
  EXPECT_TRUE(std::isnan(One("x", 60)));
  EXPECT_TRUE(std::isnan(One("x", 200)));
  // Range selectors drop the marker; a plain NaN sample is kept.
  EXPECT_EQ(One("count_over_time(x[2m])", 120), 1);
  Add(L({{"__name__", "y"}}), 0, std::nan(""));
  EXPECT_TRUE(std::isnan(One("y", 10)));
  EXPECT_EQ(Count("y", 10), 1u);
}

TEST_F(EngineTest, RateWithCounterReset) {
  tsdb::Labels c = L({{"__name__", "c"}});
  const double values[] = {0, 10, 20, 5, 15, 25, 35};
  for (int i = 0; i < 7; ++i) Add(c, i * 10, values[i]);
  // Window [0, 60]: 35 - 0 + 20 (reset) = 55 over exactly the window, no extrapolation.
  EXPECT_DOUBLE_EQ(One("increase(c[1m])", 60), 55);
  EXPECT_DOUBLE_EQ(One("rate(c[1m])", 60), 55.0 / 60);
  EXPECT_EQ(One("resets(c[1m])", 60), 1);
  EXPECT_DOUBLE_EQ(One("irate(c[1m])", 60), 1);
  // Window (5, 65]: samples 10..60; durationToStart 5s < 1.1*10s and durationToEnd 5s extend.
  // increase = (35 - 10 + 20) * (50 + 5 + 5) / 50.
  EXPECT_DOUBLE_EQ(One("increase(c[1m])", 65), 45.0 * 60 / 50);
}

TEST_F(EngineTest, FunctionsDropTheMetricNameExceptLastOverTime) {
  Add(L({{"__name__", "x"}, {"a", "1"}}), 0, -2);
  QueryResult r = engine_.Instant(q_, "abs(x)", 0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().series.at(0).labels, L({{"a", "1"}}));
  r = engine_.Instant(q_, "last_over_time(x[1m])", 0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().series.at(0).labels, L({{"__name__", "x"}, {"a", "1"}}));
  r = engine_.Instant(q_, "x > -5", 0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().series.at(0).labels, L({{"__name__", "x"}, {"a", "1"}}));
  r = engine_.Instant(q_, "x > bool -5", 0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().series.at(0).labels, L({{"a", "1"}}));
}

TEST_F(EngineTest, RangeQueryHasOnePointPerStepWithAValue) {
  tsdb::Labels a = L({{"__name__", "x"}, {"i", "a"}});
  tsdb::Labels b = L({{"__name__", "x"}, {"i", "b"}});
  Add(a, 0, 1);
  Add(a, 60, 2);
  Add(a, 120, tsdb::StaleNaN());
  Add(b, 90, 7);
  QueryResult r = engine_.Range(q_, "x", 0, 180000, 30000);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Value& v = r.value();
  EXPECT_EQ(v.type, ValueType::kMatrix);
  ASSERT_EQ(v.series.size(), 2u);
  EXPECT_EQ(v.series[0].labels, a);          // sorted by label set
  ASSERT_EQ(v.series[0].points.size(), 4u);  // 0, 30, 60, 90; stale from 120
  EXPECT_EQ(v.series[0].points[2].t_ms, 60000);
  EXPECT_EQ(v.series[0].points[2].v, 2);
  ASSERT_EQ(v.series[1].points.size(), 4u);  // 90 .. 180
  EXPECT_EQ(v.series[1].points[0].t_ms, 90000);
}

TEST_F(EngineTest, RangeQueryOfScalar) {
  QueryResult r = engine_.Range(q_, "time() * 2", 0, 60000, 20000);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.value().series.size(), 1u);
  EXPECT_TRUE(r.value().series[0].labels.empty());
  ASSERT_EQ(r.value().series[0].points.size(), 4u);
  EXPECT_EQ(r.value().series[0].points[3].v, 120);
}

TEST_F(EngineTest, AtModifierPinsEvaluation) {
  tsdb::Labels x = L({{"__name__", "x"}});
  for (int t = 0; t <= 600; t += 60) Add(x, t, t);
  QueryResult r = engine_.Range(q_, "x @ start()", 120000, 300000, 60000);
  ASSERT_TRUE(r.ok());
  for (const Point& p : r.value().series.at(0).points) EXPECT_EQ(p.v, 120);
  r = engine_.Range(q_, "x @ end() offset 1m", 120000, 300000, 60000);
  ASSERT_TRUE(r.ok());
  for (const Point& p : r.value().series.at(0).points) EXPECT_EQ(p.v, 240);
  EXPECT_EQ(One("x @ 180", 600), 180);
  EXPECT_EQ(One("x offset -2m", 60), 180);
  EXPECT_EQ(One("timestamp(x offset 30s)", 100), 60);
  EXPECT_EQ(One("timestamp(-x)", 100), 100);
}

TEST_F(EngineTest, SubqueryStepsAreEpochAligned) {
  tsdb::Labels x = L({{"__name__", "x"}});
  for (int t = 0; t <= 600; t += 10) Add(x, t, t);
  // Steps of 1m in [t-5m, t] = [35, 335]: 60, 120, ..., 300.
  EXPECT_EQ(One("count_over_time(x[5m:])", 335), 5);
  EXPECT_EQ(One("min_over_time(x[5m:])", 335), 60);
  EXPECT_EQ(One("count_over_time(x[5m:1m])", 360), 6);  // 60 .. 360, both ends included
  EXPECT_EQ(One("max_over_time(x[1m:20s] offset 1m)", 335), 260);
}

TEST_F(EngineTest, RangeQueryRejectsRangeVectorsAndStrings) {
  QueryResult r = engine_.Range(q_, "x[5m]", 0, 1000, 10);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, QueryError::Kind::kBadData);
  EXPECT_EQ(r.error().message,
            "invalid expression type \"range vector\" for range query, must be Scalar or instant "
            "Vector");
  r = engine_.Range(q_, "\"s\"", 0, 1000, 10);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "invalid expression type \"string\" for range query, must be Scalar or instant Vector");
  r = engine_.Range(q_, "x", 0, 1000, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, QueryError::Kind::kBadData);
}

TEST_F(EngineTest, InstantQueryMayReturnMatrixAndString) {
  tsdb::Labels x = L({{"__name__", "x"}});
  Add(x, 0, 1);
  Add(x, 30, tsdb::StaleNaN());
  Add(x, 45, 3);
  QueryResult r = engine_.Instant(q_, "x[1m]", 60000);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().type, ValueType::kMatrix);
  ASSERT_EQ(r.value().series.at(0).points.size(), 2u);  // stale marker dropped
  EXPECT_EQ(r.value().series[0].points[1].t_ms, 45000);
  r = engine_.Instant(q_, "\"hello\"", 5000);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().type, ValueType::kString);
  EXPECT_EQ(r.value().string, "hello");
}

TEST_F(EngineTest, ParseErrorsAreBadData) {
  QueryResult r = engine_.Instant(q_, "sum(x", 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, QueryError::Kind::kBadData);
  EXPECT_EQ(r.error().message, "1:6: parse error: unclosed left parenthesis");
}

TEST_F(EngineTest, ExecutionErrors) {
  Add(L({{"__name__", "a"}, {"j", "1"}}), 0, 1);
  Add(L({{"__name__", "b"}, {"j", "1"}}), 0, 2);
  QueryResult r = engine_.Instant(q_, "abs({j=\"1\"})", 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, QueryError::Kind::kExecution);
  EXPECT_EQ(r.error().message, "vector cannot contain metrics with the same labelset");
  r = engine_.Instant(q_, "{j=\"1\"} + on() {j=\"1\"}", 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind("found duplicate series for the match group {}", 0), 0u);
  Add(L({{"__name__", "c"}, {"j", "1"}}), 0, 3);
  r = engine_.Instant(q_, "c + ignoring(__name__) {__name__=~\"a|b\"}", 0);
  ASSERT_FALSE(r.ok());
  r = engine_.Instant(q_, "{__name__=~\"a|b\"} + on(j) c", 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "multiple matches for labels: many-to-one matching must be explicit "
            "(group_left/group_right)");
  r = engine_.Range(q_, "label_replace({j=\"1\"}, \"__name__\", \"z\", \"j\", \".*\")", 0, 0, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "vector cannot contain metrics with the same labelset");
}

TEST_F(EngineTest, TooManySamples) {
  Add(L({{"__name__", "x"}, {"i", "1"}}), 0, 1);
  Add(L({{"__name__", "x"}, {"i", "2"}}), 0, 1);
  EngineOptions opts;
  opts.max_samples = 1;
  Engine small(opts);
  QueryResult r = small.Instant(q_, "x", 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, QueryError::Kind::kExecution);
  EXPECT_EQ(r.error().message,
            "query processing would load too many samples into memory in query execution");
  EXPECT_TRUE(small.Instant(q_, "x{i=\"1\"}", 0).ok());
}

TEST_F(EngineTest, Timeout) {
  Add(L({{"__name__", "x"}}), 0, 1);
  EngineOptions opts;
  opts.timeout_s = -1;  // already past the deadline
  Engine hurried(opts);
  QueryResult r = hurried.Range(q_, "x", 0, 600000, 1000);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, QueryError::Kind::kTimeout);
  EXPECT_EQ(r.error().message, "query timed out in expression evaluation");
}

TEST_F(EngineTest, AggregationsAndSort) {
  for (int i = 0; i < 5; ++i) {
    Add(L({{"__name__", "x"}, {"g", i % 2 ? "odd" : "even"}, {"i", std::to_string(i)}}), 0, i);
  }
  EXPECT_EQ(One("sum(x)", 0), 10);
  EXPECT_EQ(One("avg(x)", 0), 2);
  EXPECT_DOUBLE_EQ(One("stddev(x)", 0), std::sqrt(2.0));
  EXPECT_EQ(One("quantile(0.25, x)", 0), 1);
  EXPECT_EQ(One("count(count_values(\"v\", x))", 0), 5);
  QueryResult r = engine_.Instant(q_, "topk(2, x)", 0);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.value().series.size(), 2u);
  EXPECT_EQ(r.value().series[0].points[0].v, 4);
  EXPECT_EQ(LabelValue(r.value().series[0].labels, "__name__"), "x");  // topk keeps labels
  r = engine_.Instant(q_, "sort_desc(sum by (g) (x))", 0);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.value().series.size(), 2u);
  EXPECT_EQ(r.value().series[0].labels, L({{"g", "even"}}));
  EXPECT_EQ(r.value().series[0].points[0].v, 6);
}

TEST_F(EngineTest, HistogramQuantile) {
  // Buckets 1, 2, +Inf with cumulative counts 10, 30, 40 (the 2 bucket written non-monotonic
  // below as 30 after a 35 in a duplicate bound is coalesced).
  auto bucket = [&](const char* le, double v) {
    Add(L({{"__name__", "h_bucket"}, {"le", le}}), 0, v);
  };
  bucket("1", 10);
  bucket("2", 30);
  bucket("+Inf", 40);
  // rank 20 falls in (1, 2]: 1 + (2 - 1) * (20 - 10) / (30 - 10) = 1.5
  EXPECT_DOUBLE_EQ(One("histogram_quantile(0.5, h_bucket)", 0), 1.5);
  // rank 36 is in the +Inf bucket: the highest finite bound.
  EXPECT_DOUBLE_EQ(One("histogram_quantile(0.9, h_bucket)", 0), 2);
  EXPECT_EQ(One("histogram_quantile(2, h_bucket)", 0), HUGE_VAL);
}

// Random well-formed-ish queries over a little data: evaluation must succeed or fail with a
// QueryError, never crash (run under ASan/UBSan in CI).
TEST_F(EngineTest, RandomQueriesEvaluateOrFailCleanly) {
  for (int t = 0; t <= 600; t += 15) {
    Add(L({{"__name__", "foo"}, {"a", "x"}}), t, t % 7 == 0 ? std::nan("") : t / 3.0);
    Add(L({{"__name__", "foo"}, {"a", "y"}}), t, t == 300 ? tsdb::StaleNaN() : 600 - t);
    Add(L({{"__name__", "bar"}, {"a", "x"}, {"le", t % 2 ? "1" : "+Inf"}}), t, t);
  }
  const char* pieces[] = {"foo",
                          "bar",
                          "foo[1m]",
                          "bar[5m:30s]",
                          "(",
                          ")",
                          " + ",
                          " / ",
                          " > ",
                          " and ",
                          " or ",
                          " * on(a) group_left ",
                          "sum by (a) (",
                          "topk(2, ",
                          "rate(",
                          "max_over_time(",
                          "abs(",
                          "histogram_quantile(0.5, ",
                          "label_replace(",
                          ", \"b\", \"$1\", \"a\", \"(.)\")",
                          "2",
                          " offset 1m",
                          " @ 300",
                          "-",
                          "count_values(\"v\", ",
                          "scalar(",
                          "vector(",
                          "time()",
                          "absent(",
                          "sort(",
                          ", 1)",
                          "quantile(0.5, "};
  uint64_t seed = 99;
  auto next = [&seed]() {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<size_t>(seed >> 33);
  };
  int evaluated = 0;
  for (int i = 0; i < 20000 && evaluated < 1500; ++i) {
    std::string q;
    size_t n = 1 + next() % 6;
    for (size_t k = 0; k < n; ++k) q += pieces[next() % std::size(pieces)];
    QueryResult r = engine_.Range(q_, q, 0, 600000, 45000);
    if (r.ok() || r.error().kind != QueryError::Kind::kBadData) ++evaluated;
    QueryResult instant = engine_.Instant(q_, q, 310000);
    if (!instant.ok()) {
      EXPECT_NE(instant.error().kind, QueryError::Kind::kInternal) << q;
    }
  }
  EXPECT_GT(evaluated, 200);
}

// Found by tests/fuzz (promql_eval): float-to-int64 conversions of values out of int64's range
// were undefined behaviour (UBSan: "1.7e+70 is outside the range of representable values").
// They now follow Go on amd64, as Prometheus computes them: NaN and out-of-range values become
// math.MinInt64, whose date is far in the past; nothing else changes.
TEST_F(EngineTest, DateFunctionsOfHugeValuesAreMinInt64) {
  for (const char* fn :
       {"year", "month", "day_of_month", "day_of_week", "hour", "minute", "days_in_month"}) {
    const std::string min = std::string(fn) + "(vector(-9223372036854775808))";
    const double expected = One(min, 0);
    EXPECT_FALSE(std::isnan(expected)) << min;
    for (const char* v : {"1e70", "-1e70", "NaN", "Inf", "-Inf", "9223372036854775808"}) {
      const std::string q = std::string(fn) + "(vector(" + v + "))";
      EXPECT_EQ(One(q, 0), expected) << q;
    }
  }
  // Go's time package wraps math.MinInt64 seconds into a date in year 292277026596; these are the
  // real 2.42's answers.
  EXPECT_EQ(One("year(vector(NaN))", 0), 292277026596);
  EXPECT_EQ(One("month(vector(NaN))", 0), 12);
  EXPECT_EQ(One("day_of_month(vector(NaN))", 0), 4);
  EXPECT_EQ(One("day_of_week(vector(NaN))", 0), 0);
  EXPECT_EQ(One("hour(vector(NaN))", 0), 15);
  EXPECT_EQ(One("minute(vector(NaN))", 0), 30);
  EXPECT_EQ(One("days_in_month(vector(NaN))", 0), 31);
  EXPECT_EQ(One("day_of_year(vector(NaN))", 0), 339);
  EXPECT_EQ(One("year(vector(0))", 0), 1970);
  EXPECT_EQ(One("year(vector(-1))", 0), 1969);
  EXPECT_EQ(One("hour(vector(-1))", 0), 23);
}

// `@ T` with T * 1000 beyond int64 milliseconds overflowed the same way; it is refused with
// Prometheus' message for timestamps beyond int64 seconds.
TEST_F(EngineTest, AtModifierBeyondInt64MillisecondsIsRefused) {
  Add(L({{"__name__", "x"}}), 0, 1);
  for (const char* q : {"x @ 100000000000000000", "x @ -100000000000000000"}) {
    QueryResult r = engine_.Instant(q_, q, 0);
    ASSERT_FALSE(r.ok()) << q;
    EXPECT_EQ(r.error().kind, QueryError::Kind::kBadData);
    EXPECT_NE(r.error().message.find("timestamp out of bounds for @ modifier"), std::string::npos)
        << r.error().message;
  }
  EXPECT_EQ(One("x @ 0", 0), 1);
}

// Expressions at the depth limit evaluate (the evaluator recurses once per level, so this runs
// the deepest stack a query can reach); deeper ones are bad_data, never a crash.
TEST_F(EngineTest, DeepExpressionsEvaluateToTheLimitAndFailPastIt) {
  Add(L({{"__name__", "x"}}), 0, -2);
  auto repeat = [](const std::string& s, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += s;
    return out;
  };
  const int n = kMaxExprDepth;
  EXPECT_EQ(One("1" + repeat(" + 1", n - 1), 0), n);
  EXPECT_EQ(One(repeat("abs(", n - 1) + "x" + repeat(")", n - 1), 0), 2);
  EXPECT_EQ(One(repeat("(", n - 1) + "x" + repeat(")", n - 1), 0), -2);
  EXPECT_EQ(One(repeat("-", n - 1) + "x", 0), n % 2 == 0 ? 2 : -2);
  EXPECT_EQ(One("x" + repeat(" or x", n - 1), 0), -2);
  EXPECT_EQ(One("max_over_time(" + repeat("abs(", n - 3) + "x" + repeat(")", n - 3) + "[1m:])", 0),
            2);
  for (const std::string& q : {"1" + repeat("+1", 20000), repeat("(", 15000) + "1",
                               repeat("-", 40000) + "x", repeat("abs(", 14000) + "x"}) {
    QueryResult r = engine_.Instant(q_, q, 0);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind, QueryError::Kind::kBadData);
    EXPECT_NE(r.error().message.find("nested too deeply"), std::string::npos) << r.error().message;
  }
}

}  // namespace
}  // namespace gw::promql
