// The collector's reads allocate nothing in a steady state: GpuReader's fast and slow cycles over
// the simulator (GPM samples, MIG instances, NVLink field values included) and the copy into a
// published snapshot, counted by replacing operator new (../top/alloc_count.cpp: its own binary).
// Only gpuwarden's allocations count: the simulator's own (its physics in nvmlSimAdvance, and
// whatever its NVML functions do inside) are outside the counted windows, through a function
// table whose every entry pauses the count around the simulator's function.
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <memory>

#include "collect/gpu_reader.h"
#include "collect/process_details.h"
#include "nvml/library.h"
#include "support/process.h"
#include "top/alloc_count.h"

namespace gw::collect {
namespace {

// Counting with pauses (alloc_count.h counts from its last Start).
long g_counted = 0;
bool g_counting = false;
void Resume() {
  if (g_counting) top::StartCountingAllocations();
}
void Pause() {
  if (g_counting) g_counted += top::StopCountingAllocations();
}

nvml::Api g_real;  // the simulator's table
// One trampoline per NVML function: the count pauses while the simulator runs.
#define GW_TRAMPOLINE(name, params)         \
  template <class... A>                     \
  nvmlReturn_t Paused_##name(A... args) {   \
    Pause();                                \
    nvmlReturn_t rc = g_real.name(args...); \
    Resume();                               \
    return rc;                              \
  }
GW_NVML_FUNCTIONS(GW_TRAMPOLINE)
#undef GW_TRAMPOLINE

nvml::Api PausingApi(const nvml::Api& real) {
  g_real = real;
  nvml::Api api = real;
#define GW_WRAP(name, params) \
  if (real.name != nullptr) api.name = Paused_##name;
  GW_NVML_FUNCTIONS(GW_WRAP)
#undef GW_WRAP
  return api;
}

struct NullGuard : CallGuard {
  bool Enter(size_t, Call) override { return true; }
  void Leave(size_t, Call, nvmlReturn_t, uint64_t) override {}
};

struct Probe {
  long allocations = 0;
  size_t gpus = 0, mig_instances = 0, nvlinks = 0;
  bool gpm_values = false;
};

// Runs `seconds` of 1 s fast cycles (a slow one every 10 s) after a warm-up, counting the
// allocations of the reads and of the snapshot copies only.
Probe RunCycles(const std::string& scenario, double warmup_s, double seconds) {
  Probe probe;
  auto lib = nvml::Library::Open(GW_SIM_LIBRARY);
  EXPECT_TRUE(lib.ok());
  if (!lib.ok()) return probe;
  std::unique_ptr<nvml::Library> library = std::move(lib.value());
  EXPECT_TRUE(library->ConfigureSimulator(scenario, /*stepped=*/1, 0).ok());
  EXPECT_TRUE(library->Init().ok());
  static nvml::Api api;
  api = PausingApi(library->api());
  nvml::System system(&api);
  CollectorOptions options;
  NullGuard guard;
  std::deque<GpuReader> readers;
  for (unsigned i = 0; i < system.DeviceCount().value_or(0); ++i)
    readers.emplace_back(i, system.DeviceByIndex(i).value(), i, options, &guard);
  std::vector<GpuSnapshot> published(readers.size());
  // Process details as the collector adds them at each publish (read at every cycle here).
  ProcessEnricher enricher({.proc_root = "/proc", .interval_s = 0}, &api);
  const double total = warmup_s + seconds;
  for (int t = 0; t <= static_cast<int>(total); ++t) {
    g_counting = t > warmup_s;
    Resume();
    for (GpuReader& r : readers) {
      if (t % 10 == 0) r.SlowCycle(t);
      r.FastCycle(t);
    }
    for (size_t i = 0; i < readers.size(); ++i) published[i] = readers[i].snapshot();
    enricher.Apply(t, published);
    Pause();
    g_counting = false;
    library->api().nvmlSimAdvance(1000);
  }
  probe.allocations = g_counted;
  g_counted = 0;
  probe.gpus = published.size();
  for (const GpuSnapshot& g : published) {
    probe.mig_instances += g.mig.size();
    probe.nvlinks += g.nvlinks.size();
    probe.gpm_values |= !IsAbsent(g.value(Slot::kSmActive));
    for (const MigInstanceSnapshot& m : g.mig)
      probe.gpm_values |= !IsAbsent(m.value(Gpm::kSmActive));
  }
  return probe;
}

TEST(CollectAllocations, SteadyStateCyclesDoNotAllocate) {
  Probe p = RunCycles("demo", 25, 30);
  EXPECT_EQ(p.gpus, 8u);
  EXPECT_EQ(p.allocations, 0);
}

TEST(CollectAllocations, GpmAndMigInstancesDoNotAllocate) {
  // mig.yaml re-partitions GPU 1 at 120 s: the window ends before.
  Probe p = RunCycles("mig", 25, 60);
  EXPECT_EQ(p.mig_instances, 11u);  // 7 + 4
  EXPECT_TRUE(p.gpm_values);
  EXPECT_EQ(p.allocations, 0);
}

TEST(CollectAllocations, NvLinkFieldValuesDoNotAllocate) {
  Probe p = RunCycles("hgx-nvlink", 25, 30);
  EXPECT_EQ(p.nvlinks, 8u * 18);
  EXPECT_TRUE(p.gpm_values);
  EXPECT_EQ(p.allocations, 0);
}

// Live processes on this machine (their stat read at every Apply, CPU and memory recomputed):
// once their details are known, refreshing them allocates nothing.
TEST(CollectAllocations, ProcessDetailsOfLiveProcessesDoNotAllocate) {
  gw::testing::TempDir dir;
  gw::testing::Process a({"sleep", "60"}, dir / "a.log");
  gw::testing::Process b({"sh", "-c", "sleep 60; :"}, dir / "b.log");
  ASSERT_TRUE(a.started() && b.started());
  std::vector<GpuSnapshot> gpus(2);
  for (pid_t pid : {a.pid(), b.pid()}) {
    ProcessSample p;
    p.pid = static_cast<unsigned>(pid);
    gpus[0].processes.push_back(p);
    gpus[1].processes.push_back(p);  // on two GPUs: read once per pass
  }
  ProcessEnricher enricher({.proc_root = "/proc", .interval_s = 0}, nullptr);
  enricher.Apply(1, gpus);
  enricher.Apply(2, gpus);
  top::StartCountingAllocations();
  for (int t = 3; t < 10; ++t) enricher.Apply(t, gpus);
  EXPECT_EQ(top::StopCountingAllocations(), 0);
  ASSERT_NE(gpus[1].processes[1].details, nullptr);
  EXPECT_EQ(gpus[1].processes[1].details->name, "sh");
  EXPECT_GT(gpus[0].processes[0].host_memory_bytes, 0);
  EXPECT_EQ(enricher.detail_reads(), 2u);
}

}  // namespace
}  // namespace gw::collect
