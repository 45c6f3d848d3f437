// MIG devices and NVLink through the C API (dlopen): scenarios mig and hgx-nvlink; facts in
// docs/scenarios.md.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "sim_library.h"
#include "support/process.h"

namespace gw::sim::testing {
namespace {

using gw::testing::Process;
using gw::testing::TempDir;
using gw::testing::WaitFor;

class MigTest : public SimTest {
 protected:
  nvmlDevice_t Mig(unsigned gpu, unsigned index, nvmlReturn_t expect = NVML_SUCCESS) {
    nvmlDevice_t mig = nullptr;
    EXPECT_EQ(nvml.nvmlDeviceGetMigDeviceHandleByIndex(Gpu(gpu), index, &mig), expect)
        << "GPU " << gpu << " MIG " << index;
    return mig;
  }
  unsigned InstanceId(nvmlDevice_t mig) {
    unsigned id = 99;
    EXPECT_EQ(nvml.nvmlDeviceGetGpuInstanceId(mig, &id), NVML_SUCCESS);
    return id;
  }
  std::string Text(nvmlReturn_t (*get)(nvmlDevice_t, char*, unsigned), nvmlDevice_t d) {
    char text[96] = "";
    EXPECT_EQ(get(d, text, sizeof text), NVML_SUCCESS);
    return text;
  }
  std::vector<nvmlProcessInfo_v2_t> Processes(nvmlDevice_t d) {
    unsigned count = 32;
    std::vector<nvmlProcessInfo_v2_t> infos(count);
    EXPECT_EQ(nvml.nvmlDeviceGetComputeRunningProcesses_v2(d, &count, infos.data()), NVML_SUCCESS);
    infos.resize(count);
    return infos;
  }
  unsigned MigCount(unsigned gpu) {
    unsigned n = 0;
    nvmlDevice_t mig = nullptr;
    while (n < 7 && nvml.nvmlDeviceGetMigDeviceHandleByIndex(Gpu(gpu), n, &mig) == NVML_SUCCESS)
      ++n;
    return n;
  }
};

TEST_F(MigTest, ModesCountsAndEnumeration) {
  Start("mig");
  unsigned current = 9, pending = 9, max = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetMigMode(Gpu(0), &current, &pending), NVML_SUCCESS);
  EXPECT_EQ(current, 1u);
  EXPECT_EQ(pending, 1u);
  ASSERT_EQ(nvml.nvmlDeviceGetMigMode(Gpu(2), &current, &pending), NVML_SUCCESS);
  EXPECT_EQ(current, 0u);  // A100: enabled only after a reset
  EXPECT_EQ(pending, 1u);
  ASSERT_EQ(nvml.nvmlDeviceGetMaxMigDeviceCount(Gpu(0), &max), NVML_SUCCESS);
  EXPECT_EQ(max, 7u);

  std::set<nvmlDevice_t> handles;
  for (unsigned i = 0; i < 7; ++i) {
    nvmlDevice_t mig = Mig(0, i);
    handles.insert(mig);
    EXPECT_NE(mig, Gpu(0));
    unsigned is_mig = 0, ci = 99;
    ASSERT_EQ(nvml.nvmlDeviceIsMigDeviceHandle(mig, &is_mig), NVML_SUCCESS);
    EXPECT_EQ(is_mig, 1u);
    EXPECT_EQ(InstanceId(mig), 7 + i);  // 7 x 1g: GPU instance ids 7-13
    ASSERT_EQ(nvml.nvmlDeviceGetComputeInstanceId(mig, &ci), NVML_SUCCESS);
    EXPECT_EQ(ci, 0u);
    EXPECT_EQ(Text(nvml.nvmlDeviceGetName, mig), "NVIDIA H100 80GB HBM3 MIG 1g.10gb");
    nvmlDevice_t parent = nullptr;
    ASSERT_EQ(nvml.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mig, &parent), NVML_SUCCESS);
    EXPECT_EQ(parent, Gpu(0));
  }
  EXPECT_EQ(handles.size(), 7u);
  EXPECT_EQ(Text(nvml.nvmlDeviceGetUUID, Mig(0, 5)), "MIG-a0000000-0000-4000-8000-000000000005");
  Mig(0, 7, NVML_ERROR_INVALID_ARGUMENT);

  // 3g.40gb + 2g.20gb + 1g.10gb + 1g.10gb: ids 2, 3, 9, 10; slot 4 is empty.
  const unsigned ids[] = {2, 3, 9, 10};
  const char* names[] = {"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"};
  for (unsigned i = 0; i < 4; ++i) {
    EXPECT_EQ(InstanceId(Mig(1, i)), ids[i]);
    EXPECT_EQ(Text(nvml.nvmlDeviceGetName, Mig(1, i)),
              std::string("NVIDIA H100 80GB HBM3 MIG ") + names[i]);
  }
  Mig(1, 4, NVML_ERROR_NOT_FOUND);
  Mig(2, 0, NVML_ERROR_NOT_FOUND);  // MIG not enabled yet

  unsigned is_mig = 9;
  ASSERT_EQ(nvml.nvmlDeviceIsMigDeviceHandle(Gpu(0), &is_mig), NVML_SUCCESS);
  EXPECT_EQ(is_mig, 0u);
  unsigned id = 0;
  EXPECT_EQ(nvml.nvmlDeviceGetGpuInstanceId(Gpu(0), &id), NVML_ERROR_NOT_SUPPORTED);
  nvmlDevice_t parent = nullptr;
  EXPECT_EQ(nvml.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(Gpu(0), &parent),
            NVML_ERROR_INVALID_ARGUMENT);
  // A forged MIG handle is refused like a forged device handle.
  nvmlDevice_t forged =
      reinterpret_cast<nvmlDevice_t>(reinterpret_cast<std::uintptr_t>(Mig(0, 0)) + 0x40);
  EXPECT_EQ(nvml.nvmlDeviceGetName(forged, nullptr, 0), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(MigTest, WhatAMigHandleAnswers) {
  Start("mig");
  AdvanceTo(10'000);
  nvmlDevice_t mig0 = Mig(0, 0), mig5 = Mig(0, 5);
  nvmlMemory_t m{};
  ASSERT_EQ(nvml.nvmlDeviceGetMemoryInfo(mig0, &m), NVML_SUCCESS);
  EXPECT_EQ(m.total, (81559ULL / 8) << 20);  // one of eight memory slices
  EXPECT_EQ(m.used, 6000ULL << 20);
  EXPECT_EQ(m.free, m.total - m.used);
  nvmlMemory_v2_t m2{};
  m2.version = nvmlMemory_v2;
  ASSERT_EQ(nvml.nvmlDeviceGetMemoryInfo_v2(mig5, &m2), NVML_SUCCESS);
  EXPECT_EQ(m2.used, 0u);
  EXPECT_EQ(m2.reserved, 0u);

  nvmlUtilization_t u{};
  unsigned value = 0;
  EXPECT_EQ(nvml.nvmlDeviceGetUtilizationRates(mig0, &u), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvml.nvmlDeviceGetPowerUsage(mig0, &value), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvml.nvmlDeviceGetTemperature(mig0, NVML_TEMPERATURE_GPU, &value),
            NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvml.nvmlDeviceGetClockInfo(mig0, NVML_CLOCK_SM, &value), NVML_ERROR_NOT_SUPPORTED);
  // The parent: no utilization while MIG is enabled; power and the rest as usual.
  EXPECT_EQ(nvml.nvmlDeviceGetUtilizationRates(Gpu(0), &u), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvml.nvmlDeviceGetPowerUsage(Gpu(0), &value), NVML_SUCCESS);
  EXPECT_EQ(nvml.nvmlDeviceGetUtilizationRates(Gpu(2), &u), NVML_SUCCESS);

  // Processes: the parent lists all five with their instance ids; an instance only its own.
  const std::vector<nvmlProcessInfo_v2_t> all = Processes(Gpu(0));
  ASSERT_EQ(all.size(), 5u);
  for (unsigned i = 0; i < 5; ++i) {
    EXPECT_EQ(all[i].pid, 8001 + i);
    EXPECT_EQ(all[i].gpuInstanceId, 7 + i);
    EXPECT_EQ(all[i].computeInstanceId, 0u);
  }
  const std::vector<nvmlProcessInfo_v2_t> own = Processes(Mig(0, 3));
  ASSERT_EQ(own.size(), 1u);
  EXPECT_EQ(own[0].pid, 8004u);
  EXPECT_TRUE(Processes(mig5).empty());
  const std::vector<nvmlProcessInfo_v2_t> plain = Processes(Gpu(2));
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_EQ(plain[0].gpuInstanceId, NVML_MIG_NO_INSTANCE);
  EXPECT_EQ(plain[0].computeInstanceId, NVML_MIG_NO_INSTANCE);
  // By profile and by position on GPU 1: 8101 on the 3g (id 2), 8103 on the first 1g (id 9).
  const std::vector<nvmlProcessInfo_v2_t> gpu1 = Processes(Gpu(1));
  ASSERT_EQ(gpu1.size(), 3u);
  EXPECT_EQ(gpu1[0].gpuInstanceId, 2u);
  EXPECT_EQ(gpu1[1].gpuInstanceId, 3u);
  EXPECT_EQ(gpu1[2].gpuInstanceId, 9u);
}

TEST_F(MigTest, RepartitionReplacesTheInstancesAndRaisesAnEvent) {
  Start("mig");
  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(nvml.nvmlEventSetCreate(&set), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlDeviceRegisterEvents(Gpu(1), 0x100, set), NVML_SUCCESS);  // MigConfigChange
  AdvanceTo(119'900);
  EXPECT_EQ(MigCount(1), 4u);
  nvmlDevice_t old_3g = Mig(1, 0), old_1g = Mig(1, 3);
  const std::string kept_uuid = Text(nvml.nvmlDeviceGetUUID, old_3g);
  nvmlEventData_t event{};
  EXPECT_EQ(nvml.nvmlEventSetWait_v2(set, &event, 0), NVML_ERROR_TIMEOUT);

  AdvanceTo(120'000);
  ASSERT_EQ(nvml.nvmlEventSetWait_v2(set, &event, 0), NVML_SUCCESS);
  EXPECT_EQ(event.eventType, 0x100u);
  EXPECT_EQ(event.device, Gpu(1));
  EXPECT_EQ(MigCount(1), 2u);
  EXPECT_EQ(InstanceId(Mig(1, 0)), 1u);
  EXPECT_EQ(InstanceId(Mig(1, 1)), 2u);
  EXPECT_EQ(Text(nvml.nvmlDeviceGetName, Mig(1, 1)), "NVIDIA H100 80GB HBM3 MIG 3g.40gb");
  EXPECT_EQ(Text(nvml.nvmlDeviceGetUUID, Mig(1, 1)), kept_uuid);  // same id and profile
  EXPECT_EQ(Text(nvml.nvmlDeviceGetUUID, Mig(1, 0)), "MIG-a1000000-0000-4000-8000-000000000010");
  // Handles of the old layout are stale.
  char name[96];
  EXPECT_EQ(nvml.nvmlDeviceGetName(old_1g, name, sizeof name), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlDeviceGetName(old_3g, name, sizeof name), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(Processes(Gpu(1)).empty());
  AdvanceTo(126'000);
  const std::vector<nvmlProcessInfo_v2_t> after = Processes(Gpu(1));
  ASSERT_EQ(after.size(), 2u);
  EXPECT_EQ(after[0].pid, 8104u);
  EXPECT_EQ(after[0].gpuInstanceId, 1u);
  EXPECT_EQ(after[1].gpuInstanceId, 2u);
  EXPECT_EQ(nvml.nvmlEventSetFree(set), NVML_SUCCESS);
}

TEST_F(MigTest, GpmPerInstanceAndForTheWholeGpu) {
  Start("mig");
  std::vector<nvmlGpmSample_t> s(10);
  for (nvmlGpmSample_t& x : s) ASSERT_EQ(nvml.nvmlGpmSampleAlloc(&x), NVML_SUCCESS);
  auto metric = [&](nvmlGpmSample_t a, nvmlGpmSample_t b, unsigned id, nvmlReturn_t* rc) {
    nvmlGpmMetricsGet_t get{};
    get.version = NVML_GPM_METRICS_GET_VERSION;
    get.numMetrics = 1;
    get.sample1 = a;
    get.sample2 = b;
    get.metrics[0].metricId = id;
    *rc = nvml.nvmlGpmMetricsGet(&get);
    if (*rc == NVML_SUCCESS) *rc = get.metrics[0].nvmlReturn;
    return get.metrics[0].value;
  };
  AdvanceTo(10'000);
  ASSERT_EQ(nvml.nvmlGpmMigSampleGet(Gpu(1), 2, s[0]), NVML_SUCCESS);  // 3g, training
  ASSERT_EQ(nvml.nvmlGpmMigSampleGet(Gpu(1), 9, s[1]), NVML_SUCCESS);  // 1g, busy but hollow
  ASSERT_EQ(nvml.nvmlGpmSampleGet(Mig(1, 3), s[2]), NVML_SUCCESS);     // 1g (id 10), free
  ASSERT_EQ(nvml.nvmlGpmSampleGet(Gpu(1), s[3]), NVML_SUCCESS);        // the whole GPU
  EXPECT_EQ(nvml.nvmlGpmMigSampleGet(Gpu(1), 5, s[8]), NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(nvml.nvmlGpmMigSampleGet(Gpu(2), 0, s[8]), NVML_ERROR_NOT_SUPPORTED);  // A100
  AdvanceTo(20'000);
  ASSERT_EQ(nvml.nvmlGpmMigSampleGet(Gpu(1), 2, s[4]), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlGpmSampleGet(Mig(1, 2), s[5]), NVML_SUCCESS);  // id 9, by handle
  ASSERT_EQ(nvml.nvmlGpmMigSampleGet(Gpu(1), 10, s[6]), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlGpmSampleGet(Gpu(1), s[7]), NVML_SUCCESS);
  nvmlReturn_t rc = NVML_SUCCESS;
  const double train = metric(s[0], s[4], NVML_GPM_METRIC_SM_UTIL, &rc);
  EXPECT_EQ(rc, NVML_SUCCESS);
  EXPECT_GT(train, 80);
  EXPECT_GT(metric(s[0], s[4], NVML_GPM_METRIC_HMMA_TENSOR_UTIL, &rc), 50);
  EXPECT_NEAR(metric(s[1], s[5], NVML_GPM_METRIC_SM_UTIL, &rc), 5, 1);
  EXPECT_GT(metric(s[1], s[5], NVML_GPM_METRIC_GRAPHICS_UTIL, &rc), 95);
  EXPECT_EQ(metric(s[2], s[6], NVML_GPM_METRIC_SM_UTIL, &rc), 0);
  EXPECT_EQ(rc, NVML_SUCCESS);
  metric(s[0], s[4], NVML_GPM_METRIC_PCIE_TX_PER_SEC, &rc);  // the GPU's, not an instance's
  EXPECT_EQ(rc, NVML_ERROR_NOT_SUPPORTED);
  metric(s[0], s[5], NVML_GPM_METRIC_SM_UTIL, &rc);  // two different instances
  EXPECT_EQ(rc, NVML_ERROR_INVALID_ARGUMENT);
  // The GPU: its instances weighted by compute slices out of 7 (3 x ~86 + 2 x ~25 + 5) / 7.
  const double whole = metric(s[3], s[7], NVML_GPM_METRIC_SM_UTIL, &rc);
  EXPECT_GT(whole, 35);
  EXPECT_LT(whole, train);
  for (nvmlGpmSample_t x : s) EXPECT_EQ(nvml.nvmlGpmSampleFree(x), NVML_SUCCESS);
}

TEST_F(MigTest, AHostProcessNamingAMigUuidRunsOnThatInstance) {
  TempDir dir;
  Start("mig");
  Process job({"/usr/bin/env", "GPUWARDEN_SIM_WORKLOAD=training",
               "CUDA_VISIBLE_DEVICES=MIG-a0000000-0000-4000-8000-000000000005", "sleep", "60"},
              dir / "job.log");
  ASSERT_TRUE(job.started());
  const auto pid = static_cast<unsigned>(job.pid());
  auto listed = [&] {
    for (const nvmlProcessInfo_v2_t& p : Processes(Mig(0, 5)))
      if (p.pid == pid) return true;
    return false;
  };
  ASSERT_TRUE(WaitFor([&] { return nvml.nvmlSimAdvance(100) == NVML_SUCCESS && listed(); }, 20));
  bool on_parent = false;
  for (const nvmlProcessInfo_v2_t& p : Processes(Gpu(0)))
    if (p.pid == pid) on_parent = p.gpuInstanceId == 12;
  EXPECT_TRUE(on_parent);
  nvmlMemory_t m{};
  ASSERT_EQ(nvml.nvmlDeviceGetMemoryInfo(Mig(0, 5), &m), NVML_SUCCESS);
  EXPECT_GT(m.used, 0u);
  EXPECT_TRUE(Processes(Mig(0, 6)).empty());
}

TEST_F(MigTest, ModelsWithoutMigOrNvLinkSayNotSupported) {
  TempDir dir;
  gw::testing::WriteFile(dir / "l40s.yaml", "name: l40s\nclock: stepped\ngpus:\n  - model: L40S\n");
  Start(dir / "l40s.yaml");
  unsigned a = 0, b = 0;
  EXPECT_EQ(nvml.nvmlDeviceGetMigMode(Gpu(0), &a, &b), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvml.nvmlDeviceGetMaxMigDeviceCount(Gpu(0), &a), NVML_ERROR_NOT_SUPPORTED);
  int active = 0;
  EXPECT_EQ(nvml.nvmlDeviceGetNvLinkState(Gpu(0), 0, &active), NVML_ERROR_NOT_SUPPORTED);
  nvmlFieldValue_t f{};
  f.fieldId = NVML_FI_DEV_NVLINK_LINK_COUNT;
  ASSERT_EQ(nvml.nvmlDeviceGetFieldValues(Gpu(0), 1, &f), NVML_SUCCESS);
  EXPECT_EQ(f.nvmlReturn, NVML_ERROR_NOT_SUPPORTED);
  unsigned long long events = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetSupportedEventTypes(Gpu(0), &events), NVML_SUCCESS);
  EXPECT_EQ(events & 0x100, 0u);
}

using NvLinkTest = SimTest;

nvmlFieldValue_t Field(unsigned id, unsigned scope = 0) {
  nvmlFieldValue_t f{};
  f.fieldId = id;
  f.scopeId = scope;
  return f;
}

TEST_F(NvLinkTest, LinkCountStateAndThroughputFields) {
  Start("hgx-nvlink");
  AdvanceTo(40'000);
  nvmlFieldValue_t f[4] = {Field(NVML_FI_DEV_NVLINK_LINK_COUNT),
                           Field(NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, 0xFFFFFFFFu),
                           Field(NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, 5),
                           Field(NVML_FI_DEV_NVLINK_GET_STATE, 5)};
  ASSERT_EQ(nvml.nvmlDeviceGetFieldValues(Gpu(3), 4, f), NVML_SUCCESS);
  for (const nvmlFieldValue_t& v : f) ASSERT_EQ(v.nvmlReturn, NVML_SUCCESS) << v.fieldId;
  EXPECT_EQ(f[0].value.uiVal, 18u);
  EXPECT_EQ(f[3].value.uiVal, 1u);
  const unsigned long long total_40 = f[1].value.ullVal, link5_40 = f[2].value.ullVal;
  // ~7.5 GB/s per link in KiB: 40 s of training on 18 links.
  EXPECT_NEAR(static_cast<double>(total_40), 40 * 18 * 7.5e9 / 1024, 40 * 18 * 7.5e9 / 1024 * 0.05);
  int active = 9;
  ASSERT_EQ(nvml.nvmlDeviceGetNvLinkState(Gpu(3), 5, &active), NVML_SUCCESS);
  EXPECT_EQ(active, 1);
  EXPECT_EQ(nvml.nvmlDeviceGetNvLinkState(Gpu(3), 18, &active), NVML_ERROR_INVALID_ARGUMENT);

  AdvanceTo(70'000);  // link 5 of GPU 3 went down at 60 s
  ASSERT_EQ(nvml.nvmlDeviceGetNvLinkState(Gpu(3), 5, &active), NVML_SUCCESS);
  EXPECT_EQ(active, 0);
  ASSERT_EQ(nvml.nvmlDeviceGetNvLinkState(Gpu(3), 4, &active), NVML_SUCCESS);
  EXPECT_EQ(active, 1);
  ASSERT_EQ(nvml.nvmlDeviceGetNvLinkState(Gpu(2), 5, &active), NVML_SUCCESS);
  EXPECT_EQ(active, 1);
  nvmlFieldValue_t g[3] = {Field(NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, 5),
                           Field(NVML_FI_DEV_NVLINK_GET_STATE, 5),
                           Field(NVML_FI_DEV_NVLINK_GET_STATE, 40)};
  ASSERT_EQ(nvml.nvmlDeviceGetFieldValues(Gpu(3), 3, g), NVML_SUCCESS);
  EXPECT_LE(g[0].value.ullVal - link5_40, 20 * 7.5e9 / 1024 * 1.05);  // only up to 60 s
  EXPECT_GE(g[0].value.ullVal - link5_40, 20 * 7.5e9 / 1024 * 0.95);
  EXPECT_EQ(g[1].value.uiVal, 0u);
  EXPECT_EQ(g[2].nvmlReturn, NVML_ERROR_INVALID_ARGUMENT);
  unsigned long long recovery = 0;
  ASSERT_EQ(
      nvml.nvmlDeviceGetNvLinkErrorCounter(Gpu(3), 5, NVML_NVLINK_ERROR_DL_RECOVERY, &recovery),
      NVML_SUCCESS);
  EXPECT_EQ(recovery, 1u);
}

TEST_F(NvLinkTest, CrcStormRaisesCountersAndXid74) {
  Start("hgx-nvlink");
  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(nvml.nvmlEventSetCreate(&set), NVML_SUCCESS);
  for (unsigned g = 0; g < 8; ++g)
    ASSERT_EQ(nvml.nvmlDeviceRegisterEvents(Gpu(g), nvmlEventTypeXidCriticalError, set),
              NVML_SUCCESS);
  AdvanceTo(89'900);
  nvmlEventData_t event{};
  EXPECT_EQ(nvml.nvmlEventSetWait_v2(set, &event, 0), NVML_ERROR_TIMEOUT);
  unsigned long long crc = 1;
  ASSERT_EQ(nvml.nvmlDeviceGetNvLinkErrorCounter(Gpu(5), 2, NVML_NVLINK_ERROR_DL_CRC_FLIT, &crc),
            NVML_SUCCESS);
  EXPECT_EQ(crc, 0u);

  AdvanceTo(105'000);
  for (int i = 0; i < 2; ++i) {  // at 90 s and 100 s
    ASSERT_EQ(nvml.nvmlEventSetWait_v2(set, &event, 0), NVML_SUCCESS);
    EXPECT_EQ(event.eventData, 74u);
    EXPECT_EQ(event.device, Gpu(5));
  }
  EXPECT_EQ(nvml.nvmlEventSetWait_v2(set, &event, 0), NVML_ERROR_TIMEOUT);
  // 15 s of storm at 200 bad flits a second on link 2, each replayed.
  const unsigned counters[] = {NVML_NVLINK_ERROR_DL_CRC_FLIT, NVML_NVLINK_ERROR_DL_REPLAY,
                               NVML_NVLINK_ERROR_DL_CRC_DATA, NVML_NVLINK_ERROR_DL_ECC_DATA};
  const unsigned long long expected[] = {3000, 3000, 300, 150};
  for (int i = 0; i < 4; ++i) {
    unsigned long long v = 0;
    ASSERT_EQ(nvml.nvmlDeviceGetNvLinkErrorCounter(Gpu(5), 2, static_cast<int>(counters[i]), &v),
              NVML_SUCCESS);
    EXPECT_EQ(v, expected[i]) << counters[i];
  }
  nvmlFieldValue_t f[5] = {Field(NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL),
                           Field(NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL),
                           Field(NVML_FI_DEV_NVLINK_ERROR_DL_CRC, 2),
                           Field(NVML_FI_DEV_NVLINK_ERROR_DL_CRC, 3),
                           Field(NVML_FI_DEV_NVLINK_ECC_DATA_ERROR_COUNT_TOTAL)};
  ASSERT_EQ(nvml.nvmlDeviceGetFieldValues(Gpu(5), 5, f), NVML_SUCCESS);
  EXPECT_EQ(f[0].value.ullVal, 3000u);
  EXPECT_EQ(f[1].value.ullVal, 3000u);
  EXPECT_EQ(f[2].value.ullVal, 3300u);  // flit + data CRC errors of link 2
  EXPECT_EQ(f[3].value.ullVal, 0u);
  EXPECT_EQ(f[4].value.ullVal, 150u);
  nvmlFieldValue_t quiet = Field(NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL);
  ASSERT_EQ(nvml.nvmlDeviceGetFieldValues(Gpu(4), 1, &quiet), NVML_SUCCESS);
  EXPECT_EQ(quiet.value.ullVal, 0u);
  EXPECT_EQ(nvml.nvmlEventSetFree(set), NVML_SUCCESS);
}

}  // namespace
}  // namespace gw::sim::testing
