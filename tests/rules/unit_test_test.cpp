// promtool-style unit tests run in-process over every file in testdata/: files named pass_*
// must pass and fail_* must fail (the verdicts were checked with promtool 2.42; the
// integration test compat_test.cpp re-checks them against the real promtool).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <sstream>

#include "rules/unit_test.h"

namespace gw::rules {
namespace {

TEST(SeriesNotation, Expands) {
  auto v = ExpandSeriesValues("1+1x3 _ _x2 10-2x2 stale 4x1 -3 Inf");
  ASSERT_TRUE(v.ok()) << v.error().message;
  std::vector<double> want = {1, 2, 3, 4, 0, 0, 0, 10, 8, 6, 0, 4, 4, -3, INFINITY};
  std::vector<bool> present = {true, true, true, true, false, false, false, true,
                               true, true, true, true, true,  true,  true};
  ASSERT_EQ(v->values.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(v->present[i], present[i]) << i;
    if (i != 10 && present[i]) {
      EXPECT_EQ(v->values[i], want[i]) << i;
    }
  }
  EXPECT_TRUE(tsdb::IsStaleNaN(v->values[10]));
  EXPECT_FALSE(ExpandSeriesValues("1+x3").ok());
}

TEST(SeriesNotation, GoDurations) {
  EXPECT_EQ(GoDurationString(0), "0s");
  EXPECT_EQ(GoDurationString(60000), "1m0s");
  EXPECT_EQ(GoDurationString(3600000), "1h0m0s");
  EXPECT_EQ(GoDurationString(90500), "1m30.5s");
}

TEST(PromtoolTests, VerdictPerFile) {
  std::string dir = std::string(GW_SOURCE_DIR) + "/tests/rules/testdata";
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    if (!name.ends_with("_test.yml")) continue;
    ++files;
    std::vector<std::string> errs = RunRuleUnitTestFile(e.path().string());
    std::string joined;
    for (const auto& s : errs) joined += s + "\n";
    if (name.starts_with("pass_")) {
      EXPECT_TRUE(errs.empty()) << name << ":\n" << joined;
    } else {
      EXPECT_FALSE(errs.empty()) << name;
    }
  }
  EXPECT_GE(files, 20);
}

TEST(PromtoolTests, OutputLikePromtool) {
  std::string dir = std::string(GW_SOURCE_DIR) + "/tests/rules/testdata";
  std::ostringstream out, err;
  int code = RunRuleUnitTests({dir + "/fail_record_basic_test.yml"}, out, err);
  EXPECT_EQ(code, 1);
  EXPECT_EQ(err.str(),
            "  FAILED:\n"
            "    expr: \"node:gpu_power_watts:sum\", time: 2m,\n"
            "        exp: {__name__=\"node:gpu_power_watts:sum\", node=\"n1\"} 3.21E+02, "
            "{__name__=\"node:gpu_power_watts:sum\", node=\"n2\"} 7E+01\n"
            "        got: {__name__=\"node:gpu_power_watts:sum\", node=\"n1\"} 3.2E+02, "
            "{__name__=\"node:gpu_power_watts:sum\", node=\"n2\"} 7E+01\n");
  std::ostringstream out2, err2;
  EXPECT_EQ(RunRuleUnitTests({dir + "/pass_record_basic_test.yml"}, out2, err2), 0);
  EXPECT_EQ(out2.str(), "Unit Testing:  " + dir + "/pass_record_basic_test.yml\n  SUCCESS\n\n");
}

}  // namespace
}  // namespace gw::rules
