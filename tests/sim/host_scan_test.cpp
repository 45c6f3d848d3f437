// The /proc scan behind `host_processes: true`, over a fake proc tree, and the scenario keys.
#include <gtest/gtest.h>

#include <filesystem>

#include "sim/host_processes.h"
#include "sim/scenario.h"
#include "support/process.h"

namespace gw::sim {
namespace {

using gw::testing::TempDir;
using gw::testing::WriteFile;

void Fake(const std::string& root, int pid, const std::vector<std::string>& env) {
  const std::string dir = root + "/" + std::to_string(pid);
  std::filesystem::create_directories(dir);
  std::string text;
  for (const std::string& e : env) text += e + '\0';
  WriteFile(dir + "/environ", text);
  WriteFile(dir + "/comm", "python3\n");
}

TEST(HostScan, DeclaredWorkloadsOnNamedGpus) {
  Expected<Scenario> s = ParseScenario(
      "clock: stepped\nhost_processes: true\ngpus:\n  - model: H100\n    count: 4\n", "t.yaml", 0);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_TRUE(s->host_processes);
  EXPECT_DOUBLE_EQ(s->host_scan_interval_s, 1.0);
  TempDir root;
  Fake(root.path(), 10,
       {"PATH=/bin", "GPUWARDEN_SIM_WORKLOAD=training", "CUDA_VISIBLE_DEVICES=1,3,9"});
  Fake(root.path(), 11,
       {"GPUWARDEN_SIM_WORKLOAD=memory-bound", "SLURM_JOB_GPUS=" + s->gpus[2].uuid});
  Fake(root.path(), 12, {"GPUWARDEN_SIM_WORKLOAD=training"});  // no GPUs named
  Fake(root.path(), 13,
       {"GPUWARDEN_SIM_WORKLOAD=warp-drive", "CUDA_VISIBLE_DEVICES=0"});  // unknown
  Fake(root.path(), 14, {"CUDA_VISIBLE_DEVICES=0"});                      // declares nothing
  // CUDA_VISIBLE_DEVICES wins over SLURM_JOB_GPUS; the UUID prefix must be unique.
  Fake(root.path(), 15,
       {"SLURM_JOB_GPUS=0", "GPUWARDEN_SIM_WORKLOAD=idle", "CUDA_VISIBLE_DEVICES=GPU-"});
  std::filesystem::create_directories(root / "self");
  std::vector<HostProcess> found = ScanHostProcesses(root.path(), s->gpus);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].pid, 10u);
  EXPECT_EQ(found[0].gpus, (std::vector<unsigned>{1, 3}));
  EXPECT_EQ(found[0].workload.type, WorkloadType::kTraining);
  EXPECT_EQ(found[0].name, "python3");
  EXPECT_GT(found[0].memory_mib, 0);
  EXPECT_EQ(found[1].pid, 11u);
  EXPECT_EQ(found[1].gpus, (std::vector<unsigned>{2}));
  EXPECT_EQ(found[1].workload.type, WorkloadType::kMemoryBound);
  EXPECT_TRUE(ScanHostProcesses(root / "missing", s->gpus).empty());
}

// Two simulated machines on one host: each sees only the processes started for it.
TEST(HostScan, OnlyTheProcessesOfTheSameSimulatedMachine) {
  Expected<Scenario> s = ParseScenario(
      "clock: stepped\nhost_processes: true\ngpus:\n  - model: H100\n    count: 2\n", "t.yaml", 0);
  ASSERT_TRUE(s.ok()) << s.error().message;
  TempDir root;
  Fake(root.path(), 20, {"GPUWARDEN_SIM_WORKLOAD=training", "CUDA_VISIBLE_DEVICES=0"});
  Fake(root.path(), 21,
       {"GPUWARDEN_SIM_MACHINE=a", "GPUWARDEN_SIM_WORKLOAD=training", "CUDA_VISIBLE_DEVICES=1"});
  Fake(root.path(), 22,
       {"GPUWARDEN_SIM_WORKLOAD=idle", "CUDA_VISIBLE_DEVICES=1", "GPUWARDEN_SIM_MACHINE=b"});
  auto pids = [&](std::string_view machine) {
    std::vector<unsigned> out;
    for (const HostProcess& p : ScanHostProcesses(root.path(), s->gpus, machine))
      out.push_back(p.pid);
    return out;
  };
  EXPECT_EQ(pids(""), (std::vector<unsigned>{20}));
  EXPECT_EQ(pids("a"), (std::vector<unsigned>{21}));
  EXPECT_EQ(pids("b"), (std::vector<unsigned>{22}));
  EXPECT_TRUE(pids("c").empty());
}

TEST(HostScan, ScenarioKeys) {
  Expected<Scenario> off = ParseScenario("gpus:\n  - model: H100\n", "t.yaml", 0);
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->host_processes);
  Expected<Scenario> bad =
      ParseScenario("host_processes: maybe\ngpus:\n  - model: H100\n", "t.yaml", 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("t.yaml:1: host_processes"), std::string::npos);
  EXPECT_FALSE(
      ParseScenario("host_scan_interval: 1ms\ngpus:\n  - model: H100\n", "t.yaml", 0).ok());
  WorkloadSegment segment;
  EXPECT_TRUE(DefaultWorkloadSegment("inference", &segment));
  EXPECT_EQ(segment.type, WorkloadType::kInference);
  EXPECT_FALSE(DefaultWorkloadSegment("nope", &segment));
}

}  // namespace
}  // namespace gw::sim
