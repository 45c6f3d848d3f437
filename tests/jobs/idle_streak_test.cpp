// The idle rule shared by the task layer and governance (jobs/idle_streak.h).
#include "jobs/idle_streak.h"

#include <gtest/gtest.h>

#include <limits>

namespace gw::jobs {
namespace {

TEST(IdleStreaks, StartsAtTheFirstIdleReadingAndEndsOnAnyOther) {
  IdleStreaks idle(0.05);
  EXPECT_TRUE(idle.Observe(0, true, true, 0.05, 100));  // at the threshold: idle
  EXPECT_TRUE(idle.Observe(0, true, true, 0.0, 110));
  EXPECT_EQ(idle.Since(0), 100);                        // the streak keeps its start
  EXPECT_FALSE(idle.Observe(0, true, true, 0.5, 120));  // active
  EXPECT_EQ(idle.Since(0), std::nullopt);
  EXPECT_TRUE(idle.Observe(0, true, true, 0.0, 130));
  EXPECT_EQ(idle.Since(0), 130);                         // a new streak
  EXPECT_FALSE(idle.Observe(0, true, false, 0.0, 140));  // no reading: not idle
  EXPECT_EQ(idle.Since(0), std::nullopt);
  EXPECT_FALSE(idle.Observe(0, false, true, 0.0, 150));  // not allocated: not idle
  EXPECT_EQ(idle.Since(0), std::nullopt);
  EXPECT_FALSE(idle.Observe(1, true, true, std::numeric_limits<double>::quiet_NaN(), 150));
}

// A pause between readings neither ends nor extends a streak: it has no gap rule.
TEST(IdleStreaks, NoGapRule) {
  IdleStreaks idle(0.05);
  idle.Observe(3, true, true, 0.0, 100);
  idle.Observe(3, true, true, 0.0, 10000);
  EXPECT_EQ(idle.Since(3), 100);
}

// Callers decide which GPUs are gone.
TEST(IdleStreaks, RetainForgetsTheOthers) {
  IdleStreaks idle(0.05);
  idle.Observe(0, true, true, 0.0, 100);
  idle.Observe(1, true, true, 0.0, 100);
  idle.Retain([](unsigned index) { return index == 1; });
  EXPECT_EQ(idle.Since(0), std::nullopt);
  EXPECT_EQ(idle.Since(1), 100);
  EXPECT_EQ(idle.since().size(), 1u);
}

}  // namespace
}  // namespace gw::jobs
