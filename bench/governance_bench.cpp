// The platform layer's bookkeeping: one UsageLedger::Observe per recorded snapshot, and the
// restart checkpoint (governance/usage.h Checkpoint, Restore; base/file.h WriteFileDurably) that
// `serve` writes once a minute — at a node's size (8 GPUs) with many teams and jobs seen.
//
//   build/bin/governance_bench [--benchmark_filter=...]
//
// Arguments of each benchmark: teams, running jobs (each job holds one of the 8 GPUs, shared
// when there are more jobs than GPUs); the ledger has seen every team and partition before.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "base/file.h"
#include "governance/usage.h"

namespace {

using namespace gw::governance;

Cycle MakeCycle(double t, int teams, int jobs) {
  Cycle c;
  c.now_s = t;
  for (unsigned i = 0; i < 8; ++i) {
    GpuReading r;
    r.index = i;
    r.model = "NVIDIA H100 80GB HBM3";
    r.util_known = true;
    r.util_ratio = 0.1 * i;
    r.power_w = 300;
    r.energy_j = 1e9 + 300 * t;
    c.gpus.push_back(r);
  }
  for (int j = 0; j < jobs; ++j) {
    RunningJob job;
    job.id = std::to_string(100000 + j);
    job.team = "team-" + std::to_string(j % teams);
    job.partition = "part-" + std::to_string(j % 4);
    job.user = "user" + std::to_string(j);
    job.gpus = {static_cast<unsigned>(j % 8)};
    c.jobs.push_back(job);
  }
  return c;
}

UsageLedger Warmed(int teams, int jobs) {
  QuotaSettings q;
  for (int i = 0; i < teams; ++i) q.teams["team-" + std::to_string(i)].gpu_hours = 100;
  PriceSettings p;
  p.default_gpu_hour = 2.5;
  p.energy_per_kwh = 0.2;
  UsageLedger ledger(q, p, 0.05);
  // Every team seen, through a cycle where each holds a GPU.
  ledger.Observe(MakeCycle(1.7e9, teams, std::max(teams, jobs)));
  ledger.Observe(MakeCycle(1.7e9 + 1, teams, jobs));
  return ledger;
}

void Observe(benchmark::State& state) {
  const int teams = static_cast<int>(state.range(0)), jobs = static_cast<int>(state.range(1));
  UsageLedger ledger = Warmed(teams, jobs);
  std::vector<Cycle> cycles;
  for (int i = 0; i < 64; ++i) cycles.push_back(MakeCycle(1.7e9 + 2 + i, teams, jobs));
  size_t i = 0;
  for (auto _ : state) {
    Cycle& c = cycles[i++ % cycles.size()];
    c.now_s += 64;  // time moves on
    ledger.Observe(c);
  }
}

void Checkpoint(benchmark::State& state) {
  UsageLedger ledger = Warmed(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  size_t bytes = 0;
  for (auto _ : state) {
    std::string text = ledger.Checkpoint();
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}

void Restore(benchmark::State& state) {
  const int teams = static_cast<int>(state.range(0)), jobs = static_cast<int>(state.range(1));
  const std::string text = Warmed(teams, jobs).Checkpoint();
  for (auto _ : state) {
    UsageLedger fresh({}, {}, 0.05);
    if (!fresh.Restore(text).ok()) state.SkipWithError("restore failed");
  }
}

// The file write with its two fsyncs, in the working directory's file system.
void WriteDurably(benchmark::State& state) {
  const std::string text =
      Warmed(static_cast<int>(state.range(0)), static_cast<int>(state.range(1))).Checkpoint();
  const std::string path = "governance_bench_checkpoint.json";
  for (auto _ : state) {
    if (!gw::WriteFileDurably(path, text).ok()) state.SkipWithError("write failed");
  }
  ::unlink(path.c_str());
}

void Sizes(benchmark::internal::Benchmark* b) {
  b->Args({4, 8})->Args({50, 64})->Args({200, 256});
}

BENCHMARK(Observe)->Apply(Sizes);
BENCHMARK(Checkpoint)->Apply(Sizes);
BENCHMARK(Restore)->Apply(Sizes);
BENCHMARK(WriteDurably)->Apply(Sizes)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
