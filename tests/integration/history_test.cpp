// The agent's history as users meet it: recorded while serving, durable across kill -9, read by
// real clients (promtool) through the Prometheus API, with Prometheus' errors for bad queries.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/agent_process.h"

namespace gw::testing {
namespace {

using nlohmann::json;

json Query(const AgentProcess& agent, const std::string& path) {
  HttpReply r = agent.Get(path);
  try {
    json j = json::parse(r.body);
    j["http_status"] = r.status;
    return j;
  } catch (...) {
    return json{{"http_status", r.status}, {"body", r.body}};
  }
}

double OneValue(const json& reply) {
  const auto& result = reply["data"]["result"];
  if (result.size() != 1) return std::nan("");
  return std::stod(result[0]["value"][1].get<std::string>());
}

TEST(History, EveryCommittedSampleSurvivesKill9AndATornWalTailIsReported) {
  TempDir dir;
  const std::string data = dir / "data";
  double recorded = 0;
  std::string last_time;
  {
    AgentProcess agent({"--simulate", "demo", "--sim-clock", "stepped", "--interval", "2s",
                        "--slow-interval", "10s", "--data-dir", data});
    ASSERT_NE(agent.port(), 0);
    // One snapshot per step; wait for the recorder each time so none is skipped.
    for (int i = 1; i <= 12; ++i) {
      agent.Advance(2);
      ASSERT_TRUE(WaitFor(
          [&] {
            return Value(ParseExposition(agent.Get("/metrics").body),
                         "gpuwarden_recorder_snapshots_recorded_total") >= i + 1;
          },
          30));
    }
    json r =
        Query(agent, "/api/v1/query?query=" + UrlEncode("count_over_time(gpu_up{gpu=\"0\"}[2h])") +
                         "&time=" + std::to_string(time(nullptr) + 3600));
    recorded = OneValue(r);
    ASSERT_EQ(recorded, 13) << r.dump();   // t = 0, 2, ..., 24 s
    kill(agent.process().pid(), SIGKILL);  // no flush, no goodbye
    agent.process().Wait(10);
  }
  // Tear the tail of the newest WAL segment, as a crash in the middle of a write would.
  std::filesystem::path newest;
  for (const auto& e : std::filesystem::directory_iterator(data + "/wal"))
    if (e.is_regular_file() && std::filesystem::file_size(e.path()) > 0 &&
        (newest.empty() || e.path().filename() > newest.filename()))
      newest = e.path();
  ASSERT_FALSE(newest.empty());
  auto size = std::filesystem::file_size(newest);
  {
    // Append half a record of garbage: everything before it must still be read.
    std::FILE* f = std::fopen(newest.c_str(), "ab");
    const char garbage[7] = {1, 2, 3, 4, 5, 6, 7};
    std::fwrite(garbage, 1, sizeof garbage, f);
    std::fclose(f);
  }
  ASSERT_GT(std::filesystem::file_size(newest), size);

  AgentProcess again({"--nvml-lib", "/nonexistent/libnvml.so", "--data-dir", data});
  ASSERT_NE(again.port(), 0);
  json r =
      Query(again, "/api/v1/query?query=" + UrlEncode("count_over_time(gpu_up{gpu=\"0\"}[2h])") +
                       "&time=" + std::to_string(time(nullptr) + 3600));
  EXPECT_EQ(OneValue(r), recorded) << r.dump();
  auto samples = ParseExposition(again.Get("/metrics").body);
  EXPECT_GE(Value(samples, "gpuwarden_tsdb_wal_corruptions_total"), 1);
  EXPECT_NE(again.Log().find("truncated record"), std::string::npos) << again.Log();
}

TEST(History, PromtoolQueriesTheAgent) {
  AgentProcess agent({"--simulate", "demo", "--sim-clock", "stepped"});
  ASSERT_NE(agent.port(), 0);
  agent.Advance(30);
  ASSERT_TRUE(WaitFor(
      [&] {
        return Value(ParseExposition(agent.Get("/metrics").body),
                     "gpuwarden_recorder_snapshots_recorded_total") >= 2;
      },
      30));
  const std::string url = "http://127.0.0.1:" + std::to_string(agent.port());
  std::string out;
  // The simulated clock started about now; look a little ahead so every sample is in range.
  const std::string when = std::to_string(time(nullptr) + 60);
  ASSERT_EQ(RunCommand({"promtool", "query", "instant", "--time", when, url,
                        "count(last_over_time(gpu_up[5m]))"},
                       &out),
            0)
      << out;
  EXPECT_NE(out.find("=> 8 @"), std::string::npos) << out;
  ASSERT_EQ(RunCommand({"promtool", "query", "range", "--start", std::to_string(time(nullptr) - 60),
                        "--end", when, "--step", "15s", url, "max(gpu_temperature_celsius)"},
                       &out),
            0)
      << out;
  EXPECT_NE(out.find("=>"), std::string::npos) << out;
  ASSERT_EQ(RunCommand({"promtool", "query", "labels", url, "gpu"}, &out), 0) << out;
  EXPECT_NE(out.find("7"), std::string::npos) << out;
}

TEST(History, BadQueriesAreRefusedAsPrometheusRefusesThem) {
  AgentProcess agent({"--nvml-lib", "/nonexistent/libnvml.so"});
  ASSERT_NE(agent.port(), 0);
  json r = Query(agent, "/api/v1/query?query=" + UrlEncode("sum(gpu_up"));
  EXPECT_EQ(r["http_status"], 400);
  EXPECT_EQ(r["errorType"], "bad_data");
  EXPECT_NE(r["error"].get<std::string>().find("parse error"), std::string::npos) << r.dump();
  r = Query(agent, "/api/v1/query_range?query=up&start=0&end=11001&step=1");
  EXPECT_EQ(r["http_status"], 400);
  EXPECT_NE(r["error"].get<std::string>().find("exceeded maximum resolution of 11,000 points"),
            std::string::npos)
      << r.dump();
  r = Query(agent, "/api/v1/query_range?query=up&start=10&end=0&step=1");
  EXPECT_EQ(r["errorType"], "bad_data");
  r = Query(agent, "/api/v1/query_range?query=up&start=0&end=10&step=0");
  EXPECT_NE(r["error"].get<std::string>().find("zero or negative query resolution step"),
            std::string::npos);
  r = Query(agent, "/api/v1/query?query=up&time=yesterday");
  EXPECT_EQ(r["error"],
            "invalid parameter \"time\": cannot parse \"yesterday\" to a valid timestamp");
  r = Query(agent, "/api/v1/query_range?query=" + UrlEncode("up[5m]") + "&start=0&end=10&step=1");
  EXPECT_EQ(r["errorType"], "bad_data");
  EXPECT_NE(r["error"].get<std::string>().find("invalid expression type \"range vector\""),
            std::string::npos)
      << r.dump();
  // A slow query is cut off by its timeout like Prometheus does (503 timeout).
  r = Query(agent,
            "/api/v1/query_range?query=" + UrlEncode("max_over_time(sum(rate(up[5m]))[1d:1s])") +
                "&start=0&end=86400&step=60&timeout=1ms");
  EXPECT_EQ(r["http_status"], 503) << r.dump();
  EXPECT_EQ(r["errorType"], "timeout") << r.dump();
  r = Query(agent, "/api/v1/series");
  EXPECT_EQ(r["error"], "no match[] parameter provided");
  r = Query(agent, "/api/v1/status/buildinfo");
  EXPECT_EQ(r["status"], "success");
}

}  // namespace
}  // namespace gw::testing
