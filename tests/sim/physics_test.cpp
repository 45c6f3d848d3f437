// Physics and fault effects on gw_sim_core directly, in stepped virtual time.
#include <gtest/gtest.h>

#include <memory>

#include "nvml/abi.h"
#include "sim/fleet.h"

namespace gw::sim {
namespace {

constexpr VirtualUs kSecond = 1'000'000;

std::unique_ptr<Fleet> Load(const std::string& name) {
  Expected<Scenario> s = LoadScenario(name, 1'750'000'000);
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
  if (!s.ok()) return nullptr;
  return std::make_unique<Fleet>(std::move(*s), VirtualClock(ClockMode::kStepped, 1.0, {}));
}

TEST(Physics, PowerCapLowersClocksAndSetsSwPowerCap) {
  auto fleet = Load("power-cap");
  ASSERT_TRUE(fleet);
  const Device& before = fleet->DeviceAt(0, 59 * kSecond);
  EXPECT_EQ(before.power_limit_w(), 700u);
  EXPECT_GT(before.latest().power_mw, 500'000u);
  EXPECT_EQ(before.latest().sm_clock_mhz, 1980);
  EXPECT_EQ(before.clock_event_reasons() & nvmlClocksEventReasonSwPowerCap, 0u);

  for (VirtualUs t = 60 * kSecond; t <= 70 * kSecond; t += kSecond / 2) {
    const Device& d = fleet->DeviceAt(0, t);
    EXPECT_EQ(d.power_limit_w(), 300u);
    EXPECT_LE(d.latest().power_mw, 300'000u) << "t=" << t;
    EXPECT_LT(d.latest().sm_clock_mhz, 1980) << "t=" << t;
    EXPECT_NE(d.clock_event_reasons() & nvmlClocksEventReasonSwPowerCap, 0u) << "t=" << t;
  }
  EXPECT_LE(fleet->DeviceAt(0, 70 * kSecond).average_power_mw(), 300'000u);
  // The uncapped twin keeps its clocks.
  const Device& twin = fleet->DeviceAt(1, 70 * kSecond);
  EXPECT_EQ(twin.latest().sm_clock_mhz, 1980);
  EXPECT_GT(twin.latest().power_mw, 500'000u);
}

TEST(Physics, CoolingFailureCrossesSlowdownAndSetsThermalReasons) {
  auto fleet = Load("cooling-failure");
  ASSERT_TRUE(fleet);
  const Device& healthy = fleet->DeviceAt(0, 59 * kSecond);
  EXPECT_LT(healthy.temperature_c(), 75u);
  EXPECT_EQ(healthy.clock_event_reasons() & 0x60u, 0u);
  bool sw_thermal = false, hw_thermal = false;
  unsigned peak_c = 0;
  for (VirtualUs t = 60 * kSecond; t <= 120 * kSecond; t += kStepUs) {
    const Device& d = fleet->DeviceAt(0, t);
    peak_c = std::max(peak_c, d.temperature_c());
    sw_thermal |= (d.clock_event_reasons() & nvmlClocksEventReasonSwThermalSlowdown) != 0;
    if ((d.clock_event_reasons() & nvmlClocksThrottleReasonHwThermalSlowdown) != 0) {
      hw_thermal = true;
      EXPECT_LE(d.latest().sm_clock_mhz, 0.45 * 1980);
      EXPECT_NE(d.clock_event_reasons() & nvmlClocksThrottleReasonHwSlowdown, 0u);
    }
  }
  EXPECT_TRUE(sw_thermal);
  EXPECT_TRUE(hw_thermal);
  EXPECT_GE(peak_c, 89u);  // the H100's SLOWDOWN threshold
  EXPECT_LT(peak_c, 92u);  // never reaches SHUTDOWN
}

TEST(Physics, PowerBrakeDropsClocksHardForItsDuration) {
  auto fleet = Load("power-brake");
  ASSERT_TRUE(fleet);
  EXPECT_EQ(fleet->DeviceAt(0, 29 * kSecond).latest().sm_clock_mhz, 1410);
  const Device& braked = fleet->DeviceAt(0, 45 * kSecond);
  EXPECT_EQ(braked.latest().sm_clock_mhz, 270);
  EXPECT_EQ(braked.clock_event_reasons() &
                (nvmlClocksThrottleReasonHwPowerBrakeSlowdown | nvmlClocksThrottleReasonHwSlowdown),
            nvmlClocksThrottleReasonHwPowerBrakeSlowdown | nvmlClocksThrottleReasonHwSlowdown);
  EXPECT_LT(braked.latest().power_mw, 120'000u);
  const Device& released = fleet->DeviceAt(0, 91 * kSecond);
  EXPECT_EQ(released.clock_event_reasons() & nvmlClocksThrottleReasonHwPowerBrakeSlowdown, 0u);
  EXPECT_EQ(released.latest().sm_clock_mhz, 1410);
}

TEST(Physics, EnergyCounterIntegratesPower) {
  auto fleet = Load("power-cap");
  ASSERT_TRUE(fleet);
  Device& d = fleet->DeviceAt(1, 10 * kSecond);
  const std::uint64_t start_mj = d.energy_mj();
  EXPECT_GT(start_mj, 0u);  // the counter runs since driver load
  double expected_mj = 0;
  for (VirtualUs t = 10 * kSecond + kStepUs; t <= 30 * kSecond; t += kStepUs) {
    fleet->DeviceAt(1, t);
    expected_mj += d.latest().power_mw * 0.1;  // mW x 100 ms = 0.1 mJ per mW
  }
  const double measured_mj = static_cast<double>(d.energy_mj() - start_mj);
  EXPECT_NEAR(measured_mj, expected_mj, expected_mj * 0.001 + 1);
  EXPECT_GT(measured_mj, 20 * 500'000.0);  // 20 s at > 500 W
}

TEST(Physics, IdleGpuReportsGpuIdleP8AndIdleClocks) {
  auto fleet = Load("idle-allocated");
  ASSERT_TRUE(fleet);
  for (unsigned gpu : {0u, 1u}) {
    const Device& d = fleet->DeviceAt(gpu, 30 * kSecond);
    EXPECT_EQ(d.latest().util_pct, 0);
    EXPECT_EQ(d.clock_event_reasons(), nvmlClocksEventReasonGpuIdle);
    EXPECT_EQ(d.pstate(), 8);
    EXPECT_EQ(d.latest().sm_clock_mhz, 210);
    EXPECT_LT(d.latest().power_mw, 40'000u);
  }
  EXPECT_EQ(fleet->DeviceAt(0, 30 * kSecond).used_memory_bytes(), 30720ULL << 20);
  EXPECT_EQ(fleet->DeviceAt(1, 30 * kSecond).used_memory_bytes(), 0u);
  EXPECT_EQ(fleet->DeviceAt(0, 30 * kSecond).RunningProcesses().size(), 1u);
  EXPECT_EQ(fleet->DeviceAt(0, 121 * kSecond).RunningProcesses().size(), 0u);  // stop: 120s
}

TEST(Physics, SpikesLandInTheSampleBufferBetweenWholeSeconds) {
  auto fleet = Load("spikes");
  ASSERT_TRUE(fleet);
  const Device& d = fleet->DeviceAt(0, 10 * kSecond);
  for (std::int64_t step = 40; step <= 100; ++step) {
    const bool spike = step % 50 >= 1 && step % 50 <= 3;  // 5.1, 5.2, 5.3 s; 10.1 ... (next)
    const StepSample& s = d.Sample(step);
    if (spike) {
      EXPECT_EQ(s.util_pct, 100) << step;
      EXPECT_EQ(s.mem_util_pct, 95) << step;
      EXPECT_GT(s.power_mw, 600'000u) << step;
    } else {
      EXPECT_LE(s.util_pct, 11) << step;
      EXPECT_LT(s.power_mw, 200'000u) << step;
    }
    if (step % 10 == 0) {
      EXPECT_LE(s.util_pct, 11) << "a 1 Hz reader sees no spike at " << step;
    }
  }
}

TEST(Physics, ReadingsDoNotDependOnHowOftenTheyAreTaken) {
  auto eager = Load("demo");
  auto lazy = Load("demo");
  ASSERT_TRUE(eager && lazy);
  for (VirtualUs t = 0; t <= 120 * kSecond; t += kStepUs)
    for (unsigned gpu = 0; gpu < 8; ++gpu) eager->DeviceAt(gpu, t);
  for (unsigned gpu = 0; gpu < 8; ++gpu) {
    const Device& a = eager->DeviceAt(gpu, 120 * kSecond);
    const Device& b = lazy->DeviceAt(gpu, 120 * kSecond);
    EXPECT_EQ(a.latest().power_mw, b.latest().power_mw) << gpu;
    EXPECT_EQ(a.temperature_c(), b.temperature_c()) << gpu;
    EXPECT_EQ(a.energy_mj(), b.energy_mj()) << gpu;
  }
}

TEST(Physics, DemoShowsPowerCapAndVariedLoad) {
  auto fleet = Load("demo");
  ASSERT_TRUE(fleet);
  const VirtualUs t = 10 * 60 * kSecond;
  EXPECT_NE(fleet->DeviceAt(0, t).clock_event_reasons() & nvmlClocksEventReasonSwPowerCap, 0u);
  EXPECT_EQ(fleet->DeviceAt(1, t).clock_event_reasons() & nvmlClocksEventReasonSwPowerCap, 0u);
  EXPECT_EQ(fleet->DeviceAt(7, t).latest().util_pct, 0);
  EXPECT_EQ(fleet->DeviceAt(7, t).used_memory_bytes(), 30720ULL << 20);
  EXPECT_GE(fleet->DeviceAt(6, t).latest().mem_util_pct, 85);
  // GPU 3's airflow degrades from 20 min: SW thermal slowdown within 5 minutes.
  bool sw_thermal = false;
  for (VirtualUs s = 20 * 60 * kSecond; s <= 25 * 60 * kSecond && !sw_thermal; s += kSecond)
    sw_thermal =
        (fleet->DeviceAt(3, s).clock_event_reasons() & nvmlClocksEventReasonSwThermalSlowdown) != 0;
  EXPECT_TRUE(sw_thermal);
}

TEST(Fleet, ReadingOneGpuStepsOnlyThatGpu) {
  auto fleet = Load("fleet-1024");
  ASSERT_TRUE(fleet);
  fleet->clock().Advance(60 * kSecond);
  fleet->DeviceAt(512, fleet->Now({}));
  EXPECT_EQ(fleet->DeviceInfo(512).last_step(), 600);
  EXPECT_EQ(fleet->DeviceInfo(0).last_step(), 0);
  EXPECT_EQ(fleet->DeviceInfo(1023).last_step(), 0);
}

TEST(Fleet, EventsReachOnlyRegisteredSetsInTimeOrder) {
  auto fleet = Load("ecc-uncorrectable");
  ASSERT_TRUE(fleet);
  const std::uint32_t xids = fleet->CreateEventSet();
  const std::uint32_t all = fleet->CreateEventSet();
  fleet->Register(xids, 0, nvmlEventTypeXidCriticalError);
  fleet->Register(all, 0, fleet->SupportedEventTypes(0));
  fleet->DeliverEvents(44 * kSecond);
  EXPECT_FALSE(fleet->PopEvent(xids));
  auto sbe = fleet->PopEvent(all);  // 120/h: the first at 30 s
  ASSERT_TRUE(sbe);
  EXPECT_EQ(sbe->event_type, nvmlEventTypeSingleBitEccError);
  EXPECT_FALSE(fleet->PopEvent(all));
  fleet->DeliverEvents(45 * kSecond);
  auto dbe = fleet->PopEvent(all);
  auto xid_all = fleet->PopEvent(all);
  ASSERT_TRUE(dbe && xid_all);
  EXPECT_EQ(dbe->event_type, nvmlEventTypeDoubleBitEccError);
  EXPECT_EQ(xid_all->event_data, 48u);
  auto xid = fleet->PopEvent(xids);
  ASSERT_TRUE(xid);
  EXPECT_EQ(xid->event_type, nvmlEventTypeXidCriticalError);
  EXPECT_EQ(xid->event_data, 48u);
  const ErrorCounters c = ErrorCountersAt(fleet->scenario().gpus[0], 60 * kSecond);
  EXPECT_EQ(c.sbe_volatile, 2u);
  EXPECT_EQ(c.sbe_aggregate, 102u);
  EXPECT_EQ(c.dbe_volatile, 2u);
  EXPECT_EQ(c.dbe_aggregate, 3u);
}

}  // namespace
}  // namespace gw::sim
