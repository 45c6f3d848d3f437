// Per-job statistics from synthetic cycles, and records that survive a restart.
#include "jobs/job_stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "jobs/job_records.h"
#include "support/process.h"

namespace gw::jobs {
namespace {

using gw::testing::ReadFile;
using gw::testing::TempDir;

// GPU `index` at time t: power follows a ramp; the energy counter integrates it exactly.
GpuCycleSample Sample(unsigned index, double t, double util, double power_w, double energy_j) {
  GpuCycleSample s;
  s.index = index;
  s.time_s = t;
  s.util_pct = util;
  s.power_w = power_w;
  s.energy_j = energy_j;
  s.memory_used_bytes = static_cast<std::uint64_t>(util) << 20;
  return s;
}

TEST(JobStats, EnergyGpuSecondsAndClipping) {
  JobStatsTracker tracker(JobStatsOptions{.retention_s = 30});
  tracker.Begin("j1", {1, 0, 1}, 100.5);
  double energy[2] = {1e6, 2e6};
  // 1 s cycles from t=95 to t=200; GPU 0 at 300 W, GPU 1 at 100 W + util.
  for (int t = 95; t <= 200; ++t) {
    CycleInput cycle;
    const double util = t >= 110 ? 80 : 0;
    energy[0] += 300;
    energy[1] += 100 + util;
    cycle.gpus.push_back(Sample(0, t, util, 300, energy[0]));
    cycle.gpus.push_back(Sample(1, t, util, 100 + util, energy[1]));
    cycle.gpus.push_back(Sample(2, t, 99, 500, 0));  // not the job's GPU
    if (t == 150) cycle.gpus[0].throttle_reasons = 0x4 | 0x8;
    if (t == 160) cycle.gpus[1].xid_total = 2;
    tracker.Observe(cycle);
  }
  std::optional<JobGpuStats> running = tracker.Current("j1", 180);
  ASSERT_TRUE(running.has_value());
  EXPECT_EQ(running->end_s, 0);
  // Ends at 180.25, learnt at 200: the tail is clipped.
  std::optional<JobGpuStats> s = tracker.End("j1", 180.25);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->gpus, (std::vector<unsigned>{0, 1}));
  const double lifetime = 180.25 - 100.5;
  EXPECT_DOUBLE_EQ(s->gpu_seconds, 2 * lifetime);
  EXPECT_NEAR(s->observed_gpu_seconds, 2 * lifetime, 1e-9);
  // GPU 0: 300 W throughout; GPU 1: 100 W until 110 (the interval ending at 110 is 180 W).
  const double expected = 300 * lifetime + 100 * lifetime + 80 * (180.25 - 109);
  EXPECT_NEAR(s->energy_j, expected, expected * 0.01);
  EXPECT_NEAR(s->energy_j, s->power_integral_j, expected * 0.01);
  EXPECT_DOUBLE_EQ(s->util_max, 0.80);
  EXPECT_EQ(s->memory_peak_bytes, 80u << 20);
  EXPECT_DOUBLE_EQ(s->throttle_s["sw_power_cap"], 1);
  EXPECT_DOUBLE_EQ(s->throttle_s["hw_slowdown"], 1);
  EXPECT_EQ(s->xid_count, 2u);
  ASSERT_TRUE(s->start_latency_s.has_value());
  EXPECT_DOUBLE_EQ(*s->start_latency_s, 110 - 100.5);
  EXPECT_FALSE(s->idle_while_allocated);
  EXPECT_NEAR(s->idle_gpu_seconds, 2 * (110 - 1 - 100.5), 1e-9);
  EXPECT_FALSE(tracker.End("j1", 200).has_value());
}

TEST(JobStats, IdleJobIsFlaggedAndCounterResetFallsBackToPower) {
  JobStatsTracker tracker;
  tracker.Begin("idle", {3}, 0);
  for (int t = 0; t <= 60; ++t) {
    CycleInput cycle;
    // The counter resets at t=30 (driver reload): that interval uses power instead.
    cycle.gpus.push_back(Sample(3, t, 0, 60, t < 30 ? 5000 + 60.0 * t : 60.0 * (t - 30)));
    tracker.Observe(cycle);
  }
  std::optional<JobGpuStats> s = tracker.End("idle", 60);
  ASSERT_TRUE(s.has_value());
  EXPECT_TRUE(s->idle_while_allocated);
  EXPECT_FALSE(s->start_latency_s.has_value());
  EXPECT_NEAR(s->energy_j, 60 * 60, 1e-6);
  EXPECT_DOUBLE_EQ(s->idle_gpu_seconds, 60);
}

// The scheduler is polled, so a job's start is learnt after cycles past it were observed: those
// cycles are still the job's (before the fix, the energy between start and the poll was lost).
TEST(JobStats, StartLearntLateStillChargesTheCyclesSinceTheStart) {
  JobStatsTracker tracker(JobStatsOptions{.retention_s = 30});
  double energy = 0;
  auto cycle_at = [&](int t) {
    CycleInput cycle;
    const double power = t > 100 ? 250 : 50;
    energy += power;
    cycle.gpus.push_back(Sample(0, t, t > 100 ? 90 : 0, power, energy));
    cycle.gpus.push_back(Sample(1, t, 0, 50, 0));  // not the job's
    tracker.Observe(cycle);
  };
  for (int t = 0; t <= 110; ++t) cycle_at(t);
  tracker.Begin("late", {0}, 100);  // started at 100, learnt at 110
  for (int t = 111; t <= 130; ++t) cycle_at(t);
  std::optional<JobGpuStats> s = tracker.End("late", 130);
  ASSERT_TRUE(s.has_value());
  EXPECT_NEAR(s->energy_j, 250.0 * 30, 1e-6);
  EXPECT_NEAR(s->observed_gpu_seconds, 30, 1e-9);
  ASSERT_TRUE(s->start_latency_s.has_value());
  EXPECT_DOUBLE_EQ(*s->start_latency_s, 1);
  // Older than the retention window: only what is still kept is charged.
  for (int t = 131; t <= 200; ++t) cycle_at(t);
  tracker.Begin("too-late", {0}, 131);
  for (int t = 201; t <= 210; ++t) cycle_at(t);
  s = tracker.End("too-late", 210);
  ASSERT_TRUE(s.has_value());
  EXPECT_NEAR(s->observed_gpu_seconds, 41, 1e-9);  // the interval ending at 170, to 210
}

// The agent's API reads records from memory: loaded once at Open, appended as jobs end, bounded by
// count and by age, the latest record of a requeued id found at once.
TEST(JobRecords, KeptInMemoryBoundedAndLoadedAtOpen) {
  TempDir dir;
  auto record = [](const std::string& id, const std::string& team, std::int64_t end) {
    JobRecord r;
    r.job_id = id;
    r.source = "slurm";
    r.team = team;
    r.state = "COMPLETED";
    r.start_time = end - 10;
    r.end_time = end;
    return r;
  };
  {
    auto offline = JobRecordStore::Open(dir / "jobs");  // no memory: the CLI's reader
    ASSERT_TRUE(offline.ok());
    for (int i = 0; i < 5; ++i)
      ASSERT_TRUE((*offline)->Append(record(std::to_string(i), "a", 1000 + i)).ok());
    EXPECT_EQ((*offline)->RecentCount(), 0u);
    EXPECT_FALSE((*offline)->RecentJson("1").has_value());
  }
  const JobRecordStoreOptions options{.memory_records = 4, .memory_keep_s = 100};
  auto store = JobRecordStore::Open(dir / "jobs", options);
  ASSERT_TRUE(store.ok());
  EXPECT_EQ((*store)->RecentCount(), 4u);  // the newest four of five
  EXPECT_FALSE((*store)->RecentJson("0").has_value());
  ASSERT_TRUE((*store)->RecentJson("4").has_value());
  EXPECT_EQ(JobRecordFromJson(*(*store)->RecentJson("4"))->end_time, 1004);

  // The file is not read again: memory answers even once it is gone.
  std::filesystem::remove(dir / "jobs/jobs.jsonl");
  ASSERT_TRUE((*store)->RecentJson("3").has_value());
  // A requeued job: the latest record wins; the older one stays listed.
  ASSERT_TRUE((*store)->Append(record("3", "b", 1050)).ok());
  EXPECT_EQ(JobRecordFromJson(*(*store)->RecentJson("3"))->team, "b");
  std::vector<std::string> order;
  (*store)->VisitRecent([&](const StoredJobRecord& r) {
    order.push_back(r.job_id + "@" + std::to_string(r.end_time));
    return true;
  });
  EXPECT_EQ(order, (std::vector<std::string>{"3@1050", "4@1004", "3@1003", "2@1002"}));
  // Age: a record ending at 1120 pushes out those that ended over 100 s before it.
  ASSERT_TRUE((*store)->Append(record("9", "a", 1120)).ok());
  order.clear();
  (*store)->VisitRecent([&](const StoredJobRecord& r) {
    order.push_back(r.job_id);
    return order.size() < 10;
  });
  EXPECT_EQ(order, (std::vector<std::string>{"9", "3"}));
  EXPECT_EQ(JobRecordFromJson(*(*store)->RecentJson("3"))->end_time, 1050);
  EXPECT_FALSE((*store)->RecentJson("4").has_value());
  // And the file has what was appended since (restart: loaded again).
  auto reopened = JobRecordStore::Open(dir / "jobs", options);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ((*reopened)->RecentCount(), 2u);
  EXPECT_TRUE((*reopened)->RecentJson("9").has_value());
}

TEST(JobRecords, AppendReadBackAfterRestartAndTornLine) {
  TempDir dir;
  JobRecord r;
  r.job_id = "11";
  r.source = "slurm";
  r.user = "alice";
  r.team = "sim-team";
  r.state = "COMPLETED";
  r.exit_code = 0;
  r.submit_time = 1000;
  r.eligible_time = 1000;
  r.start_time = 1002;
  r.end_time = 1200;
  r.queue_wait_s = 2;
  JobGpuStats g;
  g.gpus = {0, 1};
  g.energy_j = 12345.5;
  g.throttle_s["sw_power_cap"] = 3;
  g.start_latency_s = 1.5;
  r.gpu = g;
  {
    auto store = JobRecordStore::Open(dir / "jobs");
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->Append(r).ok());
  }
  // A crash mid-append leaves a torn line; the next append starts fresh.
  {
    std::ofstream torn(dir / "jobs/jobs.jsonl", std::ios::app);
    torn << "{\"job_id\": \"half";
  }
  auto store = JobRecordStore::Open(dir / "jobs");
  ASSERT_TRUE(store.ok());
  JobRecord second = r;
  second.job_id = "12";
  second.gpu.reset();
  second.start_time = 0;
  second.queue_wait_s.reset();
  ASSERT_TRUE((*store)->Append(second).ok());
  Expected<std::vector<JobRecord>> all = (*store)->ReadAll();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].job_id, "11");
  ASSERT_TRUE((*all)[0].gpu.has_value());
  EXPECT_DOUBLE_EQ((*all)[0].gpu->energy_j, 12345.5);
  EXPECT_DOUBLE_EQ((*all)[0].gpu->throttle_s.at("sw_power_cap"), 3);
  EXPECT_EQ((*all)[0].gpu->start_latency_s.value_or(0), 1.5);
  EXPECT_EQ((*all)[0].queue_wait_s.value_or(-1), 2);
  EXPECT_FALSE((*all)[1].gpu.has_value());
  Expected<std::optional<JobRecord>> found = (*store)->Find("12");
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->team, "sim-team");
  EXPECT_FALSE((*(*store)->Find("nope")).has_value());
}

TEST(JobLedger, SlurmEventsToRecords) {
  TempDir dir;
  auto store = JobRecordStore::Open(dir.path());
  ASSERT_TRUE(store.ok());
  JobLedger ledger(TeamMap(TeamConfig{.accounts = {{"physics", "sim-team"}}}), store->get());
  SlurmJob job;
  job.id = "21";
  job.user = "alice";
  job.account = "physics";
  job.state = JobState::kRunning;
  job.state_text = "RUNNING";
  job.submit_time = 90;
  job.eligible_time = 95;
  job.start_time = 100;
  job.end_time = 100 + 365 * 86400;
  job.nodes = "vm";
  job.gpu_indices = {0};
  ASSERT_TRUE(ledger.OnEvent(JobEvent{JobEventKind::kStarted, "21", 100, job.state, job}).ok());
  double energy = 0;
  for (int t = 99; t <= 140; ++t) {
    energy += 200;
    ledger.OnCycle(CycleInput{{Sample(0, t, 50, 200, energy)}});
  }
  EXPECT_EQ(ledger.Running(120).size(), 1u);
  job.state = JobState::kFailed;
  job.state_text = "FAILED";
  job.end_time = 130;
  job.exit_code = 1;
  ASSERT_TRUE(ledger.OnEvent(JobEvent{JobEventKind::kFinished, "21", 130, job.state, job}).ok());
  EXPECT_TRUE(ledger.Running(140).empty());
  auto found = (*store)->Find("21");
  ASSERT_TRUE(found.ok() && found->has_value());
  const JobRecord& r = **found;
  EXPECT_EQ(r.state, "FAILED");
  EXPECT_EQ(r.team, "sim-team");
  EXPECT_EQ(r.queue_wait_s.value_or(-1), 5);
  EXPECT_EQ(r.submit_wait_s.value_or(-1), 10);
  ASSERT_TRUE(r.gpu.has_value());
  EXPECT_NEAR(r.gpu->energy_j, 200 * 30, 200 * 30 * 0.01);
  EXPECT_DOUBLE_EQ(r.gpu->gpu_seconds, 30);
  EXPECT_EQ(r.exit_code.value_or(-1), 1);
  EXPECT_NE(ReadFile(dir / "jobs.jsonl").find("\"job_id\":\"21\""), std::string::npos);
}

}  // namespace
}  // namespace gw::jobs

namespace gw::jobs {
namespace {

TEST(JobLedger, ProcessJobsWithoutAScheduler) {
  TempDir dir;
  auto store = JobRecordStore::Open(dir.path());
  ASSERT_TRUE(store.ok());
  JobLedger ledger(TeamMap(TeamConfig{.users = {{"alice", "vision"}}}), store->get());
  JobLedger::AttributedGpuProcess a;
  a.process.pid = 10;
  a.process.user = "alice";
  a.process.job_id = "nightly";
  a.process.job_source = "gpuwarden-env";
  a.gpu = 1;
  JobLedger::AttributedGpuProcess other = a;  // a Slurm process is not a process job
  other.process.job_id = "77";
  other.process.job_source = "slurm-env";
  double energy = 0;
  for (int t = 0; t <= 20; ++t) {
    energy += 100;
    ledger.OnCycle(CycleInput{{Sample(1, t, 40, 100, energy)}});
    ASSERT_TRUE(ledger
                    .OnProcesses(t < 20 ? std::vector<JobLedger::AttributedGpuProcess>{a, other}
                                        : std::vector<JobLedger::AttributedGpuProcess>{other},
                                 t)
                    .ok());
  }
  auto all = (*store)->ReadAll();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  const JobRecord& r = (*all)[0];
  EXPECT_EQ(r.job_id, "nightly");
  EXPECT_EQ(r.source, "process");
  EXPECT_EQ(r.team, "vision");
  EXPECT_EQ(r.end_time - r.start_time, 20);
  ASSERT_TRUE(r.gpu.has_value());
  EXPECT_NEAR(r.gpu->energy_j, 2000, 20);
}

}  // namespace
}  // namespace gw::jobs
