// The function surface of Prometheus 2.42: every function name with its signature must parse (the
// list below is written out from 2.42's promql/parser/functions.go, so a function missing here
// fails a test instead of answering bad_data), and hand-worked values for the functions added
// last: trigonometry, deg/rad/pi, day_of_year, holt_winters and the native-histogram functions.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <fstream>
#include <limits>
#include <string>

#include "engine_fixture.h"
#include "promql/engine.h"
#include "promql/parser.h"

namespace gw::promql {
namespace {

// One function of 2.42: argument types (s scalar, v instant vector, m range vector, t string), its
// Variadic field (0 fixed; n > 0 the last argument is optional, up to n of it; -1 the last
// argument repeats) and the return type.
struct Spec {
  const char* name;
  const char* args;
  int variadic;
  ValueType returns;
};

constexpr ValueType kS = ValueType::kScalar;
constexpr ValueType kV = ValueType::kVector;

// All 70 functions of Prometheus 2.42 (promql/parser/functions.go at v2.42.0), in its order.
const Spec kPrometheus242Functions[] = {
    {"abs", "v", 0, kV},
    {"absent", "v", 0, kV},
    {"absent_over_time", "m", 0, kV},
    {"acos", "v", 0, kV},
    {"acosh", "v", 0, kV},
    {"asin", "v", 0, kV},
    {"asinh", "v", 0, kV},
    {"atan", "v", 0, kV},
    {"atanh", "v", 0, kV},
    {"avg_over_time", "m", 0, kV},
    {"ceil", "v", 0, kV},
    {"changes", "m", 0, kV},
    {"clamp", "vss", 0, kV},
    {"clamp_max", "vs", 0, kV},
    {"clamp_min", "vs", 0, kV},
    {"cos", "v", 0, kV},
    {"cosh", "v", 0, kV},
    {"count_over_time", "m", 0, kV},
    {"days_in_month", "v", 1, kV},
    {"day_of_month", "v", 1, kV},
    {"day_of_week", "v", 1, kV},
    {"day_of_year", "v", 1, kV},
    {"deg", "v", 0, kV},
    {"delta", "m", 0, kV},
    {"deriv", "m", 0, kV},
    {"exp", "v", 0, kV},
    {"floor", "v", 0, kV},
    {"histogram_count", "v", 0, kV},
    {"histogram_sum", "v", 0, kV},
    {"histogram_fraction", "ssv", 0, kV},
    {"histogram_quantile", "sv", 0, kV},
    {"holt_winters", "mss", 0, kV},
    {"hour", "v", 1, kV},
    {"idelta", "m", 0, kV},
    {"increase", "m", 0, kV},
    {"irate", "m", 0, kV},
    {"label_replace", "vtttt", 0, kV},
    {"label_join", "vttt", -1, kV},
    {"last_over_time", "m", 0, kV},
    {"ln", "v", 0, kV},
    {"log10", "v", 0, kV},
    {"log2", "v", 0, kV},
    {"max_over_time", "m", 0, kV},
    {"min_over_time", "m", 0, kV},
    {"minute", "v", 1, kV},
    {"month", "v", 1, kV},
    {"pi", "", 0, kS},
    {"predict_linear", "ms", 0, kV},
    {"present_over_time", "m", 0, kV},
    {"quantile_over_time", "sm", 0, kV},
    {"rad", "v", 0, kV},
    {"rate", "m", 0, kV},
    {"resets", "m", 0, kV},
    {"round", "vs", 1, kV},
    {"scalar", "v", 0, kS},
    {"sgn", "v", 0, kV},
    {"sin", "v", 0, kV},
    {"sinh", "v", 0, kV},
    {"sort", "v", 0, kV},
    {"sort_desc", "v", 0, kV},
    {"sqrt", "v", 0, kV},
    {"stddev_over_time", "m", 0, kV},
    {"stdvar_over_time", "m", 0, kV},
    {"sum_over_time", "m", 0, kV},
    {"tan", "v", 0, kV},
    {"tanh", "v", 0, kV},
    {"time", "", 0, kS},
    {"timestamp", "v", 0, kV},
    {"vector", "s", 0, kV},
    {"year", "v", 1, kV},
};

std::string Arg(char type) {
  switch (type) {
    case 's':
      return "0.5";
    case 'v':
      return "x";
    case 'm':
      return "x[5m]";
    default:
      return "\"a\"";
  }
}

// A call with `n` arguments: the declared types, the last one repeated past the declared list.
std::string CallWith(const Spec& f, size_t n) {
  const std::string types = f.args;
  std::string out = std::string(f.name) + "(";
  for (size_t i = 0; i < n; ++i) {
    if (i) out += ", ";
    out += Arg(i < types.size() ? types[i] : types.empty() ? 'v' : types.back());
  }
  return out + ")";
}

TEST(FunctionSpecTest, EveryPrometheus242FunctionParsesWithItsArity) {
  EXPECT_EQ(std::size(kPrometheus242Functions), 70u);
  for (const Spec& f : kPrometheus242Functions) {
    const size_t declared = std::string(f.args).size();
    const size_t min = f.variadic == 0 ? declared : declared - 1;
    auto e = Parse(CallWith(f, min));
    ASSERT_TRUE(e.ok()) << f.name << ": " << e.error().message;
    EXPECT_EQ(TypeOf(**e), f.returns) << f.name;
    EXPECT_EQ(Format(**e), CallWith(f, min)) << f.name;
    if (min > 0) {
      auto fewer = Parse(CallWith(f, min - 1));
      ASSERT_FALSE(fewer.ok()) << f.name << " accepted " << min - 1 << " arguments";
      EXPECT_NE(fewer.error().message.find("argument(s) in call to \"" + std::string(f.name)),
                std::string::npos)
          << fewer.error().message;
    }
    if (f.variadic >= 0) {
      const size_t most = min + static_cast<size_t>(f.variadic);
      EXPECT_TRUE(Parse(CallWith(f, most)).ok()) << f.name << " with " << most;
      EXPECT_FALSE(Parse(CallWith(f, most + 1)).ok())
          << f.name << " accepted " << most + 1 << " arguments";
    } else {
      EXPECT_TRUE(Parse(CallWith(f, min + 3)).ok()) << f.name << " repeats its last argument";
    }
  }
}

// The compatibility corpus (tests/compat/expressions.txt, compared with a real Prometheus 2.42 by
// tests/integration/promql_compat_test.cpp) must call every function, so none goes unchecked.
TEST(FunctionSpecTest, CompatibilityCorpusCallsEveryFunction) {
  std::ifstream in(std::string(GW_SOURCE_DIR) + "/tests/compat/expressions.txt");
  ASSERT_TRUE(in) << "missing tests/compat/expressions.txt";
  std::string corpus;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("#", 0) != 0) corpus += " " + line + "\n";
  for (const Spec& f : kPrometheus242Functions) {
    const std::string call = std::string(f.name) + "(";
    bool found = false;
    for (size_t at = corpus.find(call); at != std::string::npos && !found;
         at = corpus.find(call, at + 1)) {
      const char before = corpus[at - 1];
      found = !(std::isalnum(static_cast<unsigned char>(before)) || before == '_');
    }
    EXPECT_TRUE(found) << f.name << " is not called in tests/compat/expressions.txt";
  }
}

TEST(FunctionSpecTest, ArgumentTypesAreChecked) {
  auto e = Parse("holt_winters(x, 0.5, 0.5)");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().message,
            "1:14: parse error: expected type range vector in call to function \"holt_winters\", "
            "got instant vector");
  EXPECT_FALSE(Parse("histogram_fraction(x, 0, 1)").ok());
  EXPECT_FALSE(Parse("sin(x[5m])").ok());
  EXPECT_FALSE(Parse("day_of_year(1)").ok());
}

using test_support::L;

class FunctionsTest : public test_support::EngineFixture {};

constexpr double kPi = 3.141592653589793;

TEST_F(FunctionsTest, Trigonometry) {
  EXPECT_EQ(One("sin(vector(0))"), 0);
  EXPECT_EQ(One("cos(vector(0))"), 1);
  EXPECT_NEAR(One("sin(vector(pi() / 2))"), 1, 1e-15);
  EXPECT_NEAR(One("cos(vector(pi()))"), -1, 1e-15);
  EXPECT_NEAR(One("tan(vector(pi() / 4))"), 1, 1e-15);
  EXPECT_NEAR(One("asin(vector(1))"), kPi / 2, 1e-15);
  EXPECT_NEAR(One("acos(vector(-1))"), kPi, 1e-15);
  EXPECT_NEAR(One("atan(vector(1))"), kPi / 4, 1e-15);
  EXPECT_NEAR(One("atan(vector(Inf))"), kPi / 2, 1e-15);
  EXPECT_NEAR(One("sinh(vector(1))"), (std::exp(1.0) - std::exp(-1.0)) / 2, 1e-15);
  EXPECT_NEAR(One("cosh(vector(1))"), (std::exp(1.0) + std::exp(-1.0)) / 2, 1e-15);
  EXPECT_NEAR(One("tanh(vector(0.5))"), (std::exp(1.0) - 1) / (std::exp(1.0) + 1), 1e-15);
  EXPECT_NEAR(One("asinh(sinh(vector(2)))"), 2, 1e-14);
  EXPECT_NEAR(One("acosh(cosh(vector(2)))"), 2, 1e-14);
  EXPECT_NEAR(One("atanh(tanh(vector(0.25)))"), 0.25, 1e-15);
  EXPECT_EQ(One("tanh(vector(Inf))"), 1);
  EXPECT_EQ(One("cosh(vector(1000))"), HUGE_VAL);
  EXPECT_EQ(One("sinh(vector(-1000))"), -HUGE_VAL);
  // Outside the domain: NaN; at the poles of atanh: infinities.
  EXPECT_TRUE(std::isnan(One("acos(vector(1.5))")));
  EXPECT_TRUE(std::isnan(One("asin(vector(-2))")));
  EXPECT_TRUE(std::isnan(One("acosh(vector(0.5))")));
  EXPECT_TRUE(std::isnan(One("atanh(vector(2))")));
  EXPECT_TRUE(std::isnan(One("sin(vector(Inf))")));
  EXPECT_TRUE(std::isnan(One("cos(vector(NaN))")));
  EXPECT_EQ(One("atanh(vector(1))"), HUGE_VAL);
  EXPECT_EQ(One("atanh(vector(-1))"), -HUGE_VAL);
}

// The exact logarithm of subnormal numbers, where Prometheus 2.42 on amd64 differs (its Go
// assembly logarithm reads a subnormal x as 2^-1023 + x/2: ln(5e-324) = -709.09;
// docs/prometheus-notes.md). The compatibility corpus leaves these out.
TEST_F(FunctionsTest, LogarithmsOfSubnormalNumbersAreExact) {
  const double smallest = std::numeric_limits<double>::denorm_min();  // 2^-1074
  Add(L({{"__name__", "tiny"}}), 0, smallest);
  EXPECT_NEAR(One("ln(tiny)"), -1074 * std::log(2.0), 1e-12);
  EXPECT_NEAR(One("log10(tiny)"), -1074 * std::log10(2.0), 1e-12);
  EXPECT_EQ(One("log2(tiny)"), -1074);
}

TEST_F(FunctionsTest, MathFunctionsDropTheNameAndKeepEverySeries) {
  Add(L({{"__name__", "angle"}, {"gpu", "0"}}), 0, 0);
  Add(L({{"__name__", "angle"}, {"gpu", "1"}}), 0, 90);
  for (const char* fn : {"acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "sin",
                         "sinh", "tan", "tanh", "deg", "rad"}) {
    QueryResult r = Run(std::string(fn) + "(angle)", 0);
    ASSERT_TRUE(r.ok()) << fn;
    ASSERT_EQ(r.value().series.size(), 2u) << fn;
    for (const auto& s : r.value().series) {
      EXPECT_EQ(s.labels.size(), 1u) << fn;
      EXPECT_EQ(s.labels[0].name, "gpu") << fn;
    }
  }
  EXPECT_EQ(Count("sin(angle{gpu=\"7\"})"), 0u);
}

TEST_F(FunctionsTest, DegRadPi) {
  EXPECT_EQ(One("pi()"), kPi);
  EXPECT_EQ(One("deg(vector(pi()))"), 180);
  EXPECT_EQ(One("rad(vector(180))"), kPi);
  EXPECT_EQ(One("rad(vector(90))"), 90 * kPi / 180);
  EXPECT_EQ(One("deg(vector(1))"), 180 / kPi);
  EXPECT_EQ(One("deg(vector(-Inf))"), -HUGE_VAL);
  EXPECT_TRUE(std::isnan(One("rad(vector(NaN))")));
  QueryResult r = Run("pi()", 0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().type, ValueType::kScalar);
}

TEST_F(FunctionsTest, DayOfYear) {
  EXPECT_EQ(One("day_of_year(vector(0))"), 1);               // 1970-01-01
  EXPECT_EQ(One("day_of_year(vector(5097600))"), 60);        // 1970-03-01 (not a leap year)
  EXPECT_EQ(One("day_of_year(vector(1709251200))"), 61);     // 2024-03-01 (leap year)
  EXPECT_EQ(One("day_of_year(vector(1709164800))"), 60);     // 2024-02-29
  EXPECT_EQ(One("day_of_year(vector(1735603200))"), 366);    // 2024-12-31
  EXPECT_EQ(One("day_of_year(vector(1704067199))"), 365);    // 2023-12-31 23:59:59
  EXPECT_EQ(One("day_of_year(vector(-1))"), 365);            // 1969-12-31 23:59:59
  EXPECT_EQ(One("day_of_year(vector(951782400))"), 60);      // 2000-02-29 (400-year leap)
  EXPECT_EQ(One("day_of_year(vector(4107542400))"), 60);     // 2100-03-01 (no leap)
  EXPECT_EQ(One("day_of_year(vector(1700000000.9))"), 318);  // 2023-11-14, fraction truncated
  // Without an argument: the evaluation time, as a vector without labels.
  EXPECT_EQ(One("day_of_year()", 1709251200), 61);
  QueryResult r = Run("day_of_year()", 86400 * 40);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.value().series.size(), 1u);
  EXPECT_TRUE(r.value().series[0].labels.empty());
  EXPECT_EQ(r.value().series[0].points[0].v, 41);
  // With a vector: one result per element, the name dropped.
  Add(L({{"__name__", "boot_time"}, {"host", "a"}}), 0, 1709251200);
  r = Run("day_of_year(boot_time)", 0);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.value().series.size(), 1u);
  EXPECT_EQ(r.value().series[0].labels, L({{"host", "a"}}));
  // Values outside int64 seconds read as math.MinInt64, like the other date functions.
  const double min = One("day_of_year(vector(-9223372036854775808))");
  EXPECT_FALSE(std::isnan(min));
  for (const char* v : {"1e70", "-1e70", "NaN", "Inf", "-Inf"})
    EXPECT_EQ(One(std::string("day_of_year(vector(") + v + "))"), min) << v;
}

TEST_F(FunctionsTest, HoltWintersValues) {
  tsdb::Labels x = L({{"__name__", "x"}, {"gpu", "0"}});
  Add(x, 0, 1);
  Add(x, 10, 2);
  Add(x, 20, 4);
  // s1 = 1, b = 1; step 1: 0.5*2 + 0.5*(1+1) = 2; step 2: b = 0.5*(2-1) + 0.5*1 = 1,
  // s1 = 0.5*4 + 0.5*(2+1) = 3.5.
  EXPECT_DOUBLE_EQ(One("holt_winters(x[1m], 0.5, 0.5)", 20), 3.5);
  // sf = 0.2, tf = 0.8 over the same points: step 1: 0.4 + 0.8*2 = 2; step 2:
  // b = 0.8*1 + 0.2*1 = 1, s1 = 0.8 + 0.8*3 = 3.2.
  EXPECT_DOUBLE_EQ(One("holt_winters(x[1m], 0.2, 0.8)", 20), 3.2);
  // Two points: the first step only (trend = first difference): 0.5*2 + 0.5*(1+1) = 2.
  EXPECT_DOUBLE_EQ(One("holt_winters(x[1m], 0.5, 0.5)", 10), 2);
  // One point: no result, but no error either.
  EXPECT_EQ(Count("holt_winters(x[1m], 0.5, 0.5)", 0), 0u);
  QueryResult r = Run("holt_winters(x[1m], 0.5, 0.5)", 20);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.value().series.size(), 1u);
  EXPECT_EQ(r.value().series[0].labels, L({{"gpu", "0"}}));
  // NaN factors pass the range check (comparisons with NaN are false) and give NaN.
  EXPECT_TRUE(std::isnan(One("holt_winters(x[1m], NaN, 0.5)", 20)));
  // Factors from expressions, evaluated at each step.
  EXPECT_DOUBLE_EQ(One("holt_winters(x[1m], 1 / 2, scalar(vector(0.5)))", 20), 3.5);
  // A subquery as the range.
  EXPECT_DOUBLE_EQ(One("holt_winters(x[30s:10s], 0.5, 0.5)", 20), 3.5);
}

TEST_F(FunctionsTest, HoltWintersRejectsFactorsOutsideTheOpenUnitInterval) {
  Add(L({{"__name__", "x"}}), 0, 1);
  Add(L({{"__name__", "x"}}), 10, 3);
  const struct {
    const char* sf;
    const char* tf;
    const char* error;
  } kBad[] = {
      {"1", "0.5", "invalid smoothing factor. Expected: 0 < sf < 1, got: 1.000000"},
      {"0", "0.5", "invalid smoothing factor. Expected: 0 < sf < 1, got: 0.000000"},
      {"-0.25", "0", "invalid smoothing factor. Expected: 0 < sf < 1, got: -0.250000"},
      {"0.5", "1.5", "invalid trend factor. Expected: 0 < tf < 1, got: 1.500000"},
      {"0.5", "-Inf", "invalid trend factor. Expected: 0 < tf < 1, got: -Inf"},
      {"Inf", "0.5", "invalid smoothing factor. Expected: 0 < sf < 1, got: +Inf"},
      {"1e20", "0.5",
       "invalid smoothing factor. Expected: 0 < sf < 1, got: 100000000000000000000.000000"},
  };
  for (const auto& c : kBad) {
    const std::string q = std::string("holt_winters(x[1m], ") + c.sf + ", " + c.tf + ")";
    EXPECT_EQ(ErrorOf(q, 10), c.error) << q;
  }
  // Checked per series before the sample count: a single point still fails ...
  EXPECT_NE(ErrorOf("holt_winters(x[5s], 2, 0.5)", 10), "ok");
  // ... but a window without any series never calls the function.
  EXPECT_EQ(ErrorOf("holt_winters(nothing[1m], 2, 0.5)", 10), "ok");
  EXPECT_EQ(ErrorOf("holt_winters(x[1m], 2, 0.5)", 1000), "ok");
  // In a range query the error surfaces too.
  QueryResult r = engine_.Range(q_, "holt_winters(x[1m], 0.5, 1)", 0, 10000, 5000);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, QueryError::Kind::kExecution);
}

TEST_F(FunctionsTest, NativeHistogramFunctionsReturnNothingOnFloatSeries) {
  Add(L({{"__name__", "req_duration_seconds_bucket"}, {"le", "0.5"}}), 0, 3);
  Add(L({{"__name__", "req_duration_seconds_bucket"}, {"le", "+Inf"}}), 0, 5);
  Add(L({{"__name__", "req_duration_seconds_count"}}), 0, 5);
  Add(L({{"__name__", "req_duration_seconds_sum"}}), 0, 1.5);
  for (const char* q :
       {"histogram_count(req_duration_seconds_bucket)",
        "histogram_count(req_duration_seconds_count)", "histogram_sum(req_duration_seconds_sum)",
        "histogram_fraction(0, 0.5, req_duration_seconds_bucket)",
        "histogram_fraction(-Inf, Inf, {__name__=~\"req_.*\"})",
        "histogram_fraction(NaN, 1, req_duration_seconds_count)"}) {
    QueryResult r = Run(q, 0);
    ASSERT_TRUE(r.ok()) << q;
    EXPECT_EQ(r.value().type, ValueType::kVector) << q;
    EXPECT_TRUE(r.value().series.empty()) << q;
  }
  // The argument is still evaluated: its errors surface.
  Add(L({{"__name__", "a"}, {"j", "1"}}), 0, 1);
  Add(L({{"__name__", "b"}, {"j", "1"}}), 0, 2);
  EXPECT_EQ(ErrorOf("histogram_sum(abs({j=\"1\"}))", 0),
            "vector cannot contain metrics with the same labelset");
  // Combined with other series, the empty result behaves as an empty vector.
  EXPECT_EQ(Count("histogram_count(req_duration_seconds_count) or req_duration_seconds_count"), 1u);
}

}  // namespace
}  // namespace gw::promql
