// Outcomes end to end (docs/jobs.md "Outcomes"): a real Slurm 22.05 + munge (tests/support/
// slurm.h; needs root) and `gpuwarden serve` on a simulated fleet of 8 V100s in host_processes
// mode, on the realtime clock at speed 1 (so Slurm's end times and the device events share a
// clock). Six jobs, each ending its own way:
//   completes  sleep 3                                         -> completed / none
//   fails      exit 3 by itself                                -> failed / user
//   falls-off  gw-training-sim on a GPU that falls off the bus (scenario fault at 100 s); the
//              run sees it through the simulator's state file and dies with a CUDA error
//                                                              -> failed / gpu_fault
//   oom        a memory_bound process (40 GiB) fills its 32 GiB GPU; gw-training-sim started
//              beside it fails with CUDA out of memory         -> failed / gpu_oom
//   forgotten  idle: our reclaim policy cancels it (idle 20 s, grace 10 s)
//                                                              -> reclaimed / scheduler
//   too-long   --time=1: Slurm's time limit                    -> timeout / scheduler
// The test node has as few CPUs as the machine (2): falls-off holds one, the other five run one
// after the other on the second, all started before the fault (checked), so that none starts on
// the lost GPU (a job placed on a GPU already lost would rightly count its loss).
// Each is counted in gpu_job_outcomes_total with the right labels, its record (API and
// jobs.jsonl) and `gpuwarden jobs show` (from the agent and from the disk) agree, the
// hardware-caused one raises GpuJobKilledByGpuFault in the agent, and the counter survives an agent
// restart (from the records; finished jobs squeue still lists are not counted twice).
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "support/agent_process.h"
#include "support/slurm.h"

namespace gw::testing {
namespace {

using nlohmann::json;

// The GPU index Slurm gave a running job ("GRES=gpu:1(IDX:3)" in scontrol -d); -1 if none.
int GpuOf(SlurmCluster& cluster, const std::string& id) {
  const std::string text = cluster.Run({"scontrol", "show", "job", "-d", id});
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(R"(IDX:([0-9]+))"))) return -1;
  return std::stoi(m[1]);
}

// Sum of the samples of `name` whose labels include `labels`; NaN if there is none.
double Sum(const std::vector<Sample>& samples, const std::string& name,
           const std::map<std::string, std::string>& labels) {
  double sum = 0;
  bool any = false;
  for (const Sample& s : samples) {
    if (s.name != name) continue;
    bool match = true;
    for (const auto& [k, v] : labels)
      if (!s.labels.count(k) || s.labels.at(k) != v) match = false;
    if (!match) continue;
    sum += s.value;
    any = true;
  }
  return any ? sum : std::nan("");
}

std::string TrainingSim() {
  return std::string(GW_BINARY_DIR) + "/bin/gw-training-sim";
}

class OutcomesSlurm : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (slurmd, mknod)";
    ASSERT_TRUE(cluster_.Start()) << cluster_.Log("slurmctld.log") << cluster_.Log("slurmd.log");
  }

  // 8 V100s (32 GiB: a memory_bound workload fills one); GPU `lost` falls off the bus at 100 s.
  void WriteFleet(int lost) {
    std::string fleet = "name: outcomes\nhost_processes: true\nhost_scan_interval: 100ms\ngpus:\n";
    if (lost > 0) fleet += "  - {model: V100, count: " + std::to_string(lost) + "}\n";
    fleet += "  - model: V100\n    faults:\n      - {type: fall_off_bus, at: 100s}\n";
    if (lost < 7) fleet += "  - {model: V100, count: " + std::to_string(7 - lost) + "}\n";
    WriteFile(dir_ / "fleet.yaml", fleet);
    WriteFile(dir_ / "gpuwarden.yaml",
              "collect:\n  interval: 250ms\n  slow_interval: 1s\n"
              "jobs:\n  scheduler: slurm\n  squeue_command: [env, SLURM_CONF=" +
                  cluster_.conf_path() +
                  ", squeue, --json]\n  poll_interval: 500ms\n  outcome_window: 2m\n"
                  "rules:\n  evaluation_interval: 1s\n"
                  "teams:\n  accounts: {physics: sim-team}\n"
                  "governance:\n  reclaim:\n"
                  "    - partition: gpu\n      idle_for: 20s\n      grace: 10s\n"
                  "      action: cancel\n      exempt: {comment_tag: 'gw:keep'}\n");
  }
  // Started and polling squeue.
  static bool ReadsSlurm(const AgentProcess& agent) {
    return agent.port() != 0 &&
           WaitFor(
               [&] {
                 return agent.Get("/metrics").body.find("gpuwarden_slurm_up 1\n") !=
                        std::string::npos;
               },
               30);
  }
  std::unique_ptr<AgentProcess> StartAgent() {
    return std::make_unique<AgentProcess>(std::vector<std::string>{
        "--simulate", dir_ / "fleet.yaml", "--sim-clock", "realtime", "--sim-speed", "1",
        "--config", dir_ / "gpuwarden.yaml", "--data-dir", dir_ / "data"});
  }
  std::string Submit(const std::vector<std::string>& options, const std::string& command) {
    std::string error;
    std::vector<std::string> all = {"-A", "physics"};
    all.insert(all.end(), options.begin(), options.end());
    std::string id = cluster_.Submit(all, command, &error);
    EXPECT_FALSE(id.empty()) << error;
    return id;
  }

  SlurmCluster cluster_{8};
  TempDir dir_;
};

TEST_F(OutcomesSlurm, EveryEndingClassifiedCountedRecordedAndTheHardwareOneAlerts) {
  // The training run whose GPU will fall off the bus goes first, so its GPU is known before the
  // fleet is. It follows its GPU through the simulator's state files (the agent's and the jobs'
  // environment name the directory).
  setenv("GPUWARDEN_SIM_STATE_DIR", (dir_ / "state").c_str(), 1);
  const std::string lost_job = Submit({"--gres=gpu:1", "-J", "falls-off"},
                                      TrainingSim() + " --duration 600 --memory-mib 8000");
  ASSERT_FALSE(lost_job.empty());
  ASSERT_TRUE(WaitFor([&] { return cluster_.JobState(lost_job) == "RUNNING"; }, 60))
      << cluster_.Log("slurmctld.log");
  const int lost_gpu = GpuOf(cluster_, lost_job);
  ASSERT_GE(lost_gpu, 0) << cluster_.Run({"scontrol", "show", "job", "-d", lost_job});
  ASSERT_LT(lost_gpu, 8);
  WriteFleet(lost_gpu);

  std::unique_ptr<AgentProcess> agent = StartAgent();
  ASSERT_TRUE(ReadsSlurm(*agent)) << agent->Log();

  const std::string completes = Submit({"--gres=gpu:1", "-J", "completes"}, "sleep 3");
  const std::string fails = Submit({"--gres=gpu:1", "-J", "fails"}, "sleep 2; exit 3");
  // Another process of the job fills the GPU first; the run then cannot get its 30 GiB.
  const std::string oom = Submit({"--gres=gpu:1", "-J", "oom"},
                                 "env GPUWARDEN_SIM_WORKLOAD=memory_bound sleep 60 & sleep 3; " +
                                     TrainingSim() + " --duration 60; rc=$?; kill $!; exit $rc");
  const std::string reclaimed = Submit({"--gres=gpu:1", "-J", "forgotten"}, "sleep 600");
  const std::string timeout =
      Submit({"--gres=gpu:1", "-J", "too-long", "--time=1", "--comment=gw:keep"}, "sleep 600");
  ASSERT_FALSE(completes.empty() || fails.empty() || oom.empty() || reclaimed.empty() ||
               timeout.empty());

  // The fault: the agent sees the GPU lost (and the run on it dies of it). By then every other
  // job has started (none may start on the lost GPU).
  ASSERT_TRUE(WaitFor(
      [&] {
        std::vector<Sample> s = ParseExposition(agent->Get("/metrics").body);
        return Value(s, "gpu_up", {{"gpu", std::to_string(lost_gpu)}}) == 0;
      },
      150))
      << agent->Log();
  const std::string too_long_state = cluster_.JobState(timeout);
  ASSERT_TRUE(too_long_state == "RUNNING" || too_long_state == "TIMEOUT" ||
              too_long_state == "COMPLETING")
      << too_long_state << " — the jobs took longer than the fault's 100 s";

  // Every job ends (the time limit last: a minute, plus Slurm's check every 30 s).
  const std::vector<std::string> ids = {completes, fails, lost_job, oom, reclaimed, timeout};
  std::map<std::string, json> by_id;
  ASSERT_TRUE(WaitFor(
      [&] {
        json jobs = json::parse(agent->Get("/api/gw/v1/jobs").body, nullptr, false);
        by_id.clear();
        if (!jobs.is_object()) return false;
        for (const json& r : jobs["data"]["jobs"])
          if (r["state"] != "RUNNING") by_id[r["job_id"].get<std::string>()] = r;
        for (const std::string& id : ids)
          if (!by_id.count(id)) return false;
        return true;
      },
      180))
      << agent->Get("/api/gw/v1/jobs").body << agent->Log() << cluster_.Log("slurmctld.log");

  struct Expected {
    std::string id, state, outcome, cause;
  };
  const std::vector<Expected> expected = {
      {completes, "COMPLETED", "completed", "none"},
      {fails, "FAILED", "failed", "user"},
      {lost_job, "FAILED", "failed", "gpu_fault"},
      {oom, "FAILED", "failed", "gpu_oom"},
      {reclaimed, "CANCELLED", "reclaimed", "scheduler"},
      {timeout, "TIMEOUT", "timeout", "scheduler"},
  };
  for (const Expected& e : expected) {
    const json& r = by_id[e.id];
    EXPECT_EQ(r["state"], e.state) << r.dump();
    ASSERT_TRUE(r.contains("outcome")) << r.dump();
    EXPECT_EQ(r["outcome"]["outcome"], e.outcome) << r.dump();
    EXPECT_EQ(r["outcome"]["cause"], e.cause) << r.dump();
    EXPECT_FALSE(r["outcome"]["summary"].get<std::string>().empty()) << r.dump();
  }

  // Exit statuses as the jobs' own (Slurm 22.05 reports wait statuses: 768 is exit 3).
  EXPECT_EQ(by_id[fails]["exit_code"], 3);
  EXPECT_EQ(by_id[lost_job]["exit_code"], 1);
  EXPECT_EQ(by_id[oom]["exit_code"], 1);
  EXPECT_NE(by_id[fails]["outcome"]["summary"].get<std::string>().find("exit code 3:"),
            std::string::npos);
  // The hardware one names the GPU and what happened to it, with the device's evidence.
  const json& lost = by_id[lost_job]["outcome"];
  const std::string summary = lost["summary"];
  EXPECT_NE(summary.find("GPU " + std::to_string(lost_gpu)), std::string::npos) << summary;
  EXPECT_TRUE(summary.find("XID 79") != std::string::npos ||
              summary.find("lost (fell off the bus)") != std::string::npos)
      << summary;
  bool device_evidence = false;
  for (const json& e : lost["evidence"])
    if ((e["kind"] == "xid" || e["kind"] == "gpu_lost") && e.value("gpu", -1) == lost_gpu)
      device_evidence = true;
  EXPECT_TRUE(device_evidence) << lost.dump();
  // The runs died as the simulated CUDA runtime told them (their own stderr), not otherwise.
  EXPECT_NE(ReadFile(cluster_.dir() + "/jobs/job-" + lost_job + ".out").find("GPU is lost"),
            std::string::npos)
      << ReadFile(cluster_.dir() + "/jobs/job-" + lost_job + ".out");
  EXPECT_NE(ReadFile(cluster_.dir() + "/jobs/job-" + oom + ".out").find("CUDA out of memory"),
            std::string::npos)
      << ReadFile(cluster_.dir() + "/jobs/job-" + oom + ".out");
  for (const Expected& e : expected)
    std::cout << e.id << " " << by_id[e.id]["outcome"]["outcome"].get<std::string>() << "/"
              << by_id[e.id]["outcome"]["cause"].get<std::string>() << ": "
              << by_id[e.id]["outcome"]["summary"].get<std::string>() << "\n";
  // The OOM one: full memory on its own GPU; the one that failed by itself: no device evidence.
  const int oom_gpu = by_id[oom]["gpu"]["gpus"][0];
  bool memory_full = false;
  for (const json& e : by_id[oom]["outcome"]["evidence"])
    if (e["kind"] == "memory_full" && e.value("gpu", -1) == oom_gpu) memory_full = true;
  EXPECT_TRUE(memory_full) << by_id[oom].dump();
  for (const json& e : by_id[fails]["outcome"]["evidence"])
    EXPECT_TRUE(e["kind"] == "exit_code" || e["kind"] == "state") << e.dump();
  bool reclaim_evidence = false;
  for (const json& e : by_id[reclaimed]["outcome"]["evidence"])
    if (e["kind"] == "reclaim") reclaim_evidence = true;
  EXPECT_TRUE(reclaim_evidence) << by_id[reclaimed].dump();

  // One job's record from the API is the one on disk.
  std::map<std::string, json> on_disk;
  {
    std::istringstream in(ReadFile(dir_ / "data/jobs/jobs.jsonl"));
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) {
        json r = json::parse(line);
        on_disk[r["job_id"].get<std::string>()] = r;
      }
  }
  for (const Expected& e : expected) {
    ASSERT_TRUE(on_disk.count(e.id)) << e.id;
    EXPECT_EQ(on_disk[e.id]["outcome"], by_id[e.id]["outcome"]) << e.id;
    HttpReply one = agent->Get("/api/gw/v1/jobs/" + e.id);
    ASSERT_EQ(one.status, 200) << one.body;
    EXPECT_EQ(json::parse(one.body)["data"]["outcome"], on_disk[e.id]["outcome"]) << one.body;
  }

  // `gpuwarden jobs show` says the same, from the agent and from the records on disk.
  for (const Expected& e : expected) {
    for (const std::vector<std::string>& where :
         {std::vector<std::string>{"--url", "http://127.0.0.1:" + std::to_string(agent->port())},
          std::vector<std::string>{"--data-dir", dir_ / "data"}}) {
      std::vector<std::string> argv = {GpuwardenBinary(), "jobs", "show", e.id};
      argv.insert(argv.end(), where.begin(), where.end());
      std::string out;
      ASSERT_EQ(RunCommand(argv, &out, 30), 0) << out;
      const std::string line = "\nOutcome    " + e.outcome + " (cause: " + e.cause + ")\n";
      EXPECT_NE(("\n" + out).find(line), std::string::npos) << where[0] << "\n" << out;
      EXPECT_NE(out.find(by_id[e.id]["outcome"]["summary"].get<std::string>()), std::string::npos)
          << out;
    }
  }

  // Counted, with the job's team and partition; nothing else counted.
  auto check_counts = [&](const std::string& when) {
    std::vector<Sample> s = ParseExposition(agent->Get("/metrics").body);
    for (const Expected& e : expected)
      EXPECT_EQ(Sum(s, "gpu_job_outcomes_total",
                    {{"outcome", e.outcome},
                     {"cause", e.cause},
                     {"team", "sim-team"},
                     {"partition", "gpu"}}),
                1)
          << when << ": " << e.outcome << "/" << e.cause;
    EXPECT_EQ(Sum(s, "gpu_job_outcomes_total", {}), 6) << when;
  };
  check_counts("before the restart");

  // The GPU fault pages hardware from the agent itself; the other endings do not.
  json fired;
  ASSERT_TRUE(WaitFor(
      [&] {
        json alerts = json::parse(agent->Get("/api/v1/alerts").body, nullptr, false);
        if (!alerts.is_object()) return false;
        for (const json& a : alerts["data"]["alerts"])
          if (a["labels"].value("alertname", "") == "GpuJobKilledByGpuFault" &&
              a.value("state", "") == "firing")
            fired.push_back(a);
        return !fired.empty();
      },
      30))
      << agent->Get("/api/v1/alerts").body << agent->Log();
  ASSERT_EQ(fired.size(), 1u) << fired.dump();
  EXPECT_EQ(fired[0]["labels"]["severity"], "critical");
  EXPECT_EQ(fired[0]["labels"]["layer"], "device");
  EXPECT_EQ(fired[0]["labels"]["team"], "sim-team");
  EXPECT_EQ(fired[0]["labels"]["partition"], "gpu");

  // A restart on the same data directory: the counter goes on from the records, and the jobs
  // squeue still lists as finished are not counted again.
  agent.reset();
  agent = StartAgent();
  ASSERT_TRUE(ReadsSlurm(*agent)) << agent->Log();
  std::this_thread::sleep_for(std::chrono::seconds(2));  // a few polls of the finished jobs
  check_counts("after the restart");
}

}  // namespace
}  // namespace gw::testing
