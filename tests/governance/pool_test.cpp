#include "governance/pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

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

// Between two squeue polls the table is unchanged: the tracker told so by the version skips the
// table and reuses cached quantiles. Its figures must equal, cycle by cycle, those of a tracker
// that reads the whole table every time, and its queue-wait quantiles those computed here from
// the waits themselves — through polls that add, start and end jobs, waits ageing out of the 1 h
// window between polls, and congestion/shrink conditions coming and going.
TEST(Pool, AnUnchangedTableGivesTheSameFiguresAsReadingItAgain) {
  PoolSettings s;
  s.windows_s = {3600, 86400};
  s.scale_out_ratio = 1.0;
  s.scale_out_for_s = 300;
  s.shrink_for_s = 600;
  s.shrink_free_ratio = 0.5;
  PoolTracker cached(s), full(s);
  cached.SetCapacity({{"gpu", 8}, {"debug", 2}});
  full.SetCapacity({{"gpu", 8}, {"debug", 2}});
  std::map<std::string, jobs::SlurmJob> jobs;
  std::map<std::string, std::vector<std::pair<double, double>>> waits;  // partition: start, wait
  auto expected = [&](const std::string& partition, double now, double window, double q) {
    std::vector<double> in;
    for (const auto& [start, wait] : waits[partition])
      if (start >= now - window) in.push_back(wait);
    std::sort(in.begin(), in.end());
    if (in.empty()) return std::make_pair(size_t{0}, 0.0);
    const size_t rank = std::max<size_t>(1, static_cast<size_t>(std::ceil(q * double(in.size()))));
    return std::make_pair(in.size(), in[rank - 1]);
  };
  std::uint64_t version = 1;
  const double t0 = kT0 + 200000;
  int next_id = 1;
  bool window_shrank = false;
  size_t last_in_hour = 0;
  for (int t = 0; t <= 3 * 3600; t += 30) {
    if (t % 300 == 0) {  // a poll: something changed
      ++version;
      const int phase = (t / 300) % 6;
      if (phase < 3) {
        jobs::SlurmJob p = Pending(std::to_string(next_id++), 2, phase == 1 ? "debug" : "gpu");
        jobs[p.id] = p;
      }
      for (auto& [id, j] : jobs) {  // the oldest pending job starts
        if (j.state != jobs::JobState::kPending) continue;
        j.state = jobs::JobState::kRunning;
        j.eligible_time = static_cast<std::int64_t>(t0 + t - 400 - 10 * std::stoi(id));
        j.start_time = static_cast<std::int64_t>(t0 + t - 95);  // ages out between polls
        j.gpus.total = 2;
        waits[j.partition].push_back(
            {double(j.start_time), double(j.start_time - j.eligible_time)});
        break;
      }
      if (phase == 5 && jobs.size() > 3) jobs.erase(jobs.begin());  // one ends
    }
    cached.Observe(jobs, t0 + t, version);
    full.Observe(jobs, t0 + t);
    ASSERT_EQ(cached.pools().size(), full.pools().size()) << t;
    for (const auto& [p, a] : full.pools()) {
      const PartitionPool& b = cached.pools().at(p);
      EXPECT_EQ(b.allocated, a.allocated) << p << " " << t;
      EXPECT_EQ(b.pending, a.pending) << p << " " << t;
      EXPECT_EQ(b.congestion, a.congestion) << p << " " << t;
      EXPECT_EQ(b.congested_for_s, a.congested_for_s) << p << " " << t;
      EXPECT_EQ(b.scale_out_gpus, a.scale_out_gpus) << p << " " << t;
      EXPECT_EQ(b.idle_for_s, a.idle_for_s) << p << " " << t;
      EXPECT_EQ(b.shrink_gpus, a.shrink_gpus) << p << " " << t;
      ASSERT_EQ(b.waits.size(), 2u);
      for (size_t k = 0; k < 2; ++k) {
        const double window = s.windows_s[k];
        for (const PartitionPool* x : {&a, &b}) {
          EXPECT_EQ(x->waits[k].jobs, expected(p, t0 + t, window, 0.5).first) << p << " " << t;
          EXPECT_EQ(x->waits[k].p50_s, expected(p, t0 + t, window, 0.5).second) << p << " " << t;
          EXPECT_EQ(x->waits[k].p95_s, expected(p, t0 + t, window, 0.95).second) << p << " " << t;
        }
      }
      if (p == "gpu" && t % 300 != 0) {
        window_shrank = window_shrank || b.waits[0].jobs < last_in_hour;
        last_in_hour = b.waits[0].jobs;
      } else if (p == "gpu") {
        last_in_hour = b.waits[0].jobs;
      }
    }
  }
  EXPECT_TRUE(window_shrank) << "no wait aged out of the hour between two polls";
}

}  // namespace
}  // namespace gw::governance
