#include "collect/collector.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "collect/health.h"
#include "support/sim_fixture.h"

namespace gw::collect {
namespace {

using gw::testing::SimCollector;

CollectorOptions Fast() {
  CollectorOptions o;
  o.fast_interval_s = 1;
  o.slow_interval_s = 5;
  o.memory_peak_interval_s = 0.25;
  o.call_timeout_s = 0.5;
  return o;
}

const GpuSnapshot& Gpu(const Snapshot& s, unsigned index) {
  for (const GpuSnapshot& g : s.gpus)
    if (g.identity.index == index) return g;
  ADD_FAILURE() << "no GPU " << index;
  return s.gpus.front();
}

TEST(Collector, DiscoversTheDemoFleetWithIdentity) {
  SimCollector sim("demo", Fast());
  ASSERT_TRUE(sim.ok());
  sim.Advance(12);
  auto snap = sim.Latest();
  ASSERT_EQ(snap->gpus.size(), 8u);
  EXPECT_TRUE(snap->stats.nvml_up);
  EXPECT_FALSE(snap->stats.driver_version.empty());
  for (const GpuSnapshot& g : snap->gpus) {
    EXPECT_EQ(g.value(Slot::kUp), 1) << g.identity.uuid;
    EXPECT_EQ(g.identity.uuid.rfind("GPU-", 0), 0u);
    EXPECT_FALSE(g.identity.name.empty());
    EXPECT_FALSE(g.identity.pci_bus_id.empty());
    EXPECT_GT(g.value(Slot::kMemoryTotal), 1e9);
    EXPECT_GT(g.value(Slot::kPower), 0);
    EXPECT_GE(g.value(Slot::kUtilization), 0);
    EXPECT_LE(g.value(Slot::kUtilization), 1);
    EXPECT_GT(g.value(Slot::kTemperature), 0);
    EXPECT_GT(g.value(Slot::kSmClockMax), 1e8);
    EXPECT_FALSE(IsAbsent(g.value(Slot::kThresholdSlowdown)));
  }
  // 12 s of stepped time at 1 s: the initial cycle plus 12 more.
  EXPECT_EQ(snap->stats.fast_cycles, 13u);
  EXPECT_EQ(snap->stats.slow_cycles, 3u);  // t=0, 5, 10
}

TEST(Collector, EnergyCounterIntegratesPower) {
  SimCollector sim("demo", Fast());
  ASSERT_TRUE(sim.ok());
  sim.Advance(2);
  double e0 = sim.Latest()->gpus[0].value(Slot::kEnergy);
  double p0 = sim.Latest()->gpus[0].value(Slot::kPower);
  sim.Advance(10);
  double e1 = sim.Latest()->gpus[0].value(Slot::kEnergy);
  double p1 = sim.Latest()->gpus[0].value(Slot::kPower);
  ASSERT_FALSE(IsAbsent(e0));
  // Over 10 s the energy grows by roughly the average power times 10 s.
  double expected = (p0 + p1) / 2 * 10;
  EXPECT_NEAR(e1 - e0, expected, expected * 0.35);
}

TEST(Collector, PowerCapLowersClocksAndSetsSwPowerCap) {
  SimCollector sim("power-cap", Fast());
  ASSERT_TRUE(sim.ok());
  sim.Advance(120);
  const GpuSnapshot& g = Gpu(*sim.Latest(), 0);
  EXPECT_EQ(g.value(Slot::kEventSwPowerCap), 1);
  EXPECT_LT(g.value(Slot::kSmClock), g.value(Slot::kSmClockMax));
  EXPECT_LE(g.value(Slot::kPower), g.value(Slot::kPowerLimit) * 1.02);
  EXPECT_GT(g.value(Slot::kSecondsSwPowerCap), 0);
  auto reasons = ThrottleReasons(g);
  ASSERT_FALSE(reasons.empty());
  EXPECT_EQ(reasons.front(), "power cap");
}

TEST(Collector, CoolingFailureCrossesSlowdownAndSetsThermalReasons) {
  SimCollector sim("cooling-failure", Fast());
  ASSERT_TRUE(sim.ok());
  bool crossed = false;
  for (int i = 0; i < 60 && !crossed; ++i) {
    sim.Advance(10);
    const GpuSnapshot& g = Gpu(*sim.Latest(), 0);
    crossed = g.value(Slot::kTemperature) >= g.value(Slot::kThresholdSlowdown);
  }
  ASSERT_TRUE(crossed) << "temperature never reached the slowdown threshold";
  sim.Advance(5);
  const GpuSnapshot& g = Gpu(*sim.Latest(), 0);
  EXPECT_TRUE(g.value(Slot::kEventHwThermal) == 1 || g.value(Slot::kEventSwThermal) == 1);
  EXPECT_LT(g.value(Slot::kSmClock), g.value(Slot::kSmClockMax));
}

TEST(Collector, LostGpuIsReportedWhileOthersKeepBeingCollected) {
  SimCollector sim("fall-off-bus", Fast());
  ASSERT_TRUE(sim.ok());
  sim.Advance(10);
  EXPECT_EQ(Gpu(*sim.Latest(), 1).value(Slot::kUp), 1);
  sim.Advance(60);
  auto snap = sim.Latest();
  const GpuSnapshot& lost = Gpu(*snap, 1);
  EXPECT_TRUE(lost.lost);
  EXPECT_EQ(lost.value(Slot::kUp), 0);
  EXPECT_TRUE(IsAbsent(lost.value(Slot::kTemperature)));
  // XID 79 counted, once.
  ASSERT_EQ(lost.xid_counts.size(), 1u);
  EXPECT_EQ(lost.xid_counts[0].first, 79u);
  EXPECT_EQ(lost.xid_counts[0].second, 1u);
  // The other GPU is fine and still collected.
  const GpuSnapshot& ok = Gpu(*snap, 0);
  EXPECT_EQ(ok.value(Slot::kUp), 1);
  EXPECT_FALSE(IsAbsent(ok.value(Slot::kTemperature)));
  uint64_t cycles = snap->stats.fast_cycles;
  sim.Advance(5);
  EXPECT_EQ(sim.Latest()->stats.fast_cycles, cycles + 5);
  auto problems = HealthProblems(lost);
  ASSERT_FALSE(problems.empty());
  EXPECT_EQ(problems.front().severity, Severity::kCritical);
  EXPECT_NE(sim.Log().find("XID 79 (GPU fell off the bus)"), std::string::npos) << sim.Log();
}

TEST(Collector, HangingCallTripsTheWatchdogAndCollectionGoesOn) {
  SimCollector sim("hang", Fast());
  ASSERT_TRUE(sim.ok());
  // Run past the hang's start; the watchdog (0.5 s) replaces the stuck worker.
  sim.Advance(90);
  auto snap = sim.Latest();
  EXPECT_GE(snap->stats.watchdog_trips, 1u);
  bool any_hung = false;
  for (const GpuSnapshot& g : snap->gpus) {
    if (g.hung[static_cast<size_t>(Call::kPower)]) {
      any_hung = true;
      EXPECT_TRUE(IsAbsent(g.value(Slot::kPower)));
      EXPECT_FALSE(IsAbsent(g.value(Slot::kTemperature)));  // the rest still collected
    }
  }
  EXPECT_TRUE(any_hung);
  uint64_t cycles = snap->stats.fast_cycles;
  sim.Advance(3);
  EXPECT_EQ(sim.Latest()->stats.fast_cycles, cycles + 3);
  EXPECT_NE(sim.Log().find("marking it hung"), std::string::npos) << sim.Log();
}

// Stop never joins a worker stuck inside NVML: with the watchdog far away (10 minutes), a stop
// during the hang returns after its own timeout, names the call, wakes the caller waiting in
// Advance, and publishes nothing afterwards.
TEST(Collector, StopDuringAHangReturnsWithinItsTimeoutAndSaysWhatWasLeft) {
  CollectorOptions o = Fast();
  o.call_timeout_s = 600;
  SimCollector sim("hang", o);
  ASSERT_TRUE(sim.ok());
  sim.Advance(8);
  const uint64_t published = sim.Latest()->generation;
  Status advanced = Status::Ok();
  std::thread stuck([&] { advanced = sim.collector().Advance(5, 120); });  // hangs at t = 10 s
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto t0 = std::chrono::steady_clock::now();
  Collector::StopOutcome out = sim.collector().Stop(0.5);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  stuck.join();
  EXPECT_LT(took, 30);  // generous: it is 0.5 s + 0.2 s; without the fix it never returns
  EXPECT_FALSE(advanced.ok());
  ASSERT_EQ(out.abandoned.size(), 1u);
  EXPECT_NE(out.abandoned[0].find("GPU 1, nvmlDeviceGetPowerUsage"), std::string::npos)
      << out.abandoned[0];
  EXPECT_GE(sim.Latest()->generation, published);  // t = 9 s was published before the hang
  // A second Stop returns the same outcome at once.
  EXPECT_EQ(sim.collector().Stop(0.5).abandoned, out.abandoned);
}

TEST(Collector, NotSupportedMeansAbsentNotZero) {
  SimCollector sim("demo", Fast());
  ASSERT_TRUE(sim.ok());
  sim.Advance(2);
  bool some_without_fan = false, some_with_fan = false;
  for (const GpuSnapshot& g : sim.Latest()->gpus) {
    if (IsAbsent(g.value(Slot::kFanSpeed)))
      some_without_fan = true;
    else
      some_with_fan = true;
    EXPECT_NE(g.value(Slot::kFanSpeed), 0) << "a passive GPU must not report fan 0";
  }
  EXPECT_TRUE(some_without_fan);
  (void)some_with_fan;
}

// The self-metrics time calls in stopwatch ticks and turn them into seconds on each publish:
// the per-call totals are counters (gpuwarden_nvml_call_duration_seconds_total) and must never
// go down, whatever the rate's estimate does; every call made takes some time.
TEST(Collector, CallSecondsAreCountersThatNeverGoDown) {
  SimCollector sim("demo", Fast());
  ASSERT_TRUE(sim.ok());
  std::array<double, kCallCount> last{};
  for (int step = 0; step < 30; ++step) {
    sim.Advance(1);
    const CollectorStats& stats = sim.Latest()->stats;
    for (size_t c = 0; c < kCallCount; ++c) {
      EXPECT_GE(stats.calls[c].seconds_total, last[c]) << CallName(static_cast<Call>(c));
      last[c] = stats.calls[c].seconds_total;
      if (stats.calls[c].calls > 0) {
        EXPECT_GT(stats.calls[c].seconds_total, 0) << CallName(static_cast<Call>(c));
        EXPECT_GE(stats.calls[c].max_seconds * static_cast<double>(stats.calls[c].calls),
                  stats.calls[c].seconds_total * 0.999)
            << CallName(static_cast<Call>(c));
      }
    }
  }
}

TEST(Collector, LegacyLibraryLosesOnlyTheFieldsItLacks) {
  SimCollector sim("demo", Fast(), GW_SIM_LEGACY_LIBRARY);
  ASSERT_TRUE(sim.ok());
  sim.Advance(6);
  const GpuSnapshot& g = sim.Latest()->gpus[0];
  EXPECT_TRUE(IsAbsent(g.value(Slot::kEnergy)));             // no GetTotalEnergyConsumption
  EXPECT_TRUE(IsAbsent(g.value(Slot::kMemoryReserved)));     // v1 memory info only
  EXPECT_TRUE(IsAbsent(g.value(Slot::kMemoryTemperature)));  // no GetFieldValues
  EXPECT_FALSE(IsAbsent(g.value(Slot::kMemoryUsed)));
  EXPECT_FALSE(IsAbsent(g.value(Slot::kPower)));
  EXPECT_FALSE(IsAbsent(g.value(Slot::kEventSwPowerCap)));  // ThrottleReasons fallback
  EXPECT_FALSE(IsAbsent(g.value(Slot::kProcesses)));        // v1 process list
  EXPECT_EQ(g.value(Slot::kUp), 1);
}

TEST(Collector, NoLibraryPublishesWhy) {
  Logger logger(LogLevel::kError, [](LogLevel, const std::string&) {});
  Collector c(nullptr, "cannot load NVML library 'x'", {}, &logger);
  c.Start();
  auto snap = c.Latest();
  EXPECT_FALSE(snap->stats.nvml_up);
  EXPECT_EQ(snap->stats.nvml_error, "cannot load NVML library 'x'");
  EXPECT_TRUE(snap->gpus.empty());
  EXPECT_FALSE(c.Advance(1).ok());
}

TEST(Collector, SnapshotsAreStampedByTheConfiguredClock) {
  ManualClock clock(1'700'000'000'000);
  {
    Logger logger(LogLevel::kError, [](LogLevel, const std::string&) {});
    CollectorOptions options;
    options.clock = &clock;
    Collector c(nullptr, "no NVML", options, &logger);
    c.Start();
    EXPECT_DOUBLE_EQ(c.Latest()->taken_unix_seconds, 1'700'000'000.0);
  }
  // Stepped: virtual t = 0 is the clock's time at discovery; snapshots then follow virtual time.
  CollectorOptions options = Fast();
  options.clock = &clock;
  SimCollector sim("demo", options);
  ASSERT_TRUE(sim.ok());
  EXPECT_NEAR(sim.Latest()->taken_unix_seconds, 1'700'000'000.0, 1e-3);
  clock.AdvanceMs(3'600'000);  // the wall clock no longer matters
  sim.Advance(12);
  EXPECT_NEAR(sim.Latest()->taken_unix_seconds, 1'700'000'012.0, 1e-3);
}

TEST(Collector, UncorrectableEccBurstIsCountedWithXid48) {
  SimCollector sim("ecc-uncorrectable", Fast());
  ASSERT_TRUE(sim.ok());
  sim.Advance(180);
  bool found = false;
  for (const GpuSnapshot& g : sim.Latest()->gpus) {
    if (g.value(Slot::kEccUncorrectedVolatile) > 0) {
      found = true;
      bool xid48 = false;
      for (auto [xid, n] : g.xid_counts) xid48 |= xid == 48 && n > 0;
      EXPECT_TRUE(xid48);
      EXPECT_GE(g.value(Slot::kEccUncorrectedAggregate), g.value(Slot::kEccUncorrectedVolatile));
    }
  }
  EXPECT_TRUE(found);
}

TEST(Collector, RowRemapFailureIsReported) {
  SimCollector sim("row-remap", Fast());
  ASSERT_TRUE(sim.ok());
  sim.Advance(300);
  bool failure = false;
  for (const GpuSnapshot& g : sim.Latest()->gpus) {
    if (g.value(Slot::kRemappedFailure) == 1) {
      failure = true;
      bool xid64 = false;
      for (auto [xid, n] : g.xid_counts) xid64 |= xid == 64;
      EXPECT_TRUE(xid64);
    }
  }
  EXPECT_TRUE(failure);
}

TEST(Collector, SubSecondSpikesShowInPeaks) {
  CollectorOptions o = Fast();
  SimCollector sim("spikes", o);
  ASSERT_TRUE(sim.ok());
  double max_gap = 0;
  for (int i = 0; i < 30; ++i) {
    sim.Advance(1);
    for (const GpuSnapshot& g : sim.Latest()->gpus) {
      double peak = g.value(Slot::kUtilizationPeak);
      // Ratios come from whole percents: exactly k/100, so /metrics shows 0.35, not
      // 0.35000000000000003.
      EXPECT_EQ(peak, std::round(peak * 100) / 100);
      double gap = peak - g.value(Slot::kUtilization);
      if (!IsAbsent(gap)) max_gap = std::max(max_gap, gap);
    }
  }
  // A spike between two 1 s reads shows in the peak, not in the instantaneous value.
  EXPECT_GT(max_gap, 0.2);
}

TEST(Collector, MemorySpikesBetweenCyclesShowInTheMemoryPeak) {
  SimCollector sim("spikes", Fast());  // memory sub-sampled every 250 ms
  ASSERT_TRUE(sim.ok());
  double max_extra = 0, max_power_gap = 0;
  for (int i = 0; i < 30; ++i) {
    sim.Advance(1);
    for (const GpuSnapshot& g : sim.Latest()->gpus) {
      max_extra = std::max(max_extra, g.value(Slot::kMemoryUsedPeak) - g.value(Slot::kMemoryUsed));
      max_power_gap = std::max(max_power_gap, g.value(Slot::kPowerPeak) - g.value(Slot::kPower));
    }
  }
  // spikes.yaml adds 8 GiB for 300 ms every 5 s; the 1 s reads never land inside a spike.
  EXPECT_GE(max_extra, 7.5 * (1ull << 30));
  EXPECT_GT(max_power_gap, 100);  // 690-700 W spikes over a lightly loaded GPU
}

TEST(Collector, MemoryPeakSubSamplerCanBeTurnedOff) {
  CollectorOptions o = Fast();
  o.memory_peak_interval_s = 0;
  SimCollector sim("spikes", o);
  ASSERT_TRUE(sim.ok());
  for (int i = 0; i < 12; ++i) {
    sim.Advance(1);
    for (const GpuSnapshot& g : sim.Latest()->gpus)
      EXPECT_EQ(g.value(Slot::kMemoryUsedPeak), g.value(Slot::kMemoryUsed));
  }
}

}  // namespace
}  // namespace gw::collect
