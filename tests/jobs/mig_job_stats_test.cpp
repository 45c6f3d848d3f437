// Per-job statistics over GPU units (jobs/gpu_unit.h): MIG instances counted by their share of the
// GPU, GPM SM and tensor activity averaged and kept absent where no GPU reported them, and job
// records that carry both — written, read back, and older records still readable.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "jobs/gpu_unit.h"
#include "jobs/job_records.h"
#include "jobs/job_stats.h"

namespace gw::jobs {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

GpuCycleSample Unit(unsigned unit, double t, double share, double util_pct, double sm,
                    double tensor) {
  GpuCycleSample s;
  s.index = unit;
  s.time_s = t;
  s.share = share;
  s.util_pct = util_pct;
  s.util_known = !std::isnan(util_pct);
  if (!s.util_known) s.util_pct = 0;
  s.sm_active = sm;
  s.tensor_active = tensor;
  s.power_w = 100 * share;
  return s;
}

MigUnitInfo Info(unsigned gpu, unsigned gi, const char* profile, double share) {
  MigUnitInfo m;
  m.gpu = gpu;
  m.gpu_instance_id = gi;
  m.profile = profile;
  m.uuid = "MIG-" + std::to_string(gpu) + "-" + std::to_string(gi);
  m.share = share;
  return m;
}

TEST(GpuUnit, EncodesGpuAndInstanceApartFromWholeGpus) {
  const unsigned u = MigUnit(5, 9);
  EXPECT_TRUE(IsMigUnit(u));
  EXPECT_FALSE(IsMigUnit(5));
  EXPECT_EQ(UnitGpu(u), 5u);
  EXPECT_EQ(UnitMigInstance(u), 9u);
  EXPECT_EQ(UnitGpu(5), 5u);
  EXPECT_NE(MigUnit(5, 9), MigUnit(9, 5));
  EXPECT_EQ(UnitText(u), "5/9");
  EXPECT_EQ(UnitText(3), "3");
  EXPECT_EQ(ShareText(3.0 / 7, "3g.40gb"), "0.43 GPU (3g.40gb)");
}

TEST(MigJobStats, AMigInstanceCountsAsItsShareAndAveragesGpmSignals) {
  JobStatsTracker tracker(JobStatsOptions{.idle_util_pct = 5, .retention_s = 30});
  const unsigned big = MigUnit(0, 2), small = MigUnit(0, 9);
  const double big_share = 3.0 / 7, small_share = 1.0 / 7;
  tracker.DescribeUnit(Info(0, 2, "3g.40gb", big_share));
  tracker.DescribeUnit(Info(0, 9, "1g.10gb", small_share));
  tracker.Begin("mig", {big}, 100);
  tracker.Begin("other", {small}, 100);
  for (int t = 100; t <= 200; ++t) {
    CycleInput cycle;
    // The 3g instance: busy, SM 60 % then 20 %, tensor 40 %. The 1g instance: idle, no GPM.
    cycle.gpus.push_back(Unit(big, t, big_share, 90, t <= 150 ? 0.6 : 0.2, 0.4));
    cycle.gpus.push_back(Unit(small, t, small_share, 0, kNaN, kNaN));
    tracker.Observe(cycle);
  }
  std::optional<JobGpuStats> s = tracker.End("mig", 200);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->gpus, std::vector<unsigned>{big});
  ASSERT_EQ(s->mig.size(), 1u);
  EXPECT_EQ(s->mig[0].profile, "3g.40gb");
  EXPECT_NEAR(GpuEquivalents(*s), big_share, 1e-12);
  EXPECT_NEAR(s->gpu_seconds, big_share * 100, 1e-9);
  EXPECT_NEAR(s->observed_gpu_seconds, big_share * 100, 1e-9);
  EXPECT_NEAR(s->idle_gpu_seconds, 0, 1e-12);
  ASSERT_TRUE(s->sm_active_avg && s->sm_active_max);
  EXPECT_NEAR(*s->sm_active_avg, 0.4, 1e-9);  // 50 s at 0.6, 50 s at 0.2
  EXPECT_DOUBLE_EQ(*s->sm_active_max, 0.6);
  ASSERT_TRUE(s->tensor_active_avg.has_value());
  EXPECT_NEAR(*s->tensor_active_avg, 0.4, 1e-9);
  EXPECT_NEAR(s->util_avg, 0.90, 1e-9);
  EXPECT_NE(GpuUnitsText(*s).find("0/2 0.43 GPU (3g.40gb)"), std::string::npos);

  std::optional<JobGpuStats> o = tracker.End("other", 200);
  ASSERT_TRUE(o.has_value());
  EXPECT_NEAR(o->idle_gpu_seconds, small_share * 100, 1e-9);
  EXPECT_TRUE(o->idle_while_allocated);
  EXPECT_FALSE(o->sm_active_avg.has_value());  // no GPM: absent, not 0
  EXPECT_FALSE(o->tensor_active_max.has_value());
}

TEST(MigJobStats, UnknownUtilizationIsNeitherIdleNorInTheAverage) {
  JobStatsTracker tracker;
  const unsigned u = MigUnit(1, 1);
  tracker.DescribeUnit(Info(1, 1, "7g.80gb", 1));
  tracker.Begin("j", {u}, 0);
  for (int t = 0; t <= 10; ++t) {
    CycleInput cycle;
    cycle.gpus.push_back(Unit(u, t, 1, t <= 5 ? kNaN : 50, kNaN, kNaN));
    tracker.Observe(cycle);
  }
  std::optional<JobGpuStats> s = tracker.End("j", 10);
  ASSERT_TRUE(s.has_value());
  EXPECT_NEAR(s->idle_gpu_seconds, 0, 1e-12);
  EXPECT_NEAR(s->util_avg, 0.50, 1e-9);  // only the 5 s with a reading
  EXPECT_NEAR(s->observed_gpu_seconds, 10, 1e-9);
}

TEST(MigJobStats, NarrowingAWholeGpuToItsInstances) {
  JobStatsTracker tracker;
  const unsigned u = MigUnit(0, 3);
  tracker.DescribeUnit(Info(0, 3, "2g.20gb", 2.0 / 7));
  tracker.Begin("slurm", {0, 1}, 0);
  tracker.Narrow("slurm", 0, {u});
  tracker.Narrow("slurm", 5, {MigUnit(5, 1)});  // not held: nothing changes
  std::optional<JobGpuStats> s = tracker.End("slurm", 70);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->gpus, (std::vector<unsigned>{1, u}));
  EXPECT_NEAR(s->gpu_seconds, (1 + 2.0 / 7) * 70, 1e-9);
}

TEST(MigJobRecords, RoundTripWithMigUnitsAndGpmFigures) {
  JobRecord r;
  r.job_id = "42";
  r.source = "process";
  r.state = "ENDED";
  JobGpuStats g;
  g.job_id = "42";
  g.gpus = {1, MigUnit(0, 2)};
  g.mig = {Info(0, 2, "3g.40gb", 3.0 / 7)};
  g.sm_active_avg = 0.05;
  g.sm_active_max = 0.125;
  g.tensor_active_avg = 0.5;
  g.tensor_active_max = 0.75;
  r.gpu = g;
  const std::string line = JobRecordToJson(r);
  // On disk "gpus" names every GPU the job ran on (as older readers expect); the instance is
  // under "mig", which also says that GPU 0 is not held whole.
  EXPECT_NE(line.find("\"gpus\":[0,1]"), std::string::npos) << line;
  EXPECT_NE(line.find("\"mig_profile\":\"3g.40gb\""), std::string::npos) << line;
  Expected<JobRecord> back = JobRecordFromJson(line);
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_TRUE(back->gpu.has_value());
  EXPECT_EQ(back->gpu->gpus, g.gpus);
  EXPECT_EQ(back->gpu->mig, g.mig);
  EXPECT_EQ(back->gpu->sm_active_avg, g.sm_active_avg);
  EXPECT_EQ(back->gpu->sm_active_max, g.sm_active_max);
  EXPECT_EQ(back->gpu->tensor_active_avg, g.tensor_active_avg);
  EXPECT_EQ(back->gpu->tensor_active_max, g.tensor_active_max);
  EXPECT_NEAR(GpuEquivalents(*back->gpu), 1 + 3.0 / 7, 1e-12);
}

TEST(MigJobRecords, AnOlderRecordReadsWithGpmFiguresAbsent) {
  // A record as gpuwarden wrote it before MIG units and GPM figures.
  const std::string old =
      R"({"job_id":"7","source":"slurm","name":"train","user":"u","account":"a",)"
      R"("partition":"p","team":"t","state":"COMPLETED","state_reason":"None",)"
      R"("submit_time":1,"eligible_time":1,"start_time":10,"end_time":70,)"
      R"("gpu":{"gpus":[0,3],"start_s":10,"end_s":70,"gpu_seconds":120,)"
      R"("observed_gpu_seconds":118,"energy_j":5000,"power_integral_j":5100,)"
      R"("util_avg_pct":55,"util_max_pct":99,"memory_peak_bytes":1024,"throttle_s":{},)"
      R"("ecc_corrected":0,"ecc_uncorrected":0,"xid_count":0,"idle_gpu_seconds":4,)"
      R"("idle_while_allocated":false}})";
  Expected<JobRecord> r = JobRecordFromJson(old);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(r->gpu.has_value());
  EXPECT_EQ(r->gpu->gpus, (std::vector<unsigned>{0, 3}));
  EXPECT_TRUE(r->gpu->mig.empty());
  EXPECT_FALSE(r->gpu->sm_active_avg.has_value());
  EXPECT_FALSE(r->gpu->tensor_active_avg.has_value());
  EXPECT_DOUBLE_EQ(GpuEquivalents(*r->gpu), 2);
  EXPECT_DOUBLE_EQ(r->gpu->util_avg, 0.55);  // an older record, in percent
  // Written again, it says nothing about GPM.
  EXPECT_EQ(JobRecordToJson(*r).find("sm_active"), std::string::npos);
}

}  // namespace
}  // namespace gw::jobs
