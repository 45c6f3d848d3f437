// Property tests of the step-table paths (src/promql/windows.cpp): on random data with NaN,
// infinities, stale markers, gaps and counter resets, range functions evaluated over sliding
// windows and over rollups must give what step-by-step evaluation over raw samples gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "promql/engine.h"
#include "support/counting_querier.h"
#include "support/process.h"
#include "tsdb/db.h"
#include "tsdb/rollup.h"

namespace gw::promql {
namespace {

// Counts what the evaluator reads (tests/support/counting_querier.h).
using gw::testing::CountingQuerier;

constexpr int64_t kT0 = 1'700'000'000'000;   // 200 s past a 5-minute window start
constexpr int64_t kAligned = kT0 - 200'000;  // a rollup window start

// Random series x{reason=...} (gauges) and c{reason=...} (counters with resets) over `span_ms`,
// with jittered intervals, gaps, NaN, infinities and stale markers.
// `scale` multiplies every finite value (1e306: sums of a few overflow).
void Fill(std::mt19937_64& rng, tsdb::MemoryQuerier* q, int64_t span_ms, int64_t mean_gap_ms,
          double special = 0.025, double scale = 1) {
  std::uniform_real_distribution<double> u(0, 1);
  const char* reasons[] = {"a", "b", "c"};
  for (const char* name : {"x", "c"}) {
    for (const char* reason : reasons) {
      tsdb::Labels l{{"__name__", name}, {"reason", reason}};
      double v = 50 + 50 * u(rng);
      int64_t t = kT0 + static_cast<int64_t>(u(rng) * 30000);
      while (t < kT0 + span_ms) {
        double out = v * scale;
        const double r = u(rng);
        if (r < special * 0.4) {
          out = std::nan("");
        } else if (r < special * 0.56) {
          out = std::numeric_limits<double>::infinity();
        } else if (r < special * 0.72) {
          out = -std::numeric_limits<double>::infinity();
        } else if (r < special) {
          out = tsdb::StaleNaN();
        }
        ASSERT_TRUE(q->Append(l, t, out).ok());
        if (name[0] == 'c') {
          v += 10 * u(rng);
          if (u(rng) < 0.02) v = 5 * u(rng);  // reset
        } else {
          v += (u(rng) - 0.5) * 8;
          if (u(rng) < 0.05) v = std::round(v);  // repeated values for changes()
        }
        int64_t gap = 1 + static_cast<int64_t>(u(rng) * 2 * static_cast<double>(mean_gap_ms));
        if (u(rng) < special * 0.4) gap += static_cast<int64_t>(u(rng) * 20 * 60000);  // a gap
        t += gap;
      }
    }
  }
}

// Exact where the two paths must be bit-equal, else 1e-9 relative.
void ExpectSame(const QueryResult& a, const QueryResult& b, bool exact, const std::string& what) {
  ASSERT_EQ(a.ok(), b.ok()) << what;
  if (!a.ok()) {
    EXPECT_EQ(a.error().message, b.error().message) << what;
    return;
  }
  const Value& x = a.value();
  const Value& y = b.value();
  ASSERT_EQ(x.type, y.type) << what;
  ASSERT_EQ(x.series.size(), y.series.size()) << what;
  for (size_t i = 0; i < x.series.size(); ++i) {
    ASSERT_EQ(x.series[i].labels, y.series[i].labels) << what;
    ASSERT_EQ(x.series[i].points.size(), y.series[i].points.size()) << what << " series " << i;
    for (size_t j = 0; j < x.series[i].points.size(); ++j) {
      const Point& p = x.series[i].points[j];
      const Point& r = y.series[i].points[j];
      ASSERT_EQ(p.t_ms, r.t_ms) << what;
      if (std::isnan(p.v) || std::isnan(r.v)) {
        ASSERT_EQ(std::isnan(p.v), std::isnan(r.v)) << what << " at " << p.t_ms;
      } else if (exact || std::isinf(p.v) || std::isinf(r.v)) {
        ASSERT_EQ(p.v, r.v) << what << " at " << p.t_ms;
      } else {
        ASSERT_LE(std::fabs(p.v - r.v), 1e-9 * std::max(std::fabs(p.v), std::fabs(r.v)) + 1e-12)
            << what << " at " << p.t_ms << ": " << p.v << " vs " << r.v;
      }
    }
  }
}

// Series g{s="0"} .. g{s="n-1"}, a sample a second over span_ms from kT0, valued value(s, t).
void FillG(tsdb::MemoryQuerier* q, int n, int64_t span_ms,
           const std::function<double(int, int64_t)>& value) {
  for (int s = 0; s < n; ++s) {
    tsdb::Labels l{{"__name__", "g"}, {"s", std::to_string(s)}};
    for (int64_t t = kT0; t < kT0 + span_ms; t += 1000)
      ASSERT_TRUE(q->Append(l, t, value(s, t)).ok());
  }
}

// Options for the step-by-step reference the sliding path is compared with.
EngineOptions StepByStep() {
  EngineOptions o;
  o.sliding_windows = false;
  return o;
}

bool ExactFunction(const std::string& f) {
  return f != "sum_over_time" && f != "avg_over_time";
}

// Over rollups, rate and increase add a window's counter corrections pre-summed (two resets in
// one window round differently from Prometheus' sample-by-sample sum).
bool RollupExact(const std::string& f) {
  return ExactFunction(f) && f != "rate" && f != "increase";
}

// The functions read from rollups over long windows (windows.cpp, rollup_reads.cpp).
const std::vector<std::string> kRollupFunctions = {
    "avg_over_time", "min_over_time", "max_over_time", "sum_over_time",  "count_over_time",
    "rate",          "increase",      "delta",         "last_over_time", "present_over_time"};

std::string Pick(std::mt19937_64& rng, const std::vector<std::string>& v) {
  return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
}

void CompareSliding(uint64_t seed, double scale) {
  std::mt19937_64 rng(seed);
  tsdb::MemoryQuerier q;
  Fill(rng, &q, 3 * 3600 * 1000, 7000, 0.025, scale);
  EngineOptions slide_opts, step_opts;
  step_opts.sliding_windows = false;
  const Engine slide(slide_opts), step(step_opts);
  const std::vector<std::string> funcs = {"rate",
                                          "increase",
                                          "delta",
                                          "irate",
                                          "idelta",
                                          "deriv",
                                          "changes",
                                          "resets",
                                          "avg_over_time",
                                          "min_over_time",
                                          "max_over_time",
                                          "sum_over_time",
                                          "count_over_time",
                                          "last_over_time",
                                          "stddev_over_time",
                                          "stdvar_over_time",
                                          "present_over_time",
                                          "quantile_over_time",
                                          "predict_linear"};
  const std::vector<std::string> ranges = {"10s", "45s", "1m", "5m", "7m13s", "10m", "1h"};
  const std::vector<std::string> mods = {
      "",           "",         " offset 3m",      " offset -90s",
      " @ start()", " @ end()", " @ 1700003600.5", " offset 10m @ end()"};
  const std::vector<int64_t> steps = {1000, 15000, 60000, 300000, 600000, 3600000, 13337};
  int checked = 0;
  for (int i = 0; i < 400; ++i) {
    const std::string f = Pick(rng, funcs);
    std::string sel = Pick(rng, {"x", "c", "x{reason=\"b\"}", "c{reason=~\"a|c\"}"}) + "[" +
                      Pick(rng, ranges) + "]" + Pick(rng, mods);
    std::string expr = f == "quantile_over_time"
                           ? f + "(" + Pick(rng, {"0.3", "1", "-(1)"}) + ", " + sel + ")"
                       : f == "predict_linear" ? f + "(" + sel + ", 120)"
                                               : f + "(" + sel + ")";
    if (std::uniform_int_distribution<int>(0, 3)(rng) == 0) expr = "sum by (reason) (" + expr + ")";
    const int64_t step_ms = steps[std::uniform_int_distribution<size_t>(0, steps.size() - 1)(rng)];
    const int64_t start =
        kT0 + std::uniform_int_distribution<int64_t>(-600000, 2 * 3600 * 1000)(rng);
    const int64_t n = std::uniform_int_distribution<int64_t>(1, 400)(rng);
    const int64_t end = std::min(start + n * step_ms, kT0 + 4 * 3600 * 1000);
    const std::string what = expr + " start=" + std::to_string(start) +
                             " step=" + std::to_string(step_ms) + " end=" + std::to_string(end);
    ExpectSame(slide.Range(q, expr, start, end, step_ms), step.Range(q, expr, start, end, step_ms),
               ExactFunction(f), what);
    if (::testing::Test::HasFatalFailure()) return;
    ++checked;
  }
  EXPECT_EQ(checked, 400);
}

TEST(SlidingWindows, AgreeWithStepByStepOnRandomData) {
  CompareSliding(15, 1);
}

// Values near the largest double: sums, means, variances, slopes and counter corrections
// overflow in some windows and not in others.
TEST(SlidingWindows, AgreeWithStepByStepOnHugeValues) {
  CompareSliding(16, 1e306);
}

// Aggregations over a call with a step table are folded straight from the table
// (Evaluator::AggregateFromTable): the same values in the same order as folding each step's
// vector, so bit for bit what step-by-step evaluation gives — also where two rows have the same
// labels after the name is dropped ({__name__=~"x|c"}: the duplicate-labelset error at the steps
// where both have a value).
TEST(SlidingWindows, AggregationsOverStepTablesAgreeBitForBit) {
  std::mt19937_64 rng(1515);
  tsdb::MemoryQuerier q;
  Fill(rng, &q, 3 * 3600 * 1000, 5000);
  const Engine slide{EngineOptions{}}, step(StepByStep());
  const std::vector<std::string> aggs = {"sum",
                                         "sum by (reason)",
                                         "avg",
                                         "avg by (reason)",
                                         "max without (reason)",
                                         "min by (reason)",
                                         "count",
                                         "group by (reason)",
                                         "stddev",
                                         "stdvar by (reason)",
                                         "sum without ()",
                                         "topk(2,",
                                         "quantile(0.5,"};
  const std::vector<std::string> funcs = {"max_over_time",  "min_over_time", "count_over_time",
                                          "last_over_time", "rate",          "changes",
                                          "delta"};
  int ok = 0, errors = 0;
  for (int i = 0; i < 300; ++i) {
    const std::string agg = Pick(rng, aggs);
    const std::string call = Pick(rng, funcs) + "(" +
                             Pick(rng, {"x", "c", "x{reason=~\"a|b\"}", "{__name__=~\"x|c\"}"}) +
                             "[" + Pick(rng, {"45s", "5m", "17m"}) + "])";
    const std::string expr = agg.back() == ',' ? agg + " " + call + ")" : agg + " (" + call + ")";
    const int64_t step_ms = Pick(rng, {"15000", "60000", "13337"}) == "15000" ? 15000 : 60000;
    const int64_t start = kT0 + std::uniform_int_distribution<int64_t>(0, 3600 * 1000)(rng);
    const int64_t end = start + std::uniform_int_distribution<int64_t>(2, 200)(rng) * step_ms;
    const std::string what =
        expr + " start=" + std::to_string(start) + " step=" + std::to_string(step_ms);
    const QueryResult a = slide.Range(q, expr, start, end, step_ms);
    ExpectSame(a, step.Range(q, expr, start, end, step_ms), true, what);
    if (HasFatalFailure()) return;
    (a.ok() ? ok : errors)++;
  }
  EXPECT_GT(ok, 200);
  EXPECT_GT(errors, 0);  // the duplicate labelsets were met, and answered as step by step
}

// rate/increase of a gauge that drops at about every other sample: each step adds ~1,800
// values before drops, and the sliding path adds the chains of eight steps interleaved
// (windows.cpp, CounterSums). Values with full-precision fractions make every addition round,
// so a chain added out of order, a lane given another step's drops, or a last group of fewer
// than eight steps handled wrong changes low bits; step counts 1..17 and ones that are not a
// multiple of eight cover partial groups, NaN in the window covers comparisons that are false.
TEST(SlidingWindows, CounterCorrectionsOfManyDropsAgreeBitForBit) {
  std::mt19937_64 rng(1514);
  std::uniform_real_distribution<double> u(0, 1);
  tsdb::MemoryQuerier q;
  double v = 0;
  FillG(&q, 3, 3 * 3600 * 1000, [&](int s, int64_t t) {
    v = t == kT0 ? 1000 * u(rng) : v + (u(rng) - 0.5) * 3.7;  // ~half the samples drop
    return s == 2 && u(rng) < 0.01 ? std::nan("") : v;
  });
  ASSERT_FALSE(HasFatalFailure());
  const Engine slide, step(StepByStep());
  int drops_seen = 0;
  for (const std::string f : {"increase", "rate"}) {
    for (int64_t n : {1, 2, 7, 8, 9, 16, 17, 121}) {
      for (int64_t step_ms : {60000, 13337, 1000}) {
        const std::string expr = f + "(g[1h])";
        const int64_t start = kT0 + 3600 * 1000 - 2000 * n, end = start + (n - 1) * step_ms;
        const std::string what =
            expr + " steps=" + std::to_string(n) + " step=" + std::to_string(step_ms);
        const QueryResult a = slide.Range(q, expr, start, end, step_ms);
        ExpectSame(a, step.Range(q, expr, start, end, step_ms), true, what);
        if (HasFatalFailure()) return;
        ASSERT_EQ(a.value().series.size(), 3u) << what;
        // A plain difference (no corrections) would be far below the corrected sum.
        for (const Point& p : a.value().series[0].points)
          drops_seen += f == "increase" && p.v > 1000 ? 1 : 0;
      }
    }
  }
  EXPECT_GT(drops_seen, 100);
}

// quantile_over_time keeps each series' window sorted from step to step (windows.cpp,
// SortedWindow): samples leaving are taken out, those entering merged in. Values from a small
// set (many equal ones), NaN, infinities, and -0 next to +0 (answered step by step), with steps
// shorter than, equal to and longer than the range: each step must interpolate between the same
// sorted values as a fresh sort.
TEST(SlidingWindows, QuantileOverSortedWindowsAgreesBitForBit) {
  std::mt19937_64 rng(1515);
  std::uniform_int_distribution<int> pick(0, 40);
  tsdb::MemoryQuerier q;
  FillG(&q, 3, 2 * 3600 * 1000, [&](int s, int64_t t) {
    const int r = pick(rng);
    double v = (r % 13) * 0.37 - 1.5;
    if (s > 0 && r == 0) v = std::nan("");
    if (s > 0 && r == 1) v = std::numeric_limits<double>::infinity();
    if (s > 0 && r == 2) v = -std::numeric_limits<double>::infinity();
    // Mostly zeros, -0 only in the second hour: a quantile lands on two zeros often.
    if (s == 2 && r > 4) v = r % 3 == 0 ? 1 : (r % 3 == 1 || t < kT0 + 3600 * 1000 ? 0.0 : -0.0);
    return v;
  });
  ASSERT_FALSE(HasFatalFailure());
  const Engine slide, step(StepByStep());
  for (const std::string qv : {"0", "0.5", "0.99", "1"}) {
    for (const std::string range : {"30s", "10m"}) {
      for (int64_t step_ms : {1000, 7000, 60000, 600000, 1800000}) {
        const std::string expr = "quantile_over_time(" + qv + ", g[" + range + "])";
        const int64_t start = kT0 + 300000;
        const int64_t end = std::min(kT0 + 2 * 3600 * 1000, start + 300 * step_ms);
        const std::string what = expr + " step=" + std::to_string(step_ms);
        const QueryResult a = slide.Range(q, expr, start, end, step_ms);
        const QueryResult b = step.Range(q, expr, start, end, step_ms);
        ExpectSame(a, b, true, what);
        if (HasFatalFailure()) return;
        // == does not tell -0 from +0; the answer's text does.
        for (size_t i = 0; i < a.value().series.size(); ++i)
          for (size_t j = 0; j < a.value().series[i].points.size(); ++j)
            ASSERT_EQ(std::signbit(a.value().series[i].points[j].v),
                      std::signbit(b.value().series[i].points[j].v))
                << what << " at " << a.value().series[i].points[j].t_ms;
      }
    }
  }
}

// Any other series sums as differences of Neumaier prefix sums (windows.cpp, FloatPrefix): within
// 1e-12 of the step-by-step sums, with prices at two decimals, +1e12, noise and -1e12 in turn
// (each window's sum a small difference of large prefixes), NaN and infinities counted apart, and
// magnitudes past 2^1000 (summed the running way: a prefix could overflow). A prefix difference
// that loses its compensation or is off by a sample fails here.
TEST(SlidingWindows, FloatSeriesSumAsPrefixDifferences) {
  std::mt19937_64 rng(1517);
  std::uniform_real_distribution<double> u(-1, 1);
  tsdb::MemoryQuerier q;
  double price = 100;
  FillG(&q, 4, 3600 * 1000, [&](int s, int64_t t) {
    const double r = u(rng);
    switch (s) {
      case 0:
        price = std::round((price + r) * 100) / 100;
        return price;
      case 1:  // +1e12, a small value, -1e12 in turn: windows sum to ~0.01 or ~1e12
        return ((t / 1000) % 3 == 0 ? 1e12 : (t / 1000) % 3 == 2 ? -1e12 : 0) + r * 1e-3;
      case 2:
        if (r > 0.98) return std::nan("");
        if (r < -0.98)
          return r < -0.99 ? std::numeric_limits<double>::infinity()
                           : -std::numeric_limits<double>::infinity();
        return r * 7.25;
      default:
        return r * 1e307;
    }
  });
  ASSERT_FALSE(HasFatalFailure());
  const Engine slide, step(StepByStep());
  size_t compared = 0;
  for (const std::string f : {"sum_over_time", "count_over_time", "avg_over_time"}) {
    for (const std::string range : {"1m", "5m", "17m"}) {
      for (int64_t step_ms : {1000, 60000, 420000}) {
        const std::string expr = f + "(g[" + range + "])";
        const int64_t start = kT0, end = std::min(kT0 + 3600 * 1000, start + 400 * step_ms);
        // avg: against sum / count step by step — Prometheus' incremental mean loses ~1e-5 on the
        // ±1e12 series, which the sum does not; but on the 1e307 series (summed window by window,
        // with that mean) sums overflow where the mean does not.
        const std::string ratio =
            "sum_over_time(g[" + range + "]) / count_over_time(g[" + range + "])";
        const QueryResult a = slide.Range(q, expr, start, end, step_ms);
        const QueryResult b = step.Range(q, expr, start, end, step_ms);
        const QueryResult c =
            step.Range(q, f == "avg_over_time" ? ratio : expr, start, end, step_ms);
        ASSERT_TRUE(a.ok() && b.ok() && c.ok()) << expr;
        ASSERT_EQ(a.value().series.size(), b.value().series.size()) << expr;
        ASSERT_EQ(a.value().series.size(), c.value().series.size()) << expr;
        for (size_t i = 0; i < a.value().series.size(); ++i) {
          const bool huge = a.value().series[i].labels == tsdb::Labels{{"s", "3"}};
          const auto& x = a.value().series[i].points;
          const auto& y = (huge ? b : c).value().series[i].points;
          ASSERT_EQ(x.size(), y.size()) << expr;
          for (size_t j = 0; j < x.size(); ++j) {
            ASSERT_EQ(x[j].t_ms, y[j].t_ms) << expr;
            if (std::isnan(x[j].v) || std::isnan(y[j].v) || std::isinf(y[j].v)) {
              ASSERT_EQ(std::isnan(x[j].v), std::isnan(y[j].v)) << expr << " at " << x[j].t_ms;
              if (!std::isnan(y[j].v)) {
                ASSERT_EQ(x[j].v, y[j].v) << expr << " at " << x[j].t_ms;
              }
              continue;
            }
            ASSERT_LE(std::fabs(x[j].v - y[j].v), 1e-12 * std::fabs(y[j].v) + 1e-300)
                << expr << " series " << i << " at " << x[j].t_ms << ": " << x[j].v << " vs "
                << y[j].v;
            ++compared;
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 10000u);
}

// sum/count_over_time over a series of integers are differences of integer prefix sums
// (windows.cpp, IntegerPrefix): exact, so bit for bit the step-by-step sum. Series with NaN and
// infinities (counted apart), one whose magnitudes pass 2^53 and one with a fraction (both
// summed the running way) must agree too (avg: step by step takes Prometheus' running mean).
TEST(SlidingWindows, IntegerSeriesSumAsPrefixDifferences) {
  std::mt19937_64 rng(1516);
  std::uniform_int_distribution<int> pick(-50, 50);
  tsdb::MemoryQuerier q;
  FillG(&q, 4, 3600 * 1000, [&](int s, int64_t t) {
    const int r = pick(rng);
    double v = r;
    if (s == 1 && r == 50) v = std::nan("");
    if (s == 1 && r == 49) v = std::numeric_limits<double>::infinity();
    if (s == 1 && r == -50) v = -std::numeric_limits<double>::infinity();
    if (s == 1 && r == 48) v = tsdb::StaleNaN();
    if (s == 2 && t == kT0 + 1800 * 1000) v = 9007199254740000.0;  // passes 2^53 in all
    if (s == 3 && t == kT0 + 1800 * 1000) v = 0.5;
    return v;
  });
  ASSERT_FALSE(HasFatalFailure());
  const Engine slide, step(StepByStep());
  for (const std::string f : {"sum_over_time", "count_over_time", "avg_over_time"}) {
    for (const std::string range : {"1m", "5m", "17m"}) {
      for (int64_t step_ms : {1000, 60000, 420000}) {
        const std::string expr = f + "(g[" + range + "])";
        const int64_t start = kT0, end = std::min(kT0 + 3600 * 1000, start + 400 * step_ms);
        ExpectSame(slide.Range(q, expr, start, end, step_ms),
                   step.Range(q, expr, start, end, step_ms), f != "avg_over_time",
                   expr + " step=" + std::to_string(step_ms));
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST(SlidingWindows, CachedStepsCountAgainstMaxSamples) {
  tsdb::MemoryQuerier q;
  for (int s = 0; s < 10; ++s)
    for (int64_t t = 0; t < 400; ++t)
      ASSERT_TRUE(q.Append({{"__name__", "x"}, {"s", std::to_string(s)}}, t * 1000, 1).ok());
  EngineOptions o;
  o.max_samples = 1500;
  // Step by step a step holds 10 windows of 61 samples and the result so far (at most 200
  // points): it fits. The table holds 10 series x 200 steps at once (as Prometheus, which
  // evaluates the function over all steps before count(), holds 2,000 samples): refused.
  const std::string expr = "count(max_over_time(x[1m]))";
  o.sliding_windows = false;
  QueryResult r = Engine(o).Range(q, expr, 60000, 259000, 1000);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().series.at(0).points.size(), 200u);
  o.sliding_windows = true;
  r = Engine(o).Range(q, expr, 60000, 259000, 1000);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, QueryError::Kind::kExecution);
  o.max_samples = 2500;
  r = Engine(o).Range(q, expr, 60000, 259000, 1000);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().series.at(0).points.size(), 200u);
  // The table call alone is answered from the table without stepping
  // (Evaluator::MatrixFromTable), with the limit the steps would check: 2,000 cells, and 1,990
  // points output before the last step.
  o.max_samples = 3990;
  r = Engine(o).Range(q, "max_over_time(x[1m])", 60000, 259000, 1000);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r.value().series.size(), 10u);
  EXPECT_EQ(r.value().series[3].points.size(), 200u);
  o.max_samples = 3989;
  r = Engine(o).Range(q, "(max_over_time(x[1m]))", 60000, 259000, 1000);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, QueryError::Kind::kExecution);
}

// A range query that is one table call alone is answered from the table without stepping
// (Evaluator::MatrixFromTable; its sample limit: CachedStepsCountAgainstMaxSamples): series that
// DropName makes equal merge where their steps do not overlap and fail where they do, as step
// by step.
TEST(SlidingWindows, WholeQueryTableAnswersAsTheStepsWould) {
  // a{k="1"} over the first 100 s, b{k="1"} over the last 100 s (of 300 s), c{k="2"} throughout.
  tsdb::MemoryQuerier d;
  for (int64_t t = 0; t < 300; ++t) {
    if (t < 100) {
      ASSERT_TRUE(d.Append({{"__name__", "a"}, {"k", "1"}}, t * 1000, t).ok());
    }
    if (t >= 200) {
      ASSERT_TRUE(d.Append({{"__name__", "b"}, {"k", "1"}}, t * 1000, 2 * t).ok());
    }
    ASSERT_TRUE(d.Append({{"__name__", "c"}, {"k", "2"}}, t * 1000, 3 * t).ok());
  }
  const Engine slide, step(StepByStep());
  for (const std::string range : {"10s", "2m"}) {
    const std::string expr = "rate({__name__=~\"a|b|c\"}[" + range + "])";
    ExpectSame(slide.Range(d, expr, 0, 299000, 7000), step.Range(d, expr, 0, 299000, 7000), true,
               expr);
    if (HasFatalFailure()) return;
  }
  const QueryResult merged = slide.Range(d, "rate({__name__=~\"a|b|c\"}[10s])", 0, 299000, 7000);
  ASSERT_TRUE(merged.ok()) << merged.error().message;
  ASSERT_EQ(merged.value().series.size(), 2u);
  EXPECT_EQ(merged.value().series[0].labels, (tsdb::Labels{{"k", "1"}}));
  const std::vector<Point>& p = merged.value().series[0].points;
  EXPECT_EQ(p.front().t_ms, 7000);   // a's
  EXPECT_EQ(p.back().t_ms, 294000);  // b's
  for (const Point& x : p) EXPECT_TRUE(x.t_ms < 110000 || x.t_ms > 200000) << x.t_ms;
  const QueryResult overlap = slide.Range(d, "rate({__name__=~\"a|b|c\"}[2m])", 0, 299000, 7000);
  ASSERT_FALSE(overlap.ok());
  EXPECT_EQ(overlap.error().message, "vector cannot contain metrics with the same labelset");
}

EngineOptions RawOnly() {
  EngineOptions o;
  o.sliding_windows = o.rollups = false;
  return o;
}

// Random data (Fill, 8 h) behind a counting querier, and the default and the raw-only engine.
struct RandomData {
  RandomData(uint64_t seed, double special, double scale = 1)
      : rng(seed), counting(&q), raw(RawOnly()) {
    Fill(rng, &q, 8 * 3600 * 1000, 5000, special, scale);
  }
  std::mt19937_64 rng;
  tsdb::MemoryQuerier q;
  CountingQuerier counting;
  const Engine engine, raw;
};

// Random queries over rollups and over raw samples; adds the raw samples instant queries read
// both ways.
void CompareRollupsScaled(uint64_t seed, double special, double scale, size_t* rollup_read,
                          size_t* raw_read) {
  RandomData d(seed, special, scale);
  const std::vector<std::string>& funcs = kRollupFunctions;
  const std::vector<std::string> ranges = {"1h", "2h", "3h17s", "90m", "6h"};
  const std::vector<std::string> mods = {"", "", " offset 7m", " @ end()", " offset -1h"};
  const std::vector<int64_t> steps = {60000, 300000, 437000, 3600000, 7200000};
  for (int i = 0; i < 250; ++i) {
    const std::string f = Pick(d.rng, funcs);
    std::string expr = f + "(" + Pick(d.rng, {"x", "c", "x{reason!=\"a\"}"}) + "[" +
                       Pick(d.rng, ranges) + "]" + Pick(d.rng, mods) + ")";
    if (i % 5 == 0) expr = "max(" + expr + ")";
    const bool instant = i % 3 == 0;
    const int64_t start = kT0 + std::uniform_int_distribution<int64_t>(0, 8 * 3600 * 1000)(d.rng);
    const int64_t step_ms =
        steps[std::uniform_int_distribution<size_t>(0, steps.size() - 1)(d.rng)];
    const int64_t end = std::min(start + 100 * step_ms, kT0 + 9 * 3600 * 1000);
    const std::string what = expr + (instant ? " instant" : " range") +
                             " start=" + std::to_string(start) + " step=" + std::to_string(step_ms);
    d.q.EnableRollups(true);
    d.counting.raw_samples = 0;
    QueryResult a = instant ? d.engine.Instant(d.counting, expr, start)
                            : d.engine.Range(d.counting, expr, start, end, step_ms);
    if (instant) *rollup_read += d.counting.raw_samples;
    d.q.EnableRollups(false);
    d.counting.raw_samples = 0;
    QueryResult b = instant ? d.raw.Instant(d.counting, expr, start)
                            : d.raw.Range(d.counting, expr, start, end, step_ms);
    if (instant) *raw_read += d.counting.raw_samples;
    ExpectSame(a, b, RollupExact(f), what);
    if (::testing::Test::HasFatalFailure()) return;
    // With rollups off the default engine reads raw samples and agrees as well.
    QueryResult c = instant ? d.engine.Instant(d.counting, expr, start)
                            : d.engine.Range(d.counting, expr, start, end, step_ms);
    ExpectSame(c, b, RollupExact(f), what + " (rollups unsupported)");
    if (::testing::Test::HasFatalFailure()) return;
  }
}

void CompareRollups(uint64_t seed, double special, size_t* rollup_read, size_t* raw_read) {
  CompareRollupsScaled(seed, special, 1, rollup_read, raw_read);
}

using CompareFn = void (*)(uint64_t seed, double special, size_t* rollup_read, size_t* raw_read);

// `compare` on data with many NaN, infinities and stale markers (most windows are read raw),
// then with rare ones: there the rollups must stand in for most raw samples.
void ManyThenRare(CompareFn compare, uint64_t many_seed, uint64_t rare_seed) {
  size_t rollup_read = 0, raw_read = 0;
  compare(many_seed, 0.025, &rollup_read, &raw_read);
  if (::testing::Test::HasFatalFailure()) return;
  rollup_read = raw_read = 0;
  compare(rare_seed, 0.0004, &rollup_read, &raw_read);
  EXPECT_LT(rollup_read * 4, raw_read) << rollup_read << " vs " << raw_read;
}

// (Instant queries only: range queries read the edges of every step, which with steps of a few
// windows is most of the span again.)
TEST(Rollups, AgreeWithRawEvaluationOnRandomData) {
  ManyThenRare(CompareRollups, 42, 7);
}

// Values near the largest double (some windows' sums overflow): the same answers.
TEST(Rollups, AgreeWithRawEvaluationOnHugeValues) {
  size_t rollup_read = 0, raw_read = 0;
  CompareRollupsScaled(43, 0.0004, 1e306, &rollup_read, &raw_read);
}

TEST(Rollups, LongWindowReadsOnlyTheEdgesRaw) {
  tsdb::MemoryQuerier q;
  for (int64_t t = 0; t < 86400; t += 1)
    ASSERT_TRUE(q.Append({{"__name__", "x"}}, kT0 + t * 1000, static_cast<double>(t % 977)).ok());
  q.EnableRollups(true);
  CountingQuerier counting(&q);
  const int64_t at = kT0 + 86399 * 1000 + 123;
  QueryResult r = Engine().Instant(counting, "max_over_time(x[1d])", at);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().series.at(0).points.at(0).v, 976);
  // The window (at - 1d, at] has whole rollup windows but for its two ends (< 10 minutes).
  EXPECT_LE(counting.raw_samples, 600u);
  EXPECT_LE(counting.raw_selects, 2u);
  // A range query over a day at 10-minute steps keeps to a few reads.
  counting.raw_selects = 0;
  r = Engine().Range(counting, "avg_over_time(x[1h])", at - 86400000 + 3600000, at, 600000);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_LE(counting.raw_selects, 16u);
}

// A counter with a reset every 17 minutes (at most one per rollup window): rate & co. over a
// day read only the edges raw and are bit-equal to raw evaluation.
TEST(Rollups, CounterFunctionsOverLongWindowsReadTheEdgesRaw) {
  tsdb::MemoryQuerier q;
  double v = 0;
  for (int64_t t = 0; t < 2 * 86400; t += 10) {
    v = t % 1020 == 0 ? 3 : v + 1.5 + static_cast<double>(t % 7) * 0.25;
    ASSERT_TRUE(q.Append({{"__name__", "c"}}, kT0 + t * 1000, v).ok());
  }
  q.EnableRollups(true);
  CountingQuerier counting(&q);
  EngineOptions raw_opts;
  raw_opts.sliding_windows = raw_opts.rollups = false;
  const Engine engine, raw(raw_opts);
  const int64_t at = kT0 + 2 * 86400 * 1000 - 4321;
  for (const char* f : {"rate", "increase", "delta", "last_over_time", "present_over_time"}) {
    const std::string expr = std::string(f) + "(c[1d])";
    counting.raw_samples = 0;
    QueryResult a = engine.Instant(counting, expr, at);
    EXPECT_LE(counting.raw_samples, 60u) << expr;  // two edges of under 5 minutes at 10 s
    q.EnableRollups(false);
    ExpectSame(a, raw.Instant(q, expr, at), true, expr);
    const int64_t start = kT0 + 86400 * 1000;
    ExpectSame(engine.Range(q, expr, start, at, 3600000), raw.Range(q, expr, start, at, 3600000),
               true, expr + " range, rollups unsupported");
    q.EnableRollups(true);
    counting.raw_selects = 0;
    ExpectSame(engine.Range(counting, expr, start, at, 3600000),
               raw.Range(q, expr, start, at, 3600000), true, expr + " range");
    EXPECT_LE(counting.raw_selects, 16u) << expr;
    if (HasFatalFailure()) return;
  }
}

// Windows whose finite samples sum past the largest double: g{s="a"} has two samples of
// 1.5e308 in one 5-minute window (one more an hour later, and -1.5e308 later still); g{s="b"}
// has 3e305 every 10 s for 4 hours, so no window overflows but hours of them do. Over rollups the
// steps slide a running sum of window sums, which Prometheus' sample-by-sample sum is not once
// a partial sum overflows: such queries are answered from raw samples (windows.cpp,
// CheckRollupSumsBounded), the others still from rollups. Every step agrees with raw evaluation.
TEST(Rollups, SumsThatCouldOverflowAreAnsweredFromRawSamples) {
  tsdb::MemoryQuerier q;
  for (int64_t t = 0; t < 86400; t += 10) {
    double a = static_cast<double>((t * 7) % 113) * 0.25, b = a;
    if (t == 3 * 3600 + 10 || t == 3 * 3600 + 20 || t == 4 * 3600 + 10) a = 1.5e308;
    if (t == 6 * 3600 + 10) a = -1.5e308;
    if (t >= 10 * 3600 && t < 14 * 3600) b = 3e305;
    ASSERT_TRUE(q.Append({{"__name__", "g"}, {"s", "a"}}, kAligned + t * 1000, a).ok());
    ASSERT_TRUE(q.Append({{"__name__", "g"}, {"s", "b"}}, kAligned + t * 1000, b).ok());
  }
  CountingQuerier counting(&q);
  EngineOptions raw_opts;
  raw_opts.sliding_windows = raw_opts.rollups = false;
  const Engine engine, raw(raw_opts);
  const int64_t start = kAligned + 3600 * 1000, end = kAligned + 86400 * 1000 - 1;
  size_t finite_after = 0;
  for (const char* f : {"sum_over_time", "avg_over_time", "count_over_time", "max_over_time"}) {
    const bool sums = f[1] != 'o' && f[1] != 'a';  // sum, avg
    for (const char* sel : {"g", "g{s=\"b\"}"}) {
      for (const char* range : {"1h", "2h", "150m"}) {
        const std::string expr = std::string(f) + "(" + sel + "[" + range + "])";
        for (int64_t step : {300000, 600000, 3600000}) {
          q.EnableRollups(true);
          counting.raw_samples = 0;
          const QueryResult a = engine.Range(counting, expr, start, end, step);
          // Counts and maxima from rollups (all but the edges); sums read everything raw.
          if (sums) {
            EXPECT_GE(counting.raw_samples, 8000u) << expr;
          } else {
            EXPECT_LT(counting.raw_samples, 4000u) << expr;
          }
          q.EnableRollups(false);
          const QueryResult b = raw.Range(q, expr, start, end, step);
          ExpectSame(a, b, RollupExact(f), expr + " step " + std::to_string(step));
          if (HasFatalFailure()) return;
          for (const Series& series : a.value().series)
            for (const Point& p : series.points)
              finite_after += p.t_ms > kAligned + 15 * 3600 * 1000 && std::isfinite(p.v);
        }
      }
    }
  }
  EXPECT_GT(finite_after, 1000u);
  // Instant queries over a day take the same way.
  for (const char* expr : {"sum_over_time(g[1d])", "avg_over_time(g[20h])"}) {
    q.EnableRollups(true);
    const QueryResult a = engine.Instant(q, expr, end);
    q.EnableRollups(false);
    ExpectSame(a, raw.Instant(q, expr, end), false, expr);
  }
}

// Plain selectors in range queries whose steps fall on rollup window starts read the rollups
// (rollup_reads.cpp); on any steps they give what raw evaluation gives, point for point.
void CompareSelectors(uint64_t seed, double special, size_t* rollup_read, size_t* raw_read) {
  RandomData d(seed, special);
  const std::vector<std::string> exprs = {
      "x",           "c",           "x{reason!=\"a\"}", "max(x)",           "timestamp(c)",
      "x offset 5m", "x offset 7m", "c @ end()",        "x - on(reason) c", "sum by (reason) (x)"};
  const std::vector<int64_t> steps = {300000, 600000, 900000, 3600000, 420000};
  for (int i = 0; i < 200; ++i) {
    const std::string expr = Pick(d.rng, exprs);
    const int64_t step_ms =
        steps[std::uniform_int_distribution<size_t>(0, steps.size() - 1)(d.rng)];
    int64_t start = kAligned + 300000 * std::uniform_int_distribution<int64_t>(-2, 60)(d.rng);
    const bool aligned = i % 3 != 0;
    if (!aligned) start += std::uniform_int_distribution<int64_t>(1, 299999)(d.rng);
    const int64_t n = std::uniform_int_distribution<int64_t>(12, 100)(d.rng);
    const int64_t end =
        std::min(start + std::max<int64_t>(n * step_ms, 3600000), kT0 + 9 * 3600000);
    const std::string what = expr + " start=" + std::to_string(start) +
                             " step=" + std::to_string(step_ms) + " end=" + std::to_string(end);
    d.q.EnableRollups(true);
    d.counting.raw_samples = 0;
    QueryResult a = d.engine.Range(d.counting, expr, start, end, step_ms);
    if (aligned && step_ms % 300000 == 0) *rollup_read += d.counting.raw_samples;
    d.q.EnableRollups(false);
    d.counting.raw_samples = 0;
    QueryResult b = d.raw.Range(d.counting, expr, start, end, step_ms);
    if (aligned && step_ms % 300000 == 0) *raw_read += d.counting.raw_samples;
    ExpectSame(a, b, true, what);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// (Aligned steps only: the others read raw throughout.)
TEST(Rollups, SelectorsOnWindowStartsAgreeWithRawEvaluation) {
  ManyThenRare(CompareSelectors, 3, 11);
}

// Samples every 15 s from a window start, so every step of a 5-minute grid has a sample exactly
// at its time (read from the window's first sample), with stale markers and a NaN at and just
// after window starts, and gaps longer than the lookback.
TEST(Rollups, SelectorsSeeTheSampleExactlyAtTheStep) {
  tsdb::MemoryQuerier q;
  for (int64_t i = 0; i < 6 * 240; ++i) {
    const int64_t t = kAligned + i * 15000;
    double v = static_cast<double>((i * 37) % 101);
    if (i % 97 == 0) v = tsdb::StaleNaN();           // some at window starts (97 * 15 s)
    if (i == 400) v = tsdb::StaleNaN();              // 100 min: a window start
    if (i == 401 || i == 620) v = tsdb::StaleNaN();  // just after one
    if (i == 860) v = std::nan("");                  // a NaN at a window start
    if (i > 1000 && i < 1040) continue;              // a 10-minute gap
    ASSERT_TRUE(q.Append({{"__name__", "y"}}, t, v).ok());
  }
  CountingQuerier counting(&q);
  EngineOptions raw_opts;
  raw_opts.sliding_windows = raw_opts.rollups = false;
  const Engine engine, raw(raw_opts);
  // Range functions over long windows on the same grid read the sample at each step's time from
  // the rollup of the window it starts (windows.cpp, PlanRollups).
  for (const char* expr : {"y", "y offset 5m", "timestamp(y)", "y @ 1699999800",
                           "max_over_time(y[1h])", "count_over_time(y[1h])", "rate(y[1h])",
                           "last_over_time(y[1h] offset 10m)", "delta(y[2h])"}) {
    for (int64_t step : {300000, 600000}) {
      const int64_t start = kAligned + 3600 * 1000, end = kAligned + 6 * 3600 * 1000;
      q.EnableRollups(true);
      counting.raw_samples = 0;
      QueryResult a = engine.Range(counting, expr, start, end, step);
      // Only the NaN's and the gap's steps and the last one, and their neighbours' windows.
      EXPECT_LT(counting.raw_samples, 400u) << expr;
      q.EnableRollups(false);
      ExpectSame(a, raw.Range(q, expr, start, end, step), true,
                 std::string(expr) + " step " + std::to_string(step));
      if (HasFatalFailure()) return;
    }
  }
}

// The same comparison through the real store: its rollups (written with every flushed block,
// complete windows only) against step-by-step evaluation over its raw samples. Against a store
// that keeps no rollups both sides read raw and agree trivially.
TEST(Rollups, ThroughTheStoreAgreeWithRawEvaluation) {
  std::mt19937_64 rng(99);
  tsdb::MemoryQuerier mem;
  Fill(rng, &mem, 6 * 3600 * 1000, 5000, 0.004);
  gw::testing::TempDir tmp;
  tsdb::DBOptions o;
  o.dir = tmp.path();
  o.retention_ms = o.rollup_retention_ms = 100LL * 365 * 86400 * 1000;
  o.block_range_ms = 3600 * 1000;
  auto db = tsdb::DB::Open(o);
  ASSERT_TRUE(db.ok()) << db.error().message;
  std::vector<tsdb::SeriesData> all;
  auto any = tsdb::Matcher::Make(tsdb::MatchType::kRegexMatch, "__name__", ".+");
  ASSERT_TRUE(any.ok());
  ASSERT_TRUE(mem.Select({*any}, 0, INT64_MAX, &all).ok());
  for (const auto& s : all)
    for (const auto& x : s.samples) ASSERT_TRUE((*db)->Append(s.labels, x.t_ms, x.v).ok());
  ASSERT_TRUE((*db)->Flush().ok());
  {
    // The store keeps exact rollups for the flushed windows (else this test compares raw to raw).
    std::vector<tsdb::SeriesRollups> r;
    bool supported = false;
    ASSERT_TRUE((*db)
                    ->NewQuerier()
                    ->SelectRollups({*any}, kT0, kT0 + 6 * 3600 * 1000, &r, &supported)
                    .ok());
    EXPECT_TRUE(supported);
    ASSERT_FALSE(r.empty());
    EXPECT_TRUE(r[0].rollups.size() > 10 && r[0].rollups[0].exact);
  }
  EngineOptions raw_opts;
  raw_opts.sliding_windows = raw_opts.rollups = false;
  const Engine engine, raw(raw_opts);
  const std::vector<std::string>& funcs = kRollupFunctions;
  for (int i = 0; i < 100; ++i) {
    std::string f = Pick(rng, funcs);
    std::string expr = f + "(" + Pick(rng, {"x", "c", "x{reason!=\"a\"}"}) + "[" +
                       Pick(rng, {"1h", "2h", "3h17s", "6h"}) + "]" +
                       Pick(rng, {"", " offset 7m", " @ end()"}) + ")";
    int64_t start = kT0 + std::uniform_int_distribution<int64_t>(0, 6 * 3600 * 1000)(rng);
    const int64_t steps[] = {300000, 437000, 3600000};
    const int64_t step_ms = steps[std::uniform_int_distribution<int>(0, 2)(rng)];
    auto querier = (*db)->NewQuerier();
    bool instant = i % 2 == 0;
    if (i % 4 == 1) {
      // A plain selector; on rollup window starts unless the step is 437 s.
      expr = Pick(rng, {"x", "c", "max by (reason) (x)", "timestamp(x)", "c offset 10m"});
      start = kAligned + 300000 * std::uniform_int_distribution<int64_t>(1, 60)(rng);
      f = "";
      instant = false;
    }
    const std::string what =
        expr + (instant ? " instant" : " range") + " at " + std::to_string(start);
    QueryResult a = instant ? engine.Instant(*querier, expr, start)
                            : engine.Range(*querier, expr, start, start + 40 * step_ms, step_ms);
    QueryResult b = instant ? raw.Instant(*querier, expr, start)
                            : raw.Range(*querier, expr, start, start + 40 * step_ms, step_ms);
    ExpectSame(a, b, RollupExact(f), what);
    if (HasFatalFailure()) return;
  }
}

// Series that come and go (processes, jobs) through the real store: a series has no rollup
// in the windows where it had no sample, and those windows are complete for it, so steps are
// answered from rollups all the same (no block decoded for an aligned long-range selector while
// everything is flushed); then with the newest samples, and new series, still in memory. Both
// agree with raw evaluation.
TEST(Rollups, SeriesThatComeAndGoAreAnsweredFromRollups) {
  constexpr int64_t kHour = 3600 * 1000, kSpan = 6 * kHour, kEvery = 10'000;
  gw::testing::TempDir tmp;
  tsdb::DBOptions o;
  o.dir = tmp.path();
  o.retention_ms = o.rollup_retention_ms = 100LL * 365 * 86400 * 1000;
  o.block_range_ms = kHour;
  o.rollup_min_samples = 0;  // every block keeps its rollups column (none computed by decoding)
  auto db = tsdb::DB::Open(o);
  ASSERT_TRUE(db.ok()) << db.error().message;
  std::mt19937_64 rng(41);
  auto lifetime = [&](int64_t from, int64_t to) {
    const int64_t a = from + static_cast<int64_t>(rng() % static_cast<uint64_t>(to - from));
    const int64_t b = a + static_cast<int64_t>(rng() % static_cast<uint64_t>(to - a + 1));
    return std::pair<int64_t, int64_t>{a / kEvery * kEvery, b / kEvery * kEvery};
  };
  auto write = [&](int pid, int64_t a, int64_t b, bool stale_end) {
    const tsdb::Labels rss{{"__name__", "rss"}, {"pid", std::to_string(pid)}};
    const tsdb::Labels cpu{{"__name__", "cpu"}, {"pid", std::to_string(pid)}};
    double c = 0;
    for (int64_t t = a; t < b; t += kEvery) {
      c += static_cast<double>(rng() % 100) / 10;
      ASSERT_TRUE((*db)->Append(rss, t, static_cast<double>(rng() % 5000) * 4096).ok());
      ASSERT_TRUE((*db)->Append(cpu, t, c).ok());
    }
    if (stale_end && b > a) {
      ASSERT_TRUE((*db)->Append(rss, b, tsdb::StaleNaN()).ok());
      ASSERT_TRUE((*db)->Append(cpu, b, tsdb::StaleNaN()).ok());
    }
  };
  for (int pid = 0; pid < 40; ++pid) {
    const auto [a, b] = lifetime(kT0, kT0 + kSpan);
    write(pid, a, b, pid % 2 == 0);
  }
  ASSERT_TRUE((*db)->Flush().ok());
  EngineOptions raw_opts;
  raw_opts.sliding_windows = raw_opts.rollups = false;
  const Engine engine, raw(raw_opts);
  const int64_t l_start = (kT0 + 599'999) / 600'000 * 600'000;
  auto compare = [&](int64_t end, bool flushed) {
    for (const char* expr :
         {"max(rss)", "rss", "count(rss)", "max_over_time(rss[1h])", "sum(rate(cpu[1h]))",
          "last_over_time(rss[30m])", "increase(cpu[2h])", "avg_over_time(rss[1h])"}) {
      auto querier = (*db)->NewQuerier();
      const uint64_t before = (*db)->stats().blocks_decoded;
      QueryResult a = engine.Range(*querier, expr, l_start, end, 600'000);
      const uint64_t decoded = (*db)->stats().blocks_decoded - before;
      QueryResult b = raw.Range(*querier, expr, l_start, end, 600'000);
      ASSERT_TRUE(a.ok() && !a.value().series.empty()) << expr;
      ExpectSame(a, b, RollupExact(std::string(expr).substr(0, std::string(expr).find('('))), expr);
      if (HasFatalFailure()) return;
      if (flushed && std::string_view(expr).find('[') == std::string_view::npos) {
        EXPECT_EQ(decoded, 0u) << expr;  // every step from the rollups
      }
    }
  };
  const int64_t flushed_end = (kT0 + kSpan) / 600'000 * 600'000;
  compare(flushed_end, true);
  // New samples in memory: some processes go on, new ones start; the flushed ones stay.
  for (int pid = 40; pid < 50; ++pid) {
    const auto [a, b] = lifetime(kT0 + kSpan, kT0 + kSpan + kHour);
    write(pid, a, b, pid % 3 == 0);
  }
  compare(flushed_end + kHour, false);
  ASSERT_TRUE((*db)->Flush().ok());
  compare(flushed_end + kHour, true);
}

// A store as `gpuwarden tsdb import` leaves it (no WAL, one Flush of everything, default 6 h
// blocks) holding two days at Prometheus' usual 15 s interval, reopened as `serve` reopens it:
// bench/storage_compare.sh's long-range queries are answered from the blocks' rollups (every
// rollup column read is counted) and agree with raw evaluation. Twice: with the rollups stored
// (rollup_min_samples 1024, the default before session 22: only the edge blocks are ever decoded)
// and as compaction now writes 15 s blocks (1,440 samples, under the default: no column), where
// a query decodes each block once to compute its rollups, keeps them in the rollup cache, and
// the same query again decodes only the edge blocks.
TEST(Rollups, ImportedDaysAt15sAreAnsweredFromRollups) {
  constexpr int64_t kStep = 15'000, kSpan = 2LL * 86400 * 1000;
  ASSERT_GT(tsdb::DBOptions{}.rollup_min_samples, 6u * 3600 * 1000 / kStep);
  for (const size_t min_samples : {size_t{1024}, tsdb::DBOptions{}.rollup_min_samples}) {
    SCOPED_TRACE("rollup_min_samples " + std::to_string(min_samples));
    const bool stored = min_samples <= 6u * 3600 * 1000 / kStep;
    gw::testing::TempDir tmp;
    tsdb::DBOptions o;
    o.dir = tmp.path();
    o.retention_ms = o.rollup_retention_ms = 100LL * 365 * 86400 * 1000;
    o.rollup_min_samples = min_samples;
    int64_t end = 0;
    {
      tsdb::DBOptions w = o;
      w.write_wal = false;
      auto db = tsdb::DB::Open(w);
      ASSERT_TRUE(db.ok()) << db.error().message;
      std::mt19937_64 rng(15);
      std::normal_distribution<double> noise(0, 1);
      for (int gpu = 0; gpu < 4; ++gpu) {
        const tsdb::Labels temp{{"__name__", "temp"}, {"gpu", std::to_string(gpu)}};
        const tsdb::Labels power{{"__name__", "power"}, {"gpu", std::to_string(gpu)}};
        const tsdb::Labels energy{{"__name__", "energy"}, {"gpu", std::to_string(gpu)}};
        double t = 50, p = 300, e = 0;
        for (int64_t ts = kT0; ts <= kT0 + kSpan; ts += kStep) {
          t = std::clamp(std::round(t + noise(rng)), 30.0, 90.0);
          p = std::round((300 + 40 * noise(rng)) * 1000) / 1000;  // 3 decimals
          e = std::round((e + p * 15) * 1000) / 1000;
          ASSERT_TRUE((*db)->Append(temp, ts, t).ok());
          ASSERT_TRUE((*db)->Append(power, ts, p).ok());
          ASSERT_TRUE((*db)->Append(energy, ts, e).ok());
          end = ts;
        }
      }
      ASSERT_TRUE((*db)->Flush().ok());
    }
    auto db = tsdb::DB::Open(o);
    ASSERT_TRUE(db.ok()) << db.error().message;
    EngineOptions raw_opts;
    raw_opts.sliding_windows = raw_opts.rollups = false;
    const Engine engine, raw(raw_opts);
    const std::string whole = std::to_string(kSpan / 1000) + "s";
    const int64_t l_start = (kT0 + 599'999) / 600'000 * 600'000;
    struct Q {
      bool range;
      std::string expr;
      bool exact;
    };
    const Q queries[] = {
        {false, "max_over_time(temp[" + whole + "])", true},
        {false, "avg_over_time(power[" + whole + "])", false},
        {false, "increase(energy[" + whole + "])", true},
        {true, "max(temp)", true},
        {true, "max_over_time(temp[1h])", true},
        {true, "sum by (gpu) (avg_over_time(power[1h]))", false},
    };
    for (const Q& q : queries) {
      for (int pass = 0; pass < 2; ++pass) {
        auto querier = (*db)->NewQuerier();
        const tsdb::DBStats before = (*db)->stats();
        QueryResult a = q.range ? engine.Range(*querier, q.expr, l_start, end, 600'000)
                                : engine.Instant(*querier, q.expr, end);
        const tsdb::DBStats after = (*db)->stats();
        // 4 series × 9 blocks of 6 h. Stored: the 7 whole blocks' rollup columns (decoded, or
        // from the rollup cache after the first query); the 2 partial edge blocks hold too few
        // samples for a column: their samples are decoded, for their rollups and for the steps'
        // edges (at most 2 decodes each). Not stored: on a series' first query every block is
        // decoded once for the rollups it computes (counted as neither), then the rollup cache
        // answers. Nothing else.
        EXPECT_GE(after.rollups_decoded + after.rollup_cache_hits - before.rollups_decoded -
                      before.rollup_cache_hits,
                  stored || pass == 1 ? 4u * 7 : 0u)
            << q.expr << " pass " << pass;
        EXPECT_LE(after.blocks_decoded - before.blocks_decoded,
                  4u * 2 * 2 + (stored || pass == 1 ? 0 : 4u * 9))
            << q.expr << " pass " << pass;
        QueryResult b = q.range ? raw.Range(*querier, q.expr, l_start, end, 600'000)
                                : raw.Instant(*querier, q.expr, end);
        ASSERT_TRUE(a.ok() && !a.value().series.empty()) << q.expr;
        ExpectSame(a, b, q.exact, q.expr);
        if (HasFatalFailure()) return;
      }
    }
  }
}

}  // namespace
}  // namespace gw::promql
