#include "governance/pool.h"

#include <gtest/gtest.h>

namespace gw::governance {
namespace {

constexpr double kT0 = 1700000000;

jobs::SlurmJob Running(std::string id, unsigned gpus, std::string partition = "gpu") {
  jobs::SlurmJob j;
  j.id = std::move(id);
  j.state = jobs::JobState::kRunning;
  j.partition = std::move(partition);
  j.gpus.total = gpus;
  return j;
}

jobs::SlurmJob Pending(std::string id, unsigned per_node, std::string partition = "gpu") {
  jobs::SlurmJob j;
  j.id = std::move(id);
  j.state = jobs::JobState::kPending;
  j.partition = std::move(partition);
  j.gpus.per_node = per_node;
  return j;
}

TEST(Pool, ParsesScontrolShowPartition) {
  const std::string text =
      "PartitionName=gpu AllowGroups=ALL Default=YES Nodes=vm State=UP TotalCPUs=2 TotalNodes=1 "
      "TRES=cpu=2,mem=2000M,node=1,billing=2,gres/gpu=4\n"
      "PartitionName=cpu Nodes=vm State=UP TRES=cpu=2,mem=2000M,node=1,billing=2\n";
  auto capacity = ParsePartitionCapacity(text);
  ASSERT_EQ(capacity.size(), 2u);
  EXPECT_DOUBLE_EQ(capacity["gpu"], 4);
  EXPECT_DOUBLE_EQ(capacity["cpu"], 0);
  // sinfo -h -o "%R %D %G": one line per node configuration.
  auto sinfo = ParsePartitionCapacity(
      "gpu 2 gpu:a100:4(S:0-1)\ngpu 1 gpu:8,shard:16\ndebug 1 gpu:l40s:2\ncpu 4 (null)\n");
  EXPECT_DOUBLE_EQ(sinfo["gpu"], 16);
  EXPECT_DOUBLE_EQ(sinfo["debug"], 2);
  EXPECT_DOUBLE_EQ(sinfo["cpu"], 0);
}

TEST(Pool, CongestionPendingFreeAndAScaleOutWhenSustained) {
  PoolSettings s;
  s.scale_out_ratio = 1.0;
  s.scale_out_for_s = 600;
  PoolTracker pools(s);
  pools.SetCapacity({{"gpu", 4}});
  std::map<std::string, jobs::SlurmJob> jobs = {{"1", Running("1", 4)},
                                                {"2", Pending("2", 2)},
                                                {"3", Pending("3", 1, "gpu,debug")},
                                                {"4", Pending("4", 0)}};  // a CPU job
  for (double t = 0; t < 600; t += 60) {
    pools.Observe(jobs, kT0 + t);
    const PartitionPool& p = pools.pools().at("gpu");
    EXPECT_DOUBLE_EQ(p.capacity, 4);
    EXPECT_DOUBLE_EQ(p.allocated, 4);
    EXPECT_DOUBLE_EQ(p.pending, 3);
    EXPECT_DOUBLE_EQ(p.pending_jobs, 2);
    EXPECT_DOUBLE_EQ(p.free, 0);
    EXPECT_DOUBLE_EQ(p.congestion, 7.0 / 4.0);
    EXPECT_DOUBLE_EQ(p.scale_out_gpus, 0) << "not sustained yet at " << t;
  }
  // One pending job of 2 GPUs left: the smallest shortfall seen (2) is the recommendation.
  jobs.erase("3");
  pools.Observe(jobs, kT0 + 600);
  EXPECT_DOUBLE_EQ(pools.pools().at("gpu").scale_out_gpus, 2);
  EXPECT_DOUBLE_EQ(pools.pools().at("gpu").congested_for_s, 600);
  // The queue drains: no recommendation.
  jobs.erase("2");
  pools.Observe(jobs, kT0 + 660);
  EXPECT_DOUBLE_EQ(pools.pools().at("gpu").scale_out_gpus, 0);
  EXPECT_DOUBLE_EQ(pools.pools().at("gpu").congestion, 1.0);
}

TEST(Pool, ShrinkWhenFreeCapacityIsSustainedAndConfiguredCapacityWins) {
  PoolSettings s;
  s.shrink_free_ratio = 0.5;
  s.shrink_for_s = 3600;
  s.capacity_gpus = {{"gpu", 8}};
  PoolTracker pools(s);
  pools.SetCapacity({{"gpu", 4}});
  std::map<std::string, jobs::SlurmJob> jobs = {{"1", Running("1", 2)}};
  for (double t = 0; t <= 3600; t += 300) {
    if (t == 1800) jobs["2"] = Running("2", 1);  // free drops from 6 to 5 for a while
    if (t == 2400) jobs.erase("2");
    pools.Observe(jobs, kT0 + t);
  }
  const PartitionPool& p = pools.pools().at("gpu");
  EXPECT_DOUBLE_EQ(p.capacity, 8);
  EXPECT_DOUBLE_EQ(p.free, 6);
  EXPECT_DOUBLE_EQ(p.shrink_gpus, 5);
  EXPECT_DOUBLE_EQ(p.congestion, 2.0 / 8.0);
  // Something pending stops the recommendation.
  jobs["9"] = Pending("9", 1);
  pools.Observe(jobs, kT0 + 3700);
  EXPECT_DOUBLE_EQ(pools.pools().at("gpu").shrink_gpus, 0);
}

TEST(Pool, QueueWaitQuantilesPerWindow) {
  PoolSettings s;
  s.windows_s = {3600, 86400};
  PoolTracker pools(s);
  std::map<std::string, jobs::SlurmJob> jobs;
  // 20 jobs started over the last 20 hours (one per hour), waits 10, 20, ..., 200 s; the
  // newest (wait 200) started 30 minutes ago.
  const double now = kT0 + 100000;
  for (int i = 1; i <= 20; ++i) {
    jobs::SlurmJob j = Running(std::to_string(i), 1);
    j.start_time = static_cast<std::int64_t>(now - 1800 - 3600.0 * (20 - i));
    j.eligible_time = j.start_time - 10 * i;
    j.submit_time = j.eligible_time;
    jobs[j.id] = j;
  }
  pools.Observe(jobs, now);
  const auto& waits = pools.pools().at("gpu").waits;
  ASSERT_EQ(waits.size(), 2u);
  EXPECT_EQ(waits[0].jobs, 1u);
  EXPECT_DOUBLE_EQ(waits[0].p50_s, 200);
  EXPECT_EQ(waits[1].jobs, 20u);
  EXPECT_DOUBLE_EQ(waits[1].p50_s, 100);  // nearest rank: the 10th of 20
  EXPECT_DOUBLE_EQ(waits[1].p95_s, 190);  // the 19th of 20
  // Observed again: each job counts once.
  pools.Observe(jobs, now + 1);
  EXPECT_EQ(pools.pools().at("gpu").waits[1].jobs, 20u);
}

// A restart: the windows keep the jobs that started before it (most have left squeue by then),
// and a job squeue still lists is not counted twice.
TEST(Pool, QueueWaitWindowsSurviveARestartWithoutCountingAJobTwice) {
  PoolSettings s;
  s.windows_s = {86400};
  PoolTracker before(s);
  std::map<std::string, jobs::SlurmJob> jobs;
  const double now = kT0 + 100000;
  for (int i = 1; i <= 10; ++i) {
    jobs::SlurmJob j = Running(std::to_string(i), 1);
    j.start_time = static_cast<std::int64_t>(now - 600 * i);
    j.eligible_time = j.start_time - 30 * i;
    jobs[j.id] = j;
  }
  before.Observe(jobs, now);
  ASSERT_EQ(before.pools().at("gpu").waits[0].jobs, 10u);
  const std::string checkpoint = before.Checkpoint();

  // Jobs 1-8 ended while the agent was down; 9 and 10 still run; 11 started meanwhile.
  std::map<std::string, jobs::SlurmJob> later = {{"9", jobs["9"]}, {"10", jobs["10"]}};
  jobs::SlurmJob j11 = Running("11", 1);
  j11.start_time = static_cast<std::int64_t>(now + 60);
  j11.eligible_time = j11.start_time - 500;
  later["11"] = j11;
  PoolTracker after(s);
  ASSERT_TRUE(after.Restore(checkpoint).ok());
  after.Observe(later, now + 120);
  const QueueWaitWindow& w = after.pools().at("gpu").waits[0];
  EXPECT_EQ(w.jobs, 11u);
  EXPECT_DOUBLE_EQ(w.p95_s, 500);  // nearest rank: the 11th of 11
  EXPECT_DOUBLE_EQ(w.p50_s, 180);  // the 6th of 30, 60, ..., 300, 500

  // Without the checkpoint the window would hold only what squeue still lists.
  PoolTracker fresh(s);
  fresh.Observe(later, now + 120);
  EXPECT_EQ(fresh.pools().at("gpu").waits[0].jobs, 3u);

  // Bad checkpoints change nothing.
  for (const std::string& bad :
       {std::string("{}"), std::string("nonsense"),
        std::string(R"({"format":"gpuwarden-pool-checkpoint","version":1,"waits":{"gpu":[[1]]},)"
                    R"("counted":{}})"),
        std::string(R"({"format":"gpuwarden-pool-checkpoint","version":1,"waits":{},)"
                    R"("counted":{"1":"x"}})")}) {
    EXPECT_FALSE(after.Restore(bad).ok()) << bad;
    after.Observe(later, now + 121);
    EXPECT_EQ(after.pools().at("gpu").waits[0].jobs, 11u) << bad;
  }
}

}  // namespace
}  // namespace gw::governance
