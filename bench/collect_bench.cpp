// Cost of one collection cycle and of one /metrics rendering, at 8 and 1,024 simulated GPUs:
// fleet-8 and fleet-1024 (H100s without MIG or NVLink topology), fleet-8-gpm (8 H100 on NVSwitch,
// GPM and NVLink on) and fleet-1024-mig (1,024 H100 as 7 x 1g.10gb each, GPM per instance).
//
//   build/bin/collect_bench                      (all)
//   build/bin/collect_bench --benchmark_filter=Render
//   build/bin/collect_bench --benchmark_filter=fleet_8_gpm
//
// The collector runs in stepped mode over libnvml-sim.so (loaded by dlopen like the real driver).
// "cycle" timings come from the collector's own stopwatch around its fast/slow cycles: they include
// the time spent inside the simulator's NVML functions (reported separately as nvml_s), not the
// simulator's physics, which runs in nvmlSimAdvance between cycles. fast_overhead_pct compares a
// fast cycle with the sum of the NVML calls it made (the collector's self-metrics), over the
// seconds without a slow cycle: the collector's own work around the calls.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "base/log.h"
#include "collect/collector.h"
#include "collect/exposition.h"
#include "nvml/library.h"

namespace {

using namespace gw;

struct Fleet {
  std::unique_ptr<nvml::Library> library;
  std::unique_ptr<collect::Collector> collector;
  Logger logger{LogLevel::kError};

  explicit Fleet(const std::string& scenario) {
    library = std::move(nvml::Library::Open(GW_SIM_LIBRARY).value());
    if (!library->ConfigureSimulator(scenario, 1, 0).ok() || !library->Init().ok()) std::abort();
    collect::CollectorOptions o;
    o.stepped = true;
    o.memory_peak_interval_s = 0;  // measured on its own below
    collector = std::make_unique<collect::Collector>(library.get(), "", o, &logger);
    collector->Start();
    collector->WaitForFirstCycle(600);
  }
  void Advance(double seconds) {
    if (!collector->Advance(seconds, 600).ok()) std::abort();
  }
  ~Fleet() {
    collector->Stop();
    collector.reset();
  }
};

double NvmlSeconds(const collect::Snapshot& s) {
  double total = 0;
  for (const collect::CallStats& c : s.stats.calls) total += c.seconds_total;
  return total;
}

double NvmlCalls(const collect::Snapshot& s) {
  double total = 0;
  for (const collect::CallStats& c : s.stats.calls) total += static_cast<double>(c.calls);
  return total;
}

// One simulated second = one fast cycle (and a slow cycle every tenth).
void BM_CollectSecond(benchmark::State& state, const char* scenario) {
  Fleet fleet(scenario);
  fleet.Advance(10);  // warm up: every schedule ran at least once
  auto before = fleet.collector->Latest();
  double fast_total = 0, slow_total = 0;
  uint64_t fast_n = 0, slow_n = 0, slow_seen = before->stats.slow_cycles;
  double fast_only_cycle = 0, fast_only_nvml = 0, nvml_seen = NvmlSeconds(*before);
  double fast_only_calls = 0, calls_seen = NvmlCalls(*before);
  for (auto _ : state) {
    fleet.Advance(1);
    auto s = fleet.collector->Latest();
    fast_total += s->stats.last_fast_cycle_seconds;
    ++fast_n;
    const double nvml_now = NvmlSeconds(*s), calls_now = NvmlCalls(*s);
    if (s->stats.slow_cycles == slow_seen) {
      fast_only_cycle += s->stats.last_fast_cycle_seconds;
      fast_only_nvml += nvml_now - nvml_seen;
      fast_only_calls += calls_now - calls_seen;
    }
    nvml_seen = nvml_now;
    calls_seen = calls_now;
    if (s->stats.slow_cycles != slow_seen) {
      slow_total += s->stats.last_slow_cycle_seconds;
      ++slow_n;
      slow_seen = s->stats.slow_cycles;
    }
  }
  auto after = fleet.collector->Latest();
  double nvml_s = 0;
  uint64_t calls = 0;
  for (size_t c = 0; c < collect::kCallCount; ++c) {
    nvml_s += after->stats.calls[c].seconds_total - before->stats.calls[c].seconds_total;
    calls += after->stats.calls[c].calls - before->stats.calls[c].calls;
  }
  state.counters["fast_cycle_us"] = fast_n ? fast_total / fast_n * 1e6 : 0;
  state.counters["slow_cycle_us"] = slow_n ? slow_total / slow_n * 1e6 : 0;
  state.counters["nvml_us_per_s"] = nvml_s / static_cast<double>(state.iterations()) * 1e6;
  state.counters["calls_per_s"] =
      static_cast<double>(calls) / static_cast<double>(state.iterations());
  state.counters["fast_overhead_pct"] =
      fast_only_nvml > 0 ? (fast_only_cycle / fast_only_nvml - 1) * 100 : 0;
  // The same as a fixed cost per call (clock reads, the watchdog's hand-off, storing the value).
  state.counters["overhead_ns_per_call"] =
      fast_only_calls > 0 ? (fast_only_cycle - fast_only_nvml) / fast_only_calls * 1e9 : 0;
}
BENCHMARK_CAPTURE(BM_CollectSecond, fleet_8, "fleet-8")
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_CollectSecond, fleet_1024, "fleet-1024")
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_CollectSecond, fleet_8_gpm, "fleet-8-gpm")
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_CollectSecond, fleet_1024_mig, "fleet-1024-mig")
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

void BM_Render(benchmark::State& state, const char* scenario) {
  Fleet fleet(scenario);
  fleet.Advance(12);
  auto snap = fleet.collector->Latest();
  collect::RenderOptions options;
  std::string out;
  collect::ProcessFigures process = collect::ReadProcessFigures();
  for (auto _ : state) {
    out.clear();
    collect::Render(*snap, collect::Format::kText, options, process, &out);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["bytes"] = static_cast<double>(out.size());
  state.counters["series"] = static_cast<double>(std::count(out.begin(), out.end(), '\n'));
}
BENCHMARK_CAPTURE(BM_Render, fleet_8, "fleet-8")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Render, fleet_1024, "fleet-1024")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Render, fleet_8_gpm, "fleet-8-gpm")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Render, fleet_1024_mig, "fleet-1024-mig")->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
