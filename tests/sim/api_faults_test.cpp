// Faults through the C API: XID events (stepped and realtime), a GPU that falls off the bus,
// a hung call released by nvmlShutdown, ECC, row remapping and page retirement counters.
#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "sim_library.h"

namespace gw::sim::testing {
namespace {

using namespace std::chrono_literals;
using SimFaultTest = SimTest;

TEST_F(SimFaultTest, FallOffBusDeliversXid79ThenGpuIsLost) {
  Start("fall-off-bus");
  nvmlEventSet_t set = XidEventSet(2);
  nvmlEventData_t data{};
  EXPECT_EQ(nvml.nvmlEventSetWait_v2(set, &data, 0), NVML_ERROR_TIMEOUT);
  AdvanceTo(29'900);
  EXPECT_EQ(nvml.nvmlEventSetWait_v2(set, &data, 10), NVML_ERROR_TIMEOUT);
  unsigned temp = 0;
  EXPECT_EQ(nvml.nvmlDeviceGetTemperature(Gpu(1), NVML_TEMPERATURE_GPU, &temp), NVML_SUCCESS);

  // The event thread blocks in nvmlEventSetWait_v2; another thread moves time past 30 s.
  const auto started = std::chrono::steady_clock::now();
  auto waiter = std::async(std::launch::async, [&] {
    nvmlEventData_t event{};
    const nvmlReturn_t rc = nvml.nvmlEventSetWait_v2(set, &event, 10'000);
    return std::make_pair(rc, event);
  });
  std::this_thread::sleep_for(50ms);
  AdvanceTo(30'000);
  const auto [rc, event] = waiter.get();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);  // woken, not timed out
  ASSERT_EQ(rc, NVML_SUCCESS);
  EXPECT_EQ(event.device, Gpu(1));
  EXPECT_EQ(event.eventType, nvmlEventTypeXidCriticalError);
  EXPECT_EQ(event.eventData, 79u);
  EXPECT_EQ(event.gpuInstanceId, 0xFFFFFFFFu);

  EXPECT_EQ(nvml.nvmlDeviceGetTemperature(Gpu(1), NVML_TEMPERATURE_GPU, &temp),
            NVML_ERROR_GPU_IS_LOST);
  char name[96];
  EXPECT_EQ(nvml.nvmlDeviceGetName(Gpu(1), name, sizeof name), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(nvml.nvmlDeviceGetTemperature(Gpu(0), NVML_TEMPERATURE_GPU, &temp), NVML_SUCCESS);
  unsigned count = 0;
  EXPECT_EQ(nvml.nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
  EXPECT_EQ(count, 2u);
  EXPECT_EQ(nvml.nvmlEventSetWait_v2(set, &data, 0), NVML_ERROR_TIMEOUT);  // exactly one XID
  EXPECT_EQ(nvml.nvmlEventSetFree(set), NVML_SUCCESS);
  EXPECT_EQ(nvml.nvmlEventSetFree(set), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(SimFaultTest, RealtimeClockWakesTheWaiterWhenTheEventIsDue) {
  Start("fall-off-bus", /*clock_mode=*/0, /*speed=*/200);  // 30 s virtual = 150 ms real
  EXPECT_EQ(nvml.nvmlSimAdvance(1000), NVML_ERROR_NOT_SUPPORTED);
  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(nvml.nvmlEventSetCreate(&set), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlDeviceRegisterEvents(Gpu(1), nvmlEventTypeXidCriticalError, set),
            NVML_SUCCESS);
  nvmlEventData_t event{};
  ASSERT_EQ(nvml.nvmlEventSetWait_v2(set, &event, 10'000), NVML_SUCCESS);
  EXPECT_EQ(event.eventData, 79u);
  unsigned long long now_ms = 0;
  ASSERT_EQ(nvml.nvmlSimGetClock(&now_ms), NVML_SUCCESS);
  EXPECT_GE(now_ms, 30'000u);
  EXPECT_LT(now_ms, 10'000'000u);  // woken near the due time, not at the timeout
  nvml.nvmlEventSetFree(set);
}

TEST_F(SimFaultTest, HungCallBlocksOnlyItselfAndShutdownReleasesIt) {
  Start("hang");
  AdvanceTo(9'000);
  unsigned power = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetPowerUsage(Gpu(1), &power), NVML_SUCCESS);  // not due yet
  AdvanceTo(10'000);
  nvmlDevice_t hung_gpu = Gpu(1);
  std::atomic<bool> returned{false};
  auto hung = std::async(std::launch::async, [&] {
    unsigned value = 0;
    const nvmlReturn_t rc = nvml.nvmlDeviceGetPowerUsage(hung_gpu, &value);
    returned = true;
    return rc;
  });
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(returned.load());
  // Other calls, on both GPUs, still answer while the call hangs.
  unsigned temp = 0;
  EXPECT_EQ(nvml.nvmlDeviceGetPowerUsage(Gpu(0), &power), NVML_SUCCESS);
  EXPECT_EQ(nvml.nvmlDeviceGetTemperature(Gpu(1), NVML_TEMPERATURE_GPU, &temp), NVML_SUCCESS);
  EXPECT_EQ(nvml.nvmlSimAdvance(1000), NVML_SUCCESS);
  EXPECT_FALSE(returned.load());
  ASSERT_EQ(nvml.nvmlShutdown(), NVML_SUCCESS);
  started_ = false;
  ASSERT_EQ(hung.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(hung.get(), NVML_ERROR_UNINITIALIZED);
}

TEST_F(SimFaultTest, TimedHangEndsAfterItsRealSeconds) {
  const std::string path = std::string(GW_SOURCE_DIR) + "/tests/sim/data/hang-short.yaml";
  Start(path);
  AdvanceTo(1'000);
  const auto started = std::chrono::steady_clock::now();
  unsigned temp = 0;
  EXPECT_EQ(nvml.nvmlDeviceGetTemperature(Gpu(0), NVML_TEMPERATURE_GPU, &temp), NVML_SUCCESS);
  const auto blocked = std::chrono::steady_clock::now() - started;
  EXPECT_GE(blocked, 250ms);
  EXPECT_LT(blocked, 3s);
  const auto again = std::chrono::steady_clock::now();
  EXPECT_EQ(nvml.nvmlDeviceGetTemperature(Gpu(0), NVML_TEMPERATURE_GPU, &temp), NVML_SUCCESS);
  EXPECT_LT(std::chrono::steady_clock::now() - again, 1s);  // the hang is over
}

TEST_F(SimFaultTest, UncorrectableEccRaisesDbeAndXid48) {
  Start("ecc-uncorrectable");
  nvmlDevice_t gpu = Gpu(0);
  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(nvml.nvmlEventSetCreate(&set), NVML_SUCCESS);
  unsigned long long supported = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetSupportedEventTypes(gpu, &supported), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlDeviceRegisterEvents(gpu, supported, set), NVML_SUCCESS);
  EXPECT_EQ(nvml.nvmlDeviceRegisterEvents(gpu, 0x100000ULL, set), NVML_ERROR_NOT_SUPPORTED);
  AdvanceTo(45'000);
  std::vector<std::pair<unsigned long long, unsigned long long>> events;
  nvmlEventData_t data{};
  while (nvml.nvmlEventSetWait_v2(set, &data, 0) == NVML_SUCCESS)
    events.emplace_back(data.eventType, data.eventData);
  EXPECT_EQ(events, (std::vector<std::pair<unsigned long long, unsigned long long>>{
                        {nvmlEventTypeSingleBitEccError, 0},
                        {nvmlEventTypeDoubleBitEccError, 0},
                        {nvmlEventTypeXidCriticalError, 48}}));
  unsigned long long dbe = 0, dbe_aggregate = 0, sbe = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetTotalEccErrors(gpu, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                                             NVML_VOLATILE_ECC, &dbe),
            NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlDeviceGetTotalEccErrors(gpu, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                                             NVML_AGGREGATE_ECC, &dbe_aggregate),
            NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlDeviceGetTotalEccErrors(gpu, NVML_MEMORY_ERROR_TYPE_CORRECTED,
                                             NVML_VOLATILE_ECC, &sbe),
            NVML_SUCCESS);
  EXPECT_EQ(dbe, 2u);
  EXPECT_EQ(dbe_aggregate, 3u);
  EXPECT_EQ(sbe, 1u);
  nvml.nvmlEventSetFree(set);
}

TEST_F(SimFaultTest, RowRemapPendsThenFails) {
  Start("row-remap");
  nvmlDevice_t gpu = Gpu(0);
  unsigned corr = 9, unc = 9, pending = 9, failed = 9;
  ASSERT_EQ(nvml.nvmlDeviceGetRemappedRows(gpu, &corr, &unc, &pending, &failed), NVML_SUCCESS);
  EXPECT_EQ(unc + pending + failed + corr, 0u);
  AdvanceTo(20'000);
  ASSERT_EQ(nvml.nvmlDeviceGetRemappedRows(gpu, &corr, &unc, &pending, &failed), NVML_SUCCESS);
  EXPECT_EQ(unc, 1u);
  EXPECT_EQ(pending, 1u);
  EXPECT_EQ(failed, 0u);
  AdvanceTo(60'000);
  ASSERT_EQ(nvml.nvmlDeviceGetRemappedRows(gpu, &corr, &unc, &pending, &failed), NVML_SUCCESS);
  EXPECT_EQ(pending, 0u);
  AdvanceTo(90'000);
  ASSERT_EQ(nvml.nvmlDeviceGetRemappedRows(gpu, &corr, &unc, &pending, &failed), NVML_SUCCESS);
  EXPECT_EQ(failed, 1u);
  EXPECT_EQ(unc, 1u);
  unsigned pages = 0;
  EXPECT_EQ(nvml.nvmlDeviceGetRetiredPages(gpu, 1, &pages, nullptr), NVML_ERROR_NOT_SUPPORTED);
}

TEST_F(SimFaultTest, PageRetirementOnV100) {
  Start("page-retirement");
  nvmlDevice_t gpu = Gpu(0);
  AdvanceTo(40'000);
  unsigned count = 0;
  EXPECT_EQ(nvml.nvmlDeviceGetRetiredPages(gpu, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR,
                                           &count, nullptr),
            NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(count, 2u);
  std::vector<unsigned long long> addresses(count);
  ASSERT_EQ(nvml.nvmlDeviceGetRetiredPages(gpu, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR,
                                           &count, addresses.data()),
            NVML_SUCCESS);
  EXPECT_EQ(addresses[0] % 4096, 0u);
  EXPECT_NE(addresses[0], addresses[1]);
  count = 4;
  ASSERT_EQ(
      nvml.nvmlDeviceGetRetiredPages(gpu, NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS,
                                     &count, addresses.data()),
      NVML_SUCCESS);
  EXPECT_EQ(count, 1u);
  int pending = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetRetiredPagesPendingStatus(gpu, &pending), NVML_SUCCESS);
  EXPECT_EQ(pending, 1);
  AdvanceTo(80'000);
  ASSERT_EQ(nvml.nvmlDeviceGetRetiredPagesPendingStatus(gpu, &pending), NVML_SUCCESS);
  EXPECT_EQ(pending, 0);
}

}  // namespace
}  // namespace gw::sim::testing
