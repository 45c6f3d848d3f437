// `gpuwarden snapshot` as a user runs it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/agent_process.h"

namespace gw::testing {
namespace {

TEST(Snapshot, DemoTableListsEveryGpu) {
  std::string out;
  ASSERT_EQ(RunCommand({GpuwardenBinary(), "snapshot", "--simulate", "demo"}, &out), 0) << out;
  EXPECT_NE(out.find("8 GPU(s)"), std::string::npos) << out;
  EXPECT_NE(out.find("NVIDIA H100 80GB HBM3"), std::string::npos) << out;
  EXPECT_NE(out.find("NVIDIA L40S"), std::string::npos) << out;
  EXPECT_NE(out.find("THROTTLE"), std::string::npos) << out;
}

TEST(Snapshot, JsonHasEveryGpuWithMetrics) {
  std::string out;
  ASSERT_EQ(RunCommand({GpuwardenBinary(), "snapshot", "--simulate", "demo", "--json"}, &out), 0)
      << out;
  auto j = nlohmann::json::parse(out);
  ASSERT_EQ(j["gpus"].size(), 8u);
  EXPECT_TRUE(j["nvml_up"].get<bool>());
  for (const auto& g : j["gpus"]) {
    EXPECT_TRUE(g["up"].get<bool>());
    EXPECT_GT(g["metrics"]["gpu_memory_total_bytes"].get<double>(), 1e9);
    EXPECT_TRUE(g["uuid"].get<std::string>().rfind("GPU-", 0) == 0);
  }
}

TEST(Snapshot, FaultScenarioCallsOutLostGpuAndXid) {
  std::string out;
  ASSERT_EQ(
      RunCommand({GpuwardenBinary(), "snapshot", "--simulate", "fall-off-bus", "--sim-time", "60s"},
                 &out),
      0)
      << out;
  EXPECT_NE(out.find("LOST"), std::string::npos) << out;
  EXPECT_NE(out.find("XID 79 (GPU fell off the bus)"), std::string::npos) << out;
  ASSERT_EQ(RunCommand({GpuwardenBinary(), "snapshot", "--simulate", "fall-off-bus", "--sim-time",
                        "60s", "--json", "--log-level", "error"},
                       &out),
            0);
  auto j = nlohmann::json::parse(out);
  EXPECT_TRUE(j["gpus"][1]["lost"].get<bool>());
  EXPECT_EQ(j["gpus"][1]["xid_counts"]["79"].get<int>(), 1);
  EXPECT_EQ(j["gpus"][1]["health"][0]["severity"], "critical");
  EXPECT_FALSE(j["gpus"][0]["lost"].get<bool>());
}

TEST(Snapshot, ThrottleReasonsAreDecoded) {
  std::string out;
  ASSERT_EQ(
      RunCommand({GpuwardenBinary(), "snapshot", "--simulate", "power-cap", "--sim-time", "120s"},
                 &out),
      0);
  EXPECT_NE(out.find("power cap"), std::string::npos) << out;
  ASSERT_EQ(RunCommand({GpuwardenBinary(), "snapshot", "--simulate", "cooling-failure",
                        "--sim-time", "600s", "--json", "--log-level", "error"},
                       &out),
            0);
  auto j = nlohmann::json::parse(out);
  bool thermal = false;
  for (const auto& r : j["gpus"][0]["throttle_reasons"])
    thermal |= r.get<std::string>().find("thermal") != std::string::npos;
  EXPECT_TRUE(thermal) << out;
}

TEST(Snapshot, NoNvmlIsOneLineAndNonZero) {
  std::string out;
  int code = RunCommand(
      {GpuwardenBinary(), "snapshot", "--nvml-lib", "/nonexistent/libnvidia-ml.so.1"}, &out);
  EXPECT_EQ(code, 2);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_NE(out.find("cannot load NVML library"), std::string::npos) << out;
}

}  // namespace
}  // namespace gw::testing
