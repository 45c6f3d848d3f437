// Cost of one collection cycle and of one /metrics rendering, at 8 and 1,024 simulated GPUs.
//
//   build/bin/collect_bench                      (all)
//   build/bin/collect_bench --benchmark_filter=Render
//
// The collector runs in stepped mode over libnvml-sim.so (loaded by dlopen like the real driver).
// "cycle" timings come from the collector's own stopwatch around its fast/slow cycles: they include
// the time spent inside the simulator's NVML functions (reported separately as nvml_s), not the
// simulator's physics, which runs in nvmlSimAdvance between cycles.
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

const char* ScenarioFor(int64_t gpus) {
  return gpus == 8 ? "fleet-8" : "fleet-1024";
}

// One simulated second = one fast cycle (and a slow cycle every tenth).
void BM_CollectSecond(benchmark::State& state) {
  Fleet fleet(ScenarioFor(state.range(0)));
  fleet.Advance(10);  // warm up: every schedule ran at least once
  auto before = fleet.collector->Latest();
  double fast_total = 0, slow_total = 0;
  uint64_t fast_n = 0, slow_n = 0, slow_seen = before->stats.slow_cycles;
  for (auto _ : state) {
    fleet.Advance(1);
    auto s = fleet.collector->Latest();
    fast_total += s->stats.last_fast_cycle_seconds;
    ++fast_n;
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
}
BENCHMARK(BM_CollectSecond)->Arg(8)->Arg(1024)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_Render(benchmark::State& state) {
  Fleet fleet(ScenarioFor(state.range(0)));
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
BENCHMARK(BM_Render)->Arg(8)->Arg(1024)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
