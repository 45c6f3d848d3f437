// Real Prometheus 2.42 (the Debian package) scrapes the agent on loopback; its query API must
// return the series and values the scenario dictates.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/agent_process.h"

namespace gw::testing {
namespace {

class PrometheusServer {
 public:
  explicit PrometheusServer(int target_port) : port_(FreePort()) {
    WriteFile(dir_ / "prometheus.yml",
              "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
              "scrape_configs:\n  - job_name: gpuwarden\n    static_configs:\n"
              "      - targets: ['127.0.0.1:" +
                  std::to_string(target_port) + "']\n");
    process_ = std::make_unique<Process>(
        std::vector<std::string>{"prometheus", "--config.file=" + (dir_ / "prometheus.yml"),
                                 "--storage.tsdb.path=" + (dir_ / "data"),
                                 "--web.listen-address=127.0.0.1:" + std::to_string(port_)},
        dir_ / "prometheus.log");
    ready_ = WaitFor([&] { return HttpGet(port_, "/-/ready").status == 200; }, 60);
  }
  bool ready() const { return ready_; }
  std::string Log() const { return process_->Output(); }

  // The result vector of an instant query at "now".
  nlohmann::json Query(const std::string& promql) const {
    HttpReply r = HttpGet(port_, "/api/v1/query?query=" + UrlEncode(promql));
    if (r.status != 200) return nlohmann::json::array();
    return nlohmann::json::parse(r.body)["data"]["result"];
  }

 private:
  TempDir dir_;
  int port_;
  std::unique_ptr<Process> process_;
  bool ready_ = false;
};

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
