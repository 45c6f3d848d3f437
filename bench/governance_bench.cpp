// The platform layer's bookkeeping: one UsageLedger::Observe per recorded snapshot, and the
// restart checkpoint (governance/usage.h Checkpoint, Restore; base/file.h WriteFileDurably) that
// `serve` writes once a minute — at a node's size (8 GPUs) with many teams and jobs seen.
//
//   build/bin/governance_bench [--benchmark_filter=...]
//
// Arguments of the ledger benchmarks: teams, running jobs (each job holds one of the 8 GPUs,
// shared when there are more jobs than GPUs); the ledger has seen every team and partition
// before. CopySlurmTable and PoolObserve: the squeue table's size (a cluster's queue).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "base/file.h"
#include "governance/pool.h"
#include "governance/usage.h"
#include "jobs/slurm.h"

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

// A cluster's squeue table: `n` jobs over 4 partitions, 40 % pending, the rest running; every
// running job started within the last day (so the 1 d queue-wait window holds them all).
std::map<std::string, gw::jobs::SlurmJob> SlurmTable(int n, double now) {
  std::map<std::string, gw::jobs::SlurmJob> jobs;
  for (int i = 0; i < n; ++i) {
    gw::jobs::SlurmJob j;
    j.id = std::to_string(500000 + i);
    j.name = "train-resnet-" + std::to_string(i);
    j.user = "user" + std::to_string(i % 97);
    j.account = "account-" + std::to_string(i % 13);
    j.partition = "gpu-" + std::to_string(i % 4);
    j.qos = "normal";
    j.comment = "experiment sweep " + std::to_string(i);
    j.submit_time = static_cast<std::int64_t>(now) - 90000 + i;
    j.eligible_time = j.submit_time;
    if (i % 5 < 2) {
      j.state = gw::jobs::JobState::kPending;
      j.state_text = "PENDING";
      j.state_reason = "Resources";
      j.gpus.per_node = 2;
    } else {
      j.state = gw::jobs::JobState::kRunning;
      j.state_text = "RUNNING";
      j.nodes = "node" + std::to_string(i % 64);
      j.start_time = j.eligible_time + 30 + i % 600;
      j.end_time = j.start_time + 86400;
      j.gpu_indices = {static_cast<unsigned>(i % 8)};
      j.tres_alloc = "cpu=8,mem=64G,node=1,billing=8,gres/gpu=1";
      j.gpus.total = 1;
    }
    jobs[j.id] = j;
  }
  return jobs;
}

// What GovernanceService did per snapshot before: copy the poller's whole table.
void CopySlurmTable(benchmark::State& state) {
  const auto table = SlurmTable(static_cast<int>(state.range(0)), 1.7e9);
  for (auto _ : state) {
    std::map<std::string, gw::jobs::SlurmJob> copy = table;
    benchmark::DoNotOptimize(copy);
  }
}

// One snapshot's pool figures with an unchanged table (squeue polls are seconds apart): told so
// by the poller's version (state.range(1) = 1), or not (0: the whole table is read every time,
// as before the version was passed).
void PoolObserve(benchmark::State& state) {
  const double now = 1.7e9;
  const auto table = SlurmTable(static_cast<int>(state.range(0)), now);
  const std::uint64_t version = static_cast<std::uint64_t>(state.range(1));
  PoolSettings settings;
  settings.windows_s = {3600, 86400};
  PoolTracker pools(settings);
  pools.SetCapacity({{"gpu-0", 512}, {"gpu-1", 512}, {"gpu-2", 512}, {"gpu-3", 512}});
  double t = now;
  pools.Observe(table, t, version);
  for (auto _ : state) {
    t += 1;
    pools.Observe(table, t, version);
  }
}

void Sizes(benchmark::internal::Benchmark* b) {
  b->Args({4, 8})->Args({50, 64})->Args({200, 256});
}

BENCHMARK(Observe)->Apply(Sizes);
BENCHMARK(Checkpoint)->Apply(Sizes);
BENCHMARK(Restore)->Apply(Sizes);
BENCHMARK(WriteDurably)->Apply(Sizes)->UseRealTime();
BENCHMARK(CopySlurmTable)->Arg(500)->Arg(5000);
BENCHMARK(PoolObserve)->Args({500, 0})->Args({5000, 0})->Args({500, 1})->Args({5000, 1});

}  // namespace

BENCHMARK_MAIN();
