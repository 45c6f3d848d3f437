// The fleet spike rule end to end (docs/alerts.md "Spikes in a central store"): a real
// Prometheus 2.42 scrapes a simulated agent every 15 s, as a central Prometheus does, with the
// built-in device rules (deploy/rules/gpu-device.yml) loaded. The scenario one-spike
// (docs/scenarios.md) has one 300 ms memory spike to 98 % on GPU 2 at 20.3 s of virtual time,
// which the test moves at the pace of real time. GpuMemorySpikeNearTotal must fire in that
// Prometheus over its own data, for GPU 2 only; the window peak series there must hold the spike
// while the plain gauges there never show it; the agent's own store keeps the per-cycle peak.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "support/agent_process.h"
#include "support/http_client.h"
#include "support/process.h"
#include "support/prometheus_server.h"

namespace gw::testing {
namespace {

constexpr double kMiB = 1048576;

// The Prometheus configuration of this test: one target every 15 s, `rule_file` every 5 s.
std::string CentralConfig(int target_port, const std::string& rule_file) {
  return "global:\n  scrape_interval: 15s\n  scrape_timeout: 10s\n  evaluation_interval: 5s\n"
         "rule_files: ['" +
         rule_file +
         "']\n"
         "scrape_configs:\n  - job_name: gpuwarden\n    static_configs:\n"
         "      - targets: ['127.0.0.1:" +
         std::to_string(target_port) + "']\n        labels: {instance: node-07}\n";
}

double OneValue(const nlohmann::json& result) {
  if (result.size() != 1) return std::nan("");
  return std::stod(result[0]["value"][1].get<std::string>());
}

TEST(FleetSpike, ASubSecondSpikeFiresTheRuleInAPrometheusScrapingEvery15s) {
  AgentProcess agent({"--simulate", "one-spike", "--sim-clock", "stepped"});
  ASSERT_NE(agent.port(), 0);
  auto central = PrometheusServer::WithConfig(
      CentralConfig(agent.port(), std::string(GW_SOURCE_DIR) + "/deploy/rules/gpu-device.yml"));
  const PrometheusServer& prom = *central;
  ASSERT_TRUE(prom.ready()) << prom.Log();
  // The first scrape (Prometheus spreads targets over the interval): virtual time holds at 0.
  ASSERT_TRUE(WaitFor([&] { return OneValue(prom.Query("up{job=\"gpuwarden\"}")) == 1; }, 60))
      << prom.Log();

  // Virtual time at the pace of real time, one second at a time, for 45 s: the spike at 20.3 s,
  // its window peak on the page from 21 s to 37 s, at least one 15 s scrape in between.
  std::atomic<bool> stop{false};
  std::atomic<int> advanced{0};
  std::thread pace([&] {
    const auto begin = std::chrono::steady_clock::now();
    for (int s = 1; s <= 45 && !stop; ++s) {
      std::this_thread::sleep_until(begin + std::chrono::seconds(s));
      if (HttpPost(agent.port(), "/-/sim/advance?seconds=1").status != 200) return;
      advanced = s;
    }
  });
  const std::string firing = "ALERTS{alertname=\"GpuMemorySpikeNearTotal\",alertstate=\"firing\"}";
  // Fires within a scrape interval and an evaluation of the spike reaching the page (~21 s).
  const bool fired = WaitFor([&] { return !prom.Query(firing).empty(); }, 80);
  stop = true;
  pace.join();
  ASSERT_TRUE(fired) << "advanced to " << advanced << " s\n" << prom.Log();

  auto alerts = prom.Query(firing);
  ASSERT_EQ(alerts.size(), 1u) << alerts.dump();
  EXPECT_EQ(alerts[0]["metric"]["gpu"], "2");
  EXPECT_EQ(alerts[0]["metric"]["instance"], "node-07");  // the node, for a fleet's routing

  // In the central store: the window peak holds the spike, the 1 s gauges never had it.
  const std::string g2 = "{job=\"gpuwarden\",gpu=\"2\"}";
  EXPECT_EQ(OneValue(prom.Query("max_over_time(gpu_memory_used_peak_window_bytes" + g2 + "[5m])")),
            80000 * kMiB);
  EXPECT_EQ(OneValue(prom.Query("max_over_time(gpu_utilization_peak_window_ratio" + g2 + "[5m])")),
            1.0);
  EXPECT_EQ(OneValue(prom.Query("max_over_time(gpu_memory_used_bytes" + g2 + "[5m])")),
            62000 * kMiB);
  EXPECT_LT(OneValue(prom.Query("max_over_time(gpu_utilization_ratio" + g2 + "[5m])")), 0.3);
  // No other GPU's window reaches the threshold (they hold 40000 MiB).
  EXPECT_EQ(OneValue(prom.Query("count(max_over_time(gpu_memory_used_peak_window_bytes[5m]) > "
                                "0.95 * 81559 * 1048576)")),
            1.0);

  // The agent's own store: every cycle's peak (the cycle of 21 s has it), no window series.
  EXPECT_EQ(OneValue(PrometheusServer::QueryAt(
                agent.port(), "max_over_time(gpu_memory_used_peak_bytes{gpu=\"2\"}[5m])")),
            80000 * kMiB);
  EXPECT_TRUE(PrometheusServer::QueryAt(agent.port(), "gpu_memory_used_peak_window_bytes").empty());
}

}  // namespace
}  // namespace gw::testing
