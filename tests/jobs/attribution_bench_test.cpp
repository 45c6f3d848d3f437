// The cost of one attribution pass (issue 5, "Performance"). Prints timings; asserts only that the
// passes attributed every process (no wall-clock assertions in tests).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "jobs/attribution.h"
#include "support/process.h"

namespace gw::jobs {
namespace {

using gw::testing::TempDir;
using gw::testing::WriteFile;

void MakeTree(const std::string& root, int processes) {
  for (int pid = 1000; pid < 1000 + processes; ++pid) {
    const std::string dir = root + "/" + std::to_string(pid);
    std::filesystem::create_directories(dir);
    WriteFile(
        dir + "/stat",
        std::to_string(pid) + " (python3) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 12345 1 1 0\n");
    WriteFile(dir + "/status", "Name:\tpython3\nUid:\t0\t0\t0\t0\n");
    WriteFile(dir + "/cgroup", "0::/system.slice/slurmstepd.scope/job_" + std::to_string(pid / 8) +
                                   "/step_0/user/task_0\n");
    std::string env;
    for (int i = 0; i < 60; ++i)
      env += "SOME_VARIABLE_" + std::to_string(i) + "=" + std::string(40, 'v') + '\0';
    env += "SLURM_JOB_ID=" + std::to_string(pid / 8) + '\0' + "CUDA_VISIBLE_DEVICES=0,1" + '\0';
    WriteFile(dir + "/environ", env);
  }
}

void Measure(const char* label, int processes, int gpus) {
  TempDir root;
  MakeTree(root.path(), processes);
  std::vector<GpuProcessRef> refs;
  for (int i = 0; i < processes; ++i) refs.push_back({1000 + i, "GPU-" + std::to_string(i % gpus)});
  Attributor attributor(AttributorOptions{root.path()});
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(attributor.AttributeAll(refs).size(), static_cast<std::size_t>(processes));
  auto t1 = std::chrono::steady_clock::now();
  constexpr int kWarmPasses = 20;
  for (int i = 0; i < kWarmPasses; ++i)
    EXPECT_EQ(attributor.AttributeAll(refs).size(), refs.size());
  auto t2 = std::chrono::steady_clock::now();
  const double cold_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  const double warm_ms = std::chrono::duration<double, std::milli>(t2 - t1).count() / kWarmPasses;
  std::printf("attribution %s (%d processes): first pass %.2f ms, cached pass %.2f ms\n", label,
              processes, cold_ms, warm_ms);
}

TEST(AttributionBench, EightGpusBy64Processes) {
  Measure("8 GPUs x 64", 8 * 64, 8);
}

TEST(AttributionBench, Processes1024) {
  Measure("1,024", 1024, 8);
}

}  // namespace
}  // namespace gw::jobs
