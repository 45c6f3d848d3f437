// The NVLink, GPM and MIG alerts and findings end to end: a real `gpuwarden serve` over the
// simulator's datacenter scenarios (scenarios/hgx-nvlink.yaml, busy-but-hollow.yaml,
// no-gpm.yaml, mig.yaml; docs/scenarios.md) in stepped time, with the built-in rule pack evaluated
// over its own store and the findings service evaluating the diagnosis as it does in production.
// Read through the public APIs only: GET /api/v1/alerts, GET /api/gw/v1/findings, /api/v1/query.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "support/agent_process.h"

namespace gw::testing {
namespace {

using nlohmann::json;

// One recording per 15 s (a Prometheus scrape), rules every 15 s as in docs/alerts.md.
std::unique_ptr<AgentProcess> Start(TempDir& dir, const std::string& scenario) {
  WriteFile(dir / "gpuwarden.yaml", "rules:\n  evaluation_interval: 15s\n");
  return std::make_unique<AgentProcess>(std::vector<std::string>{
      "--simulate", scenario, "--sim-clock", "stepped", "--interval", "15s", "--slow-interval",
      "15s", "--config", dir / "gpuwarden.yaml"});
}

// Moves simulated time in steps of at most 5 minutes (each HTTP call stays short); returns the
// simulated time reached (Unix seconds): queries of the API default to the wall clock, which a
// stepped agent has left behind.
double Advance(AgentProcess& agent, double seconds) {
  double now = 0;
  while (seconds > 0) {
    const double step = std::min(seconds, 300.0);
    HttpReply r = HttpPost(agent.port(), "/-/sim/advance?seconds=" + std::to_string(step));
    EXPECT_EQ(r.status, 200) << r.body;
    json j = json::parse(r.body, nullptr, false);
    if (j.is_object()) now = j.value("taken_at", 0.0);
    seconds -= step;
  }
  return now;
}

// Firing alerts of the agent as (alertname, gpu) → labels.
std::map<std::pair<std::string, std::string>, json> Firing(const AgentProcess& agent) {
  std::map<std::pair<std::string, std::string>, json> out;
  HttpReply r = agent.Get("/api/v1/alerts");
  EXPECT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body, nullptr, false);
  if (!j.is_object()) return out;
  for (const json& a : j["data"]["alerts"]) {
    if (a.value("state", "") != "firing") continue;
    const json& l = a["labels"];
    out[{l.value("alertname", ""), l.value("gpu", "")}] = l;
  }
  return out;
}

json Findings(const AgentProcess& agent) {
  HttpReply r = agent.Get("/api/gw/v1/findings");
  EXPECT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body, nullptr, false);
  return j.is_object() ? j["data"]["findings"] : json::array();
}

std::vector<json> OfKind(const json& findings, const std::string& kind) {
  std::vector<json> out;
  for (const json& f : findings)
    if (f.value("kind", "") == kind) out.push_back(f);
  return out;
}

// The value of `query` per GPU at simulated time `t`.
std::map<std::string, double> PerGpu(const AgentProcess& agent, const std::string& query,
                                     double t) {
  std::map<std::string, double> out;
  HttpReply r = agent.Get("/api/v1/query?query=" + UrlEncode(query) + "&time=" + std::to_string(t));
  EXPECT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body, nullptr, false);
  if (!j.is_object()) return out;
  for (const json& s : j["data"]["result"])
    out[s["metric"].value("gpu", "")] = std::stod(s["value"][1].get<std::string>());
  return out;
}

// hgx-nvlink: a link of GPU 3 goes down at 60 s; a CRC error storm with XID 74 on GPU 5 from
// 90 s. Ten minutes later: GPU 3 has GpuNvLinkLinkDown and its finding naming the link, GPU 5
// has GpuNvLinkXidError, GpuNvLinkErrorRateHigh and a critical error-storm finding; XID 74 is not
// also paged as GpuXidHardwareError; no other GPU has an NVLink alert or finding.
TEST(DatacenterServe, HgxNvLinkFaultsRaiseTheirAlertsAndFindings) {
  TempDir dir;
  auto agent = Start(dir, "hgx-nvlink");
  ASSERT_NE(agent->port(), 0);
  Advance(*agent, 30);
  EXPECT_TRUE(Firing(*agent).empty()) << "alerts before any fault";
  const double t = Advance(*agent, 570);
  // The rules and checks name the link when the store has the per-link series
  // (gpu_nvlink_link_up), else they count the GPU's down links (gpu_nvlink_links_down).
  const bool per_link = !PerGpu(*agent, "gpu_nvlink_link_up", t).empty();

  const auto firing = Firing(*agent);
  std::set<std::pair<std::string, std::string>> nvlink;
  for (const auto& [key, labels] : firing)
    if (key.first.rfind("GpuNvLink", 0) == 0) nvlink.insert(key);
  EXPECT_EQ(nvlink, (std::set<std::pair<std::string, std::string>>{
                        {"GpuNvLinkLinkDown", "3"},
                        {"GpuNvLinkXidError", "5"},
                        {"GpuNvLinkErrorRateHigh", "5"},
                    }))
      << agent->Get("/api/v1/alerts").body;
  auto down = firing.find({"GpuNvLinkLinkDown", "3"});
  ASSERT_NE(down, firing.end());
  EXPECT_EQ(down->second.value("severity", ""), "warning");
  EXPECT_EQ(down->second.value("layer", ""), "device");
  EXPECT_EQ(down->second.value("link", ""), per_link ? "5" : "");
  auto xid = firing.find({"GpuNvLinkXidError", "5"});
  ASSERT_NE(xid, firing.end());
  EXPECT_EQ(xid->second.value("severity", ""), "critical");
  EXPECT_EQ(firing.count({"GpuXidHardwareError", "5"}), 0u) << "XID 74 paged twice";

  const json findings = Findings(*agent);
  std::set<std::string> gpus;
  const json* link_down = nullptr;
  const json* storm = nullptr;
  const std::vector<json> degraded = OfKind(findings, "nvlink-degraded");
  for (const json& f : degraded) {
    const std::string gpu = f["subject"].value("gpu", "");
    gpus.insert(gpu);
    if (gpu == "3") link_down = &f;
    if (gpu == "5" && f.value("cause", "") == "error storm") storm = &f;
  }
  EXPECT_EQ(gpus, (std::set<std::string>{"3", "5"})) << findings.dump(1);
  EXPECT_EQ(degraded.size(), 2u) << findings.dump(1);
  ASSERT_NE(link_down, nullptr) << findings.dump(1);
  EXPECT_EQ((*link_down).value("cause", ""), per_link ? "link 5 down" : "links down");
  EXPECT_EQ((*link_down).value("title", ""), per_link ? "NVLink degraded on GPU 3: link 5 down"
                                                      : "NVLink degraded on GPU 3: 1 link down");
  EXPECT_EQ((*link_down).value("layer", ""), "device");
  EXPECT_TRUE((*link_down).value("active", false));
  ASSERT_NE(storm, nullptr) << findings.dump(1);
  EXPECT_EQ((*storm).value("severity", ""), "critical");  // XID 74 on GPU 5
  EXPECT_NE((*storm).value("title", "").find("XID 74"), std::string::npos);
  for (const json& e : (*storm)["evidence"]) EXPECT_FALSE(e.value("query", "").empty());
}

// busy-but-hollow: a job at ~100 % utilization with ~5 % SM activity, a healthy compute-bound
// training job with high tensor activity, and a training job with its tensor cores idle.
// Which GPU runs which is read from the scenario's own signals, so the test does not depend on
// their order: the hollow GPU (lowest SM activity), the healthy trainer (highest tensor
// activity). Exactly one busy-but-hollow finding (on the hollow GPU) and exactly one tensor-idle
// finding (on neither of the other two) must appear: the healthy trainer has neither.
TEST(DatacenterServe, BusyButHollowAndTensorIdleJobsGetTheirFindings) {
  TempDir dir;
  auto agent = Start(dir, "busy-but-hollow");
  ASSERT_NE(agent->port(), 0);
  const double t = Advance(*agent, 20 * 60);

  const auto sm = PerGpu(*agent, "avg_over_time(gpu_sm_active_ratio[10m])", t);
  const auto tensor =
      PerGpu(*agent, "avg_over_time(gpu_tensor_active_ratio{pipe=\"any\"}[10m])", t);
  const auto util = PerGpu(*agent, "avg_over_time(gpu_utilization_ratio[10m])", t);
  ASSERT_GE(sm.size(), 3u) << "the scenario has GPM on its GPUs";
  std::string hollow_gpu, healthy_gpu;
  for (const auto& [gpu, v] : sm)
    if (hollow_gpu.empty() || v < sm.at(hollow_gpu)) hollow_gpu = gpu;
  for (const auto& [gpu, v] : tensor)
    if (healthy_gpu.empty() || v > tensor.at(healthy_gpu)) healthy_gpu = gpu;
  ASSERT_NE(hollow_gpu, healthy_gpu);
  // What the scenario says about them (docs/scenarios.md), read through the agent.
  EXPECT_GT(util.at(hollow_gpu), 0.9);
  EXPECT_LT(sm.at(hollow_gpu), 0.15);
  EXPECT_GT(tensor.at(healthy_gpu), 0.2);

  const json findings = Findings(*agent);
  const std::vector<json> hollow = OfKind(findings, "busy-but-hollow");
  ASSERT_EQ(hollow.size(), 1u) << findings.dump(1);
  EXPECT_EQ(hollow[0]["subject"].value("gpu", ""), hollow_gpu);
  EXPECT_EQ(hollow[0].value("cause", ""), "few SMs active");
  EXPECT_EQ(hollow[0].value("layer", ""), "task");
  EXPECT_EQ(hollow[0].value("severity", ""), "warning");
  EXPECT_TRUE(hollow[0].value("active", false));
  EXPECT_FALSE(hollow[0].value("action", "").empty());

  const std::vector<json> idle = OfKind(findings, "tensor-idle");
  ASSERT_EQ(idle.size(), 1u) << findings.dump(1);
  const std::string idle_gpu = idle[0]["subject"].value("gpu", "");
  EXPECT_NE(idle_gpu, hollow_gpu);
  EXPECT_NE(idle_gpu, healthy_gpu);
  EXPECT_GT(sm.at(idle_gpu), 0.5);
  EXPECT_LT(tensor.at(idle_gpu), 0.05);
  EXPECT_NE(idle[0].value("action", "").find("mixed precision"), std::string::npos);

  // The healthy trainer has neither (it may be pinned at its power limit: another finding).
}

// no-gpm: GPUs without GPM (an older model, and an H100 on a driver without the GPM symbols)
// have no GPM series, so however busy they are, no profiling finding appears.
TEST(DatacenterServe, WithoutGpmThereIsNoProfilingFinding) {
  TempDir dir;
  auto agent = Start(dir, "no-gpm");
  ASSERT_NE(agent->port(), 0);
  const double t = Advance(*agent, 15 * 60);
  EXPECT_TRUE(PerGpu(*agent, "gpu_sm_active_ratio", t).empty());
  EXPECT_EQ(PerGpu(*agent, "gpu_utilization_ratio > 0.9", t).size(), 2u) << "both GPUs busy";
  const json findings = Findings(*agent);
  EXPECT_TRUE(OfKind(findings, "busy-but-hollow").empty()) << findings.dump(1);
  EXPECT_TRUE(OfKind(findings, "tensor-idle").empty()) << findings.dump(1);
}

// mig: GPU 1 is re-partitioned at 120 s (3g + 2g + 1g + 1g → 2 × 3g: fewer instances, one slice
// left free). An operator's re-partition is not a lost instance: GpuMigInstanceLost stays silent
// for ten minutes after it. (The rule reads gpu_mig_info; where the store lacks the per-instance
// series it cannot fire at all, and this test only checks the instance counts.)
TEST(DatacenterServe, AMigRepartitionIsNotALostInstance) {
  TempDir dir;
  auto agent = Start(dir, "mig");
  ASSERT_NE(agent->port(), 0);
  const double before_t = Advance(*agent, 60);
  const auto before = PerGpu(*agent, "gpu_mig_instances", before_t);
  const double after_t = Advance(*agent, 11 * 60);
  const auto after = PerGpu(*agent, "gpu_mig_instances", after_t);
  ASSERT_EQ(before.count("1"), 1u);
  ASSERT_EQ(after.count("1"), 1u);
  EXPECT_EQ(before.at("1"), 4);
  EXPECT_EQ(after.at("1"), 2);
  for (const auto& [key, labels] : Firing(*agent))
    EXPECT_NE(key.first, "GpuMigInstanceLost") << labels.dump();
}

}  // namespace
}  // namespace gw::testing
