// Canonical printing of PromQL trees, as Prometheus 2.42's promql/parser/printer.go prints them,
// and the small vocabulary helpers of ast.h.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "promql/ast.h"
#include "promql/functions.h"
#include "promql/parser.h"

namespace gw::promql {

const char* ValueTypeName(ValueType type) {
  switch (type) {
    case ValueType::kScalar:
      return "scalar";
    case ValueType::kString:
      return "string";
    case ValueType::kVector:
      return "instant vector";
    case ValueType::kMatrix:
      return "range vector";
  }
  return "?";
}

const char* BinaryOpName(BinaryOp op) {
  static const char* kNames[] = {"+",  "-", "*", "/",  "%",  "^",   "atan2", "==",
                                 "!=", ">", "<", ">=", "<=", "and", "or",    "unless"};
  return kNames[static_cast<int>(op)];
}

bool IsComparison(BinaryOp op) {
  return op >= BinaryOp::kEq && op <= BinaryOp::kLe;
}
bool IsSetOperator(BinaryOp op) {
  return op >= BinaryOp::kAnd;
}

const char* AggregateOpName(AggregateOp op) {
  static const char* kNames[] = {"sum",          "min",    "max",    "avg",  "group",   "count",
                                 "count_values", "stddev", "stdvar", "topk", "bottomk", "quantile"};
  return kNames[static_cast<int>(op)];
}

ValueType TypeOf(const Expr& e) {
  switch (e.kind) {
    case ExprKind::kNumber:
      return ValueType::kScalar;
    case ExprKind::kString:
      return ValueType::kString;
    case ExprKind::kVectorSelector:
      return ValueType::kVector;
    case ExprKind::kMatrixSelector:
    case ExprKind::kSubquery:
      return ValueType::kMatrix;
    case ExprKind::kParen:
      return TypeOf(*static_cast<const ParenExpr&>(e).expr);
    case ExprKind::kUnary:
      return TypeOf(*static_cast<const UnaryExpr&>(e).expr);
    case ExprKind::kBinary: {
      const auto& b = static_cast<const BinaryExpr&>(e);
      return TypeOf(*b.lhs) == ValueType::kScalar && TypeOf(*b.rhs) == ValueType::kScalar
                 ? ValueType::kScalar
                 : ValueType::kVector;
    }
    case ExprKind::kAggregate:
      return ValueType::kVector;
    case ExprKind::kCall:
      return static_cast<const Call&>(e).func->return_type;
  }
  return ValueType::kScalar;
}

std::string FormatPromDuration(int64_t ms) {
  if (ms == 0) return "0s";
  std::string out;
  auto unit = [&](const char* name, int64_t mult, bool exact) {
    if (exact && ms % mult != 0) return;
    int64_t v = ms / mult;
    if (v > 0) {
      out += std::to_string(v) + name;
      ms -= v * mult;
    }
  };
  unit("y", 365LL * 24 * 3600 * 1000, true);
  unit("w", 7LL * 24 * 3600 * 1000, true);
  unit("d", 24LL * 3600 * 1000, false);
  unit("h", 3600LL * 1000, false);
  unit("m", 60LL * 1000, false);
  unit("s", 1000, false);
  unit("ms", 1, false);
  return out;
}

std::string GoQuote(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\a':
        out += "\\a";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\v':
        out += "\\v";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out += buf;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  return out + "\"";
}

namespace {

const char* MatchOpText(tsdb::MatchType t) {
  switch (t) {
    case tsdb::MatchType::kEqual:
      return "=";
    case tsdb::MatchType::kNotEqual:
      return "!=";
    case tsdb::MatchType::kRegexMatch:
      return "=~";
    case tsdb::MatchType::kRegexNoMatch:
      return "!~";
  }
  return "?";
}

std::string Join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

std::string ModifiersSuffix(const TimeModifiers& m) {
  std::string at;
  if (m.at == AtKind::kTimestamp) {
    char buf[64];
    std::snprintf(buf, sizeof buf, " @ %.3f", static_cast<double>(m.at_ms) / 1000.0);
    at = buf;
  } else if (m.at == AtKind::kStart) {
    at = " @ start()";
  } else if (m.at == AtKind::kEnd) {
    at = " @ end()";
  }
  std::string offset;
  if (m.offset_ms > 0) offset = " offset " + FormatPromDuration(m.offset_ms);
  if (m.offset_ms < 0) offset = " offset -" + FormatPromDuration(-m.offset_ms);
  return at + offset;
}

std::string SelectorBody(const VectorSelector& vs) {
  std::vector<std::string> parts;
  for (const tsdb::Matcher& m : vs.matchers) {
    if (m.name() == "__name__" && m.type() == tsdb::MatchType::kEqual && m.value() == vs.name)
      continue;
    parts.push_back(m.name() + MatchOpText(m.type()) + GoQuote(m.value()));
  }
  if (parts.empty()) return vs.name;
  std::sort(parts.begin(), parts.end());
  return vs.name + "{" + Join(parts, ",") + "}";
}

}  // namespace

namespace {
// Go's fmt.Sprint(float64), i.e. %g with the shortest round-trip digits: exponent form when the
// decimal exponent is < -4 or >= 6 ("1e+06", "123456", "1e-05").
std::string FormatNumber(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == 0) return std::signbit(v) ? "-0" : "0";
  char buf[64];
  int prec = 1;
  for (; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*e", prec - 1, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  int exp = std::atoi(std::strchr(buf, 'e') + 1);
  if (exp < -4 || exp >= 6) return buf;
  std::snprintf(buf, sizeof buf, "%.*f", std::max(prec - 1 - exp, 0), v);
  return buf;
}
}  // namespace

std::string Format(const Expr& e) {
  switch (e.kind) {
    case ExprKind::kNumber:
      return FormatNumber(static_cast<const NumberLiteral&>(e).value);
    case ExprKind::kString:
      return GoQuote(static_cast<const StringLiteral&>(e).value);
    case ExprKind::kVectorSelector: {
      const auto& vs = static_cast<const VectorSelector&>(e);
      return SelectorBody(vs) + ModifiersSuffix(vs.mods);
    }
    case ExprKind::kMatrixSelector: {
      const auto& ms = static_cast<const MatrixSelector&>(e);
      return SelectorBody(*ms.selector) + "[" + FormatPromDuration(ms.range_ms) + "]" +
             ModifiersSuffix(ms.selector->mods);
    }
    case ExprKind::kSubquery: {
      const auto& sq = static_cast<const Subquery&>(e);
      return Format(*sq.expr) + "[" + FormatPromDuration(sq.range_ms) + ":" +
             (sq.step_ms ? FormatPromDuration(sq.step_ms) : "") + "]" + ModifiersSuffix(sq.mods);
    }
    case ExprKind::kParen:
      return "(" + Format(*static_cast<const ParenExpr&>(e).expr) + ")";
    case ExprKind::kUnary: {
      const auto& u = static_cast<const UnaryExpr&>(e);
      return (u.negate ? "-" : "+") + Format(*u.expr);
    }
    case ExprKind::kBinary: {
      const auto& b = static_cast<const BinaryExpr&>(e);
      std::string matching;
      if (b.matching && (!b.matching->labels.empty() || b.matching->on)) {
        matching = std::string(" ") + (b.matching->on ? "on" : "ignoring") + " (" +
                   Join(b.matching->labels, ", ") + ")";
        if (b.matching->card == Cardinality::kManyToOne ||
            b.matching->card == Cardinality::kOneToMany) {
          matching += std::string(" group_") +
                      (b.matching->card == Cardinality::kManyToOne ? "left" : "right") + " (" +
                      Join(b.matching->include, ", ") + ")";
        }
      }
      return Format(*b.lhs) + " " + BinaryOpName(b.op) + (b.return_bool ? " bool" : "") + matching +
             " " + Format(*b.rhs);
    }
    case ExprKind::kAggregate: {
      const auto& a = static_cast<const AggregateExpr&>(e);
      std::string out = AggregateOpName(a.op);
      if (a.without) {
        out += " without (" + Join(a.grouping, ", ") + ") ";
      } else if (!a.grouping.empty()) {
        out += " by (" + Join(a.grouping, ", ") + ") ";
      }
      out += "(";
      if (a.param) out += Format(*a.param) + ", ";
      return out + Format(*a.expr) + ")";
    }
    case ExprKind::kCall: {
      const auto& c = static_cast<const Call&>(e);
      std::vector<std::string> args;
      for (const auto& a : c.args) args.push_back(Format(*a));
      return std::string(c.func->name) + "(" + Join(args, ", ") + ")";
    }
  }
  return "";
}

}  // namespace gw::promql
