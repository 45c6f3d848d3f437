// Deeply nested input against the real binary. Before the depth limits, each of these inputs
// crashed the process with a stack overflow: one unauthenticated POST /api/v1/query took the agent
// down, `rules check` exited by SIGSEGV, and a rule file holding such an expression crashed
// `serve` at every start.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "support/agent_process.h"

namespace gw::testing {
namespace {

using json = nlohmann::json;

std::string Repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// The attack inputs as measured on the old main.
std::vector<std::string> DeepQueries() {
  return {Repeat("(", 15000), Repeat("-", 40000) + "gpu_up", Repeat("abs(", 14000) + "gpu_up",
          "1" + Repeat("+1", 20000)};
}

TEST(DeepNesting, QueriesAreBadDataAndTheAgentKeepsServing) {
  AgentProcess agent({"--simulate", "demo", "--sim-clock", "stepped"});
  ASSERT_NE(agent.port(), 0);
  agent.Advance(5);
  httplib::Client client("127.0.0.1", agent.port());
  client.set_read_timeout(60);
  for (const std::string& q : DeepQueries()) {
    for (const char* path : {"/api/v1/query", "/api/v1/query_range"}) {
      httplib::Params params{{"query", q}, {"start", "1"}, {"end", "100"}, {"step", "10"}};
      auto res = client.Post(path, params);
      ASSERT_TRUE(res) << path << " " << q.substr(0, 20) << ": no answer (agent crashed?)\n"
                       << agent.Log();
      EXPECT_EQ(res->status, 400) << res->body.substr(0, 300);
      json body = json::parse(res->body, nullptr, false);
      ASSERT_TRUE(body.is_object()) << res->body.substr(0, 300);
      EXPECT_EQ(body["status"], "error");
      EXPECT_EQ(body["errorType"], "bad_data");
      EXPECT_NE(body["error"].get<std::string>().find("nested too deeply"), std::string::npos)
          << body["error"];
    }
  }
  EXPECT_TRUE(agent.process().Running());
  EXPECT_EQ(agent.Get("/healthz").status, 200);
  // An expression at the limit still answers.
  HttpReply ok =
      agent.Get("/api/v1/query?query=" + Repeat("abs(", 100) + "gpu_up" + Repeat(")", 100));
  EXPECT_EQ(ok.status, 200) << ok.body.substr(0, 300);
}

std::string RuleFile(const std::string& expr) {
  return "groups:\n  - name: deep\n    rules:\n      - record: fine\n        expr: vector(1)\n"
         "      - alert: TooDeep\n        expr: '" +
         expr + "'\n";
}

TEST(DeepNesting, RulesCheckNamesTheRuleInsteadOfCrashing) {
  TempDir dir;
  for (const std::string& q : DeepQueries()) {
    std::string file = dir / "deep.yml";
    WriteFile(file, RuleFile(q));
    std::string out;
    int code = RunCommand({GpuwardenBinary(), "rules", "check", file}, &out, 60);
    EXPECT_EQ(code, 1) << out.substr(0, 500);  // -1 would be a signal
    EXPECT_NE(out.find("TooDeep"), std::string::npos) << out.substr(0, 500);
    EXPECT_NE(out.find("nested too deeply"), std::string::npos) << out.substr(0, 500);
  }
  // A template nested past its limit, in an annotation.
  std::string file = dir / "deep_template.yml";
  WriteFile(file,
            "groups:\n  - name: deep\n    rules:\n      - alert: DeepTemplate\n"
            "        expr: vector(1)\n        annotations:\n          summary: '{{ " +
                Repeat("(", 20000) + " }}'\n");
  std::string out;
  int code = RunCommand({GpuwardenBinary(), "rules", "check", file}, &out, 60);
  EXPECT_EQ(code, 1) << out.substr(0, 500);
  EXPECT_NE(out.find("max expression depth exceeded"), std::string::npos) << out.substr(0, 500);
}

TEST(DeepNesting, ServeWithSuchARuleFileStartsAndSaysWhy) {
  TempDir dir;
  std::string rules = dir / "deep.yml";
  WriteFile(rules, RuleFile("1" + Repeat("+1", 20000)));
  std::string config = dir / "gpuwarden.yaml";
  WriteFile(config, "rules:\n  files: [" + rules + "]\n");
  AgentProcess agent({"--simulate", "demo", "--sim-clock", "stepped", "--config", config});
  ASSERT_NE(agent.port(), 0) << agent.Log();
  agent.Advance(5);
  EXPECT_TRUE(agent.process().Running());
  EXPECT_EQ(agent.Get("/healthz").status, 200);
  EXPECT_NE(agent.Log().find("nested too deeply"), std::string::npos) << agent.Log();
  auto samples = ParseExposition(agent.Get("/metrics").body);
  EXPECT_EQ(Value(samples, "gpuwarden_rules_config_last_reload_successful"), 0);
}

}  // namespace
}  // namespace gw::testing
