// Aggregation operators, as Prometheus 2.42's evaluator.aggregation(): groups in order of first
// appearance, incremental mean for avg and stddev/stdvar, Go's container/heap for topk/bottomk
// (so ties resolve as in Prometheus), interpolated quantile.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "promql/eval.h"

namespace gw::promql {

// Go's strconv.FormatFloat(v, 'f', -1, 64): the shortest digits that round-trip, without an
// exponent ("0.1", "1e+21" as "1000000000000000000000").
std::string FormatFloatPlain(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  int prec = 1;
  for (; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*e", prec - 1, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  // buf: [-]d.ddde±XX
  std::string s(buf);
  bool neg = s[0] == '-';
  if (neg) s.erase(0, 1);
  size_t e = s.find('e');
  int exp = std::atoi(s.c_str() + e + 1);
  std::string digits;
  for (size_t i = 0; i < e; ++i)
    if (s[i] != '.') digits.push_back(s[i]);
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out;
  int point = exp + 1;  // digits before the decimal point
  if (point <= 0) {
    out = "0." + std::string(static_cast<size_t>(-point), '0') + digits;
  } else if (static_cast<size_t>(point) >= digits.size()) {
    out = digits + std::string(static_cast<size_t>(point) - digits.size(), '0');
  } else {
    out = digits.substr(0, static_cast<size_t>(point)) + "." +
          digits.substr(static_cast<size_t>(point));
  }
  if (v == 0) out = "0";
  return (neg ? "-" : "") + out;
}

double Quantile(double q, std::vector<double> values) {
  std::sort(values.begin(), values.end(),
            [](double a, double b) { return (std::isnan(a) && !std::isnan(b)) || a < b; });
  return QuantileOfSorted(q, values);
}

double QuantileOfSorted(double q, std::span<const double> values) {
  if (values.empty()) return std::nan("");
  if (q < 0) return -HUGE_VAL;
  if (q > 1) return HUGE_VAL;
  double n = static_cast<double>(values.size());
  double rank = q * (n - 1);
  double lower = std::max(0.0, std::floor(rank));
  double upper = std::min(n - 1, lower + 1);
  double weight = rank - std::floor(rank);
  return values[static_cast<size_t>(lower)] * (1 - weight) +
         values[static_cast<size_t>(upper)] * weight;
}

namespace {

// A binary heap with Go's container/heap algorithms; `less` as Prometheus' vectorByValueHeap
// (topk: NaN counts as smallest) or vectorByReverseValueHeap (bottomk: NaN counts as largest).
class GoHeap {
 public:
  explicit GoHeap(bool reverse) : reverse_(reverse) {}
  bool Less(size_t i, size_t j) const {
    double a = items_[i].v, b = items_[j].v;
    if (std::isnan(a)) return true;
    return reverse_ ? a > b : a < b;
  }
  void Push(Element e) {
    items_.push_back(std::move(e));
    Up(items_.size() - 1);
  }
  void Pop() {
    size_t n = items_.size() - 1;
    std::swap(items_[0], items_[n]);
    Down(0, n);
    items_.pop_back();
  }
  size_t size() const { return items_.size(); }
  Element& top() { return items_[0]; }
  // sort.Sort(sort.Reverse(h)) — an insertion sort for the small k of real queries, which is
  // what Go's pdqsort does below 12 elements.
  std::vector<Element> SortedReverse() {
    for (size_t i = 1; i < items_.size(); ++i)
      for (size_t j = i; j > 0 && Less(j - 1, j); --j) std::swap(items_[j], items_[j - 1]);
    return std::move(items_);
  }

 private:
  void Up(size_t j) {
    while (j > 0) {
      size_t i = (j - 1) / 2;
      if (i == j || !Less(j, i)) break;
      std::swap(items_[i], items_[j]);
      j = i;
    }
  }
  void Down(size_t i0, size_t n) {
    size_t i = i0;
    for (;;) {
      size_t j1 = 2 * i + 1;
      if (j1 >= n) break;
      size_t j = j1;
      if (size_t j2 = j1 + 1; j2 < n && Less(j2, j1)) j = j2;
      if (!Less(j, i)) break;
      std::swap(items_[i], items_[j]);
      i = j;
    }
  }
  bool reverse_;
  std::vector<Element> items_;
};

struct Group {
  tsdb::Labels labels;
  double value = 0, mean = 0;
  size_t count = 1;
  std::unique_ptr<GoHeap> heap;
  std::vector<double> values;  // quantile
};

// sum, avg, group, min, max, count, stdvar, stddev: a group is a few numbers folded in input
// order (the others also keep elements or values: topk/bottomk, quantile, count_values' labels).
bool FoldsValues(AggregateOp op) {
  switch (op) {
    case AggregateOp::kSum:
    case AggregateOp::kAvg:
    case AggregateOp::kGroup:
    case AggregateOp::kMin:
    case AggregateOp::kMax:
    case AggregateOp::kCount:
    case AggregateOp::kStdvar:
    case AggregateOp::kStddev:
      return true;
    default:
      return false;
  }
}

// A group's first value.
void StartGroup(Group* g, AggregateOp op, double v) {
  g->value = v;
  g->mean = v;
  if (op == AggregateOp::kStdvar || op == AggregateOp::kStddev) g->value = 0;
  if (op == AggregateOp::kGroup) g->value = 1;
}

// Every later value of a group, as Prometheus 2.42 folds it (count_values counts).
void FoldValue(Group* g, AggregateOp op, double v) {
  switch (op) {
    case AggregateOp::kSum:
      g->value += v;
      break;
    case AggregateOp::kAvg: {
      ++g->count;
      if (std::isinf(g->mean)) {
        if (std::isinf(v) && (g->mean > 0) == (v > 0)) break;
        if (!std::isinf(v) && !std::isnan(v)) break;
      }
      const double n = static_cast<double>(g->count);
      g->mean += v / n - g->mean / n;
      break;
    }
    case AggregateOp::kMax:
      if (g->value < v || std::isnan(g->value)) g->value = v;
      break;
    case AggregateOp::kMin:
      if (g->value > v || std::isnan(g->value)) g->value = v;
      break;
    case AggregateOp::kCount:
    case AggregateOp::kCountValues:
      ++g->count;
      break;
    case AggregateOp::kStdvar:
    case AggregateOp::kStddev: {
      ++g->count;
      const double delta = v - g->mean;
      g->mean += delta / static_cast<double>(g->count);
      g->value += delta * (v - g->mean);
      break;
    }
    default:  // group: stays 1; topk, bottomk, quantile: not folded here
      break;
  }
}

// The group's result, for every operator but topk/bottomk (quantile: its values' quantile q).
double FinishGroup(Group* g, AggregateOp op, double q) {
  switch (op) {
    case AggregateOp::kAvg:
      return g->mean;
    case AggregateOp::kCount:
    case AggregateOp::kCountValues:
      return static_cast<double>(g->count);
    case AggregateOp::kStdvar:
      return g->value / static_cast<double>(g->count);
    case AggregateOp::kStddev:
      return std::sqrt(g->value / static_cast<double>(g->count));
    case AggregateOp::kQuantile:
      return Quantile(q, std::move(g->values));
    default:
      return g->value;
  }
}

// The key of the group `l` falls in: LabelsKey(GroupLabels(l, grouping, without)), built
// without the intermediate label set.
void GroupKey(const tsdb::Labels& l, const std::vector<std::string>& grouping, bool without,
              std::string* key) {
  key->clear();
  for (const tsdb::Label& x : l) {
    const bool listed = std::find(grouping.begin(), grouping.end(), x.name) != grouping.end();
    if (without ? (!listed && x.name != "__name__") : listed) {
      *key += x.name;
      key->push_back('\xff');
      *key += x.value;
      key->push_back('\xff');
    }
  }
}

tsdb::Labels GroupLabels(const tsdb::Labels& l, const std::vector<std::string>& grouping,
                         bool without) {
  tsdb::Labels out;
  for (const tsdb::Label& x : l) {
    bool listed = std::find(grouping.begin(), grouping.end(), x.name) != grouping.end();
    if (without ? (!listed && x.name != "__name__") : listed) out.push_back(x);
  }
  return out;
}

}  // namespace

Vector Evaluator::EvalAggregate(const AggregateExpr& a, int64_t t_ms) {
  if (Vector out; AggregateFromTable(a, t_ms, &out)) return out;
  Vector input = Eval(*a.expr, t_ms).vector;
  AggregateOp op = a.op;
  int64_t k = 0;
  double q = 0;
  std::string value_label;
  std::vector<std::string> grouping = a.grouping;
  if (op == AggregateOp::kTopk || op == AggregateOp::kBottomk) {
    double f = Eval(*a.param, t_ms).scalar;
    if (!(f >= -9.223372036854775e18 && f <= 9.223372036854775e18)) {
      throw EvalError{QueryError::Kind::kExecution,
                      "Scalar value " + FormatFloatPlain(f) + " overflows int64"};
    }
    k = static_cast<int64_t>(f);
    if (k < 1) return {};
  } else if (op == AggregateOp::kQuantile) {
    q = Eval(*a.param, t_ms).scalar;
  } else if (op == AggregateOp::kCountValues) {
    value_label = Eval(*a.param, t_ms).str;
    if (!tsdb::IsValidLabelName(value_label))
      throw EvalError{QueryError::Kind::kExecution, "invalid label name \"" + value_label + "\""};
    if (!a.without) grouping.push_back(value_label);
  }

  std::unordered_map<std::string, size_t> index;
  std::vector<Group> groups;
  const bool one_group = !a.without && grouping.empty();
  std::string key;
  for (Element& s : input) {
    Tick();
    if (op == AggregateOp::kCountValues) SetLabel(&s.labels, value_label, FormatFloatPlain(s.v));
    if (!one_group) GroupKey(s.labels, grouping, a.without, &key);
    auto [it, inserted] = index.try_emplace(key, groups.size());
    if (inserted) {
      Group g;
      if (!one_group) g.labels = GroupLabels(s.labels, grouping, a.without);
      StartGroup(&g, op, s.v);
      switch (op) {
        case AggregateOp::kTopk:
        case AggregateOp::kBottomk:
          g.heap = std::make_unique<GoHeap>(op == AggregateOp::kBottomk);
          g.heap->Push(s);
          break;
        case AggregateOp::kQuantile:
          g.values.push_back(s.v);
          break;
        default:
          break;
      }
      groups.push_back(std::move(g));
      continue;
    }
    Group& g = groups[it->second];
    switch (op) {
      case AggregateOp::kTopk:
      case AggregateOp::kBottomk: {
        GoHeap& h = *g.heap;
        double top = h.top().v;
        bool better = op == AggregateOp::kTopk ? top < s.v : top > s.v;
        if (static_cast<int64_t>(h.size()) < k || better || std::isnan(top)) {
          if (static_cast<int64_t>(h.size()) == k) {
            if (k == 1) {
              h.top() = s;
              break;
            }
            h.Pop();
          }
          h.Push(s);
        }
        break;
      }
      case AggregateOp::kQuantile:
        g.values.push_back(s.v);
        break;
      default:
        FoldValue(&g, op, s.v);
        break;
    }
  }

  Vector out;
  for (Group& g : groups) {
    if (op == AggregateOp::kTopk || op == AggregateOp::kBottomk) {
      for (Element& e : g.heap->SortedReverse()) out.push_back(Element{e.labels, e.v, 0});
      continue;
    }
    const double v = FinishGroup(&g, op, q);
    out.push_back(Element{std::move(g.labels), v, 0});
  }
  return out;
}

bool Evaluator::AggregateFromTable(const AggregateExpr& a, int64_t t_ms, Vector* out) {
  if (!FoldsValues(a.op)) return false;
  const Expr* e = a.expr.get();
  while (e->kind == ExprKind::kParen) e = static_cast<const ParenExpr*>(e)->expr.get();
  if (e->kind != ExprKind::kCall) return false;
  size_t step = 0;
  const StepTable* table = TableFor(*static_cast<const Call*>(e), t_ms, &step);
  if (!table) return false;
  auto [it, inserted] = aggregate_plans_.try_emplace(&a);
  AggregatePlan& plan = it->second;
  const size_t rows = table->labels.size();
  if (inserted) {
    // Rows with equal labels (DropName can make them equal) would be the step-by-step path's
    // duplicate-labelset error at a step where both have a value: that path says so.
    std::vector<const tsdb::Labels*> sorted;
    for (const tsdb::Labels& l : table->labels) sorted.push_back(&l);
    std::sort(sorted.begin(), sorted.end(), [](auto* x, auto* y) { return *x < *y; });
    plan.usable = std::adjacent_find(sorted.begin(), sorted.end(),
                                     [](auto* x, auto* y) { return *x == *y; }) == sorted.end();
    const bool one_group = !a.without && a.grouping.empty();
    std::unordered_map<std::string, uint32_t> index;
    std::string key;
    for (const tsdb::Labels& l : table->labels) {
      if (!one_group) GroupKey(l, a.grouping, a.without, &key);
      auto [g, fresh] = index.try_emplace(key, static_cast<uint32_t>(plan.group_labels.size()));
      if (fresh)
        plan.group_labels.push_back(one_group ? tsdb::Labels{}
                                              : GroupLabels(l, a.grouping, a.without));
      plan.group_of_row.push_back(g->second);
    }
    plan.slot.assign(plan.group_labels.size(), -1);
  }
  if (!plan.usable) return false;
  // The step's present rows in row order — the order of table->At(step) — folded exactly as
  // EvalAggregate folds that vector; groups come out in order of first appearance.
  std::vector<Group> groups;
  std::vector<uint32_t> order;
  for (size_t r = 0; r < rows; ++r) {
    const size_t k = r * table->steps + step;
    if (!table->present[k]) continue;
    Tick();
    const uint32_t gi = plan.group_of_row[r];
    const double v = table->values[k];
    if (plan.slot[gi] < 0) {
      plan.slot[gi] = static_cast<int32_t>(groups.size());
      order.push_back(gi);
      groups.emplace_back();
      StartGroup(&groups.back(), a.op, v);
    } else {
      FoldValue(&groups[static_cast<size_t>(plan.slot[gi])], a.op, v);
    }
  }
  out->clear();
  out->reserve(groups.size());
  for (size_t i = 0; i < groups.size(); ++i) {
    plan.slot[order[i]] = -1;
    out->push_back(Element{plan.group_labels[order[i]], FinishGroup(&groups[i], a.op, 0), 0});
  }
  return true;
}

}  // namespace gw::promql
