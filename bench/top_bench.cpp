// Cost of `gpuwarden top`'s two steps per refresh, at 8 and 1,024 simulated GPUs: building a frame
// from a snapshot (the poller's thread: decoding, health, history) and drawing it (the UI thread),
// plain (--once) and full-screen.
//
//   build/bin/top_bench
//
// The snapshots come from the real collector over libnvml-sim.so (fleet-8, fleet-1024), stepped
// past a minute so that every slow field is present.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>

#include "base/log.h"
#include "collect/collector.h"
#include "nvml/library.h"
#include "top/frame.h"
#include "top/render.h"

namespace {

using namespace gw;

std::shared_ptr<const collect::Snapshot> FleetSnapshot(const char* scenario) {
  static Logger logger(LogLevel::kError);
  auto library = std::move(nvml::Library::Open(GW_SIM_LIBRARY).value());
  if (!library->ConfigureSimulator(scenario, 1, 0).ok() || !library->Init().ok()) std::abort();
  collect::CollectorOptions o;
  o.stepped = true;
  o.memory_peak_interval_s = 0;
  collect::Collector collector(library.get(), "", o, &logger);
  collector.Start();
  if (!collector.WaitForFirstCycle(600) || !collector.Advance(60, 600).ok()) std::abort();
  auto snapshot = collector.Latest();
  collector.Stop();
  return snapshot;
}

const char* Scenario(int gpus) {
  return gpus > 8 ? "fleet-1024" : "fleet-8";
}

void BM_BuildFrame(benchmark::State& state) {
  top::Reading reading;
  reading.snapshot = FleetSnapshot(Scenario(static_cast<int>(state.range(0))));
  top::FrameBuilder builder("bench");
  for (auto _ : state) benchmark::DoNotOptimize(builder.Build(reading));
  state.counters["gpus"] = static_cast<double>(reading.snapshot->gpus.size());
}
BENCHMARK(BM_BuildFrame)->Arg(8)->Arg(1024)->Unit(benchmark::kMicrosecond);

void BM_Render(benchmark::State& state) {
  top::Reading reading;
  reading.snapshot = FleetSnapshot(Scenario(static_cast<int>(state.range(0))));
  top::FrameBuilder builder("bench");
  auto frame = builder.Build(reading);
  top::FrameRenderer renderer;
  top::RenderOptions options;
  options.width = 132;
  options.screen = state.range(1) != 0;
  options.height = options.screen ? 50 : 0;
  size_t bytes = 0;
  for (auto _ : state) bytes = renderer.Render(*frame, top::ViewState{}, options).size();
  state.counters["bytes"] = static_cast<double>(bytes);
}
// (GPUs, screen): plain draws every GPU; the screen draws what fits in 50 lines.
BENCHMARK(BM_Render)->Args({8, 0})->Args({8, 1})->Args({1024, 0})->Args({1024, 1})->Unit(
    benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
