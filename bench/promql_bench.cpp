// promql_bench: the query side without HTTP — storage_compare.sh's query set evaluated by the
// engine over a data directory (as `gpuwarden tsdb import` left it) and turned into the JSON body
// the API would send. For profiling (perf, callgrind) and for before/after comparisons.
//   promql_bench DIR END_S [--repeat N] [--only I]
// END_S is the data set's last timestamp in seconds; instant queries run at END_S, range queries
// over [END_S - 5 h, END_S] at 60 s steps, as storage_compare.sh does. Prints per query the first
// (cold block cache) and the median and best of N warm runs, and the size of the JSON.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "http/prom_api.h"
#include "promql/engine.h"
#include "tsdb/db.h"

namespace {

struct Query {
  bool range;
  const char* expr;
};

// bench/storage_compare.sh's set, in its order.
constexpr Query kQueries[] = {
    {false, "max_over_time(gpu_temperature_celsius[1h])"},
    {false, "sum by (gpu) (rate(gpu_energy_joules_total[5m]))"},
    {false, "avg_over_time(gpu_utilization_ratio[1h]) < 0.2"},
    {false, "gpu_memory_used_bytes / gpu_memory_total_bytes > 0.9"},
    {true, "max(gpu_temperature_celsius)"},
    {true, "sum by (gpu) (rate(gpu_energy_joules_total[5m]))"},
    {true, "gpu_power_watts / gpu_power_limit_watts"},
    {true, "quantile_over_time(0.99, gpu_power_watts[1h])"},
};

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gw;
  if (argc < 3) {
    std::fprintf(stderr, "usage: promql_bench DIR END_S [--repeat N] [--only I]\n");
    return 2;
  }
  tsdb::DBOptions o;
  o.dir = argv[1];
  o.retention_ms = o.rollup_retention_ms = 100LL * 365 * 24 * 3600 * 1000;
  const int64_t end_ms = std::atoll(argv[2]) * 1000;
  int repeat = 20;
  int only = -1;
  for (int i = 3; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--only") && i + 1 < argc) only = std::atoi(argv[++i]);
  }
  auto db = tsdb::DB::Open(o);
  if (!db.ok()) {
    std::fprintf(stderr, "%s\n", db.error().message.c_str());
    return 1;
  }
  promql::Engine engine;
  const int64_t start_ms = end_ms - 5 * 3600 * 1000;
  for (int qi = 0; qi < static_cast<int>(std::size(kQueries)); ++qi) {
    if (only >= 0 && qi != only) continue;
    const Query& q = kQueries[qi];
    std::vector<double> times;
    size_t json_bytes = 0;
    for (int i = 0; i <= repeat; ++i) {
      auto querier = (*db)->NewQuerier();
      const auto t0 = std::chrono::steady_clock::now();
      promql::QueryResult r = q.range ? engine.Range(*querier, q.expr, start_ms, end_ms, 60000)
                                      : engine.Instant(*querier, q.expr, end_ms);
      if (!r.ok()) {
        std::fprintf(stderr, "%s: %s\n", q.expr, r.error().message.c_str());
        return 1;
      }
      json_bytes = http::QueryResultJson(r.value()).size();
      times.push_back(Since(t0));
    }
    const double first = times[0];
    times.erase(times.begin());
    std::sort(times.begin(), times.end());
    const double median = times.empty() ? first : times[times.size() / 2];
    const double best = times.empty() ? first : times[0];
    std::printf("%-7s %-55s first %7.3f ms  median %7.3f ms  best %7.3f ms  (%zu B JSON)\n",
                q.range ? "range" : "instant", q.expr, first * 1e3, median * 1e3, best * 1e3,
                json_bytes);
  }
  return 0;
}
