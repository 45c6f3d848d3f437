#include "governance/usage.h"

#include <gtest/gtest.h>

#include <cmath>

namespace gw::governance {
namespace {

constexpr double kT0 = 1700000000;

struct Gpu {
  std::string model;
  double util;
  double power_w;
};

Cycle MakeCycle(double t, const std::vector<Gpu>& gpus, std::vector<RunningJob> jobs,
                bool energy_counter, double* energy_base) {
  Cycle c;
  c.now_s = t;
  for (unsigned i = 0; i < gpus.size(); ++i) {
    GpuReading r;
    r.index = i;
    r.model = gpus[i].model;
    r.util_ratio = gpus[i].util;
    r.util_known = true;
    r.power_w = gpus[i].power_w;
    // A counter that grows by power x time (the test's own integration).
    if (energy_counter) r.energy_j = energy_base[i] + gpus[i].power_w * (t - kT0);
    c.gpus.push_back(r);
  }
  c.jobs = std::move(jobs);
  return c;
}

RunningJob Job(std::string id, std::vector<unsigned> gpus, std::string team,
               std::string partition = "gpu") {
  RunningJob j;
  j.id = std::move(id);
  j.source = "slurm";
  j.team = std::move(team);
  j.partition = std::move(partition);
  j.gpus = std::move(gpus);
  return j;
}

// Cost per team from a scenario's allocations and prices, computed here from the inputs: three
// GPUs (two models), team vision holds GPU 0 for the whole hour, team nlp GPUs 1 and 2 for the
// first 30 minutes, then only GPU 2; GPU 1 is then free (OpenCost idle).
TEST(Usage, CostPerTeamEqualsTheHandComputedValue) {
  PriceSettings prices;
  prices.gpu_hour_by_model = {{"A100", 3.20}, {"L40S", 1.10}};
  prices.default_gpu_hour = 0.5;
  prices.energy_per_kwh = 0.25;
  const std::vector<Gpu> gpus = {
      {"NVIDIA A100-SXM4-80GB", 0.9, 400}, {"NVIDIA L40S", 0.0, 80}, {"NVIDIA L40S", 0.5, 200}};
  double base[3] = {1e6, 2e6, 3e6};
  UsageLedger usage({}, prices, 0.05);
  const double step = 15, hour = 3600;
  for (double t = 0; t <= hour + 1e-9; t += step) {
    std::vector<RunningJob> jobs = {Job("1", {0}, "vision")};
    // The interval ending at t is charged to the state at t: nlp holds GPU 1 for t <= 1800.
    jobs.push_back(t <= 1800 ? Job("2", {1, 2}, "nlp", "debug") : Job("2", {2}, "nlp", "debug"));
    usage.Observe(MakeCycle(kT0 + t, gpus, jobs, true, base));
  }
  const double a100 = 3.20, l40s = 1.10;
  // Allocation: GPU-hours x price. The first cycle starts the clock (no interval before it).
  const double vision_alloc = 1.0 * a100;
  const double nlp_alloc = 0.5 * l40s /* GPU 1 */ + 1.0 * l40s /* GPU 2 */;
  // Energy: kWh = W x h / 1000.
  const double vision_energy = 400 * 1.0 / 1000 * 0.25;
  const double nlp_energy = (80 * 0.5 + 200 * 1.0) / 1000 * 0.25;
  const auto& teams = usage.teams();
  EXPECT_NEAR(teams.at("vision").cost.allocation_cost, vision_alloc, 1e-9);
  EXPECT_NEAR(teams.at("nlp").cost.allocation_cost, nlp_alloc, 1e-9);
  EXPECT_NEAR(teams.at("vision").cost.energy_cost, vision_energy, 1e-9);
  EXPECT_NEAR(teams.at("nlp").cost.energy_cost, nlp_energy, 1e-9);
  EXPECT_NEAR(teams.at("nlp").cost.Total(), nlp_alloc + nlp_energy, 1e-9);
  // Idle-allocated cost: GPU 1 (0 % busy) while nlp held it.
  EXPECT_NEAR(teams.at("nlp").cost.idle_cost, 0.5 * l40s, 1e-9);
  EXPECT_NEAR(teams.at("vision").cost.idle_cost, 0, 1e-9);
  // Efficiency: used / allocated GPU-hours.
  EXPECT_NEAR(teams.at("nlp").cost.Efficiency(), (0.0 * 0.5 + 0.5 * 1.0) / 1.5, 1e-9);
  // Per partition and per job.
  EXPECT_NEAR(usage.partitions().at("debug").allocation_cost, nlp_alloc, 1e-9);
  EXPECT_NEAR(usage.jobs().at("1").cost.Total(), vision_alloc + vision_energy, 1e-9);
  // The node: capacity = every GPU for the hour; OpenCost idle = capacity - allocation.
  const NodeCost& node = usage.node();
  const double capacity = a100 + 2 * l40s;
  EXPECT_NEAR(node.capacity_cost, capacity, 1e-9);
  EXPECT_NEAR(node.idle_cost, capacity - vision_alloc - nlp_alloc, 1e-9);
  EXPECT_NEAR(node.IdleRatio(), (capacity - vision_alloc - nlp_alloc) / capacity, 1e-12);
  EXPECT_NEAR(node.energy_cost, (400 + 80 + 200) / 1000.0 * 0.25, 1e-9);
}

TEST(Usage, SharedGpusAreSplitAndPowerIsIntegratedWithoutACounter) {
  PriceSettings prices;
  prices.default_gpu_hour = 2.0;
  prices.energy_per_kwh = 1.0;
  double base[1] = {0};
  UsageLedger usage({}, prices, 0.05);
  for (double t = 0; t <= 3600; t += 60)
    usage.Observe(MakeCycle(kT0 + t, {{"Tesla T4", 0.4, 50}},
                            {Job("a", {0}, "x"), Job("b", {0}, "y")}, false, base));
  EXPECT_NEAR(usage.teams().at("x").cost.allocation_cost, 1.0, 1e-9);
  EXPECT_NEAR(usage.teams().at("y").cost.energy_cost, 0.025, 1e-9);
  EXPECT_NEAR(usage.teams().at("y").allocated_gpus, 0.5, 1e-12);
  EXPECT_NEAR(usage.teams().at("y").used_gpus, 0.2, 1e-12);
  // A job that ends keeps its figures among the ended ones.
  usage.Observe(MakeCycle(kT0 + 3660, {{"Tesla T4", 0.4, 50}}, {Job("a", {0}, "x")}, false, base));
  ASSERT_EQ(usage.ended_jobs().size(), 1u);
  EXPECT_EQ(usage.ended_jobs()[0].id, "b");
}

// A job's cost for its record: so far while it runs, final once it ended; none without prices
// or for a job never seen.
TEST(Usage, JobCostRecordOfRunningAndEndedJobs) {
  PriceSettings prices;
  prices.default_gpu_hour = 2.0;
  prices.currency = "EUR";
  double base[1] = {0};
  UsageLedger usage({}, prices, 0.05);
  for (double t = 0; t <= 1800; t += 60)
    usage.Observe(MakeCycle(kT0 + t, {{"Tesla T4", 0.4, 50}}, {Job("a", {0}, "x")}, false, base));
  std::optional<jobs::JobCostRecord> running = usage.JobCostRecordOf("a");
  ASSERT_TRUE(running.has_value());
  EXPECT_EQ(running->currency, "EUR");
  EXPECT_NEAR(running->allocated_gpu_hours, 0.5, 1e-9);
  EXPECT_NEAR(running->allocation_cost, 1.0, 1e-9);
  usage.Observe(MakeCycle(kT0 + 1860, {{"Tesla T4", 0.4, 50}}, {}, false, base));
  std::optional<jobs::JobCostRecord> ended = usage.JobCostRecordOf("a");
  ASSERT_TRUE(ended.has_value());
  EXPECT_NEAR(ended->allocation_cost, running->allocation_cost, 0.05);
  EXPECT_FALSE(usage.JobCostRecordOf("never-seen").has_value());
  UsageLedger unpriced({}, PriceSettings{}, 0.05);
  unpriced.Observe(MakeCycle(kT0, {{"Tesla T4", 0.4, 50}}, {Job("a", {0}, "x")}, false, base));
  EXPECT_FALSE(unpriced.JobCostRecordOf("a").has_value());
}

TEST(Usage, GpuQuotaOverAndChronicUnderUse) {
  QuotaSettings q;
  q.teams["vision"].gpus = 1;
  q.teams["nlp"].gpus = 4;
  q.teams["idle-team"].gpus = 2;
  q.under_use_ratio = 0.3;
  q.under_use_for_s = 600;
  double base[3] = {0, 0, 0};
  UsageLedger usage(q, {}, 0.05);
  const std::vector<Gpu> gpus = {{"x", 0.9, 0}, {"x", 0.9, 0}, {"x", 0.2, 0}};
  for (double t = 0; t <= 600; t += 60)
    usage.Observe(
        MakeCycle(kT0 + t, gpus, {Job("1", {0, 1}, "vision"), Job("2", {2}, "nlp")}, false, base));
  const TeamUsage& vision = usage.teams().at("vision");
  EXPECT_TRUE(vision.over_quota);
  EXPECT_DOUBLE_EQ(vision.allocated_gpus, 2);
  EXPECT_NEAR(vision.used_gpus, 1.8, 1e-12);
  EXPECT_NEAR(vision.deviation_allocated, 1.0, 1e-12);
  EXPECT_NEAR(vision.deviation_used, 0.8, 1e-12);
  EXPECT_FALSE(vision.under_use);
  const TeamUsage& nlp = usage.teams().at("nlp");
  EXPECT_FALSE(nlp.over_quota);
  EXPECT_NEAR(nlp.deviation_allocated, -0.75, 1e-12);
  EXPECT_TRUE(nlp.under_use);  // 0.2 of 4 GPUs used for 10 minutes
  EXPECT_DOUBLE_EQ(nlp.under_use_for_s, 600);
  const TeamUsage& idle = usage.teams().at("idle-team");  // a quota and no jobs at all
  EXPECT_TRUE(idle.under_use);
  EXPECT_NEAR(idle.deviation_allocated, -1, 1e-12);
  EXPECT_FALSE(usage.teams().count("unknown"));
}

TEST(Usage, GpuHourQuotaPerPeriod) {
  QuotaSettings q;
  q.teams["vision"].gpu_hours = 1.5;
  q.teams["vision"].period_s = 86400;
  q.under_use_for_s = 1e9;
  double base[2] = {0, 0};
  UsageLedger usage(q, {}, 0.05);
  // Start at a day boundary; two GPUs for one hour: 2 GPU-hours > 1.5.
  const double day = std::floor(kT0 / 86400) * 86400 + 86400;
  for (double t = 0; t <= 3600; t += 60) {
    usage.Observe(MakeCycle(day + t, {{"x", 1.0, 0}, {"x", 0.5, 0}}, {Job("1", {0, 1}, "vision")},
                            false, base));
    if (t == 2400) {
      EXPECT_FALSE(usage.teams().at("vision").over_quota) << "1.33 GPU-hours so far";
    }
  }
  const TeamUsage& v = usage.teams().at("vision");
  EXPECT_NEAR(v.period_allocated_gpu_h, 2.0, 1e-9);
  EXPECT_NEAR(v.period_used_gpu_h, 1.5, 1e-9);
  EXPECT_TRUE(v.over_quota);
  EXPECT_NEAR(v.deviation_allocated, (2.0 - 1.5) / 1.5, 1e-9);
  // The next day starts from zero.
  usage.Observe(MakeCycle(day + 86400 + 30, {{"x", 1.0, 0}, {"x", 0.5, 0}},
                          {Job("1", {0, 1}, "vision")}, false, base));
  EXPECT_FALSE(usage.teams().at("vision").over_quota);
}

// A restart in the middle of a GPU-hour period: the ledger written to a checkpoint and read back
// into a new one continues exactly as a ledger that never stopped (the cycles missed while the
// agent was down are within max_gap_s, so the first cycle after the restart charges them, as any
// gap). Cost totals, the period's GPU-hours, the running job's cost and energy all match.
TEST(Usage, ARestartFromACheckpointContinuesAsIfNeverStopped) {
  QuotaSettings q;
  q.teams["vision"].gpu_hours = 1.5;
  q.teams["vision"].period_s = 86400;
  PriceSettings prices;
  prices.default_gpu_hour = 2.0;
  prices.energy_per_kwh = 0.3;
  const double day = std::floor(kT0 / 86400) * 86400 + 86400;
  double base[3] = {5e6, 6e6, 7e6};
  const std::vector<Gpu> gpus = {{"x", 0.9, 300}, {"x", 0.0, 60}, {"x", 0.4, 150}};
  auto cycle = [&](double t) {
    return MakeCycle(day + t, gpus, {Job("7", {0, 1}, "vision"), Job("8", {2}, "nlp", "debug")},
                     true, base);
  };
  UsageLedger continuous(q, prices, 0.05), before(q, prices, 0.05);
  for (double t = 0; t <= 1800; t += 15) {
    continuous.Observe(cycle(t));
    before.Observe(cycle(t));
  }
  const std::string checkpoint = before.Checkpoint();
  UsageLedger after(q, prices, 0.05);
  ASSERT_TRUE(after.Restore(checkpoint).ok());
  // Down from 1800 s to 1890 s (the next cycle's interval covers the 90 s).
  for (double t = 1890; t <= 3600; t += 15) {
    after.Observe(cycle(t));
  }
  for (double t = 1890; t <= 3600; t += 15) continuous.Observe(cycle(t));

  auto same = [](const CostTotals& a, const CostTotals& b, const std::string& what) {
    EXPECT_NEAR(a.allocated_gpu_s, b.allocated_gpu_s, 1e-6) << what;
    EXPECT_NEAR(a.used_gpu_s, b.used_gpu_s, 1e-6) << what;
    EXPECT_NEAR(a.idle_gpu_s, b.idle_gpu_s, 1e-6) << what;
    EXPECT_NEAR(a.energy_j, b.energy_j, 1e-6) << what;
    EXPECT_NEAR(a.allocation_cost, b.allocation_cost, 1e-9) << what;
    EXPECT_NEAR(a.energy_cost, b.energy_cost, 1e-9) << what;
    EXPECT_NEAR(a.idle_cost, b.idle_cost, 1e-9) << what;
  };
  for (const char* team : {"vision", "nlp"})
    same(after.teams().at(team).cost, continuous.teams().at(team).cost, team);
  for (const char* part : {"gpu", "debug"})
    same(after.partitions().at(part), continuous.partitions().at(part), part);
  same(after.by_team_partition().at({"nlp", "debug"}),
       continuous.by_team_partition().at({"nlp", "debug"}), "nlp/debug");
  same(after.jobs().at("7").cost, continuous.jobs().at("7").cost, "job 7");
  EXPECT_DOUBLE_EQ(after.jobs().at("7").start_s, day);
  EXPECT_NEAR(after.node().capacity_cost, continuous.node().capacity_cost, 1e-9);
  EXPECT_NEAR(after.node().idle_cost, continuous.node().idle_cost, 1e-9);
  EXPECT_NEAR(after.node().energy_j, continuous.node().energy_j, 1e-6);
  // The hand-computed figure: two GPUs for an hour = 2 GPU-hours in the period, over 1.5.
  const TeamUsage& v = after.teams().at("vision");
  EXPECT_NEAR(v.period_allocated_gpu_h, 2.0, 1e-9);
  EXPECT_NEAR(v.period_used_gpu_h, continuous.teams().at("vision").period_used_gpu_h, 1e-9);
  EXPECT_TRUE(v.over_quota);
  EXPECT_TRUE(v.has_quota) << "the quota comes from the configuration";
  EXPECT_NEAR(v.cost.allocation_cost, 2 * 2.0, 1e-9);

  // A restart after the period ended: its figures start from zero at the first cycle.
  UsageLedger next_day(q, prices, 0.05);
  ASSERT_TRUE(next_day.Restore(after.Checkpoint()).ok());
  next_day.Observe(cycle(86400 + 600));
  EXPECT_DOUBLE_EQ(next_day.teams().at("vision").period_allocated_gpu_h, 0);
  EXPECT_FALSE(next_day.teams().at("vision").over_quota);
  // ... and a gap longer than max_gap_s is not charged; the totals are kept.
  same(next_day.teams().at("vision").cost, continuous.teams().at("vision").cost, "after the gap");
}

TEST(Usage, ABadCheckpointIsRefusedAndChangesNothing) {
  UsageLedger ledger({}, {}, 0.05);
  double base[1] = {0};
  ledger.Observe(MakeCycle(kT0, {{"x", 1.0, 100}}, {Job("1", {0}, "a")}, true, base));
  ledger.Observe(MakeCycle(kT0 + 10, {{"x", 1.0, 100}}, {Job("1", {0}, "a")}, true, base));
  const std::string good = ledger.Checkpoint();
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    const size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) s.replace(at, from.size(), to);
    return s;
  };
  const struct {
    std::string text, message;
  } cases[] = {
      {"", "not JSON"},
      {"[1,2]", "not JSON"},
      {replaced("\"version\":1", "\"version\":2"), "version: expected 1"},
      {replaced("gpuwarden-usage-checkpoint", "other"), "format"},
      {replaced("\"last_s\":", "\"last_z\":"), "last_s"},
      {replaced("\"allocation_cost\":", "\"allocation_cost\":\"3\",\"x\":"), "allocation_cost"},
      {replaced("\"teams\":[", "\"teams\":[{\"team\":1},"), "team"},
      {replaced("\"gpu\":0", "\"gpu\":-1"), "GPU index"},
  };
  for (const auto& c : cases) {
    UsageLedger other({}, {}, 0.05);
    ASSERT_TRUE(other.Restore(good).ok());
    Status s = other.Restore(c.text);
    EXPECT_FALSE(s.ok()) << c.text;
    EXPECT_NE(s.message().find(c.message), std::string::npos) << s.message();
    EXPECT_EQ(other.Checkpoint(), good) << c.message;
  }
}

}  // namespace
}  // namespace gw::governance
