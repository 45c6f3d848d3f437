// promql_bench: the query side without HTTP — storage_compare.sh's query set evaluated by the
// engine over a data directory (as `gpuwarden tsdb import` left it) and turned into the JSON body
// the API would send. For profiling (perf, callgrind) and for before/after comparisons.
//   promql_bench DIR END_S [--repeat N] [--only I] [--start S] [--query range|EXPR]...
// END_S is the data set's last timestamp in seconds; instant queries run at END_S, range queries
// over [END_S - 5 h, END_S] (from START_S when given: storage_compare.sh starts at the set's first
// second when it is shorter than 5 h) at 60 s steps, as storage_compare.sh does. --query
// ("range|EXPR", "instant|EXPR" or "longrange|EXPR": from --start to END_S at 10-minute steps,
// as storage_compare.sh's longrange rows; repeatable) replaces the built-in list. Prints per query
// the first (cold block cache) and the median and best of N warm runs, the median of the engine
// alone (without the JSON), and the size of the JSON.
//   promql_bench --synthetic [--repeat N]
// Sliding windows and rollups (issue 15) on generated data held in memory (no data directory):
// 8 GPUs at 1 s for 7 days (temperature, power, utilization, an energy counter) and 8 throttle
// reasons per GPU for the last 6 hours, served zero-copy with precomputed 5-minute rollups (what
// a store with fast rollup reads gives). Each query runs step by step over raw samples (before),
// with sliding windows, and with sliding windows and rollups; the answers are checked to agree.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cmath>
#include <ctime>
#include <map>
#include <memory>
#include <random>

#include "base/heap.h"
#include "http/prom_api.h"
#include "promql/engine.h"
#include "tsdb/db.h"
#include "tsdb/rollup.h"

namespace {

struct Query {
  bool range;
  const char* expr;
  bool longrange = false;  // from --start (rounded up to 10 min) to END_S at 10-minute steps
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

// Series in memory handed out without copies, with their rollups computed once.
class SyntheticQuerier : public gw::tsdb::Querier {
 public:
  struct One {
    gw::tsdb::Labels labels;
    std::shared_ptr<const std::vector<gw::tsdb::Sample>> samples;
    std::vector<gw::tsdb::Rollup> rollups;
  };
  void Add(gw::tsdb::Labels labels, std::vector<gw::tsdb::Sample> samples) {
    One one{std::move(labels), nullptr, {}};
    gw::tsdb::AddToRollups(samples, &one.rollups);
    one.samples = std::make_shared<const std::vector<gw::tsdb::Sample>>(std::move(samples));
    series_.push_back(std::move(one));
    std::sort(series_.begin(), series_.end(),
              [](const One& a, const One& b) { return a.labels < b.labels; });
  }
  gw::Status Select(const std::vector<gw::tsdb::Matcher>& m, int64_t mint, int64_t maxt,
                    std::vector<gw::tsdb::SeriesData>* out) override {
    std::vector<gw::tsdb::SeriesRuns> runs;
    gw::Status st = SelectRuns(m, mint, maxt, &runs);
    out->clear();
    for (const auto& r : runs) {
      gw::tsdb::SeriesData d{r.labels, {}};
      for (const auto& run : r.runs) d.samples.insert(d.samples.end(), run.begin(), run.end());
      out->push_back(std::move(d));
    }
    return st;
  }
  gw::Status SelectRuns(const std::vector<gw::tsdb::Matcher>& m, int64_t mint, int64_t maxt,
                        std::vector<gw::tsdb::SeriesRuns>* out) override {
    out->clear();
    for (const One& s : series_) {
      if (!Matches(s.labels, m)) continue;
      auto by_t = [](const gw::tsdb::Sample& x, int64_t t) { return x.t_ms < t; };
      auto lo = std::lower_bound(s.samples->begin(), s.samples->end(), mint, by_t);
      auto hi = std::lower_bound(lo, s.samples->end(), maxt + 1, by_t);
      if (lo == hi) continue;
      gw::tsdb::SeriesRuns r;
      r.labels = s.labels;
      r.runs.emplace_back(&*lo, static_cast<size_t>(hi - lo));
      r.owners.push_back(s.samples);
      out->push_back(std::move(r));
    }
    return gw::Status::Ok();
  }
  gw::Status SelectRollups(const std::vector<gw::tsdb::Matcher>& m, int64_t mint, int64_t maxt,
                           std::vector<gw::tsdb::SeriesRollups>* out, bool* supported) override {
    out->clear();
    *supported = true;
    for (const One& s : series_) {
      if (!Matches(s.labels, m)) continue;
      gw::tsdb::SeriesRollups r{s.labels, {}};
      for (const auto& x : s.rollups)
        if (x.t_ms >= mint && x.t_ms + gw::tsdb::kRollupWindowMs <= maxt + 1)
          r.rollups.push_back(x);
      if (!r.rollups.empty()) out->push_back(std::move(r));
    }
    return gw::Status::Ok();
  }
  gw::Status LabelNames(const std::vector<std::vector<gw::tsdb::Matcher>>&, int64_t, int64_t,
                        std::vector<std::string>*) override {
    return gw::Status::Ok();
  }
  gw::Status LabelValues(const std::string&, const std::vector<std::vector<gw::tsdb::Matcher>>&,
                         int64_t, int64_t, std::vector<std::string>*) override {
    return gw::Status::Ok();
  }

 private:
  static bool Matches(const gw::tsdb::Labels& l, const std::vector<gw::tsdb::Matcher>& ms) {
    for (const auto& m : ms) {
      std::string_view v;
      for (const auto& x : l)
        if (x.name == m.name()) v = x.value;
      if (!m.Matches(v)) return false;
    }
    return true;
  }
  std::vector<One> series_;
};

// A whole hour, as Grafana aligns a range query's start and end to its step.
constexpr int64_t kSynthEndMs = 1'699'999'200'000 + 7LL * 86400 * 1000;

void Generate(SyntheticQuerier* q) {
  std::mt19937_64 rng(15);
  std::normal_distribution<double> noise(0, 1);
  const int64_t week = 7LL * 86400 * 1000, six_h = 6LL * 3600 * 1000;
  for (int gpu = 0; gpu < 8; ++gpu) {
    const std::string g = std::to_string(gpu);
    std::vector<gw::tsdb::Sample> temp, power, util, energy;
    double t_c = 50, p_w = 300, u = 0.5, e_j = 0;
    for (int64_t t = kSynthEndMs - week; t <= kSynthEndMs; t += 1000) {
      t_c = std::clamp(t_c + 0.05 * noise(rng), 30.0, 90.0);
      p_w = std::clamp(p_w + 2 * noise(rng), 60.0, 700.0);
      u = std::clamp(u + 0.01 * noise(rng), 0.0, 1.0);
      e_j += p_w;
      temp.push_back({t, std::round(t_c)});
      power.push_back({t, std::round(p_w * 100) / 100});
      util.push_back({t, std::round(u * 100) / 100});
      energy.push_back({t, std::round(e_j)});
    }
    q->Add({{"__name__", "gpu_temperature_celsius"}, {"gpu", g}}, std::move(temp));
    q->Add({{"__name__", "gpu_power_watts"}, {"gpu", g}}, std::move(power));
    q->Add({{"__name__", "gpu_utilization_ratio"}, {"gpu", g}}, std::move(util));
    q->Add({{"__name__", "gpu_energy_joules_total"}, {"gpu", g}}, std::move(energy));
    for (int reason = 0; reason < 8; ++reason) {
      std::vector<gw::tsdb::Sample> thr;
      double v = 0;
      for (int64_t t = kSynthEndMs - six_h; t <= kSynthEndMs; t += 1000) {
        if (std::uniform_real_distribution<double>(0, 1)(rng) < 0.01) v = v > 0 ? 0 : 1;
        thr.push_back({t, v});
      }
      q->Add({{"__name__", "gpu_clock_throttle_active"},
              {"gpu", g},
              {"reason", "r" + std::to_string(reason)}},
             std::move(thr));
    }
  }
}

struct SynthQuery {
  bool range;
  int64_t range_s, step_s;  // range queries: [end - range_s, end] at step_s
  const char* expr;
};

constexpr SynthQuery kSynthQueries[] = {
    {true, 5 * 3600, 60, "max_over_time(gpu_temperature_celsius[10m])"},
    {true, 5 * 3600, 60, "sum by (reason) (avg_over_time(gpu_clock_throttle_active[5m]))"},
    {true, 5 * 3600, 60, "quantile_over_time(0.99, gpu_power_watts[10m])"},
    {true, 5 * 3600, 60, "sum by (gpu) (rate(gpu_energy_joules_total[5m]))"},
    {false, 0, 0, "max_over_time(gpu_temperature_celsius[7d])"},
    {false, 0, 0, "avg_over_time(gpu_utilization_ratio[7d])"},
    {true, 7 * 86400, 600, "avg_over_time(gpu_utilization_ratio[1d])"},
    {true, 7 * 86400, 3600, "max_over_time(gpu_temperature_celsius[1d])"},
};

int RunSynthetic(int repeat, int only) {
  using namespace gw;
  SyntheticQuerier q;
  const auto g0 = std::chrono::steady_clock::now();
  Generate(&q);
  std::printf("generated in %.1f s\n", Since(g0));
  promql::EngineOptions before, sliding, both;
  before.sliding_windows = before.rollups = false;
  sliding.rollups = false;
  const promql::EngineOptions* modes[] = {&before, &sliding, &both};
  for (int qi = 0; qi < static_cast<int>(std::size(kSynthQueries)); ++qi) {
    if (only >= 0 && qi != only) continue;
    const SynthQuery& sq = kSynthQueries[qi];
    double med[3], cpu[3];
    std::string json[3];
    for (int m = 0; m < 3; ++m) {
      promql::Engine engine(*modes[m]);
      std::vector<double> times, cpus;
      // Step by step over a week of windows is slow: fewer runs there.
      const int n = m == 0 && sq.range && sq.range_s > 86400 ? std::min(repeat, 3) : repeat;
      for (int i = 0; i < n; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        const std::clock_t c0 = std::clock();
        promql::QueryResult r = sq.range ? engine.Range(q, sq.expr, kSynthEndMs - sq.range_s * 1000,
                                                        kSynthEndMs, sq.step_s * 1000)
                                         : engine.Instant(q, sq.expr, kSynthEndMs);
        times.push_back(Since(t0));
        cpus.push_back(static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC);
        if (!r.ok()) {
          std::fprintf(stderr, "%s: %s\n", sq.expr, r.error().message.c_str());
          return 1;
        }
        json[m] = http::QueryResultJson(r.value());
      }
      std::sort(times.begin(), times.end());
      med[m] = times[times.size() / 2];
      std::sort(cpus.begin(), cpus.end());
      cpu[m] = cpus[cpus.size() / 2];
    }
    std::printf(
        "%-7s %-62s before %9.3f ms (cpu %9.3f)  sliding %8.3f ms (cpu %8.3f)  +rollups %8.3f ms "
        "(cpu %8.3f)  %s\n",
        sq.range ? "range" : "instant", sq.expr, med[0] * 1e3, cpu[0] * 1e3, med[1] * 1e3,
        cpu[1] * 1e3, med[2] * 1e3, cpu[2] * 1e3,
        json[0] == json[1] && json[1] == json[2] ? "same JSON" : "JSON DIFFERS (rounding?)");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gw;
  // The agent's heap policy (src/cli/main.cpp), so that cold and warm numbers are the agent's.
  ExecWithHugePageHeap(argv);
  PadHeapsForHugePages();
  LimitMallocArenas(2);
  KeepFreedHeap(size_t{64} << 20, size_t{4} << 20);
  if (argc >= 2 && !std::strcmp(argv[1], "--synthetic")) {
    int repeat = 9, only = -1;
    for (int i = 2; i + 1 < argc; ++i) {
      if (!std::strcmp(argv[i], "--repeat")) repeat = std::max(1, std::atoi(argv[++i]));
      if (!std::strcmp(argv[i], "--only")) only = std::atoi(argv[++i]);
    }
    return RunSynthetic(repeat, only);
  }
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: promql_bench DIR END_S [--repeat N] [--only I] | --synthetic [--repeat N] "
                 "[--only I]\n");
    return 2;
  }
  tsdb::DBOptions o;
  o.dir = argv[1];
  o.retention_ms = o.rollup_retention_ms = 100LL * 365 * 24 * 3600 * 1000;
  const int64_t end_ms = std::atoll(argv[2]) * 1000;
  int repeat = 20;
  int only = -1;
  int64_t start_ms = end_ms - 5 * 3600 * 1000;
  int64_t set_start_ms = -1;       // --start as given: the longrange queries' span begins there
  std::vector<std::string> exprs;  // --query: owns the strings the Query entries point into
  for (int i = 3; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--only") && i + 1 < argc) only = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--start") && i + 1 < argc) {
      set_start_ms = std::atoll(argv[++i]) * 1000;
      start_ms = std::max<int64_t>(start_ms, set_start_ms);
    }
    if (!std::strcmp(argv[i], "--query") && i + 1 < argc) exprs.emplace_back(argv[++i]);
  }
  std::vector<Query> queries(std::begin(kQueries), std::end(kQueries));
  if (!exprs.empty()) {
    queries.clear();
    for (const std::string& e : exprs) {
      const size_t bar = e.find('|');
      const std::string kind = bar == std::string::npos ? "" : e.substr(0, bar);
      if (kind != "range" && kind != "instant" && kind != "longrange") {
        std::fprintf(stderr, "--query wants range|EXPR, longrange|EXPR or instant|EXPR, got %s\n",
                     e.c_str());
        return 2;
      }
      queries.push_back(Query{kind != "instant", e.c_str() + bar + 1, kind == "longrange"});
    }
  }
  auto db = tsdb::DB::Open(o);
  if (!db.ok()) {
    std::fprintf(stderr, "%s\n", db.error().message.c_str());
    return 1;
  }
  promql::Engine engine;
  for (int qi = 0; qi < static_cast<int>(queries.size()); ++qi) {
    if (only >= 0 && qi != only) continue;
    const Query& q = queries[qi];
    std::vector<double> times, engine_times;
    size_t json_bytes = 0;
    for (int i = 0; i <= repeat; ++i) {
      auto querier = (*db)->NewQuerier();
      const auto t0 = std::chrono::steady_clock::now();
      // longrange: storage_compare.sh's whole-set span at 10-minute steps.
      const int64_t long_start =
          ((set_start_ms < 0 ? start_ms : set_start_ms) + 599'999) / 600'000 * 600'000;
      promql::QueryResult r = q.longrange
                                  ? engine.Range(*querier, q.expr, long_start, end_ms, 600'000)
                              : q.range ? engine.Range(*querier, q.expr, start_ms, end_ms, 60000)
                                        : engine.Instant(*querier, q.expr, end_ms);
      if (!r.ok()) {
        std::fprintf(stderr, "%s: %s\n", q.expr, r.error().message.c_str());
        return 1;
      }
      engine_times.push_back(Since(t0));
      json_bytes = http::QueryResultJson(r.value()).size();
      times.push_back(Since(t0));
    }
    const double first = times[0];
    times.erase(times.begin());
    engine_times.erase(engine_times.begin());
    std::sort(times.begin(), times.end());
    std::sort(engine_times.begin(), engine_times.end());
    const double median = times.empty() ? first : times[times.size() / 2];
    const double best = times.empty() ? first : times[0];
    const double engine_median = engine_times.empty() ? 0 : engine_times[engine_times.size() / 2];
    std::printf(
        "%-7s %-55s first %7.3f ms  median %7.3f ms  best %7.3f ms  engine %7.3f ms  (%zu B "
        "JSON)\n",
        q.longrange ? "lrange"
        : q.range   ? "range"
                    : "instant",
        q.expr, first * 1e3, median * 1e3, best * 1e3, engine_median * 1e3, json_bytes);
  }
  return 0;
}
