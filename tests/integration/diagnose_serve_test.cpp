// Findings and reports as users meet them: a real `serve` over a stepped power-cap scenario answers
// GET /api/gw/v1/findings and `gpuwarden diagnose --url`; after it stops, `gpuwarden diagnose` and
// `gpuwarden report` read the same data directory offline.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/agent_process.h"

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

    const std::string url = "http://127.0.0.1:" + std::to_string(agent.port());
    std::string out;
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

}  // namespace
}  // namespace gw::testing
