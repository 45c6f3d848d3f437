// promql/eval.h — the evaluator shared by engine.cpp, binary.cpp, aggregate.cpp and
// functions.cpp (internal to promql/).
//
// Evaluation is step by step: Eval(expr, t) computes the value of `expr` at one time. Range
// functions over a plain range selector are the exception (windows.cpp): their results for every
// step are computed in one pass on first use (sliding windows, rollups) and handed out per step.
// Errors are thrown as EvalError inside the evaluator and turned into QueryError by Engine.
#ifndef GPUWARDEN_PROMQL_EVAL_H_
#define GPUWARDEN_PROMQL_EVAL_H_

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "promql/engine.h"
#include "tsdb/rollup.h"

namespace gw::promql {

struct EvalError {
  QueryError::Kind kind;
  std::string message;
};

// Thrown when a rollup plan cannot answer exactly (sums that could pass the largest double, where
// only sample-by-sample addition gives Prometheus' answer): the engine evaluates the query again
// from raw samples (EngineOptions::rollups off).
struct RollupsInexact {};

// One element of an instant vector.
struct Element {
  tsdb::Labels labels;
  double v = 0;
  int64_t t_ms = 0;  // sample time; only timestamp() of a plain selector reads it
};
using Vector = std::vector<Element>;

struct EvalValue {
  ValueType type = ValueType::kVector;
  double scalar = 0;
  std::string str;
  Vector vector;
  std::vector<Series> matrix;  // range vectors: points in the window
};

// The results of one range-function Call at every step of the query, computed in one pass per
// series (windows.cpp): the sliding-window and rollup paths.
struct StepTable {
  size_t steps = 0;
  std::vector<tsdb::Labels> labels;  // per series, as the function outputs them
  std::vector<double> values;        // [series * steps + step]
  std::vector<uint8_t> present;      // same index: 1 where the series has a value
  std::vector<int64_t> times;        // same index, plain selectors only: the sample's time
  Vector At(size_t step) const;
};

class Evaluator {
 public:
  // step_ms: the step of a range query, 0 for an instant query.
  Evaluator(tsdb::Querier& querier, const EngineOptions& options, int64_t start_ms, int64_t end_ms,
            std::chrono::steady_clock::time_point deadline, int64_t step_ms = 0);

  // Loads the samples every selector of `root` needs for evaluations in [start, end].
  void Prepare(const Expr& root);

  EvalValue Eval(const Expr& e, int64_t t_ms);

  // Throws the timeout error once the deadline has passed, the canceled error once the gate
  // (EngineOptions::gate) shuts down.
  void CheckDeadline() const;
  // CheckDeadline every 256th call: cheap enough for loops over series and elements.
  void Tick() {
    if ((++ticks_ & 0xff) == 0) CheckDeadline();
  }
  // Counts samples held by the current step; throws past max_samples.
  void AddSamples(size_t n);
  // Throws when `extra` more samples than now counted would pass max_samples.
  void CheckHeld(size_t extra);
  // Starts a step: what step tables hold stays counted.
  void ResetStepSamples() { step_samples_ = held_samples_; }

  // The results of `call` at t_ms from its step table (built on first use), or nullptr when the
  // call is evaluated step by step (windows.cpp says when a table is used).
  const StepTable* TableFor(const Call& call, int64_t t_ms, size_t* step);
  // A range query whose whole expression is a call with a step table: its matrix straight from
  // the table, with what evaluating it step by step would give (series in label order, the
  // same sample-limit and duplicate-labelset errors at the same step); false when `root` is not
  // such a call (then nothing was evaluated). Saves copying every series' labels at every step.
  bool MatrixFromTable(const Expr& root, Value* out);

  Vector EvalBinary(const BinaryExpr& b, const EvalValue& lhs, const EvalValue& rhs,
                    EvalValue* out);
  Vector EvalAggregate(const AggregateExpr& a, int64_t t_ms);
  // sum/avg/min/max/count/group/stddev/stdvar over a call with a step table, straight from the
  // table: each row's group found once per query, no labels copied per step; the same values, in
  // the same order, as folding table->At(step). False (nothing evaluated) where that does not
  // apply.
  bool AggregateFromTable(const AggregateExpr& a, int64_t t_ms, Vector* out);
  EvalValue EvalCall(const Call& c, int64_t t_ms);

  // Helpers for functions.
  Vector EvalSelectorAt(const VectorSelector& vs, int64_t t_ms);
  // The series of a range-vector argument (a matrix selector or a subquery, maybe in parens) at
  // t_ms, its range, and the end of its window (t_ms after @ and offset).
  std::vector<Series> EvalRange(const Expr& e, int64_t t_ms, int64_t* range_ms, int64_t* ref_ms);
  // EvalRange, one series at a time: fn(labels, points) for every series of the range-vector
  // argument in label order. A matrix selector's points are copied into one buffer reused for
  // every series and step, so steady-state range queries allocate nothing here. `points` is
  // valid only during the call.
  using RangeSeriesFn = std::function<void(const tsdb::Labels&, const std::vector<Point>&)>;
  void ForEachRangeSeries(const Expr& e, int64_t t_ms, int64_t* range_ms, int64_t* ref_ms,
                          const RangeSeriesFn& fn);
  int64_t start_ms() const { return start_ms_; }
  int64_t end_ms() const { return end_ms_; }

 private:
  // A place in a series' runs: sample `off` of run `run`. The end of the series is
  // {runs.size() - 1, runs.back().size()} (or {0, 0} without runs).
  struct RunPos {
    size_t run = 0, off = 0;
  };
  // Per-series positions in the samples of a selector, for one time that only grows in range
  // evaluations, so that each step searches forward from the previous step's position.
  struct Cursor {
    int64_t t = 0;
    std::vector<RunPos> pos;
  };
  struct Fetched {
    int64_t mint = 0, maxt = 0;
    std::vector<tsdb::SeriesRuns> series;
    Cursor at;      // instant selectors: first sample after the reference time
    Cursor lo, hi;  // range selectors: first sample at or after the window start / after its end
  };
  // Moves c's positions to the first sample with t_ms > t (strict) or t_ms >= t (not strict).
  static void Seek(const std::vector<tsdb::SeriesRuns>& series, int64_t t, bool strict, Cursor* c);
  void Walk(const Expr& e, int64_t lo, int64_t hi);
  void Need(const VectorSelector& vs, int64_t mint, int64_t maxt);
  int64_t RefTime(const TimeModifiers& m, int64_t t) const;
  std::vector<Series> MatrixAt(const MatrixSelector& ms, int64_t t_ms);
  // The points of `s` from lo up to (not including) hi, stale markers left out, into *points.
  static void CopyPoints(const tsdb::SeriesRuns& s, RunPos lo, RunPos hi,
                         std::vector<Point>* points);
  std::vector<Series> SubqueryAt(const Subquery& sq, int64_t t_ms);

  // windows.cpp. A range function call whose window is read from rollups where they are exact.
  struct RollupSeries {
    tsdb::Labels labels;
    std::vector<tsdb::Rollup> rollups;
    // The raw samples of the edges and of windows without a usable rollup, as the querier
    // handed them out (time-ordered runs, kept alive by `owners`).
    std::vector<std::span<const tsdb::Sample>> raw;
    std::vector<std::shared_ptr<const std::vector<tsdb::Sample>>> owners;
  };
  struct RollupPlan {
    bool active = false;  // false: the querier keeps no rollups; the call is evaluated from raw
    int64_t w0 = 0;       // the rollup windows inside the span: [w0, w0 + nw * 5m)
    size_t nw = 0;
    // Per window from w0 (nw and the one after them): every series has a usable rollup there.
    std::vector<uint8_t> covered;
    std::vector<RollupSeries> series;
    // Whether a step whose reference time `ref` starts a window reads the sample exactly at ref
    // (its window's first raw sample) from the rollups rather than raw.
    bool AtFromRollups(int64_t ref) const {
      if (ref < w0 || tsdb::RollupWindowStart(ref) != ref) return false;
      const auto w = static_cast<size_t>((ref - w0) / tsdb::kRollupWindowMs);
      return w < covered.size() && covered[w];
    }
  };
  // rollup_reads.cpp. A plain instant selector evaluated at exactly the query's steps, all of whose
  // reference times are rollup window starts: each step's value is read from the rollups of the
  // windows its lookback covers, or from raw samples where they do not stand for them exactly.
  struct SelectorPlan {
    bool active = false;  // false: read raw (data_) as any selector
    StepTable table;
  };
  bool WantsSelectorRollups(const VectorSelector& vs) const;
  void PlanSelector(const VectorSelector& vs, SelectorPlan* plan);
  // rate, increase, delta, last_over_time and present_over_time over a RollupPlan.
  void BuildSequenceTable(const Call& call, const RollupPlan& plan, StepTable* table);
  // Per series in label order: the rollups of `rolls` and the raw samples of the inclusive
  // intervals `reads` of `vs` (one SelectRuns each); `held` counts against max_samples.
  std::vector<RollupSeries> GatherSeries(const VectorSelector& vs,
                                         std::vector<tsdb::SeriesRollups>* rolls,
                                         const std::vector<std::pair<int64_t, int64_t>>& reads,
                                         size_t held);
  bool TableEligible(const Call& call) const;
  // During Walk: a call evaluated at exactly the query's steps that may read rollups.
  bool WantsRollups(const Call& call) const;
  void PlanRollups(const Call& call);
  void BuildSlidingTable(const Call& call, StepTable* table);
  void BuildRollupTable(const Call& call, const RollupPlan& plan, StepTable* table);
  // Throws RollupsInexact where a step's sum over `plan` could overflow (windows.cpp).
  void CheckRollupSumsBounded(const RollupPlan& plan);
  size_t StepCount() const;
  bool TableFits() const;
  int64_t StepTime(size_t k) const;

  tsdb::Querier& querier_;
  const EngineOptions& options_;
  int64_t start_ms_, end_ms_;
  std::chrono::steady_clock::time_point deadline_;
  int64_t step_ms_ = 0;
  size_t step_samples_ = 0;
  size_t held_samples_ = 0;  // the cells of the step tables built so far
  uint32_t ticks_ = 0;
  std::map<const VectorSelector*, Fetched> data_;
  std::map<const Call*, RollupPlan> rollup_plans_;
  std::map<const Call*, StepTable> tables_;
  std::map<const VectorSelector*, SelectorPlan> selector_plans_;
  // AggregateFromTable's per-query state: each table row's group and the groups' labels.
  struct AggregatePlan {
    bool usable = false;
    std::vector<uint32_t> group_of_row;
    std::vector<tsdb::Labels> group_labels;
    std::vector<int32_t> slot;  // scratch: a group's index in the step's output, -1 if none yet
  };
  std::map<const AggregateExpr*, AggregatePlan> aggregate_plans_;
  std::vector<Point> points_buffer_;  // ForEachRangeSeries' reused buffer
};

// Shared label helpers.
tsdb::Labels DropName(const tsdb::Labels& l);
void SetLabel(tsdb::Labels* l, const std::string& name, const std::string& value);
std::string LabelsKey(const tsdb::Labels& l);  // an injective string form, for maps
void CheckNoDuplicateLabelsets(const Vector& v);
// Go's strconv.FormatFloat(v, 'f', -1, 64).
std::string FormatFloatPlain(double v);
// Prometheus' quantile(): linear interpolation between the closest ranks.
double Quantile(double q, std::vector<double> values);
// The same of values already in Quantile's order (NaN first, then ascending).
double QuantileOfSorted(double q, std::span<const double> sorted);

// A range function (not absent_over_time or holt_winters) over the points `p` (non-empty) of the
// window (range_start, range_end] ending at the reference time, evaluated at t_ms with the scalar
// argument `scalar` (predict_linear's t, quantile_over_time's q). False: no output element.
bool RangeFunctionValue(std::string_view name, std::span<const Point> p, int64_t range_start,
                        int64_t range_end, int64_t range_ms, int64_t t_ms, double scalar,
                        double* out);
// A rollup that stands exactly for its raw samples: written with every field (exact), no NaN
// sample, finite extremes (windows.cpp, rollup_reads.cpp).
bool RollupUsable(const tsdb::Rollup& r);
// The first rollup window start at or after t.
inline int64_t CeilWindow(int64_t t) {
  const int64_t f = tsdb::RollupWindowStart(t);
  return f == t ? t : f + tsdb::kRollupWindowMs;
}
// The sample exactly at window start `t` as the rollup of t's window among `rollups` (ascending,
// usable) records it: false when there is none or it is a stale marker.
bool SampleAtWindowStart(const std::vector<tsdb::Rollup>& rollups, int64_t t, tsdb::Sample* out);
// Prometheus 2.42's extrapolatedRate after its sum: `result` is last - first with the counter
// corrections already added in sample order, over `n` >= 2 samples from `first` to `last`.
double ExtrapolateRate(double result, Point first, Point last, size_t n, int64_t range_start,
                       int64_t range_end, int64_t range_ms, bool counter, bool rate);
// Calls fn(sample) for every sample that is not a stale marker with t in [lo, hi), in time order,
// of time-ordered runs.
template <class Fn>
void ForEachSampleIn(std::span<const std::span<const tsdb::Sample>> runs, int64_t lo, int64_t hi,
                     Fn&& fn) {
  auto run = std::partition_point(runs.begin(), runs.end(),
                                  [lo](const auto& r) { return r.back().t_ms < lo; });
  for (; run != runs.end() && run->front().t_ms < hi; ++run) {
    auto it = std::partition_point(run->begin(), run->end(),
                                   [lo](const tsdb::Sample& x) { return x.t_ms < lo; });
    for (; it != run->end() && it->t_ms < hi; ++it)
      if (!tsdb::IsStaleNaN(it->v)) fn(*it);
  }
}
// Merges the inclusive intervals `iv` (sorted in place) into at most `max_reads` disjoint ones,
// closing the smallest gaps first.
std::vector<std::pair<int64_t, int64_t>> MergeIntervals(std::vector<std::pair<int64_t, int64_t>> iv,
                                                        size_t max_reads);
// Neumaier-compensated addition, as Prometheus' kahanSumInc.
inline void KahanAdd(double inc, double* sum, double* c) {
  double t = *sum + inc;
  if ((*sum >= 0 ? *sum : -*sum) >= (inc >= 0 ? inc : -inc)) {
    *c += (*sum - t) + inc;
  } else {
    *c += (inc - t) + *sum;
  }
  *sum = t;
}

}  // namespace gw::promql

#endif  // GPUWARDEN_PROMQL_EVAL_H_
