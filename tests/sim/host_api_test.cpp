// Host processes driving simulated GPUs through the C API: real child processes that declare
// GPUWARDEN_SIM_WORKLOAD appear as compute processes on the GPUs their CUDA_VISIBLE_DEVICES /
// SLURM_JOB_GPUS name, and load those GPUs while they live.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "sim/sim_library.h"
#include "support/process.h"

namespace gw::sim::testing {
namespace {

using gw::testing::Process;
using gw::testing::TempDir;
using gw::testing::WaitFor;
using gw::testing::WriteFile;

class HostProcessTest : public SimTest {
 protected:
  std::vector<unsigned> Pids(unsigned gpu) {
    unsigned count = 64;
    std::vector<nvmlProcessInfo_v2_t> infos(count);
    if (nvml.nvmlDeviceGetComputeRunningProcesses_v2(Gpu(gpu), &count, infos.data()) !=
        NVML_SUCCESS)
      return {};
    std::vector<unsigned> pids;
    for (unsigned i = 0; i < count; ++i) pids.push_back(infos[i].pid);
    return pids;
  }
  bool Lists(unsigned gpu, pid_t pid) {
    const std::vector<unsigned> pids = Pids(gpu);
    return std::find(pids.begin(), pids.end(), static_cast<unsigned>(pid)) != pids.end();
  }
  unsigned Util(unsigned gpu) {
    nvmlUtilization_t u{};
    EXPECT_EQ(nvml.nvmlDeviceGetUtilizationRates(Gpu(gpu), &u), NVML_SUCCESS);
    return u.gpu;
  }
  unsigned PowerMw(unsigned gpu) {
    unsigned mw = 0;
    EXPECT_EQ(nvml.nvmlDeviceGetPowerUsage(Gpu(gpu), &mw), NVML_SUCCESS);
    return mw;
  }
  unsigned long long UsedMemory(unsigned gpu) {
    nvmlMemory_t m{};
    EXPECT_EQ(nvml.nvmlDeviceGetMemoryInfo(Gpu(gpu), &m), NVML_SUCCESS);
    return m.used;
  }
  void Advance(unsigned long long ms) { ASSERT_EQ(nvml.nvmlSimAdvance(ms), NVML_SUCCESS); }

  TempDir dir_;
};

constexpr const char* kScenario = R"(
name: host
clock: stepped
host_processes: true
host_scan_interval: 50ms
gpus:
  - model: A100-80GB
    count: 4
)";

TEST_F(HostProcessTest, ChildProcessesDriveTheirGpus) {
  WriteFile(dir_ / "host.yaml", kScenario);
  Start(dir_ / "host.yaml");
  char uuid2[96] = "";
  ASSERT_EQ(nvml.nvmlDeviceGetUUID(Gpu(2), uuid2, sizeof uuid2), NVML_SUCCESS);
  Advance(5'000);
  const unsigned idle_power = PowerMw(1);
  EXPECT_EQ(Util(1), 0u);

  Process training(
      {"/usr/bin/env", "GPUWARDEN_SIM_WORKLOAD=training", "CUDA_VISIBLE_DEVICES=1", "sleep", "60"},
      dir_ / "training.log");
  // By UUID (a prefix, as CUDA accepts) through SLURM_JOB_GPUS when CUDA_VISIBLE_DEVICES is unset.
  Process inference(
      {"/usr/bin/env", "-u", "CUDA_VISIBLE_DEVICES", "GPUWARDEN_SIM_WORKLOAD=inference",
       std::string("SLURM_JOB_GPUS=") + std::string(uuid2).substr(0, 20), "sleep", "60"},
      dir_ / "inference.log");
  // Declares no known workload: ignored.
  Process unknown(
      {"/usr/bin/env", "GPUWARDEN_SIM_WORKLOAD=nonsense", "CUDA_VISIBLE_DEVICES=3", "sleep", "60"},
      dir_ / "unknown.log");
  ASSERT_TRUE(training.started() && inference.started() && unknown.started());
  ASSERT_TRUE(WaitFor([&] { return Lists(1, training.pid()) && Lists(2, inference.pid()); }, 20));
  EXPECT_FALSE(Lists(0, training.pid()));
  EXPECT_FALSE(Lists(3, unknown.pid()));
  Advance(20'000);
  EXPECT_GE(Util(1), 85u);
  EXPECT_GT(PowerMw(1), idle_power + 100'000);
  EXPECT_GE(UsedMemory(1), 30'000ULL << 20);
  EXPECT_EQ(Util(3), 0u);

  // The process ends: the GPU is released and goes idle.
  const pid_t training_pid = training.pid();  // pid() is -1 once the process is reaped
  training.Stop(1);
  ASSERT_TRUE(WaitFor([&] { return !Lists(1, training_pid); }, 20));
  Advance(5'000);
  EXPECT_EQ(Util(1), 0u);
  EXPECT_LT(UsedMemory(1), 1ULL << 30);
  EXPECT_TRUE(Lists(2, inference.pid()));
}

TEST_F(HostProcessTest, OffByDefault) {
  WriteFile(dir_ / "plain.yaml", "name: plain\nclock: stepped\ngpus:\n  - model: A100-80GB\n");
  Start(dir_ / "plain.yaml");
  Process training(
      {"/usr/bin/env", "GPUWARDEN_SIM_WORKLOAD=training", "CUDA_VISIBLE_DEVICES=0", "sleep", "30"},
      dir_ / "training.log");
  ASSERT_TRUE(training.started());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  Advance(5'000);
  EXPECT_FALSE(Lists(0, training.pid()));
}

}  // namespace
}  // namespace gw::sim::testing
