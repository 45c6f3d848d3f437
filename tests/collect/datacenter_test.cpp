// GPM, MIG, NVLink and T.Limit: the parsers, and the collector through the real dlopen path
// against the simulator's datacenter scenarios (docs/scenarios.md).
#include <gtest/gtest.h>

#include <cmath>

#include "collect/exposition.h"
#include "collect/gpu_reader.h"
#include "collect/health.h"
#include "support/sim_fixture.h"

namespace gw::collect {
namespace {

TEST(MigProfile, ComesFromTheMigDeviceName) {
  EXPECT_EQ(MigProfileFromName("NVIDIA H100 80GB HBM3 MIG 1g.10gb"), "1g.10gb");
  EXPECT_EQ(MigProfileFromName("NVIDIA A100-SXM4-40GB MIG 3g.20gb"), "3g.20gb");
  EXPECT_EQ(MigProfileFromName("NVIDIA H200 MIG 1c.3g.71gb "), "1c.3g.71gb");
  EXPECT_EQ(MigProfileFromName("2g.20gb"), "2g.20gb");
  EXPECT_EQ(MigProfileFromName(""), "");
}

TEST(MigProfile, ComputeSlicesFollowTheShareRule) {
  EXPECT_EQ(MigComputeSlices("1g.10gb"), 1u);
  EXPECT_EQ(MigComputeSlices("3g.40gb"), 3u);
  EXPECT_EQ(MigComputeSlices("7g.80gb"), 7u);
  EXPECT_EQ(MigComputeSlices("1g.10gb+me"), 1u);
  EXPECT_EQ(MigComputeSlices("1c.3g.40gb"), 1u);  // one compute slice of a 3g GPU instance
  EXPECT_EQ(MigComputeSlices("gb"), 0u);
  EXPECT_EQ(MigComputeSlices("12"), 0u);
  EXPECT_EQ(MigComputeSlices(""), 0u);
}

using gw::testing::SimCollector;

CollectorOptions Options() {
  CollectorOptions o;  // fast 1 s, slow 10 s
  o.memory_peak_interval_s = 0;
  return o;
}

const CallStats& Calls(const Snapshot& s, Call c) {
  return s.stats.calls[static_cast<size_t>(c)];
}

// busy-but-hollow.yaml: three H100s at ~100 % utilization that GPM tells apart.
TEST(Gpm, TellsBusyButHollowFromComputeBoundTraining) {
  SimCollector sim("busy-but-hollow", Options());
  ASSERT_TRUE(sim.ok());
  {
    // The first cycle has one sample: nothing to compute yet, so absent (never 0).
    auto first = sim.Latest();
    ASSERT_EQ(first->gpus.size(), 3u);
    for (const GpuSnapshot& g : first->gpus) {
      EXPECT_TRUE(g.gpm_supported);
      EXPECT_TRUE(IsAbsent(g.value(Slot::kSmActive)));
    }
  }
  sim.Advance(20);
  auto snap = sim.Latest();
  const GpuSnapshot& hollow = snap->gpus[0];
  const GpuSnapshot& training = snap->gpus[1];
  const GpuSnapshot& fp32 = snap->gpus[2];
  for (const GpuSnapshot& g : snap->gpus) EXPECT_GT(g.value(Slot::kUtilization), 0.9);
  // GPU 0: utilization ~99 %, SM active ~5 %, occupancy ~2 %, tensor pipes idle.
  EXPECT_NEAR(hollow.value(Slot::kSmActive), 0.05, 0.03);
  EXPECT_NEAR(hollow.value(Slot::kSmOccupancy), 0.02, 0.02);
  EXPECT_LT(hollow.value(Slot::kTensorAny), 0.02);
  // GPU 1: SM active ~88 %, HMMA ~59 %.
  EXPECT_NEAR(training.value(Slot::kSmActive), 0.88, 0.06);
  EXPECT_NEAR(training.value(Slot::kTensorHmma), 0.59, 0.08);
  EXPECT_GE(training.value(Slot::kTensorAny), training.value(Slot::kTensorHmma) - 1e-9);
  // GPU 2: SM active ~86 %, tensor cores idle.
  EXPECT_NEAR(fp32.value(Slot::kSmActive), 0.86, 0.06);
  EXPECT_LT(fp32.value(Slot::kTensorAny), 0.02);
  for (const GpuSnapshot& g : snap->gpus) {
    for (Slot s : {Slot::kGraphicsActive, Slot::kSmActive, Slot::kSmOccupancy, Slot::kTensorAny,
                   Slot::kPipeFp16, Slot::kPipeFp32, Slot::kPipeFp64, Slot::kPipeInteger,
                   Slot::kDramActive}) {
      EXPECT_FALSE(IsAbsent(g.value(s))) << static_cast<int>(s);
      EXPECT_GE(g.value(s), 0);
      EXPECT_LE(g.value(s), 1);
    }
    // PCIe rates come from GPM, so the blocking nvmlDeviceGetPcieThroughput is never called.
    EXPECT_FALSE(IsAbsent(g.value(Slot::kPcieTx)));
    EXPECT_FALSE(IsAbsent(g.value(Slot::kPcieRx)));
  }
  EXPECT_EQ(Calls(*snap, Call::kPcieThroughput).calls, 0u);
  // One sample and one metrics call per GPU per fast cycle (21 cycles), the first without metrics.
  EXPECT_EQ(Calls(*snap, Call::kGpmSample).calls, 3u * 21);
  EXPECT_EQ(Calls(*snap, Call::kGpmMetrics).calls, 3u * 20);
  EXPECT_EQ(Calls(*snap, Call::kGpmSample).errors, 0u);
}

// no-gpm.yaml: an A100 (no GPM) and an H100 on a driver without the GPM symbols or TemperatureV.
TEST(Gpm, AbsentWhereTheGpuOrTheDriverHasNone) {
  SimCollector sim("no-gpm", Options());
  ASSERT_TRUE(sim.ok());
  sim.Advance(15);
  auto snap = sim.Latest();
  ASSERT_EQ(snap->gpus.size(), 2u);
  for (const GpuSnapshot& g : snap->gpus) {
    EXPECT_FALSE(g.gpm_supported) << g.identity.name;
    for (Slot s : kGpmSlots) {
      if (s == Slot::kPcieTx || s == Slot::kPcieRx) continue;  // from nvmlDeviceGetPcieThroughput
      EXPECT_TRUE(IsAbsent(g.value(s))) << g.identity.name << " slot " << static_cast<int>(s);
    }
    EXPECT_FALSE(IsAbsent(g.value(Slot::kTemperature)));  // the nvmlDeviceGetTemperature fallback
    EXPECT_FALSE(IsAbsent(g.value(Slot::kPcieTx)));
    EXPECT_EQ(g.value(Slot::kUp), 1);
  }
  EXPECT_EQ(Calls(*snap, Call::kGpmSample).calls, 0u);
  EXPECT_GT(Calls(*snap, Call::kPcieThroughput).calls, 0u);
  std::string text;
  Render(*snap, Format::kText, RenderOptions{}, ProcessFigures{}, &text);
  for (const char* family : {"gpu_sm_active_ratio", "gpu_tensor_active_ratio",
                             "gpu_dram_active_ratio", "gpu_mig_sm_active_ratio"})
    EXPECT_EQ(text.find(family), std::string::npos) << family;
}

TEST(TemperatureLimits, MarginsAreTheDriversTLimitFields) {
  SimCollector sim("busy-but-hollow", Options());
  ASSERT_TRUE(sim.ok());
  sim.Advance(30);
  for (const GpuSnapshot& g : sim.Latest()->gpus) {
    const double margin = g.value(Slot::kMarginSlowdown);
    ASSERT_FALSE(IsAbsent(margin));
    // T.Limit is degrees below the limit: slowdown threshold minus the current temperature.
    EXPECT_NEAR(margin, g.value(Slot::kThresholdSlowdown) - g.value(Slot::kTemperature), 1.01);
    EXPECT_GT(g.value(Slot::kMarginShutdown), margin);
  }
  EXPECT_EQ(Calls(*sim.Latest(), Call::kTemperatureLimits).errors, 0u);
}

const MigInstanceSnapshot* Instance(const GpuSnapshot& g, unsigned gpu_instance_id) {
  for (const MigInstanceSnapshot& m : g.mig)
    if (m.gpu_instance_id == gpu_instance_id) return &m;
  return nullptr;
}

// mig.yaml: GPU 0 as 7 x 1g.10gb, GPU 1 as 3g+2g+1g+1g re-partitioned at 120 s, GPU 2 pending.
TEST(Mig, InstancesWithProfilesSharesMemoryProcessesAndGpm) {
  SimCollector sim("mig", Options());
  ASSERT_TRUE(sim.ok());
  sim.Advance(12);
  auto snap = sim.Latest();
  ASSERT_EQ(snap->gpus.size(), 3u);
  const GpuSnapshot& seven = snap->gpus[0];
  EXPECT_EQ(seven.value(Slot::kMigEnabledCurrent), 1);
  EXPECT_EQ(seven.value(Slot::kMigInstances), 7);
  ASSERT_EQ(seven.mig.size(), 7u);
  double share = 0;
  for (size_t i = 0; i < 7; ++i) {
    const MigInstanceSnapshot& m = seven.mig[i];
    EXPECT_EQ(m.gpu_instance_id, 7 + i);  // ids 7-13, in order
    EXPECT_EQ(m.profile, "1g.10gb");
    EXPECT_EQ(m.uuid, "MIG-a0000000-0000-4000-8000-00000000000" + std::to_string(i));
    EXPECT_NEAR(m.slice_ratio, 1.0 / 7, 1e-12);
    share += m.slice_ratio;
    EXPECT_NEAR(m.memory_total_bytes, 10e9, 1.5e9);
    EXPECT_NE(m.label_text.find("mig_instance=\"" + std::to_string(7 + i) + "\""),
              std::string::npos);
    EXPECT_NE(m.label_text.find("mig_profile=\"1g.10gb\""), std::string::npos);
    // Inference on instances 0-4 (pids 8001-8005, 6000 MiB each); 5 and 6 are free.
    if (i < 5) {
      ASSERT_EQ(m.processes.size(), 1u) << i;
      EXPECT_EQ(m.processes[0].pid, 8001 + i);
      EXPECT_NEAR(m.processes[0].memory_bytes, 6000.0 * (1 << 20), 1.0 * (1 << 20));
      EXPECT_GE(m.memory_used_bytes, 6000.0 * (1 << 20));
      EXPECT_FALSE(IsAbsent(m.value(Gpm::kSmActive)));
      EXPECT_GT(m.value(Gpm::kSmActive), 0);
    } else {
      EXPECT_TRUE(m.processes.empty()) << i;
    }
  }
  EXPECT_NEAR(share, 1.0, 1e-9);
  // The parent's process list names each process's instance.
  ASSERT_EQ(seven.processes.size(), 5u);
  for (const ProcessSample& p : seven.processes) EXPECT_EQ(p.gpu_instance_id, 7 + (p.pid - 8001));

  const GpuSnapshot& mixed = snap->gpus[1];
  ASSERT_EQ(mixed.mig.size(), 4u);
  const MigInstanceSnapshot* big = Instance(mixed, 2);
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(big->profile, "3g.40gb");
  EXPECT_NEAR(big->slice_ratio, 3.0 / 7, 1e-12);
  const MigInstanceSnapshot* two = Instance(mixed, 3);
  ASSERT_NE(two, nullptr);
  EXPECT_EQ(two->profile, "2g.20gb");
  EXPECT_NEAR(two->slice_ratio, 2.0 / 7, 1e-12);
  const MigInstanceSnapshot* hollow = Instance(mixed, 9);
  ASSERT_NE(hollow, nullptr);
  // Per-instance GPM: the training 3g works its SMs, the busy-but-hollow 1g barely.
  EXPECT_GT(big->value(Gpm::kSmActive), 0.5);
  EXPECT_LT(hollow->value(Gpm::kSmActive), 0.2);

  const GpuSnapshot& pending = snap->gpus[2];
  EXPECT_EQ(pending.value(Slot::kMigEnabledCurrent), 0);
  EXPECT_EQ(pending.value(Slot::kMigEnabledPending), 1);
  EXPECT_TRUE(pending.mig.empty());
  EXPECT_TRUE(IsAbsent(pending.value(Slot::kMigInstances)));
  bool told = false;
  for (const HealthProblem& p : HealthProblems(pending))
    told |= p.what == "MIG mode turns on at the next GPU reset";
  EXPECT_TRUE(told);

  // Nothing here is an error: MIG devices answer what they support, empty slots are NOT_FOUND.
  for (size_t c = 0; c < kCallCount; ++c)
    EXPECT_EQ(snap->stats.calls[c].errors, 0u) << CallName(static_cast<Call>(c));
  std::string text;
  Render(*snap, Format::kText, RenderOptions{}, ProcessFigures{}, &text);
  EXPECT_NE(text.find("gpu_mig_info{gpu=\"0\""), std::string::npos);
  EXPECT_NE(text.find("mig_uuid=\"MIG-a0000000-0000-4000-8000-000000000005\""), std::string::npos);
}

TEST(Mig, RepartitionIsSeenWithinOneSlowCycle) {
  SimCollector sim("mig", Options());
  ASSERT_TRUE(sim.ok());
  sim.Advance(119);
  ASSERT_EQ(sim.Latest()->gpus[1].mig.size(), 4u);
  const double kept_before = Instance(sim.Latest()->gpus[1], 2)->value(Gpm::kSmActive);
  EXPECT_FALSE(IsAbsent(kept_before));
  // The layout changes at 120 s; the slow interval is 10 s.
  sim.Advance(10);
  const GpuSnapshot& g = sim.Latest()->gpus[1];
  ASSERT_EQ(g.mig.size(), 2u);
  EXPECT_EQ(g.value(Slot::kMigInstances), 2);
  EXPECT_EQ(g.mig[0].gpu_instance_id, 1u);
  EXPECT_EQ(g.mig[0].uuid, "MIG-a1000000-0000-4000-8000-000000000010");
  EXPECT_EQ(g.mig[1].gpu_instance_id, 2u);
  EXPECT_EQ(g.mig[1].uuid, "MIG-a1000000-0000-4000-8000-000000000000");  // kept its UUID
  for (const MigInstanceSnapshot& m : g.mig) {
    EXPECT_EQ(m.profile, "3g.40gb");
    EXPECT_NEAR(m.slice_ratio, 3.0 / 7, 1e-12);
    EXPECT_FALSE(IsAbsent(m.value(Gpm::kSmActive)));  // both instances profiled again
  }
  EXPECT_NE(sim.Log().find("MIG layout changed"), std::string::npos) << sim.Log();
  // The vanished instances' GPM samples were freed, and no stale handle was read.
  for (size_t c = 0; c < kCallCount; ++c)
    EXPECT_EQ(sim.Latest()->stats.calls[c].errors, 0u) << CallName(static_cast<Call>(c));
  // The other GPUs did not move.
  EXPECT_EQ(sim.Latest()->gpus[0].mig.size(), 7u);
}

// With the event, the new layout shows at the first fast cycle after the change.
TEST(Mig, MigConfigChangeEventRescansBeforeTheNextSlowCycle) {
  CollectorOptions o = Options();
  o.slow_interval_s = 60;  // slow cycles at 0, 60, 120, 180: the change at 120 s lands on one
  SimCollector sim("mig", o);
  ASSERT_TRUE(sim.ok());
  sim.Advance(100);
  ASSERT_EQ(sim.Latest()->gpus[1].mig.size(), 4u);
  sim.Advance(21);  // 121 s
  ASSERT_EQ(sim.Latest()->gpus[1].mig.size(), 2u);
}

// hgx-nvlink.yaml: 8 x H100, 18 links each; GPU 3 link 5 down at 60 s; a CRC storm with XID 74 on
// GPU 5 link 2 from 90 s (+200 a second).
TEST(NvLink, LinksStatesCountersAndRates) {
  SimCollector sim("hgx-nvlink", Options());
  ASSERT_TRUE(sim.ok());
  sim.Advance(30);
  auto early = sim.Latest();
  ASSERT_EQ(early->gpus.size(), 8u);
  for (const GpuSnapshot& g : early->gpus) {
    EXPECT_EQ(g.value(Slot::kNvlinkLinks), 18);
    EXPECT_EQ(g.value(Slot::kNvlinkLinksDown), 0);
    ASSERT_EQ(g.nvlinks.size(), 18u);
    for (const NvLinkSnapshot& l : g.nvlinks) {
      EXPECT_EQ(l.up, 1);
      EXPECT_EQ(l.crc_errors, 0);
      EXPECT_GT(l.tx_bytes_per_second, 0) << "link " << l.link;  // GPM per-link rates
    }
    EXPECT_GT(g.value(Slot::kNvlinkTxBytes), 0);
    EXPECT_GT(g.value(Slot::kNvlinkTxRate), 0);
    EXPECT_EQ(g.value(Slot::kNvlinkCrcFlitErrors), 0);
  }
  // One field-value call per GPU per slow cycle (plus one the first time, to learn the count).
  EXPECT_EQ(Calls(*early, Call::kNvLinkFields).calls, 8u * (4 + 1));
  const double tx_before = early->gpus[0].value(Slot::kNvlinkTxBytes);
  const double rate = early->gpus[0].value(Slot::kNvlinkTxRate);

  sim.Advance(40);  // 70 s
  auto mid = sim.Latest();
  // The counter grew by about the GPM rate times the time between the two slow cycles.
  EXPECT_NEAR(mid->gpus[0].value(Slot::kNvlinkTxBytes) - tx_before, rate * 40, rate * 40 * 0.25);
  const GpuSnapshot& gpu3 = mid->gpus[3];
  EXPECT_EQ(gpu3.value(Slot::kNvlinkLinksDown), 1);
  EXPECT_EQ(gpu3.nvlinks[5].up, 0);
  for (const NvLinkSnapshot& l : gpu3.nvlinks)
    EXPECT_EQ(l.up, l.link == 5 ? 0 : 1) << "link " << l.link;
  EXPECT_EQ(mid->gpus[2].value(Slot::kNvlinkLinksDown), 0);

  sim.Advance(40);  // 110 s: 20 s of storm at the slow cycle of 110 s
  auto late = sim.Latest();
  const GpuSnapshot& gpu5 = late->gpus[5];
  EXPECT_NEAR(gpu5.nvlinks[2].crc_errors, 200 * 20, 200 * 3);
  EXPECT_GT(gpu5.nvlinks[2].replay_errors, 0);
  EXPECT_EQ(gpu5.nvlinks[3].crc_errors, 0);
  EXPECT_GT(gpu5.value(Slot::kNvlinkCrcFlitErrors) + gpu5.value(Slot::kNvlinkCrcDataErrors), 0);
  EXPECT_GT(gpu5.value(Slot::kNvlinkReplayErrors), 0);
  bool xid74 = false;
  for (auto [xid, n] : gpu5.xid_counts) xid74 |= xid == 74 && n >= 1;
  EXPECT_TRUE(xid74);
  std::string text;
  Render(*late, Format::kText, RenderOptions{}, ProcessFigures{}, &text);
  EXPECT_NE(
      text.find("gpu_nvlink_link_up{gpu=\"3\",uuid=\"" + gpu3.identity.uuid + "\",link=\"5\"} 0\n"),
      std::string::npos);
  EXPECT_NE(text.find("gpu_nvlink_links_down{gpu=\"3\""), std::string::npos);
  auto problems = HealthProblems(late->gpus[3]);
  ASSERT_FALSE(problems.empty());
  EXPECT_EQ(problems.front().what, "NVLink link(s) down: 5");
  EXPECT_EQ(problems.front().severity, Severity::kCritical);
  EXPECT_TRUE(HealthProblems(late->gpus[2]).empty());
}

TEST(NvLink, GpusWithoutNvLinkHaveNoSeries) {
  SimCollector sim("demo", Options());  // GPU 7 is an L40S, a PCIe board
  ASSERT_TRUE(sim.ok());
  sim.Advance(12);
  const GpuSnapshot& l40s = sim.Latest()->gpus[7];
  ASSERT_EQ(l40s.identity.name, "NVIDIA L40S");
  EXPECT_TRUE(l40s.nvlinks.empty());
  for (Slot s : {Slot::kNvlinkLinks, Slot::kNvlinkLinksDown, Slot::kNvlinkReplayErrors,
                 Slot::kNvlinkTxBytes})
    EXPECT_TRUE(IsAbsent(l40s.value(s))) << static_cast<int>(s);
  EXPECT_EQ(sim.Latest()->gpus[0].value(Slot::kNvlinkLinks), 18);  // an H100 SXM next to it
}

}  // namespace
}  // namespace gw::collect
