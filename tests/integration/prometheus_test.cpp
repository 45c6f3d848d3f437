// Real Prometheus 2.42 (the Debian package) scrapes the agent on loopback; its query API must
// return the series and values the scenario dictates.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/agent_process.h"
#include "support/prometheus_server.h"

namespace gw::testing {
namespace {

double OneValue(const nlohmann::json& result) {
  if (result.size() != 1) return std::nan("");
  return std::stod(result[0]["value"][1].get<std::string>());
}

TEST(Prometheus, ScrapesTheAgentAndAnswersQueries) {
  AgentProcess agent({"--simulate", "power-cap", "--sim-clock", "stepped"});
  ASSERT_NE(agent.port(), 0);
  agent.Advance(120);
  auto samples = ParseExposition(agent.Get("/metrics").body);

  PrometheusServer prom(agent.port());
  ASSERT_TRUE(prom.ready()) << prom.Log();
  ASSERT_TRUE(WaitFor([&] { return OneValue(prom.Query("up{job=\"gpuwarden\"}")) == 1; }, 60))
      << prom.Log();
  // Time is stepped, so the agent's values hold still while Prometheus scrapes them.
  ASSERT_TRUE(WaitFor([&] { return prom.Query("gpu_power_limit_watts").size() >= 1; }, 30));

  EXPECT_EQ(OneValue(prom.Query("gpu_clock_event_active{gpu=\"0\",reason=\"sw_power_cap\"}")), 1);
  EXPECT_EQ(OneValue(prom.Query("gpu_power_limit_watts{gpu=\"0\"}")),
            Value(samples, "gpu_power_limit_watts", {{"gpu", "0"}}));
  EXPECT_EQ(OneValue(prom.Query("gpu_memory_total_bytes{gpu=\"0\"}")),
            Value(samples, "gpu_memory_total_bytes", {{"gpu", "0"}}));
  EXPECT_EQ(OneValue(prom.Query("sum(gpu_up)")), Value(samples, "gpuwarden_gpus"));
  // The info join that dashboards use: power by GPU model.
  auto joined = prom.Query("gpu_power_watts * on(gpu, uuid) group_left(name) gpu_info");
  ASSERT_GE(joined.size(), 1u);
  EXPECT_FALSE(joined[0]["metric"]["name"].get<std::string>().empty());
  // Counters are counters: rate() over the energy counter is power-like and positive.
  EXPECT_EQ(prom.Query("gpu_energy_joules_total").size(),
            static_cast<size_t>(Value(samples, "gpuwarden_gpus")));
}

}  // namespace
}  // namespace gw::testing
