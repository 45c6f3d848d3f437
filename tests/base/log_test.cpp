#include "base/log.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gw {
namespace {

TEST(LoggerTest, StampsEachLineWithTheClocksUtcTime) {
  ManualClock clock(1'700'000'000'123);  // 2023-11-14T22:13:20.123Z
  std::vector<std::string> lines;
  Logger logger(
      LogLevel::kInfo, [&lines](LogLevel, const std::string& line) { lines.push_back(line); },
      &clock);
  logger.Warn("disk almost full");
  clock.AdvanceMs(61'877);
  logger.Info("ok");
  logger.Debug("not shown");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "2023-11-14T22:13:20.123Z level=warn disk almost full");
  EXPECT_EQ(lines[1], "2023-11-14T22:14:22.000Z level=info ok");
}

TEST(LoggerTest, ParsesLevelNames) {
  LogLevel level = LogLevel::kInfo;
  EXPECT_TRUE(ParseLogLevel("debug", &level));
  EXPECT_EQ(level, LogLevel::kDebug);
  EXPECT_TRUE(ParseLogLevel("error", &level));
  EXPECT_EQ(level, LogLevel::kError);
  EXPECT_FALSE(ParseLogLevel("loud", &level));
  EXPECT_EQ(level, LogLevel::kError);
}

}  // namespace
}  // namespace gw
