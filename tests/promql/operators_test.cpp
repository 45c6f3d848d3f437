// The operator surface of Prometheus 2.42, as data (written out from 2.42's promql/parser: the
// binary operators of lex.go with the operand kinds parse_test accepts, the aggregators, vector
// matching, offset, @ and subqueries), and a check that the compatibility corpus
// (tests/compat/expressions.txt, compared with a real Prometheus 2.42 by
// tests/integration/promql_compat_test.cpp) uses every one: the corpus is parsed and the features
// of each expression's syntax tree are collected, so a missing operator fails here instead of
// going unchecked. Together with the function list of functions_test.cpp this is the whole
// 2.42 surface the suite must cover.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "promql/ast.h"
#include "promql/parser.h"

namespace gw::promql {
namespace {

// Binary operators: vector-vector and vector-scalar (either side) forms; comparisons also with
// bool; set operators only between vectors.
const char* const kArithmetic[] = {"+", "-", "*", "/", "%", "^", "atan2"};
const char* const kComparison[] = {"==", "!=", ">", "<", ">=", "<="};
const char* const kSet[] = {"and", "or", "unless"};
const char* const kAggregators[] = {"sum",  "avg",     "count",    "min",
                                    "max",  "group",   "stddev",   "stdvar",
                                    "topk", "bottomk", "quantile", "count_values"};
const char* const kOther[] = {"unary -",
                              "unary +",
                              "by",
                              "without",
                              "on",
                              "ignoring",
                              "group_left",
                              "group_left(labels)",
                              "group_right",
                              "group_right(labels)",
                              "bool scalar-scalar",
                              "offset",
                              "negative offset",
                              "@ timestamp",
                              "@ start()",
                              "@ end()",
                              "offset and @",
                              "range offset",
                              "range @",
                              "subquery",
                              "subquery default step",
                              "subquery offset",
                              "subquery @",
                              "nested subquery",
                              "scalar-scalar arithmetic"};

std::vector<std::string> Required() {
  std::vector<std::string> out;
  for (const char* op : kArithmetic) {
    out.push_back(std::string(op) + " vector-vector");
    out.push_back(std::string(op) + " vector-scalar");
  }
  for (const char* op : kComparison) {
    out.push_back(std::string(op) + " vector-vector");
    out.push_back(std::string(op) + " vector-scalar");
    out.push_back(std::string(op) + " bool");
  }
  for (const char* op : kSet) out.push_back(std::string(op) + " vector-vector");
  for (const char* a : kAggregators) out.push_back(std::string("aggregate ") + a);
  for (const char* o : kOther) out.push_back(o);
  return out;
}

void Mods(const TimeModifiers& m, const std::string& prefix, std::set<std::string>* f) {
  if (m.offset_ms != 0) f->insert(prefix + (m.offset_ms < 0 ? "negative offset" : "offset"));
  if (m.offset_ms != 0 && m.at != AtKind::kNone) f->insert(prefix + "offset and @");
  switch (m.at) {
    case AtKind::kTimestamp:
      f->insert(prefix + "@ timestamp");
      break;
    case AtKind::kStart:
      f->insert(prefix + "@ start()");
      break;
    case AtKind::kEnd:
      f->insert(prefix + "@ end()");
      break;
    case AtKind::kNone:
      break;
  }
}

void Collect(const Expr& e, bool in_subquery, std::set<std::string>* f) {
  switch (e.kind) {
    case ExprKind::kVectorSelector:
      Mods(static_cast<const VectorSelector&>(e).mods, "", f);
      return;
    case ExprKind::kMatrixSelector: {
      const TimeModifiers& m = static_cast<const MatrixSelector&>(e).selector->mods;
      if (m.offset_ms != 0) f->insert("range offset");
      if (m.at != AtKind::kNone) f->insert("range @");
      Mods(m, "", f);
      return;
    }
    case ExprKind::kSubquery: {
      const auto& sq = static_cast<const Subquery&>(e);
      f->insert("subquery");
      if (sq.step_ms == 0) f->insert("subquery default step");
      if (sq.mods.offset_ms != 0) f->insert("subquery offset");
      if (sq.mods.at != AtKind::kNone) f->insert("subquery @");
      if (in_subquery) f->insert("nested subquery");
      return Collect(*sq.expr, true, f);
    }
    case ExprKind::kParen:
      return Collect(*static_cast<const ParenExpr&>(e).expr, in_subquery, f);
    case ExprKind::kUnary: {
      const auto& u = static_cast<const UnaryExpr&>(e);
      if (TypeOf(*u.expr) == ValueType::kVector) f->insert(u.negate ? "unary -" : "unary +");
      return Collect(*u.expr, in_subquery, f);
    }
    case ExprKind::kBinary: {
      const auto& b = static_cast<const BinaryExpr&>(e);
      const std::string op = BinaryOpName(b.op);
      const bool lv = TypeOf(*b.lhs) == ValueType::kVector;
      const bool rv = TypeOf(*b.rhs) == ValueType::kVector;
      if (lv && rv) f->insert(op + " vector-vector");
      if (lv != rv) f->insert(op + " vector-scalar");
      if (!lv && !rv) f->insert(b.return_bool ? "bool scalar-scalar" : "scalar-scalar arithmetic");
      if (b.return_bool) f->insert(op + " bool");
      if (b.matching && lv && rv) {
        const VectorMatching& m = *b.matching;
        if (m.on) f->insert("on");
        if (!m.on && !m.labels.empty()) f->insert("ignoring");
        if (m.card == Cardinality::kManyToOne)
          f->insert(m.include.empty() ? "group_left" : "group_left(labels)");
        if (m.card == Cardinality::kOneToMany)
          f->insert(m.include.empty() ? "group_right" : "group_right(labels)");
      }
      Collect(*b.lhs, in_subquery, f);
      return Collect(*b.rhs, in_subquery, f);
    }
    case ExprKind::kAggregate: {
      const auto& a = static_cast<const AggregateExpr&>(e);
      f->insert(std::string("aggregate ") + AggregateOpName(a.op));
      if (a.without) f->insert("without");
      if (!a.without && !a.grouping.empty()) f->insert("by");
      if (a.param) Collect(*a.param, in_subquery, f);
      return Collect(*a.expr, in_subquery, f);
    }
    case ExprKind::kCall:
      for (const auto& arg : static_cast<const Call&>(e).args) Collect(*arg, in_subquery, f);
      return;
    case ExprKind::kNumber:
    case ExprKind::kString:
      return;
  }
}

TEST(OperatorSurfaceTest, EveryOperatorParses) {
  // Each required feature comes from a real expression: this checks the collector (and so the
  // test below) can see all of them.
  const char* const samples[] = {"a + b",
                                 "a + 1",
                                 "a - b",
                                 "a - 1",
                                 "a * b",
                                 "2 * a",
                                 "a / b",
                                 "a / 2",
                                 "a % b",
                                 "a % 2",
                                 "a ^ b",
                                 "a ^ 2",
                                 "a atan2 b",
                                 "a atan2 1",
                                 "a == b",
                                 "a == 1",
                                 "a == bool 1",
                                 "a != b",
                                 "a != 1",
                                 "a != bool b",
                                 "a > b",
                                 "a > 1",
                                 "a > bool 1",
                                 "a < b",
                                 "1 < a",
                                 "a < bool 1",
                                 "a >= b",
                                 "a >= 1",
                                 "a >= bool 1",
                                 "a <= b",
                                 "a <= 1",
                                 "a <= bool 1",
                                 "a and b",
                                 "a or b",
                                 "a unless b",
                                 "-a",
                                 "+a",
                                 "sum by (x) (a)",
                                 "avg without (x) (a)",
                                 "count(a)",
                                 "min(a)",
                                 "max(a)",
                                 "group(a)",
                                 "stddev(a)",
                                 "stdvar(a)",
                                 "topk(1, a)",
                                 "bottomk(1, a)",
                                 "quantile(0.5, a)",
                                 "count_values(\"v\", a)",
                                 "a + on(x) b",
                                 "a + ignoring(x) b",
                                 "a * on(x) group_left b",
                                 "a * on(x) group_left(y) b",
                                 "a * on(x) group_right b",
                                 "a * on(x) group_right(y) b",
                                 "1 > bool 2",
                                 "1 + 2",
                                 "a offset 5m",
                                 "a offset -5m",
                                 "a @ 100",
                                 "a @ start()",
                                 "a @ end()",
                                 "a @ 100 offset 1m",
                                 "rate(a[5m] offset 1m)",
                                 "rate(a[5m] @ end())",
                                 "max_over_time(a[5m:1m])",
                                 "max_over_time(a[5m:])",
                                 "max_over_time(a[5m:1m] offset 1m)",
                                 "max_over_time(a[5m:1m] @ end())",
                                 "max_over_time(max_over_time(a[5m:1m])[10m:2m])"};
  std::set<std::string> features;
  for (const char* s : samples) {
    auto e = Parse(s);
    ASSERT_TRUE(e.ok()) << s << ": " << e.error().message;
    Collect(**e, false, &features);
  }
  for (const std::string& r : Required()) EXPECT_TRUE(features.count(r)) << r;
}

TEST(OperatorSurfaceTest, CompatibilityCorpusUsesEveryOperator) {
  std::ifstream in(std::string(GW_SOURCE_DIR) + "/tests/compat/expressions.txt");
  ASSERT_TRUE(in) << "missing tests/compat/expressions.txt";
  std::set<std::string> features;
  int parsed = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    auto e = Parse(line);
    if (!e.ok()) continue;  // the corpus also asks for errors
    ++parsed;
    Collect(**e, false, &features);
  }
  EXPECT_GT(parsed, 100);
  for (const std::string& r : Required())
    EXPECT_TRUE(features.count(r)) << "no expression in tests/compat/expressions.txt uses " << r;
}

}  // namespace
}  // namespace gw::promql
