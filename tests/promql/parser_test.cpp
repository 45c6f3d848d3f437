// Parser tests: canonical printing (as Prometheus 2.42's String()), precedence, type checks and
// error messages. Error wording for many more inputs is checked against Prometheus itself in
// compat_test.cpp (testdata/syntax_cases.txt).
#include <gtest/gtest.h>

#include <cmath>

#include "promql/parser.h"

namespace gw::promql {
namespace {

std::string Canonical(const std::string& q) {
  auto e = Parse(q);
  if (!e) return "ERROR: " + e.error().message;
  return Format(**e);
}

struct RoundTripCase {
  const char* in;
  const char* out;
};

TEST(ParserTest, FormatsLikePrometheus) {
  const RoundTripCase cases[] = {
      {"foo", "foo"},
      {"foo{}", "foo"},
      {"{__name__=\"foo\"}", "{__name__=\"foo\"}"},
      {"foo{b='2', a=~\"x.*\"}", "foo{a=~\"x.*\",b=\"2\"}"},
      {"foo{a!=\"\\\"q\\\"\"}", "foo{a!=\"\\\"q\\\"\"}"},
      {"foo[90s]", "foo[1m30s]"},
      {"foo[5400s] offset 86400s", "foo[1h30m] offset 1d"},
      {"foo offset -5m", "foo offset -5m"},
      {"foo @ 1000", "foo @ 1000.000"},
      {"foo @ 1.5 offset 1m", "foo @ 1.500 offset 1m"},
      {"foo offset 1m @ start()", "foo @ start() offset 1m"},
      {"foo[5m] @ end()", "foo[5m] @ end()"},
      {"rate(foo[5m:])", "rate(foo[5m:])"},
      {"foo[1w:14d]", "foo[1w:2w]"},
      {"foo[1y]", "foo[1y]"},
      {"foo[366d]", "foo[366d]"},
      {"max_over_time(rate(x[1m])[10m:1m] @ 100 offset 5m)",
       "max_over_time(rate(x[1m])[10m:1m] @ 100.000 offset 5m)"},
      {"a+b*c", "a + b * c"},
      {"(a+b)*c", "(a + b) * c"},
      {"a > bool b", "a > bool b"},
      {"a * on(x,y) group_left(z) b", "a * on (x, y) group_left (z) b"},
      {"a / ignoring(x) group_right b", "a / ignoring (x) group_right () b"},
      {"a + on() b", "a + on () b"},
      {"a and ignoring() b", "a and b"},
      {"sum by (a, b) (x)", "sum by (a, b) (x)"},
      {"sum(x) without (a)", "sum without (a) (x)"},
      {"sum without () (x)", "sum without () (x)"},
      {"topk(3, x)", "topk(3, x)"},
      {"count_values('v', x)", "count_values(\"v\", x)"},
      {"quantile by (le) (0.9, x)", "quantile by (le) (0.9, x)"},
      {"-x", "-x"},
      {"+x", "+x"},
      {"-1", "-1"},
      {"- -1", "1"},
      {"1e6", "1e+06"},
      {"123456", "123456"},
      {"0.00001", "1e-05"},
      {"0x10", "16"},
      {"010", "8"},
      {"Inf", "+Inf"},
      {"-inf", "-Inf"},
      {"NaN", "NaN"},
      {".5", "0.5"},
      {"\"a\\nb\"", "\"a\\nb\""},
      {"`raw\\n`", "\"raw\\\\n\""},
      {"label_join(x, \"d\", \",\", \"a\", \"b\")", "label_join(x, \"d\", \",\", \"a\", \"b\")"},
      {"time()", "time()"},
      {"sum # comment\n(x)", "sum(x)"},
      {"a:b:c", "a:b:c"},
      {"sum", "sum"},
      {"by", "by"},
  };
  for (const auto& c : cases) EXPECT_EQ(Canonical(c.in), c.out) << c.in;
}

TEST(ParserTest, FormatRoundTripsToSameTree) {
  const char* queries[] = {
      "sum by (job) (rate(http_requests_total{job=~\"a|b\"}[5m] offset 1m)) / on (job) "
      "group_left (team) max by (job, team) (team_info)",
      "histogram_quantile(0.9, sum by (le) (rate(x_bucket[5m])))",
      "-(a ^ b ^ c) % 2 atan2 d",
      "x @ end() unless y offset -1h or z",
      "max_over_time(deriv(x[1m])[1h:5m])",
  };
  for (const char* q : queries) {
    std::string once = Canonical(q);
    EXPECT_EQ(Canonical(once), once) << q;
  }
}

TEST(ParserTest, Precedence) {
  // '^' is right-associative and binds tighter than unary minus; unary minus binds like '*'.
  EXPECT_EQ(Canonical("2 ^ 3 ^ 2"), "2 ^ 3 ^ 2");
  auto e = Parse("a - b - c");
  ASSERT_TRUE(e.ok());
  auto* top = static_cast<BinaryExpr*>(e->get());
  EXPECT_EQ(Format(*top->lhs), "a - b");
  e = Parse("a ^ b ^ c");
  ASSERT_TRUE(e.ok());
  top = static_cast<BinaryExpr*>(e->get());
  EXPECT_EQ(Format(*top->rhs), "b ^ c");
  e = Parse("-a ^ b");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ((*e)->kind, ExprKind::kUnary);
  e = Parse("a or b and c unless d");
  ASSERT_TRUE(e.ok());
  top = static_cast<BinaryExpr*>(e->get());
  EXPECT_EQ(top->op, BinaryOp::kOr);
  EXPECT_EQ(Format(*top->rhs), "b and c unless d");
  e = Parse("a + b > c * d");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(static_cast<BinaryExpr*>(e->get())->op, BinaryOp::kGt);
}

TEST(ParserTest, Types) {
  EXPECT_EQ(TypeOf(**Parse("1 + 2")), ValueType::kScalar);
  EXPECT_EQ(TypeOf(**Parse("x + 2")), ValueType::kVector);
  EXPECT_EQ(TypeOf(**Parse("x[5m]")), ValueType::kMatrix);
  EXPECT_EQ(TypeOf(**Parse("x[5m:]")), ValueType::kMatrix);
  EXPECT_EQ(TypeOf(**Parse("\"s\"")), ValueType::kString);
  EXPECT_EQ(TypeOf(**Parse("scalar(x)")), ValueType::kScalar);
  EXPECT_EQ(TypeOf(**Parse("(time())")), ValueType::kScalar);
}

TEST(ParserTest, Errors) {
  const RoundTripCase cases[] = {
      {"foo{}}", "1:6: parse error: unexpected character: '}'"},
      {"{}", "1:1: parse error: vector selector must contain at least one non-empty matcher"},
      {"{a=~\".*\"}",
       "1:1: parse error: vector selector must contain at least one non-empty matcher"},
      {"foo{__name__=\"bar\"}",
       "1:1: parse error: metric name must not be set twice: \"foo\" or \"bar\""},
      {"1 > 2", "1:3: parse error: comparisons between scalars must use BOOL modifier"},
      {"a + bool b", "1:3: parse error: bool modifier can only be used on comparison operators"},
      {"a and 1", "1:1: parse error: set operator \"and\" not allowed in binary scalar expression"},
      {"a and on(x) group_left b", "1:1: parse error: no grouping allowed for \"and\" operation"},
      {"a + on(x) group_left(x) b",
       "1:3: parse error: label \"x\" must not occur in ON and GROUP clause at once"},
      {"1 + on(x) a", "1:1: parse error: vector matching only allowed between instant vectors"},
      {"rate(x)",
       "1:6: parse error: expected type range vector in call to function \"rate\", got instant "
       "vector"},
      {"abs()", "1:1: parse error: expected 1 argument(s) in call to \"abs\", got 0"},
      {"round(x, 1, 2)",
       "1:1: parse error: expected at most 2 argument(s) in call to \"round\", got 3"},
      {"label_join(x)",
       "1:1: parse error: expected at least 3 argument(s) in call to \"label_join\", got 1"},
      {"nope(x)", "1:1: parse error: unknown function with name \"nope\""},
      {"topk(x)",
       "1:1: parse error: wrong number of arguments for aggregate expression provided, expected 2, "
       "got 1"},
      {"x[5m] + 1",
       "1:1: parse error: binary expression must contain only scalar and instant "
       "vector types"},
      {"(x)[5m]", "1:4: parse error: ranges only allowed for vector selectors"},
      {"x offset 1m offset 1m", "1:1: parse error: offset may not be set multiple times"},
      {"sum(x) offset 1m",
       "1:1: parse error: offset modifier must be preceded by an instant vector selector or range "
       "vector selector or a subquery"},
      {"x[0s]", "1:3: parse error: duration must be greater than 0"},
      {"x[5m", "1:5: parse error: unclosed left bracket"},
      {"sum(x", "1:6: parse error: unclosed left parenthesis"},
      {"x{a=\"b\"", "1:8: parse error: unexpected end of input inside braces"},
      {"x +", "1:4: parse error: unexpected end of input"},
      {"", "1:1: parse error: no expression found in input"},
      {" \n ", "1:1: parse error: no expression found in input"},
      {"x y", "1:3: parse error: unexpected identifier \"y\""},
      {"x\n  + * y", "2:5: parse error: unexpected <op:*>"},
      {"\"abc", "1:1: parse error: unterminated quoted string"},
      {"{a=~\"(\"}", "1:2: parse error: error parsing regexp: missing closing ): `^(?:()$`"},
  };
  for (const auto& c : cases) EXPECT_EQ(Canonical(c.in), std::string("ERROR: ") + c.out) << c.in;
}

TEST(ParserTest, Durations) {
  int64_t ms = 0;
  EXPECT_TRUE(ParsePromDuration("1h30m", &ms));
  EXPECT_EQ(ms, 5400000);
  EXPECT_TRUE(ParsePromDuration("1y2w3d4h5m6s7ms", &ms));
  EXPECT_EQ(ms, ((((365 + 14 + 3) * 24 + 4) * 60 + 5) * 60 + 6) * 1000LL + 7);
  EXPECT_FALSE(ParsePromDuration("1m1h", &ms));
  EXPECT_FALSE(ParsePromDuration("", &ms));
  EXPECT_EQ(FormatPromDuration(0), "0s");
  // Beyond int64 milliseconds: refused, never wrapped (found by tests/fuzz/promql_parse).
  EXPECT_TRUE(ParsePromDuration("292y", &ms));
  EXPECT_FALSE(ParsePromDuration("292471209y", &ms));
  EXPECT_FALSE(ParsePromDuration("99999999999999999999999y", &ms));
  EXPECT_FALSE(ParsePromDuration("292471208y52w", &ms));
  EXPECT_FALSE(ParsePromDuration("333333333333333333333333.7", &ms));
  EXPECT_EQ(Canonical("x[292471209y]"),
            "ERROR: 1:3: parse error: not a valid duration string: \"292471209y\"");
  EXPECT_EQ(FormatPromDuration(90061001), "1d1h1m1s1ms");
  EXPECT_EQ(FormatPromDuration(14 * 86400000LL), "2w");
  EXPECT_EQ(FormatPromDuration(15 * 86400000LL), "15d");
}

TEST(ParserTest, NumberLiterals) {
  auto value = [](const char* q) {
    auto e = Parse(q);
    EXPECT_TRUE(e.ok()) << q;
    return static_cast<NumberLiteral*>(e->get())->value;
  };
  EXPECT_EQ(value("0x1F"), 31);
  EXPECT_EQ(value("1e3"), 1000);
  EXPECT_EQ(value("-2.5"), -2.5);
  EXPECT_TRUE(std::isinf(value("+Inf")));
  EXPECT_TRUE(std::isnan(value("nan")));
}

// A deterministic fuzz pass: random token soups must parse or fail cleanly (no crash, no
// sanitizer report), and whatever parses must print to text that parses to the same text.
TEST(ParserTest, RandomInputsParseOrFailCleanly) {
  const char* pieces[] = {"foo",
                          "bar:baz",
                          "{",
                          "}",
                          "(",
                          ")",
                          "[",
                          "]",
                          "5m",
                          ":",
                          "1m30s",
                          ",",
                          "a=\"b\"",
                          "a=~\".*x\"",
                          "b!=\"\"",
                          "+",
                          "-",
                          "*",
                          "/",
                          "%",
                          "^",
                          "==",
                          "!=",
                          ">",
                          "<=",
                          "and",
                          "or",
                          "unless",
                          "atan2",
                          "bool",
                          "on(a)",
                          "ignoring(b)",
                          "group_left",
                          "group_right(c)",
                          "by (a)",
                          "without (b)",
                          "sum",
                          "topk",
                          "count_values",
                          "rate",
                          "abs",
                          "label_join",
                          "offset",
                          "@",
                          "start()",
                          "end()",
                          "1",
                          "-2.5",
                          "0x1f",
                          "Inf",
                          "NaN",
                          "\"s\"",
                          "'q'",
                          "`r`",
                          " ",
                          "#c\n",
                          "quantile_over_time",
                          "histogram_quantile",
                          "time()",
                          "$",
                          "!",
                          "=",
                          "~"};
  uint64_t seed = 12345;
  auto next = [&seed]() {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<size_t>(seed >> 33);
  };
  int parsed = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string q;
    size_t n = 1 + next() % 12;
    for (size_t k = 0; k < n; ++k) q += pieces[next() % std::size(pieces)];
    auto e = Parse(q);
    if (!e) {
      EXPECT_NE(e.error().message.find("parse error: "), std::string::npos) << q;
      continue;
    }
    ++parsed;
    std::string once = Format(**e);
    auto again = Parse(once);
    ASSERT_TRUE(again.ok()) << q << " -> " << once << ": " << again.error().message;
    EXPECT_EQ(Format(**again), once) << q;
  }
  EXPECT_GT(parsed, 100);
}

// Each shape of nesting, built to exactly the limit and one level past it. Inputs that crashed
// the agent (stack overflow) before the limit existed: 15k "(", 40k unary "-", 14k nested
// "abs(", a 20k-term "1+1+...", a chain of subqueries.
std::string Repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

TEST(ParserTest, NestingUpToTheLimitParsesAndFormats) {
  const int n = kMaxExprDepth;
  const std::string shapes[] = {
      Repeat("(", n - 1) + "x" + Repeat(")", n - 1),     // n-1 parens + the selector
      Repeat("abs(", n - 1) + "x" + Repeat(")", n - 1),  // n-1 calls + the selector
      "x" + Repeat(" + x", n - 1),                       // n terms: n-1 binary levels + leaf
      Repeat("-", n - 1) + "x",                          // n-1 unary minus + the selector
      Repeat("abs(", n - 3) + "max_over_time(x[1m:])" + Repeat(")", n - 3),
      Repeat("sum(", n - 1) + "x" + Repeat(")", n - 1),
  };
  for (const std::string& q : shapes) {
    auto e = Parse(q);
    ASSERT_TRUE(e.ok()) << q.substr(0, 40) << ": " << e.error().message;
    auto again = Parse(Format(**e));
    ASSERT_TRUE(again.ok()) << again.error().message;
    EXPECT_EQ(Format(**again), Format(**e));
  }
}

TEST(ParserTest, NestingPastTheLimitIsAClearErrorNotACrash) {
  const std::string limit =
      "expression nested too deeply: more than " + std::to_string(kMaxExprDepth) + " levels";
  const std::string attacks[] = {
      Repeat("(", 15000),
      Repeat("(", kMaxExprDepth + 1) + "x" + Repeat(")", kMaxExprDepth + 1),
      Repeat("-", 40000) + "1",
      Repeat("-", 40000) + "x",
      Repeat("abs(", 14000) + "x" + Repeat(")", 14000),
      "1" + Repeat("+1", 20000),
      "x" + Repeat(" or x", kMaxExprDepth),
      "2" + Repeat("^2", 20000),  // right-associative: recursion, not a loop
      "x" + Repeat("[1m:1m]", 20000),
      Repeat("sum(", 20000) + "x" + Repeat(")", 20000),
      Repeat("topk(1,", 20000) + "x" + Repeat(")", 20000),
      Repeat("x + (", 20000) + "x" + Repeat(")", 20000),
  };
  for (const std::string& q : attacks) {
    auto e = Parse(q);
    ASSERT_FALSE(e.ok()) << q.substr(0, 40);
    EXPECT_NE(e.error().message.find(limit), std::string::npos)
        << q.substr(0, 40) << ": " << e.error().message;
    EXPECT_EQ(e.error().message.find("parse error: "), e.error().message.find(':', 2) + 2)
        << e.error().message;
  }
}

}  // namespace
}  // namespace gw::promql
