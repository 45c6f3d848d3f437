// Range functions over a plain range selector computed for every step of a query in one pass per
// series (step tables): the sliding-window path of range queries and the rollup path of long
// windows. Both give what step-by-step evaluation (functions_range.cpp) gives; the property tests
// in tests/promql/windows_test.cpp compare them on random data.
//
// Sliding windows. Each step's window [ref - range, ref] only moves forward, so two indexes into
// the series' samples follow its ends (no search per step). On top of them:
//   min/max_over_time: a monotonic deque of the non-NaN samples (amortised O(1) per sample). The
//     front is the oldest of the equal extremes, which is the one Prometheus' scan keeps.
//   sum/avg/count_over_time: a window is the difference of two prefix sums of the series' finite
//     samples; NaN, +Inf and -Inf are counted per prefix apart, so the window's result is what
//     Prometheus' sum gives: NaN when one is NaN or both infinities are in, else the infinity,
//     else the finite sum (avg divides it by the count; Prometheus' incremental mean differs
//     only by rounding). A series whose finite samples are all integers, their magnitudes summing
//     to at most 2^53, has exact integer prefixes (IntegerPrefix): bit for bit the step-by-step
//     sum. Any other has Neumaier prefixes (the sum and its rounding error apart; FloatPrefix),
//     whose difference is taken exactly: within a few units in the last place of the prefix.
//     One addition per sample, O(1) per step. A series whose magnitudes sum past 2^1000 (a prefix
//     could overflow where no window does) is summed window by window, as step by step.
//   last/present_over_time: O(1) from the window's end.
//   rate/increase: the counter corrections are the values before the window's drops, added in
//     sample order as Prometheus does; the drops of a series are listed once (with the values
//     before them, contiguous), so a step visits only those inside its window (a subtraction of
//     prefix sums would round differently and mishandle infinities). A gauge read as a counter
//     drops at every other sample, so those additions are most of the work; each window's are
//     a chain of dependent additions, and the chains of eight steps run interleaved
//     (CounterSums), each in its own order: the same roundings as one step at a time.
//   quantile_over_time: the window's values kept sorted across steps (SortedWindow): per step
//     the samples that left are taken out and those that came in merged in, one pass, instead
//     of a sort of the whole window; the same sorted values, so the same interpolation.
//   Everything else (delta, deriv, predict_linear, changes, resets, stddev, stdvar) runs the
//   step-by-step arithmetic on the window the two indexes give: these are either O(window) by
//   definition in Prometheus or need a numerically stable variance (Welford), which running
//   sums of squares are not; the saving is the window search and the copy.
//
// Rollups. (rate, increase, delta, last/present_over_time and plain selectors: rollup_reads.cpp.)
// A long window (EngineOptions::rollup_min_range_ms) is split into the complete
// 5-minute rollup windows inside it and the edges; a rollup is used where it stands exactly for
// its raw samples (exact, no NaN, finite min/max), raw samples everywhere else. Prepare fetches
// raw samples only for the edges and for windows without such a rollup (PlanRollups), at most
// kMaxRawSelects reads per call. Used by instant queries and by range queries whose step is at
// least the rollup window (below it the edges of the steps cover everything and the sliding path
// is faster). Per step the windows inside slide like samples do (BuildRollupTable), so a 7-day
// chart of 1-day windows costs O(windows + steps), not O(steps x windows).
// A window is read from rollups when every series has a usable rollup there or none in a window
// complete for it (no sample there: the Querier contract); the others are read raw for all.
#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <string_view>

#include "promql/eval.h"
#include "promql/functions.h"
#include "promql/window_kernels.h"

namespace gw::promql {
namespace {

// Most raw reads one call makes for its edges: nearby intervals are merged beyond it.
constexpr size_t kMaxRawSelects = 16;

const Expr* StripParens(const Expr* e) {
  while (e->kind == ExprKind::kParen) e = static_cast<const ParenExpr*>(e)->expr.get();
  return e;
}

bool IsConstantScalar(const Expr& arg) {
  const Expr* e = StripParens(&arg);
  if (e->kind == ExprKind::kUnary) return IsConstantScalar(*static_cast<const UnaryExpr*>(e)->expr);
  return e->kind == ExprKind::kNumber;
}

// The plain range selector argument of a range function, or nullptr.
const MatrixSelector* PlainMatrixArg(const Call& call) {
  const MatrixSelector* ms = nullptr;
  for (const auto& arg : call.args) {
    const Expr* e = StripParens(arg.get());
    if (e->kind == ExprKind::kMatrixSelector) {
      ms = static_cast<const MatrixSelector*>(e);
    } else if (TypeOf(*e) == ValueType::kMatrix || !IsConstantScalar(*e)) {
      return nullptr;
    }
  }
  return ms;
}

bool IsTableFunction(std::string_view n) {
  return n == "rate" || n == "increase" || n == "delta" || n == "irate" || n == "idelta" ||
         n == "deriv" || n == "predict_linear" || n == "changes" || n == "resets" ||
         n == "avg_over_time" || n == "min_over_time" || n == "max_over_time" ||
         n == "sum_over_time" || n == "count_over_time" || n == "last_over_time" ||
         n == "quantile_over_time" || n == "stddev_over_time" || n == "stdvar_over_time" ||
         n == "present_over_time";
}

bool IsFoldFunction(std::string_view n) {
  return n == "avg_over_time" || n == "min_over_time" || n == "max_over_time" ||
         n == "sum_over_time" || n == "count_over_time";
}

// The functions a RollupPlan can answer: the folds here, the sequences in rollup_reads.cpp.
bool IsRollupFunction(std::string_view n) {
  return IsFoldFunction(n) || n == "rate" || n == "increase" || n == "delta" ||
         n == "last_over_time" || n == "present_over_time";
}

int64_t FloorWindow(int64_t t) {
  return tsdb::RollupWindowStart(t);
}

}  // namespace

bool RollupUsable(const tsdb::Rollup& r) {
  return r.exact && r.nan_count == 0 &&
         (r.count == 0 || (std::isfinite(r.min) && std::isfinite(r.max)));
}

std::vector<std::pair<int64_t, int64_t>> MergeIntervals(std::vector<std::pair<int64_t, int64_t>> iv,
                                                        size_t max_reads) {
  std::sort(iv.begin(), iv.end());
  std::vector<std::pair<int64_t, int64_t>> merged;
  for (const auto& x : iv) {
    if (!merged.empty() && x.first <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, x.second);
    } else {
      merged.push_back(x);
    }
  }
  // Few reads: close the smallest gaps until at most max_reads intervals remain.
  if (merged.size() > max_reads) {
    // gap i lies between merged[i] and merged[i + 1]; the widest max_reads - 1 stay open.
    std::vector<size_t> order(merged.size() - 1);
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    auto gap = [&](size_t i) { return merged[i + 1].first - merged[i].second; };
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t x, size_t y) { return gap(x) > gap(y); });
    std::vector<uint8_t> open(order.size(), 0);
    for (size_t i = 0; i < max_reads - 1; ++i) open[order[i]] = 1;
    std::vector<std::pair<int64_t, int64_t>> fewer{merged[0]};
    for (size_t i = 1; i < merged.size(); ++i) {
      if (open[i - 1]) {
        fewer.push_back(merged[i]);
      } else {
        fewer.back().second = merged[i].second;
      }
    }
    merged = std::move(fewer);
  }
  return merged;
}

Vector StepTable::At(size_t step) const {
  Vector out;
  for (size_t i = 0; i < labels.size(); ++i) {
    const size_t k = i * steps + step;
    if (present[k]) out.push_back(Element{labels[i], values[k], times.empty() ? 0 : times[k]});
  }
  return out;
}

size_t Evaluator::StepCount() const {
  if (step_ms_ <= 0) return 1;
  // Unsigned: end - start may not fit in int64 (Engine::Range checked end >= start).
  const uint64_t span = static_cast<uint64_t>(end_ms_) - static_cast<uint64_t>(start_ms_);
  return static_cast<size_t>(span / static_cast<uint64_t>(step_ms_)) + 1;
}

bool Evaluator::TableFits() const {
  // A table has a cell per step and series; more steps than max_samples could never be held.
  return StepCount() <= options_.max_samples;
}

int64_t Evaluator::StepTime(size_t k) const {
  return start_ms_ + static_cast<int64_t>(k) * step_ms_;
}

bool Evaluator::TableEligible(const Call& call) const {
  return options_.sliding_windows && TableFits() && IsTableFunction(call.func->name) &&
         PlainMatrixArg(call);
}

bool Evaluator::WantsRollups(const Call& call) const {
  if (!options_.rollups || !IsRollupFunction(call.func->name)) return false;
  // With steps under the rollup window the edges of the steps' windows cover everything: the
  // sliding-window path is the faster one there.
  if (step_ms_ > 0 && step_ms_ < tsdb::kRollupWindowMs) return false;
  if (!TableFits()) return false;
  const MatrixSelector* ms = PlainMatrixArg(call);
  return ms && ms->range_ms >= options_.rollup_min_range_ms;
}

const StepTable* Evaluator::TableFor(const Call& call, int64_t t_ms, size_t* step) {
  auto plan = rollup_plans_.find(&call);
  const bool rollups = plan != rollup_plans_.end() && plan->second.active;
  if (!rollups && (step_ms_ <= 0 || StepCount() < 2 || !TableEligible(call))) return nullptr;
  const bool on_grid = t_ms >= start_ms_ && t_ms <= end_ms_ &&
                       (step_ms_ <= 0 ? t_ms == start_ms_ : (t_ms - start_ms_) % step_ms_ == 0);
  if (!on_grid) {
    if (rollups)
      throw EvalError{QueryError::Kind::kInternal, "rollup plan evaluated off the query's steps"};
    return nullptr;
  }
  *step = step_ms_ <= 0 ? 0 : static_cast<size_t>((t_ms - start_ms_) / step_ms_);
  auto [it, inserted] = tables_.try_emplace(&call);
  if (inserted) {
    StepTable& table = it->second;
    table.steps = StepCount();
    if (rollups) {
      BuildRollupTable(call, plan->second, &table);
      plan->second.series.clear();  // the raw samples are not needed any more
    } else {
      BuildSlidingTable(call, &table);
    }
    size_t cells = 0;
    for (uint8_t p : table.present) cells += p;
    held_samples_ += cells;
    step_samples_ += cells;
    CheckHeld(0);
  }
  return &it->second;
}

void Evaluator::BuildSlidingTable(const Call& call, StepTable* table) {
  const std::string_view name = call.func->name;
  const MatrixSelector& ms = *PlainMatrixArg(call);
  double scalar = 0;
  for (const auto& arg : call.args)
    if (StripParens(arg.get())->kind != ExprKind::kMatrixSelector)
      scalar = Eval(*arg, StepTime(0)).scalar;
  const Fetched& f = data_.at(ms.selector.get());
  const size_t n = table->steps;
  const bool extreme = name == "min_over_time" || name == "max_over_time";
  const bool is_max = name == "max_over_time";
  const bool sums = name == "sum_over_time" || name == "avg_over_time" || name == "count_over_time";
  const bool counter = name == "rate" || name == "increase";
  const bool quantile = name == "quantile_over_time";
  const int64_t first_mint = RefTime(ms.selector->mods, StepTime(0)) - ms.range_ms;
  const int64_t last_ref = RefTime(ms.selector->mods, StepTime(n - 1));
  std::vector<Point> pts;
  std::vector<size_t> deque;  // indexes into pts, [head, size)
  // rate, increase: the indexes i with pts[i].v < pts[i - 1].v, and those pts[i - 1].v
  std::vector<size_t> drops;
  std::vector<double> before;
  std::vector<CounterWindow> windows;  // rate, increase: the series' steps with >= 2 samples
  std::vector<double> corrected;       // CounterSums of `windows`
  SortedWindow sorted;                 // quantile
  IntegerPrefix integer_prefix;        // sums
  FloatPrefix float_prefix;            // sums, when not integers
  std::vector<size_t> negative_zeros;  // quantile: how many of pts[0, i) are -0
  size_t cells = 0;
  table->labels.reserve(f.series.size());
  table->values.reserve(f.series.size() * n);
  table->present.reserve(f.series.size() * n);
  for (const tsdb::SeriesRuns& s : f.series) {
    // The series' non-stale samples that any step's window holds.
    pts.clear();
    size_t held = 0;
    for (const auto& run : s.runs) held += run.size();
    pts.reserve(held);
    for (const auto& run : s.runs)
      for (const tsdb::Sample& x : run)
        if (x.t_ms >= first_mint && x.t_ms <= last_ref && !tsdb::IsStaleNaN(x.v))
          pts.push_back(Point{x.t_ms, x.v});
    drops.clear();
    before.clear();
    if (counter) {
      // Without branches (a gauge read as a counter drops at random), a block at a time: each
      // sample is written at the block's next free place, which moves on only at a drop; the
      // drops found are appended. Memory grows with the drops, not with the samples.
      constexpr size_t kBlock = 512;
      size_t block_drops[kBlock];
      double block_before[kBlock];
      for (size_t from = 1; from < pts.size(); from += kBlock) {
        const size_t to = std::min(pts.size(), from + kBlock);
        size_t found = 0;
        for (size_t i = from; i < to; ++i) {
          block_drops[found] = i;
          block_before[found] = pts[i - 1].v;
          found += pts[i].v < pts[i - 1].v ? 1 : 0;
        }
        drops.insert(drops.end(), block_drops, block_drops + found);
        before.insert(before.end(), block_before, block_before + found);
      }
    }
    const size_t ndrops = drops.size();
    size_t da = 0, db = 0;  // rate, increase: the drops in (lo, hi)
    if (quantile) {
      sorted.Clear();
      negative_zeros.assign(pts.size() + 1, 0);
      for (size_t i = 0; i < pts.size(); ++i)
        negative_zeros[i + 1] =
            negative_zeros[i] + (pts[i].v == 0 && std::signbit(pts[i].v) ? 1 : 0);
    }
    windows.clear();
    const size_t row = table->labels.size();
    table->labels.push_back(name == "last_over_time" ? s.labels : DropName(s.labels));
    table->values.resize((row + 1) * n);
    table->present.resize((row + 1) * n);
    size_t lo = 0, hi = 0, head = 0;
    deque.clear();
    const bool integers = sums && integer_prefix.Build(pts);
    const bool floats = sums && !integers && float_prefix.Build(pts);
    for (size_t k = 0; k < n; ++k) {
      const int64_t t = StepTime(k);
      const int64_t ref = RefTime(ms.selector->mods, t), mint = ref - ms.range_ms;
      for (; hi < pts.size() && pts[hi].t_ms <= ref; ++hi) {
        const double v = pts[hi].v;
        if (extreme && !std::isnan(v)) {
          while (deque.size() > head &&
                 (is_max ? pts[deque.back()].v < v : pts[deque.back()].v > v))
            deque.pop_back();
          deque.push_back(hi);
        }
      }
      while (lo < hi && pts[lo].t_ms < mint) ++lo;
      while (head < deque.size() && deque[head] < lo) ++head;
      if (head == deque.size()) {
        head = 0;
        deque.clear();
      }
      CheckHeld(cells + windows.size() + (hi - lo));  // windows: this row's pending cells
      if (lo == hi) continue;
      double v = 0;
      bool ok = true;
      if (integers) {
        v = integer_prefix.Window(lo, hi).Result(name);
      } else if (floats) {
        v = float_prefix.Window(lo, hi).Result(name);
      } else if (extreme) {
        v = head < deque.size() ? pts[deque[head]].v : std::numeric_limits<double>::quiet_NaN();
      } else if (counter) {
        // Summed and extrapolated for all steps at once below.
        for (; da < ndrops && drops[da] <= lo; ++da) {
        }
        for (db = std::max(db, da); db < ndrops && drops[db] < hi; ++db) {
        }
        if (hi - lo >= 2) windows.push_back(CounterWindow{k, lo, hi, da, db});
        continue;
      } else if (quantile && negative_zeros[hi] == negative_zeros[lo]) {
        v = QuantileOfSorted(scalar, sorted.Move(pts, lo, hi));
      } else {
        ok = RangeFunctionValue(name, std::span<const Point>(pts.data() + lo, hi - lo), mint, ref,
                                ms.range_ms, t, scalar, &v);
      }
      if (!ok) continue;
      table->values[row * n + k] = v;
      table->present[row * n + k] = 1;
      ++cells;
    }
    if (windows.empty()) continue;
    corrected.resize(windows.size());
    CounterSums(pts, std::span<const double>(before.data(), ndrops), windows, corrected.data());
    for (size_t w = 0; w < windows.size(); ++w) {
      const CounterWindow& x = windows[w];
      const int64_t ref = RefTime(ms.selector->mods, StepTime(x.k));
      table->values[row * n + x.k] =
          ExtrapolateRate(corrected[w], pts[x.lo], pts[x.hi - 1], x.hi - x.lo, ref - ms.range_ms,
                          ref, ms.range_ms, true, name == "rate");
      table->present[row * n + x.k] = 1;
    }
    cells += windows.size();
  }
}

void Evaluator::PlanRollups(const Call& call) {
  RollupPlan& plan = rollup_plans_.at(&call);
  const MatrixSelector& ms = *PlainMatrixArg(call);
  const VectorSelector& vs = *ms.selector;
  const size_t n = StepCount();
  const int64_t span_lo = RefTime(vs.mods, StepTime(0)) - ms.range_ms;
  const int64_t span_hi = RefTime(vs.mods, StepTime(n - 1));
  std::vector<tsdb::SeriesRollups> rolls;
  bool supported = false;
  CheckDeadline();
  // One window past the span: a step whose reference time starts a window holds the sample
  // exactly there, the first raw sample of that window.
  const int64_t w_ext = FloorWindow(span_hi) + tsdb::kRollupWindowMs;
  Status st = querier_.SelectRollups(vs.matchers, span_lo, w_ext - 1, &rolls, &supported);
  if (!st.ok()) throw EvalError{QueryError::Kind::kInternal, st.message()};
  if (!supported) {
    for (const auto& arg : call.args) Walk(*arg, start_ms_, end_ms_);
    return;
  }
  plan.active = true;
  // Windows of the span read from rollups alone (CoveredWindows); the others are read raw.
  const int64_t w0 = CeilWindow(span_lo);
  const int64_t w_end = FloorWindow(span_hi + 1);  // windows [w0, w_end)
  const size_t nw = w_end > w0 ? static_cast<size_t>((w_end - w0) / tsdb::kRollupWindowMs) : 0;
  plan.w0 = w0;
  plan.nw = nw;
  const size_t n_ext = w_ext > w0 ? static_cast<size_t>((w_ext - w0) / tsdb::kRollupWindowMs) : 0;
  size_t held = 0;
  for (const tsdb::SeriesRollups& s : rolls) held += s.rollups.size();
  plan.covered = tsdb::CoveredWindows(rolls, w0, n_ext, RollupUsable);
  // Raw intervals [lo, hi] (inclusive): each step's edges and the unusable windows.
  std::vector<std::pair<int64_t, int64_t>> iv;
  for (size_t k = 0; k < n; ++k) {
    Tick();
    const int64_t ref = RefTime(vs.mods, StepTime(k)), mint = ref - ms.range_ms;
    const int64_t a = CeilWindow(mint), b = FloorWindow(ref + 1);
    if (a >= b) {
      iv.emplace_back(mint, ref);
      continue;
    }
    if (mint < a) iv.emplace_back(mint, a - 1);
    if (b <= ref && !plan.AtFromRollups(ref)) iv.emplace_back(b, ref);
  }
  for (size_t w = 0; w < nw; ++w) {
    if (plan.covered[w]) continue;
    const int64_t t = w0 + static_cast<int64_t>(w) * tsdb::kRollupWindowMs;
    iv.emplace_back(t, t + tsdb::kRollupWindowMs - 1);
  }
  const std::vector<std::pair<int64_t, int64_t>> merged =
      MergeIntervals(std::move(iv), kMaxRawSelects);
  plan.series = GatherSeries(vs, &rolls, merged, held);
}

std::vector<Evaluator::RollupSeries> Evaluator::GatherSeries(
    const VectorSelector& vs, std::vector<tsdb::SeriesRollups>* rolls,
    const std::vector<std::pair<int64_t, int64_t>>& reads, size_t held) {
  std::map<tsdb::Labels, RollupSeries> by_labels;
  for (tsdb::SeriesRollups& s : *rolls) by_labels[s.labels].rollups = std::move(s.rollups);
  std::vector<tsdb::SeriesRuns> runs;
  for (const auto& [lo, hi] : reads) {
    CheckDeadline();
    runs.clear();
    Status st = querier_.SelectRuns(vs.matchers, lo, hi, &runs);
    if (!st.ok()) throw EvalError{QueryError::Kind::kInternal, st.message()};
    for (const tsdb::SeriesRuns& s : runs) {
      RollupSeries& rs = by_labels[s.labels];
      rs.raw.insert(rs.raw.end(), s.runs.begin(), s.runs.end());
      rs.owners.insert(rs.owners.end(), s.owners.begin(), s.owners.end());
      held += s.size();
    }
    CheckHeld(held);
  }
  std::vector<RollupSeries> out;
  out.reserve(by_labels.size());
  for (auto& [labels, rs] : by_labels) {
    rs.labels = labels;
    out.push_back(std::move(rs));
  }
  return out;
}

// The steps' sums below are running sums of window sums, and rate/increase add each window's
// counter corrections pre-summed, where Prometheus adds sample by sample: the two agree (to
// rounding) only while no partial sum can overflow. Per series, the magnitudes of every sample a
// step could hold (each correction is one of them) are bounded by the raw samples' |v| plus
// count x max(|min|, |max|) of each rollup used; past 2^1000 (well short of the largest double,
// ~2^1024) the query is answered from raw samples instead (RollupsInexact). Only astronomically
// large values get there; the check is one pass over what the plan read.
void Evaluator::CheckRollupSumsBounded(const RollupPlan& plan) {
  const double kBound = std::ldexp(1.0, 1000);
  const int64_t win = tsdb::kRollupWindowMs;
  for (const RollupSeries& s : plan.series) {
    double magnitude = 0;
    for (const auto& run : s.raw)
      for (const tsdb::Sample& x : run)
        if (std::isfinite(x.v)) magnitude += std::fabs(x.v);
    auto r = s.rollups.begin();
    for (size_t w = 0; w < plan.nw; ++w) {
      const int64_t t = plan.w0 + static_cast<int64_t>(w) * win;
      while (r != s.rollups.end() && r->t_ms < t) ++r;
      if (r != s.rollups.end() && r->t_ms == t && RollupUsable(*r) && r->count > 0)
        magnitude += static_cast<double>(r->count) * std::max(std::fabs(r->min), std::fabs(r->max));
    }
    if (!(magnitude <= kBound)) throw RollupsInexact{};
  }
}

// Per series: a Fold per rollup window of the span (from its rollup where usable, else from its
// raw samples), then per step the raw head edge, the windows inside the step's window as a
// sliding aggregate of those Folds (running sums and counts, monotonic deques of their minima
// and maxima), and the raw tail edge. O(windows + steps + edge samples) per series.
void Evaluator::BuildRollupTable(const Call& call, const RollupPlan& plan, StepTable* table) {
  const std::string_view name = call.func->name;
  if (name == "sum_over_time" || name == "avg_over_time" || name == "rate" || name == "increase")
    CheckRollupSumsBounded(plan);
  if (!IsFoldFunction(name)) return BuildSequenceTable(call, plan, table);
  const MatrixSelector& ms = *PlainMatrixArg(call);
  const size_t n = table->steps;
  const int64_t win = tsdb::kRollupWindowMs;
  size_t cells = 0;
  std::vector<Fold> folds(plan.nw);
  std::vector<size_t> max_q, min_q;  // window indexes, [head, size)
  for (const RollupSeries& s : plan.series) {
    const size_t row = table->labels.size();
    table->labels.push_back(DropName(s.labels));
    table->values.resize((row + 1) * n);
    table->present.resize((row + 1) * n);
    // Folds the raw samples in [lo, hi) (stale markers are not part of a range).
    auto raw = [&s](Fold* f, int64_t lo, int64_t hi) {
      ForEachSampleIn(s.raw, lo, hi, [f](const tsdb::Sample& x) { f->Add(x.v); });
    };
    auto r = s.rollups.begin();
    for (size_t w = 0; w < plan.nw; ++w) {
      Tick();
      const int64_t t = plan.w0 + static_cast<int64_t>(w) * win;
      folds[w] = Fold{};
      while (r != s.rollups.end() && r->t_ms < t) ++r;
      if (r != s.rollups.end() && r->t_ms == t && RollupUsable(*r)) {
        folds[w].AddRollup(*r);
      } else {
        raw(&folds[w], t, t + win);
      }
    }
    Fold inner;  // the Folds of windows [lo, hi), without min/max (those come from the deques)
    size_t lo = 0, hi = 0, max_head = 0, min_head = 0;
    max_q.clear();
    min_q.clear();
    for (size_t k = 0; k < n; ++k) {
      const int64_t ref = RefTime(ms.selector->mods, StepTime(k)), mint = ref - ms.range_ms;
      const int64_t a = std::max(CeilWindow(mint), plan.w0);
      const int64_t b = std::max(FloorWindow(ref + 1), a);
      const size_t ia = static_cast<size_t>((a - plan.w0) / win);
      const size_t ib = std::min(static_cast<size_t>((b - plan.w0) / win), plan.nw);
      for (; hi < ib; ++hi) {
        const Fold& x = folds[hi];
        inner.AddCounts(x);
        if (!x.has_extreme) continue;
        while (max_q.size() > max_head && folds[max_q.back()].max < x.max) max_q.pop_back();
        max_q.push_back(hi);
        while (min_q.size() > min_head && folds[min_q.back()].min > x.min) min_q.pop_back();
        min_q.push_back(hi);
      }
      for (; lo < ia && lo < hi; ++lo) {
        inner.SubtractCounts(folds[lo]);
      }
      if (inner.count == 0) inner.sum = inner.comp = 0;  // no rounding carried over
      while (max_head < max_q.size() && max_q[max_head] < lo) ++max_head;
      while (min_head < min_q.size() && min_q[min_head] < lo) ++min_head;
      Fold f;
      raw(&f, mint, std::min(a, ref + 1));
      f.AddCounts(inner);
      if (max_head < max_q.size())
        f.Extremes(folds[min_q[min_head]].min, folds[max_q[max_head]].max);
      tsdb::Sample at;
      if (b == ref && plan.AtFromRollups(ref)) {
        if (SampleAtWindowStart(s.rollups, ref, &at)) f.Add(at.v);
      } else {
        raw(&f, std::max(b, mint), ref + 1);
      }
      if (f.count == 0) continue;
      table->values[row * n + k] = f.Result(name);
      table->present[row * n + k] = 1;
      ++cells;
    }
    CheckHeld(cells);
  }
}

}  // namespace gw::promql
