// Scenario parsing: the shipped scenarios load, replication is deterministic, and every
// rejection names the file and the line at fault.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "sim/scenario.h"

namespace gw::sim {
namespace {

constexpr std::int64_t kWallClock = 1'750'000'000;

std::string DataPath(const std::string& name) {
  return std::string(GW_SOURCE_DIR) + "/tests/sim/data/" + name;
}

std::string ErrorOf(const Expected<Scenario>& result) {
  return result.ok() ? std::string("(parsed)") : result.error().message;
}

TEST(Scenario, EveryFileInScenariosIsEmbeddedAndParses) {
  std::set<std::string> on_disk;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(GW_SOURCE_DIR) + "/scenarios"))
    if (entry.path().extension() == ".yaml") on_disk.insert(entry.path().stem().string());
  std::set<std::string> embedded;
  for (const EmbeddedScenario& e : EmbeddedScenarios()) {
    embedded.insert(std::string(e.name));
    Expected<Scenario> s = LoadScenario(std::string(e.name), kWallClock);
    EXPECT_TRUE(s.ok()) << e.name << ": " << ErrorOf(s);
  }
  EXPECT_EQ(on_disk, embedded);
  EXPECT_TRUE(on_disk.count("demo"));
}

TEST(Scenario, DemoIsAnEightGpuMixedServer) {
  Expected<Scenario> s = LoadScenario("demo", kWallClock);
  ASSERT_TRUE(s.ok()) << ErrorOf(s);
  ASSERT_EQ(s->gpus.size(), 8u);
  EXPECT_EQ(s->gpus[0].model->nvml_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(s->gpus[4].model->nvml_name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(s->gpus[6].model->nvml_name, "NVIDIA H200");
  EXPECT_EQ(s->gpus[7].model->nvml_name, "NVIDIA L40S");
  EXPECT_EQ(s->clock, ClockMode::kRealtime);
  EXPECT_EQ(s->start_time_s, kWallClock);  // no start_time: the caller's wall clock
}

TEST(Scenario, PathsAreReadFromDisk) {
  Expected<Scenario> s =
      LoadScenario(std::string(GW_SOURCE_DIR) + "/scenarios/power-cap.yaml", kWallClock);
  ASSERT_TRUE(s.ok()) << ErrorOf(s);
  EXPECT_EQ(s->start_time_s, 1'700'000'000);
  EXPECT_EQ(s->clock, ClockMode::kStepped);
  Expected<Scenario> missing = LoadScenario("/nonexistent/x.yaml", kWallClock);
  EXPECT_NE(ErrorOf(missing).find("/nonexistent/x.yaml:0: cannot open"), std::string::npos);
  Expected<Scenario> unknown = LoadScenario("no-such-scenario", kWallClock);
  EXPECT_NE(ErrorOf(unknown).find("embedded: "), std::string::npos) << ErrorOf(unknown);
}

TEST(Scenario, ReplicasGetDistinctIdentityAndPids) {
  Expected<Scenario> s = LoadScenario("fleet-1024", kWallClock);
  ASSERT_TRUE(s.ok()) << ErrorOf(s);
  ASSERT_EQ(s->gpus.size(), 1024u);
  std::set<std::string> uuids;
  for (const GpuSpec& g : s->gpus) {
    uuids.insert(g.uuid);
    EXPECT_EQ(g.uuid.size(), 40u) << g.uuid;  // GPU- + 8-4-4-4-12
  }
  EXPECT_EQ(uuids.size(), 1024u);
  EXPECT_EQ(s->gpus[0].processes[0].pid, 30000u);
  EXPECT_EQ(s->gpus[1023].processes[0].pid, 31023u);
  EXPECT_EQ(s->gpus[1].pci_bus, 0x2Au);
  EXPECT_EQ(s->gpus[9].pci_domain, 1u);
  // Same seed, same identities.
  Expected<Scenario> again = LoadScenario("fleet-1024", kWallClock + 5);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->gpus[77].uuid, s->gpus[77].uuid);
  EXPECT_EQ(again->gpus[77].serial, s->gpus[77].serial);
}

struct BadCase {
  const char* file;
  const char* expected;  // "file:line: ..." prefix and a fragment of the message
  const char* fragment;
};

class BadScenario : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadScenario, NamesFileAndLine) {
  const BadCase& c = GetParam();
  const std::string path = DataPath(c.file);
  const std::string error = ErrorOf(LoadScenario(path, kWallClock));
  EXPECT_EQ(error.rfind(path + ":" + c.expected, 0), 0u) << error;
  EXPECT_NE(error.find(c.fragment), std::string::npos) << error;
}

INSTANTIATE_TEST_SUITE_P(
    Files, BadScenario,
    ::testing::Values(BadCase{"bad-unknown-key.yaml", "7: ", "unknown key 'power_limit'"},
                      BadCase{"bad-model.yaml", "4: ", "unknown GPU model 'NVIDIA H900'"},
                      BadCase{"bad-fault.yaml", "6: ", "unknown fault type 'meltdown'"},
                      BadCase{"bad-duration.yaml", "6: ", "expected a duration"},
                      BadCase{"bad-remap-on-volta.yaml", "5: ", "has no row remapping"},
                      BadCase{"bad-syntax.yaml", "5: ", ""}));

TEST(Scenario, InlineErrorsCarryTheLine) {
  const char* text =
      "gpus:\n"
      "  - model: A100-80GB\n"
      "    faults:\n"
      "      - {type: power_cap, at: 1s, limit_w: 900}\n";
  const std::string error = ErrorOf(ParseScenario(text, "inline.yaml", kWallClock));
  EXPECT_EQ(error.rfind("inline.yaml:4: ", 0), 0u) << error;
  EXPECT_NE(error.find("limit_w"), std::string::npos) << error;

  const std::string hang = ErrorOf(ParseScenario(
      "gpus:\n  - model: H100\n    faults:\n      - {type: hang, function: nvmlNoSuch}\n", "h.yaml",
      kWallClock));
  EXPECT_EQ(hang.rfind("h.yaml:4: ", 0), 0u) << hang;

  const std::string empty = ErrorOf(ParseScenario("seed: 3\n", "e.yaml", kWallClock));
  EXPECT_NE(empty.find("'gpus' must be a non-empty list"), std::string::npos) << empty;
}

TEST(Scenario, DefaultsFillAnUnderspecifiedGpu) {
  Expected<Scenario> s = ParseScenario("gpus:\n  - model: V100\n", "d.yaml", kWallClock);
  ASSERT_TRUE(s.ok()) << ErrorOf(s);
  const GpuSpec& g = s->gpus[0];
  EXPECT_EQ(g.power_limit_w, 300u);
  EXPECT_DOUBLE_EQ(g.ambient_c, 30);
  ASSERT_EQ(g.workload.size(), 1u);
  EXPECT_EQ(g.workload[0].type, WorkloadType::kIdle);
  EXPECT_EQ(s->driver.version, "550.127.08");
  EXPECT_EQ(s->driver.process_info_v3_stride, 24u);
  EXPECT_EQ(s->name, "d");
}

TEST(Duration, ParsesPrometheusStyleDurations) {
  VirtualUs us = 0;
  EXPECT_TRUE(ParseDurationUs("30s", &us));
  EXPECT_EQ(us, 30'000'000);
  EXPECT_TRUE(ParseDurationUs("500ms", &us));
  EXPECT_EQ(us, 500'000);
  EXPECT_TRUE(ParseDurationUs("1h30m", &us));
  EXPECT_EQ(us, 5'400'000'000);
  EXPECT_TRUE(ParseDurationUs("2.5", &us));
  EXPECT_EQ(us, 2'500'000);
  for (const char* bad : {"", "5 minutes", "1.2.3s", "s", "-1s", "30m1h", "1x", "10s5"})
    EXPECT_FALSE(ParseDurationUs(bad, &us)) << bad;
}

}  // namespace
}  // namespace gw::sim
