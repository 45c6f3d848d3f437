// Mutation fuzzing of the task layer's parsers: squeue --json, /proc/<pid>/cgroup, stat, GRES and
// TRES strings, job records. Every mutant is parsed without a crash (ASan/UBSan in CI) and either
// accepted or refused with a message.
#include <gtest/gtest.h>

#include "jobs/attribution.h"
#include "jobs/cgroup.h"
#include "jobs/job_records.h"
#include "jobs/slurm.h"
#include "support/mutate.h"

namespace gw::jobs {
namespace {

constexpr const char* kJob = R"json({"jobs": [{"job_id": 11, "job_state": "RUNNING",
  "user_name": "alice", "account": "physics", "partition": "gpu", "nodes": "vm",
  "submit_time": 1000, "eligible_time": 1000, "start_time": 1002, "end_time": 31537002,
  "gres_detail": ["gpu:a100:3(IDX:0,2-3)"], "tres_per_node": "gres:gpu:a100:3",
  "tres_per_job": "gres:gpu:1", "tres_alloc_str": "cpu=1,gres/gpu=3",
  "exit_code": {"return_code": {"number": 0}}}], "errors": []})json";

TEST(JobsFuzz, SqueueJsonMutants) {
  gw::testing::Mutator mutator(11);
  int accepted = 0;
  for (int i = 0; i < 3000; ++i) {
    const std::string mutant = mutator.Mutate(kJob);
    Expected<std::vector<SlurmJob>> jobs = ParseSqueueJson(mutant);
    if (jobs.ok()) {
      ++accepted;
      for (const SlurmJob& j : *jobs) {
        (void)j.started();
        (void)j.QueueWaitS();
        EXPECT_LE(j.gpu_indices.size(), 4096u * 4);
      }
    } else {
      EXPECT_FALSE(jobs.error().message.empty());
    }
  }
  EXPECT_GT(accepted, 0);
}

TEST(JobsFuzz, ProcTextAndGresMutants) {
  gw::testing::Mutator mutator(12);
  const std::string cgroup =
      "0::/kubepods.slice/kubepods-burstable-pod1f2e3d4c_5b6a_4789_8abc_def012345678.slice/"
      "cri-containerd-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope\n"
      "4:memory:/slurm/uid_0/job_42/step_batch/task_0\n";
  const std::string stat = "12 (a (b) c) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 777 1 1 0\n";
  for (int i = 0; i < 3000; ++i) {
    (void)ParseCgroup(mutator.Mutate(cgroup));
    std::uint64_t ticks = 0;
    (void)ParseStatStartTicks(mutator.Mutate(stat), &ticks);
    (void)ParseStatusUid(mutator.Mutate("Uid:\t1000\t1000\t1000\t1000\n"));
    (void)ParseGresIndices(mutator.Mutate("gpu:a100:2(IDX:0-1,3)"));
    (void)ParseTresGpuCount(mutator.Mutate("cpu=1,gres/gpu:a100=2,gres:gpu:3"));
    (void)SplitDeviceList(mutator.Mutate("0,GPU-abc, 2"));
    (void)JobRecordFromJson(mutator.Mutate(
        R"({"job_id":"1","gpu":{"gpus":[0],"throttle_s":{"a":1},"start_latency_s":2}})"));
  }
}

}  // namespace
}  // namespace gw::jobs
