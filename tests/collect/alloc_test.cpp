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
#include "nvml/library.h"
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
  const double total = warmup_s + seconds;
  for (int t = 0; t <= static_cast<int>(total); ++t) {
    g_counting = t > warmup_s;
    Resume();
    for (GpuReader& r : readers) {
      if (t % 10 == 0) r.SlowCycle(t);
      r.FastCycle(t);
    }
    for (size_t i = 0; i < readers.size(); ++i) published[i] = readers[i].snapshot();
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

}  // namespace
}  // namespace gw::collect
