// See window_kernels.h.
#include "promql/window_kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "promql/eval.h"

namespace gw::promql {

void CounterSums(std::span<const Point> pts, std::span<const double> before,
                 std::span<const CounterWindow> windows, double* out) {
  constexpr size_t kLanes = 8;  // the loop below names each
  for (size_t g = 0; g < windows.size(); g += kLanes) {
    const size_t used = std::min(kLanes, windows.size() - g);
    double r[kLanes];
    const double* from[kLanes];
    size_t len[kLanes];
    size_t common = std::numeric_limits<size_t>::max();
    for (size_t j = 0; j < kLanes; ++j) {
      const CounterWindow& w = windows[g + std::min(j, used - 1)];
      r[j] = pts[w.hi - 1].v - pts[w.lo].v;
      from[j] = before.data() + w.da;
      len[j] = w.db - w.da;
      common = std::min(common, len[j]);
    }
    // Spelled out lane by lane so that the eight sums stay in registers.
    double r0 = r[0], r1 = r[1], r2 = r[2], r3 = r[3], r4 = r[4], r5 = r[5], r6 = r[6], r7 = r[7];
    for (size_t i = 0; i < common; ++i) {
      r0 += from[0][i];
      r1 += from[1][i];
      r2 += from[2][i];
      r3 += from[3][i];
      r4 += from[4][i];
      r5 += from[5][i];
      r6 += from[6][i];
      r7 += from[7][i];
    }
    r[0] = r0, r[1] = r1, r[2] = r2, r[3] = r3, r[4] = r4, r[5] = r5, r[6] = r6, r[7] = r7;
    for (size_t j = 0; j < used; ++j) {
      for (size_t i = common; i < len[j]; ++i) r[j] += from[j][i];
      out[g + j] = r[j];
    }
  }
}

std::span<const double> SortedWindow::Move(std::span<const Point> pts, size_t lo, size_t hi) {
  const size_t moved = (lo - lo_) + (hi - hi_);
  if (lo >= hi_ || 2 * moved > hi - lo) {
    sorted_.clear();
    for (size_t i = lo; i < hi; ++i) sorted_.push_back(pts[i].v);
    std::sort(sorted_.begin(), sorted_.end(), Less);
  } else {
    out_.clear();
    in_.clear();
    for (size_t i = lo_; i < lo; ++i) out_.push_back(pts[i].v);
    for (size_t i = hi_; i < hi; ++i) in_.push_back(pts[i].v);
    std::sort(out_.begin(), out_.end(), Less);
    std::sort(in_.begin(), in_.end(), Less);
    merged_.clear();
    size_t a = 0, b = 0, r = 0;
    while (a < sorted_.size() || b < in_.size()) {
      const bool take_in = a == sorted_.size() || (b < in_.size() && Less(in_[b], sorted_[a]));
      const double x = take_in ? in_[b++] : sorted_[a++];
      if (r < out_.size() && !Less(x, out_[r]) && !Less(out_[r], x)) {
        ++r;  // a sample that left
        continue;
      }
      merged_.push_back(x);
    }
    std::swap(sorted_, merged_);
  }
  lo_ = lo;
  hi_ = hi;
  return sorted_;
}

bool SortedWindow::Less(double a, double b) {
  if (std::isnan(a)) return !std::isnan(b);
  if (std::isnan(b)) return false;
  return a < b || (a == 0 && b == 0 && std::signbit(a) && !std::signbit(b));
}

void SpecialPrefix::Build(std::span<const Point> pts, bool any) {
  special_ = any;
  if (!any) return;
  const size_t n = pts.size();
  nan_.assign(n + 1, 0);
  pos_.assign(n + 1, 0);
  neg_.assign(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    const double v = pts[i].v;
    nan_[i + 1] = nan_[i] + (std::isnan(v) ? 1 : 0);
    pos_[i + 1] = pos_[i] + (std::isinf(v) && v > 0 ? 1 : 0);
    neg_[i + 1] = neg_[i] + (std::isinf(v) && v < 0 ? 1 : 0);
  }
}

Fold SpecialPrefix::Counts(size_t lo, size_t hi) const {
  Fold f;
  f.count = hi - lo;
  if (special_) {
    f.nan = nan_[hi] - nan_[lo];
    f.pos_inf = pos_[hi] - pos_[lo];
    f.neg_inf = neg_[hi] - neg_[lo];
  }
  return f;
}

bool IntegerPrefix::Build(std::span<const Point> pts) {
  constexpr double kExact = 9007199254740992.0;  // 2^53
  double magnitude = 0;                          // exact while below 2^53: integers
  bool integral = true, special = false;
  // In blocks, leaving at the first block with a fraction: a series of decimals is told from
  // its first samples, not after a pass over all of them.
  constexpr size_t kBlock = 64;
  for (size_t from = 0; from < pts.size() && integral; from += kBlock) {
    const size_t to = std::min(pts.size(), from + kBlock);
    for (size_t i = from; i < to; ++i) {
      const double v = pts[i].v;
      const bool finite = std::isfinite(v);
      special |= !finite;
      integral &= !finite || v == std::trunc(v);
      magnitude += finite ? std::fabs(v) : 0;
    }
  }
  if (!integral || magnitude > kExact) return false;
  const size_t n = pts.size();
  sum_.resize(n + 1);
  sum_[0] = 0;
  for (size_t i = 0; i < n; ++i)
    sum_[i + 1] = sum_[i] + (std::isfinite(pts[i].v) ? static_cast<int64_t>(pts[i].v) : 0);
  special_.Build(pts, special);
  return true;
}

Fold IntegerPrefix::Window(size_t lo, size_t hi) const {
  Fold f = special_.Counts(lo, hi);
  f.sum = static_cast<double>(sum_[hi] - sum_[lo]);
  return f;
}

bool FloatPrefix::Build(std::span<const Point> pts) {
  const double kBound = std::ldexp(1.0, 1000);
  const size_t n = pts.size();
  sum_.resize(n + 1);
  comp_.resize(n + 1);
  double sum = 0, comp = 0, magnitude = 0;
  bool special = false;
  sum_[0] = comp_[0] = 0;
  for (size_t i = 0; i < n; ++i) {
    const double v = pts[i].v;
    const bool finite = std::isfinite(v);
    special |= !finite;
    if (finite) {
      magnitude += std::fabs(v);
      KahanAdd(v, &sum, &comp);
    }
    sum_[i + 1] = sum;
    comp_[i + 1] = comp;
  }
  if (!(magnitude <= kBound)) return false;
  special_.Build(pts, special);
  return true;
}

Fold FloatPrefix::Window(size_t lo, size_t hi) const {
  Fold f = special_.Counts(lo, hi);
  // From zero, the two compensated additions leave sum + comp exactly sum_[hi] - sum_[lo] (the
  // second one's error term is exact); then the compensations' difference.
  KahanAdd(sum_[hi], &f.sum, &f.comp);
  KahanAdd(-sum_[lo], &f.sum, &f.comp);
  f.comp += comp_[hi] - comp_[lo];
  return f;
}

bool Evaluator::MatrixFromTable(const Expr& root, Value* out) {
  const Expr* e = &root;
  while (e->kind == ExprKind::kParen) e = static_cast<const ParenExpr*>(e)->expr.get();
  if (e->kind != ExprKind::kCall || step_ms_ <= 0) return false;
  // Step 0 as Engine::Range begins it.
  CheckDeadline();
  ResetStepSamples();
  size_t step = 0;
  const StepTable* table = TableFor(*static_cast<const Call*>(e), start_ms_, &step);
  if (!table) return false;
  const size_t n = table->steps, rows = table->labels.size();
  // Rows in label order; rows with equal labels (DropName can make them equal) are one output
  // series, unless two of them have a value at the same step: then that step fails.
  std::vector<size_t> order(rows);
  for (size_t i = 0; i < rows; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [table](size_t a, size_t b) { return table->labels[a] < table->labels[b]; });
  std::vector<std::pair<size_t, size_t>> groups;  // [first, last) in order
  std::vector<uint8_t> duplicate(n, 0);           // a step where a group has two values
  std::vector<size_t> present(n, 0);              // values per step
  for (size_t i = 0; i < rows;) {
    size_t j = i + 1;
    while (j < rows && table->labels[order[j]] == table->labels[order[i]]) ++j;
    groups.emplace_back(i, j);
    for (size_t k = 0; k < n; ++k) {
      size_t values = 0;
      for (size_t g = i; g < j; ++g) values += table->present[order[g] * n + k];
      present[k] += values;
      if (values > 1) duplicate[k] = 1;
    }
    i = j;
  }
  // Engine::Range's checks, step by step: the deadline, the points output so far counted with
  // what the tables hold, then the step's own value (the duplicate labelsets).
  size_t total = 0;
  for (size_t k = 0; k < n; ++k) {
    if (k > 0) {
      CheckDeadline();
      ResetStepSamples();
      AddSamples(total);
    }
    if (duplicate[k])
      throw EvalError{QueryError::Kind::kExecution,
                      "vector cannot contain metrics with the same labelset"};
    total += present[k];
  }
  out->type = ValueType::kMatrix;
  out->t_ms = end_ms_;
  out->series.clear();
  for (const auto& [first, last] : groups) {
    Series s;
    for (size_t k = 0; k < n; ++k)
      for (size_t g = first; g < last; ++g)
        if (table->present[order[g] * n + k])
          s.points.push_back(Point{StepTime(k), table->values[order[g] * n + k]});
    if (s.points.empty()) continue;
    s.labels = table->labels[order[first]];
    out->series.push_back(std::move(s));
  }
  return true;
}

}  // namespace gw::promql
