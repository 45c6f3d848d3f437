// Alerts end to end, as an operator meets them: `gpuwarden serve` on a simulated fault in stepped
// (accelerated, deterministic) time, the built-in rule pack evaluated over the agent's own store,
// alerts delivered to a real Alertmanager 0.25 and to a JSON webhook — including across an
// Alertmanager outage with a gpuwarden restart in the middle.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "support/agent_process.h"
#include "support/alertmanager.h"
#include "support/notify_webhook_receiver.h"

namespace gw::testing {
namespace {

using nlohmann::json;

// A one-GPU scenario with `faults` (YAML flow items). With a stepped clock, serve starts simulated
// time at the wall clock and a test moves it ahead; gpuwarden moves alert times back onto the wall
// clock when it sends them (receivers judge firing/resolved by their own clock).
std::string Scenario(const std::string& name, const std::string& model, const std::string& faults,
                     const std::string& extra_gpu_keys = "") {
  std::string s = "name: " + name + "\nseed: 3\nclock: stepped\ngpus:\n  - model: " + model +
                  "\n    workload:\n      - {type: training, util: 92, mem_util: 45}\n"
                  "    processes:\n      - {pid: 4242, memory_mib: 30000}\n" +
                  extra_gpu_keys;
  if (!faults.empty()) s += "    faults:\n" + faults;
  return s;
}

std::string Config(const std::vector<std::string>& alertmanagers,
                   const std::vector<std::string>& webhooks) {
  std::string c =
      "rules:\n  evaluation_interval: 15s\n  external_labels:\n    node: sim-node-1\n"
      "alerting:\n  resend_delay: 1m\n";
  c += "  alertmanagers: [";
  for (size_t i = 0; i < alertmanagers.size(); ++i) c += (i ? ", " : "") + alertmanagers[i];
  c += "]\n  webhooks: [";
  for (size_t i = 0; i < webhooks.size(); ++i) c += (i ? ", " : "") + webhooks[i];
  c += "]\n";
  return c;
}

struct Agent {
  TempDir dir;
  std::unique_ptr<AgentProcess> process;

  void Start(const std::string& scenario, const std::string& config,
             const std::string& data_dir = "") {
    WriteFile(dir / "scenario.yaml", scenario);
    WriteFile(dir / "gpuwarden.yaml", config);
    process = std::make_unique<AgentProcess>(std::vector<std::string>{
        "--simulate", dir / "scenario.yaml", "--sim-clock", "stepped", "--config",
        dir / "gpuwarden.yaml", "--data-dir", data_dir.empty() ? dir / "data" : data_dir});
  }
  // Advances simulated time in steps, so that each HTTP call stays short; returns the simulated
  // time reached (Unix seconds).
  double Advance(double seconds) {
    double now = 0;
    while (seconds > 0) {
      double step = std::min(seconds, 300.0);
      HttpReply r = HttpPost(process->port(), "/-/sim/advance?seconds=" + std::to_string(step));
      EXPECT_EQ(r.status, 200) << r.body;
      json j = json::parse(r.body, nullptr, false);
      if (j.is_object()) now = j.value("taken_at", 0.0);
      seconds -= step;
    }
    return now;
  }
  // The agent's alerts (GET /api/v1/alerts), name → alert JSON (one per name expected here).
  std::map<std::string, json> Alerts(const std::string& state) const {
    std::map<std::string, json> out;
    HttpReply r = process->Get("/api/v1/alerts");
    if (r.status != 200) return out;
    json j = json::parse(r.body, nullptr, false);
    for (const json& a : j["data"]["alerts"])
      if (a.value("state", "") == state) out[a["labels"].value("alertname", "")] = a;
    return out;
  }
};

// Alertmanager's active alerts, alertname → alert.
std::map<std::string, json> ActiveInAlertmanager(const Alertmanager& am) {
  std::map<std::string, json> out;
  json alerts = am.Alerts();
  if (!alerts.is_array()) return out;
  for (const json& a : alerts)
    if (a["status"].value("state", "") == "active") out[a["labels"].value("alertname", "")] = a;
  return out;
}

// The families docs/metrics.md lists under "Rules and alert notifications".
std::set<std::string> DocumentedAlertingFamilies() {
  std::set<std::string> names;
  std::istringstream in(ReadFile(std::string(GW_SOURCE_DIR) + "/docs/metrics.md"));
  bool inside = false;
  const std::regex row(R"(^\| `([a-z_:]+)` \|)");
  std::smatch m;
  for (std::string l; std::getline(in, l);) {
    if (l.rfind("## ", 0) == 0) inside = l.rfind("## Rules and alert notifications", 0) == 0;
    if (inside && std::regex_search(l, m, row)) names.insert(m[1]);
  }
  return names;
}

std::set<std::string> ExposedFamilies(const std::string& text) {
  std::set<std::string> names;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (l.rfind("# TYPE ", 0) == 0) names.insert(l.substr(7, l.find(' ', 7) - 7));
  return names;
}

struct FaultCase {
  std::string name, model, faults;
  std::string alert, layer, severity;
  double fire_by_s;     // simulated seconds after start by which the alert must fire
  double resolve_by_s;  // ... and be resolved by (0: the fault does not end)
  std::string extra_gpu_keys;
};

void PrintTo(const FaultCase& c, std::ostream* os) {
  *os << c.name << " -> " << c.alert;
}

class FaultScenario : public ::testing::TestWithParam<FaultCase> {};

TEST_P(FaultScenario, RaisesTheAlertInTheRightLayerAndResolvesIt) {
  if (!Alertmanager::Available()) GTEST_SKIP() << "no Alertmanager";
  const FaultCase& c = GetParam();
  Alertmanager am;
  ASSERT_TRUE(am.Start()) << am.Output();
  Agent agent;
  agent.Start(Scenario(c.name, c.model, c.faults, c.extra_gpu_keys), Config({am.url()}, {}));
  ASSERT_NE(agent.process->port(), 0);

  // Before the fault: nothing of this kind.
  agent.Advance(20);
  EXPECT_EQ(agent.Alerts("firing").count(c.alert), 0u) << agent.process->Log();

  const double fired_at = agent.Advance(c.fire_by_s - 20);
  auto firing = agent.Alerts("firing");
  ASSERT_EQ(firing.count(c.alert), 1u) << c.alert << " not firing after " << c.fire_by_s
                                       << " s; firing: " <<
      [&] {
        std::string names;
        for (auto& [n, a] : firing) names += n + " ";
        return names;
      }() << "\n" << agent.process->Log();
  const json& a = firing[c.alert];
  EXPECT_EQ(a["labels"].value("layer", ""), c.layer);
  EXPECT_EQ(a["labels"].value("severity", ""), c.severity);
  EXPECT_EQ(a["labels"].value("gpu", ""), "0");
  EXPECT_FALSE(a["annotations"].value("summary", "").empty());
  EXPECT_FALSE(a["annotations"].value("runbook", "").empty());
  EXPECT_EQ(a["annotations"].value("description", "").find("<error"), std::string::npos);

  // Alertmanager has it, with the external label naming the node.
  ASSERT_TRUE(WaitFor([&] { return ActiveInAlertmanager(am).count(c.alert) == 1; }, 30))
      << "Alertmanager did not get " << c.alert << ": " << am.Alerts().dump() << "\n"
      << agent.process->Log();
  json in_am = ActiveInAlertmanager(am)[c.alert];
  EXPECT_EQ(in_am["labels"].value("node", ""), "sim-node-1");
  EXPECT_EQ(in_am["labels"].value("layer", ""), c.layer);
  EXPECT_EQ(in_am["labels"].value("severity", ""), c.severity);
  EXPECT_NE(in_am.value("generatorURL", "").find("/graph?g0.expr="), std::string::npos);

  // Every documented rules/notification family is on /metrics, and nothing undocumented.
  std::set<std::string> documented = DocumentedAlertingFamilies(), exposed;
  for (const std::string& f : ExposedFamilies(agent.process->Get("/metrics").body))
    if (f.rfind("gpuwarden_rule", 0) == 0 || f.rfind("gpuwarden_alerts_", 0) == 0 ||
        f.rfind("gpuwarden_notification", 0) == 0)
      exposed.insert(f);
  EXPECT_EQ(exposed, documented);

  // The ALERTS series is in the store, like Prometheus'.
  HttpReply q =
      agent.process->Get("/api/v1/query?query=ALERTS%7Balertname%3D%22" + c.alert +
                         "%22%2Calertstate%3D%22firing%22%7D&time=" + std::to_string(fired_at));
  EXPECT_NE(q.body.find(c.alert), std::string::npos) << q.body;

  if (c.resolve_by_s <= 0) return;
  agent.Advance(c.resolve_by_s - c.fire_by_s);
  EXPECT_EQ(agent.Alerts("firing").count(c.alert), 0u) << c.alert << " still firing";
  EXPECT_TRUE(WaitFor([&] { return ActiveInAlertmanager(am).count(c.alert) == 0; }, 30))
      << "Alertmanager still shows " << c.alert << " active: " << am.Alerts().dump();
}

INSTANTIATE_TEST_SUITE_P(
    Pack, FaultScenario,
    ::testing::Values(
        // Cooling fails for 15 minutes: the die climbs towards this GPU's slowdown threshold.
        FaultCase{"cooling", "H100",
                  "      - {type: cooling_failure, at: 30s, factor: 3, duration: 15m}\n",
                  "GpuTemperatureNearSlowdown", "device", "warning", 8 * 60, 30 * 60},
        // Two uncorrectable errors: critical at once; the volatile count stays until a reset.
        FaultCase{"ecc-dbe", "H100", "      - {type: ecc_uncorrectable, at: 45s, count: 2}\n",
                  "GpuUncorrectableEccError", "device", "critical", 90, 0},
        // The GPU falls off the bus (XID 79).
        FaultCase{"fall-off-bus", "H100", "      - {type: fall_off_bus, at: 30s}\n",
                  "GpuFellOffBus", "device", "critical", 3 * 60, 0},
        // The power brake holds a busy A100's clocks down for 5 minutes.
        FaultCase{"power-brake", "A100-80GB",
                  "      - {type: power_brake, at: 30s, duration: 5m}\n", "GpuBusyButSlowed",
                  "device", "critical", 3 * 60, 12 * 60},
        // Correctable errors at 600/h for 20 minutes.
        FaultCase{"ecc-sbe", "H100",
                  "      - {type: ecc_correctable, at: 0s, rate_per_hour: 600, duration: 20m}\n",
                  "GpuCorrectableEccRateHigh", "device", "warning", 15 * 60, 45 * 60}),
    [](const ::testing::TestParamInfo<FaultCase>& param) {
      std::string n;
      for (char ch : param.param.name) n += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
      return n;
    });

TEST(Alerts, HealthyDemoRaisesNoCriticalAndNoDeviceWarningInTwoHours) {
  Agent agent;
  WriteFile(agent.dir / "gpuwarden.yaml", Config({}, {}));
  agent.process = std::make_unique<AgentProcess>(std::vector<std::string>{
      "--simulate", "demo", "--sim-clock", "stepped", "--config", agent.dir / "gpuwarden.yaml"});
  ASSERT_NE(agent.process->port(), 0);
  agent.Advance(2 * 3600);
  // Everything ALERTS ever held over the two hours, from the store.
  HttpReply r = agent.process->Get(
      "/api/v1/query?query=" +
      std::string(
          "count_over_time(ALERTS%7Bseverity%3D%22critical%22%7D%5B3h%5D)%20or%20"
          "count_over_time(ALERTS%7Blayer%3D%22device%22%2Cseverity%3D%22warning%22%7D%5B3h%5D)"));
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  EXPECT_TRUE(j["data"]["result"].empty()) << j["data"]["result"].dump(1);
  // The rules did run: two hours at 15 s is 480 evaluations per group.
  HttpReply m = agent.process->Get("/metrics");
  auto samples = ParseExposition(m.body);
  EXPECT_GE(Value(samples, "gpuwarden_rule_evaluations_total"), 480);
  EXPECT_EQ(Value(samples, "gpuwarden_rule_evaluation_failures_total"), 0);
  EXPECT_GT(Value(samples, "gpuwarden_rules"), 20);
}

TEST(Alerts, EveryTransitionArrivesAcrossAnAlertmanagerOutageAndARestart) {
  if (!Alertmanager::Available()) GTEST_SKIP() << "no Alertmanager";
  Alertmanager am;
  ASSERT_TRUE(am.Start()) << am.Output();
  auto hook = std::make_unique<WebhookReceiver>();  // a JSON webhook target, down during the outage
  ASSERT_TRUE(hook->Start());
  const int hook_port = hook->port();
  TempDir shared;
  const std::string data = shared / "data";
  std::string config = Config({am.url()}, {hook->url("/hook")});

  Agent first;
  // Power brake from 30 s for 3 minutes (GpuBusyButSlowed fires, then resolves), uncorrectable
  // ECC at 6 minutes (GpuUncorrectableEccError fires and stays).
  first.Start(Scenario("outage", "A100-80GB",
                       "      - {type: power_brake, at: 30s, duration: 3m}\n"
                       "      - {type: ecc_uncorrectable, at: 6m, count: 1}\n"),
              config, data);
  first.Advance(150);
  ASSERT_EQ(first.Alerts("firing").count("GpuBusyButSlowed"), 1u) << first.process->Log();
  ASSERT_TRUE(WaitFor([&] { return ActiveInAlertmanager(am).count("GpuBusyButSlowed") == 1; }, 30));

  // Alertmanager and the webhook go down. The brake ends, the ECC error fires.
  am.Stop();
  hook->Stop();
  hook.reset();
  first.Advance(8 * 60);
  auto firing = first.Alerts("firing");
  EXPECT_EQ(firing.count("GpuBusyButSlowed"), 0u);
  ASSERT_EQ(firing.count("GpuUncorrectableEccError"), 1u) << first.process->Log();
  // gpuwarden restarts while they are down (its queue is on disk).
  first.process->process().Stop();

  Agent second;
  // The same GPU, healthy now. (Its simulated clock starts at the wall clock again, behind the
  // first run's: samples older than the stored ones are refused until it catches up.)
  second.Start(Scenario("outage", "A100-80GB", ""), config, data);
  ASSERT_NE(second.process->port(), 0);

  // They come back: the firing ECC alert and the brake's resolution both arrive.
  ASSERT_TRUE(am.Start()) << am.Output();
  hook = std::make_unique<WebhookReceiver>(hook_port);
  ASSERT_TRUE(hook->Start());
  EXPECT_TRUE(
      WaitFor([&] { return ActiveInAlertmanager(am).count("GpuUncorrectableEccError") == 1; }, 60))
      << am.Alerts().dump() << "\n"
      << second.process->Log();
  EXPECT_EQ(ActiveInAlertmanager(am).count("GpuBusyButSlowed"), 0u);
  bool resolved_brake = false, firing_ecc = false;
  EXPECT_TRUE(WaitFor(
      [&] {
        for (const auto& req : hook->Requests()) {
          json body = json::parse(req.body, nullptr, false);
          if (!body.is_object()) continue;
          for (const json& a : body["alerts"]) {
            std::string name = a["labels"].value("alertname", "");
            if (name == "GpuBusyButSlowed" && a.value("status", "") == "resolved")
              resolved_brake = true;
            if (name == "GpuUncorrectableEccError" && a.value("status", "") == "firing")
              firing_ecc = true;
          }
        }
        return resolved_brake && firing_ecc;
      },
      60))
      << "webhook got: resolved brake " << resolved_brake << ", firing ECC " << firing_ecc;
}

TEST(Alerts, BadRuleFileIsRefusedWithFileAndLineAndTheLoadedRulesKeepRunning) {
  Agent agent;
  const std::string rules = agent.dir / "mine.yml";
  WriteFile(
      rules,
      "groups:\n  - name: mine\n    rules:\n      - alert: AlwaysOn\n        expr: vector(1)\n"
      "        labels: {severity: info, layer: device}\n");
  WriteFile(agent.dir / "gpuwarden.yaml",
            "rules:\n  evaluation_interval: 15s\n  files: [" + rules + "]\n");
  // POST /-/reload is a lifecycle endpoint: opt-in (tests/integration/http_hardening_test.cpp
  // checks the 403 without the flag).
  agent.process = std::make_unique<AgentProcess>(
      std::vector<std::string>{"--simulate", "demo", "--sim-clock", "stepped", "--config",
                               agent.dir / "gpuwarden.yaml", "--web.enable-lifecycle"});
  ASSERT_NE(agent.process->port(), 0);
  agent.Advance(60);
  ASSERT_EQ(agent.Alerts("firing").count("AlwaysOn"), 1u) << agent.process->Log();

  // Broken: an expression that does not parse on line 5.
  WriteFile(
      rules,
      "groups:\n  - name: mine\n    rules:\n      - alert: AlwaysOn\n        expr: vector(1\n");
  HttpReply r = HttpPost(agent.process->port(), "/-/reload");
  EXPECT_EQ(r.status, 500);
  EXPECT_NE(r.body.find(rules + ":5"), std::string::npos) << r.body;
  EXPECT_NE(agent.process->Log().find(rules + ":5"), std::string::npos);
  agent.Advance(60);
  EXPECT_EQ(agent.Alerts("firing").count("AlwaysOn"), 1u);  // the old rules still run
  auto samples = ParseExposition(agent.process->Get("/metrics").body);
  EXPECT_EQ(Value(samples, "gpuwarden_rules_config_last_reload_successful"), 0);

  // Fixed, and reloaded by SIGHUP this time: a new rule appears.
  WriteFile(rules,
            "groups:\n  - name: mine\n    rules:\n      - alert: AlsoOn\n        expr: vector(2)\n"
            "        labels: {severity: info, layer: device}\n");
  kill(agent.process->process().pid(), SIGHUP);
  EXPECT_TRUE(WaitFor(
      [&] {
        return Value(ParseExposition(agent.process->Get("/metrics").body),
                     "gpuwarden_rules_config_last_reload_successful") == 1;
      },
      10));
  agent.Advance(60);
  auto firing = agent.Alerts("firing");
  EXPECT_EQ(firing.count("AlsoOn"), 1u);
  EXPECT_EQ(firing.count("AlwaysOn"), 0u);

  // /api/v1/rules in Prometheus' shape.
  json rules_api = json::parse(agent.process->Get("/api/v1/rules?type=alert").body);
  EXPECT_EQ(rules_api["status"], "success");
  bool found = false;
  for (const json& g : rules_api["data"]["groups"])
    for (const json& rule : g["rules"])
      if (rule.value("name", "") == "AlsoOn") found = rule.value("type", "") == "alerting";
  EXPECT_TRUE(found) << rules_api.dump();
}

}  // namespace
}  // namespace gw::testing
