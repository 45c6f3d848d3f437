// Every unit-test file in testdata/ through the real `promtool test rules` (Prometheus 2.42)
// and `gpuwarden rules test`: the same verdict (exit code) for each, and the verdict its name
// promises (pass_* / fail_*). Where both fail, the failure text must match too (promtool's
// rule-file errors lack our LINE:COL, so those lines are compared without the position).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <sstream>

#include "support/process.h"

namespace {

std::string Gpuwarden() {
  return std::string(GW_BINARY_DIR) + "/bin/gpuwarden";
}
std::string TestData() {
  return std::string(GW_SOURCE_DIR) + "/tests/rules/testdata";
}

// Output lines, sorted (stdout and stderr interleave differently), blank lines dropped,
// "FILE:LINE:COL: " and promtool's "FILE: LINE:COL: " reduced to "FILE: ".
std::vector<std::string> Normalize(const std::string& text) {
  static const std::regex kPos(R"(^([^ :]+\.yml):? ?(\d+:\d+: )+)");
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (l.empty()) continue;
    lines.push_back(std::regex_replace(l, kPos, "$1: "));
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

std::vector<std::string> TestFiles() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(TestData()))
    if (e.path().filename().string().ends_with("_test.yml")) out.push_back(e.path().filename());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(RulesCompat, SameVerdictAsPromtool) {
  if (!std::filesystem::exists("/usr/bin/promtool")) GTEST_SKIP() << "promtool not installed";
  std::vector<std::string> files = TestFiles();
  ASSERT_GE(files.size(), 20u);
  int passing = 0, failing = 0;
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    // Both run from the testdata directory with a relative path, so file names print alike.
    std::string cd = "cd '" + TestData() + "' && ";
    std::string prom_out, gw_out;
    int prom =
        gw::testing::RunCommand({"/bin/sh", "-c", cd + "promtool test rules " + f}, &prom_out);
    int gw = gw::testing::RunCommand(
        {"/bin/sh", "-c", cd + "'" + Gpuwarden() + "' rules test " + f}, &gw_out);
    EXPECT_EQ(gw, prom) << "promtool:\n" << prom_out << "\ngpuwarden:\n" << gw_out;
    bool want_pass = f.starts_with("pass_");
    EXPECT_EQ(prom, want_pass ? 0 : 1) << prom_out;
    (want_pass ? passing : failing)++;
    EXPECT_EQ(Normalize(gw_out), Normalize(prom_out)) << "promtool:\n"
                                                      << prom_out << "\ngpuwarden:\n"
                                                      << gw_out;
  }
  EXPECT_GE(passing, 10);
  EXPECT_GE(failing, 10);
}

TEST(RulesCompat, CheckRulesSameVerdict) {
  if (!std::filesystem::exists("/usr/bin/promtool")) GTEST_SKIP() << "promtool not installed";
  for (const char* f : {"rules_gpu.yml", "rules_templates.yml", "rules_chain.yml",
                        "rules_invalid.yml", "rules_limit.yml", "rules_duplicate_keys.yml"}) {
    SCOPED_TRACE(f);
    std::string cd = "cd '" + TestData() + "' && ";
    std::string prom_out, gw_out;
    int prom =
        gw::testing::RunCommand({"/bin/sh", "-c", cd + "promtool check rules " + f}, &prom_out);
    int gw = gw::testing::RunCommand(
        {"/bin/sh", "-c", cd + "'" + Gpuwarden() + "' rules check " + f}, &gw_out);
    EXPECT_EQ(gw, prom) << prom_out << "\n" << gw_out;
    EXPECT_EQ(Normalize(gw_out), Normalize(prom_out));
  }
}

}  // namespace
