// Cost per output end to end: `gpuwarden serve` on the inference-thermal scenario (stepped clock)
// with a real simulated inference service (gw-inference-sim) on GPU 0, scraped as a target with
// `outputs` (its 2xx requests) and priced GPUs. Checks: the agent's cost per output equals the
// hand computation — price x GPU-hours of the serving GPU + energy price x its energy, over the
// requests the service itself counted — all read back from the store; the families are on
// /metrics and in /api/gw/v1/services; a bad `outputs` selector is refused with FILE:LINE.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>

#include "support/agent_process.h"
#include "support/inference_service.h"

namespace gw::testing {
namespace {

using nlohmann::json;

constexpr double kGpuHourPrice = 3.6;
constexpr double kEnergyPrice = 0.25;  // per kWh

double Now(const AgentProcess& agent) {
  return json::parse(agent.Get("/api/snapshot").body)["taken_at"];
}

// The result of an instant query at `time` (fails the test on an error reply).
json QueryAt(const AgentProcess& agent, const std::string& expr, double time) {
  HttpReply r =
      agent.Get("/api/v1/query?query=" + UrlEncode(expr) + "&time=" + std::to_string(time));
  EXPECT_EQ(r.status, 200) << expr << ": " << r.body;
  if (r.status != 200) return json::array();
  return json::parse(r.body)["data"]["result"];
}

double V(const json& v) {
  return std::stod(v.get<std::string>());
}

TEST(ServiceCost, CostPerOutputEqualsTheHandComputation) {
  TempDir dir;
  const std::string state = dir / "state";
  InferenceService service(dir / "llm.log", 0, state);
  ASSERT_TRUE(service.ready()) << service.process().Output();
  WriteFile(dir / "gpuwarden.yaml",
            service.ScrapeConfig() +
                "governance:\n  prices:\n    gpu_hour: {default: 3.6}\n    energy_kwh: 0.25\n"
                "    currency: EUR\n");
  setenv("GPUWARDEN_SIM_STATE_DIR", state.c_str(), 1);
  // The agent; started again on the same data directory further down.
  const std::vector<std::string> agent_args = {
      "--simulate", "inference-thermal",    "--sim-clock", "stepped",
      "--config",   dir / "gpuwarden.yaml", "--data-dir",  dir / "data"};
  AgentProcess agent(agent_args);
  unsetenv("GPUWARDEN_SIM_STATE_DIR");
  ASSERT_NE(agent.port(), 0);

  // Until the service has been scraped with outputs counted, then 5 simulated minutes more.
  std::string metrics;
  ASSERT_TRUE(WaitFor(
      [&] {
        agent.Advance(5);
        metrics = agent.Get("/metrics").body;
        return metrics.find("gpu_service_cost_per_output{target=\"llm\"}") != std::string::npos;
      },
      120))
      << metrics << agent.Log();
  agent.Advance(300);
  const double now = Now(agent);

  // By hand, from the store: the agent's first cycle (gpu_service_cost_total's first sample)
  // to now; the serving GPU's energy counter over the same time; the requests the service
  // counted (its own 2xx counters) from its first scrape to its last.
  const json cost_series = QueryAt(agent, "gpu_service_cost_total{target=\"llm\"}[1h]", now);
  ASSERT_EQ(cost_series.size(), 1u) << cost_series.dump();
  const json& cost_samples = cost_series[0]["values"];
  const double t_first = cost_samples[0][0].get<double>();
  EXPECT_EQ(V(cost_samples[0][1]), 0);
  const double t_last = cost_samples[cost_samples.size() - 1][0].get<double>();
  EXPECT_NEAR(t_last, now, 1e-3);
  const json energy = QueryAt(agent, "gpu_energy_joules_total{gpu=\"0\"}[1h]", now);
  ASSERT_EQ(energy.size(), 1u) << energy.dump();
  double e_first = NAN, e_last = NAN;
  for (const json& s : energy[0]["values"]) {
    if (s[0].get<double>() == t_first) e_first = V(s[1]);
    if (s[0].get<double>() == t_last) e_last = V(s[1]);
  }
  ASSERT_FALSE(std::isnan(e_first) || std::isnan(e_last)) << energy.dump();
  const double cost_expected =
      kGpuHourPrice * (t_last - t_first) / 3600 + kEnergyPrice * (e_last - e_first) / 3.6e6;
  // Each 2xx series from the first scrape to the last (a series that appeared after the first
  // scrape counts from 0; the service does not restart here).
  const json scraped =
      QueryAt(agent, "inference_requests_total{target=\"llm\",code=~\"2..\"}[1h]", now);
  ASSERT_FALSE(scraped.empty()) << scraped.dump();
  double first_scrape = INFINITY;
  for (const json& series : scraped)
    first_scrape = std::min(first_scrape, series["values"][0][0].get<double>());
  double outputs_expected = 0;
  for (const json& series : scraped) {
    const json& v = series["values"];
    const bool from_start = v[0][0].get<double>() == first_scrape;
    outputs_expected += V(v[v.size() - 1][1]) - (from_start ? V(v[0][1]) : 0);
  }
  ASSERT_GT(outputs_expected, 100) << scraped.dump();

  // The agent's figures at the same time.
  auto at_now = [&](const std::string& expr) {
    const json r = QueryAt(agent, expr, now);
    EXPECT_EQ(r.size(), 1u) << expr << ": " << r.dump();
    return r.empty() ? NAN : V(r[0]["value"][1]);
  };
  const double cost = at_now("gpu_service_cost_total{target=\"llm\"}");
  const double outputs = at_now("gpu_service_outputs_total{target=\"llm\"}");
  const double per_output = at_now("gpu_service_cost_per_output{target=\"llm\"}");
  EXPECT_NEAR(cost, cost_expected, 1e-9 + 1e-9 * cost_expected);
  EXPECT_EQ(outputs, outputs_expected);
  // The window reaches back to the first cycle (the agent ran under an hour).
  EXPECT_NEAR(per_output, cost_expected / outputs_expected, 1e-12 + 1e-9 * per_output);
  EXPECT_GT(kEnergyPrice * (e_last - e_first) / 3.6e6, 0) << "the energy part was exercised";

  // /metrics and the API say the same.
  metrics = agent.Get("/metrics").body;
  EXPECT_NE(metrics.find("gpu_service_output_info{target=\"llm\",unit=\"request\"} 1\n"),
            std::string::npos)
      << metrics;
  HttpReply api = agent.Get("/api/gw/v1/services");
  ASSERT_EQ(api.status, 200) << api.body;
  const json data = json::parse(api.body)["data"];
  EXPECT_EQ(data["currency"], "EUR");
  EXPECT_EQ(data["window_seconds"], 3600);
  ASSERT_EQ(data["services"].size(), 1u) << api.body;
  const json& s = data["services"][0];
  EXPECT_EQ(s["target"], "llm");
  EXPECT_EQ(s["gpus"], json::array({0}));
  EXPECT_EQ(s["output_unit"], "request");
  EXPECT_EQ(s["outputs_selector"], "inference_requests_total{code=~\"2..\"}");
  EXPECT_NEAR(s["cost"].get<double>(), cost_expected, 1e-9 + 1e-9 * cost_expected);
  EXPECT_EQ(s["outputs"].get<double>(), outputs_expected);
  EXPECT_NEAR(s["gpu_hours"].get<double>(), (t_last - t_first) / 3600, 1e-9);
  EXPECT_NEAR(s["cost_per_1k_outputs"].get<double>(), 1000 * cost_expected / outputs_expected,
              1e-9);

  // A restart on the same data directory: cost and outputs continue from where they were
  // (STORAGE_PATH/governance/services.json), they do not start from zero.
  const double cost_before = s["cost"].get<double>(), outputs_before = s["outputs"].get<double>();
  EXPECT_EQ(agent.process().Stop(), 0) << agent.Log();
  setenv("GPUWARDEN_SIM_STATE_DIR", state.c_str(), 1);
  AgentProcess again(agent_args);
  unsetenv("GPUWARDEN_SIM_STATE_DIR");
  ASSERT_NE(again.port(), 0);
  EXPECT_NE(again.Log().find("services: continuing"), std::string::npos) << again.Log();
  again.Advance(1);  // one cycle; no scrape has counted anything yet
  const json first = json::parse(again.Get("/api/gw/v1/services").body)["data"]["services"][0];
  ASSERT_TRUE(first["outputs"].is_number()) << first.dump();
  EXPECT_GE(first["outputs"].get<double>(), outputs_before) << first.dump();
  EXPECT_GE(first["cost"].get<double>(), cost_before) << first.dump();
  json resumed;
  ASSERT_TRUE(WaitFor(
      [&] {
        again.Advance(5);
        const json d = json::parse(again.Get("/api/gw/v1/services").body)["data"];
        resumed = d["services"][0];
        return resumed["outputs"].is_number() && resumed["outputs"].get<double>() > outputs_before;
      },
      120))
      << resumed.dump() << again.Log();
  EXPECT_GE(resumed["cost"].get<double>(), cost_before);
}

TEST(ServiceCost, ABadOutputsSelectorIsRefusedWithItsLine) {
  TempDir dir;
  WriteFile(dir / "gpuwarden.yaml",
            "scrape:\n  targets:\n    - name: llm\n      url: http://127.0.0.1:1/metrics\n"
            "      gpus: [0]\n      outputs: 'sum(inference_requests_total)'\n");
  std::string out;
  EXPECT_EQ(RunCommand({GpuwardenBinary(), "serve", "--config", dir / "gpuwarden.yaml"}, &out), 2);
  EXPECT_NE(out.find(dir / "gpuwarden.yaml:6: scrape.targets[0].outputs: expected a vector "
                           "selector, got 'sum(inference_requests_total)'"),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace gw::testing
