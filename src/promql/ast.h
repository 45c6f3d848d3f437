// promql/ast.h — the syntax tree of a PromQL expression, as produced by Parse() (parser.h).
//
// One node type per construct of the Prometheus 2.42 grammar. Nodes own their children; a tree is
// immutable once parsed and may be evaluated from several threads at once.
#ifndef GPUWARDEN_PROMQL_AST_H_
#define GPUWARDEN_PROMQL_AST_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tsdb/storage.h"

namespace gw::promql {

enum class ValueType { kScalar, kString, kVector, kMatrix };

// "scalar", "string", "instant vector", "range vector": Prometheus' wording in error messages.
const char* ValueTypeName(ValueType type);

enum class ExprKind {
  kNumber,
  kString,
  kVectorSelector,
  kMatrixSelector,
  kSubquery,
  kParen,
  kUnary,
  kBinary,
  kAggregate,
  kCall,
};

struct Expr {
  explicit Expr(ExprKind k) : kind(k) {}
  virtual ~Expr() = default;
  Expr(const Expr&) = delete;
  Expr& operator=(const Expr&) = delete;
  const ExprKind kind;
  int pos = 0;  // byte offset of the node's first character in the query text
};
using ExprPtr = std::unique_ptr<Expr>;

struct NumberLiteral : Expr {
  NumberLiteral() : Expr(ExprKind::kNumber) {}
  double value = 0;
};

struct StringLiteral : Expr {
  StringLiteral() : Expr(ExprKind::kString) {}
  std::string value;
};

// Where an `@` modifier pins evaluation: nowhere, a fixed time, or the query's start or end.
enum class AtKind { kNone, kTimestamp, kStart, kEnd };

// `offset` and `@` as written after a selector or subquery.
struct TimeModifiers {
  int64_t offset_ms = 0;
  AtKind at = AtKind::kNone;
  int64_t at_ms = 0;  // for AtKind::kTimestamp
};

struct VectorSelector : Expr {
  VectorSelector() : Expr(ExprKind::kVectorSelector) {}
  std::string name;                     // metric name if written before the braces, else ""
  std::vector<tsdb::Matcher> matchers;  // includes __name__="name" when `name` is set
  TimeModifiers mods;
};

struct MatrixSelector : Expr {
  MatrixSelector() : Expr(ExprKind::kMatrixSelector) {}
  std::unique_ptr<VectorSelector> selector;  // carries the offset and @ modifiers
  int64_t range_ms = 0;
};

struct Subquery : Expr {
  Subquery() : Expr(ExprKind::kSubquery) {}
  ExprPtr expr;
  int64_t range_ms = 0;
  int64_t step_ms = 0;  // 0: the default evaluation interval
  TimeModifiers mods;
};

struct ParenExpr : Expr {
  ParenExpr() : Expr(ExprKind::kParen) {}
  ExprPtr expr;
};

struct UnaryExpr : Expr {
  UnaryExpr() : Expr(ExprKind::kUnary) {}
  bool negate = true;  // false for unary plus
  ExprPtr expr;
};

enum class BinaryOp {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMod,
  kPow,
  kAtan2,
  kEq,
  kNe,
  kGt,
  kLt,
  kGe,
  kLe,
  kAnd,
  kOr,
  kUnless,
};
const char* BinaryOpName(BinaryOp op);
bool IsComparison(BinaryOp op);
bool IsSetOperator(BinaryOp op);

enum class Cardinality { kOneToOne, kManyToOne, kOneToMany, kManyToMany };

struct VectorMatching {
  Cardinality card = Cardinality::kOneToOne;
  bool on = false;                   // on(...) rather than ignoring(...)
  std::vector<std::string> labels;   // the on/ignoring list
  std::vector<std::string> include;  // the group_left/group_right list
};

struct BinaryExpr : Expr {
  BinaryExpr() : Expr(ExprKind::kBinary) {}
  BinaryOp op = BinaryOp::kAdd;
  ExprPtr lhs, rhs;
  bool return_bool = false;
  std::optional<VectorMatching> matching;  // set when both sides are instant vectors
};

enum class AggregateOp {
  kSum,
  kMin,
  kMax,
  kAvg,
  kGroup,
  kCount,
  kCountValues,
  kStddev,
  kStdvar,
  kTopk,
  kBottomk,
  kQuantile,
};
const char* AggregateOpName(AggregateOp op);

struct AggregateExpr : Expr {
  AggregateExpr() : Expr(ExprKind::kAggregate) {}
  AggregateOp op = AggregateOp::kSum;
  ExprPtr expr;
  ExprPtr param;  // topk/bottomk/quantile/count_values only
  std::vector<std::string> grouping;
  bool without = false;
};

struct FunctionInfo;  // functions.h
struct Call : Expr {
  Call() : Expr(ExprKind::kCall) {}
  const FunctionInfo* func = nullptr;
  std::vector<ExprPtr> args;
};

// The type an expression evaluates to.
ValueType TypeOf(const Expr& e);

}  // namespace gw::promql

#endif  // GPUWARDEN_PROMQL_AST_H_
