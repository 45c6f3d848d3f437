// The `diagnose` section of the configuration file: every threshold, the window and the interval,
// read from YAML, refused with FILE:LINE when out of range, and cross-checked.
#include "config/diagnose_config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>

#include "config/config.h"
#include "support/mutate.h"
#include "support/process.h"

namespace gw::config {
namespace {

using gw::testing::TempDir;
using gw::testing::WriteFile;

Status Load(const TempDir& dir, const std::string& text, Config* c) {
  WriteFile(dir / "c.yaml", text);
  return LoadConfigFile(dir / "c.yaml", c);
}

TEST(DiagnoseConfig, DefaultsAreThoseOfDiagnose) {
  Config c;
  const diagnose::Thresholds defaults;
  EXPECT_EQ(c.diagnose.window_s, 3600);
  EXPECT_EQ(c.diagnose.interval_s, 60);
  EXPECT_EQ(c.diagnose.thresholds.busy_utilization, defaults.busy_utilization);
  EXPECT_EQ(c.diagnose.thresholds.latency_factor, defaults.latency_factor);
  EXPECT_TRUE(Validate(c).ok());
}

TEST(DiagnoseConfig, EveryThresholdIsRead) {
  TempDir dir;
  Config c;
  Status s = Load(dir,
                  "diagnose:\n"
                  "  window: 2h\n"
                  "  interval: 30s\n"
                  "  thresholds:\n"
                  "    busy_utilization: 0.9\n"
                  "    throttled_share: 0.2\n"
                  "    power_cap_lowered: 0.8\n"
                  "    memory_bound_mem_util: 0.7\n"
                  "    memory_bound_factor: 2\n"
                  "    memory_pressure: 0.85\n"
                  "    memory_spike: 0.97\n"
                  "    idle_utilization: 0.02\n"
                  "    starved_utilization: 0.3\n"
                  "    thermal_margin_c: 10\n"
                  "    ecc_review_count: 1000\n"
                  "    ecc_horizon: 14d\n"
                  "    queue_wait_p90: 1h\n"
                  "    congestion_ratio: 1.2\n"
                  "    quota_over: 1.5\n"
                  "    quota_under: 0.25\n"
                  "    latency_factor: 3\n"
                  "    hollow_utilization: 0.7\n"
                  "    hollow_sm_active: 0.2\n"
                  "    hollow_occupancy: 0.1\n"
                  "    tensor_idle_sm_active: 0.6\n"
                  "    tensor_idle_ratio: 0.02\n"
                  "    nvlink_error_rate: 5\n",
                  &c);
  ASSERT_TRUE(s.ok()) << s.message();
  const diagnose::Thresholds& t = c.diagnose.thresholds;
  EXPECT_EQ(c.diagnose.window_s, 7200);
  EXPECT_EQ(c.diagnose.interval_s, 30);
  EXPECT_EQ(t.busy_utilization, 0.9);
  EXPECT_EQ(t.throttled_share, 0.2);
  EXPECT_EQ(t.power_cap_lowered, 0.8);
  EXPECT_EQ(t.memory_bound_mem_util, 0.7);
  EXPECT_EQ(t.memory_bound_factor, 2);
  EXPECT_EQ(t.memory_pressure, 0.85);
  EXPECT_EQ(t.memory_spike, 0.97);
  EXPECT_EQ(t.idle_utilization, 0.02);
  EXPECT_EQ(t.starved_utilization, 0.3);
  EXPECT_EQ(t.thermal_margin_c, 10);
  EXPECT_EQ(t.ecc_review_count, 1000);
  EXPECT_EQ(t.ecc_horizon_s, 14 * 86400);
  EXPECT_EQ(t.queue_wait_p90_s, 3600);
  EXPECT_EQ(t.congestion_ratio, 1.2);
  EXPECT_EQ(t.quota_over, 1.5);
  EXPECT_EQ(t.quota_under, 0.25);
  EXPECT_EQ(t.latency_factor, 3);
  EXPECT_EQ(t.hollow_utilization, 0.7);
  EXPECT_EQ(t.hollow_sm_active, 0.2);
  EXPECT_EQ(t.hollow_occupancy, 0.1);
  EXPECT_EQ(t.tensor_idle_sm_active, 0.6);
  EXPECT_EQ(t.tensor_idle_ratio, 0.02);
  EXPECT_EQ(t.nvlink_error_rate, 5);
  EXPECT_TRUE(Validate(c).ok()) << Validate(c).message();
  // Every key of the section was set by this file: the list and the parser agree.
  EXPECT_EQ(c.diagnose.origin.size(), DiagnoseKeys().size());
}

TEST(DiagnoseConfig, OutOfRangeValuesNameFileLineAndKey) {
  TempDir dir;
  struct Case {
    std::string text, expected;
  } cases[] = {
      {"diagnose:\n  thresholds:\n    throttled_share: 1.5\n",
       ":3: diagnose.thresholds.throttled_share: expected a ratio 0-1, got '1.5'"},
      {"diagnose:\n  thresholds:\n    busy_utilization: -0.1\n",
       ":3: diagnose.thresholds.busy_utilization: expected a ratio 0-1, got '-0.1'"},
      {"diagnose:\n  thresholds:\n    thermal_margin_c: -3\n",
       ":3: diagnose.thresholds.thermal_margin_c: expected degrees Celsius, 0 or more, got '-3'"},
      {"diagnose:\n  thresholds:\n    latency_factor: 1\n",
       ":3: diagnose.thresholds.latency_factor: expected a factor above 1, got '1'"},
      {"diagnose:\n  thresholds:\n    ecc_review_count: 0\n",
       ":3: diagnose.thresholds.ecc_review_count: expected a number above 0, got '0'"},
      {"diagnose:\n  thresholds:\n    memory_pressure: nan\n",
       ":3: diagnose.thresholds.memory_pressure: expected a ratio 0-1, got 'nan'"},
      {"diagnose:\n  thresholds:\n    congestion_ratio: lots\n",
       ":3: diagnose.thresholds.congestion_ratio: expected a number above 0, got 'lots'"},
      {"diagnose:\n  thresholds:\n    queue_wait_p90: soon\n",
       ":3: diagnose.thresholds.queue_wait_p90: expected a duration such as 30m or 7d"},
      {"diagnose:\n  thresholds:\n    ecc_horizon: 0s\n",
       ":3: diagnose.thresholds.ecc_horizon: expected a duration"},
      {"diagnose:\n  window: 30s\n",
       ":2: diagnose.window: expected a duration of at least 1m such as 1h, got '30s'"},
      {"diagnose:\n  interval: 0\n", ":2: diagnose.interval: expected a duration of at least 1s"},
      {"diagnose:\n  thresholds:\n    busy_utilization: [0.5]\n",
       ":3: diagnose.thresholds.busy_utilization: expected a single value"},
      {"diagnose:\n  thresholds:\n    busy_utilisation: 0.5\n",
       ":3: unknown key 'diagnose.thresholds.busy_utilisation'"},
      {"diagnose:\n  thresholds: 0.5\n", ":2: diagnose.thresholds: expected a mapping"},
  };
  for (const Case& k : cases) {
    Config c;
    Status s = Load(dir, k.text, &c);
    ASSERT_FALSE(s.ok()) << k.text;
    EXPECT_EQ(s.message().rfind(dir / "c.yaml", 0), 0u) << s.message();
    EXPECT_NE(s.message().find(k.expected), std::string::npos) << s.message();
  }
}

TEST(DiagnoseConfig, RulesBetweenKeysNameTheLineOfTheLastOneSet) {
  TempDir dir;
  Config c;
  ASSERT_TRUE(Load(dir, "diagnose:\n  thresholds:\n    starved_utilization: 0.04\n", &c).ok());
  Status s = Validate(c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), dir / "c.yaml" +
                             ":3: diagnose.thresholds.starved_utilization (0.04) must be above "
                             "diagnose.thresholds.idle_utilization (0.05): a data-starved GPU is "
                             "busier than an idle one");

  c = Config();
  ASSERT_TRUE(Load(dir, "diagnose:\n  thresholds:\n    quota_over: 0.4\n", &c).ok());
  s = Validate(c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), dir / "c.yaml" +
                             ":3: diagnose.thresholds.quota_under (0.5) must be below "
                             "diagnose.thresholds.quota_over (0.4)");

  c = Config();
  ASSERT_TRUE(Load(dir, "diagnose:\n  window: 5m\n  interval: 10m\n", &c).ok());
  s = Validate(c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(":3: diagnose.interval (10m) must not be longer than "
                             "diagnose.window (5m)"),
            std::string::npos)
      << s.message();

  // Set in code rather than a file: the same rule, without a location.
  c = Config();
  c.diagnose.thresholds.idle_utilization = 0.5;
  s = Validate(c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("diagnose.thresholds.starved_utilization (0.25) must be above", 0),
            0u)
      << s.message();
}

TEST(DiagnoseConfig, EveryKeyIsAConfigKeyAndDocumented) {
  std::ifstream in(std::string(GW_SOURCE_DIR) + "/docs/configuration.md");
  std::stringstream doc;
  doc << in.rdbuf();
  const std::vector<std::string>& all = ConfigKeys();
  for (const std::string& key : DiagnoseKeys()) {
    EXPECT_NE(std::find(all.begin(), all.end(), key), all.end()) << key << " not in ConfigKeys()";
    EXPECT_NE(doc.str().find("| `" + key + "` |"), std::string::npos)
        << key << " missing from docs/configuration.md";
  }
}

// Mutants of a full section: each is refused with FILE:LINE, or read into values within range.
TEST(DiagnoseConfigFuzz, MutantsAreRefusedWithALocationOrReadInRange) {
  const std::string valid =
      "diagnose:\n  window: 2h\n  interval: 30s\n  thresholds:\n    busy_utilization: 0.9\n"
      "    throttled_share: 0.2\n    memory_bound_factor: 2\n    idle_utilization: 0.02\n"
      "    starved_utilization: 0.3\n    thermal_margin_c: 10\n    ecc_horizon: 14d\n"
      "    queue_wait_p90: 1h\n    quota_under: 0.25\n    latency_factor: 3\n";
  TempDir dir;
  const std::string path = dir / "c.yaml";
  const std::regex located("^" + path + ":[0-9]+: .+");
  gw::testing::Mutator mutator(20261130);
  int refused = 0;
  for (int i = 0; i < 1500; ++i) {
    const std::string mutant = mutator.Mutate(valid);
    WriteFile(path, mutant);
    Config c;
    Status s = LoadConfigFile(path, &c);
    if (!s.ok()) {
      ++refused;
      EXPECT_TRUE(std::regex_match(s.message(), located)) << s.message() << "\n--- input:\n"
                                                          << mutant;
      continue;
    }
    const diagnose::Thresholds& t = c.diagnose.thresholds;
    for (double ratio : {t.busy_utilization, t.throttled_share, t.idle_utilization,
                         t.starved_utilization, t.quota_under})
      EXPECT_TRUE(ratio >= 0 && ratio <= 1) << mutant;
    EXPECT_TRUE(t.memory_bound_factor > 0 && std::isfinite(t.memory_bound_factor)) << mutant;
    EXPECT_TRUE(t.thermal_margin_c >= 0 && std::isfinite(t.thermal_margin_c)) << mutant;
    EXPECT_TRUE(t.latency_factor > 1 && std::isfinite(t.latency_factor)) << mutant;
    EXPECT_TRUE(t.ecc_horizon_s > 0 && t.queue_wait_p90_s > 0) << mutant;
    EXPECT_TRUE(c.diagnose.window_s >= 60 && c.diagnose.interval_s >= 1) << mutant;
  }
  EXPECT_GT(refused, 100);  // the mutator does produce bad files
}

}  // namespace
}  // namespace gw::config
