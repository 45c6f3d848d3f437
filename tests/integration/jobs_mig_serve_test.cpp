// The task layer over MIG instances and GPM signals, end to end through the real gpuwarden binary
// and the simulator (dlopen path): scenarios/mig.yaml (H100s partitioned into MIG instances) and
// scenarios/busy-but-hollow.yaml (utilization near 100 % with little SM activity, beside healthy
// training). Jobs are real processes declaring a simulated workload (docs/scenarios.md, "Host
// processes") and naming their job with GPUWARDEN_JOB; a MIG job names its instance's MIG UUID in
// CUDA_VISIBLE_DEVICES, as CUDA and Slurm do.
//
// Checks: the MIG job is tied to its instance (gpu_allocation_info with mig_instance and
// mig_profile), counts as the instance's share of the GPU (gpu_job_gpus = gpu_mig_slice_ratio),
// and its record and `gpuwarden jobs show` say so ("0.43 GPU (3g.40gb)"); the busy-but-hollow
// job's SM activity is low while its utilization is high, in /metrics, its record and `jobs show`,
// while the training job's SM and tensor activity are high.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "support/agent_process.h"

namespace gw::testing {
namespace {

using nlohmann::json;

std::string Scenario(const std::string& name) {
  return std::string(GW_SOURCE_DIR) + "/scenarios/" + name;
}

std::optional<Sample> Find(const std::vector<Sample>& samples, const std::string& name,
                           const std::map<std::string, std::string>& labels) {
  for (const Sample& s : samples) {
    if (s.name != name) continue;
    bool all = true;
    for (const auto& [k, v] : labels) all = all && s.labels.count(k) && s.labels.at(k) == v;
    if (all) return s;
  }
  return std::nullopt;
}

// Waits (advancing simulated time) until the job's record is written; its JSON.
json EndedRecord(AgentProcess& agent, const std::string& job_id) {
  json record;
  EXPECT_TRUE(WaitFor(
      [&] {
        agent.Advance(10);
        HttpReply r = agent.Get("/api/gw/v1/jobs/" + job_id);
        if (r.status != 200) return false;
        record = json::parse(r.body)["data"];
        return record["state"] == "ENDED";
      },
      60))
      << record.dump() << agent.Log();
  return record;
}

// The 3g.40gb instance of GPU 1 in scenarios/mig.yaml: its UUID outlives the re-partition at
// 120 s (same GPU instance id and profile), so a job on it stays tied to it across the change.
constexpr const char* kMig3g = "MIG-a1000000-0000-4000-8000-000000000000";

TEST(JobsMigServe, AJobOnAMigInstanceIsTiedToItAndCountsItsShare) {
  TempDir dir;
  WriteFile(dir / "gpuwarden.yaml", "jobs:\n  idle_window: 1m\n");
  AgentProcess agent({"--simulate", Scenario("mig.yaml"), "--sim-clock", "stepped", "--config",
                      dir / "gpuwarden.yaml", "--data-dir", dir / "data"});
  ASSERT_NE(agent.port(), 0);
  agent.Advance(20);

  // The instance as the collector reports it: GPU, GPU-instance id, profile, share.
  std::vector<Sample> samples = ParseExposition(agent.Get("/metrics").body);
  std::optional<Sample> instance = Find(samples, "gpu_mig_info", {{"mig_uuid", kMig3g}});
  ASSERT_TRUE(instance) << "no gpu_mig_info for " << kMig3g << "\n" << agent.Log();
  const std::string gpu = instance->labels.at("gpu"), gi = instance->labels.at("mig_instance");
  const std::string profile = instance->labels.at("mig_profile");
  EXPECT_EQ(profile, "3g.40gb");
  auto ratio = Find(samples, "gpu_mig_slice_ratio", {{"gpu", gpu}, {"mig_instance", gi}});
  ASSERT_TRUE(ratio);
  const double share = ratio->value;
  EXPECT_NEAR(share, 3.0 / 7, 1e-9);  // 3 compute slices of an H100's 7

  Process job(
      {"env", "GPUWARDEN_SIM_WORKLOAD=training", std::string("CUDA_VISIBLE_DEVICES=") + kMig3g,
       "GPUWARDEN_JOB=mig-train", "GPUWARDEN_TEAM=vision", "sleep", "600"},
      dir / "job.log");
  ASSERT_TRUE(job.started());
  std::string metrics;
  ASSERT_TRUE(WaitFor(
      [&] {
        agent.Advance(10);
        metrics = agent.Get("/metrics").body;
        return metrics.find("job_id=\"mig-train\"") != std::string::npos;
      },
      60))
      << metrics << agent.Log();
  agent.Advance(30);
  auto check_tied = [&](const char* when) {
    samples = ParseExposition(agent.Get("/metrics").body);
    auto info = Find(samples, "gpu_allocation_info", {{"job_id", "mig-train"}});
    ASSERT_TRUE(info) << when;
    EXPECT_EQ(info->labels.at("gpu"), gpu) << when;
    EXPECT_EQ(info->labels["mig_instance"], gi) << when;
    EXPECT_EQ(info->labels["mig_profile"], profile) << when;
    auto gpus = Find(samples, "gpu_job_gpus", {{"job_id", "mig-train"}});
    ASSERT_TRUE(gpus) << when;
    EXPECT_NEAR(gpus->value, share, 1e-9) << when;
  };
  check_tied("before the re-partition");
  auto seconds = Find(samples, "gpu_job_gpu_seconds_total", {{"job_id", "mig-train"}});
  ASSERT_TRUE(seconds);
  EXPECT_GE(seconds->value, share * 30);
  EXPECT_LT(seconds->value, share * 120);  // a share of the time, not whole GPU-seconds
  auto sm = Find(samples, "gpu_job_sm_active_ratio", {{"job_id", "mig-train"}, {"stat", "avg"}});
  ASSERT_TRUE(sm) << "the instance's GPM SM activity";
  EXPECT_GT(sm->value, 0.3);

  // GPU 1 is re-partitioned at 120 s; the 3g instance keeps its UUID, the job stays on it.
  agent.Advance(60);
  check_tied("after the re-partition");

  job.Stop();
  const json record = EndedRecord(agent, "mig-train");
  ASSERT_EQ(record["gpu"]["mig"].size(), 1u) << record.dump();
  EXPECT_EQ(record["gpu"]["mig"][0]["mig_uuid"], kMig3g);
  EXPECT_EQ(record["gpu"]["mig"][0]["mig_profile"], profile);
  EXPECT_NEAR(record["gpu"]["gpu_equivalents"].get<double>(), share, 1e-9);
  EXPECT_TRUE(record["gpu"].contains("sm_active_avg")) << record.dump();
  std::string out;
  ASSERT_EQ(RunCommand({GpuwardenBinary(), "jobs", "show", "mig-train", "--data-dir", dir / "data"},
                       &out),
            0)
      << out;
  EXPECT_NE(out.find(gpu + "/" + gi + " 0.43 GPU (3g.40gb)"), std::string::npos) << out;
}

TEST(JobsMigServe, TheBusyButHollowJobsRecordShowsLowSmActivity) {
  TempDir dir;
  // The scenario as shipped: it lets real processes run its GPUs' workloads (host_processes).
  ASSERT_NE(ReadFile(Scenario("busy-but-hollow.yaml")).find("host_processes: true"),
            std::string::npos);
  AgentProcess agent({"--simulate", Scenario("busy-but-hollow.yaml"), "--sim-clock", "stepped",
                      "--data-dir", dir / "data"});
  ASSERT_NE(agent.port(), 0);
  Process hollow({"env", "GPUWARDEN_SIM_WORKLOAD=busy_but_hollow", "CUDA_VISIBLE_DEVICES=0",
                  "GPUWARDEN_JOB=hollow", "sleep", "600"},
                 dir / "hollow.log");
  Process train({"env", "GPUWARDEN_SIM_WORKLOAD=training", "CUDA_VISIBLE_DEVICES=1",
                 "GPUWARDEN_JOB=train", "sleep", "600"},
                dir / "train.log");
  ASSERT_TRUE(hollow.started() && train.started());
  std::vector<Sample> samples;
  ASSERT_TRUE(WaitFor(
      [&] {
        agent.Advance(10);
        samples = ParseExposition(agent.Get("/metrics").body);
        return Find(samples, "gpu_job_sm_active_ratio", {{"job_id", "hollow"}, {"stat", "avg"}}) &&
               Find(samples, "gpu_job_sm_active_ratio", {{"job_id", "train"}, {"stat", "avg"}});
      },
      60))
      << agent.Log();
  agent.Advance(120);
  samples = ParseExposition(agent.Get("/metrics").body);
  auto util =
      Find(samples, "gpu_job_sm_utilization_ratio", {{"job_id", "hollow"}, {"stat", "avg"}});
  auto sm = Find(samples, "gpu_job_sm_active_ratio", {{"job_id", "hollow"}, {"stat", "avg"}});
  ASSERT_TRUE(util && sm);
  EXPECT_GT(util->value, 0.8);  // busy by utilization ...
  EXPECT_LT(sm->value, 0.2);    // ... hollow by SM activity
  auto train_sm = Find(samples, "gpu_job_sm_active_ratio", {{"job_id", "train"}, {"stat", "avg"}});
  auto train_tensor =
      Find(samples, "gpu_job_tensor_active_ratio", {{"job_id", "train"}, {"stat", "avg"}});
  ASSERT_TRUE(train_sm && train_tensor);
  EXPECT_GT(train_sm->value, 0.5);
  EXPECT_GT(train_tensor->value, 0.3);

  hollow.Stop();
  const json record = EndedRecord(agent, "hollow");
  ASSERT_TRUE(record["gpu"].contains("sm_active_avg")) << record.dump();
  EXPECT_LT(record["gpu"]["sm_active_avg"].get<double>(), 0.2);
  EXPECT_GT(record["gpu"]["util_avg"].get<double>(), 0.80);
  std::string out;
  ASSERT_EQ(
      RunCommand({GpuwardenBinary(), "jobs", "show", "hollow", "--data-dir", dir / "data"}, &out),
      0)
      << out;
  EXPECT_NE(out.find("SM activity:        avg "), std::string::npos) << out;
}

}  // namespace
}  // namespace gw::testing
