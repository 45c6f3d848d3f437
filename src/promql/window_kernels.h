// The per-window arithmetic of the step tables (windows.cpp): the fold of min/max/sum/count/avg,
// rate/increase's counter corrections for many steps at once, quantile_over_time's window kept
// sorted from step to step, and prefix sums (exact for series of integers, compensated for the
// others). Each gives what the step-by-step code gives (bit for bit but for the compensated sums'
// rounding, see windows.cpp;
// tests/promql/windows_test.cpp). window_kernels.cpp also holds Evaluator::MatrixFromTable.
#ifndef GPUWARDEN_PROMQL_WINDOW_KERNELS_H_
#define GPUWARDEN_PROMQL_WINDOW_KERNELS_H_

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <vector>

#include "promql/engine.h"
#include "promql/eval.h"
#include "tsdb/rollup.h"

namespace gw::promql {

// The aggregate of min/max/sum/count/avg_over_time over a window folded from raw samples and
// rollups in any order.
struct Fold {
  size_t count = 0;  // samples (NaN included)
  size_t nan = 0, pos_inf = 0, neg_inf = 0;
  double sum = 0, comp = 0;  // finite samples, Neumaier
  bool has_extreme = false;  // a non-NaN sample was seen
  double min = 0, max = 0;

  void Extremes(double lo, double hi) {
    if (!has_extreme) {
      min = lo;
      max = hi;
      has_extreme = true;
      return;
    }
    if (lo < min) min = lo;
    if (hi > max) max = hi;
  }
  // Add without the extremes (sum, avg and count do not need them).
  void AddToSum(double v) {
    ++count;
    if (std::isnan(v)) {
      ++nan;
    } else if (std::isinf(v)) {
      ++(v > 0 ? pos_inf : neg_inf);
    } else {
      KahanAdd(v, &sum, &comp);
    }
  }
  void Add(double v) {
    if (!std::isnan(v)) Extremes(v, v);
    AddToSum(v);
  }
  void AddRollup(const tsdb::Rollup& r) {
    if (r.count == 0) return;
    count += r.count;
    Extremes(r.min, r.max);
    KahanAdd(r.sum, &sum, &comp);
  }
  // Adds (subtracts) another Fold's counts and sum, not its extremes.
  void AddCounts(const Fold& x) {
    count += x.count;
    nan += x.nan;
    pos_inf += x.pos_inf;
    neg_inf += x.neg_inf;
    KahanAdd(x.sum, &sum, &comp);
    KahanAdd(x.comp, &sum, &comp);
  }
  void SubtractCounts(const Fold& x) {
    count -= x.count;
    nan -= x.nan;
    pos_inf -= x.pos_inf;
    neg_inf -= x.neg_inf;
    KahanAdd(-x.sum, &sum, &comp);
    KahanAdd(-x.comp, &sum, &comp);
  }
  double Sum() const {
    if (nan > 0 || (pos_inf > 0 && neg_inf > 0)) return std::numeric_limits<double>::quiet_NaN();
    if (pos_inf > 0) return std::numeric_limits<double>::infinity();
    if (neg_inf > 0) return -std::numeric_limits<double>::infinity();
    return sum + comp;
  }
  // The finite samples' count for avg.
  double Result(std::string_view name) const {
    if (name == "count_over_time") return static_cast<double>(count);
    if (name == "sum_over_time") return Sum();
    if (name == "avg_over_time") {
      const double s = Sum();
      if (!std::isfinite(s)) return s;
      return s / static_cast<double>(count);
    }
    if (!has_extreme) return std::numeric_limits<double>::quiet_NaN();
    return name == "max_over_time" ? max : min;
  }
};

// One step's rate/increase window: the samples [lo, hi) of a series, and [da, db), the positions
// in the series' drop list of the drops inside it (a drop at lo compares with a sample outside).
struct CounterWindow {
  size_t k, lo, hi, da, db;
};

// Per window, what Prometheus' extrapolatedRate adds before it extrapolates: last - first, then
// the value before every drop inside the window (`before`, in sample order), one addition at a
// time. Each window's additions depend on the one before, so one window at a time waits on the
// adder's latency at each; the windows are independent, so kLanes of them advance together
// (the processor overlaps their chains), each still adding its own values in its own order —
// the same roundings, bit for bit. Lanes past the last window repeat it and are not written.
void CounterSums(std::span<const Point> pts, std::span<const double> before,
                 std::span<const CounterWindow> windows, double* out);

// quantile_over_time's window in Quantile's order (NaN first, then ascending), carried from one
// step to the next: the samples that left the window are taken out and the ones that came in
// (sorted, few) merged in, in one pass: O(window + moved log moved) per step instead of a sort
// of the window. A jump that moves most of the window sorts it anew. -0 sorts before +0 here,
// so that a value leaving takes out exactly its own bits (NaNs are all alike: any NaN's result
// is NaN); Quantile's sort leaves -0 and +0 in either order, so the caller answers a window
// that holds a -0 step by step.
class SortedWindow {
 public:
  void Clear() {
    sorted_.clear();
    lo_ = hi_ = 0;
  }
  // Makes it the window pts[lo, hi); lo and hi never move back between Clear()s.
  std::span<const double> Move(std::span<const Point> pts, size_t lo, size_t hi);

 private:
  static bool Less(double a, double b);
  std::vector<double> sorted_, in_, out_, merged_;
  size_t lo_ = 0, hi_ = 0;
};

// NaN and the infinities of a series, counted per prefix as Fold counts them.
class SpecialPrefix {
 public:
  void Build(std::span<const Point> pts, bool any);  // any: pts hold a NaN or an infinity
  // The samples [lo, hi) as a Fold without sum or extremes: their count, NaN and infinities.
  Fold Counts(size_t lo, size_t hi) const;

 private:
  bool special_ = false;  // nan_, pos_, neg_ are built
  std::vector<size_t> nan_, pos_, neg_;
};

// sum/avg/count_over_time over a series whose finite samples are integers with sum(|v|) <= 2^53:
// every sum of its samples, in any order, is exact, so a window's is a difference of prefix
// sums. NaN and the infinities are counted apart as Fold counts them.
class IntegerPrefix {
 public:
  // False (and nothing kept) when some finite sample is no integer or the bound is passed.
  bool Build(std::span<const Point> pts);
  // The samples [lo, hi) as a Fold (without extremes).
  Fold Window(size_t lo, size_t hi) const;

 private:
  std::vector<int64_t> sum_;
  SpecialPrefix special_;
};

// sum/avg/count_over_time over any other series: prefix sums of its finite samples with their
// rounding error carried apart (Neumaier, as sum_over_time adds), so a window is the difference
// of two prefixes: one addition per sample and O(1) per step (a running sum added each sample
// and subtracted it again, one dependent chain). The difference of the sums is taken exactly
// (a compensated addition from zero) and the compensations' difference added: the window's sum to
// rounding (a few units in the last place of the prefix). False when the finite samples' magnitudes
// sum past 2^1000, where a prefix could overflow though no window does (the caller then sums window
// by window).
class FloatPrefix {
 public:
  bool Build(std::span<const Point> pts);
  Fold Window(size_t lo, size_t hi) const;

 private:
  std::vector<double> sum_, comp_;
  SpecialPrefix special_;
};

}  // namespace gw::promql

#endif  // GPUWARDEN_PROMQL_WINDOW_KERNELS_H_
