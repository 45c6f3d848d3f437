// The business layer end to end: `gpuwarden serve` on the inference-thermal scenario (stepped
// clock) with two real simulated inference services (gw-inference-sim) as host processes — one on
// GPU 0, which loses its cooling (at 300 s here rather than the built-in 60 s, so that finding the
// services, which takes real time, is always over before the fault), one on healthy GPU 1 — scraped
// as targets with their GPUs, plus a target nobody serves. Checks: the latency alert fires for the
// service on the throttled GPU (and only for it) while that GPU throttles, with its target label,
// in /api/v1/alerts; the scraped series and gpu_service_info are queryable through /api/v1/query;
// the dead target reads gpuwarden_scrape_up 0 while the agent carries on; a bad scrape config is
// refused with FILE:LINE.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>

#include "support/agent_process.h"

namespace gw::testing {
namespace {

using nlohmann::json;

std::string InferenceSimBinary() {
  return std::string(GW_BINARY_DIR) + "/bin/gw-inference-sim";
}

// The result vector of an instant query at the agent's (simulated) now (fails the test on an
// error reply). Stepped simulated time runs ahead of the wall clock.
json Query(const AgentProcess& agent, const std::string& expr) {
  const double now = json::parse(agent.Get("/api/snapshot").body)["taken_at"];
  HttpReply r =
      agent.Get("/api/v1/query?query=" + UrlEncode(expr) + "&time=" + std::to_string(now));
  EXPECT_EQ(r.status, 200) << expr << ": " << r.body;
  if (r.status != 200) return json::array();
  return json::parse(r.body)["data"]["result"];
}

// The firing alerts named `name`, from /api/v1/alerts.
std::vector<json> Firing(const AgentProcess& agent, const std::string& name) {
  HttpReply r = agent.Get("/api/v1/alerts");
  std::vector<json> out;
  if (r.status != 200) return out;
  const json reply = json::parse(r.body);
  for (const json& a : reply["data"]["alerts"])
    if (a["labels"]["alertname"] == name && a["state"] == "firing") out.push_back(a);
  return out;
}

class StateDirEnv {
 public:
  explicit StateDirEnv(const std::string& dir) {
    setenv("GPUWARDEN_SIM_STATE_DIR", dir.c_str(), 1);
  }
  ~StateDirEnv() { unsetenv("GPUWARDEN_SIM_STATE_DIR"); }
};

TEST(Business, LatencyAlertFiresForTheServiceOnTheThrottledGpu) {
  TempDir dir;
  const std::string state = dir / "state";
  const int llm_port = FreePort(), chat_port = FreePort(), dead_port = FreePort();
  auto service = [&](const char* gpu, int port, const std::string& log) {
    return std::make_unique<Process>(
        std::vector<std::string>{"env", "GPUWARDEN_SIM_WORKLOAD=inference",
                                 std::string("CUDA_VISIBLE_DEVICES=") + gpu,
                                 "GPUWARDEN_SIM_STATE_DIR=" + state, InferenceSimBinary(),
                                 "--listen", "127.0.0.1:" + std::to_string(port)},
        log);
  };
  auto llm = service("0", llm_port, dir / "llm.log");
  auto chat = service("1", chat_port, dir / "chat.log");
  ASSERT_TRUE(WaitFor([&] { return HttpGet(llm_port, "/healthz").status == 200; }, 30))
      << llm->Output();
  ASSERT_TRUE(WaitFor([&] { return HttpGet(chat_port, "/healthz").status == 200; }, 30))
      << chat->Output();

  WriteFile(dir / "gpuwarden.yaml",
            "scrape:\n  targets:\n"
            "    - {name: llm, url: 'http://127.0.0.1:" +
                std::to_string(llm_port) +
                "/metrics', gpus: [0]}\n"
                "    - {name: chat, url: 'http://127.0.0.1:" +
                std::to_string(chat_port) +
                "/metrics', gpus: [1]}\n"
                "    - {name: dead, url: 'http://127.0.0.1:" +
                std::to_string(dead_port) + "/metrics', timeout: 1s}\n");
  // The built-in scenario with the fault moved from 60 s to 300 s: the simulator finds the services
  // on a real-time scan while the test steps simulated time, and on a loaded machine that took
  // long enough for the "before the fault" checks to run after it.
  std::string scenario = ReadFile(std::string(GW_SOURCE_DIR) + "/scenarios/inference-thermal.yaml");
  const std::string fault_at = "{type: cooling_failure, at: 60s, factor: 6}";
  ASSERT_NE(scenario.find(fault_at), std::string::npos) << scenario;
  scenario.replace(scenario.find(fault_at), fault_at.size(),
                   "{type: cooling_failure, at: 300s, factor: 6}");
  WriteFile(dir / "inference-thermal.yaml", scenario);
  StateDirEnv env(state);
  AgentProcess agent({"--simulate", dir / "inference-thermal.yaml", "--sim-clock", "stepped",
                      "--config", dir / "gpuwarden.yaml"});
  ASSERT_NE(agent.port(), 0);
  ASSERT_TRUE(agent.WaitReady()) << agent.Log();
  const double started_at = json::parse(agent.Get("/api/snapshot").body)["taken_at"];
  ASSERT_GT(started_at, 0);

  // The simulator finds the services on its next scan (real time), the collector lists them on a
  // slow cycle (simulated time).
  ASSERT_TRUE(WaitFor(
      [&] {
        agent.Advance(2);
        json snap = json::parse(agent.Get("/api/snapshot").body);
        return snap["gpus"][0]["processes"].size() == 1 && snap["gpus"][1]["processes"].size() == 1;
      },
      60))
      << agent.Get("/api/snapshot").body << agent.Log();
  const json snap = json::parse(agent.Get("/api/snapshot").body);
  const std::string uuid0 = snap["gpus"][0]["uuid"], uuid1 = snap["gpus"][1]["uuid"];

  // Before the cooling failure (300 s) the services are fast and nothing fires.
  agent.Advance(30);
  const double elapsed =
      json::parse(agent.Get("/api/snapshot").body)["taken_at"].get<double>() - started_at;
  ASSERT_LT(elapsed, 280) << "finding the services took too long in simulated time";
  EXPECT_TRUE(Firing(agent, "InferenceLatencyHigh").empty());
  json p95 = Query(agent,
                   "histogram_quantile(0.95, sum by (target, le) "
                   "(rate(inference_request_duration_seconds_bucket[1m])))");
  ASSERT_EQ(p95.size(), 2u) << p95.dump();
  for (const json& s : p95) EXPECT_LT(std::stod(s["value"][1].get<std::string>()), 0.25) << s;

  // Then GPU 0 overheats; advance until the latency alert fires (at most 15 simulated minutes).
  std::vector<json> firing;
  for (int i = 0; i < 60 && firing.empty(); ++i) {
    agent.Advance(15);
    firing = Firing(agent, "InferenceLatencyHigh");
  }
  ASSERT_EQ(firing.size(), 1u) << agent.Get("/api/v1/alerts").body << agent.Log();
  EXPECT_EQ(firing[0]["labels"]["target"], "llm");
  EXPECT_EQ(firing[0]["labels"]["layer"], "business");
  EXPECT_EQ(firing[0]["labels"]["severity"], "warning");
  // ... while GPU 0 throttles (thermal slowdown within the last minute), and GPU 1 does not.
  json throttled = Query(agent,
                         "max by (gpu) (max_over_time(gpu_clock_event_active{reason=~\""
                         "sw_thermal_slowdown|hw_thermal_slowdown\"}[1m]))");
  std::map<std::string, double> by_gpu;
  for (const json& s : throttled)
    by_gpu[s["metric"]["gpu"]] = std::stod(s["value"][1].get<std::string>());
  EXPECT_EQ(by_gpu["0"], 1) << throttled.dump();
  EXPECT_EQ(by_gpu["1"], 0) << throttled.dump();

  // The diagnosis (diagnose/, evaluated by the agent once per recorded minute over the last hour)
  // links the slow service to the throttled GPU serving it, and finds nothing wrong with the
  // healthy service. The device finding needs its condition held for two minutes (near the
  // thermal limit) or one (throttled while busy), and the agent's evaluation runs at its own
  // minute boundaries, so advance a minute at a time until one evaluation names the device (at
  // most 5 simulated minutes). Until then the latency finding may only say "not the GPUs".
  json llm_finding;
  std::string findings_seen;
  for (int minute = 0; minute < 5; ++minute) {
    agent.Advance(60);
    HttpReply found = agent.Get("/api/gw/v1/findings");
    ASSERT_EQ(found.status, 200) << found.body;
    findings_seen = found.body;
    const json reply = json::parse(found.body);
    for (const json& f : reply["data"]["findings"]) {
      if (f["kind"] != "business-latency") continue;
      EXPECT_EQ(f["subject"].value("target", ""), "llm") << f.dump();
      if (f["subject"].value("target", "") == "llm") llm_finding = f;
    }
    if (llm_finding.is_object() &&
        llm_finding["cause"].get<std::string>().find("on GPU") != std::string::npos)
      break;
  }
  ASSERT_TRUE(llm_finding.is_object()) << findings_seen;
  EXPECT_EQ(llm_finding["layer"], "business");
  const std::string cause = llm_finding["cause"];
  EXPECT_NE(cause.find("on GPU 0"), std::string::npos) << findings_seen;
  EXPECT_NE(cause.find("thermal"), std::string::npos) << findings_seen;
  EXPECT_EQ(llm_finding["related_gpus"], json::array({"0"})) << llm_finding.dump();
  // The same finding on /metrics, from the same evaluation (Prometheus at fleet scale sees it).
  if (llm_finding["active"].get<bool>()) {
    const std::vector<Sample> page = ParseExposition(agent.Get("/metrics").body);
    EXPECT_EQ(Value(page, "gpuwarden_finding_active",
                    {{"kind", "business-latency"},
                     {"target", "llm"},
                     {"cause", cause},
                     {"severity", llm_finding["severity"].get<std::string>()}}),
              1)
        << findings_seen;
  }

  // The scraped series are in the store with their target.
  json requests = Query(agent, "sum by (target, code) (inference_requests_total)");
  std::map<std::string, double> ok;
  for (const json& s : requests)
    if (s["metric"]["code"] == "200")
      ok[s["metric"]["target"]] = std::stod(s["value"][1].get<std::string>());
  EXPECT_GT(ok["llm"], 1000) << requests.dump();
  EXPECT_GT(ok["chat"], 1000) << requests.dump();
  // gpu_service_info links each target to its GPU by index and UUID.
  json info = Query(agent, "gpu_service_info");
  ASSERT_EQ(info.size(), 2u) << info.dump();
  for (const json& s : info) {
    const std::string target = s["metric"]["target"];
    EXPECT_EQ(s["metric"]["gpu"], target == "llm" ? "0" : "1") << s;
    EXPECT_EQ(s["metric"]["uuid"], target == "llm" ? uuid0 : uuid1) << s;
  }
  // The PromQL join an operator writes: slow services (worst 1-minute p95 of the last 3 minutes;
  // the GPU cycles between SW and HW slowdown, so one instant may be fast) on GPU 0.
  json joined = Query(agent,
                      "max_over_time(histogram_quantile(0.95, sum by (target, le) "
                      "(rate(inference_request_duration_seconds_bucket[1m])))[3m:15s]) > 0.25 "
                      "and on (target) gpu_service_info{gpu=\"0\"}");
  EXPECT_EQ(joined.size(), 1u) << joined.dump();

  // The dead target: down, said once in the log, alerted after 2 minutes; the agent carries on.
  json up = Query(agent, "gpuwarden_scrape_up");
  std::map<std::string, double> up_by_target;
  for (const json& s : up)
    up_by_target[s["metric"]["target"]] = std::stod(s["value"][1].get<std::string>());
  EXPECT_EQ(up_by_target["dead"], 0);
  EXPECT_EQ(up_by_target["llm"], 1);
  EXPECT_EQ(up_by_target["chat"], 1);
  const std::string metrics = agent.Get("/metrics").body;
  EXPECT_NE(metrics.find("gpuwarden_scrape_up{target=\"dead\"} 0\n"), std::string::npos);
  EXPECT_NE(metrics.find("gpu_service_info{target=\"llm\",gpu=\"0\",uuid=\"" + uuid0 + "\"} 1\n"),
            std::string::npos)
      << metrics;
  const std::string log = agent.Log();
  const std::string down = "scrape target 'dead' (http://127.0.0.1:" + std::to_string(dead_port) +
                           "/metrics) is down: cannot connect";
  EXPECT_NE(log.find(down), std::string::npos) << log;
  EXPECT_EQ(log.find(down), log.rfind(down)) << "logged once per change";
  std::vector<json> target_down = Firing(agent, "ScrapeTargetDown");
  ASSERT_EQ(target_down.size(), 1u);
  EXPECT_EQ(target_down[0]["labels"]["target"], "dead");
  EXPECT_EQ(agent.Get("/healthz").status, 200);
  EXPECT_TRUE(agent.process().Running());
}

TEST(Business, ABadScrapeConfigIsRefusedWithItsLine) {
  TempDir dir;
  WriteFile(dir / "gpuwarden.yaml",
            "scrape:\n  targets:\n    - name: llm\n      url: http://127.0.0.1:1/metrics\n"
            "      gpus: [zero]\n");
  std::string out;
  EXPECT_EQ(RunCommand({GpuwardenBinary(), "serve", "--config", dir / "gpuwarden.yaml"}, &out), 2);
  EXPECT_NE(out.find(dir / "gpuwarden.yaml:5: scrape.targets[0].gpus: expected a GPU index"),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace gw::testing
