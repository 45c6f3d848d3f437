#include "governance/service_cost.h"

#include <gtest/gtest.h>

namespace gw::governance {
namespace {

PriceSettings Prices() {
  PriceSettings p;
  p.gpu_hour_by_model = {{"A100", 3.6}};
  p.default_gpu_hour = 1.8;
  p.energy_per_kwh = 0.5;
  return p;
}

// GPU 0 an A100, GPU 1 an L40S; power only (no energy counter) unless `energy` is given.
Cycle At(double t, double power_w = 0, std::optional<double> energy0 = std::nullopt) {
  Cycle c;
  c.now_s = t;
  GpuReading a;
  a.index = 0;
  a.model = "NVIDIA A100-SXM4-80GB";
  a.power_w = power_w;
  a.energy_j = energy0;
  GpuReading b;
  b.index = 1;
  b.model = "NVIDIA L40S";
  b.power_w = power_w;
  c.gpus = {a, b};
  return c;
}

TEST(ServiceCost, GpuTimeTimesPriceSharedGpusAndEnergy) {
  // llm on GPU 0 alone; chat and batch share GPU 1.
  ServiceCostLedger ledger({{"llm", {0}, "request"}, {"chat", {1}, "request"}, {"batch", {1}, ""}},
                           Prices());
  ledger.Observe(At(1000, 300), {});
  for (int t = 1010; t <= 1000 + 3600; t += 10) ledger.Observe(At(t, 300), {});
  const auto& s = ledger.services();
  ASSERT_EQ(s.size(), 3u);
  EXPECT_NEAR(s[0].gpu_s, 3600, 1e-6);
  EXPECT_NEAR(s[0].allocation_cost, 3.6, 1e-9);
  // 300 W for an hour = 0.3 kWh x 0.5.
  EXPECT_NEAR(s[0].energy_cost, 0.15, 1e-9);
  EXPECT_NEAR(s[0].Total(), 3.75, 1e-9);
  // GPU 1 (default price 1.8) is shared by two targets.
  EXPECT_NEAR(s[1].allocation_cost, 0.9, 1e-9);
  EXPECT_NEAR(s[2].allocation_cost, 0.9, 1e-9);
  EXPECT_NEAR(s[1].energy_cost, 0.075, 1e-9);
  // Nothing counted yet: no cost per output.
  EXPECT_FALSE(s[0].outputs_known);
  EXPECT_FALSE(s[0].has_cost_per_output);
}

TEST(ServiceCost, EnergyCounterDeltasAndGapsAreNotCharged) {
  ServiceCostLedger ledger({{"llm", {0}, "request"}}, Prices());
  ledger.Observe(At(1000, 999, 5e6), {});
  ledger.Observe(At(1010, 999, 5e6 + 3.6e6), {});  // 1 kWh in 10 s (the counter, not power)
  EXPECT_NEAR(ledger.services()[0].energy_j, 3.6e6, 1e-3);
  EXPECT_NEAR(ledger.services()[0].energy_cost, 0.5, 1e-9);
  // A gap over 120 s is not charged; the counter's delta over it is dropped too.
  ledger.Observe(At(2010, 0, 5e6 + 7.2e6), {});
  EXPECT_NEAR(ledger.services()[0].gpu_s, 10, 1e-9);
  EXPECT_NEAR(ledger.services()[0].energy_cost, 0.5, 1e-9);
}

TEST(ServiceCost, CostPerOutputOverTheLastHour) {
  ServiceCostLedger ledger({{"llm", {0}, "request"}}, Prices());
  // 0.001 per second (3.6 per hour, no power); 10 outputs per second.
  ledger.Observe(At(0 + 1e6), {std::nullopt});
  EXPECT_FALSE(ledger.services()[0].has_cost_per_output);
  for (int t = 1; t <= 1800; ++t) ledger.Observe(At(t + 1e6), {10.0 * t});
  const ServiceCost& s = ledger.services()[0];
  // Under an hour: the window reaches back to the first cycle.
  EXPECT_NEAR(s.window_s, 1800, 1e-9);
  ASSERT_TRUE(s.has_cost_per_output);
  EXPECT_NEAR(s.cost_per_output, 1.8 / 18000, 1e-12);
  // Two hours in, the traffic doubles for the last hour: the figure is the last hour's alone.
  for (int t = 1801; t <= 3600; ++t) ledger.Observe(At(t + 1e6), {10.0 * t});
  for (int t = 3601; t <= 7200; ++t) ledger.Observe(At(t + 1e6), {36000 + 20.0 * (t - 3600)});
  EXPECT_GE(s.window_s, 3600);
  EXPECT_LE(s.window_s, 3660);
  EXPECT_NEAR(s.cost_per_output, s.window_cost / s.window_outputs, 1e-15);
  EXPECT_NEAR(s.window_cost, s.window_s * 0.001, 1e-9);
  EXPECT_NEAR(s.window_outputs, 20 * s.window_s, 1e-6);
  EXPECT_NEAR(s.cost_per_output, 0.001 / 20, 1e-12);
  // An hour without outputs: no figure.
  for (int t = 7201; t <= 7200 + 3700; ++t) ledger.Observe(At(t + 1e6), {108000});
  EXPECT_FALSE(s.has_cost_per_output);
  EXPECT_NEAR(s.outputs, 108000, 1e-9);
}

TEST(ServiceCost, ATargetWithoutGpusCostsNothing) {
  ServiceCostLedger ledger({{"edge", {}, "request"}, {"ghost", {7}, "request"}}, Prices());
  ledger.Observe(At(1000), {1.0, 1.0});
  ledger.Observe(At(1010), {5.0, 5.0});
  EXPECT_EQ(ledger.services()[0].Total(), 0);
  EXPECT_EQ(ledger.services()[1].Total(), 0);  // GPU 7 is not on this node
  EXPECT_TRUE(ledger.services()[0].has_cost_per_output);
  EXPECT_EQ(ledger.services()[0].cost_per_output, 0);
}

// A restart from a checkpoint: the scraper counts outputs from 0 again, the ledger adds them to
// the restored count, so the totals and the hour's cost per output equal those of a ledger that
// never stopped (the 90 s the agent was down: no outputs counted, the time charged as any gap).
TEST(ServiceCost, ARestartContinuesTotalsOutputsAndTheWindow) {
  const std::vector<ServiceSpec> specs = {{"llm", {0}, "request"}, {"chat", {1}, "request"}};
  ServiceCostLedger continuous(specs, Prices()), before(specs, Prices());
  // 80 requests per second, counted by the scraper from its first scrape.
  auto counted = [](double since, double t) { return 80 * (t - since); };
  double e = 5e6;
  for (int t = 1000; t <= 1000 + 5400; t += 10) {
    e += 300 * 10;
    continuous.Observe(At(t, 300, e), {counted(1000, t), counted(1000, t) / 2});
    before.Observe(At(t, 300, e), {counted(1000, t), counted(1000, t) / 2});
  }
  ServiceCostLedger after(specs, Prices());
  ASSERT_TRUE(after.Restore(before.Checkpoint()).ok());
  // Down 90 s; the restarted scraper's count starts at 0 at its first scrape (t = 6490).
  const double restart = 1000 + 5400 + 90;
  const double lost = 80 * 90;  // made while down: never counted
  for (int t = static_cast<int>(restart); t <= restart + 1800; t += 10) {
    e += 300 * 10;
    after.Observe(At(t, 300, e), {counted(restart, t), counted(restart, t) / 2});
    continuous.Observe(At(t, 300, e), {counted(1000, t) - lost, (counted(1000, t) - lost) / 2});
  }
  for (std::size_t i = 0; i < 2; ++i) {
    const ServiceCost& a = after.services()[i];
    const ServiceCost& c = continuous.services()[i];
    EXPECT_NEAR(a.gpu_s, c.gpu_s, 1e-6) << i;
    EXPECT_NEAR(a.Total(), c.Total(), 1e-9) << i;
    EXPECT_NEAR(a.outputs, c.outputs, 1e-6) << i;
    EXPECT_NEAR(a.window_outputs, c.window_outputs, 1e-6) << i;
    ASSERT_TRUE(a.has_cost_per_output);
    EXPECT_NEAR(a.cost_per_output, c.cost_per_output, 1e-12) << i;
  }
  EXPECT_NEAR(after.services()[0].window_s, 3600, 60) << "the hour reaches back across the restart";

  // Another configuration: the target kept by name, the window starts afresh; bad text changes
  // nothing.
  ServiceCostLedger renamed({{"chat", {1}, "request"}}, Prices());
  ASSERT_TRUE(renamed.Restore(after.Checkpoint()).ok());
  EXPECT_NEAR(renamed.services()[0].Total(), after.services()[1].Total(), 1e-12);
  const std::string good = renamed.Checkpoint();
  EXPECT_FALSE(renamed.Restore("{\"format\": \"x\"}").ok());
  EXPECT_FALSE(renamed
                   .Restore(R"({"format": "gpuwarden-service-cost-checkpoint", "version": 1,
      "last_s": 1, "energy": [], "services": [{"target": "chat", "window": [[1, 2]]}]})")
                   .ok());
  EXPECT_EQ(renamed.Checkpoint(), good);
}

}  // namespace
}  // namespace gw::governance
