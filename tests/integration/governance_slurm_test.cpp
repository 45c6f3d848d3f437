// The reclaim policy and pool congestion against a real Slurm 22.05 + munge (tests/support/
// slurm.h) and `gpuwarden serve` on a stepped simulated fleet whose four GPUs stand for the
// node's four (fake) Slurm GPUs, all idle:
//   - `cancel` mode: an idle job is noticed, waits out its grace period, and is cancelled with the
//     real scancel; a job carrying the exemption tag in its --comment is left running;
//   - congestion: a job asking for the whole pool waits behind them; the pool's pending demand,
//     congestion ratio and a scale-out recommendation appear;
//   - dry-run mode on a second agent touches nothing.
// Needs root (slurmd, mknod): skipped otherwise.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "support/agent_process.h"
#include "support/slurm.h"

namespace gw::testing {
namespace {

using nlohmann::json;

std::string JobState(SlurmCluster& cluster, const std::string& id) {
  std::string s = cluster.Run({"squeue", "-h", "-j", id, "-o", "%T"});
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::vector<json> Decisions(const std::string& path) {
  std::vector<json> out;
  std::istringstream in(ReadFile(path));
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(json::parse(l));
  return out;
}

class GovernanceSlurm : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (slurmd, mknod)";
    ASSERT_TRUE(cluster_.Start()) << cluster_.Log("slurmctld.log") << cluster_.Log("slurmd.log");
  }

  std::string WriteConfig(const TempDir& dir, const std::string& action) {
    WriteFile(dir / "fleet.yaml",
              "name: gov-slurm\nclock: stepped\ngpus:\n  - model: L40S\n    count: 4\n");
    WriteFile(dir / "gpuwarden.yaml",
              "jobs:\n  scheduler: slurm\n  poll_interval: 300ms\n"
              "governance:\n"
              "  reclaim:\n"
              "    - partition: gpu\n      idle_for: 60s\n      grace: 30s\n      action: " +
                  action +
                  "\n      exempt: {comment_tag: 'gw:keep'}\n"
                  "  pools:\n    scale_out_for: 20s\n");
    return dir / "gpuwarden.yaml";
  }

  SlurmCluster cluster_{4};
};

TEST_F(GovernanceSlurm, CancelsAnIdleJobAfterNoticeAndGraceKeepsTheExemptOneAndSeesCongestion) {
  std::string error;
  const std::string idle =
      cluster_.Submit({"--gres=gpu:1", "-J", "forgotten"}, "sleep 600", &error);
  ASSERT_FALSE(idle.empty()) << error;
  const std::string keep =
      cluster_.Submit({"--gres=gpu:1", "-J", "keeper", "--comment=gw:keep"}, "sleep 600", &error);
  ASSERT_FALSE(keep.empty()) << error;
  ASSERT_TRUE(WaitFor(
      [&] {
        return JobState(cluster_, idle) == "RUNNING" && JobState(cluster_, keep) == "RUNNING";
      },
      60))
      << cluster_.Log("slurmctld.log");
  const std::string big = cluster_.Submit({"--gres=gpu:4", "-J", "big"}, "sleep 5", &error);
  ASSERT_FALSE(big.empty()) << error;

  TempDir dir;
  const std::string config = WriteConfig(dir, "cancel");
  AgentProcess agent({"--simulate", dir / "fleet.yaml", "--sim-clock", "stepped", "--config",
                      config, "--data-dir", dir / "data"});
  ASSERT_NE(agent.port(), 0);
  const std::string log_path = dir / "data/governance/decisions.jsonl";

  // Wait until both jobs hold their GPUs in the agent's view.
  std::string metrics;
  ASSERT_TRUE(WaitFor(
      [&] {
        agent.Advance(1);
        metrics = agent.Get("/metrics").body;
        return metrics.find("job_id=\"" + idle + "\"") != std::string::npos &&
               metrics.find("job_id=\"" + keep + "\"") != std::string::npos;
      },
      60))
      << metrics << agent.Log();
  // 50 simulated seconds: idle, not yet noticed; nothing done.
  agent.Advance(50);
  EXPECT_EQ(JobState(cluster_, idle), "RUNNING");
  for (const json& d : Decisions(log_path)) EXPECT_NE(d["stage"], "notice") << d.dump();

  // Past idle_for: the notice; still within the grace period the job runs.
  agent.Advance(15);
  std::vector<json> decisions = Decisions(log_path);
  bool noticed = false;
  for (const json& d : decisions)
    if (d["job_id"] == idle && d["stage"] == "notice") noticed = true;
  ASSERT_TRUE(noticed) << ReadFile(log_path) << agent.Log();
  EXPECT_EQ(JobState(cluster_, idle), "RUNNING");

  // Past the grace period: scancel, for real.
  agent.Advance(35);
  ASSERT_TRUE(WaitFor(
      [&] {
        const std::string state = JobState(cluster_, idle);
        return state == "CANCELLED" || state.empty();
      },
      60))
      << ReadFile(log_path) << agent.Log();
  ASSERT_TRUE(WaitFor(
      [&] {
        for (const json& d : Decisions(log_path))
          if (d["job_id"] == idle && d["stage"] == "done") return true;
        return false;
      },
      30))
      << ReadFile(log_path);
  decisions = Decisions(log_path);
  double notice_t = 0, action_t = 0;
  bool exempt = false;
  for (const json& d : decisions) {
    if (d["job_id"] == idle && d["stage"] == "notice") notice_t = d["time"];
    if (d["job_id"] == idle && d["stage"] == "action") {
      action_t = d["time"];
      EXPECT_EQ(d["action"], "cancel");
      EXPECT_EQ(d["evidence"]["gpus"].size(), 1u);
      EXPECT_GE(d["evidence"]["idle_s"].get<double>(), 90);
    }
    if (d["job_id"] == keep) {
      EXPECT_EQ(d["stage"], "exempt") << d.dump();
      EXPECT_EQ(d["reason"], "exempt_comment") << d.dump();
      exempt = true;
    }
  }
  EXPECT_GE(action_t - notice_t, 30) << ReadFile(log_path);
  EXPECT_TRUE(exempt) << ReadFile(log_path);

  // The exempt job keeps running long after.
  agent.Advance(300);
  EXPECT_EQ(JobState(cluster_, keep), "RUNNING");
  for (const json& d : Decisions(log_path))
    EXPECT_FALSE(d["job_id"] == keep && d["stage"] != "exempt");

  // Congestion: 'big' (4 GPUs) waits behind 'keeper' on a 4-GPU pool.
  ASSERT_TRUE(WaitFor(
      [&] {
        agent.Advance(5);
        metrics = agent.Get("/metrics").body;
        std::vector<Sample> s = ParseExposition(metrics);
        return Value(s, "gpu_pool_recommendation_gpus",
                     {{"partition", "gpu"}, {"direction", "scale_out"}}) > 0;
      },
      60))
      << metrics << agent.Log();
  std::vector<Sample> s = ParseExposition(metrics);
  EXPECT_EQ(JobState(cluster_, big), "PENDING");
  EXPECT_EQ(Value(s, "gpu_pool_capacity_gpus", {{"partition", "gpu"}}), 4);
  EXPECT_EQ(Value(s, "gpu_pool_pending_gpus", {{"partition", "gpu"}}), 4);
  EXPECT_EQ(Value(s, "gpu_pool_allocated_gpus", {{"partition", "gpu"}}), 1);
  EXPECT_NEAR(Value(s, "gpu_pool_congestion_ratio", {{"partition", "gpu"}}), 5.0 / 4.0, 1e-9);
  EXPECT_EQ(
      Value(s, "gpu_pool_recommendation_gpus", {{"partition", "gpu"}, {"direction", "scale_out"}}),
      1);
  EXPECT_EQ(Value(s, "gpu_reclaim_actions_total", {{"action", "cancel"}}), 1);
  EXPECT_EQ(Value(s, "gpu_reclaim_actions_total", {{"reason", "exempt_comment"}}), 1);
  EXPECT_EQ(Value(s, "gpu_reclaim_failures_total", {{"action", "cancel"}}), 0);

  // Once the congestion has lasted 15 minutes, the diagnosis (diagnose/, evaluated by the agent
  // every recorded minute) names the congested partition in the scheduling layer.
  agent.Advance(960);
  HttpReply found = agent.Get("/api/gw/v1/findings");
  ASSERT_EQ(found.status, 200) << found.body;
  bool congested = false;
  const json findings = json::parse(found.body)["data"]["findings"];
  for (const json& f : findings) {
    if (f["kind"] != "queue-congestion" || f["subject"].value("partition", "") != "gpu") continue;
    congested = true;
    EXPECT_EQ(f["layer"], "scheduling") << f.dump();
  }
  EXPECT_TRUE(congested) << found.body;
}

TEST_F(GovernanceSlurm, DryRunLogsAndCountsWithoutTouchingTheJob) {
  std::string error;
  const std::string idle =
      cluster_.Submit({"--gres=gpu:1", "-J", "forgotten"}, "sleep 600", &error);
  ASSERT_FALSE(idle.empty()) << error;
  ASSERT_TRUE(WaitFor([&] { return JobState(cluster_, idle) == "RUNNING"; }, 60));
  TempDir dir;
  AgentProcess agent({"--simulate", dir / "fleet.yaml", "--sim-clock", "stepped", "--config",
                      WriteConfig(dir, "dry-run"), "--data-dir", dir / "data"});
  ASSERT_NE(agent.port(), 0);
  ASSERT_TRUE(WaitFor(
      [&] {
        agent.Advance(1);
        return agent.Get("/metrics").body.find("job_id=\"" + idle + "\"") != std::string::npos;
      },
      60))
      << agent.Log();
  agent.Advance(200);
  const std::string log_path = dir / "data/governance/decisions.jsonl";
  std::vector<json> decisions = Decisions(log_path);
  ASSERT_EQ(decisions.size(), 2u) << ReadFile(log_path);
  EXPECT_EQ(decisions[0]["stage"], "notice");
  EXPECT_EQ(decisions[1]["stage"], "action");
  EXPECT_EQ(decisions[1]["action"], "dry-run");
  std::vector<Sample> s = ParseExposition(agent.Get("/metrics").body);
  EXPECT_EQ(Value(s, "gpu_reclaim_actions_total", {{"action", "dry-run"}}), 1);
  // Untouched: still running, well past the point where cancel mode acts.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_EQ(JobState(cluster_, idle), "RUNNING");
  EXPECT_NE(agent.Log().find("dry-run: job " + idle), std::string::npos) << agent.Log();
}

}  // namespace
}  // namespace gw::testing
