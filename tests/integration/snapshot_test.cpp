// `gpuwarden snapshot` as a user runs it.
#include <gtest/gtest.h>
#include <pwd.h>
#include <unistd.h>

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

// GET /api/snapshot names each GPU process: a real process on this machine (declaring itself a
// simulated GPU process, sim/host_processes.h) with its comm, user, command line, host CPU and
// resident memory as /proc says them; a scenario process whose pid no process can have (above
// pid_max) with the scenario's name (nvmlSystemGetProcessName) and no host figures. Each carries
// its share of its GPU's SMs.
TEST(Snapshot, ProcessesCarryNamesUsersCommandsAndHostFigures) {
  TempDir dir;
  WriteFile(dir / "procs.yaml",
            "name: procs\nseed: 3\nclock: stepped\nhost_processes: true\n"
            "host_scan_interval: 50ms\ngpus:\n"
            "  - model: H100\n    workload:\n      - {type: training, util: 90}\n"
            "    processes:\n"
            "      - {pid: 4194400, name: \"python3 train.py\", memory_mib: 20480, sm_util: 60}\n"
            "  - model: H100\n");
  Process busy({"env", "GPUWARDEN_SIM_WORKLOAD=training", "CUDA_VISIBLE_DEVICES=1", "sh", "-c",
                "while :; do :; done"},
               dir / "busy.log");
  ASSERT_TRUE(busy.started());
  AgentProcess agent({"--simulate", dir / "procs.yaml", "--sim-clock", "stepped"});
  ASSERT_NE(agent.port(), 0);
  nlohmann::json gpu1, mine;
  ASSERT_TRUE(WaitFor(
      [&] {
        agent.Advance(10);  // a slow cycle: the process lists
        auto j = nlohmann::json::parse(agent.Get("/api/snapshot").body, nullptr, false);
        if (!j.is_object() || j["gpus"].size() != 2) return false;
        gpu1 = j["gpus"][1];
        for (const auto& p : gpu1["processes"])
          if (p.value("pid", 0) == busy.pid()) mine = p;
        return mine.is_object() && mine.contains("host_cpu_ratio");
      },
      60))
      << gpu1.dump() << agent.Log();
  const passwd* me = getpwuid(getuid());
  ASSERT_NE(me, nullptr);
  EXPECT_EQ(mine.value("name", ""), "sh") << mine.dump();
  EXPECT_EQ(mine.value("user", ""), me->pw_name) << mine.dump();
  EXPECT_EQ(mine.value("command", ""), "sh -c while :; do :; done") << mine.dump();
  EXPECT_GT(mine["host_cpu_ratio"].get<double>(), 0.05) << mine.dump();
  EXPECT_LE(mine["host_cpu_ratio"].get<double>(), 1.2) << mine.dump();
  EXPECT_GT(mine["host_memory_bytes"].get<double>(), 0) << mine.dump();
  EXPECT_DOUBLE_EQ(mine["memory_bytes"].get<double>(), 30.0 * (1ULL << 30));  // a training one
  // Alone on its GPU, its SM share is the GPU's utilization.
  EXPECT_NEAR(mine["sm_utilization_ratio"].get<double>(),
              gpu1["metrics"]["gpu_utilization_ratio"].get<double>(), 0.02)
      << gpu1.dump();
  EXPECT_FALSE(mine.contains("job_id"));

  auto j = nlohmann::json::parse(agent.Get("/api/snapshot").body);
  const auto& scenario = j["gpus"][0]["processes"];
  ASSERT_EQ(scenario.size(), 1u) << j["gpus"][0].dump();
  EXPECT_EQ(scenario[0]["pid"], 4194400);
  EXPECT_EQ(scenario[0].value("name", ""), "python3 train.py");
  EXPECT_DOUBLE_EQ(scenario[0]["sm_utilization_ratio"].get<double>(), 0.6);
  for (const char* key : {"user", "command", "host_cpu_ratio", "host_memory_bytes"})
    EXPECT_FALSE(scenario[0].contains(key)) << key << " " << scenario[0].dump();
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
