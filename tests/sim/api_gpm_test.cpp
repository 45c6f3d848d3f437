// GPM profiling counters through the C API (dlopen), per workload, and NVML 13 temperature reads:
// scenarios busy-but-hollow, no-gpm and hgx-nvlink; facts in docs/scenarios.md.
#include <string>
#include <vector>

#include "sim_library.h"

namespace gw::sim::testing {
namespace {

class GpmTest : public SimTest {
 protected:
  void TearDown() override {
    for (nvmlGpmSample_t s : samples_) nvml.nvmlGpmSampleFree(s);
    SimTest::TearDown();
  }
  nvmlGpmSample_t Alloc() {
    nvmlGpmSample_t s = nullptr;
    EXPECT_EQ(nvml.nvmlGpmSampleAlloc(&s), NVML_SUCCESS);
    samples_.push_back(s);
    return s;
  }
  // Metric `id` from samples a (older) and b; the call's and the entry's return in *rc.
  double Metric(nvmlGpmSample_t a, nvmlGpmSample_t b, unsigned id, nvmlReturn_t* rc = nullptr) {
    nvmlGpmMetricsGet_t get{};
    get.version = NVML_GPM_METRICS_GET_VERSION;
    get.numMetrics = 1;
    get.sample1 = a;
    get.sample2 = b;
    get.metrics[0].metricId = id;
    const nvmlReturn_t call = nvml.nvmlGpmMetricsGet(&get);
    if (rc != nullptr)
      *rc = call != NVML_SUCCESS ? call : get.metrics[0].nvmlReturn;
    else
      EXPECT_EQ(call, NVML_SUCCESS);
    return get.metrics[0].value;
  }
  // Samples GPU `gpu` at `from_ms` and `to_ms` into a and b.
  void SampleAt(unsigned gpu, unsigned long long from_ms, unsigned long long to_ms,
                nvmlGpmSample_t a, nvmlGpmSample_t b) {
    AdvanceTo(from_ms);
    ASSERT_EQ(nvml.nvmlGpmSampleGet(Gpu(gpu), a), NVML_SUCCESS);
    AdvanceTo(to_ms);
    ASSERT_EQ(nvml.nvmlGpmSampleGet(Gpu(gpu), b), NVML_SUCCESS);
  }

  std::vector<nvmlGpmSample_t> samples_;
};

TEST_F(GpmTest, BusyButHollowTrainingAndTensorIdleTellApartWhatUtilizationCannot) {
  Start("busy-but-hollow");
  std::vector<nvmlGpmSample_t> a, b;
  for (unsigned g = 0; g < 3; ++g) {
    a.push_back(Alloc());
    b.push_back(Alloc());
  }
  AdvanceTo(10'000);
  for (unsigned g = 0; g < 3; ++g) ASSERT_EQ(nvml.nvmlGpmSampleGet(Gpu(g), a[g]), NVML_SUCCESS);
  AdvanceTo(20'000);
  for (unsigned g = 0; g < 3; ++g) {
    ASSERT_EQ(nvml.nvmlGpmSampleGet(Gpu(g), b[g]), NVML_SUCCESS);
    nvmlUtilization_t u{};
    ASSERT_EQ(nvml.nvmlDeviceGetUtilizationRates(Gpu(g), &u), NVML_SUCCESS);
    EXPECT_GE(u.gpu, 93u) << "GPU " << g;  // all three look busy to the utilization counter
  }
  // GPU 0: busy but hollow.
  EXPECT_GE(Metric(a[0], b[0], NVML_GPM_METRIC_GRAPHICS_UTIL), 95);
  EXPECT_NEAR(Metric(a[0], b[0], NVML_GPM_METRIC_SM_UTIL), 5, 1);
  EXPECT_LT(Metric(a[0], b[0], NVML_GPM_METRIC_SM_OCCUPANCY), 5);
  EXPECT_LT(Metric(a[0], b[0], NVML_GPM_METRIC_ANY_TENSOR_UTIL), 1);
  unsigned power_mw = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetPowerUsage(Gpu(0), &power_mw), NVML_SUCCESS);
  EXPECT_LT(power_mw, 260'000u);  // a few SMs busy draw little power
  // GPU 1: compute-bound training on the tensor cores.
  EXPECT_GT(Metric(a[1], b[1], NVML_GPM_METRIC_SM_UTIL), 80);
  EXPECT_GT(Metric(a[1], b[1], NVML_GPM_METRIC_SM_OCCUPANCY), 40);
  EXPECT_GT(Metric(a[1], b[1], NVML_GPM_METRIC_HMMA_TENSOR_UTIL), 50);
  EXPECT_GT(Metric(a[1], b[1], NVML_GPM_METRIC_ANY_TENSOR_UTIL), 50);
  EXPECT_NEAR(Metric(a[1], b[1], NVML_GPM_METRIC_DRAM_BW_UTIL), 0.85 * 55, 4);
  EXPECT_EQ(Metric(a[1], b[1], NVML_GPM_METRIC_DFMA_TENSOR_UTIL), 0);
  // GPU 2: training with the tensor cores idle, its math on the FP32 pipes.
  EXPECT_GT(Metric(a[2], b[2], NVML_GPM_METRIC_SM_UTIL), 80);
  EXPECT_LT(Metric(a[2], b[2], NVML_GPM_METRIC_ANY_TENSOR_UTIL), 1);
  EXPECT_GT(Metric(a[2], b[2], NVML_GPM_METRIC_FP32_UTIL), 40);
  EXPECT_GT(Metric(a[2], b[2], NVML_GPM_METRIC_FP32_UTIL),
            Metric(a[1], b[1], NVML_GPM_METRIC_FP32_UTIL) + 20);
  // PCIe: training moves ~20,000 KB/s per utilization percent host -> device (~1,900 MiB/s).
  EXPECT_NEAR(Metric(a[1], b[1], NVML_GPM_METRIC_PCIE_RX_PER_SEC), 1900, 250);
}

TEST_F(GpmTest, MetricsArePureFunctionsOfTimeHoweverTheGpuIsStepped) {
  auto measure = [&](bool fine_steps) {
    Start("busy-but-hollow");
    nvmlGpmSample_t a = Alloc(), b = Alloc();
    AdvanceTo(3'000);
    EXPECT_EQ(nvml.nvmlGpmSampleGet(Gpu(1), a), NVML_SUCCESS);
    for (unsigned long long t = 3'100; fine_steps && t < 9'000; t += 100) {
      AdvanceTo(t);
      nvmlUtilization_t u{};
      EXPECT_EQ(nvml.nvmlDeviceGetUtilizationRates(Gpu(1), &u), NVML_SUCCESS);
    }
    AdvanceTo(9'000);
    EXPECT_EQ(nvml.nvmlGpmSampleGet(Gpu(1), b), NVML_SUCCESS);
    std::vector<double> values;
    for (unsigned id : {NVML_GPM_METRIC_SM_UTIL, NVML_GPM_METRIC_HMMA_TENSOR_UTIL,
                        NVML_GPM_METRIC_DRAM_BW_UTIL, NVML_GPM_METRIC_PCIE_TX_PER_SEC})
      values.push_back(Metric(a, b, id));
    while (nvml.nvmlShutdown() == NVML_SUCCESS) {
    }
    return values;
  };
  const std::vector<double> coarse = measure(false);
  const std::vector<double> fine = measure(true);
  EXPECT_EQ(coarse, fine);
  EXPECT_GT(coarse[0], 80);
}

TEST_F(GpmTest, SupportVersionsAndSampleRules) {
  Start("demo");  // GPUs 0-3 H100 (GPM), 4-5 A100 (none)
  nvmlGpmSupport_t support{};
  support.version = 2;
  EXPECT_EQ(nvml.nvmlGpmQueryDeviceSupport(Gpu(0), &support), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  support.version = NVML_GPM_SUPPORT_VERSION;
  ASSERT_EQ(nvml.nvmlGpmQueryDeviceSupport(Gpu(0), &support), NVML_SUCCESS);
  EXPECT_EQ(support.isSupportedDevice, 1u);
  ASSERT_EQ(nvml.nvmlGpmQueryDeviceSupport(Gpu(4), &support), NVML_SUCCESS);
  EXPECT_EQ(support.isSupportedDevice, 0u);

  nvmlGpmSample_t a = Alloc(), b = Alloc(), other = Alloc(), unused = Alloc();
  EXPECT_NE(a, b);
  EXPECT_EQ(nvml.nvmlGpmSampleGet(Gpu(4), a), NVML_ERROR_NOT_SUPPORTED);  // A100
  EXPECT_EQ(nvml.nvmlGpmSampleGet(Gpu(0), nullptr), NVML_ERROR_INVALID_ARGUMENT);
  AdvanceTo(1'000);
  ASSERT_EQ(nvml.nvmlGpmSampleGet(Gpu(0), a), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlGpmSampleGet(Gpu(1), other), NVML_SUCCESS);
  AdvanceTo(1'050);  // the same 100 ms step: too close
  ASSERT_EQ(nvml.nvmlGpmSampleGet(Gpu(0), b), NVML_SUCCESS);
  nvmlReturn_t rc = NVML_SUCCESS;
  Metric(a, b, NVML_GPM_METRIC_SM_UTIL, &rc);
  EXPECT_EQ(rc, NVML_ERROR_INVALID_ARGUMENT);
  AdvanceTo(1'100);  // one step later: fine
  ASSERT_EQ(nvml.nvmlGpmSampleGet(Gpu(0), b), NVML_SUCCESS);
  Metric(a, b, NVML_GPM_METRIC_SM_UTIL, &rc);
  EXPECT_EQ(rc, NVML_SUCCESS);
  Metric(b, a, NVML_GPM_METRIC_SM_UTIL, &rc);  // wrong order
  EXPECT_EQ(rc, NVML_ERROR_INVALID_ARGUMENT);
  Metric(other, b, NVML_GPM_METRIC_SM_UTIL, &rc);  // another GPU
  EXPECT_EQ(rc, NVML_ERROR_INVALID_ARGUMENT);
  Metric(unused, b, NVML_GPM_METRIC_SM_UTIL, &rc);  // never filled
  EXPECT_EQ(rc, NVML_ERROR_INVALID_ARGUMENT);

  nvmlGpmMetricsGet_t get{};
  get.version = 2;
  get.numMetrics = 1;
  get.sample1 = a;
  get.sample2 = b;
  EXPECT_EQ(nvml.nvmlGpmMetricsGet(&get), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  // Several metrics at once; an id the simulator does not model fails in its own entry only.
  get.version = NVML_GPM_METRICS_GET_VERSION;
  get.numMetrics = 3;
  get.metrics[0].metricId = NVML_GPM_METRIC_SM_UTIL;
  get.metrics[1].metricId = NVML_GPM_METRIC_NVDEC_0_UTIL;
  get.metrics[2].metricId = NVML_GPM_METRIC_NVLINK_L17_TX_PER_SEC;
  ASSERT_EQ(nvml.nvmlGpmMetricsGet(&get), NVML_SUCCESS);
  EXPECT_EQ(get.metrics[0].nvmlReturn, NVML_SUCCESS);
  ASSERT_NE(get.metrics[0].unit, nullptr);
  EXPECT_STREQ(get.metrics[0].unit, "%");
  EXPECT_EQ(get.metrics[1].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(get.metrics[2].nvmlReturn, NVML_SUCCESS);  // H100 SXM: 18 links

  // A freed sample is refused, not dereferenced.
  ASSERT_EQ(nvml.nvmlGpmSampleFree(a), NVML_SUCCESS);
  std::erase(samples_, a);
  EXPECT_EQ(nvml.nvmlGpmSampleFree(a), NVML_ERROR_INVALID_ARGUMENT);
  Metric(a, b, NVML_GPM_METRIC_SM_UTIL, &rc);
  EXPECT_EQ(rc, NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlGpmSampleGet(Gpu(0), a), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(GpmTest, IdleGpuReadsZeroAndNvLinkRatesFollowTheLinks) {
  Start("hgx-nvlink");
  nvmlGpmSample_t a = Alloc(), b = Alloc(), c = Alloc(), d = Alloc();
  SampleAt(3, 40'000, 50'000, a, b);
  const double l5 = Metric(a, b, NVML_GPM_METRIC_NVLINK_L0_TX_PER_SEC + 2 * 5);
  const double l0 = Metric(a, b, NVML_GPM_METRIC_NVLINK_L0_TX_PER_SEC);
  // Training moves 30 % of each link's 25 GB/s per direction: ~7,150 MiB/s.
  EXPECT_NEAR(l0, 7150, 500);
  EXPECT_NEAR(l5, 7150, 500);
  EXPECT_NEAR(Metric(a, b, NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC), 18 * 7150, 18 * 400);
  EXPECT_NEAR(Metric(a, b, NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC), 7150, 500);
  // Link 5 goes down at 60 s: nothing on it, its share spread over the other 17.
  SampleAt(3, 70'000, 80'000, c, d);
  EXPECT_EQ(Metric(c, d, NVML_GPM_METRIC_NVLINK_L0_TX_PER_SEC + 2 * 5), 0);
  EXPECT_NEAR(Metric(c, d, NVML_GPM_METRIC_NVLINK_L0_TX_PER_SEC), 7150.0 * 18 / 17, 500);
  nvmlReturn_t rc = NVML_SUCCESS;
  Metric(c, d, NVML_GPM_METRIC_NVLINK_L0_TX_PER_SEC + 2 * 18, &rc);  // past L17
  EXPECT_EQ(rc, NVML_ERROR_NOT_SUPPORTED);
}

TEST_F(GpmTest, DriverWithoutGpmSymbolsAnswersFunctionNotFound) {
  Start("no-gpm");
  nvmlGpmSupport_t support{NVML_GPM_SUPPORT_VERSION, 0};
  EXPECT_EQ(nvml.nvmlGpmQueryDeviceSupport(Gpu(1), &support), NVML_ERROR_FUNCTION_NOT_FOUND);
  nvmlGpmSample_t s = nullptr;
  EXPECT_EQ(nvml.nvmlGpmSampleAlloc(&s), NVML_ERROR_FUNCTION_NOT_FOUND);
  EXPECT_EQ(nvml.nvmlGpmSampleGet(Gpu(1), s), NVML_ERROR_FUNCTION_NOT_FOUND);
  nvmlGpmMetricsGet_t get{};
  get.version = NVML_GPM_METRICS_GET_VERSION;
  EXPECT_EQ(nvml.nvmlGpmMetricsGet(&get), NVML_ERROR_FUNCTION_NOT_FOUND);
  nvmlTemperature_t t{nvmlTemperature_v1, NVML_TEMPERATURE_GPU, 0};
  EXPECT_EQ(nvml.nvmlDeviceGetTemperatureV(Gpu(1), &t), NVML_ERROR_FUNCTION_NOT_FOUND);
  unsigned celsius = 0;  // the deprecated read is still there
  EXPECT_EQ(nvml.nvmlDeviceGetTemperature(Gpu(1), NVML_TEMPERATURE_GPU, &celsius), NVML_SUCCESS);
  EXPECT_GT(celsius, 30u);
}

TEST_F(GpmTest, TemperatureVAndTLimitFields) {
  Start("busy-but-hollow");
  AdvanceTo(30'000);
  unsigned celsius = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetTemperature(Gpu(1), NVML_TEMPERATURE_GPU, &celsius), NVML_SUCCESS);
  nvmlTemperature_t t{};
  t.version = 1;
  EXPECT_EQ(nvml.nvmlDeviceGetTemperatureV(Gpu(1), &t), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  t.version = nvmlTemperature_v1;
  t.sensorType = 1;
  EXPECT_EQ(nvml.nvmlDeviceGetTemperatureV(Gpu(1), &t), NVML_ERROR_INVALID_ARGUMENT);
  t.sensorType = NVML_TEMPERATURE_GPU;
  ASSERT_EQ(nvml.nvmlDeviceGetTemperatureV(Gpu(1), &t), NVML_SUCCESS);
  EXPECT_EQ(t.temperature, static_cast<int>(celsius));

  nvmlFieldValue_t f[5] = {};
  f[0].fieldId = NVML_FI_DEV_TEMPERATURE_SHUTDOWN_TLIMIT;
  f[1].fieldId = NVML_FI_DEV_TEMPERATURE_SLOWDOWN_TLIMIT;
  f[2].fieldId = NVML_FI_DEV_TEMPERATURE_MEM_MAX_TLIMIT;
  f[3].fieldId = NVML_FI_DEV_TEMPERATURE_GPU_MAX_TLIMIT;
  f[4].fieldId = NVML_FI_DEV_MEMORY_TEMP;
  ASSERT_EQ(nvml.nvmlDeviceGetFieldValues(Gpu(1), 5, f), NVML_SUCCESS);
  for (const nvmlFieldValue_t& v : f) ASSERT_EQ(v.nvmlReturn, NVML_SUCCESS) << v.fieldId;
  EXPECT_EQ(f[0].valueType, NVML_VALUE_TYPE_SIGNED_INT);
  EXPECT_EQ(f[0].value.siVal, 92 - static_cast<int>(celsius));           // H100: shutdown 92 °C
  EXPECT_EQ(f[1].value.siVal, 89 - static_cast<int>(celsius));           // slowdown 89 °C
  EXPECT_EQ(f[3].value.siVal, 87 - static_cast<int>(celsius));           // GPU max 87 °C
  EXPECT_EQ(f[2].value.siVal, 95 - static_cast<int>(f[4].value.uiVal));  // memory max 95 °C
}

TEST_F(GpmTest, TLimitFieldsAreAbsentWhereTheModelHasNone) {
  Start("no-gpm");  // GPU 0: A100
  nvmlFieldValue_t f[2] = {};
  f[0].fieldId = NVML_FI_DEV_TEMPERATURE_SLOWDOWN_TLIMIT;
  f[1].fieldId = NVML_FI_DEV_TEMPERATURE_GPU_MAX_TLIMIT;
  ASSERT_EQ(nvml.nvmlDeviceGetFieldValues(Gpu(0), 2, f), NVML_SUCCESS);
  EXPECT_EQ(f[0].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(f[1].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);
}

TEST(SimLegacyDatacenter, AnOldDriverHasNoGpmMigOrTemperatureV) {
  const SimApi legacy = LoadSimApi(GW_SIM_LEGACY_LIBRARY);
  ASSERT_NE(legacy.handle, nullptr);
  EXPECT_EQ(legacy.nvmlGpmSampleGet, nullptr);
  EXPECT_EQ(legacy.nvmlGpmMetricsGet, nullptr);
  EXPECT_EQ(legacy.nvmlDeviceGetMigMode, nullptr);
  EXPECT_EQ(legacy.nvmlDeviceGetMigDeviceHandleByIndex, nullptr);
  EXPECT_EQ(legacy.nvmlDeviceGetTemperatureV, nullptr);
  EXPECT_NE(legacy.nvmlDeviceGetNvLinkState, nullptr);
}

}  // namespace
}  // namespace gw::sim::testing
