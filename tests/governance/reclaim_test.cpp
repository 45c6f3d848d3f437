#include "governance/reclaim.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

namespace gw::governance {
namespace {

constexpr double kT0 = 1700000000;

// One node with `n` GPUs; `util` per GPU (missing = 0.9), `held` per GPU.
Cycle MakeCycle(double t, std::vector<double> util, std::vector<RunningJob> jobs,
                std::vector<bool> held = {}) {
  Cycle c;
  c.now_s = t;
  for (unsigned i = 0; i < util.size(); ++i) {
    GpuReading r;
    r.index = i;
    r.uuid = "GPU-" + std::to_string(i);
    r.model = "NVIDIA L40S";
    r.util_ratio = util[i];
    r.util_known = true;
    r.memory_held = i < held.size() && held[i];
    c.gpus.push_back(r);
  }
  c.jobs = std::move(jobs);
  return c;
}

RunningJob Job(std::string id, std::vector<unsigned> gpus, std::string team = "vision",
               std::string partition = "gpu") {
  RunningJob j;
  j.id = std::move(id);
  j.source = "slurm";
  j.name = "train";
  j.user = "alice";
  j.account = "physics";
  j.qos = "normal";
  j.partition = std::move(partition);
  j.team = std::move(team);
  j.gpus = std::move(gpus);
  return j;
}

ReclaimPolicy Policy(ReclaimAction action, double idle_for = 600, double grace = 300) {
  ReclaimPolicy p;
  p.partition = "gpu";
  p.idle_for_s = idle_for;
  p.grace_s = grace;
  p.action = action;
  return p;
}

// Runs cycles every `step` seconds from kT0 for `duration`, collecting decisions and commands.
struct Outcome {
  std::vector<Decision> decisions;
  std::vector<ReclaimCommand> commands;
};
Outcome Drive(IdleTracker* idle, ReclaimEngine* engine, double from, double duration, double step,
              const std::vector<double>& util, const std::vector<RunningJob>& jobs,
              const std::vector<bool>& held = {}) {
  Outcome run;
  for (double t = from; t <= from + duration + 1e-9; t += step) {
    Cycle c = MakeCycle(t, util, jobs, held);
    idle->Observe(c);
    for (ReclaimCommand& cmd : engine->Evaluate(c, *idle, &run.decisions))
      run.commands.push_back(std::move(cmd));
  }
  return run;
}

TEST(IdleTracker, StreaksAndRatiosPerTeamPartitionAndJob) {
  IdleTracker idle(0.05);
  const auto jobs = std::vector<RunningJob>{Job("1", {0}, "vision"), Job("2", {1}, "nlp", "debug")};
  for (int i = 0; i <= 10; ++i) idle.Observe(MakeCycle(kT0 + 10 * i, {0.0, 0.8}, jobs));
  EXPECT_DOUBLE_EQ(idle.StreakS(0, kT0 + 100), 100);
  EXPECT_DOUBLE_EQ(idle.StreakS(1, kT0 + 100), 0);
  EXPECT_DOUBLE_EQ(idle.by_team().at("vision").allocated_gpu_s, 100);
  EXPECT_DOUBLE_EQ(idle.by_team().at("vision").Ratio(), 1.0);
  EXPECT_DOUBLE_EQ(idle.by_team().at("nlp").Ratio(), 0.0);
  EXPECT_DOUBLE_EQ(idle.by_partition().at("debug").allocated_gpu_s, 100);
  EXPECT_DOUBLE_EQ(idle.by_job().at("1").idle_gpu_s, 100);
  // Activity resets the streak; half of the next 100 s idle gives a ratio of 150/200.
  for (int i = 1; i <= 10; ++i)
    idle.Observe(MakeCycle(kT0 + 100 + 10 * i, {i <= 5 ? 0.5 : 0.0, 0.8}, jobs));
  // The streak starts at the first idle sample (t+160); the interval ending there counts as idle.
  EXPECT_DOUBLE_EQ(idle.StreakS(0, kT0 + 200), 40);
  EXPECT_DOUBLE_EQ(idle.by_team().at("vision").Ratio(), 150.0 / 200.0);
  // An unallocated GPU is never idle-allocated; a job that left is dropped.
  idle.Observe(MakeCycle(kT0 + 210, {0.0, 0.0}, {Job("2", {1}, "nlp", "debug")}));
  EXPECT_FALSE(idle.gpus().at(0).idle);
  EXPECT_FALSE(idle.by_job().count("1"));
  EXPECT_TRUE(idle.gpus().at(1).idle);
}

TEST(IdleTracker, LongGapsAreNotCharged) {
  IdleTracker idle(0.05);
  const auto jobs = std::vector<RunningJob>{Job("1", {0})};
  idle.Observe(MakeCycle(kT0, {0.0}, jobs));
  idle.Observe(MakeCycle(kT0 + 1000, {0.0}, jobs));  // the agent stalled
  EXPECT_DOUBLE_EQ(idle.by_job().at("1").allocated_gpu_s, 0);
  idle.Observe(MakeCycle(kT0 + 1010, {0.0}, jobs));
  EXPECT_DOUBLE_EQ(idle.by_job().at("1").allocated_gpu_s, 10);
}

TEST(Reclaim, DryRunNoticesThenDecidesAndRunsNothing) {
  IdleTracker idle(0.05);
  ReclaimEngine engine({Policy(ReclaimAction::kDryRun, 600, 300)});
  Outcome run = Drive(&idle, &engine, kT0, 1200, 10, {0.0}, {Job("7", {0})}, {true});
  ASSERT_EQ(run.decisions.size(), 2u);
  EXPECT_TRUE(run.commands.empty());
  const Decision& notice = run.decisions[0];
  EXPECT_EQ(notice.stage, "notice");
  EXPECT_EQ(notice.action, "notify");
  EXPECT_EQ(notice.reason, "idle_memory_held");
  EXPECT_DOUBLE_EQ(notice.time_s, kT0 + 600);
  EXPECT_DOUBLE_EQ(notice.idle_s, 600);
  ASSERT_EQ(notice.gpus.size(), 1u);
  EXPECT_EQ(notice.gpus[0].uuid, "GPU-0");
  EXPECT_TRUE(notice.gpus[0].memory_held);
  const Decision& action = run.decisions[1];
  EXPECT_EQ(action.stage, "action");
  EXPECT_EQ(action.action, "dry-run");
  EXPECT_DOUBLE_EQ(action.time_s, kT0 + 900);
  EXPECT_DOUBLE_EQ(action.noticed_s, kT0 + 600);
  auto j = nlohmann::json::parse(DecisionToJson(action));
  EXPECT_EQ(j["job_id"], "7");
  EXPECT_EQ(j["evidence"]["gpus"][0]["uuid"], "GPU-0");
  EXPECT_DOUBLE_EQ(j["evidence"]["idle_for_s"].get<double>(), 600);
}

TEST(Reclaim, CancelAsksForScancelAfterTheGraceAndNeverRetriesAFailure) {
  IdleTracker idle(0.05);
  ReclaimEngine engine({Policy(ReclaimAction::kCancel, 60, 30)});
  Outcome run = Drive(&idle, &engine, kT0, 89, 1, {0.0, 0.0}, {Job("42", {0, 1})});
  ASSERT_EQ(run.decisions.size(), 1u);  // the notice at 60 s; the grace ends at 90 s
  EXPECT_TRUE(run.commands.empty());
  Outcome more = Drive(&idle, &engine, kT0 + 90, 0, 1, {0.0, 0.0}, {Job("42", {0, 1})});
  ASSERT_EQ(more.commands.size(), 1u);
  const ReclaimCommand& cmd = more.commands[0];
  EXPECT_EQ(cmd.argv, (std::vector<std::string>{"scancel", "42"}));
  EXPECT_FALSE(cmd.is_notice);
  EXPECT_NE(std::find(cmd.env.begin(), cmd.env.end(), "GPUWARDEN_JOB_GPUS=0,1"), cmd.env.end());
  Decision failed = engine.Completed(cmd, "scancel: error: Kill job error", kT0 + 91);
  EXPECT_EQ(failed.stage, "failed");
  EXPECT_NE(failed.detail.find("Kill job error"), std::string::npos);
  Outcome after = Drive(&idle, &engine, kT0 + 92, 600, 1, {0.0, 0.0}, {Job("42", {0, 1})});
  EXPECT_TRUE(after.commands.empty());
  EXPECT_TRUE(after.decisions.empty());
}

TEST(Reclaim, RequeueAndCommandHookCarryTheJobFacts) {
  IdleTracker idle(0.05);
  ReclaimPolicy hook = Policy(ReclaimAction::kCommand, 10, 0);
  hook.partition = "";
  hook.team = "nlp";
  hook.command = {"/usr/local/bin/reclaim-hook", "--why=idle"};
  hook.notify_command = {"/usr/local/bin/tell-owner"};
  ReclaimEngine engine({Policy(ReclaimAction::kRequeue, 10, 0), hook});
  Outcome run =
      Drive(&idle, &engine, kT0, 20, 1, {0.0, 0.0}, {Job("1", {0}), Job("2", {1}, "nlp", "debug")});
  std::vector<std::vector<std::string>> argvs;
  for (const ReclaimCommand& c : run.commands) argvs.push_back(c.argv);
  EXPECT_EQ(argvs,
            (std::vector<std::vector<std::string>>{{"/usr/local/bin/tell-owner"},
                                                   {"scontrol", "requeue", "1"},
                                                   {"/usr/local/bin/reclaim-hook", "--why=idle"}}));
  const ReclaimCommand& h = run.commands[2];
  EXPECT_NE(std::find(h.env.begin(), h.env.end(), "GPUWARDEN_JOB_TEAM=nlp"), h.env.end());
  EXPECT_NE(std::find(h.env.begin(), h.env.end(), "GPUWARDEN_RECLAIM_STAGE=action"), h.env.end());
  EXPECT_TRUE(run.commands[0].is_notice);
  EXPECT_EQ(engine.Completed(run.commands[1], "", kT0 + 21).stage, "done");
}

TEST(Reclaim, ActivityWithdrawsTheNoticeAndTheStreakStartsOver) {
  IdleTracker idle(0.05);
  ReclaimEngine engine({Policy(ReclaimAction::kCancel, 100, 100)});
  Outcome idle_run = Drive(&idle, &engine, kT0, 150, 10, {0.0}, {Job("5", {0})});
  ASSERT_EQ(idle_run.decisions.size(), 1u);
  EXPECT_EQ(engine.noticed(), 1u);
  Outcome busy = Drive(&idle, &engine, kT0 + 160, 0, 10, {0.7}, {Job("5", {0})});
  ASSERT_EQ(busy.decisions.size(), 1u);
  EXPECT_EQ(busy.decisions[0].stage, "withdrawn");
  EXPECT_EQ(busy.decisions[0].reason, "active_again");
  EXPECT_EQ(engine.noticed(), 0u);
  // Idle again: a new notice only after another full idle_for.
  Outcome again = Drive(&idle, &engine, kT0 + 170, 90, 10, {0.0}, {Job("5", {0})});
  EXPECT_TRUE(again.decisions.empty());
  Outcome notice = Drive(&idle, &engine, kT0 + 270, 0, 10, {0.0}, {Job("5", {0})});
  ASSERT_EQ(notice.decisions.size(), 1u);
  EXPECT_EQ(notice.decisions[0].stage, "notice");
}

TEST(Reclaim, OneBusyGpuKeepsTheJobActive) {
  IdleTracker idle(0.05);
  ReclaimEngine engine({Policy(ReclaimAction::kCancel, 10, 0)});
  Outcome run = Drive(&idle, &engine, kT0, 100, 1, {0.0, 0.6}, {Job("5", {0, 1})});
  EXPECT_TRUE(run.decisions.empty());
  EXPECT_TRUE(run.commands.empty());
}

TEST(Reclaim, ExemptionsAndUnmatchedJobsAreNeverTouched) {
  ReclaimPolicy p = Policy(ReclaimAction::kCancel, 10, 0);
  p.exempt.users = {"root"};
  p.exempt.accounts = {"ops"};
  p.exempt.qos = {"interactive"};
  p.exempt.names = {"notebook-*"};
  p.exempt.comment_tag = "gw:keep";
  std::vector<RunningJob> jobs;
  for (int i = 0; i < 6; ++i) jobs.push_back(Job(std::to_string(i), {unsigned(i)}));
  jobs[0].user = "root";
  jobs[1].account = "ops";
  jobs[2].qos = "interactive";
  jobs[3].name = "notebook-bob";
  jobs[4].comment = "please gw:keep this";
  jobs[5].partition = "cpu";  // no policy for its partition
  IdleTracker idle(0.05);
  ReclaimEngine engine({p});
  Outcome run = Drive(&idle, &engine, kT0, 100, 1, std::vector<double>(6, 0.0), jobs);
  EXPECT_TRUE(run.commands.empty());
  std::vector<std::string> reasons;
  for (const Decision& d : run.decisions) {
    EXPECT_EQ(d.stage, "exempt");
    reasons.push_back(d.reason);
  }
  EXPECT_EQ(reasons, (std::vector<std::string>{"exempt_user", "exempt_account", "exempt_qos",
                                               "exempt_name", "exempt_comment"}));
}

TEST(Reclaim, MemoryFilterAndNonSlurmJobs) {
  ReclaimPolicy held = Policy(ReclaimAction::kDryRun, 10, 0);
  held.memory = MemoryFilter::kHeld;
  IdleTracker idle(0.05);
  ReclaimEngine engine({held});
  // GPU 0 holds memory, GPU 1 does not: only job 1 counts.
  Outcome run =
      Drive(&idle, &engine, kT0, 20, 1, {0.0, 0.0}, {Job("1", {0}), Job("2", {1})}, {true, false});
  ASSERT_EQ(run.decisions.size(), 2u);
  for (const Decision& d : run.decisions) EXPECT_EQ(d.job_id, "1");

  IdleTracker idle2(0.05);
  ReclaimEngine cancel({Policy(ReclaimAction::kCancel, 10, 0)});
  RunningJob process = Job("train-7", {0});
  process.source = "process";
  Outcome p = Drive(&idle2, &cancel, kT0, 20, 1, {0.0}, {process});
  EXPECT_TRUE(p.commands.empty());
  ASSERT_EQ(p.decisions.size(), 2u);
  EXPECT_EQ(p.decisions[1].stage, "failed");
  EXPECT_NE(p.decisions[1].detail.find("cancel is for Slurm jobs only (scancel) and this is a "
                                       "process job"),
            std::string::npos);
}

RunningJob Pod(std::vector<unsigned> gpus) {
  RunningJob j = Job("ml/train-0", std::move(gpus), "research", "");
  j.source = "kubernetes";
  j.name = j.pod_name = "train-0";
  j.account = j.pod_namespace = "ml";
  j.user = "";
  j.qos = "";
  return j;
}

const std::string* EnvValue(const ReclaimCommand& c, const std::string& key) {
  for (const std::string& kv : c.env)
    if (kv.rfind(key + "=", 0) == 0) return &kv;
  return nullptr;
}

TEST(Reclaim, PodsGetTheHookWithPodFactsAndEvidence) {
  IdleTracker idle(0.05);
  ReclaimPolicy hook = Policy(ReclaimAction::kCommand, 10, 0);
  hook.partition = "";
  hook.command = {"/usr/local/bin/reclaim-hook.sh"};
  ReclaimEngine engine({hook});
  Outcome run = Drive(&idle, &engine, kT0, 20, 1, {0.0, 0.9}, {Pod({0})}, {true, false});
  ASSERT_EQ(run.commands.size(), 1u);
  const ReclaimCommand& c = run.commands[0];
  auto value = [&c](const std::string& key) {
    const std::string* kv = EnvValue(c, key);
    return kv ? kv->substr(key.size() + 1) : std::string("<absent>");
  };
  EXPECT_EQ(value("GPUWARDEN_JOB_SOURCE"), "kubernetes");
  EXPECT_EQ(value("GPUWARDEN_POD_NAMESPACE"), "ml");
  EXPECT_EQ(value("GPUWARDEN_POD_NAME"), "train-0");
  EXPECT_EQ(value("GPUWARDEN_JOB_ID"), "ml/train-0");
  EXPECT_EQ(value("GPUWARDEN_JOB_ACCOUNT"), "ml");
  const std::string evidence = value("GPUWARDEN_RECLAIM_EVIDENCE");
  EXPECT_EQ(evidence.find('\n'), std::string::npos);  // one line
  nlohmann::json e = nlohmann::json::parse(evidence);
  EXPECT_EQ(e["idle_threshold"], 0.05);
  EXPECT_EQ(e["idle_for_s"], 10);
  EXPECT_EQ(e["grace_s"], 0);
  ASSERT_EQ(e["gpus"].size(), 1u);  // the pod's GPU only
  EXPECT_EQ(e["gpus"][0]["uuid"], "GPU-0");
  EXPECT_EQ(e["gpus"][0]["util_ratio"], 0.0);
  EXPECT_EQ(e["gpus"][0]["memory_held"], true);
  const double since = e["gpus"][0]["idle_since"];
  const double idle_s = e["gpus"][0]["idle_s"];
  EXPECT_GE(idle_s, 10);
  EXPECT_DOUBLE_EQ(since + idle_s, c.decision.time_s);
  // The decisions log carries the same evidence.
  nlohmann::json logged = nlohmann::json::parse(DecisionToJson(c.decision));
  EXPECT_EQ(logged["evidence"], e);

  // A Slurm job's hook gets the source and empty pod fields.
  IdleTracker idle2(0.05);
  ReclaimEngine engine2({hook});
  Outcome slurm = Drive(&idle2, &engine2, kT0, 20, 1, {0.0}, {Job("7", {0}, "x", "gpu")});
  ASSERT_EQ(slurm.commands.size(), 1u);
  EXPECT_EQ(*EnvValue(slurm.commands[0], "GPUWARDEN_JOB_SOURCE"), "GPUWARDEN_JOB_SOURCE=slurm");
  EXPECT_EQ(*EnvValue(slurm.commands[0], "GPUWARDEN_POD_NAME"), "GPUWARDEN_POD_NAME=");
}

TEST(Reclaim, RequeueAndCancelRefusePodsSayingWhy) {
  for (ReclaimAction action : {ReclaimAction::kRequeue, ReclaimAction::kCancel}) {
    IdleTracker idle(0.05);
    ReclaimPolicy p = Policy(action, 10, 0);
    p.partition = "";
    ReclaimEngine engine({p});
    Outcome run = Drive(&idle, &engine, kT0, 20, 1, {0.0}, {Pod({0})});
    EXPECT_TRUE(run.commands.empty());
    ASSERT_EQ(run.decisions.size(), 2u);
    EXPECT_EQ(run.decisions[1].stage, "failed");
    const std::string& why = run.decisions[1].detail;
    EXPECT_NE(why.find("is for Slurm jobs only"), std::string::npos) << why;
    EXPECT_NE(why.find("this is a Kubernetes pod; use action: command"), std::string::npos) << why;
  }
}

TEST(Settings, GlobAndPrices) {
  EXPECT_TRUE(GlobMatch("notebook-*", "notebook-bob"));
  EXPECT_TRUE(GlobMatch("*inter?ctive*", "my-interactive-1"));
  EXPECT_FALSE(GlobMatch("notebook-*", "train"));
  EXPECT_TRUE(GlobMatch("*", ""));
  PriceSettings prices;
  prices.default_gpu_hour = 1.5;
  prices.gpu_hour_by_model = {{"A100", 3.0}, {"A100-SXM4-80GB", 4.0}, {"l40s", 2.0}};
  EXPECT_DOUBLE_EQ(prices.GpuHourPrice("NVIDIA A100-SXM4-80GB"), 4.0);
  EXPECT_DOUBLE_EQ(prices.GpuHourPrice("NVIDIA A100-PCIE-40GB"), 3.0);
  EXPECT_DOUBLE_EQ(prices.GpuHourPrice("NVIDIA L40S"), 2.0);
  EXPECT_DOUBLE_EQ(prices.GpuHourPrice("Tesla T4"), 1.5);
}

}  // namespace
}  // namespace gw::governance
