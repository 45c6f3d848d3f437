// The simulated demo (scripts/demo-sim.sh: what `bash scripts/demo.sh` runs where there is no
// GPU): within seconds every layer has data — the jobs and teams its host processes declare, cost
// and the team over its quota, the inference service scraped with a cost per 1k requests, the
// device series — and stopping the script stops everything it started and removes its scratch
// folder.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>

#include "support/http_client.h"
#include "support/process.h"

namespace gw::testing {
namespace {

using nlohmann::json;

// Processes whose environment holds every one of `needles` ("KEY=value").
std::vector<int> ProcessesWith(const std::vector<std::string>& needles) {
  std::vector<int> out;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return out;
  while (dirent* e = readdir(proc)) {
    const int pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    const std::string env = ReadFile(std::string("/proc/") + e->d_name + "/environ");
    bool all = !env.empty();
    for (const std::string& n : needles) {
      const std::string entry = n + '\0';
      if (env.find(entry) == std::string::npos && env.compare(0, n.size() + 1, entry) != 0)
        all = false;
    }
    if (all) out.push_back(pid);
  }
  closedir(proc);
  return out;
}

TEST(Demo, EveryLayerHasDataAndStoppingTheScriptStopsEverything) {
  TempDir dir;
  Process demo({"bash", std::string(GW_SOURCE_DIR) + "/scripts/demo-sim.sh", GW_BINARY_DIR,
                "--listen", "127.0.0.1:0", "--data-dir", dir / "data"},
               dir / "demo.log");
  int port = 0;
  const std::regex port_re(R"(\(port ([0-9]+)\))");
  ASSERT_TRUE(WaitFor(
      [&] {
        std::smatch m;
        const std::string out = demo.Output();
        if (std::regex_search(out, m, port_re)) port = std::stoi(m[1]);
        return port != 0 || !demo.Running();
      },
      60));
  ASSERT_NE(port, 0) << demo.Output();
  std::smatch work_m;
  const std::string started = demo.Output();
  ASSERT_TRUE(
      std::regex_search(started, work_m, std::regex(R"(reclaim policy: (\S+)/gpuwarden\.yaml)")))
      << started;
  const std::string work = work_m[1];

  // The task layer: three jobs with their teams and GPUs.
  json jobs;
  ASSERT_TRUE(WaitFor(
      [&] {
        HttpReply r = HttpGet(port, "/api/gw/v1/jobs?running=1");
        if (r.status != 200) return false;
        jobs = json::parse(r.body)["data"]["jobs"];
        return jobs.size() >= 3;
      },
      60))
      << jobs.dump() << demo.Output();
  std::map<std::string, std::string> team_of;
  for (const json& j : jobs) team_of[j["job_id"]] = j.value("team", "");
  EXPECT_EQ(team_of["llm-pretrain"], "research") << jobs.dump();
  EXPECT_EQ(team_of["llm-serving"], "product");
  EXPECT_EQ(team_of["notebook-alice"], "analytics");

  // The business layer: the service scraped, outputs counted, a cost per 1k requests.
  json llm;
  ASSERT_TRUE(WaitFor(
      [&] {
        HttpReply r = HttpGet(port, "/api/gw/v1/services");
        if (r.status != 200) return false;
        const json doc = json::parse(r.body);
        for (const json& s : doc["data"]["services"])
          if (s["target"] == "llm") llm = s;
        return llm.is_object() && !llm["cost_per_1k_outputs"].is_null();
      },
      60))
      << llm.dump() << demo.Output();
  EXPECT_GT(llm["outputs"].get<double>(), 0);
  EXPECT_GT(llm["cost_per_1k_outputs"].get<double>(), 0);

  // The training job's own counter, bound to llm-pretrain: its throughput on /metrics and in its
  // running record (what the console's job and team pages show) within the first minutes.
  json pretrain;
  ASSERT_TRUE(WaitFor(
      [&] {
        HttpReply r = HttpGet(port, "/api/gw/v1/jobs/llm-pretrain");
        if (r.status != 200) return false;
        pretrain = json::parse(r.body)["data"];
        return pretrain.contains("throughput") && pretrain["throughput"]["total"] > 0 &&
               HttpGet(port, "/metrics")
                       .body.find(
                           "gpu_job_training_throughput{job_id=\"llm-"
                           "pretrain\",team=\"research\",unit=\"tokens\"}") != std::string::npos;
      },
      90))
      << pretrain.dump() << demo.Output();
  EXPECT_EQ(pretrain["throughput"]["unit"], "tokens");

  // The platform layer: cost per team, research over its 3-GPU quota with 4.
  HttpReply teams = HttpGet(port, "/api/gw/v1/teams");
  ASSERT_EQ(teams.status, 200);
  bool research = false;
  const json teams_doc = json::parse(teams.body);
  for (const json& t : teams_doc["data"]["teams"]) {
    if (t["team"] != "research") continue;
    research = true;
    EXPECT_GT(t["cost"]["total_cost"].get<double>(), 0) << t.dump();
    EXPECT_TRUE(t["quota"]["over_quota"].get<bool>()) << t.dump();
  }
  EXPECT_TRUE(research) << teams.body;

  // The device layer and the console.
  const std::string metrics = HttpGet(port, "/metrics").body;
  EXPECT_NE(metrics.find("gpu_info{gpu=\"7\""), std::string::npos);
  EXPECT_EQ(HttpGet(port, "/").status, 200);

  // Stopping the script stops what it started (the job processes, the service, serve).
  const std::string machine =
      std::string("GPUWARDEN_SIM_MACHINE=") + getenv("GPUWARDEN_SIM_MACHINE");
  EXPECT_EQ(ProcessesWith({machine, "GPUWARDEN_JOB=llm-pretrain"}).size(), 1u);
  const int status = demo.Stop();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 143) << status << demo.Output();
  EXPECT_TRUE(ProcessesWith({machine, "GPUWARDEN_JOB=llm-pretrain"}).empty());
  EXPECT_TRUE(ProcessesWith({machine, "GPUWARDEN_JOB=llm-serving"}).empty());
  EXPECT_TRUE(ProcessesWith({machine, "GPUWARDEN_JOB=notebook-alice"}).empty());
  EXPECT_NE(HttpGet(port, "/-/healthy").status, 200);
  EXPECT_FALSE(std::filesystem::exists(work)) << work;
}

}  // namespace
}  // namespace gw::testing
