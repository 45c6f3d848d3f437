// Findings from the profiling signals (GPM), NVLink and MIG families, over synthetic series
// imported into an in-memory store as OpenMetrics text (the collector and simulator for these
// families are built beside this module; tests/integration/datacenter_test.cpp runs the real
// ones). Each test has GPUs that must get the finding next to GPUs that must not: a healthy one,
// one that misses a condition, and one without the signal at all (absent, never 0).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <set>

#include "diagnose/diagnose.h"
#include "findings_util.h"
#include "support/sim_store.h"

namespace gw::diagnose {
namespace {

using testing::MemoryStore;

constexpr int64_t kStart = 1700000000;
constexpr int kStep = 15;
constexpr int kSteps = 160;  // 40 minutes

// One series, `value(t)` at every step (t = seconds since kStart).
std::string Series(const std::string& series, const std::function<double(int)>& value) {
  std::string out;
  for (int k = 0; k <= kSteps; ++k) {
    const int t = k * kStep;
    char line[64];
    std::snprintf(line, sizeof line, " %.9g %lld\n", value(t), static_cast<long long>(kStart + t));
    out += series + line;
  }
  return out;
}

std::string Flat(const std::string& series, double v) {
  return Series(series, [v](int) { return v; });
}

std::string Gpu(int gpu, const std::string& extra = "") {
  std::string labels =
      "gpu=\"" + std::to_string(gpu) + "\",uuid=\"GPU-" + std::to_string(gpu) + "\"";
  return extra.empty() ? labels : labels + "," + extra;
}

// The device-level GPM families of one GPU, flat over the run.
struct Gpm {
  double util, sm_active, occupancy, tensor, fp32, fp16, fp64;
};
std::string GpmSeries(int gpu, const Gpm& g) {
  return Flat("gpu_utilization_ratio{" + Gpu(gpu) + "}", g.util) +
         Flat("gpu_processes{" + Gpu(gpu) + "}", 1) +
         Flat("gpu_sm_active_ratio{" + Gpu(gpu) + "}", g.sm_active) +
         Flat("gpu_sm_occupancy_ratio{" + Gpu(gpu) + "}", g.occupancy) +
         Flat("gpu_tensor_active_ratio{" + Gpu(gpu, "pipe=\"any\"") + "}", g.tensor) +
         Flat("gpu_pipe_active_ratio{" + Gpu(gpu, "pipe=\"fp32\"") + "}", g.fp32) +
         Flat("gpu_pipe_active_ratio{" + Gpu(gpu, "pipe=\"fp16\"") + "}", g.fp16) +
         Flat("gpu_pipe_active_ratio{" + Gpu(gpu, "pipe=\"fp64\"") + "}", g.fp64) +
         Flat("gpu_dram_active_ratio{" + Gpu(gpu) + "}", 0.3);
}

using testutil::Find;
using testutil::Key;
using testutil::Keys;

Diagnosis ImportAndDiagnose(MemoryStore& store, const std::string& text) {
  Status imported = store.Import(text + "# EOF\n");
  EXPECT_TRUE(imported.ok()) << imported.message();
  return testutil::DiagnoseStore(store.querier(), (kStart + kSteps * kStep) * 1000, kSteps * kStep);
}

// The finding of `kind` on `gpu`, whatever its cause (each test has at most one).
const Finding* Find(const Diagnosis& d, const std::string& kind, const std::string& gpu) {
  for (const Finding& f : d.findings)
    if (f.kind == kind && f.subject.gpu == gpu) return &f;
  return nullptr;
}

TEST(DiagnoseDatacenter, BusyButHollowAndTensorIdleOnlyWhereTheSignalsSaySo) {
  std::string text;
  // GPU 0: a kernel always runs, but on 5 % of the SMs (launch-bound, tiny batches).
  text += GpmSeries(0, {1.0, 0.05, 0.02, 0, 0.03, 0, 0});
  // GPU 1: healthy mixed-precision training.
  text += GpmSeries(1, {0.97, 0.9, 0.4, 0.45, 0.2, 0.3, 0});
  // GPU 2: training in FP32, tensor cores idle; the task layer knows its job.
  text += GpmSeries(2, {0.98, 0.88, 0.35, 0, 0.7, 0, 0});
  text += Flat("gpu_allocation_info{" +
                   Gpu(2,
                       "job_id=\"4711\",user=\"ann\",team=\"vision\","
                       "partition=\"gpu\"") +
                   "}",
               1);
  // GPU 3: FP64 HPC work: no tensor pipe either, but it is not FP32 math.
  text += GpmSeries(3, {0.95, 0.9, 0.3, 0.01, 0.1, 0, 0.8});
  // GPU 4: an older model without GPM: busy, and nothing else known.
  text +=
      Flat("gpu_utilization_ratio{" + Gpu(4) + "}", 1.0) + Flat("gpu_processes{" + Gpu(4) + "}", 1);
  // GPU 5: SMs busy, but each with a few warps only.
  text += GpmSeries(5, {0.99, 0.8, 0.02, 0.3, 0.2, 0.2, 0});
  // GPU 6: hollow for the first 5 minutes only (start-up), then a healthy job.
  text +=
      Flat("gpu_utilization_ratio{" + Gpu(6) + "}", 1.0) +
      Flat("gpu_processes{" + Gpu(6) + "}", 1) +
      Series("gpu_sm_active_ratio{" + Gpu(6) + "}", [](int t) { return t < 300 ? 0.05 : 0.9; }) +
      Flat("gpu_sm_occupancy_ratio{" + Gpu(6) + "}", 0.4) +
      Flat("gpu_tensor_active_ratio{" + Gpu(6, "pipe=\"any\"") + "}", 0.4);
  MemoryStore store;
  Diagnosis d = ImportAndDiagnose(store, text);
  EXPECT_EQ(Keys(d), (std::set<Key>{{"busy-but-hollow", "few SMs active", "0"},
                                    {"tensor-idle", "", "2"},
                                    {"busy-but-hollow", "low occupancy", "5"}}))
      << ToText(d);

  const Finding* hollow = Find(d, "busy-but-hollow", "0");
  ASSERT_NE(hollow, nullptr) << ToText(d);
  EXPECT_EQ(hollow->layer, Layer::kTask);
  EXPECT_EQ(hollow->severity, Severity::kWarning);
  EXPECT_TRUE(hollow->active);
  EXPECT_NEAR(testutil::EvidenceValue(*hollow, "SM activity"), 0.05, 1e-6);
  EXPECT_NEAR(testutil::EvidenceValue(*hollow, "GPU utilization"), 1.0, 1e-6);
  EXPECT_NEAR(testutil::EvidenceValue(*hollow, "SM occupancy"), 0.02, 1e-6);
  EXPECT_NE(hollow->title.find("5 % SM activity"), std::string::npos) << hollow->title;
  EXPECT_EQ(hollow->subject.job, "");
  EXPECT_GE(hollow->held_s, 1800);

  const Finding* tensor = Find(d, "tensor-idle", "2");
  ASSERT_NE(tensor, nullptr) << ToText(d);
  EXPECT_EQ(tensor->layer, Layer::kTask);
  EXPECT_EQ(tensor->severity, Severity::kInfo);
  EXPECT_EQ(tensor->subject.job, "4711");
  EXPECT_EQ(tensor->subject.team, "vision");
  EXPECT_NE(tensor->title.find("job 4711"), std::string::npos) << tensor->title;
  EXPECT_NEAR(testutil::EvidenceValue(*tensor, "FP32 pipe"), 0.7, 1e-6);
  EXPECT_NEAR(testutil::EvidenceValue(*tensor, "tensor pipes"), 0, 1e-9);
  EXPECT_NE(tensor->action.find("mixed precision"), std::string::npos);
  for (const Evidence& e : tensor->evidence) EXPECT_FALSE(e.query.empty()) << e.what;

  const Finding* occupancy = Find(d, "busy-but-hollow", "5");
  ASSERT_NE(occupancy, nullptr);
  EXPECT_NEAR(testutil::EvidenceValue(*occupancy, "SM occupancy"), 0.02, 1e-6);
  EXPECT_EQ(Filter(d, {.job = "4711"}).findings.size(), 1u);
}

TEST(DiagnoseDatacenter, ThresholdsComeFromOptions) {
  MemoryStore store;
  // 30 % SM activity: above the default 0.25, below 0.4.
  Diagnosis d = ImportAndDiagnose(store, GpmSeries(0, {1.0, 0.3, 0.2, 0, 0.2, 0, 0}));
  EXPECT_TRUE(d.findings.empty()) << ToText(d);
  Thresholds t;
  t.hollow_sm_active = 0.4;
  d = testutil::DiagnoseStore(store.querier(), (kStart + kSteps * kStep) * 1000, kSteps * kStep, t);
  EXPECT_EQ(Keys(d), (std::set<Key>{{"busy-but-hollow", "few SMs active", "0"}})) << ToText(d);
}

TEST(DiagnoseDatacenter, TensorIdlePerMigInstance) {
  auto mig = [](int id, const std::string& profile) {
    return Gpu(0, "mig_instance=\"" + std::to_string(id) + "\",mig_profile=\"" + profile + "\"");
  };
  std::string text;
  // Instance 1 (1g.10gb): FP32 training, no tensor pipe.
  text += Flat("gpu_mig_sm_active_ratio{" + mig(1, "1g.10gb") + "}", 0.9) +
          Flat("gpu_mig_tensor_active_ratio{" + mig(1, "1g.10gb") + ",pipe=\"any\"}", 0) +
          Flat("gpu_mig_pipe_active_ratio{" + mig(1, "1g.10gb") + ",pipe=\"fp32\"}", 0.6) +
          Flat("gpu_mig_pipe_active_ratio{" + mig(1, "1g.10gb") + ",pipe=\"fp64\"}", 0) +
          Flat("gpu_mig_processes{" + mig(1, "1g.10gb") + "}", 1);
  // Instance 2 (3g.40gb): mixed precision.
  text += Flat("gpu_mig_sm_active_ratio{" + mig(2, "3g.40gb") + "}", 0.85) +
          Flat("gpu_mig_tensor_active_ratio{" + mig(2, "3g.40gb") + ",pipe=\"any\"}", 0.5) +
          Flat("gpu_mig_processes{" + mig(2, "3g.40gb") + "}", 1);
  // Instance 5 (1g.10gb): a process that computes nothing.
  text += Flat("gpu_mig_sm_active_ratio{" + mig(5, "1g.10gb") + "}", 0) +
          Flat("gpu_mig_tensor_active_ratio{" + mig(5, "1g.10gb") + ",pipe=\"any\"}", 0) +
          Flat("gpu_mig_processes{" + mig(5, "1g.10gb") + "}", 1);
  // Instance 6 (1g.10gb): busy SMs and no tensor pipe, but no process (left by a finished job).
  text += Flat("gpu_mig_sm_active_ratio{" + mig(6, "1g.10gb") + "}", 0.9) +
          Flat("gpu_mig_tensor_active_ratio{" + mig(6, "1g.10gb") + ",pipe=\"any\"}", 0) +
          Flat("gpu_mig_processes{" + mig(6, "1g.10gb") + "}", 0);
  MemoryStore store;
  Diagnosis d = ImportAndDiagnose(store, text);
  EXPECT_EQ(Keys(d), (std::set<Key>{{"tensor-idle", "MIG instance 1 (1g.10gb)", "0"}}))
      << ToText(d);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_NE(f.title.find("GPU 0 MIG instance 1 (1g.10gb)"), std::string::npos) << f.title;
  EXPECT_NEAR(testutil::EvidenceValue(f, "SM activity"), 0.9, 1e-6);
  EXPECT_NEAR(testutil::EvidenceValue(f, "FP32 pipe"), 0.6, 1e-6);
  // The evidence queries select this instance only.
  for (size_t i = 1; i < f.evidence.size(); ++i) {
    EXPECT_NE(f.evidence[i].query.find("mig_instance=\"1\""), std::string::npos)
        << f.evidence[i].query;
  }
  EXPECT_EQ(Filter(d, {.gpu = "0"}).findings.size(), 1u);
  EXPECT_EQ(Filter(d, {.gpu = "1"}).findings.size(), 0u);
}

TEST(DiagnoseDatacenter, NvLinkDownLinksAndErrorStorms) {
  std::string text;
  auto links = [&text](int gpu, int count, const std::function<double(int link, int t)>& up) {
    text += Series("gpu_nvlink_links{" + Gpu(gpu) + "}", [count](int) { return count; });
    text += Series("gpu_nvlink_links_down{" + Gpu(gpu) + "}", [count, up](int t) {
      double down = 0;
      for (int l = 0; l < count; ++l) down += up(l, t) == 0 ? 1 : 0;
      return down;
    });
    for (int l = 0; l < count; ++l)
      text += Series("gpu_nvlink_link_up{" + Gpu(gpu, "link=\"" + std::to_string(l) + "\"") + "}",
                     [l, up](int t) { return up(l, t); });
  };
  auto errors = [&text](int gpu, const std::string& type, double per_s, int from_s) {
    text += Series("gpu_nvlink_errors_total{" + Gpu(gpu, "type=\"" + type + "\"") + "}",
                   [per_s, from_s](int t) { return t < from_s ? 0 : per_s * (t - from_s); });
  };
  // GPU 3: link 2 of 4 goes down at 10 min; no XID.
  links(3, 4, [](int l, int t) { return l == 2 && t >= 600 ? 0 : 1; });
  errors(3, "crc_flit", 0, 0);
  // GPU 5: a CRC storm (5/s on link 1) from 15 min, with XID 74.
  links(5, 4, [](int, int) { return 1; });
  errors(5, "crc_flit", 4, 900);
  errors(5, "replay", 1, 900);
  text += Series("gpu_nvlink_link_errors_total{" + Gpu(5, "link=\"1\",type=\"crc\"") + "}",
                 [](int t) { return t < 900 ? 0 : 5.0 * (t - 900); });
  text += Series("gpu_xid_errors_total{" + Gpu(5, "xid=\"74\"") + "}",
                 [](int t) { return t < 900 ? 0 : 1; });
  // GPU 7: link 0 down from the start of the run, another link up, XID 74.
  links(7, 2, [](int l, int) { return l == 0 ? 0 : 1; });
  text += Flat("gpu_xid_errors_total{" + Gpu(7, "xid=\"74\"") + "}", 1);
  // GPU 0: NVLink but nothing connected (every link down all the time).
  links(0, 2, [](int, int) { return 0; });
  // GPU 6: a trickle of CRC errors, far under 1/s.
  links(6, 4, [](int, int) { return 1; });
  errors(6, "crc_flit", 0.1, 0);
  MemoryStore store;
  Diagnosis d = ImportAndDiagnose(store, text);
  EXPECT_EQ(Keys(d), (std::set<Key>{{"nvlink-degraded", "link 2 down", "3"},
                                    {"nvlink-degraded", "error storm", "5"},
                                    {"nvlink-degraded", "link 0 down", "7"}}))
      << ToText(d);

  const Finding* down = Find(d, "nvlink-degraded", "3");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->layer, Layer::kDevice);
  EXPECT_EQ(down->severity, Severity::kWarning);
  EXPECT_EQ(down->title, "NVLink degraded on GPU 3: link 2 down");
  EXPECT_TRUE(down->active);
  EXPECT_NEAR(double(down->since_ms) / 1000, kStart + 600, 20);
  EXPECT_EQ(testutil::EvidenceValue(*down, "links down on this GPU"), 1);
  EXPECT_EQ(testutil::EvidenceValue(*down, "NVLink links of this GPU"), 4);

  const Finding* storm = Find(d, "nvlink-degraded", "5");
  ASSERT_NE(storm, nullptr);
  EXPECT_EQ(storm->severity, Severity::kCritical);  // XID 74
  EXPECT_NE(storm->title.find("XID 74"), std::string::npos) << storm->title;
  // Averages over the steps it held, the first of which see the storm's start in their window.
  EXPECT_NEAR(testutil::EvidenceValue(*storm, "CRC errors per second"), 3.8, 0.2);
  EXPECT_NEAR(testutil::EvidenceValue(*storm, "replays per second"), 1, 0.1);
  EXPECT_NEAR(testutil::EvidenceValue(*storm, "errors per second on its worst link"), 4.75, 0.25);
  EXPECT_EQ(testutil::EvidenceValue(*storm, "XID 74"), 1);

  const Finding* xid = Find(d, "nvlink-degraded", "7");
  ASSERT_NE(xid, nullptr);
  EXPECT_EQ(xid->severity, Severity::kCritical);
  EXPECT_EQ(xid->title, "NVLink degraded on GPU 7: link 0 down (XID 74 reported)");
  // Distinct ids: one per down link.
  std::set<std::string> ids;
  for (const Finding& f : d.findings) ids.insert(f.id);
  EXPECT_EQ(ids.size(), d.findings.size());
}

TEST(DiagnoseDatacenter, NvLinkDownFromTheGpuCountWithoutPerLinkSeries) {
  std::string text;
  // GPU 3: one of 18 links down from 10 min; GPU 0: nothing connected (both links always down).
  text += Flat("gpu_nvlink_links{" + Gpu(3) + "}", 18) +
          Series("gpu_nvlink_links_down{" + Gpu(3) + "}", [](int t) { return t < 600 ? 0 : 1; });
  text += Flat("gpu_nvlink_links{" + Gpu(0) + "}", 2) +
          Flat("gpu_nvlink_links_down{" + Gpu(0) + "}", 2);
  // GPU 6 has per-link series too: its link is judged there, not counted twice.
  text += Flat("gpu_nvlink_links{" + Gpu(6) + "}", 2) +
          Series("gpu_nvlink_links_down{" + Gpu(6) + "}", [](int t) { return t < 600 ? 0 : 1; }) +
          Flat("gpu_nvlink_link_up{" + Gpu(6, "link=\"0\"") + "}", 1) +
          Series("gpu_nvlink_link_up{" + Gpu(6, "link=\"1\"") + "}",
                 [](int t) { return t < 600 ? 1 : 0; });
  MemoryStore store;
  Diagnosis d = ImportAndDiagnose(store, text);
  EXPECT_EQ(Keys(d), (std::set<Key>{{"nvlink-degraded", "links down", "3"},
                                    {"nvlink-degraded", "link 1 down", "6"}}))
      << ToText(d);
  const Finding* f = Find(d, "nvlink-degraded", "3");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title, "NVLink degraded on GPU 3: 1 link down");
  EXPECT_EQ(f->severity, Severity::kWarning);
}

TEST(DiagnoseDatacenter, TheNewKindsAreListed) {
  std::set<std::string> kinds;
  for (const KindLayer& k : Kinds()) kinds.insert(std::string(k.kind));
  for (const char* k : {"nvlink-degraded", "busy-but-hollow", "tensor-idle"})
    EXPECT_EQ(kinds.count(k), 1u) << k;
}

}  // namespace
}  // namespace gw::diagnose
