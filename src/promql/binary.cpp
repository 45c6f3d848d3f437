// Binary operators: arithmetic, comparisons and set operators with vector matching, as in
// Prometheus 2.42's VectorBinop / VectorAnd / VectorOr / VectorUnless / VectorscalarBinop.
#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "promql/eval.h"

namespace gw::promql {
namespace {

// Arithmetic drops the metric name; comparisons and atan2 keep it (2.42's shouldDropMetricName).
bool DropsName(BinaryOp op) {
  return op <= BinaryOp::kPow;
}

// The value of `lhs op rhs` and, for comparisons, whether the comparison holds.
std::pair<double, bool> Apply(BinaryOp op, double lhs, double rhs) {
  switch (op) {
    case BinaryOp::kAdd:
      return {lhs + rhs, true};
    case BinaryOp::kSub:
      return {lhs - rhs, true};
    case BinaryOp::kMul:
      return {lhs * rhs, true};
    case BinaryOp::kDiv:
      return {lhs / rhs, true};
    case BinaryOp::kMod:
      return {std::fmod(lhs, rhs), true};
    case BinaryOp::kPow:
      return {std::pow(lhs, rhs), true};
    case BinaryOp::kAtan2:
      return {std::atan2(lhs, rhs), true};
    case BinaryOp::kEq:
      return {lhs, lhs == rhs};
    case BinaryOp::kNe:
      return {lhs, lhs != rhs};
    case BinaryOp::kGt:
      return {lhs, lhs > rhs};
    case BinaryOp::kLt:
      return {lhs, lhs < rhs};
    case BinaryOp::kGe:
      return {lhs, lhs >= rhs};
    case BinaryOp::kLe:
      return {lhs, lhs <= rhs};
    default:
      return {0, false};
  }
}

// The labels two elements are matched on: the `on` labels, or all but the `ignoring` labels
// and the metric name.
tsdb::Labels MatchLabels(const tsdb::Labels& l, bool on, const std::vector<std::string>& names) {
  tsdb::Labels out;
  for (const tsdb::Label& x : l) {
    bool listed = std::find(names.begin(), names.end(), x.name) != names.end();
    if (on == listed && (on || x.name != "__name__")) out.push_back(x);
  }
  return out;
}

// LabelsKey(MatchLabels(l, m.on, m.labels)), built without the intermediate label set.
std::string Signature(const tsdb::Labels& l, const VectorMatching& m) {
  std::string key;
  for (const tsdb::Label& x : l) {
    bool listed = std::find(m.labels.begin(), m.labels.end(), x.name) != m.labels.end();
    if (m.on == listed && (m.on || x.name != "__name__")) {
      key += x.name;
      key.push_back('\xff');
      key += x.value;
      key.push_back('\xff');
    }
  }
  return key;
}

std::string LabelsString(const tsdb::Labels& l) {
  std::string out = "{";
  for (size_t i = 0; i < l.size(); ++i) {
    if (i) out += ", ";
    out += l[i].name + "=\"";
    for (char c : l[i].value) {
      if (c == '"' || c == '\\') out.push_back('\\');
      out.push_back(c);
    }
    out += "\"";
  }
  return out + "}";
}

tsdb::Labels ResultLabels(const tsdb::Labels& lhs, const tsdb::Labels& rhs, BinaryOp op,
                          const VectorMatching& m) {
  // In one pass: drop the metric name for arithmetic, then keep the matching labels one-to-one.
  const bool drop_name = DropsName(op);
  const bool one_to_one = m.card == Cardinality::kOneToOne;
  tsdb::Labels out;
  out.reserve(lhs.size());
  for (const tsdb::Label& x : lhs) {
    if (drop_name && x.name == "__name__") continue;
    if (one_to_one) {
      bool listed = std::find(m.labels.begin(), m.labels.end(), x.name) != m.labels.end();
      if (listed != m.on) continue;
    }
    out.push_back(x);
  }
  for (const std::string& name : m.include)
    SetLabel(&out, name, std::string(LabelValue(rhs, name)));
  return out;
}

Vector VectorBinop(BinaryOp op, const Vector& lhs_in, const Vector& rhs_in, const VectorMatching& m,
                   bool return_bool) {
  const Vector* lp = &lhs_in;
  const Vector* rp = &rhs_in;
  if (m.card == Cardinality::kOneToMany) std::swap(lp, rp);
  const Vector& lhs = *lp;
  const Vector& rhs = *rp;
  std::unordered_map<std::string, const Element*> right;
  right.reserve(rhs.size());
  for (const Element& r : rhs) {
    std::string sig = Signature(r.labels, m);
    auto [it, inserted] = right.emplace(sig, &r);
    if (!inserted) {
      const char* one_side = m.card == Cardinality::kOneToMany ? "left" : "right";
      throw EvalError{QueryError::Kind::kExecution,
                      "found duplicate series for the match group " +
                          LabelsString(MatchLabels(r.labels, m.on, m.labels)) + " on the " +
                          one_side + " hand-side of the operation: [" + LabelsString(r.labels) +
                          ", " + LabelsString(it->second->labels) +
                          "];many-to-many matching not allowed: matching labels must be unique "
                          "on one side"};
    }
  }
  std::unordered_map<std::string, std::unordered_set<std::string>> matched;
  Vector out;
  out.reserve(lhs.size());
  for (const Element& l : lhs) {
    std::string sig = Signature(l.labels, m);
    auto it = right.find(sig);
    if (it == right.end()) continue;
    double vl = l.v, vr = it->second->v;
    if (m.card == Cardinality::kOneToMany) std::swap(vl, vr);
    auto [value, keep] = Apply(op, vl, vr);
    if (return_bool) {
      value = keep ? 1 : 0;
    } else if (!keep) {
      continue;
    }
    tsdb::Labels labels = ResultLabels(l.labels, it->second->labels, op, m);
    if (return_bool) labels = DropName(labels);
    auto found = matched.find(sig);
    if (m.card == Cardinality::kOneToOne) {
      if (found != matched.end()) {
        throw EvalError{QueryError::Kind::kExecution,
                        "multiple matches for labels: many-to-one matching must be explicit "
                        "(group_left/group_right)"};
      }
      matched[sig];
    } else {
      auto& inserted = matched[sig];
      if (!inserted.insert(LabelsKey(labels)).second) {
        throw EvalError{QueryError::Kind::kExecution,
                        "multiple matches for labels: grouping labels must ensure unique matches"};
      }
    }
    out.push_back(Element{std::move(labels), value, 0});
  }
  return out;
}

Vector SetOp(BinaryOp op, const Vector& lhs, const Vector& rhs, const VectorMatching& m) {
  std::unordered_set<std::string> sigs;
  Vector out;
  if (op == BinaryOp::kOr) {
    for (const Element& l : lhs) sigs.insert(Signature(l.labels, m));
    out = lhs;
    for (const Element& r : rhs)
      if (!sigs.count(Signature(r.labels, m))) out.push_back(r);
    return out;
  }
  for (const Element& r : rhs) sigs.insert(Signature(r.labels, m));
  for (const Element& l : lhs) {
    bool found = sigs.count(Signature(l.labels, m)) > 0;
    if (found == (op == BinaryOp::kAnd)) out.push_back(l);
  }
  return out;
}

}  // namespace

Vector Evaluator::EvalBinary(const BinaryExpr& b, const EvalValue& lhs, const EvalValue& rhs,
                             EvalValue* out) {
  bool ls = lhs.type == ValueType::kScalar, rs = rhs.type == ValueType::kScalar;
  if (ls && rs) {
    auto [value, keep] = Apply(b.op, lhs.scalar, rhs.scalar);
    out->type = ValueType::kScalar;
    out->scalar = IsComparison(b.op) ? (keep ? 1 : 0) : value;
    return {};
  }
  out->type = ValueType::kVector;
  if (!ls && !rs) {
    VectorMatching default_matching;
    default_matching.card = IsSetOperator(b.op) ? Cardinality::kManyToMany : Cardinality::kOneToOne;
    const VectorMatching& m = b.matching ? *b.matching : default_matching;
    if (IsSetOperator(b.op)) return SetOp(b.op, lhs.vector, rhs.vector, m);
    return VectorBinop(b.op, lhs.vector, rhs.vector, m, b.return_bool);
  }
  // Vector and scalar: the vector's elements keep their place whichever side they are on.
  bool swap = ls;
  const Vector& vec = swap ? rhs.vector : lhs.vector;
  double scalar = swap ? lhs.scalar : rhs.scalar;
  Vector result;
  result.reserve(vec.size());
  for (const Element& el : vec) {
    double lv = el.v, rv = scalar;
    if (swap) std::swap(lv, rv);
    auto [value, keep] = Apply(b.op, lv, rv);
    if (IsComparison(b.op) && swap) value = rv;
    if (b.return_bool) {
      value = keep ? 1 : 0;
      keep = true;
    }
    if (!keep) continue;
    tsdb::Labels labels = DropsName(b.op) || b.return_bool ? DropName(el.labels) : el.labels;
    result.push_back(Element{std::move(labels), value, 0});
  }
  return result;
}

}  // namespace gw::promql
