// The simulator's state files (sim/state_file.h) and the simulated inference service
// (sim/inference/service.h) that reads them.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "sim/inference/service.h"
#include "sim/state_file.h"
#include "sim_library.h"
#include "support/process.h"

namespace gw::sim {
namespace {

GpuState Gpu(double clock_ratio, double free_mib = 40'000) {
  GpuState s;
  s.max_sm_clock_mhz = 1980;
  s.sm_clock_mhz = static_cast<std::uint64_t>(1980 * clock_ratio);
  s.memory_total_bytes = 81'559ULL << 20;
  s.memory_reserved_bytes = 579ULL << 20;
  s.memory_used_bytes = s.memory_total_bytes - s.memory_reserved_bytes -
                        static_cast<std::uint64_t>(free_mib * 1024 * 1024);
  s.alive = true;
  return s;
}

// Share of requests answered within `bound_s` (a bucket bound) over one virtual minute.
double ShareWithin(const GpuState& gpu, double bound_s, InferenceService* service = nullptr) {
  InferenceService local{ServiceProfile{}};
  InferenceService& s = service ? *service : local;
  s.AdvanceTo(0, gpu);
  s.AdvanceTo(60'000, gpu);
  for (std::size_t i = 0; i < InferenceService::kBuckets.size(); ++i)
    if (InferenceService::kBuckets[i] == bound_s)
      return static_cast<double>(s.bucket(i)) / static_cast<double>(s.requests_total());
  ADD_FAILURE() << "no bucket " << bound_s;
  return 0;
}

TEST(InferenceServiceTest, FastAtFullClockSlowWhenThrottled) {
  InferenceService full{ServiceProfile{}};
  EXPECT_GT(ShareWithin(Gpu(1.0), 0.1, &full), 0.95);  // p95 under 100 ms
  EXPECT_EQ(full.requests_total(), 4800u);             // 80 requests/s for a virtual minute
  EXPECT_EQ(full.requests(200), 4800u);
  // 70 % clock (SW thermal slowdown's floor): p95 beyond 250 ms, still answering.
  InferenceService throttled{ServiceProfile{}};
  EXPECT_LT(ShareWithin(Gpu(0.7), 0.25, &throttled), 0.95);
  EXPECT_EQ(throttled.requests(503), 0u);
  // 45 % (HW slowdown): past saturation, a share is shed.
  InferenceService saturated{ServiceProfile{}};
  ShareWithin(Gpu(0.45), 0.25, &saturated);
  EXPECT_GT(saturated.requests(503), saturated.requests_total() / 5);
}

TEST(InferenceServiceTest, FailsWithoutFreeGpuMemory) {
  InferenceService s{ServiceProfile{}};
  s.AdvanceTo(0, Gpu(1.0, 512));
  s.AdvanceTo(10'000, Gpu(1.0, 512));
  EXPECT_EQ(s.requests(500), 800u);
  EXPECT_EQ(s.requests(200), 0u);
}

TEST(InferenceServiceTest, SameInputsSameCounters) {
  std::string a, b;
  for (std::string* out : {&a, &b}) {
    InferenceService s{ServiceProfile{}};
    s.AdvanceTo(0, Gpu(1));
    s.AdvanceTo(7'000, Gpu(0.8));
    s.AdvanceTo(30'000, Gpu(0.5));
    s.Render(out);
  }
  EXPECT_EQ(a, b);
  EXPECT_NE(a.find("inference_request_duration_seconds_bucket{le=\"0.005\"} "), std::string::npos);
  EXPECT_NE(a.find("inference_request_duration_seconds_count 2400\n"), std::string::npos) << a;
  EXPECT_NE(a.find("inference_requests_total{code=\"503\"} "), std::string::npos);
}

TEST(StateFileTest, ReaderSeesWhatTheWriterPublished) {
  gw::testing::TempDir dir;
  StateWriter writer(dir.path(), {"GPU-aaaa", "GPU-bbbb"});
  ASSERT_EQ(writer.error(), "");
  StateReader reader;
  ASSERT_TRUE(reader.Open(StatePath(dir.path(), 1)));
  GpuState s;
  ASSERT_TRUE(reader.Read(&s));
  EXPECT_EQ(s.uuid, "GPU-bbbb");
  EXPECT_TRUE(s.alive);
  GpuState published = Gpu(0.5);
  published.index = 1;
  published.virtual_ms = 1234;
  writer.Publish(published);
  ASSERT_TRUE(reader.Read(&s));
  EXPECT_EQ(s.virtual_ms, 1234u);
  EXPECT_EQ(s.sm_clock_mhz, 990u);
  EXPECT_DOUBLE_EQ(s.clock_ratio(), 0.5);
  EXPECT_FALSE(reader.Open(dir / "missing.state"));
}

// libnvml-sim publishes the cooling-failure GPU's clocks as the collector would read them.
TEST(StateFileTest, TheSimulatorPublishesEachGpuAsItSteps) {
  gw::testing::TempDir dir;
  ASSERT_EQ(setenv(kStateDirEnv, dir.path().c_str(), 1), 0);
  testing::SimApi api = testing::LoadSimApi(GW_SIM_LIBRARY);
  ASSERT_NE(api.handle, nullptr);
  char error[256];
  ASSERT_EQ(api.nvmlSimConfigure("cooling-failure", 1, 0, error, sizeof error), NVML_SUCCESS);
  ASSERT_EQ(api.nvmlInit_v2(), NVML_SUCCESS);
  nvmlDevice_t device;
  ASSERT_EQ(api.nvmlDeviceGetHandleByIndex_v2(0, &device), NVML_SUCCESS);
  unsigned mhz = 0;
  StateReader reader;
  ASSERT_TRUE(reader.Open(StatePath(dir.path(), 0)));
  GpuState s;

  ASSERT_EQ(api.nvmlSimAdvance(50'000), NVML_SUCCESS);
  ASSERT_EQ(api.nvmlDeviceGetClockInfo(device, NVML_CLOCK_SM, &mhz), NVML_SUCCESS);
  ASSERT_TRUE(reader.Read(&s));
  EXPECT_EQ(s.virtual_ms, 50'000u);
  EXPECT_EQ(s.sm_clock_mhz, mhz);
  EXPECT_DOUBLE_EQ(s.clock_ratio(), 1.0);
  EXPECT_EQ(s.clock_event_reasons, 0u);

  ASSERT_EQ(api.nvmlSimAdvance(28'000), NVML_SUCCESS);  // t = 78 s: HW thermal slowdown
  ASSERT_TRUE(reader.Read(&s));
  EXPECT_EQ(s.virtual_ms, 78'000u) << "a stepped clock's advance publishes every GPU at once";
  ASSERT_EQ(api.nvmlDeviceGetClockInfo(device, NVML_CLOCK_SM, &mhz), NVML_SUCCESS);
  ASSERT_TRUE(reader.Read(&s));
  EXPECT_EQ(s.virtual_ms, 78'000u);
  EXPECT_EQ(s.sm_clock_mhz, 885u);
  EXPECT_EQ(s.clock_event_reasons, 0x68u);
  EXPECT_LT(s.clock_ratio(), 0.5);
  EXPECT_GT(s.memory_used_bytes, 0u);

  ASSERT_EQ(api.nvmlShutdown(), NVML_SUCCESS);
  ASSERT_TRUE(reader.Read(&s));
  EXPECT_FALSE(s.alive);
  unsetenv(kStateDirEnv);
}

}  // namespace
}  // namespace gw::sim
