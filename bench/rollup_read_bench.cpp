// rollup_read_bench: the long-range read path alone, on a data directory as `gpuwarden tsdb
// import` left it (bench/storage_compare.sh's), without HTTP: per metric, the Querier's
// SelectRollups over the whole set (what every 7-day query reads first) and storage_compare.sh's
// three 7-day queries through the engine, each with the rollup path and without (raw), checking
// that both give the same answer. For before/after comparisons (docs/benchmarks.md, issue 15).
//   rollup_read_bench DIR METRIC START_S END_S [--repeat N]
// START_S/END_S: the set's first and last timestamp in seconds. Prints per read the first run
// (a store opened afresh: empty caches) and the median of N warm runs, with the rollup blobs and
// blocks decoded over all runs.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "promql/engine.h"
#include "tsdb/db.h"

namespace {

using namespace gw;

double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Runs `fn` on a store opened afresh (cold), then `repeat` times more (warm); prints one line.
template <class Fn>
int Measure(const std::string& dir, const std::string& what, int repeat, Fn fn) {
  tsdb::DBOptions o;
  o.dir = dir;
  o.read_only = true;
  auto db = tsdb::DB::Open(o);
  if (!db.ok()) return std::fprintf(stderr, "%s\n", db.error().message.c_str()), 1;
  std::vector<double> warm;
  double cold = 0;
  for (int i = 0; i <= repeat; ++i) {
    auto q = (*db)->NewQuerier();
    const auto t0 = std::chrono::steady_clock::now();
    if (fn(*q, i) != 0) return 1;
    (i == 0 ? cold : warm.emplace_back()) = MsSince(t0);
  }
  const tsdb::DBStats st = (*db)->stats();
  std::printf("%-62s cold %8.2f ms  warm %8.2f ms  (%llu rollup decodes, %llu block decodes)\n",
              what.c_str(), cold, Median(warm), static_cast<unsigned long long>(st.rollups_decoded),
              static_cast<unsigned long long>(st.blocks_decoded));
  return 0;
}

bool Same(const std::vector<promql::Series>& a, const std::vector<promql::Series>& b,
          double* worst) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].labels != b[i].labels || a[i].points.size() != b[i].points.size()) return false;
    for (size_t k = 0; k < a[i].points.size(); ++k) {
      const auto &x = a[i].points[k], &y = b[i].points[k];
      if (x.t_ms != y.t_ms) return false;
      const double d = std::abs(x.v - y.v) / std::max(1.0, std::abs(y.v));
      if (!(d <= 1e-9)) return false;
      *worst = std::max(*worst, d);
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: rollup_read_bench DIR METRIC START_S END_S [--repeat N]\n");
    return 2;
  }
  const std::string dir = argv[1], metric = argv[2];
  const int64_t start_ms = std::atoll(argv[3]) * 1000, end_ms = std::atoll(argv[4]) * 1000;
  int repeat = 7;
  for (int i = 5; i + 1 < argc; i += 2)
    if (std::strcmp(argv[i], "--repeat") == 0) repeat = std::max(1, std::atoi(argv[i + 1]));

  const std::vector<tsdb::Matcher> m{
      *tsdb::Matcher::Make(tsdb::MatchType::kEqual, "__name__", metric)};
  size_t windows = 0;
  int rc =
      Measure(dir, "SelectRollups " + metric + " (whole set)", repeat, [&](tsdb::Querier& q, int) {
        std::vector<tsdb::SeriesRollups> out;
        bool supported = false;
        if (!q.SelectRollups(m, start_ms, end_ms, &out, &supported).ok()) return 1;
        windows = 0;
        for (const auto& s : out) windows += s.rollups.size();
        return 0;
      });
  std::printf("  %zu windows\n", windows);
  // storage_compare.sh's 7-day queries: the whole set as the window; longrange from the set's
  // first 10-minute boundary at 10-minute steps.
  const int64_t dur_s = (end_ms - start_ms) / 1000;
  const int64_t l_start_ms = (start_ms + 599'999) / 600'000 * 600'000;
  struct Q {
    bool range;
    std::string expr;
  };
  const Q queries[] = {
      {false, "max_over_time(" + metric + "[" + std::to_string(dur_s) + "s])"},
      {false, "avg_over_time(" + metric + "[" + std::to_string(dur_s) + "s])"},
      {true, "max(" + metric + ")"},
      {true, "max_over_time(" + metric + "[1h])"},
  };
  for (const Q& q : queries) {
    std::vector<promql::Series> results[2];
    for (int rollups = 1; rollups >= 0 && rc == 0; --rollups) {
      promql::EngineOptions eo;
      eo.rollups = rollups != 0;
      promql::Engine engine(eo);
      rc = Measure(
          dir, std::string(q.range ? "range " : "instant ") + q.expr + (rollups ? "" : " (raw)"),
          rollups ? repeat : 1, [&](tsdb::Querier& querier, int i) {
            promql::QueryResult r = q.range
                                        ? engine.Range(querier, q.expr, l_start_ms, end_ms, 600'000)
                                        : engine.Instant(querier, q.expr, end_ms);
            if (!r.ok())
              return std::fprintf(stderr, "%s: %s\n", q.expr.c_str(), r.error().message.c_str()), 1;
            if (i == 0) results[rollups] = std::move(r.value().series);
            return 0;
          });
    }
    if (rc != 0) return rc;
    double worst = 0;
    if (!Same(results[1], results[0], &worst)) {
      std::fprintf(stderr, "%s: the rollup and raw answers differ\n", q.expr.c_str());
      return 1;
    }
    std::printf("  rollups == raw (largest relative difference %.2g)\n", worst);
  }
  return rc;
}
