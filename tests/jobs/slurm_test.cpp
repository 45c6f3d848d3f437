// The Slurm adapter without Slurm: squeue --json documents as 22.05 writes them (and the newer
// {"set","number"} form), GRES/TRES strings, lifecycle events and edge cases, outages, and the
// poller running a stand-in squeue as a child process.
#include "jobs/slurm.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "jobs/teams.h"
#include "support/process.h"

namespace gw::jobs {
namespace {

using gw::testing::TempDir;
using gw::testing::WriteFile;

TEST(Gres, Indices) {
  EXPECT_EQ(ParseGresIndices("gpu:2(IDX:0-1)"), (std::vector<unsigned>{0, 1}));
  EXPECT_EQ(ParseGresIndices("gpu:a100:2(IDX:0,2)"), (std::vector<unsigned>{0, 2}));
  EXPECT_EQ(ParseGresIndices("gpu:3(IDX:1-3)"), (std::vector<unsigned>{1, 2, 3}));
  EXPECT_EQ(ParseGresIndices("gpu(IDX:1,3-4)"), (std::vector<unsigned>{1, 3, 4}));
  EXPECT_TRUE(ParseGresIndices("gpu:2").empty());
  EXPECT_TRUE(ParseGresIndices("gpu:2(IDX:N/A)").empty());
}

TEST(Gres, TresCounts) {
  EXPECT_EQ(ParseTresGpuCount("gres:gpu:2"), 2u);
  EXPECT_EQ(ParseTresGpuCount("gres/gpu:a100:3"), 3u);
  EXPECT_EQ(ParseTresGpuCount("cpu=1,mem=100M,node=1,billing=1,gres/gpu=3"), 3u);
  EXPECT_EQ(ParseTresGpuCount("gres:gpu"), 1u);
  EXPECT_EQ(ParseTresGpuCount("gres/gpumem=4G,cpu=2"), 0u);
  EXPECT_EQ(ParseTresGpuCount(""), 0u);
}

// Five jobs as squeue --json 22.05 shows them mid-run (times are epoch seconds).
constexpr const char* kSqueue = R"json({
 "meta": {"plugin": {"type": "openapi/v0.0.38", "name": "Slurm OpenAPI v0.0.38"}},
 "errors": [],
 "jobs": [
  {"job_id": 11, "name": "train", "job_state": "RUNNING", "state_reason": "None",
   "user_name": "alice", "account": "physics", "partition": "gpu", "nodes": "vm",
   "submit_time": 1000, "eligible_time": 1000, "accrue_time": 1000, "start_time": 1002,
   "end_time": 31537002, "gres_detail": ["gpu:2(IDX:0-1)"], "tres_per_node": "gres:gpu:2",
   "tres_per_job": "", "tres_req_str": "cpu=1,node=1,billing=1,gres/gpu=2",
   "tres_alloc_str": "cpu=1,node=1,billing=1,gres/gpu=2", "exit_code": 0},
  {"job_id": 12, "name": "wait", "job_state": "PENDING", "state_reason": "Resources",
   "user_name": "bob", "account": "bio", "partition": "gpu", "nodes": "",
   "submit_time": 1001, "eligible_time": 1001, "accrue_time": 1001, "start_time": 0,
   "end_time": 0, "gres_detail": [], "tres_per_node": "", "tres_per_job": "gres:gpu:4",
   "tres_req_str": "cpu=1,node=1,gres/gpu=4", "tres_alloc_str": ""},
  {"job_id": 13, "name": "cancelled", "job_state": "CANCELLED", "state_reason": "None",
   "user_name": "bob", "account": "bio", "partition": "gpu", "nodes": "",
   "submit_time": 1001, "eligible_time": 1001, "accrue_time": 1001, "start_time": 1010,
   "end_time": 1010, "gres_detail": [], "tres_per_node": "gres:gpu:1"},
  {"job_id": 14, "name": "rejected", "job_state": "FAILED", "state_reason": "BadConstraints",
   "user_name": "carol", "account": "ml", "partition": "gpu", "nodes": "",
   "submit_time": 1005, "eligible_time": 0, "start_time": 1005, "end_time": 1005,
   "gres_detail": []},
  {"job_id": 15, "name": "typed", "job_state": "RUNNING", "user_name": "carol",
   "account": "ml", "partition": "gpu", "nodes": "vm", "submit_time": 1003,
   "eligible_time": 1003, "start_time": 1004, "end_time": 1604,
   "gres_detail": ["gpu:a100:2(IDX:2,3)"], "tres_per_node": "gres:gpu:a100:2"}
 ]})json";

TEST(SqueueJson, Parses2205Output) {
  Expected<std::vector<SlurmJob>> jobs = ParseSqueueJson(kSqueue);
  ASSERT_TRUE(jobs.ok()) << jobs.error().message;
  ASSERT_EQ(jobs->size(), 5u);
  const SlurmJob& train = (*jobs)[0];
  EXPECT_EQ(train.id, "11");
  EXPECT_EQ(train.state, JobState::kRunning);
  EXPECT_EQ(train.user, "alice");
  EXPECT_EQ(train.account, "physics");
  EXPECT_EQ(train.gpu_indices, (std::vector<unsigned>{0, 1}));
  EXPECT_EQ(train.gpus.per_node, 2u);
  EXPECT_EQ(train.gpus.total, 2u);
  EXPECT_EQ(train.QueueWaitS().value_or(-1), 2);
  EXPECT_TRUE(train.started());
  const SlurmJob& wait = (*jobs)[1];
  EXPECT_EQ(wait.state, JobState::kPending);
  EXPECT_FALSE(wait.started());  // start_time 0
  EXPECT_EQ(wait.gpus.per_job, 4u);
  EXPECT_FALSE(wait.QueueWaitS().has_value());
  EXPECT_FALSE((*jobs)[2].started());  // cancelled while pending
  SlurmJob estimated = wait;  // 22.05's backfill puts its estimate in a pending job's start_time
  estimated.start_time = 31537002;
  EXPECT_FALSE(estimated.started());
  EXPECT_FALSE(estimated.QueueWaitS().has_value());
  EXPECT_FALSE((*jobs)[3].started());  // rejected at submission
  EXPECT_EQ((*jobs)[4].gpu_indices, (std::vector<unsigned>{2, 3}));
}

// 22.05 writes the raw wait status: exit 3 is 768, a SIGTERM 15, a SIGKILL with core 0x89.
TEST(SqueueJson, ExitCodeFromTheWaitStatus) {
  auto exit_of = [](const std::string& raw) {
    Expected<std::vector<SlurmJob>> jobs = ParseSqueueJson(
        R"({"jobs": [{"job_id": 7, "job_state": "FAILED", "exit_code": )" + raw + "}]}");
    EXPECT_TRUE(jobs.ok()) << raw;
    return jobs.ok() && !jobs->empty() ? (*jobs)[0].exit_code.value_or(-1000) : -1000;
  };
  EXPECT_EQ(exit_of("0"), 0);
  EXPECT_EQ(exit_of("256"), 1);
  EXPECT_EQ(exit_of("768"), 3);
  EXPECT_EQ(exit_of("65280"), 255);
  EXPECT_EQ(exit_of("15"), 143);
  EXPECT_EQ(exit_of("137"), 137);  // SIGKILL (9) with a core dump flag (0x80)
}

TEST(SqueueJson, NewerNumberObjectsAndErrors) {
  Expected<std::vector<SlurmJob>> jobs = ParseSqueueJson(R"({"jobs": [{"job_id": 7,
    "job_state": ["RUNNING"], "submit_time": {"set": true, "infinite": false, "number": 50},
    "start_time": {"set": true, "number": 60}, "eligible_time": {"set": true, "number": 55},
    "end_time": {"set": false, "number": 0},
    "exit_code": {"status": ["SUCCESS"], "return_code": {"set": true, "number": 0}}}]})");
  ASSERT_TRUE(jobs.ok()) << jobs.error().message;
  EXPECT_EQ((*jobs)[0].state, JobState::kRunning);
  EXPECT_EQ((*jobs)[0].QueueWaitS().value_or(-1), 5);
  EXPECT_EQ((*jobs)[0].exit_code.value_or(-1), 0);
  EXPECT_FALSE(ParseSqueueJson("not json").ok());
  EXPECT_FALSE(ParseSqueueJson(R"({"meta": {}})").ok());
  Expected<std::vector<SlurmJob>> failed = ParseSqueueJson(
      R"({"errors": [{"error": "Unable to contact slurm controller", "errno": 1}], "jobs": []})");
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().message.find("Unable to contact"), std::string::npos);
}

std::vector<std::string> Kinds(const std::vector<JobEvent>& events, const std::string& id) {
  std::vector<std::string> out;
  for (const JobEvent& e : events)
    if (e.job_id == id)
      out.push_back(std::string(JobEventKindName(e.kind)) + "@" + std::to_string(e.time));
  return out;
}

TEST(SlurmJobTable, LifecycleAndEdgeCases) {
  SlurmJobTable table;
  std::vector<JobEvent> events = table.Apply(*ParseSqueueJson(kSqueue), 1100);
  EXPECT_EQ(Kinds(events, "11"),
            (std::vector<std::string>{"submitted@1000", "eligible@1000", "started@1002"}));
  EXPECT_EQ(Kinds(events, "12"), (std::vector<std::string>{"submitted@1001", "eligible@1001"}));
  EXPECT_EQ(Kinds(events, "13"),
            (std::vector<std::string>{"submitted@1001", "eligible@1001", "finished@1010"}));
  EXPECT_EQ(Kinds(events, "14"), (std::vector<std::string>{"submitted@1005", "finished@1005"}));
  for (std::size_t i = 1; i < events.size(); ++i) EXPECT_LE(events[i - 1].time, events[i].time);

  // Same poll again: nothing new.
  EXPECT_TRUE(table.Apply(*ParseSqueueJson(kSqueue), 1110).empty());

  // 11 completes (real end replaces the projection), 12 starts, 13/14 aged out (MinJobAge),
  // 15 vanishes without being seen to finish.
  std::vector<SlurmJob> next = *ParseSqueueJson(kSqueue);
  next.resize(2);
  next[0].state = JobState::kCompleted;
  next[0].state_text = "COMPLETED";
  next[0].end_time = 1200;
  next[1].state = JobState::kRunning;
  next[1].start_time = 1200;
  next[1].nodes = "vm";
  next[1].gpu_indices = {0, 1, 2, 3};
  events = table.Apply(next, 1205);
  EXPECT_EQ(Kinds(events, "11"), (std::vector<std::string>{"finished@1200"}));
  EXPECT_EQ(Kinds(events, "12"), (std::vector<std::string>{"started@1200"}));
  EXPECT_TRUE(Kinds(events, "13").empty());
  EXPECT_EQ(Kinds(events, "15"), (std::vector<std::string>{"vanished@1205"}));
  EXPECT_EQ(table.jobs().size(), 2u);
  EXPECT_EQ(table.jobs().at("12").QueueWaitS().value_or(-1), 199);
}

TEST(SlurmJobTable, OutageKeepsStateAndReportsStaleness) {
  SlurmJobTable table;
  (void)table.Apply(*ParseSqueueJson(kSqueue), 1010);
  EXPECT_EQ(table.health().StalenessS(1010), 0);
  table.Failed("squeue: exit code 1: slurm_load_jobs error: Unable to contact slurm controller",
               1030);
  table.Failed("again", 1060);
  EXPECT_FALSE(table.health().up);
  EXPECT_EQ(table.health().failures_total, 2u);
  EXPECT_DOUBLE_EQ(table.health().StalenessS(1090), 80);
  EXPECT_EQ(table.jobs().size(), 5u);                                 // last known state kept
  EXPECT_TRUE(table.Apply(*ParseSqueueJson(kSqueue), 1120).empty());  // recovered, nothing lost
  EXPECT_TRUE(table.health().up);
  EXPECT_EQ(table.health().StalenessS(1120), 0);
}

TEST(RunCommandCapture, ExitCodesTimeoutsAndEnvironment) {
  TempDir dir;
  Expected<std::string> ok =
      RunCommandCapture({"/bin/sh", "-c", "echo \"$GW_X\""}, {"GW_X=hello"}, 10, 1 << 20);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(*ok, "hello\n");
  Expected<std::string> bad =
      RunCommandCapture({"/bin/sh", "-c", "echo boom >&2; exit 3"}, {}, 10, 1 << 20);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("exit code 3: boom"), std::string::npos);
  Expected<std::string> slow = RunCommandCapture({"/bin/sleep", "30"}, {}, 0.3, 1 << 20);
  ASSERT_FALSE(slow.ok());
  EXPECT_NE(slow.error().message.find("timed out"), std::string::npos);
  EXPECT_FALSE(RunCommandCapture({"/nonexistent/squeue"}, {}, 5, 1 << 20).ok());
  Expected<std::string> big =
      RunCommandCapture({"/bin/sh", "-c", "head -c 100000 /dev/zero"}, {}, 10, 1000);
  EXPECT_FALSE(big.ok());
}

// The poller against a stand-in squeue whose answer the test swaps (and breaks).
TEST(SlurmPoller, PollsAChildProcessAndSurvivesOutages) {
  TempDir dir;
  const std::string answer = dir / "answer.json";
  const std::string script = dir / "squeue";
  WriteFile(script, "#!/bin/sh\n[ -f '" + answer +
                        "' ] || { echo 'slurm_load_jobs error: Unable to contact slurm controller' "
                        ">&2; exit 1; }\ncat '" +
                        answer + "'\n");
  chmod(script.c_str(), 0755);
  WriteFile(answer, kSqueue);
  ManualClock clock;
  clock.SetSeconds(1000);
  std::vector<std::string> logs;
  Logger logger(LogLevel::kDebug, [&](LogLevel, const std::string& line) { logs.push_back(line); });
  SlurmPoller poller(SlurmPollerOptions{.command = {script, "--json"}}, &logger, &clock);
  poller.PollOnce();
  EXPECT_EQ(poller.Jobs().size(), 5u);
  EXPECT_FALSE(poller.TakeEvents().empty());
  EXPECT_TRUE(poller.TakeEvents().empty());
  std::filesystem::remove(answer);
  clock.SetSeconds(1030);
  poller.PollOnce();
  EXPECT_FALSE(poller.Health().up);
  EXPECT_EQ(poller.Jobs().size(), 5u);
  EXPECT_DOUBLE_EQ(poller.Health().StalenessS(1045), 45);
  EXPECT_NE(poller.Health().last_error.find("Unable to contact"), std::string::npos);
  WriteFile(answer, kSqueue);
  clock.SetSeconds(1060);
  poller.PollOnce();
  EXPECT_TRUE(poller.Health().up);
  ASSERT_GE(logs.size(), 2u);
}

TEST(SlurmPoller, ThreadStartsAndStops) {
  SlurmPoller poller(
      SlurmPollerOptions{.command = {"/bin/sh", "-c", "echo '{\"jobs\": []}'"}, .interval_s = 0.05},
      nullptr);
  poller.Start();
  ASSERT_TRUE(gw::testing::WaitFor([&] { return poller.Health().polls_total >= 3; }, 20));
  poller.Stop();
  EXPECT_TRUE(poller.Health().up);
}

TEST(Teams, AccountThenUserThenUnassigned) {
  TeamMap teams(TeamConfig{.accounts = {{"Physics", "sim-team"}}, .users = {{"bob", "bio-team"}}});
  EXPECT_EQ(teams.TeamOf("physics", "bob"), "sim-team");
  EXPECT_EQ(teams.TeamOf("chem", "bob"), "bio-team");
  EXPECT_EQ(teams.TeamOf("chem", "zed"), "unassigned");
  EXPECT_EQ(teams.TeamOf("", ""), "unassigned");
  EXPECT_EQ(teams.TeamOf("", "", "nlp"), "nlp");
  TeamMap strict(TeamConfig{.trust_process_team = false});
  EXPECT_EQ(strict.TeamOf("", "", "nlp"), "unassigned");
}

}  // namespace
}  // namespace gw::jobs
