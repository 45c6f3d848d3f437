#include "base/utc_time.h"

#include <gtest/gtest.h>

namespace gw {
namespace {

TEST(UtcTime, SplitsMillisecondsIntoCalendarFieldsAndMillis) {
  const UtcTime u = ToUtc(1'700'000'000'123);
  EXPECT_EQ(u.tm.tm_year + 1900, 2023);
  EXPECT_EQ(u.tm.tm_mon + 1, 11);
  EXPECT_EQ(u.tm.tm_mday, 14);
  EXPECT_EQ(u.tm.tm_hour, 22);
  EXPECT_EQ(u.tm.tm_min, 13);
  EXPECT_EQ(u.tm.tm_sec, 20);
  EXPECT_EQ(u.millis, 123);
}

TEST(UtcTime, BeforeTheEpochRoundsDownToTheEarlierSecond) {
  const UtcTime u = ToUtc(-1);
  EXPECT_EQ(u.tm.tm_year + 1900, 1969);
  EXPECT_EQ(u.tm.tm_sec, 59);
  EXPECT_EQ(u.millis, 999);
}

TEST(UtcTime, GoFractionDropsTrailingZeros) {
  EXPECT_EQ(GoFraction(0), "");
  EXPECT_EQ(GoFraction(120), ".12");
  EXPECT_EQ(GoFraction(5), ".005");
  EXPECT_EQ(GoFraction(999), ".999");
}

}  // namespace
}  // namespace gw
