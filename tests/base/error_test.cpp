#include "base/error.h"

#include <gtest/gtest.h>

namespace gw {
namespace {

TEST(Duration, ParsesPrometheusStyle) {
  double s = 0;
  ASSERT_TRUE(ParseDurationSeconds("1h30m", &s));
  EXPECT_DOUBLE_EQ(s, 5400);
  ASSERT_TRUE(ParseDurationSeconds("250ms", &s));
  EXPECT_DOUBLE_EQ(s, 0.25);
  ASSERT_TRUE(ParseDurationSeconds("2.5", &s));
  EXPECT_DOUBLE_EQ(s, 2.5);
}

TEST(Duration, RejectsMalformed) {
  double s = 0;
  EXPECT_FALSE(ParseDurationSeconds("", &s));
  EXPECT_FALSE(ParseDurationSeconds("fast", &s));
  EXPECT_FALSE(ParseDurationSeconds("1s1h", &s));  // out of order
  EXPECT_FALSE(ParseDurationSeconds("1x", &s));
  EXPECT_FALSE(ParseDurationSeconds("-1", &s));
}

TEST(Duration, FormatsShortest) {
  EXPECT_EQ(FormatDuration(1), "1s");
  EXPECT_EQ(FormatDuration(0.25), "250ms");
  EXPECT_EQ(FormatDuration(90), "1m30s");
}

TEST(Expected, CarriesValueOrError) {
  Expected<int> good(3);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 3);
  Expected<int> bad(Error{"x.yaml:3: bad"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "x.yaml:3: bad");
}

}  // namespace
}  // namespace gw
