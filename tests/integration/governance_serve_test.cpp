// The platform layer end to end: `gpuwarden serve` on a stepped simulated fleet with a stand-in
// squeue and scontrol (no Slurm needed). Checks: cost per team equals the hand-computed value
// from the allocations and the configured prices; a dry-run reclaim policy notices, decides, logs
// and counts without running any command; quota over/under-use; pool congestion and the scale-out
// recommendation; every family of docs/metrics.md's "Governance" section on /metrics and in the
// store (rules evaluate in the agent: GpuTeamOverQuota fires); the teams and reclaim APIs.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "support/agent_process.h"
#include "support/metrics_doc.h"

namespace gw::testing {
namespace {

using nlohmann::json;

// squeue --json: job 21 (account physics -> team vision) on GPU 0, job 22 (account nlp) on GPUs 1
// and 2, job 23 waiting for 2 GPUs in the same partition.
std::string Squeue(long now, const std::string& node) {
  auto t = [now](long d) { return std::to_string(now + d); };
  return R"js({"meta": {}, "errors": [], "jobs": [
  {"job_id": 21, "name": "notebook", "job_state": "RUNNING", "user_name": "alice",
   "account": "physics", "partition": "gpu", "qos": "normal", "nodes": ")js" +
         node + R"js(", "submit_time": )js" + t(-400) + R"js(, "eligible_time": )js" + t(-400) +
         R"js(, "start_time": )js" + t(-100) + R"js(, "end_time": )js" + t(86400) +
         R"js(, "gres_detail": ["gpu:1(IDX:0)"], "tres_per_node": "gres:gpu:1",
   "tres_alloc_str": "cpu=1,gres/gpu=1"},
  {"job_id": 22, "name": "train", "job_state": "RUNNING", "user_name": "bob", "account": "nlp",
   "partition": "gpu", "nodes": ")js" +
         node + R"js(", "submit_time": )js" + t(-300) + R"js(, "eligible_time": )js" + t(-300) +
         R"js(, "start_time": )js" + t(-200) + R"js(, "end_time": )js" + t(86400) +
         R"js(, "gres_detail": ["gpu:2(IDX:1-2)"], "tres_per_node": "gres:gpu:2",
   "tres_alloc_str": "cpu=1,gres/gpu=2"},
  {"job_id": 23, "name": "wait", "job_state": "PENDING", "state_reason": "Resources",
   "user_name": "carol", "account": "bio", "partition": "gpu", "nodes": "", "submit_time": )js" +
         t(-50) + R"js(, "eligible_time": )js" + t(-50) +
         R"js(, "start_time": 0, "end_time": 0, "gres_detail": [], "tres_per_node": "gres:gpu:2"}
  ]})js";
}

// The GPU-hour price the test configures, applied as the documented rule says (the longest
// configured key contained in the model name, else the default).
double PriceOf(const std::string& model) {
  if (model.find("A100") != std::string::npos) return 3.2;
  return 1.1;
}

TEST(GovernanceServe, CostQuotaDryRunPoolsAndEveryFamily) {
  TempDir dir;
  WriteFile(dir / "fleet.yaml",
            "name: gov\nclock: stepped\ngpus:\n"
            "  - model: A100-80GB\n"
            "  - model: L40S\n    workload:\n      - {type: training}\n"
            "  - model: L40S\n");
  const long now = static_cast<long>(std::time(nullptr));
  WriteFile(dir / "answer.json", Squeue(now, ShortHost()));
  const std::string squeue = dir / "squeue", scontrol = dir / "scontrol", cancel = dir / "cancel";
  WriteFile(squeue, "#!/bin/sh\ncat '" + (dir / "answer.json") + "'\n");
  WriteFile(scontrol,
            "#!/bin/sh\necho 'PartitionName=gpu Nodes=n1 State=UP "
            "TRES=cpu=8,mem=64G,node=1,billing=8,gres/gpu=3'\n");
  // Any command run against a job leaves a mark: the dry-run must leave none.
  WriteFile(cancel, "#!/bin/sh\necho \"$@\" >> '" + (dir / "touched") + "'\n");
  for (const std::string& f : {squeue, scontrol, cancel}) chmod(f.c_str(), 0755);
  WriteFile(dir / "gpuwarden.yaml",
            "jobs:\n  scheduler: slurm\n  squeue_command: [" + squeue +
                ", --json]\n  poll_interval: 200ms\n"
                "teams:\n  accounts: {physics: vision, nlp: nlp}\n"
                "governance:\n"
                "  capacity_command: [" +
                scontrol +
                "]\n"
                "  cancel_command: [" +
                cancel +
                "]\n"
                "  requeue_command: [" +
                cancel +
                "]\n"
                "  reclaim:\n"
                "    - {partition: gpu, idle_for: 2m, grace: 1m, action: dry-run}\n"
                "  pools:\n    scale_out_for: 1m\n    windows: [1h, 1d]\n"
                "  quotas:\n    vision: {gpus: 0.5}\n    nlp: {gpus: 8}\n"
                "    bio: {gpu_hours: 10, period: 1d}\n"
                "  under_use_ratio: 0.3\n  under_use_for: 1m\n"
                "  prices:\n    gpu_hour: {A100: 3.2, default: 1.1}\n    currency: EUR\n");
  // The agent; started again on the same data directory further down.
  const std::vector<std::string> agent_args = {
      "--simulate", dir / "fleet.yaml",     "--sim-clock", "stepped",
      "--config",   dir / "gpuwarden.yaml", "--data-dir",  dir / "data"};
  AgentProcess agent(agent_args);
  ASSERT_NE(agent.port(), 0);

  std::string metrics;
  ASSERT_TRUE(WaitFor(
      [&] {
        agent.Advance(1);
        metrics = agent.Get("/metrics").body;
        return metrics.find("job_id=\"21\"") != std::string::npos &&
               metrics.find("job_id=\"22\"") != std::string::npos &&
               metrics.find("gpu_pool_capacity_gpus{partition=\"gpu\"} 3") != std::string::npos &&
               metrics.find("gpu_cost_allocation_total{partition=\"gpu\",team=\"nlp\"}") !=
                   std::string::npos;
      },
      60))
      << metrics << agent.Log();

  // Cost per team over exactly 300 simulated seconds (one cycle per second, stepped): GPU-hours
  // held x the price of each GPU's model, the models read from gpu_info.
  std::vector<Sample> before = ParseExposition(metrics);
  std::map<std::string, std::string> model_of;
  for (const Sample& s : before)
    if (s.name == "gpu_info") model_of[s.labels.at("gpu")] = s.labels.at("name");
  ASSERT_EQ(model_of.size(), 3u);
  const double seconds = 300;
  agent.Advance(seconds);
  metrics = agent.Get("/metrics").body;
  std::vector<Sample> after = ParseExposition(metrics);
  auto cost = [](const std::vector<Sample>& s, const std::string& team) {
    return Value(s, "gpu_cost_allocation_total", {{"team", team}, {"partition", "gpu"}});
  };
  const double vision_expected = PriceOf(model_of["0"]) * seconds / 3600;
  const double nlp_expected = (PriceOf(model_of["1"]) + PriceOf(model_of["2"])) * seconds / 3600;
  EXPECT_NEAR(cost(after, "vision") - cost(before, "vision"), vision_expected, 1e-6) << metrics;
  EXPECT_NEAR(cost(after, "nlp") - cost(before, "nlp"), nlp_expected, 1e-6);
  // The node: three GPUs' capacity; idle cost = what nobody held (nothing here).
  EXPECT_NEAR(
      Value(after, "gpu_cost_capacity_total") - Value(before, "gpu_cost_capacity_total"),
      (PriceOf(model_of["0"]) + PriceOf(model_of["1"]) + PriceOf(model_of["2"])) * seconds / 3600,
      1e-6);
  EXPECT_EQ(Value(after, "gpu_cost_info", {{"currency", "EUR"}}), 1);
  // Job 21's GPU is idle (0 %): its idle-allocated cost is its whole allocation cost.
  EXPECT_NEAR(Value(after, "gpu_cost_idle_allocated_total", {{"team", "vision"}}),
              cost(after, "vision"), 1e-9);

  // The dry-run policy: job 21 idle for 2 m -> notice, 1 m later -> dry-run; job 22 busy.
  EXPECT_EQ(Value(after, "gpu_reclaim_actions_total", {{"action", "notify"}}), 1) << metrics;
  EXPECT_EQ(Value(after, "gpu_reclaim_actions_total", {{"action", "dry-run"}}), 1);
  EXPECT_FALSE(std::filesystem::exists(dir / "touched")) << "a dry-run ran a command";
  const std::string log = ReadFile(dir / "data/governance/decisions.jsonl");
  std::vector<json> decisions;
  std::istringstream lines(log);
  for (std::string l; std::getline(lines, l);) decisions.push_back(json::parse(l));
  ASSERT_EQ(decisions.size(), 2u) << log;
  EXPECT_EQ(decisions[0]["stage"], "notice");
  EXPECT_EQ(decisions[0]["job_id"], "21");
  EXPECT_EQ(decisions[0]["team"], "vision");
  EXPECT_EQ(decisions[0]["evidence"]["gpus"][0]["gpu"], 0);
  EXPECT_GE(decisions[0]["evidence"]["idle_s"].get<double>(), 120);
  EXPECT_EQ(decisions[1]["stage"], "action");
  EXPECT_EQ(decisions[1]["action"], "dry-run");
  EXPECT_GE(decisions[1]["time"].get<double>() - decisions[0]["time"].get<double>(), 60);
  EXPECT_NE(agent.Log().find("governance: reclaim notice"), std::string::npos);

  // Quotas: vision holds 1 GPU on a 0.5 quota; nlp uses about 1 of 8; bio holds nothing.
  EXPECT_EQ(Value(after, "gpu_team_over_quota", {{"team", "vision"}}), 1);
  EXPECT_NEAR(
      Value(after, "gpu_team_quota_deviation_ratio", {{"team", "vision"}, {"basis", "allocated"}}),
      1.0, 1e-9);
  EXPECT_EQ(Value(after, "gpu_team_over_quota", {{"team", "nlp"}}), 0);
  EXPECT_EQ(Value(after, "gpu_team_under_use", {{"team", "nlp"}}), 1);
  EXPECT_EQ(Value(after, "gpu_team_allocated_gpus", {{"team", "nlp"}}), 2);
  EXPECT_EQ(Value(after, "gpu_team_quota_gpu_hours", {{"team", "bio"}}), 10);

  // The pool: 3 GPUs held of 3, 2 pending: congestion 5/3, scale out by 2 after a minute.
  EXPECT_EQ(Value(after, "gpu_pool_pending_gpus", {{"partition", "gpu"}}), 2);
  EXPECT_EQ(Value(after, "gpu_pool_free_gpus", {{"partition", "gpu"}}), 0);
  EXPECT_NEAR(Value(after, "gpu_pool_congestion_ratio", {{"partition", "gpu"}}), 5.0 / 3.0, 1e-9);
  EXPECT_EQ(Value(after, "gpu_pool_recommendation_gpus",
                  {{"partition", "gpu"}, {"direction", "scale_out"}}),
            2);
  EXPECT_EQ(Value(after, "gpu_pool_queue_wait_seconds",
                  {{"partition", "gpu"}, {"window", "1d"}, {"quantile", "0.95"}}),
            300);

  // Every documented family is exported.
  const std::vector<std::string> families = gw::testing::DocumentedFamilies("## Governance");
  ASSERT_GE(families.size(), 30u);
  for (const std::string& f : families) EXPECT_TRUE(gw::testing::HasSampleOf(metrics, f)) << f;

  // In the store, and the rules evaluated in the agent: vision over quota for 15 minutes.
  HttpReply q = agent.Get("/api/v1/query?query=gpu_team_over_quota%7Bteam%3D%22vision%22%7D");
  ASSERT_EQ(q.status, 200) << q.body;
  EXPECT_EQ(json::parse(q.body)["data"]["result"].size(), 1u) << q.body;
  agent.Advance(16 * 60);
  HttpReply alerts = agent.Get("/api/v1/alerts");
  ASSERT_EQ(alerts.status, 200);
  bool over_quota_firing = false;
  const json alerts_doc = json::parse(alerts.body);
  for (const json& a : alerts_doc["data"]["alerts"])
    if (a["labels"]["alertname"] == "GpuTeamOverQuota" && a["labels"]["team"] == "vision" &&
        a["state"] == "firing")
      over_quota_firing = true;
  EXPECT_TRUE(over_quota_firing) << alerts.body;
  // The diagnosis (diagnose/, evaluated by the agent every recorded minute) reports the drift.
  HttpReply found = agent.Get("/api/gw/v1/findings?team=vision");
  ASSERT_EQ(found.status, 200) << found.body;
  const json findings = json::parse(found.body)["data"]["findings"];
  bool drift = false;
  for (const json& f : findings) {
    if (f["kind"] != "quota-drift" || f["cause"] != "over quota") continue;
    drift = true;
    EXPECT_EQ(f["subject"].value("team", ""), "vision") << f.dump();
    EXPECT_EQ(f["layer"], "governance") << f.dump();
  }
  EXPECT_TRUE(drift) << found.body;

  // The APIs.
  HttpReply teams = agent.Get("/api/gw/v1/teams");
  ASSERT_EQ(teams.status, 200);
  json t = json::parse(teams.body);
  EXPECT_EQ(t["status"], "success");
  EXPECT_EQ(t["data"]["currency"], "EUR");
  bool saw_vision = false;
  for (const json& team : t["data"]["teams"]) {
    if (team["team"] != "vision") continue;
    saw_vision = true;
    EXPECT_TRUE(team["quota"]["over_quota"].get<bool>());
    EXPECT_GT(team["cost"]["allocation_cost"].get<double>(), 0);
    EXPECT_NEAR(team["idle_ratio"].get<double>(), 1.0, 1e-9);
  }
  EXPECT_TRUE(saw_vision) << teams.body;
  HttpReply reclaim = agent.Get("/api/gw/v1/reclaim?limit=5");
  ASSERT_EQ(reclaim.status, 200);
  json r = json::parse(reclaim.body);
  ASSERT_EQ(r["data"]["decisions"].size(), 2u);
  EXPECT_EQ(r["data"]["decisions"][0]["action"], "dry-run");  // newest first
  EXPECT_EQ(agent.Get("/api/gw/v1/reclaim?limit=x").status, 400);
  EXPECT_FALSE(std::filesystem::exists(dir / "touched"));

  // A restart on the same data directory continues the cost counters and the reclaim counts
  // (STORAGE_PATH/governance/usage.json, written at stop) instead of starting them at zero. The
  // restarted stepped clock starts at the wall clock again, earlier than the simulated time
  // reached: that step back is not charged, so the first figures equal the last ones, plus the
  // few cycles the restarted agent has run by then.
  const std::vector<Sample> last = ParseExposition(agent.Get("/metrics").body);
  EXPECT_EQ(agent.process().Stop(), 0) << agent.Log();
  ASSERT_TRUE(std::filesystem::exists(dir / "data/governance/usage.json"));
  AgentProcess again(agent_args);
  ASSERT_NE(again.port(), 0);
  std::vector<Sample> resumed;
  ASSERT_TRUE(WaitFor(
      [&] {
        again.Advance(1);
        resumed = ParseExposition(again.Get("/metrics").body);
        for (const Sample& s : resumed)
          if (s.name == "gpu_cost_allocation_total") return true;
        return false;
      },
      60))
      << again.Log();
  EXPECT_NE(again.Log().find("governance: continuing"), std::string::npos) << again.Log();
  EXPECT_GE(cost(resumed, "vision"), cost(last, "vision"));
  EXPECT_LT(cost(resumed, "vision"), cost(last, "vision") + PriceOf(model_of["0"]) * 120 / 3600);
  EXPECT_GE(Value(resumed, "gpu_cost_capacity_total"), Value(last, "gpu_cost_capacity_total"));
  EXPECT_EQ(Value(resumed, "gpu_reclaim_actions_total", {{"action", "dry-run"}}), 1);
  EXPECT_EQ(Value(resumed, "gpu_reclaim_actions_total", {{"action", "notify"}}), 1);
}

TEST(GovernanceServe, ABadPolicyIsRefusedWithItsLine) {
  TempDir dir;
  WriteFile(dir / "bad.yaml",
            "governance:\n  reclaim:\n    - partition: gpu\n      action: kill\n");
  std::string out;
  const int code = RunCommand({GpuwardenBinary(), "serve", "--config", dir / "bad.yaml", "--listen",
                               "127.0.0.1:0", "--data-dir", dir / "data"},
                              &out, 30);
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("bad.yaml:4: governance.reclaim[0].action: expected dry-run, requeue, "
                     "cancel or command, got 'kill'"),
            std::string::npos)
      << out;
}

// squeue --json with one job, 31 (account physics -> team vision), on GPU 0: RUNNING, or
// COMPLETED at `end`.
std::string OneJob(long now, const std::string& node, long end) {
  const std::string state = end > 0 ? "COMPLETED" : "RUNNING";
  return R"js({"meta": {}, "errors": [], "jobs": [
  {"job_id": 31, "name": "train", "job_state": ")js" +
         state + R"js(", "user_name": "alice", "account": "physics", "partition": "gpu",
   "nodes": ")js" +
         node + R"js(", "submit_time": )js" + std::to_string(now - 300) +
         R"js(, "eligible_time": )js" + std::to_string(now - 300) + R"js(, "start_time": )js" +
         std::to_string(now - 100) + R"js(, "end_time": )js" +
         std::to_string(end > 0 ? end : now + 86400) +
         R"js(, "gres_detail": ["gpu:1(IDX:0)"], "tres_per_node": "gres:gpu:1",
   "tres_alloc_str": "cpu=1,gres/gpu=1"}]})js";
}

// A finished job's record carries its final cost, equal to the hand computation from the time it
// held its GPU (the store's samples of gpu_job_cost_total and the collector's cycles), the
// GPU's price and its energy counter.
TEST(GovernanceServe, AFinishedJobsRecordCarriesItsCost) {
  TempDir dir;
  WriteFile(dir / "fleet.yaml",
            "name: jobcost\nclock: stepped\ngpus:\n"
            "  - model: A100-80GB\n    workload:\n      - {type: training}\n"
            "  - model: L40S\n");
  const long now = static_cast<long>(std::time(nullptr));
  WriteFile(dir / "answer.json", OneJob(now, ShortHost(), 0));
  const std::string squeue = dir / "squeue";
  WriteFile(squeue, "#!/bin/sh\ncat '" + (dir / "answer.json") + "'\n");
  chmod(squeue.c_str(), 0755);
  WriteFile(dir / "gpuwarden.yaml",
            "jobs:\n  scheduler: slurm\n  squeue_command: [" + squeue +
                ", --json]\n  poll_interval: 200ms\n"
                "teams:\n  accounts: {physics: vision}\n"
                "governance:\n  prices:\n    gpu_hour: {A100: 3.2, default: 1.1}\n"
                "    energy_kwh: 0.3\n    currency: EUR\n");
  AgentProcess agent({"--simulate", dir / "fleet.yaml", "--sim-clock", "stepped", "--config",
                      dir / "gpuwarden.yaml", "--data-dir", dir / "data"});
  ASSERT_NE(agent.port(), 0);
  std::string metrics;
  ASSERT_TRUE(WaitFor(
      [&] {
        agent.Advance(1);
        metrics = agent.Get("/metrics").body;
        return metrics.find("gpu_job_cost_total{job_id=\"31\"") != std::string::npos;
      },
      60))
      << metrics << agent.Log();
  agent.Advance(120);

  // The job completes; advance until its record is written.
  const double end_s = json::parse(agent.Get("/api/snapshot").body)["taken_at"];
  WriteFile(dir / "answer.json.new", OneJob(now, ShortHost(), static_cast<long>(end_s)));
  std::filesystem::rename(dir / "answer.json.new", dir / "answer.json");
  json record;
  ASSERT_TRUE(WaitFor(
      [&] {
        agent.Advance(1);
        HttpReply r = agent.Get("/api/gw/v1/jobs/31");
        if (r.status != 200) return false;
        record = json::parse(r.body)["data"];
        return record["state"] == "COMPLETED";
      },
      60))
      << record.dump() << agent.Log();
  const double t_now = json::parse(agent.Get("/api/snapshot").body)["taken_at"];

  // By hand: the job held GPU 0 from the cycle before its first gpu_job_cost_total sample (each
  // interval is charged to the state at its end) to its last sample.
  auto range = [&](const std::string& expr) {
    HttpReply r =
        agent.Get("/api/v1/query?query=" + UrlEncode(expr) + "&time=" + std::to_string(t_now));
    EXPECT_EQ(r.status, 200) << r.body;
    const json result = json::parse(r.body)["data"]["result"];
    EXPECT_EQ(result.size(), 1u) << expr << ": " << r.body;
    return result.empty() ? json::array() : result[0]["values"];
  };
  const json cost = range("gpu_job_cost_total{job_id=\"31\"}[1h]");
  const json energy = range("gpu_energy_joules_total{gpu=\"0\"}[1h]");
  ASSERT_GE(cost.size(), 120u);
  const double t_first = cost[0][0].get<double>(), t_last = cost[cost.size() - 1][0].get<double>();
  double t_from = t_first, e_from = NAN, e_to = NAN;
  for (const json& s : energy) {
    const double t = s[0].get<double>();
    if (t < t_first) t_from = t;  // the cycle before the first charge
  }
  for (const json& s : energy) {
    const double t = s[0].get<double>();
    if (t == t_from) e_from = std::stod(s[1].get<std::string>());
    if (t == t_last) e_to = std::stod(s[1].get<std::string>());
  }
  ASSERT_FALSE(std::isnan(e_from) || std::isnan(e_to)) << energy.dump();
  ASSERT_LE(t_first - t_from, 120);
  const double allocation_expected = 3.2 * (t_last - t_from) / 3600;
  const double energy_expected = 0.3 * (e_to - e_from) / 3.6e6;
  ASSERT_GT(energy_expected, 0);

  ASSERT_TRUE(record.contains("cost")) << record.dump();
  const json& c = record["cost"];
  EXPECT_EQ(c["currency"], "EUR");
  EXPECT_NEAR(c["allocated_gpu_hours"].get<double>(), (t_last - t_from) / 3600, 1e-9);
  EXPECT_NEAR(c["allocation_cost"].get<double>(), allocation_expected, 1e-9);
  EXPECT_NEAR(c["energy_cost"].get<double>(), energy_expected, 1e-9);
  EXPECT_NEAR(c["total_cost"].get<double>(), allocation_expected + energy_expected, 1e-9);
  // The same figure as the running job's last one, and on disk for `gpuwarden jobs`.
  EXPECT_NEAR(c["total_cost"].get<double>(), std::stod(cost[cost.size() - 1][1].get<std::string>()),
              1e-9);
  std::string out;
  ASSERT_EQ(
      RunCommand({GpuwardenBinary(), "jobs", "show", "31", "--json", "--data-dir", dir / "data"},
                 &out),
      0)
      << out;
  EXPECT_NEAR(json::parse(out)["cost"]["total_cost"].get<double>(),
              allocation_expected + energy_expected, 1e-9);
  ASSERT_EQ(RunCommand({GpuwardenBinary(), "jobs", "--data-dir", dir / "data"}, &out), 0) << out;
  EXPECT_NE(out.find(" EUR"), std::string::npos) << out;
}

}  // namespace
}  // namespace gw::testing
