// MIG instances in the platform layer: quotas, cost and idle-but-allocated count an instance as its
// share of the GPU (governance/cycle.h, jobs/gpu_unit.h). Expected values are computed here from
// the cycle's inputs.
#include <gtest/gtest.h>

#include <cmath>

#include "governance/reclaim.h"
#include "governance/usage.h"
#include "jobs/gpu_unit.h"

namespace gw::governance {
namespace {

constexpr double kT0 = 1700000000;
constexpr double k3g = 3.0 / 7, k2g = 2.0 / 7, k1g = 1.0 / 7;

// An H100 partitioned 3g + 2g + 1g (one 1g slice unused), drawing `power_w` with an energy
// counter; the 3g instance busy at `util_3g`, the others idle. GPU 1 is a whole GPU.
Cycle MigCycle(double t, double util_3g, double power_w, std::vector<RunningJob> jobs) {
  Cycle c;
  c.now_s = t;
  auto unit = [&](unsigned index, double share, const char* profile, double util) {
    GpuReading r;
    r.index = index;
    r.share = share;
    r.mig_profile = profile;
    r.model = "NVIDIA H100 80GB HBM3";
    r.util_known = true;
    r.util_ratio = util;
    r.power_w = power_w;
    r.energy_j = 1e6 + power_w * (t - kT0);  // the GPU's counter, carried by each of its units
    c.gpus.push_back(r);
  };
  unit(jobs::MigUnit(0, 1), k3g, "3g.40gb", util_3g);
  unit(jobs::MigUnit(0, 5), k2g, "2g.20gb", 0);
  unit(jobs::MigUnit(0, 9), k1g, "1g.10gb", 0);
  unit(0, 1 - k3g - k2g - k1g, "", 0);  // the GPU: the slice no instance uses
  GpuReading whole;
  whole.index = 1;
  whole.model = "NVIDIA H100 80GB HBM3";
  whole.util_known = true;
  whole.util_ratio = 0.5;
  c.gpus.push_back(whole);
  c.jobs = std::move(jobs);
  return c;
}

RunningJob Job(std::string id, std::vector<unsigned> gpus, std::string team) {
  RunningJob j;
  j.id = std::move(id);
  j.source = "process";
  j.team = std::move(team);
  j.partition = "gpu";
  j.gpus = std::move(gpus);
  return j;
}

TEST(MigUsage, QuotaCostAndEnergyCountAnInstanceAsItsShare) {
  QuotaSettings q;
  q.teams["vision"].gpus = 1;
  q.teams["vision"].gpu_hours = 100;
  q.teams["vision"].period_s = 86400;
  PriceSettings prices;
  prices.gpu_hour_by_model = {{"H100", 7.0}};
  prices.energy_per_kwh = 0.5;
  UsageLedger usage(q, prices, 0.05);
  const std::vector<RunningJob> jobs = {Job("train", {jobs::MigUnit(0, 1)}, "vision"),
                                        Job("notebook", {jobs::MigUnit(0, 9)}, "vision"),
                                        Job("big", {1}, "nlp")};
  const double step = 60, span = 3600, power = 350;
  for (double t = 0; t <= span; t += step) usage.Observe(MigCycle(kT0 + t, 0.8, power, jobs));

  const TeamUsage& vision = usage.teams().at("vision");
  EXPECT_NEAR(vision.allocated_gpus, k3g + k1g, 1e-12);
  EXPECT_NEAR(vision.used_gpus, k3g * 0.8, 1e-12);
  EXPECT_FALSE(vision.over_quota);  // 4/7 of a GPU against a quota of 1
  EXPECT_NEAR(vision.period_allocated_gpu_h, (k3g + k1g) * span / 3600, 1e-9);

  const JobCost& train = usage.jobs().at("train");
  EXPECT_NEAR(train.cost.allocated_gpu_s, k3g * span, 1e-6);
  EXPECT_NEAR(train.cost.allocation_cost, 7.0 * k3g * span / 3600, 1e-9);
  const double gpu_kwh = power * span / 3.6e6;
  EXPECT_NEAR(train.cost.energy_j, k3g * power * span, 1e-6);
  EXPECT_NEAR(train.cost.energy_cost, 0.5 * k3g * gpu_kwh, 1e-9);
  const JobCost& notebook = usage.jobs().at("notebook");
  EXPECT_NEAR(notebook.cost.idle_gpu_s, k1g * span, 1e-6);  // idle the whole time
  EXPECT_NEAR(notebook.cost.idle_cost, 7.0 * k1g * span / 3600, 1e-9);

  // The node: two GPUs of capacity, GPU 0's energy once (GPU 1 has no counter and draws 0 W).
  const NodeCost& node = usage.node();
  EXPECT_NEAR(node.capacity_gpu_s, 2 * span, 1e-6);
  EXPECT_NEAR(node.capacity_cost, 2 * 7.0 * span / 3600, 1e-9);
  EXPECT_NEAR(node.energy_j, power * span, 1e-6);
  EXPECT_NEAR(node.allocation_cost, 7.0 * (k3g + k1g + 1) * span / 3600, 1e-9);

  std::optional<jobs::JobCostRecord> record = usage.JobCostRecordOf("train");
  ASSERT_TRUE(record.has_value());
  EXPECT_NEAR(record->allocated_gpu_hours, k3g * span / 3600, 1e-9);
}

TEST(MigUsage, AGpuQuotaIsExceededOnlyByTheSharesHeld) {
  QuotaSettings q;
  q.teams["vision"].gpus = 0.5;
  UsageLedger usage(q, {}, 0.05);
  // 3g (0.43) is within half a GPU; 3g + 1g (0.57) is not.
  usage.Observe(MigCycle(kT0, 0.8, 0, {Job("a", {jobs::MigUnit(0, 1)}, "vision")}));
  usage.Observe(MigCycle(kT0 + 60, 0.8, 0, {Job("a", {jobs::MigUnit(0, 1)}, "vision")}));
  EXPECT_FALSE(usage.teams().at("vision").over_quota);
  usage.Observe(MigCycle(
      kT0 + 120, 0.8, 0,
      {Job("a", {jobs::MigUnit(0, 1)}, "vision"), Job("b", {jobs::MigUnit(0, 9)}, "vision")}));
  EXPECT_TRUE(usage.teams().at("vision").over_quota);
  EXPECT_NEAR(usage.teams().at("vision").deviation_allocated, (k3g + k1g - 0.5) / 0.5, 1e-12);
}

TEST(MigIdle, IdleGpuSecondsAndEvidenceNameTheInstance) {
  IdleTracker idle(0.05);
  const std::vector<RunningJob> jobs = {Job("notebook", {jobs::MigUnit(0, 9)}, "vision")};
  for (double t = 0; t <= 600; t += 60) idle.Observe(MigCycle(kT0 + t, 0.8, 0, jobs));
  const IdleTotals& totals = idle.by_job().at("notebook");
  EXPECT_NEAR(totals.allocated_gpu_s, k1g * 600, 1e-9);
  EXPECT_NEAR(totals.idle_gpu_s, k1g * 600, 1e-9);
  const GpuIdle& g = idle.gpus().at(jobs::MigUnit(0, 9));
  EXPECT_TRUE(g.idle);
  EXPECT_EQ(g.mig_profile, "1g.10gb");
  EXPECT_DOUBLE_EQ(g.share, k1g);

  ReclaimPolicy policy;
  policy.idle_for_s = 300;
  policy.grace_s = 600;
  policy.action = ReclaimAction::kDryRun;
  ReclaimEngine reclaim({policy});
  std::vector<Decision> decisions;
  (void)reclaim.Evaluate(MigCycle(kT0 + 660, 0.8, 0, jobs), idle, &decisions);
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_EQ(decisions[0].stage, "notice");
  ASSERT_EQ(decisions[0].gpus.size(), 1u);
  EXPECT_EQ(decisions[0].gpus[0].gpu, 0u);
  ASSERT_TRUE(decisions[0].gpus[0].mig_instance.has_value());
  EXPECT_EQ(*decisions[0].gpus[0].mig_instance, 9u);
  EXPECT_NE(decisions[0].detail.find("0.14 GPU (1g.10gb) idle"), std::string::npos)
      << decisions[0].detail;
  const std::string json = DecisionToJson(decisions[0]);
  EXPECT_NE(json.find("\"mig_profile\":\"1g.10gb\""), std::string::npos) << json;
}

}  // namespace
}  // namespace gw::governance
