// The task layer end to end: `gpuwarden serve` on a simulated fleet whose GPUs are driven by real
// child processes (scenario `host_processes: true`, GPUWARDEN_SIM_WORKLOAD), a process naming its
// job with GPUWARDEN_JOB / GPUWARDEN_TEAM, and a stand-in squeue (no Slurm needed) for the
// scheduler's figures. Checks: attribution and per-job figures on /metrics, every family of
// docs/metrics.md's "Task layer" section exported, the record once the process exits, the jobs API
// and `gpuwarden jobs`, and a secret planted in the process' environment appearing nowhere.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "support/agent_process.h"
#include "support/metrics_doc.h"

namespace gw::testing {
namespace {

using nlohmann::json;

constexpr const char* kSecret = "sk-live-7Qd9XHUNTER2-planted-secret-do-not-export";

// squeue --json as Slurm 22.05 writes it: job 11 runs here on GPU 0, job 13 finished here, job 12
// waits. Times around `now` (the stepped simulator starts at the wall clock).
std::string Squeue(long now, const std::string& node) {
  auto t = [now](long d) { return std::to_string(now + d); };
  return R"js({"meta": {}, "errors": [], "jobs": [
  {"job_id": 11, "name": "train", "job_state": "RUNNING", "user_name": "alice", "account": "physics",
   "partition": "gpu", "nodes": ")js" +
         node + R"js(", "submit_time": )js" + t(-300) + R"js(, "eligible_time": )js" + t(-200) +
         R"js(, "start_time": )js" + t(-100) + R"js(, "end_time": )js" + t(86400) +
         R"js(, "gres_detail": ["gpu:1(IDX:0)"], "tres_per_node": "gres:gpu:1"},
  {"job_id": 12, "name": "wait", "job_state": "PENDING", "state_reason": "Resources",
   "user_name": "bob", "account": "bio", "partition": "gpu", "nodes": "", "submit_time": )js" +
         t(-50) + R"js(, "eligible_time": )js" + t(-50) +
         R"js(, "start_time": 0, "end_time": 0, "gres_detail": []},
  {"job_id": 13, "name": "done", "job_state": "COMPLETED", "user_name": "carol", "account": "ml",
   "partition": "debug", "nodes": ")js" +
         node + R"js(", "submit_time": )js" + t(-2000) + R"js(, "eligible_time": )js" + t(-2000) +
         R"js(, "start_time": )js" + t(-1900) + R"js(, "end_time": )js" + t(-400) +
         R"js(, "exit_code": 0, "gres_detail": ["gpu:1(IDX:0)"], "tres_per_node": "gres:gpu:1"}
  ]})js";
}

std::string ReadTree(const std::string& dir) {
  std::string all;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file()) all += ReadFile(e.path().string());
  return all;
}

TEST(JobsServe, ProcessJobsAndStandInSlurmEndToEnd) {
  TempDir dir;
  WriteFile(dir / "host.yaml",
            "name: jobs-host\nclock: stepped\nhost_processes: true\nhost_scan_interval: 50ms\n"
            "gpus:\n  - model: A100-80GB\n    count: 2\n");
  const long now = static_cast<long>(std::time(nullptr));
  WriteFile(dir / "answer.json", Squeue(now, ShortHost()));
  const std::string squeue = dir / "squeue";
  WriteFile(squeue, "#!/bin/sh\ncat '" + (dir / "answer.json") + "'\n");
  chmod(squeue.c_str(), 0755);
  WriteFile(dir / "gpuwarden.yaml", "jobs:\n  scheduler: slurm\n  squeue_command: [" + squeue +
                                        ", --json]\n  poll_interval: 200ms\n  idle_window: 1m\n"
                                        "teams:\n  accounts: {physics: sim}\n");
  AgentProcess agent({"--simulate", dir / "host.yaml", "--sim-clock", "stepped", "--config",
                      dir / "gpuwarden.yaml", "--data-dir", dir / "data"});
  ASSERT_NE(agent.port(), 0);

  Process job(
      {"env", "GPUWARDEN_SIM_WORKLOAD=training", "CUDA_VISIBLE_DEVICES=1", "GPUWARDEN_JOB=train-7",
       "GPUWARDEN_TEAM=vision", std::string("AWS_SECRET_ACCESS_KEY=") + kSecret, "sleep", "600"},
      dir / "job.log");
  ASSERT_TRUE(job.started());

  // The simulator sees the process on its next scan (real time), the collector lists it on its
  // next slow cycle (simulated time), the poller answers on its own thread.
  std::string metrics;
  ASSERT_TRUE(WaitFor(
      [&] {
        agent.Advance(10);
        metrics = agent.Get("/metrics").body;
        return metrics.find("job_id=\"train-7\",user=\"") != std::string::npos &&
               metrics.find("gpuwarden_slurm_up 1\n") != std::string::npos &&
               metrics.find("job_id=\"11\",user=\"alice\",team=\"sim\"") != std::string::npos;
      },
      60))
      << metrics << agent.Log();
  agent.Advance(60);
  metrics = agent.Get("/metrics").body;

  std::vector<Sample> samples = ParseExposition(metrics);
  auto find = [&samples](const std::string& name, const std::string& job_id,
                         const std::string& extra_key = "", const std::string& extra = "") {
    for (const Sample& s : samples)
      if (s.name == name && s.labels.count("job_id") && s.labels.at("job_id") == job_id &&
          (extra_key.empty() || s.labels.at(extra_key) == extra))
        return std::optional<Sample>(s);
    return std::optional<Sample>();
  };
  auto info = find("gpu_allocation_info", "train-7");
  ASSERT_TRUE(info) << metrics;
  EXPECT_EQ(info->labels.at("gpu"), "1");
  EXPECT_EQ(info->labels.at("team"), "vision");
  auto slurm_info = find("gpu_allocation_info", "11");
  ASSERT_TRUE(slurm_info);
  EXPECT_EQ(slurm_info->labels.at("gpu"), "0");
  EXPECT_EQ(slurm_info->labels.at("partition"), "gpu");
  // Per-job figures: a training workload on one GPU for over a simulated minute.
  auto gpu_seconds = find("gpu_job_gpu_seconds_total", "train-7");
  ASSERT_TRUE(gpu_seconds);
  EXPECT_GE(gpu_seconds->value, 60);
  auto util = find("gpu_job_sm_utilization_ratio", "train-7", "stat", "avg");
  ASSERT_TRUE(util);
  EXPECT_GT(util->value, 0.5);
  auto energy = find("gpu_job_energy_joules_total", "train-7");
  ASSERT_TRUE(energy);
  EXPECT_GT(energy->value, 60 * 100.0);  // an A100 training draws well over 100 W
  auto peak = find("gpu_job_memory_peak_bytes", "train-7");
  ASSERT_TRUE(peak);
  EXPECT_GE(peak->value, 30.0 * (1 << 30));  // training holds 30 GiB
  // Device series carry no job labels.
  for (const Sample& s : samples) {
    if (s.name.rfind("gpu_job_", 0) != 0 && s.name != "gpu_allocation_info") {
      EXPECT_EQ(s.labels.count("job_id"), 0u) << s.name;
    }
  }

  // Every family documented in the task-layer section is on /metrics, with samples.
  const std::vector<std::string> families = gw::testing::DocumentedFamilies("## Task layer");
  ASSERT_GE(families.size(), 20u);
  for (const std::string& f : families) {
    EXPECT_NE(metrics.find("# TYPE " + f + " "), std::string::npos) << f << " has no TYPE line";
    // The A100 has no GPM: per-job SM and tensor activity are absent, never 0.
    if (f == "gpu_job_sm_active_ratio" || f == "gpu_job_tensor_active_ratio") {
      EXPECT_FALSE(gw::testing::HasSampleOf(metrics, f)) << f << " without GPM";
      continue;
    }
    EXPECT_TRUE(gw::testing::HasSampleOf(metrics, f)) << f << " has no sample";
  }
  // And in OpenMetrics, counters without _total in the family name.
  const std::string om = agent.Get("/metrics", "application/openmetrics-text; version=1.0.0").body;
  EXPECT_NE(om.find("# TYPE gpu_job_gpu_seconds counter\n"), std::string::npos);
  EXPECT_NE(om.find("# TYPE gpu_job_run_seconds histogram\n"), std::string::npos);

  // The API while it runs.
  HttpReply running = agent.Get("/api/gw/v1/jobs?running=1");
  ASSERT_EQ(running.status, 200) << running.body;
  std::set<std::string> ids;
  const json running_jobs = json::parse(running.body)["data"]["jobs"];
  for (const json& j : running_jobs) ids.insert(j["job_id"].get<std::string>());
  EXPECT_EQ(ids, (std::set<std::string>{"11", "train-7"})) << running.body;
  HttpReply team = agent.Get("/api/gw/v1/jobs?team=vision&running=1");
  EXPECT_EQ(json::parse(team.body)["data"]["jobs"].size(), 1u);
  HttpReply unknown = agent.Get("/api/gw/v1/jobs/no-such-job");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(json::parse(unknown.body)["status"], "error");
  EXPECT_EQ(agent.Get("/api/gw/v1/jobs?since=soon").status, 400);

  // The process exits: its record is written (and job 13, which finished on this node).
  job.Stop();
  json record;
  ASSERT_TRUE(WaitFor(
      [&] {
        agent.Advance(10);
        HttpReply r = agent.Get("/api/gw/v1/jobs/train-7");
        if (r.status != 200) return false;
        record = json::parse(r.body)["data"];
        return record["state"] == "ENDED";
      },
      60))
      << record.dump() << agent.Log();
  EXPECT_EQ(record["team"], "vision");
  EXPECT_EQ(record["source"], "process");
  EXPECT_GE(record["gpu"]["gpu_seconds"].get<double>(), 60);
  const std::string records = ReadFile(dir / "data/jobs/jobs.jsonl");
  EXPECT_NE(records.find("\"train-7\""), std::string::npos);
  EXPECT_NE(records.find("\"13\""), std::string::npos);
  metrics = agent.Get("/metrics").body;
  EXPECT_EQ(metrics.find("job_id=\"train-7\""), std::string::npos);

  // `gpuwarden jobs` over the records, and over the API.
  std::string out;
  ASSERT_EQ(RunCommand({GpuwardenBinary(), "jobs", "--data-dir", dir / "data"}, &out), 0) << out;
  EXPECT_NE(out.find("train-7"), std::string::npos) << out;
  EXPECT_NE(out.find("ENDED"), std::string::npos) << out;
  ASSERT_EQ(RunCommand({GpuwardenBinary(), "jobs", "show", "train-7", "--json", "--data-dir",
                        dir / "data"},
                       &out),
            0)
      << out;
  EXPECT_EQ(json::parse(out)["team"], "vision");
  const std::string url = "http://127.0.0.1:" + std::to_string(agent.port());
  ASSERT_EQ(RunCommand({GpuwardenBinary(), "jobs", "--running", "--json", "--url", url}, &out), 0)
      << out;
  EXPECT_EQ(json::parse(out)["jobs"].size(), 1u) << out;  // job 11
  EXPECT_NE(RunCommand({GpuwardenBinary(), "jobs", "show", "nope", "--url", url}, &out), 0);

  // The planted secret is nowhere: metrics, API, log, data directory.
  const std::string everything =
      agent.Get("/metrics").body + om + agent.Get("/api/gw/v1/jobs").body +
      agent.Get("/api/gw/v1/jobs/train-7").body + agent.Get("/api/snapshot").body + agent.Log() +
      ReadTree(dir / "data");
  EXPECT_EQ(everything.find(kSecret), std::string::npos);
}

// The task-layer rules run in the agent: a job whose process holds a GPU without using it (the
// simulator's idle_allocated workload) for over 30 simulated minutes fires GpuJobHoldingGpusIdle
// in gpuwarden's own /api/v1/alerts, and the task-layer series answer PromQL from the store.
TEST(JobsServe, TaskLayerRulesFireInTheAgent) {
  TempDir dir;
  WriteFile(dir / "host.yaml",
            "name: idle-host\nclock: stepped\nhost_processes: true\nhost_scan_interval: 50ms\n"
            "gpus:\n  - model: A100-80GB\n    count: 2\n");
  WriteFile(dir / "gpuwarden.yaml", "jobs:\n  idle_window: 10m\n");
  AgentProcess agent({"--simulate", dir / "host.yaml", "--sim-clock", "stepped", "--config",
                      dir / "gpuwarden.yaml", "--data-dir", dir / "data"});
  ASSERT_NE(agent.port(), 0);
  Process job({"env", "GPUWARDEN_SIM_WORKLOAD=idle_allocated", "CUDA_VISIBLE_DEVICES=0",
               "GPUWARDEN_JOB=notebook-3", "GPUWARDEN_TEAM=vision", "sleep", "600"},
              dir / "job.log");
  ASSERT_TRUE(job.started());
  // Simulated time runs ahead of the wall clock: queries are made at the last snapshot's time.
  double now = 0;
  auto advance = [&agent, &now](double seconds) {
    HttpReply r = HttpPost(agent.port(), "/-/sim/advance?seconds=" + std::to_string(seconds));
    ASSERT_EQ(r.status, 200) << r.body;
    now = json::parse(r.body)["taken_at"].get<double>();
  };
  ASSERT_TRUE(WaitFor(
      [&] {
        advance(10);
        return agent.Get("/metrics").body.find("job_id=\"notebook-3\"") != std::string::npos;
      },
      60))
      << agent.Log();

  auto query = [&agent, &now](const std::string& promql) {
    HttpReply r =
        agent.Get("/api/v1/query?query=" + UrlEncode(promql) + "&time=" + std::to_string(now));
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body, nullptr, false);
  };
  json allocation = query("gpu_allocation_info{team=\"vision\"}");
  ASSERT_EQ(allocation["data"]["result"].size(), 1u) << allocation.dump();
  const json& labels = allocation["data"]["result"][0]["metric"];
  EXPECT_EQ(labels["job_id"], "notebook-3");
  EXPECT_EQ(labels["gpu"], "0");
  EXPECT_EQ(labels["team"], "vision");
  // Joined in PromQL with a device series, as docs/metrics.md shows.
  json joined = query("gpu_memory_used_bytes * on (gpu) group_left (job_id) gpu_allocation_info");
  ASSERT_EQ(joined["data"]["result"].size(), 1u) << joined.dump();
  EXPECT_EQ(joined["data"]["result"][0]["metric"]["job_id"], "notebook-3");

  auto alert_state = [&agent]() {
    json body = json::parse(agent.Get("/api/v1/alerts").body, nullptr, false);
    for (const json& a : body["data"]["alerts"])
      if (a["labels"].value("alertname", "") == "GpuJobHoldingGpusIdle") return a;
    return json();
  };
  // Not yet: idle for minutes only.
  for (int i = 0; i < 6; ++i) advance(300);  // 30 min
  EXPECT_TRUE(alert_state().is_null() || alert_state()["state"] != "firing")
      << alert_state().dump();
  for (int i = 0; i < 6; ++i) advance(60);  // 36 min: the streak passed 30 min over 2 m ago
  const json alert = alert_state();
  ASSERT_FALSE(alert.is_null()) << agent.Get("/api/v1/alerts").body << agent.Log();
  EXPECT_EQ(alert["state"], "firing");
  EXPECT_EQ(alert["labels"]["job_id"], "notebook-3");
  EXPECT_EQ(alert["labels"]["team"], "vision");
  EXPECT_EQ(alert["labels"]["layer"], "task");
  json idle = query("gpu_idle_allocated_gpus");
  ASSERT_EQ(idle["data"]["result"].size(), 1u);
  EXPECT_EQ(idle["data"]["result"][0]["value"][1], "1");

  // The job goes: its series go stale at once, and the alert resolves.
  job.Stop();
  ASSERT_TRUE(WaitFor(
      [&] {
        advance(10);
        return query("gpu_allocation_info")["data"]["result"].empty();
      },
      60));
  advance(60);
  const json after = alert_state();
  EXPECT_TRUE(after.is_null() || after["state"] != "firing") << after.dump();
}

}  // namespace
}  // namespace gw::testing
