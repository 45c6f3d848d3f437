// The API's JSON conventions (docs/architecture.md "API conventions"): a time that is not set is
// null, never 0, in /api/gw/v1/jobs (running jobs, records, records an older version wrote with
// 0) as in the queue API; a team without a quota has "quota": null, and a quota's unset limit
// is null, never 0.0.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "serve/governance_api.h"
#include "serve/governance_state.h"
#include "serve/jobs_service.h"
#include "support/fake_proc.h"
#include "support/process.h"

namespace gw::serve {
namespace {

using gw::testing::FakeProcess;
using gw::testing::TempDir;
using gw::testing::WriteFile;
using nlohmann::json;

collect::Snapshot Snap(double t, double util, std::vector<unsigned> pids) {
  collect::GpuSnapshot g;
  g.values.fill(collect::kAbsent);
  g.identity.index = 1;
  g.identity.uuid = "GPU-1";
  g.values[static_cast<size_t>(collect::Slot::kUtilization)] = util;
  g.values[static_cast<size_t>(collect::Slot::kMemoryUsed)] = 1e9;
  g.values[static_cast<size_t>(collect::Slot::kMemoryTotal)] = 80e9;
  g.values[static_cast<size_t>(collect::Slot::kPower)] = 300;
  for (unsigned pid : pids) g.processes.push_back({pid, 1e9, collect::kAbsent});
  collect::Snapshot s;
  s.taken_unix_seconds = t;
  s.gpus = {g};
  return s;
}

TEST(ApiConventions, UnsetJobTimesAreNullForRunningJobsAndRecords) {
  TempDir dir;
  const std::string proc = dir / "proc";
  FakeProcess(proc, 4242, 777, "0::/user.slice\n",
              {"GPUWARDEN_JOB=train-7", "GPUWARDEN_TEAM=vision", "CUDA_VISIBLE_DEVICES=1"});
  config::Config config;
  config.storage.path = dir / "data";
  Logger logger(LogLevel::kError);
  JobsService jobs(config, &logger, JobsServiceOptions{proc, "testnode"});
  jobs.OnSnapshot(Snap(1000, 0.9, {4242}));
  jobs.OnSnapshot(Snap(1010, 0.9, {4242}));
  // Running: no end, and a process job has no submit or eligible time.
  json running = json::parse(jobs.JobsJson({.running_only = true}))["data"]["jobs"];
  ASSERT_EQ(running.size(), 1u);
  for (const char* key : {"submit_time", "eligible_time", "end_time"})
    EXPECT_TRUE(running[0][key].is_null()) << key << ": " << running[0].dump();
  EXPECT_EQ(running[0]["start_time"], 1000);
  EXPECT_TRUE(running[0]["gpu"]["end_s"].is_null()) << running[0].dump();
  // Ended: the record has its end; what never happened is still null.
  jobs.OnSnapshot(Snap(1020, 0, {}));
  json record = json::parse(*jobs.JobJson("train-7"))["data"];
  EXPECT_EQ(record["end_time"], 1020);
  EXPECT_TRUE(record["submit_time"].is_null()) << record.dump();
  EXPECT_TRUE(record["eligible_time"].is_null()) << record.dump();
}

TEST(ApiConventions, RecordsAnOlderVersionWroteWithZeroTimesAreServedWithNull) {
  TempDir dir;
  std::filesystem::create_directories(dir / "data/jobs");
  WriteFile(dir / "data/jobs/jobs.jsonl",
            R"({"job_id":"old-1","source":"slurm","name":"x","user":"ann","account":"a",)"
            R"("partition":"gpu","team":"nlp","state":"COMPLETED","state_reason":"None",)"
            R"("submit_time":0,"eligible_time":0,"start_time":1500,"end_time":1600,)"
            R"("gpu":{"gpus":[0],"start_s":1500,"end_s":1600,"gpu_seconds":100,)"
            R"("util_avg_pct":50,"util_max_pct":90}})"
            "\n");
  config::Config config;
  config.storage.path = dir / "data";
  Logger logger(LogLevel::kError);
  JobsService jobs(config, &logger, JobsServiceOptions{dir / "no-proc", "testnode"});
  for (const json& r : {json::parse(*jobs.JobJson("old-1"))["data"],
                        json::parse(jobs.JobsJson({}))["data"]["jobs"][0]}) {
    EXPECT_TRUE(r["submit_time"].is_null()) << r.dump();
    EXPECT_TRUE(r["eligible_time"].is_null()) << r.dump();
    EXPECT_EQ(r["start_time"], 1500);
    EXPECT_DOUBLE_EQ(r["gpu"]["util_avg"].get<double>(), 0.5);  // and ratios, as everywhere
  }
}

TEST(ApiConventions, ATeamWithoutAQuotaHasNullAndUnsetLimitsAreNull) {
  config::Config config;
  config.governance.settings.quotas.teams["vision"].gpus = 4;
  config.governance.settings.quotas.teams["nlp"].gpu_hours = 500;
  GovernanceState state(config);
  json teams = json::parse(TeamsJson(state))["data"]["teams"];
  ASSERT_EQ(teams.size(), 2u) << teams.dump();
  std::map<std::string, json> by_team;
  for (const json& t : teams) by_team[t["team"].get<std::string>()] = t;
  EXPECT_EQ(by_team["vision"]["quota"]["gpus"], 4);
  EXPECT_TRUE(by_team["vision"]["quota"]["gpu_hours"].is_null()) << teams.dump();
  EXPECT_TRUE(by_team["nlp"]["quota"]["gpus"].is_null()) << teams.dump();
  EXPECT_EQ(by_team["nlp"]["quota"]["gpu_hours"], 500);
}

}  // namespace
}  // namespace gw::serve
