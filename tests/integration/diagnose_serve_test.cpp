// Findings and reports as users meet them: a real `serve` over a stepped power-cap scenario answers
// GET /api/gw/v1/findings and `gpuwarden diagnose --url`; after it stops, `gpuwarden diagnose` and
// `gpuwarden report` read the same data directory offline.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "support/agent_process.h"
#include "support/metrics_doc.h"

namespace gw::testing {
namespace {

using nlohmann::json;

bool HasFinding(const json& findings, const std::string& kind, const std::string& cause,
                const std::string& gpu) {
  for (const json& f : findings)
    if (f["kind"] == kind && f["cause"] == cause && f["subject"].value("gpu", "") == gpu)
      return true;
  return false;
}

// The agent's findings as the API has them, and the `gpuwarden_finding*` families of its /metrics,
// read at the same evaluation (the cache does not change while simulated time stands still).
struct Exported {
  json api;                                 // data of GET /api/gw/v1/findings
  std::vector<Sample> metrics;              // every sample of /metrics
  double last_evaluation_s = std::nan("");  // gpuwarden_diagnose_last_evaluation_timestamp_seconds
};

Exported ReadExported(const AgentProcess& agent) {
  Exported e;
  HttpReply r = agent.Get("/api/gw/v1/findings");
  EXPECT_EQ(r.status, 200) << r.body;
  e.api = json::parse(r.body)["data"];
  HttpReply m = agent.Get("/metrics");
  EXPECT_EQ(m.status, 200);
  e.metrics = ParseExposition(m.body);
  e.last_evaluation_s = Value(e.metrics, "gpuwarden_diagnose_last_evaluation_timestamp_seconds");
  return e;
}

// Advances a stepped agent a minute at a time (at most `minutes`) until its latest evaluation is
// at or after `t_s` and `ready` holds for what it exports; returns what it exports then.
Exported AdvanceUntil(AgentProcess& agent, double t_s, int minutes,
                      const std::function<bool(const Exported&)>& ready) {
  Exported e = ReadExported(agent);
  for (int i = 0; i < minutes && !(e.last_evaluation_s >= t_s && ready(e)); ++i) {
    agent.Advance(60);
    e = ReadExported(agent);
  }
  return e;
}

// Every active finding of the API is one gpuwarden_finding_active series with its labels, nothing
// else is, and gpuwarden_findings counts them by kind, layer and severity.
void ExpectMetricsMatchApi(const Exported& e) {
  std::map<std::string, json> active;
  std::map<std::string, double> counts;  // "kind/layer/severity"
  for (const json& f : e.api["findings"]) {
    if (!f["active"].get<bool>()) continue;
    active[f["id"].get<std::string>()] = f;
    counts[f["kind"].get<std::string>() + "/" + f["layer"].get<std::string>() + "/" +
           f["severity"].get<std::string>()] += 1;
  }
  size_t series = 0;
  for (const Sample& s : e.metrics) {
    if (s.name == "gpuwarden_findings") {
      auto it = counts.find(s.labels.at("kind") + "/" + s.labels.at("layer") + "/" +
                            s.labels.at("severity"));
      EXPECT_EQ(s.value, it == counts.end() ? 0.0 : it->second)
          << s.labels.at("kind") << " " << s.labels.at("severity");
      continue;
    }
    if (s.name != "gpuwarden_finding_active") continue;
    ++series;
    EXPECT_EQ(s.value, 1);
    auto it = active.find(s.labels.count("id") ? s.labels.at("id") : "");
    ASSERT_NE(it, active.end()) << "not active in the API: " << s.labels.at("id");
    const json& f = it->second;
    auto label = [&s](const char* name) {
      auto l = s.labels.find(name);
      return l == s.labels.end() ? std::string() : l->second;
    };
    EXPECT_EQ(label("kind"), f["kind"]);
    EXPECT_EQ(label("cause"), f["cause"]);
    EXPECT_EQ(label("layer"), f["layer"]);
    EXPECT_EQ(label("severity"), f["severity"]);
    EXPECT_EQ(label("gpu"), f["subject"].value("gpu", ""));
    EXPECT_EQ(label("uuid"), f["subject"].value("uuid", ""));
    EXPECT_EQ(label("job_id"), f["subject"].value("job", ""));
    EXPECT_EQ(label("team"), f["subject"].value("team", ""));
    EXPECT_EQ(label("partition"), f["subject"].value("partition", ""));
    EXPECT_EQ(label("target"), f["subject"].value("target", ""));
  }
  EXPECT_EQ(series, active.size());
}

TEST(DiagnoseServe, FindingsFromTheAgentAndOfflineAndAReport) {
  TempDir dir;
  const std::string data = dir / "data";
  std::string end;  // the time of the last snapshot (a stepped clock starts at the wall clock)
  {
    AgentProcess agent({"--simulate", "power-cap", "--sim-clock", "stepped", "--interval", "15s",
                        "--slow-interval", "15s", "--data-dir", data});
    ASSERT_NE(agent.port(), 0);
    HttpReply advanced = HttpPost(agent.port(), "/-/sim/advance?seconds=600");
    ASSERT_EQ(advanced.status, 200) << advanced.body;
    end = std::to_string(
        static_cast<long long>(json::parse(advanced.body)["taken_at"].get<double>()));
    HttpReply r = agent.Get("/api/gw/v1/findings");
    ASSERT_EQ(r.status, 200) << r.body;
    json j = json::parse(r.body);
    EXPECT_EQ(j["status"], "success");
    EXPECT_TRUE(HasFinding(j["data"]["findings"], "busy-but-throttled", "power cap", "0"))
        << j.dump(1);
    EXPECT_FALSE(HasFinding(j["data"]["findings"], "busy-but-throttled", "power cap", "1"));
    r = agent.Get("/api/gw/v1/findings?gpu=1");
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_TRUE(json::parse(r.body)["data"]["findings"].empty()) << r.body;
    r = agent.Get("/api/gw/v1/findings?since=10m&time=" + end);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_TRUE(
        HasFinding(json::parse(r.body)["data"]["findings"], "busy-but-throttled", "power cap", "0"))
        << r.body;
    r = agent.Get("/api/gw/v1/findings?since=soon");
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(json::parse(r.body)["errorType"], "bad_data") << r.body;

    // The same evaluation on /metrics: the findings, their counts, and the evaluation itself.
    const double end_s = std::stod(end);
    Exported e = AdvanceUntil(agent, end_s - 60, 5, [](const Exported& x) {
      return HasFinding(x.api["findings"], "busy-but-throttled", "power cap", "0");
    });
    EXPECT_GE(e.last_evaluation_s, end_s - 60);
    EXPECT_TRUE(HasFinding(e.api["findings"], "busy-but-throttled", "power cap", "0"));
    ExpectMetricsMatchApi(e);
    EXPECT_EQ(Value(e.metrics, "gpuwarden_finding_active",
                    {{"kind", "busy-but-throttled"}, {"cause", "power cap"}, {"gpu", "0"}}),
              1);
    EXPECT_EQ(Value(e.metrics, "gpuwarden_diagnose_errors_total"), 0);
    EXPECT_GE(Value(e.metrics, "gpuwarden_diagnose_evaluations_total"), 10);
    EXPECT_GE(Value(e.metrics, "gpuwarden_diagnose_duration_seconds"), 0);
    const std::string text = agent.Get("/metrics").body;
    for (const std::string& family : DocumentedFamilies("## Findings"))
      EXPECT_TRUE(HasSampleOf(text, family)) << family << " documented but not exported";
    // ... and in the agent's store, where its own rules read it.
    r = agent.Get("/api/v1/query?query=" +
                  std::string("gpuwarden_finding_active%7Bkind%3D%22busy-but-throttled%22%7D") +
                  "&time=" + std::to_string(static_cast<long long>(e.last_evaluation_s)));
    ASSERT_EQ(r.status, 200) << r.body;
    json stored = json::parse(r.body)["data"]["result"];
    ASSERT_EQ(stored.size(), 1u) << r.body;
    EXPECT_EQ(stored[0]["metric"]["gpu"], "0");
    EXPECT_EQ(stored[0]["metric"]["cause"], "power cap");

    const std::string url = "http://127.0.0.1:" + std::to_string(agent.port());
    std::string out;
    // The report from the running agent, which holds the data directory.
    const std::string remote_html = dir / "remote.html";
    ASSERT_EQ(RunCommand({GpuwardenBinary(), "report", "--url", url, "--period", "10m", "--out",
                          remote_html},
                         &out),
              0)
        << out;
    const std::string remote = ReadFile(remote_html);
    EXPECT_EQ(remote.rfind("<!DOCTYPE html>", 0), 0u) << remote.substr(0, 200);
    EXPECT_NE(remote.find("power cap"), std::string::npos);
    ASSERT_EQ(
        RunCommand({GpuwardenBinary(), "report", "--url", url, "--period", "10m", "--json"}, &out),
        0)
        << out;
    EXPECT_NE(out.find("\"capacity\""), std::string::npos) << out;
    EXPECT_EQ(
        RunCommand({GpuwardenBinary(), "report", "--url", url, "--period", "10m", "--time", "1"},
                   &out),
        0)
        << out;  // an empty period still renders; what is missing is said in the notes
    r = agent.Get("/api/gw/v1/report?period=1m");
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_NE(r.body.find("at least 10m"), std::string::npos) << r.body;
    ASSERT_EQ(RunCommand({GpuwardenBinary(), "diagnose", "--url", url}, &out), 0) << out;
    EXPECT_NE(out.find("DEVICE LAYER"), std::string::npos) << out;
    EXPECT_NE(out.find("power cap"), std::string::npos) << out;
    ASSERT_EQ(
        RunCommand({GpuwardenBinary(), "diagnose", "--url", url, "--gpu", "0", "--json"}, &out), 0)
        << out;
    EXPECT_NE(out.find("\"busy-but-throttled\""), std::string::npos) << out;
    EXPECT_EQ(agent.process().Stop(), 0) << agent.Log();
  }
  std::string out;
  ASSERT_EQ(RunCommand({GpuwardenBinary(), "diagnose", "--data-dir", data, "--time", end, "--since",
                        "10m", "--json"},
                       &out),
            0)
      << out;
  const size_t brace = out.find('{');
  ASSERT_NE(brace, std::string::npos) << out;
  json offline = json::parse(out.substr(brace));
  EXPECT_TRUE(HasFinding(offline["data"]["findings"], "busy-but-throttled", "power cap", "0"))
      << out;
  const std::string html = dir / "report.html";
  ASSERT_EQ(RunCommand({GpuwardenBinary(), "report", "--data-dir", data, "--time", end, "--period",
                        "10m", "--out", html},
                       &out),
            0)
      << out;
  const std::string page = ReadFile(html);
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page.find("<svg"), std::string::npos);
  EXPECT_NE(page.find("power cap"), std::string::npos);
  ASSERT_EQ(RunCommand({GpuwardenBinary(), "report", "--data-dir", data, "--time", end, "--period",
                        "10m", "--json"},
                       &out),
            0)
      << out;
  EXPECT_NE(out.find("\"capacity\""), std::string::npos) << out;
  // Bad arguments: exit 2 with a message.
  EXPECT_EQ(
      RunCommand({GpuwardenBinary(), "diagnose", "--data-dir", data, "--gpu", "0", "--job", "1"},
                 &out),
      2);
  EXPECT_NE(out.find("exclude each other"), std::string::npos) << out;
  EXPECT_EQ(RunCommand({GpuwardenBinary(), "report", "--data-dir", data, "--period", "soon"}, &out),
            2);
}

// diagnose.thresholds from the configuration file reach serve's evaluation, /metrics and the
// offline `gpuwarden diagnose`: raising busy_utilization above the scenario's 85 % makes GPU 0's
// busy-but-throttled (found with the defaults, above) disappear; widening thermal_margin_c to
// 100 °C puts every GPU near its thermal limit.
TEST(DiagnoseServe, ThresholdsFromTheConfiguration) {
  TempDir dir;
  const std::string data = dir / "data", config = dir / "gpuwarden.yaml";
  WriteFile(config,
            "diagnose:\n  interval: 2m\n  thresholds:\n    busy_utilization: 0.95\n"
            "    thermal_margin_c: 100\n");
  std::string end;
  {
    AgentProcess agent({"--config", config, "--simulate", "power-cap", "--sim-clock", "stepped",
                        "--interval", "15s", "--slow-interval", "15s", "--data-dir", data});
    ASSERT_NE(agent.port(), 0);
    HttpReply advanced = HttpPost(agent.port(), "/-/sim/advance?seconds=600");
    ASSERT_EQ(advanced.status, 200) << advanced.body;
    const double taken = json::parse(advanced.body)["taken_at"].get<double>();
    end = std::to_string(static_cast<long long>(taken));
    const size_t gpus = json::parse(agent.Get("/api/snapshot").body)["gpus"].size();
    ASSERT_EQ(gpus, 2u);
    auto near_thermal_everywhere = [gpus](const Exported& x) {
      size_t n = 0;
      for (const json& f : x.api["findings"])
        if (f["kind"] == "near-thermal-limit" && f["active"].get<bool>()) ++n;
      return n == gpus;
    };
    Exported e = AdvanceUntil(agent, taken - 120, 6, near_thermal_everywhere);
    ASSERT_TRUE(near_thermal_everywhere(e)) << e.api.dump(1);
    EXPECT_GE(e.last_evaluation_s, taken - 120);
    for (const json& f : e.api["findings"]) EXPECT_NE(f["kind"], "busy-but-throttled") << f.dump(1);
    ExpectMetricsMatchApi(e);
    EXPECT_EQ(
        Value(e.metrics, "gpuwarden_findings",
              {{"kind", "near-thermal-limit"}, {"layer", "device"}, {"severity", "info"}}) +
            Value(e.metrics, "gpuwarden_findings",
                  {{"kind", "near-thermal-limit"}, {"layer", "device"}, {"severity", "warning"}}),
        static_cast<double>(gpus));
    for (const char* severity : {"critical", "warning", "info"})
      EXPECT_EQ(Value(e.metrics, "gpuwarden_findings",
                      {{"kind", "busy-but-throttled"}, {"severity", severity}}),
                0);
    // diagnose.interval 2m: evaluations 2 minutes of recorded time apart, the first at the start.
    const double evaluations = Value(e.metrics, "gpuwarden_diagnose_evaluations_total");
    agent.Advance(60);
    Exported later = ReadExported(agent);
    const double after_one = Value(later.metrics, "gpuwarden_diagnose_evaluations_total");
    agent.Advance(60);
    later = ReadExported(agent);
    const double after_two = Value(later.metrics, "gpuwarden_diagnose_evaluations_total");
    EXPECT_EQ(after_two - evaluations, 1) << evaluations << " " << after_one << " " << after_two;
    EXPECT_EQ(agent.process().Stop(), 0) << agent.Log();
  }
  // Offline: the same thresholds from --config, and the defaults without it.
  auto offline = [&](bool with_config) {
    std::vector<std::string> argv = {GpuwardenBinary(), "diagnose", "--data-dir", data,
                                     "--time",          end,        "--since",    "10m",
                                     "--json"};
    if (with_config) argv.insert(argv.end(), {"--config", config});
    std::string out;
    EXPECT_EQ(RunCommand(argv, &out), 0) << out;
    const size_t brace = out.find('{');
    return brace == std::string::npos ? json() : json::parse(out.substr(brace))["data"];
  };
  json configured = offline(true), defaults = offline(false);
  EXPECT_FALSE(HasFinding(configured["findings"], "busy-but-throttled", "power cap", "0"))
      << configured.dump(1);
  EXPECT_TRUE(HasFinding(configured["findings"], "near-thermal-limit", "", "1"))
      << configured.dump(1);
  EXPECT_TRUE(HasFinding(defaults["findings"], "busy-but-throttled", "power cap", "0"))
      << defaults.dump(1);
  EXPECT_FALSE(HasFinding(defaults["findings"], "near-thermal-limit", "", "1")) << defaults.dump(1);
  // A threshold out of range: refused with the file and line, exit 2.
  WriteFile(config, "diagnose:\n  thresholds:\n    throttled_share: 1.5\n");
  std::string out;
  EXPECT_EQ(
      RunCommand({GpuwardenBinary(), "diagnose", "--data-dir", data, "--config", config}, &out), 2);
  EXPECT_NE(out.find(config + ":3: diagnose.thresholds.throttled_share: expected a ratio 0-1"),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace gw::testing
