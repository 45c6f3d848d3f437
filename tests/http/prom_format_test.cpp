#include "http/prom_format.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace gw::http {
namespace {

std::string V(double v) {
  std::string s;
  AppendPromValue(&s, v);
  return s;
}
std::string T(int64_t ms) {
  std::string s;
  AppendPromTimestamp(&s, ms);
  return s;
}

// Expected strings are what Go's strconv.FormatFloat gives in Prometheus 2.42's API.
TEST(PromFormat, ValuesLikeGo) {
  EXPECT_EQ(V(0.35), "0.35");
  EXPECT_EQ(V(1), "1");
  EXPECT_EQ(V(700), "700");
  EXPECT_EQ(V(-2.5), "-2.5");
  EXPECT_EQ(V(-0.0), "-0");
  EXPECT_EQ(V(1e-6), "0.000001");
  EXPECT_EQ(V(1e-7), "1e-07");
  EXPECT_EQ(V(1e21), "1e+21");
  EXPECT_EQ(V(1e20), "100000000000000000000");
  EXPECT_EQ(V(123456789012345678.0), "123456789012345680");
  EXPECT_EQ(V(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(V(std::nan("")), "NaN");
  EXPECT_EQ(V(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(V(-std::numeric_limits<double>::infinity()), "-Inf");
}

TEST(PromFormat, TimestampsAreSecondsWithMilliseconds) {
  EXPECT_EQ(T(1435781451781), "1435781451.781");
  EXPECT_EQ(T(1435781451000), "1435781451");
  EXPECT_EQ(T(1050), "1.050");
  EXPECT_EQ(T(7), "0.007");
  EXPECT_EQ(T(-1500), "-1.500");
}

TEST(PromFormat, ParsesTimeParameters) {
  int64_t t = 0;
  ASSERT_TRUE(ParsePromTime("1435781451.781", &t));
  EXPECT_EQ(t, 1435781451781);
  ASSERT_TRUE(ParsePromTime("1435781451", &t));
  EXPECT_EQ(t, 1435781451000);
  ASSERT_TRUE(ParsePromTime("2015-07-01T20:10:51.781Z", &t));
  EXPECT_EQ(t, 1435781451781);
  ASSERT_TRUE(ParsePromTime("2015-07-01T22:10:51.781+02:00", &t));
  EXPECT_EQ(t, 1435781451781);
  ASSERT_TRUE(ParsePromTime("2015-07-01T20:10:51Z", &t));
  EXPECT_EQ(t, 1435781451000);
  EXPECT_FALSE(ParsePromTime("", &t));
  EXPECT_FALSE(ParsePromTime("yesterday", &t));
  EXPECT_FALSE(ParsePromTime("2015-07-01", &t));
  EXPECT_FALSE(ParsePromTime("2015-07-01T20:10:51", &t));  // no zone
}

TEST(PromFormat, ParsesDurations) {
  int64_t ms = 0;
  ASSERT_TRUE(ParsePromDuration("15", &ms));
  EXPECT_EQ(ms, 15000);
  ASSERT_TRUE(ParsePromDuration("0.5", &ms));
  EXPECT_EQ(ms, 500);
  ASSERT_TRUE(ParsePromDuration("1h30m", &ms));
  EXPECT_EQ(ms, 5400000);
  ASSERT_TRUE(ParsePromDuration("250ms", &ms));
  EXPECT_EQ(ms, 250);
  EXPECT_FALSE(ParsePromDuration("-1", &ms));
  EXPECT_FALSE(ParsePromDuration("5x", &ms));
  EXPECT_FALSE(ParsePromDuration("", &ms));
}

}  // namespace
}  // namespace gw::http
