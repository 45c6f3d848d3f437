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

// A GPU a scenario process nearly fills (70 GiB of an H100's 79.4 usable) and a host process
// that asks for 30 GiB more: the host process gets what is left, so the processes' memory never
// adds up to more than the card and the GPU's used memory covers them (issue 17: GPU 0 of the
// demo listed 70 + 30 GiB on a 79.6 GiB card).
TEST_F(HostProcessTest, AHostProcessOnAFullGpuGetsWhatIsLeft) {
  WriteFile(
      dir_ / "full.yaml",
      "name: full\nclock: stepped\nhost_processes: true\nhost_scan_interval: 50ms\n"
      "gpus:\n  - model: H100\n    workload:\n      - {type: training}\n"
      "    processes:\n      - {pid: 31337, name: \"python3 train.py\", memory_mib: 71680}\n");
  Start(dir_ / "full.yaml");
  Process training(
      {"/usr/bin/env", "GPUWARDEN_SIM_WORKLOAD=training", "CUDA_VISIBLE_DEVICES=0", "sleep", "60"},
      dir_ / "training.log");
  ASSERT_TRUE(training.started());
  ASSERT_TRUE(WaitFor([&] { return Lists(0, training.pid()); }, 20));
  Advance(2'000);
  nvmlMemory_v2_t m{};
  m.version = nvmlMemory_v2;
  ASSERT_EQ(nvml.nvmlDeviceGetMemoryInfo_v2(Gpu(0), &m), NVML_SUCCESS);
  unsigned count = 8;
  std::vector<nvmlProcessInfo_v2_t> infos(count);
  ASSERT_EQ(nvml.nvmlDeviceGetComputeRunningProcesses_v2(Gpu(0), &count, infos.data()),
            NVML_SUCCESS);
  ASSERT_EQ(count, 2u);
  unsigned long long sum = 0;
  for (unsigned i = 0; i < count; ++i) sum += infos[i].usedGpuMemory;
  EXPECT_EQ(infos[0].pid, 31337u);
  EXPECT_EQ(infos[0].usedGpuMemory, 71680ULL << 20);  // the scenario's process keeps its own
  EXPECT_EQ(infos[1].pid, static_cast<unsigned>(training.pid()));
  EXPECT_GT(infos[1].usedGpuMemory, 0u);
  EXPECT_LT(infos[1].usedGpuMemory, 30ULL << 30);  // less than a training process asks for
  EXPECT_LE(sum, m.total - m.reserved);
  EXPECT_GE(m.used, sum);
  EXPECT_LE(m.used, m.total);
}

// nvmlSystemGetProcessName names a scenario process by the scenario's name and a host process by
// its comm; nvmlDeviceGetProcessUtilization splits the GPU's utilization so that the shares add up
// to it, a process with its own sm_util keeping it.
TEST_F(HostProcessTest, ProcessesHaveNamesAndUtilizationSharesThatAddUp) {
  WriteFile(dir_ / "names.yaml",
            "name: names\nclock: stepped\nhost_processes: true\nhost_scan_interval: 50ms\n"
            "gpus:\n  - model: A100-80GB\n    workload:\n      - {type: training, util: 90}\n"
            "    processes:\n      - {pid: 41000, name: \"tritonserver\", memory_mib: 20000, "
            "sm_util: 50}\n      - {pid: 41001, name: \"python3 train.py\", memory_mib: 10000}\n");
  Start(dir_ / "names.yaml");
  Process host(
      {"/usr/bin/env", "GPUWARDEN_SIM_WORKLOAD=training", "CUDA_VISIBLE_DEVICES=0", "sleep", "60"},
      dir_ / "host.log");
  ASSERT_TRUE(host.started());
  ASSERT_TRUE(WaitFor([&] { return Lists(0, host.pid()); }, 20));
  Advance(3'000);
  char name[64] = "";
  ASSERT_EQ(nvml.nvmlSystemGetProcessName(41000, name, sizeof name), NVML_SUCCESS);
  EXPECT_STREQ(name, "tritonserver");
  ASSERT_EQ(nvml.nvmlSystemGetProcessName(41001, name, sizeof name), NVML_SUCCESS);
  EXPECT_STREQ(name, "python3 train.py");
  ASSERT_EQ(nvml.nvmlSystemGetProcessName(static_cast<unsigned>(host.pid()), name, sizeof name),
            NVML_SUCCESS);
  EXPECT_STREQ(name, "sleep");  // its comm
  EXPECT_EQ(nvml.nvmlSystemGetProcessName(41000, name, 4), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(nvml.nvmlSystemGetProcessName(999999999, name, sizeof name), NVML_ERROR_NOT_FOUND);

  std::vector<nvmlProcessUtilizationSample_t> samples(8);
  unsigned count = 8;
  ASSERT_EQ(nvml.nvmlDeviceGetProcessUtilization(Gpu(0), samples.data(), &count, 0), NVML_SUCCESS);
  ASSERT_EQ(count, 3u);
  const unsigned util = Util(0);
  ASSERT_GT(util, 50u);
  unsigned sum = 0;
  for (unsigned i = 0; i < count; ++i) sum += samples[i].smUtil;
  EXPECT_EQ(sum, util);
  EXPECT_EQ(samples[0].pid, 41000u);
  EXPECT_EQ(samples[0].smUtil, 50u);
  // The other two share the rest (within the one percent rounding gives the first).
  EXPECT_LE(samples[1].smUtil > samples[2].smUtil ? samples[1].smUtil - samples[2].smUtil
                                                  : samples[2].smUtil - samples[1].smUtil,
            1u);
}

}  // namespace
}  // namespace gw::sim::testing
