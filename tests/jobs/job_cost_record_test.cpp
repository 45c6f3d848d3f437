// A finished job's cost in its record: written, read back (file and memory), asked from the
// governance layer at the job's end, and absent from older records without breaking them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "jobs/job_records.h"
#include "support/process.h"

namespace gw::jobs {
namespace {

using gw::testing::ReadFile;
using gw::testing::TempDir;
using gw::testing::WriteFile;

JobCostRecord Cost() {
  JobCostRecord c;
  c.currency = "EUR";
  c.allocated_gpu_hours = 0.25;
  c.energy_kwh = 0.1;
  c.allocation_cost = 0.8;
  c.energy_cost = 0.03;
  c.idle_allocated_cost = 0.2;
  return c;
}

TEST(JobCostRecord, RoundTripsThroughJson) {
  JobRecord r;
  r.job_id = "42";
  r.state = "COMPLETED";
  r.cost = Cost();
  const std::string line = JobRecordToJson(r);
  const nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_EQ(j["cost"]["currency"], "EUR");
  EXPECT_DOUBLE_EQ(j["cost"]["total_cost"].get<double>(), 0.8 + 0.03);
  auto back = JobRecordFromJson(line);
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_TRUE(back->cost.has_value());
  EXPECT_EQ(back->cost->currency, "EUR");
  EXPECT_DOUBLE_EQ(back->cost->allocated_gpu_hours, 0.25);
  EXPECT_DOUBLE_EQ(back->cost->energy_kwh, 0.1);
  EXPECT_DOUBLE_EQ(back->cost->allocation_cost, 0.8);
  EXPECT_DOUBLE_EQ(back->cost->energy_cost, 0.03);
  EXPECT_DOUBLE_EQ(back->cost->idle_allocated_cost, 0.2);
  EXPECT_EQ(JobRecordToJson(*back), line);
}

TEST(JobCostRecord, OlderRecordsWithoutCostStillLoad) {
  TempDir dir;
  // A record as written before cost existed, then one with cost.
  WriteFile(dir / "jobs.jsonl",
            "{\"job_id\":\"7\",\"source\":\"slurm\",\"state\":\"COMPLETED\",\"start_time\":10,"
            "\"end_time\":20}\n");
  auto store = JobRecordStore::Open(dir.path(), {.memory_records = 10});
  ASSERT_TRUE(store.ok());
  JobRecord r;
  r.job_id = "8";
  r.state = "COMPLETED";
  r.start_time = 30;
  r.end_time = 40;
  r.cost = Cost();
  ASSERT_TRUE((*store)->Append(r).ok());
  auto all = (*store)->ReadAll();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_FALSE((*all)[0].cost.has_value());
  ASSERT_TRUE((*all)[1].cost.has_value());
  EXPECT_DOUBLE_EQ((*all)[1].cost->Total(), 0.83);
  EXPECT_EQ(nlohmann::json::parse(*(*store)->RecentJson("7")).count("cost"), 0u);
  EXPECT_DOUBLE_EQ(
      nlohmann::json::parse(*(*store)->RecentJson("8"))["cost"]["total_cost"].get<double>(), 0.83);
  // A malformed cost is a malformed record, not a crash.
  EXPECT_FALSE(JobRecordFromJson("{\"job_id\":\"9\",\"cost\":{\"allocation_cost\":\"x\"}}").ok());
}

TEST(JobCostRecord, TheLedgerAsksForTheCostAtTheJobsEnd) {
  TempDir dir;
  auto store = JobRecordStore::Open(dir.path());
  ASSERT_TRUE(store.ok());
  JobLedger ledger(TeamMap(TeamConfig{}), store->get());
  std::vector<std::string> asked;
  ledger.SetCostLookup([&](const std::string& id) -> std::optional<JobCostRecord> {
    asked.push_back(id);
    if (id == "nobody") return std::nullopt;
    return Cost();
  });
  SlurmJob job;
  job.id = "31";
  job.state = JobState::kRunning;
  job.state_text = "RUNNING";
  job.start_time = 100;
  job.gpu_indices = {0};
  ASSERT_TRUE(ledger.OnEvent(JobEvent{JobEventKind::kStarted, "31", 100, job.state, job}).ok());
  EXPECT_TRUE(asked.empty());  // only at the end
  job.state = JobState::kCompleted;
  job.state_text = "COMPLETED";
  job.end_time = 200;
  ASSERT_TRUE(ledger.OnEvent(JobEvent{JobEventKind::kFinished, "31", 200, job.state, job}).ok());
  ASSERT_EQ(asked, std::vector<std::string>{"31"});
  auto found = (*store)->Find("31");
  ASSERT_TRUE(found.ok() && found->has_value());
  ASSERT_TRUE((*found)->cost.has_value());
  EXPECT_DOUBLE_EQ((*found)->cost->allocation_cost, 0.8);
  // A job the governance layer never priced has no cost.
  job.id = "nobody";
  ASSERT_TRUE(
      ledger.OnEvent(JobEvent{JobEventKind::kFinished, "nobody", 300, job.state, job}).ok());
  auto none = (*store)->Find("nobody");
  ASSERT_TRUE(none.ok() && none->has_value());
  EXPECT_FALSE((*none)->cost.has_value());
  EXPECT_EQ(
      ReadFile(dir / "jobs.jsonl").find("\"cost\"", ReadFile(dir / "jobs.jsonl").find("nobody")),
      std::string::npos);
}

}  // namespace
}  // namespace gw::jobs
