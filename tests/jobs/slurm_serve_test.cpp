// `gpuwarden serve` end to end with a real Slurm 22.05 + munge (tests/support/slurm.h; needs root)
// and a simulated fleet in `host_processes` mode: sbatch jobs that declare a workload drive the
// simulated GPUs Slurm allocated them, and the agent attributes them through NVML pid -> /proc ->
// Slurm, polls squeue for the job table, accounts each job and writes its record.
//
// The simulator runs on the realtime clock at speed 1, so simulated time is wall time and Slurm's
// timestamps (wall clock, whole seconds) line up with the samples. A stepped clock would not: Slurm
// keeps the wall clock whatever the simulator does.
//
// Jobs (4 fake GPUs): "busy" --gres=gpu:2 training; "idle" --gpus=1 never touching its GPU;
// "waiter" --gpus-per-node=2, which waits behind those two; "cancelme" --gres=gpu:4, cancelled
// while pending; "fails" --gres=gpu:1 exiting 3. Then the agent restarts on the same data
// directory, and slurmctld is stopped and started again while a job runs. A second test: the
// queue as a list (GET /api/gw/v1/queue) while jobs wait behind one that holds every GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/agent_process.h"
#include "support/slurm.h"

namespace gw::testing {
namespace {

using nlohmann::json;

// "Key=value" fields of `scontrol show job -o ID` (Slurm's own view, not squeue's JSON).
std::map<std::string, std::string> ScontrolJob(SlurmCluster& cluster, const std::string& id) {
  std::map<std::string, std::string> fields;
  std::istringstream in(cluster.Run({"scontrol", "show", "job", "-o", id}));
  for (std::string token; in >> token;) {
    const size_t eq = token.find('=');
    if (eq != std::string::npos) fields[token.substr(0, eq)] = token.substr(eq + 1);
  }
  return fields;
}

// Slurm's "2026-11-30T00:50:01" (local time) as unix seconds; -1 if not a time.
std::int64_t SlurmTime(const std::string& text) {
  std::tm tm{};
  const char* end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr || *end != '\0') return -1;
  tm.tm_isdst = -1;
  return static_cast<std::int64_t>(mktime(&tm));
}

struct SlurmTimes {
  std::int64_t eligible = -1, start = -1, end = -1;
};
SlurmTimes TimesOf(SlurmCluster& cluster, const std::string& id) {
  auto f = ScontrolJob(cluster, id);
  return {SlurmTime(f["EligibleTime"]), SlurmTime(f["StartTime"]), SlurmTime(f["EndTime"])};
}

// The raw samples of one series from the agent's store: [(t, v)], via a range selector.
std::vector<std::pair<double, double>> RawSamples(const AgentProcess& agent,
                                                  const std::string& selector) {
  HttpReply r = agent.Get("/api/v1/query?query=" + UrlEncode(selector + "[10m]"));
  std::vector<std::pair<double, double>> out;
  json body = json::parse(r.body, nullptr, false);
  if (!body.is_object() || body["data"]["result"].size() != 1) return out;
  for (const json& v : body["data"]["result"][0]["values"])
    out.push_back({v[0].get<double>(), std::stod(v[1].get<std::string>())});
  return out;
}

// A counter's value at `t`, linear between the samples around it; NaN outside them.
double At(const std::vector<std::pair<double, double>>& samples, double t) {
  for (size_t i = 1; i < samples.size(); ++i) {
    const auto& [t0, v0] = samples[i - 1];
    const auto& [t1, v1] = samples[i];
    if (t0 <= t && t <= t1) return t1 == t0 ? v1 : v0 + (v1 - v0) * (t - t0) / (t1 - t0);
  }
  return std::nan("");
}

class SlurmServe : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (slurmd, mknod)";
    ASSERT_TRUE(cluster_.Start()) << cluster_.Log("slurmctld.log") << cluster_.Log("slurmd.log");
    WriteFile(dir_ / "host.yaml",
              "name: slurm-serve\nhost_processes: true\nhost_scan_interval: 100ms\n"
              "gpus:\n  - model: A100-80GB\n    count: 4\n");
    WriteFile(dir_ / "gpuwarden.yaml",
              "collect:\n  interval: 250ms\n  slow_interval: 1s\n"
              "jobs:\n  scheduler: slurm\n  squeue_command: [env, SLURM_CONF=" +
                  cluster_.conf_path() +
                  ", squeue, --json]\n  poll_interval: 500ms\n  idle_window: 4s\n"
                  "teams:\n  accounts: {physics: sim-team}\n");
  }
  std::unique_ptr<AgentProcess> StartAgent() {
    return std::make_unique<AgentProcess>(std::vector<std::string>{
        "--simulate", dir_ / "host.yaml", "--sim-clock", "realtime", "--sim-speed", "1", "--config",
        dir_ / "gpuwarden.yaml", "--data-dir", dir_ / "data"});
  }
  std::string Submit(const std::vector<std::string>& options, const std::string& command) {
    std::string error;
    std::string id = cluster_.Submit(options, command, &error);
    EXPECT_FALSE(id.empty()) << error;
    return id;
  }

  SlurmCluster cluster_{4};
  TempDir dir_;
};

TEST_F(SlurmServe, AttributionQueueWaitEnergyIdleRecordsAndOutage) {
  std::unique_ptr<AgentProcess> agent = StartAgent();
  ASSERT_NE(agent->port(), 0);
  ASSERT_TRUE(WaitFor(
      [&] {
        return agent->Get("/metrics").body.find("gpuwarden_slurm_up 1\n") != std::string::npos;
      },
      30))
      << agent->Log();
  // The energy check below reads the store at Slurm's start second, so the store must already
  // hold more than a second of samples when the jobs are submitted (a job submitted as the agent
  // starts can begin before its first recorded sample).
  ASSERT_TRUE(WaitFor(
      [&] {
        auto first = RawSamples(*agent, "gpu_energy_joules_total{gpu=\"0\"}");
        return first.size() >= 2 && first.back().first - first.front().first > 1.5;
      },
      30))
      << agent->Log();

  const std::string busy = Submit({"--gres=gpu:2", "-J", "busy", "-A", "physics"},
                                  "env GPUWARDEN_SIM_WORKLOAD=training sleep 14");
  const std::string idle = Submit({"--gpus=1", "-J", "idle"}, "sleep 10");
  const std::string waiter =
      Submit({"--gpus-per-node=2", "-J", "waiter"}, "env GPUWARDEN_SIM_WORKLOAD=inference sleep 4");
  const std::string cancelme = Submit({"--gres=gpu:4", "-J", "cancelme"}, "sleep 1");
  const std::string fails = Submit({"--gres=gpu:1", "-J", "fails"}, "sleep 1; exit 3");
  ASSERT_FALSE(busy.empty() || idle.empty() || waiter.empty() || cancelme.empty() || fails.empty());
  int rc = 0;
  cluster_.Run({"scancel", cancelme}, &rc);
  ASSERT_EQ(rc, 0);

  // While busy runs: its GPUs carry its labels (attributed from squeue and from its process),
  // and idle's GPU is flagged once idle for the window.
  std::vector<Sample> samples;
  auto find = [&samples](const std::string& name, const std::string& job_id) {
    std::vector<Sample> out;
    for (const Sample& s : samples)
      if (s.name == name && s.labels.count("job_id") && s.labels.at("job_id") == job_id)
        out.push_back(s);
    return out;
  };
  ASSERT_TRUE(WaitFor(
      [&] {
        samples = ParseExposition(agent->Get("/metrics").body);
        auto streak = find("gpu_job_idle_streak_seconds", idle);
        return find("gpu_allocation_info", busy).size() == 2 && streak.size() == 1 &&
               streak[0].value >= 4 && Value(samples, "gpu_idle_allocated_gpus") >= 1;
      },
      60))
      << agent->Get("/metrics").body << agent->Log();
  for (const Sample& s : find("gpu_allocation_info", busy)) {
    EXPECT_EQ(s.labels.at("user"), "root");
    EXPECT_EQ(s.labels.at("team"), "sim-team");
    EXPECT_EQ(s.labels.at("partition"), "gpu");
  }
  auto idle_info = find("gpu_allocation_info", idle);
  ASSERT_EQ(idle_info.size(), 1u);
  EXPECT_EQ(idle_info[0].labels.at("team"), "unassigned");
  EXPECT_TRUE(find("gpu_allocation_info", cancelme).empty());
  // Device series carry no job labels.
  for (const Sample& s : samples) {
    if (s.name.rfind("gpu_job_", 0) != 0 && s.name != "gpu_allocation_info") {
      EXPECT_EQ(s.labels.count("job_id"), 0u) << s.name;
    }
  }

  // Every job done: records for the four that ran here.
  json records;
  ASSERT_TRUE(WaitFor(
      [&] {
        records = json::parse(agent->Get("/api/gw/v1/jobs").body, nullptr, false);
        int finished = 0;
        for (const json& r : records["data"]["jobs"])
          if (r["state"] != "RUNNING") ++finished;
        return finished >= 4;
      },
      90))
      << records.dump() << agent->Log() << cluster_.Log("slurmctld.log");
  std::map<std::string, json> by_id;
  for (const json& r : records["data"]["jobs"]) by_id[r["job_id"].get<std::string>()] = r;
  EXPECT_EQ(by_id[busy]["state"], "COMPLETED");
  EXPECT_EQ(by_id[busy]["team"], "sim-team");
  EXPECT_EQ(by_id[idle]["state"], "COMPLETED");
  EXPECT_EQ(by_id[waiter]["state"], "COMPLETED");
  EXPECT_EQ(by_id[fails]["state"], "FAILED");
  EXPECT_NE(by_id[fails].value("exit_code", 0), 0);
  EXPECT_EQ(by_id.count(cancelme), 0u);  // never ran here: no node, no record

  // Queue wait = Slurm's own start - eligible (scontrol), per record and in the histogram.
  double wait_sum = 0;
  for (const std::string& id : {busy, idle, waiter, fails}) {
    const SlurmTimes t = TimesOf(cluster_, id);
    ASSERT_GT(t.start, 0) << id;
    ASSERT_GT(t.eligible, 0) << id;
    EXPECT_EQ(by_id[id]["queue_wait_s"].get<std::int64_t>(), t.start - t.eligible) << id;
    EXPECT_EQ(by_id[id]["start_time"].get<std::int64_t>(), t.start) << id;
    EXPECT_EQ(by_id[id]["end_time"].get<std::int64_t>(), t.end) << id;
    wait_sum += static_cast<double>(t.start - t.eligible);
  }
  EXPECT_GE(by_id[waiter]["queue_wait_s"].get<std::int64_t>(), 3);  // it waited behind busy/idle
  samples = ParseExposition(agent->Get("/metrics").body);
  EXPECT_EQ(Value(samples, "gpu_job_queue_wait_seconds_sum", {{"partition", "gpu"}}), wait_sum);
  EXPECT_EQ(Value(samples, "gpu_job_queue_wait_seconds_count", {{"partition", "gpu"}}), 4);
  EXPECT_GE(Value(samples, "gpu_jobs", {{"state", "CANCELLED"}}), 1);

  // Energy = the integral of simulated power over the job's GPUs and lifetime: the simulator's
  // energy counter (its exact integral of power), read back from the store and interpolated at
  // Slurm's start and end, summed over the GPUs Slurm allocated.
  for (const std::string& id : {busy, waiter}) {
    const json& gpu = by_id[id]["gpu"];
    ASSERT_TRUE(gpu.is_object()) << by_id[id].dump();
    const double start = by_id[id]["start_time"].get<double>();
    const double end = by_id[id]["end_time"].get<double>();
    double truth = 0;
    for (unsigned g : gpu["gpus"].get<std::vector<unsigned>>()) {
      auto raw = RawSamples(*agent, "gpu_energy_joules_total{gpu=\"" + std::to_string(g) + "\"}");
      const double e0 = At(raw, start), e1 = At(raw, end);
      ASSERT_FALSE(std::isnan(e0) || std::isnan(e1)) << id << " gpu " << g;
      truth += e1 - e0;
    }
    EXPECT_EQ(gpu["gpus"].size(), 2u) << id;
    EXPECT_GT(truth, 0);
    EXPECT_NEAR(gpu["energy_j"].get<double>(), truth, 0.01 * truth) << id;
    std::printf("job %s: energy %.1f J, integral of simulated power %.1f J, queue wait %lld s\n",
                id.c_str(), gpu["energy_j"].get<double>(), truth,
                static_cast<long long>(by_id[id]["queue_wait_s"].get<std::int64_t>()));
    EXPECT_FALSE(gpu["idle_while_allocated"].get<bool>()) << id;
  }
  EXPECT_GE(by_id[busy]["gpu"]["util_max"].get<double>(), 0.85);
  EXPECT_TRUE(by_id[idle]["gpu"]["idle_while_allocated"].get<bool>());  // the idle job flagged
  EXPECT_GT(by_id[idle]["gpu"]["idle_gpu_seconds"].get<double>(), 5);

  // The agent restarts: the finished jobs' records are back, as they were.
  const std::string busy_before = agent->Get("/api/gw/v1/jobs/" + busy).body;
  agent->process().Stop();
  agent = StartAgent();
  ASSERT_NE(agent->port(), 0);
  for (const std::string& id : {busy, idle, waiter, fails}) {
    HttpReply r = agent->Get("/api/gw/v1/jobs/" + id);
    ASSERT_EQ(r.status, 200) << id;
    EXPECT_EQ(json::parse(r.body)["data"], by_id[id]) << id;
  }
  EXPECT_EQ(agent->Get("/api/gw/v1/jobs/" + busy).body, busy_before);

  // slurmctld stops while a job runs: collection goes on, the job table is kept as last seen,
  // staleness rises; once slurmctld is back, the agent recovers.
  const std::string during =
      Submit({"--gres=gpu:1", "-J", "during"}, "env GPUWARDEN_SIM_WORKLOAD=training sleep 60");
  ASSERT_TRUE(WaitFor(
      [&] {
        samples = ParseExposition(agent->Get("/metrics").body);
        return find("gpu_allocation_info", during).size() == 1 &&
               Value(samples, "gpuwarden_slurm_up") == 1;
      },
      30))
      << agent->Log();
  cluster_.StopController();
  ASSERT_TRUE(WaitFor(
      [&] {
        samples = ParseExposition(agent->Get("/metrics").body);
        return Value(samples, "gpuwarden_slurm_up") == 0 &&
               Value(samples, "gpuwarden_slurm_staleness_seconds") > 1;
      },
      30))
      << agent->Log();
  const double staleness = Value(samples, "gpuwarden_slurm_staleness_seconds");
  // The queue says so too: the last known queue, not an empty one.
  json queue = json::parse(agent->Get("/api/gw/v1/queue").body, nullptr, false);
  EXPECT_FALSE(queue["data"]["up"].get<bool>()) << queue.dump();
  EXPECT_TRUE(queue["data"]["known"].get<bool>());
  EXPECT_GT(queue["data"]["staleness_s"].get<double>(), 0);
  EXPECT_FALSE(queue["data"]["error"].get<std::string>().empty());
  const double collected = Value(samples, "gpuwarden_collect_last_success_timestamp_seconds");
  EXPECT_EQ(find("gpu_allocation_info", during).size(), 1u);  // last known state kept
  ASSERT_TRUE(WaitFor(
      [&] {
        samples = ParseExposition(agent->Get("/metrics").body);
        return Value(samples, "gpuwarden_slurm_staleness_seconds") >= staleness + 1 &&
               Value(samples, "gpuwarden_collect_last_success_timestamp_seconds") > collected + 1;
      },
      20));
  EXPECT_GT(Value(samples, "gpuwarden_slurm_poll_failures_total"), 0);
  EXPECT_EQ(find("gpu_allocation_info", during).size(), 1u);
  // The staleness is in the store too, where the rules read it.
  HttpReply stale = agent->Get("/api/v1/query?query=" + UrlEncode("gpuwarden_slurm_up"));
  EXPECT_NE(stale.body.find("\"0\"]"), std::string::npos) << stale.body;

  ASSERT_TRUE(cluster_.StartController(/*clean=*/false)) << cluster_.Log("slurmctld.log");
  ASSERT_TRUE(WaitFor(
      [&] {
        samples = ParseExposition(agent->Get("/metrics").body);
        return Value(samples, "gpuwarden_slurm_up") == 1 &&
               Value(samples, "gpuwarden_slurm_staleness_seconds") == 0;
      },
      30))
      << agent->Log();
  EXPECT_EQ(find("gpu_allocation_info", during).size(), 1u);
  cluster_.Run({"scancel", during});
}

// The pending jobs of GET /api/gw/v1/queue, by id.
std::map<std::string, json> Queued(const AgentProcess& agent, json* document) {
  *document = json::parse(agent.Get("/api/gw/v1/queue").body, nullptr, false);
  std::map<std::string, json> out;
  if (!document->is_object() || !(*document)["data"]["jobs"].is_array()) return out;
  for (const json& j : (*document)["data"]["jobs"]) out[j["job_id"].get<std::string>()] = j;
  return out;
}

TEST_F(SlurmServe, QueueListsWaitingJobsUntilTheyStartOrAreCancelled) {
  std::unique_ptr<AgentProcess> agent = StartAgent();
  ASSERT_NE(agent->port(), 0);
  json document;
  ASSERT_TRUE(WaitFor(
      [&] {
        Queued(*agent, &document);
        return document["data"]["known"] == true;
      },
      30))
      << document.dump() << agent->Log();
  EXPECT_EQ(document["data"]["scheduler"], "slurm");

  // "hog" holds all four GPUs; "waiter" (--gpus=2) and "doomed" (--gres=gpu:1) wait behind it.
  const std::string hog = Submit({"--gres=gpu:4", "-J", "hog"}, "sleep 300");
  ASSERT_FALSE(hog.empty());
  ASSERT_TRUE(WaitFor([&] { return ScontrolJob(cluster_, hog)["JobState"] == "RUNNING"; }, 30))
      << cluster_.Log("slurmctld.log");
  const std::string waiter = Submit({"--gpus=2", "-J", "waiter", "-A", "physics"}, "sleep 1");
  const std::string doomed = Submit({"--gres=gpu:1", "-J", "doomed"}, "sleep 1");
  ASSERT_FALSE(waiter.empty() || doomed.empty());

  // Both listed once the scheduler has given each a reason (a new job's is "None" until then).
  std::map<std::string, json> queued;
  ASSERT_TRUE(WaitFor(
      [&] {
        queued = Queued(*agent, &document);
        for (const std::string& id : {waiter, doomed}) {
          if (!queued.count(id)) return false;
          const std::string reason = queued[id]["reason"].get<std::string>();
          if (reason.empty() || reason == "None") return false;
        }
        return true;
      },
      60))
      << document.dump() << agent->Log();
  EXPECT_EQ(queued.count(hog), 0u);  // running, not queued
  const json& w = queued[waiter];
  EXPECT_EQ(w["name"], "waiter");
  EXPECT_EQ(w["user"], "root");
  EXPECT_EQ(w["account"], "physics");
  EXPECT_EQ(w["team"], "sim-team");
  EXPECT_EQ(w["partition"], "gpu");
  EXPECT_EQ(w["gpus"], 2);
  EXPECT_EQ(queued[doomed]["gpus"], 1);
  EXPECT_EQ(queued[doomed]["team"], "unassigned");
  std::printf("waiting: %s reason %s, %s reason %s\n", waiter.c_str(),
              w["reason"].get<std::string>().c_str(), doomed.c_str(),
              queued[doomed]["reason"].get<std::string>().c_str());
  // Slurm's own times (scontrol), and the wait as of the poll.
  const auto fields = ScontrolJob(cluster_, waiter);
  EXPECT_EQ(w["submit_time"].get<std::int64_t>(), SlurmTime(fields.at("SubmitTime")));
  EXPECT_EQ(w["eligible_time"].get<std::int64_t>(), SlurmTime(fields.at("EligibleTime")));
  EXPECT_TRUE(w["eligible"].get<bool>());
  const auto polled_at = static_cast<std::int64_t>(document["data"]["polled_at"].get<double>());
  EXPECT_EQ(w["wait_s"].get<std::int64_t>(), polled_at - w["eligible_time"].get<std::int64_t>());
  // Same priority (priority/basic): submission order.
  EXPECT_EQ(w["position"], 1);
  EXPECT_EQ(queued[doomed]["position"], 2);
  EXPECT_TRUE(document["data"]["up"].get<bool>());
  EXPECT_EQ(document["data"]["staleness_s"], 0);

  // Cancelled while pending: it leaves the list; the waiter stays.
  int rc = 0;
  cluster_.Run({"scancel", doomed}, &rc);
  ASSERT_EQ(rc, 0);
  ASSERT_TRUE(WaitFor(
      [&] {
        queued = Queued(*agent, &document);
        return !queued.count(doomed) && queued.count(waiter);
      },
      30))
      << document.dump();

  // The GPUs free up: the waiter starts and leaves the list.
  cluster_.Run({"scancel", hog}, &rc);
  ASSERT_EQ(rc, 0);
  ASSERT_TRUE(WaitFor(
      [&] {
        queued = Queued(*agent, &document);
        return document["data"]["known"] == true && !queued.count(waiter);
      },
      60))
      << document.dump() << cluster_.Log("slurmctld.log");
  EXPECT_GT(SlurmTime(ScontrolJob(cluster_, waiter)["StartTime"]), 0);
  EXPECT_NE(ScontrolJob(cluster_, waiter)["JobState"], "PENDING");
}

}  // namespace
}  // namespace gw::testing
