// Rollup reads beyond windows.cpp's folds (min/max/sum/count/avg_over_time). Same rules: a
// rollup (tsdb/rollup.h) is read where it stands exactly for its raw samples (RollupUsable),
// raw samples everywhere else, and the answer is what step-by-step evaluation over the raw
// samples gives (tests/promql/windows_test.cpp compares the two on random data).
//
// Sequences: rate, increase, delta, last_over_time and present_over_time over a long window
// (the RollupPlan of windows.cpp). What they need of a stretch of samples is its count, its
// oldest and newest sample and, for counters, the corrections Prometheus adds in sample order
// (the previous value at every drop). A rollup keeps exactly that: count, first, last and its
// counter_correction; the drop between two windows is seen from the last of one and the first
// of the next. Per step the head edge (raw), the non-empty windows inside and the tail edge
// (raw) are chained; only the windows with a correction or a drop are visited, so a step costs
// O(log windows + corrections + edge samples). The corrections are added in sample order as
// Prometheus does; a window with two or more resets adds its corrections pre-summed, which can
// differ from Prometheus' sum in the last bits (tests allow 1e-9 relative for rate/increase).
//
// Plain selectors. In a range query whose every step's reference time is a rollup window start
// (steps that are multiples of 5 minutes on a 5-minute-aligned start: Grafana's and the
// console's long ranges), a selector's value at ref is the newest sample in [ref - lookback,
// ref]: a sample exactly at ref is the window [ref, ref + 5m)'s first raw sample
// (first_raw_t_ms == ref), else it is the newest raw sample of the newest earlier window within
// the lookback (last_raw_t_ms, newest_stale). A step is answered from the rollups when, in each
// window its lookback touches, every series has a usable rollup (exact, no NaN) or none in a
// window complete for it (no sample: tsdb::CoveredWindows); the other steps (the head's recent
// windows, windows with NaN) read their lookback raw, in at most kMaxSelectorReads reads. Unaligned
// steps are evaluated from raw samples as before (a step's lookback then ends inside a window,
// which no rollup can split).
#include <algorithm>
#include <cmath>
#include <string_view>

#include "promql/eval.h"
#include "promql/functions.h"

namespace gw::promql {
namespace {

constexpr int64_t kWin = tsdb::kRollupWindowMs;
// Most raw reads one selector makes for its steps that rollups cannot answer.
constexpr size_t kMaxSelectorReads = 16;

// A time-ordered stretch of one series' samples (NaN included, stale markers not) as rate & co.
// and last/present_over_time see it: the number of samples, the oldest and newest, and the
// counter corrections in sample order.
struct Chain {
  size_t count = 0;
  Point first{}, last{};
  std::vector<double> adds;

  void Clear() {
    count = 0;
    adds.clear();
  }
  void Add(const tsdb::Sample& x) {
    if (count == 0) {
      first = Point{x.t_ms, x.v};
    } else if (x.v < last.v) {
      adds.push_back(last.v);
    }
    last = Point{x.t_ms, x.v};
    ++count;
  }
  // Appends the stretch `s` that follows this one.
  void Append(const Chain& s) {
    if (s.count == 0) return;
    if (count == 0) {
      first = s.first;
    } else if (s.first.v < last.v) {
      adds.push_back(last.v);
    }
    adds.insert(adds.end(), s.adds.begin(), s.adds.end());
    last = s.last;
    count += s.count;
  }
  void FromRollup(const tsdb::Rollup& r) {
    Clear();
    if (r.count == 0) return;
    count = r.count;
    first = Point{r.first_t_ms, r.first};
    last = Point{r.last_t_ms, r.last};
    if (r.counter_correction != 0) adds.push_back(r.counter_correction);
  }
};

const MatrixSelector& MatrixArg(const Call& call) {
  for (const auto& arg : call.args) {
    const Expr* e = arg.get();
    while (e->kind == ExprKind::kParen) e = static_cast<const ParenExpr*>(e)->expr.get();
    if (e->kind == ExprKind::kMatrixSelector) return *static_cast<const MatrixSelector*>(e);
  }
  throw EvalError{QueryError::Kind::kInternal, "rollup plan without a range selector"};
}

// What a selector reads of a rollup: its newest raw sample and whether one lies at its start.
bool SelectorUsable(const tsdb::Rollup& r) {
  return r.exact && r.nan_count == 0;
}

// The newest sample (stale markers included) at or before t in time-ordered runs, or nullptr.
const tsdb::Sample* NewestAtOrBefore(std::span<const std::span<const tsdb::Sample>> runs,
                                     int64_t t) {
  auto run = std::partition_point(runs.begin(), runs.end(),
                                  [t](const auto& r) { return r.front().t_ms <= t; });
  if (run == runs.begin()) return nullptr;
  --run;
  auto it = std::partition_point(run->begin(), run->end(),
                                 [t](const tsdb::Sample& x) { return x.t_ms <= t; });
  return &*(it - 1);  // the run's first sample is at or before t
}

const tsdb::Rollup* RollupAt(const std::vector<tsdb::Rollup>& rollups, int64_t t) {
  auto it = std::partition_point(rollups.begin(), rollups.end(),
                                 [t](const tsdb::Rollup& r) { return r.t_ms < t; });
  return it != rollups.end() && it->t_ms == t ? &*it : nullptr;
}

}  // namespace

bool SampleAtWindowStart(const std::vector<tsdb::Rollup>& rollups, int64_t t, tsdb::Sample* out) {
  const tsdb::Rollup* r = RollupAt(rollups, t);
  if (r == nullptr || r->first_raw_t_ms != t || r->first_t_ms != t) return false;
  *out = tsdb::Sample{t, r->first};
  return true;
}

void Evaluator::BuildSequenceTable(const Call& call, const RollupPlan& plan, StepTable* table) {
  const std::string_view name = call.func->name;
  const bool extrapolated = name == "rate" || name == "increase" || name == "delta";
  const bool counter = name == "rate" || name == "increase";
  const MatrixSelector& ms = MatrixArg(call);
  const size_t n = table->steps;
  const size_t nw = plan.nw;
  // Per series, per window of the span: the window's stretch (from its rollup where usable,
  // else its raw samples), the running sample count, the non-empty windows, and the windows
  // that add a correction inside or a drop from the non-empty window before them.
  std::vector<Chain> segs(nw);
  std::vector<size_t> prefix(nw + 1), nonempty, events;
  std::vector<double> drop(nw);
  std::vector<uint8_t> has_drop(nw);
  Chain c, edge;
  size_t cells = 0;
  for (const RollupSeries& s : plan.series) {
    const size_t row = table->labels.size();
    table->labels.push_back(name == "last_over_time" ? s.labels : DropName(s.labels));
    table->values.resize((row + 1) * n);
    table->present.resize((row + 1) * n);
    nonempty.clear();
    events.clear();
    auto r = s.rollups.begin();
    for (size_t w = 0; w < nw; ++w) {
      Tick();
      const int64_t t = plan.w0 + static_cast<int64_t>(w) * kWin;
      Chain& seg = segs[w];
      while (r != s.rollups.end() && r->t_ms < t) ++r;
      if (r != s.rollups.end() && r->t_ms == t && RollupUsable(*r)) {
        seg.FromRollup(*r);
      } else {
        seg.Clear();
        ForEachSampleIn(s.raw, t, t + kWin, [&seg](const tsdb::Sample& x) { seg.Add(x); });
      }
      prefix[w + 1] = prefix[w] + seg.count;
      has_drop[w] = 0;
      if (seg.count == 0) continue;
      if (!nonempty.empty() && seg.first.v < segs[nonempty.back()].last.v) {
        has_drop[w] = 1;
        drop[w] = segs[nonempty.back()].last.v;
      }
      if (counter && (has_drop[w] || !seg.adds.empty())) events.push_back(w);
      nonempty.push_back(w);
    }
    for (size_t k = 0; k < n; ++k) {
      const int64_t ref = RefTime(ms.selector->mods, StepTime(k)), mint = ref - ms.range_ms;
      const int64_t a = std::max(CeilWindow(mint), plan.w0);
      const int64_t b = std::max(tsdb::RollupWindowStart(ref + 1), a);
      const size_t ib = std::min(static_cast<size_t>((b - plan.w0) / kWin), nw);
      const size_t ia = std::min(static_cast<size_t>((a - plan.w0) / kWin), ib);
      c.Clear();
      ForEachSampleIn(s.raw, mint, std::min(a, ref + 1), [&c](const tsdb::Sample& x) { c.Add(x); });
      auto fi = std::lower_bound(nonempty.begin(), nonempty.end(), ia);
      if (fi != nonempty.end() && *fi < ib) {
        const size_t li = *(std::lower_bound(fi, nonempty.end(), ib) - 1);
        const size_t inner = prefix[ib] - prefix[ia];
        const Chain& head = segs[*fi];
        if (c.count == 0) {
          c.first = head.first;
        } else if (head.first.v < c.last.v) {
          c.adds.push_back(c.last.v);
        }
        if (counter) {  // the corrections in sample order; only rate and increase read them
          c.adds.insert(c.adds.end(), head.adds.begin(), head.adds.end());
          for (auto e = std::upper_bound(events.begin(), events.end(), *fi);
               e != events.end() && *e <= li; ++e) {
            if (has_drop[*e]) c.adds.push_back(drop[*e]);
            c.adds.insert(c.adds.end(), segs[*e].adds.begin(), segs[*e].adds.end());
          }
        }
        c.last = segs[li].last;
        c.count += inner;
      }
      edge.Clear();
      tsdb::Sample at;
      if (b == ref && plan.AtFromRollups(ref)) {
        if (SampleAtWindowStart(s.rollups, ref, &at)) edge.Add(at);
      } else {
        ForEachSampleIn(s.raw, std::max(b, mint), ref + 1,
                        [&edge](const tsdb::Sample& x) { edge.Add(x); });
      }
      c.Append(edge);
      double v = 0;
      if (extrapolated) {
        if (c.count < 2) continue;
        double result = c.last.v - c.first.v;
        if (counter)
          for (double x : c.adds) result += x;
        v = ExtrapolateRate(result, c.first, c.last, c.count, mint, ref, ms.range_ms, counter,
                            name == "rate");
      } else {
        if (c.count == 0) continue;
        v = name == "last_over_time" ? c.last.v : 1;
      }
      table->values[row * n + k] = v;
      table->present[row * n + k] = 1;
      ++cells;
    }
    CheckHeld(cells);
  }
}

bool Evaluator::WantsSelectorRollups(const VectorSelector& vs) const {
  if (!options_.rollups || step_ms_ <= 0 || StepCount() < 2 || !TableFits()) return false;
  // Short ranges are the head's: nothing to read from rollups.
  if (end_ms_ - start_ms_ < options_.rollup_min_range_ms) return false;
  if (vs.mods.at == AtKind::kNone && step_ms_ % kWin != 0) return false;
  const int64_t ref = RefTime(vs.mods, start_ms_);
  return tsdb::RollupWindowStart(ref) == ref;
}

void Evaluator::PlanSelector(const VectorSelector& vs, SelectorPlan* plan) {
  const size_t n = StepCount();
  const int64_t lookback = options_.lookback_delta_ms;
  const int64_t ref_first = RefTime(vs.mods, StepTime(0));
  const int64_t ref_last = RefTime(vs.mods, StepTime(n - 1));
  const int64_t w_lo = tsdb::RollupWindowStart(ref_first - lookback);
  std::vector<tsdb::SeriesRollups> rolls;
  bool supported = false;
  CheckDeadline();
  Status st = querier_.SelectRollups(vs.matchers, w_lo, ref_last + kWin - 1, &rolls, &supported);
  if (!st.ok()) throw EvalError{QueryError::Kind::kInternal, st.message()};
  if (!supported) {
    Need(vs, ref_first - lookback, ref_last);
    return;
  }
  plan->active = true;
  // Windows [w_lo, ref_last + 5m) that rollups answer for every series.
  const size_t nw = static_cast<size_t>((ref_last + kWin - w_lo) / kWin);
  size_t held = 0;
  for (const tsdb::SeriesRollups& s : rolls) held += s.rollups.size();
  CheckHeld(held);
  const std::vector<uint8_t> covered_windows =
      tsdb::CoveredWindows(rolls, w_lo, nw, SelectorUsable);
  // A step is answered from rollups when every window of its lookback [ref - lookback, ref] is
  // covered; the others read that lookback raw.
  std::vector<uint8_t> from_rollups(n, 0);
  std::vector<std::pair<int64_t, int64_t>> iv;
  for (size_t k = 0; k < n; ++k) {
    Tick();
    const int64_t ref = RefTime(vs.mods, StepTime(k));
    bool covered = true;
    for (int64_t t = tsdb::RollupWindowStart(ref - lookback); covered && t <= ref; t += kWin)
      covered = covered_windows[static_cast<size_t>((t - w_lo) / kWin)] != 0;
    if (covered) {
      from_rollups[k] = 1;
    } else {
      iv.emplace_back(ref - lookback, ref);
    }
  }
  const std::vector<RollupSeries> series =
      GatherSeries(vs, &rolls, MergeIntervals(std::move(iv), kMaxSelectorReads), held);
  StepTable& table = plan->table;
  table.steps = n;
  const size_t cells = series.size() * n;
  table.values.resize(cells);
  table.present.resize(cells);
  table.times.resize(cells);
  size_t row = 0;
  for (const RollupSeries& s : series) {
    table.labels.push_back(s.labels);
    for (size_t k = 0; k < n; ++k) {
      Tick();
      const int64_t ref = RefTime(vs.mods, StepTime(k));
      const size_t cell = row * n + k;
      if (!from_rollups[k]) {
        const tsdb::Sample* x = NewestAtOrBefore(s.raw, ref);
        if (x == nullptr || x->t_ms < ref - lookback || tsdb::IsStaleNaN(x->v)) continue;
        table.values[cell] = x->v;
        table.times[cell] = x->t_ms;
        table.present[cell] = 1;
        continue;
      }
      // A series without rollups here had no sample here (the Querier contract).
      const tsdb::Rollup* at = RollupAt(s.rollups, ref);
      if (at != nullptr && at->first_raw_t_ms == ref) {
        tsdb::Sample x;  // else a stale marker (no NaN in a usable rollup)
        if (!SampleAtWindowStart(s.rollups, ref, &x)) continue;
        table.values[cell] = x.v;
        table.times[cell] = ref;
        table.present[cell] = 1;
        continue;
      }
      for (int64_t t = ref - kWin; t >= tsdb::RollupWindowStart(ref - lookback); t -= kWin) {
        const tsdb::Rollup* r = RollupAt(s.rollups, t);
        if (r == nullptr) continue;
        if (!r->newest_stale && r->last_raw_t_ms >= ref - lookback) {
          table.values[cell] = r->last;
          table.times[cell] = r->last_t_ms;
          table.present[cell] = 1;
        }
        break;
      }
    }
    ++row;
  }
}

}  // namespace gw::promql
