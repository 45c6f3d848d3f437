// Binary operators: arithmetic, comparisons and set operators with vector matching, as in
// Prometheus 2.42's VectorBinop / VectorAnd / VectorOr / VectorUnless / VectorscalarBinop.
#include <algorithm>
#include <cmath>
#include <set>
#include <string_view>
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

// Whether `x` is one of the labels elements are matched on (see MatchLabels).
bool IsMatchLabel(const tsdb::Label& x, const VectorMatching& m) {
  bool listed = std::find(m.labels.begin(), m.labels.end(), x.name) != m.labels.end();
  return m.on == listed && (m.on || x.name != "__name__");
}

// A hash of MatchLabels(l, m.on, m.labels), computed without building it: equal match labels
// give equal hashes; SameMatchLabels settles the rare collision.
uint64_t MatchHash(const tsdb::Labels& l, const VectorMatching& m) {
  uint64_t h = 0;
  auto mix = [&h](std::string_view s) {  // boost's hash_combine, 64-bit
    h ^= std::hash<std::string_view>{}(s) + 0x9e3779b97f4a7c15ULL + (h << 12) + (h >> 4);
  };
  for (const tsdb::Label& x : l) {
    if (!IsMatchLabel(x, m)) continue;
    mix(x.name);
    mix(x.value);
  }
  return h;
}

bool SameMatchLabels(const tsdb::Labels& a, const tsdb::Labels& b, const VectorMatching& m) {
  size_t i = 0, j = 0;
  for (;;) {
    while (i < a.size() && !IsMatchLabel(a[i], m)) ++i;
    while (j < b.size() && !IsMatchLabel(b[j], m)) ++j;
    if (i == a.size() || j == b.size()) return i == a.size() && j == b.size();
    if (a[i] != b[j]) return false;
    ++i;
    ++j;
  }
}

// The right-hand side of a vector operation indexed by match labels: entries sorted by hash,
// ties in the order of the vector.
struct MatchIndex {
  struct Entry {
    uint64_t hash;
    size_t index;
  };
  std::vector<Entry> entries;

  MatchIndex(const Vector& v, const VectorMatching& m) {
    entries.reserve(v.size());
    for (size_t i = 0; i < v.size(); ++i) entries.push_back(Entry{MatchHash(v[i].labels, m), i});
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
      return a.hash != b.hash ? a.hash < b.hash : a.index < b.index;
    });
  }
  // The position in `entries` of the first element of `v` whose match labels equal l's; npos if
  // there is none.
  size_t Find(const Vector& v, const tsdb::Labels& l, uint64_t hash,
              const VectorMatching& m) const {
    auto it = std::lower_bound(entries.begin(), entries.end(), hash,
                               [](const Entry& e, uint64_t h) { return e.hash < h; });
    for (; it != entries.end() && it->hash == hash; ++it)
      if (SameMatchLabels(v[it->index].labels, l, m))
        return static_cast<size_t>(it - entries.begin());
    return std::string::npos;
  }
};

Vector VectorBinop(BinaryOp op, const Vector& lhs_in, const Vector& rhs_in, const VectorMatching& m,
                   bool return_bool) {
  const Vector* lp = &lhs_in;
  const Vector* rp = &rhs_in;
  if (m.card == Cardinality::kOneToMany) std::swap(lp, rp);
  const Vector& lhs = *lp;
  const Vector& rhs = *rp;
  const MatchIndex right(rhs, m);
  // Two right-hand elements with the same match labels are an error; Prometheus reports the
  // first one (in vector order) whose group was already seen, with that group's first element.
  size_t dup = rhs.size(), dup_first = 0;
  for (size_t a = 0; a < right.entries.size(); ++a) {
    for (size_t b = a + 1;
         b < right.entries.size() && right.entries[b].hash == right.entries[a].hash; ++b) {
      const size_t ia = right.entries[a].index, ib = right.entries[b].index;
      if (ib < dup && SameMatchLabels(rhs[ia].labels, rhs[ib].labels, m)) {
        dup = ib;
        dup_first = ia;
      }
    }
  }
  if (dup < rhs.size()) {
    const char* one_side = m.card == Cardinality::kOneToMany ? "left" : "right";
    throw EvalError{QueryError::Kind::kExecution,
                    "found duplicate series for the match group " +
                        LabelsString(MatchLabels(rhs[dup].labels, m.on, m.labels)) + " on the " +
                        one_side + " hand-side of the operation: [" +
                        LabelsString(rhs[dup].labels) + ", " + LabelsString(rhs[dup_first].labels) +
                        "];many-to-many matching not allowed: matching labels must be unique "
                        "on one side"};
  }
  // One-to-one: whether each right-hand element was matched already. Otherwise, per right-hand
  // element, the result label sets it produced.
  std::vector<char> used(right.entries.size(), 0);
  std::unordered_map<size_t, std::unordered_set<std::string>> matched;
  Vector out;
  out.reserve(lhs.size());
  for (const Element& l : lhs) {
    const size_t found = right.Find(rhs, l.labels, MatchHash(l.labels, m), m);
    if (found == std::string::npos) continue;
    const Element& r = rhs[right.entries[found].index];
    double vl = l.v, vr = r.v;
    if (m.card == Cardinality::kOneToMany) std::swap(vl, vr);
    auto [value, keep] = Apply(op, vl, vr);
    if (return_bool) {
      value = keep ? 1 : 0;
    } else if (!keep) {
      continue;
    }
    tsdb::Labels labels = ResultLabels(l.labels, r.labels, op, m);
    if (return_bool) labels = DropName(labels);
    if (m.card == Cardinality::kOneToOne) {
      if (used[found]) {
        throw EvalError{QueryError::Kind::kExecution,
                        "multiple matches for labels: many-to-one matching must be explicit "
                        "(group_left/group_right)"};
      }
      used[found] = 1;
    } else {
      auto& inserted = matched[found];
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
