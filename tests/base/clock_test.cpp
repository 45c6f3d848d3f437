#include "base/clock.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace gw {
namespace {

int64_t ChronoNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TEST(SystemClockTest, ReadsTheSystemsWallTime) {
  const int64_t before = ChronoNowMs();
  const int64_t now = SystemClock().NowMs();
  const int64_t after = ChronoNowMs();
  EXPECT_LE(before, now);
  EXPECT_LE(now, after);
  const double seconds = SystemClock().NowSeconds();
  EXPECT_GE(seconds, static_cast<double>(before) / 1000.0);
  EXPECT_LE(seconds, static_cast<double>(ChronoNowMs() + 1) / 1000.0);
  EXPECT_EQ(&SystemClock(), &SystemClock());  // one instance for the whole process
}

TEST(ManualClockTest, StandsStillUntilSetOrAdvanced) {
  ManualClock clock(1'700'000'000'000);
  EXPECT_EQ(clock.NowMs(), 1'700'000'000'000);
  EXPECT_EQ(clock.NowMs(), 1'700'000'000'000);
  EXPECT_DOUBLE_EQ(clock.NowSeconds(), 1'700'000'000.0);
  clock.AdvanceMs(15'000);
  EXPECT_EQ(clock.NowMs(), 1'700'000'015'000);
  clock.Advance(std::chrono::microseconds(1500));
  EXPECT_EQ(clock.NowMs(), 1'700'000'015'001);  // whole milliseconds, rounded toward zero
  EXPECT_DOUBLE_EQ(clock.NowSeconds(), 1'700'000'015.0015);  // the sub-millisecond part kept
  clock.AdvanceMs(-1'000);
  EXPECT_EQ(clock.NowMs(), 1'700'000'014'001);
  clock.SetMs(42);
  EXPECT_EQ(clock.NowMs(), 42);
  clock.SetSeconds(1.25);
  EXPECT_EQ(clock.NowMs(), 1250);
  EXPECT_DOUBLE_EQ(clock.NowSeconds(), 1.25);
  EXPECT_EQ(ManualClock().NowMs(), 0);
}

TEST(ManualClockTest, IsUsableThroughTheInterface) {
  ManualClock manual(5'000);
  const Clock& clock = manual;
  manual.AdvanceMs(250);
  EXPECT_EQ(clock.NowMs(), 5'250);
  EXPECT_EQ(clock.Now(), Clock::TimePoint(std::chrono::milliseconds(5'250)));
}

TEST(ManualClockTest, AdvancesFromSeveralThreadsAtOnce) {
  ManualClock clock;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&clock] {
      for (int i = 0; i < 1000; ++i) {
        clock.AdvanceMs(1);
        (void)clock.NowMs();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(clock.NowMs(), 4000);
}

}  // namespace
}  // namespace gw
