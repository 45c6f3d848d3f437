#include "base/stopwatch.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>

namespace gw {
namespace {

TEST(Stopwatch, TicksNeverRunBackwardsOnOneThread) {
  uint64_t last = Ticks();
  for (int i = 0; i < 100000; ++i) {
    const uint64_t now = Ticks();
    ASSERT_GE(now, last);
    last = now;
  }
  EXPECT_EQ(TicksSince(Ticks() + 1'000'000'000), 0u);  // a start "in the future" gives 0
}

// The rate turns ticks into the seconds steady_clock saw over the same span. Not a timing goal:
// both clocks time one sleep; the bound only allows for the reads not being simultaneous.
TEST(Stopwatch, TickRateAgreesWithSteadyClock) {
  TickRate rate;
  const auto s0 = std::chrono::steady_clock::now();
  const uint64_t t0 = Ticks();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const uint64_t ticks = TicksSince(t0);
  const double steady =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count();
  const double seconds = static_cast<double>(ticks) * rate.SecondsPerTick();
  EXPECT_GE(seconds, 0.029);
  EXPECT_NEAR(seconds, steady, 0.05 * steady + 0.002);
  if (!TicksAreCycles()) {
    EXPECT_EQ(rate.SecondsPerTick(), 1e-9);
  }
}

TEST(Stopwatch, CoarseClockFollowsTheMonotonicClock) {
  const int64_t fine = std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now().time_since_epoch())
                           .count();
  const int64_t coarse = CoarseMonotonicNs();
  // Same time base, at most a kernel tick (≤ 10 ms) behind.
  EXPECT_LE(coarse, fine + 1'000'000);
  EXPECT_GE(coarse, fine - 20'000'000);
}

}  // namespace
}  // namespace gw
