// long_range_bench: a week of 1 s telemetry for 8 GPUs generated straight into the store
// (through the Appender, not text), then 7-day queries through the real PromQL engine over
// DB::NewQuerier: latency cold (a freshly opened store: empty block cache and SQLite page cache)
// and warm, and the process' RSS after each query. Numbers: docs/benchmarks.md, "Long ranges from
// rollups (issue 15)".
//   long_range_bench DIR [--gpus N] [--series-per-gpu K] [--days D] [--repeat R]
//                        [--cache-mb M] [--no-trim] [--only I] [--chart]
// DIR is built when it holds no store yet (K of the six generated metrics per GPU, at most 6);
// later runs reuse it. --cache-mb sets DBOptions::block_cache_bytes, --no-trim leaves out
// the heap trim the agent's query API does after each query (base/heap.h), to compare.
// --chart measures the console's chart API instead (web::ChartJson, what GET /api/gw/v1/chart
// runs): the last D days of a metric for all GPUs and for one, three ways per chart — "main"
// (its read before rollups: Select, which copies the samples, then Downsample per series, on the
// console's unaligned grid), "raw" (ChartJson with ChartOptions::rollups off) and "rollups" — and
// checks that the raw and rollup answers agree (min, max, count exactly, avg to 1e-9).
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "base/heap.h"
#include "promql/engine.h"
#include "tsdb/db.h"
#include "web/chart.h"

namespace {

using namespace gw;

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// VmRSS and VmHWM of this process, in MB.
void Rss(double* rss_mb, double* hwm_mb) {
  std::ifstream in("/proc/self/status");
  std::string key;
  double kb;
  *rss_mb = *hwm_mb = 0;
  while (in >> key) {
    if (key == "VmRSS:" && in >> kb) *rss_mb = kb / 1024;
    if (key == "VmHWM:" && in >> kb) *hwm_mb = kb / 1024;
  }
}

constexpr const char* kMetrics[] = {"gpu_temperature_celsius", "gpu_power_watts",
                                    "gpu_utilization_ratio",   "gpu_energy_joules_total",
                                    "gpu_sm_clock_hertz",      "gpu_memory_used_bytes"};

// One GPU's metric generator: random walks with the precision real sensors report.
struct Gen {
  std::mt19937_64 rng;
  double temp = 45, power = 250, util = 0.5, energy = 0, mem = 40e9;
  double Next(int metric) {
    std::uniform_real_distribution<double> u(-1, 1);
    switch (metric) {
      case 0:
        temp = std::clamp(temp + (u(rng) > 0.9 ? 1 : u(rng) < -0.9 ? -1 : 0), 30.0, 90.0);
        return temp;
      case 1:
        power = std::clamp(power + u(rng) * 8, 60.0, 700.0);
        return std::round(power * 1000) / 1000;
      case 2:
        util = std::clamp(util + u(rng) * 0.05, 0.0, 1.0);
        return std::round(util * 100) / 100;
      case 3:
        energy += power;
        return std::round(energy);
      case 4:
        return u(rng) > 0.98 ? 1410e6 : 1980e6;
      default:
        mem = std::clamp(mem + std::round(u(rng) * 4) * 1048576, 1e9, 80e9);
        return mem;
    }
  }
};

int Build(const std::string& dir, int gpus, int per_gpu, int days, int64_t end_ms) {
  tsdb::DBOptions o;
  o.dir = dir;
  o.write_wal = false;
  o.retention_ms = o.rollup_retention_ms = 100LL * 365 * 24 * 3600 * 1000;
  auto db = tsdb::DB::Open(o);
  if (!db.ok()) return std::fprintf(stderr, "%s\n", db.error().message.c_str()), 1;
  std::vector<Gen> gens(gpus);
  std::vector<tsdb::SeriesRef> refs;
  for (int g = 0; g < gpus; ++g) {
    gens[g].rng.seed(1000 + g);
    for (int m = 0; m < per_gpu; ++m)
      refs.push_back(*(*db)->GetRef(
          {{"__name__", kMetrics[m]}, {"gpu", std::to_string(g)}, {"instance", "node-1"}}));
  }
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t start_ms = end_ms - days * 86400000LL;
  uint64_t n = 0;
  for (int64_t t = start_ms; t <= end_ms; t += 1000) {
    for (int g = 0; g < gpus; ++g)
      for (int m = 0; m < per_gpu; ++m)
        (void)(*db)->Append(refs[g * per_gpu + m], t, gens[g].Next(m)), ++n;
    if ((t - start_ms) % (3 * 3600000LL) == 0 && t > start_ms && !(*db)->Flush().ok()) return 1;
  }
  if (!(*db)->Flush().ok()) return 1;
  const auto st = (*db)->stats();
  std::printf("built %s: %llu samples, %d series, %.1f s, %.3f bytes/sample\n", dir.c_str(),
              static_cast<unsigned long long>(n), gpus * per_gpu, Since(t0),
              static_cast<double>(st.sqlite_bytes) / static_cast<double>(n));
  return 0;
}

struct Query {
  bool range;
  const char* expr;
  int64_t step_ms;
  int64_t span_ms = 0;  // range queries: the last span_ms of the data (0: all of it)
};

constexpr Query kQueries[] = {
    {false, "max_over_time(gpu_temperature_celsius[7d])", 0},
    {false, "avg_over_time(gpu_utilization_ratio[7d])", 0},
    {true, "max(gpu_temperature_celsius)", 600000},
    {true, "avg_over_time(gpu_power_watts[10m])", 600000},
    {true, "max_over_time(gpu_temperature_celsius[1h])", 3600000},
    {true, "sum by (gpu) (rate(gpu_energy_joules_total[1h]))", 3600000},
    // A dashboard's 5 h panel (the cold-read case): one 6 h block per series.
    {true, "max_over_time(gpu_temperature_celsius[10m])", 60000, 5 * 3600000},
    {true, "avg_over_time(gpu_power_watts[5m])", 60000, 5 * 3600000},
    // The console's and Grafana's 7-day chart of a plain metric (10-minute steps on window
    // starts: the selector's rollup path), and counters over long windows.
    {true, "gpu_temperature_celsius", 600000},
    {true, "increase(gpu_energy_joules_total[1d])", 3600000},
    {false, "rate(gpu_energy_joules_total[7d])", 0},
    {true, "last_over_time(gpu_power_watts[1h])", 600000},
};

// What 1 + `repeat` calls on a store opened afresh left: their times (the first is cold: block
// cache and SQLite's page cache empty; the file is in the OS page cache, as on a server), the
// blocks decoded, and the resident size after them and its peak during them.
struct Runs {
  std::vector<double> times;
  uint64_t decodes = 0;
  double rss = 0, hwm = 0;
  double cold_ms() const { return times[0] * 1e3; }
  double warm_ms() const {  // the median of the warm calls
    std::vector<double> w(times.begin() + 1, times.end());
    std::sort(w.begin(), w.end());
    return w.empty() ? cold_ms() : w[w.size() / 2] * 1e3;
  }
};

// Calls `call(querier, i)` (0 = ok) 1 + `repeat` times, timing each, and trims the heap after
// each as the agent's query API does (base/heap.h) unless `trim` is false.
template <typename Call>
int Measure(const tsdb::DBOptions& o, int repeat, bool trim, Call call, Runs* out) {
  HeapTrimmer trimmer;
  auto db = tsdb::DB::Open(o);
  if (!db.ok()) return std::fprintf(stderr, "%s\n", db.error().message.c_str()), 1;
  std::ofstream("/proc/self/clear_refs") << "5";  // the peak (VmHWM) from here on
  for (int i = 0; i <= repeat; ++i) {
    auto querier = (*db)->NewQuerier();
    const auto t0 = std::chrono::steady_clock::now();
    if (call(*querier, i) != 0) return 1;
    out->times.push_back(Since(t0));
    querier.reset();
    if (trim) trimmer.MaybeTrim();
  }
  out->decodes = (*db)->stats().blocks_decoded;
  db->reset();
  Rss(&out->rss, &out->hwm);
  return 0;
}

// Runs `q` (Measure) and prints its line.
int RunQuery(const tsdb::DBOptions& o, const Query& q, bool rollups, int64_t start_ms,
             int64_t end_ms, int repeat, bool trim, std::vector<promql::Series>* result) {
  promql::EngineOptions eo;
  eo.rollups = rollups;
  promql::Engine engine(eo);
  size_t points = 0;
  Runs runs;
  auto call = [&](tsdb::Querier& querier, int i) {
    promql::QueryResult r =
        q.range ? engine.Range(querier, q.expr, q.span_ms > 0 ? end_ms - q.span_ms : start_ms,
                               end_ms, q.step_ms)
                : engine.Instant(querier, q.expr, end_ms);
    if (!r.ok()) return std::fprintf(stderr, "%s: %s\n", q.expr, r.error().message.c_str()), 1;
    points = 0;
    for (const auto& s : r.value().series) points += s.points.size();
    if (i == 0) *result = std::move(r.value().series);
    return 0;
  };
  if (Measure(o, repeat, trim, call, &runs) != 0) return 1;
  std::printf(
      "%-7s %-50s %-7s cold %8.2f ms  warm %8.2f ms  (%zu points, %llu block decodes)  "
      "RSS %.0f MB, peak %.0f MB\n",
      q.range ? "range" : "instant", q.expr, rollups ? "rollups" : "raw", runs.cold_ms(),
      runs.warm_ms(), points, static_cast<unsigned long long>(runs.decodes), runs.rss, runs.hwm);
  return 0;
}

// The console's chart API (--chart). `how`: 0 main's read (Select + Downsample), 1 ChartJson raw,
// 2 ChartJson with rollups. Same store handling and output as RunQuery.
struct Chart {
  const char* metric;
  const char* gpu;
  int points;
};

constexpr Chart kCharts[] = {
    // What the GPU page asked for 7 days before this change (a 1,400-pixel-wide page: 660
    // buckets of 916.4 s), and what it asks now (buckets of whole 5-minute windows: 504 x 20 min).
    {"gpu_temperature_celsius", "3", 660},
    {"gpu_temperature_celsius", "3", 504},
    {"gpu_power_watts", "", 660},
    {"gpu_power_watts", "", 504},
};

int RunChart(const tsdb::DBOptions& o, const Chart& c, int how, int64_t start_ms, int64_t end_ms,
             int repeat, bool trim, std::vector<web::ChartSeries>* result) {
  static const char* kHow[] = {"main", "raw", "rollups"};
  const web::ChartQuery q{
      .metric = c.metric, .gpu = c.gpu, .start_ms = start_ms, .end_ms = end_ms, .points = c.points};
  size_t bytes = 0;
  Runs runs;
  auto call = [&](tsdb::Querier& querier, int) {
    if (how == 0) {
      std::vector<tsdb::Matcher> m{
          *tsdb::Matcher::Make(tsdb::MatchType::kEqual, "__name__", q.metric)};
      if (!q.gpu.empty()) m.push_back(*tsdb::Matcher::Make(tsdb::MatchType::kEqual, "gpu", q.gpu));
      std::vector<tsdb::SeriesData> series;
      if (!querier.Select(m, start_ms, end_ms - 1, &series).ok()) return 1;
      web::ChartBuckets b;
      bytes = 0;
      for (const auto& s : series) {
        web::Downsample(s.samples, start_ms, end_ms, q.points, &b);
        bytes += b.count.size();
      }
      return 0;
    }
    std::string body;
    Status st = web::ChartJson(&querier, q, &body, {.rollups = how == 2});
    if (!st.ok()) return std::fprintf(stderr, "%s\n", st.message().c_str()), 1;
    bytes = body.size();
    return 0;
  };
  if (Measure(o, repeat, trim, call, &runs) != 0) return 1;
  if (how != 0) {  // the answer, for the comparison, from a store opened again (not measured)
    auto again = tsdb::DB::Open(o);
    if (!again.ok() ||
        !web::ChartSeriesOf((*again)->NewQuerier().get(), q, {.rollups = how == 2}, result).ok())
      return 1;
    again->reset();
    malloc_trim(0);  // so the next chart's peak starts from what the agent would hold
  }
  std::printf(
      "chart   %-26s gpu=%-2s points=%-5d %-7s cold %8.2f ms  warm %8.2f ms  (%zu B, %llu block "
      "decodes)  RSS %.0f MB, peak %.0f MB\n",
      c.metric, c.gpu, c.points, kHow[how], runs.cold_ms(), runs.warm_ms(), bytes,
      static_cast<unsigned long long>(runs.decodes), runs.rss, runs.hwm);
  return 0;
}

int RunCharts(const tsdb::DBOptions& o, int64_t start_ms, int64_t end_ms, int repeat, bool trim) {
  for (const Chart& c : kCharts) {
    std::vector<web::ChartSeries> raw, roll;
    if (RunChart(o, c, 0, start_ms, end_ms, repeat, trim, &raw) != 0 ||
        RunChart(o, c, 1, start_ms, end_ms, repeat, trim, &raw) != 0 ||
        RunChart(o, c, 2, start_ms, end_ms, repeat, trim, &roll) != 0)
      return 1;
    bool same = raw.size() == roll.size();
    double worst = 0;
    for (size_t i = 0; same && i < raw.size(); ++i) {
      const web::ChartBuckets &a = raw[i].buckets, &b = roll[i].buckets;
      same =
          raw[i].labels == roll[i].labels && a.count == b.count && a.min == b.min && a.max == b.max;
      for (size_t k = 0; same && k < a.count.size(); ++k)
        if (a.count[k] && a.sum[k] != b.sum[k])
          worst = std::max(worst,
                           std::fabs(a.sum[k] - b.sum[k]) / std::max(std::fabs(a.sum[k]), 1e-300));
    }
    std::printf("        rollups vs raw: %s, largest relative difference of a sum %.1e\n",
                same ? "same series, counts, min and max" : "DIFFERENT", worst);
    if (!same || worst > 1e-9) return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: long_range_bench DIR [--gpus N] [--series-per-gpu K] [--days D] "
                 "[--repeat R] [--cache-mb M] [--no-trim] [--only I] [--chart]\n");
    return 2;
  }
  const std::string dir = argv[1];
  int gpus = 8, per_gpu = 4, days = 7, repeat = 5, only = -1;
  bool trim = true, charts = false;
  tsdb::DBOptions o;
  o.dir = dir;
  o.retention_ms = o.rollup_retention_ms = 100LL * 365 * 24 * 3600 * 1000;
  for (int i = 2; i < argc; ++i) {
    auto next = [&] { return i + 1 < argc ? std::atoi(argv[++i]) : 0; };
    if (!std::strcmp(argv[i], "--gpus")) gpus = next();
    if (!std::strcmp(argv[i], "--series-per-gpu")) per_gpu = std::min(6, next());
    if (!std::strcmp(argv[i], "--days")) days = next();
    if (!std::strcmp(argv[i], "--repeat")) repeat = next();
    if (!std::strcmp(argv[i], "--only")) only = next();
    if (!std::strcmp(argv[i], "--cache-mb"))
      o.block_cache_bytes = static_cast<size_t>(next()) << 20;
    if (!std::strcmp(argv[i], "--no-trim")) trim = false;
    if (!std::strcmp(argv[i], "--chart")) charts = true;
  }
  const int64_t end_ms = 1767225600000 + days * 86400000LL;  // 2026-01-01 + D days
  if (!std::filesystem::exists(dir + "/tsdb.sqlite") &&
      Build(dir, gpus, per_gpu, days, end_ms) != 0)
    return 1;
  const int64_t start_ms = end_ms - days * 86400000LL;
  double rss, hwm;
  Rss(&rss, &hwm);
  std::printf("cache %zu MiB, heap trim after queries %s; RSS at start %.0f MB\n",
              o.block_cache_bytes >> 20, trim ? "on" : "off", rss);
  if (charts) return RunCharts(o, start_ms, end_ms, repeat, trim);
  for (int qi = 0; qi < static_cast<int>(std::size(kQueries)); ++qi) {
    if (only >= 0 && qi != only) continue;
    std::vector<promql::Series> raw, from_rollups;
    if (RunQuery(o, kQueries[qi], false, start_ms, end_ms, repeat, trim, &raw) != 0 ||
        RunQuery(o, kQueries[qi], true, start_ms, end_ms, repeat, trim, &from_rollups) != 0)
      return 1;
    // The two paths must agree (sums to float rounding).
    double worst = 0;
    bool same_shape = raw.size() == from_rollups.size();
    for (size_t i = 0; same_shape && i < raw.size(); ++i) {
      same_shape = raw[i].labels == from_rollups[i].labels &&
                   raw[i].points.size() == from_rollups[i].points.size();
      for (size_t k = 0; same_shape && k < raw[i].points.size(); ++k) {
        const double a = raw[i].points[k].v, b = from_rollups[i].points[k].v;
        same_shape = raw[i].points[k].t_ms == from_rollups[i].points[k].t_ms;
        if (a != b) worst = std::max(worst, std::fabs(a - b) / std::max(std::fabs(a), 1e-300));
      }
    }
    std::printf("        rollups vs raw: %s, largest relative difference %.1e\n",
                same_shape ? "same series and points" : "DIFFERENT series or points", worst);
    if (!same_shape || worst > 1e-9) return 1;
  }
  return 0;
}
