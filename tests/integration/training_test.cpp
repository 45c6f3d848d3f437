// Training throughput end to end: `gpuwarden serve` on the training-power-cap scenario (stepped
// clock) with a real simulated training run (gw-training-sim) as a host process job on both GPUs
// (GPUWARDEN_JOB=train-7, team ml), its /metrics bound to the job by scrape.targets[].job_id.
// GPU 1's power limit drops to 300 W at 300 s. Checks: the job's throughput follows its GPUs —
// gpu_job_training_throughput at the rate the run makes on full clocks, then about a third lower
// once GPU 1 is capped; the running job's API record carries its throughput so far; the diagnosis
// names GPU 1 and the power cap; the shipped TrainingThroughputDropped fires in /api/v1/alerts for
// that job only; at the job's end its record has the totals.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>

#include "integration/training_support.h"
#include "support/agent_process.h"

namespace gw::testing {
namespace {

using nlohmann::json;

TEST(Training, ThroughputFollowsItsGpusThroughAPowerCap) {
  TempDir dir;
  const std::string state = dir / "state";
  const int port = FreePort();
  setenv("GPUWARDEN_SIM_STATE_DIR", state.c_str(), 1);
  AgentProcess agent(TrainingAgentArgs(dir, "train", "train-7", port));
  unsetenv("GPUWARDEN_SIM_STATE_DIR");
  ASSERT_NE(agent.port(), 0);
  // CI once measured "the time to find the job" from a snapshot taken before the first cycle.
  ASSERT_TRUE(agent.WaitReady()) << agent.Log();
  const double started_at = Now(agent);
  ASSERT_GT(started_at, 0);
  Process run(
      {"env", "GPUWARDEN_JOB=train-7", "GPUWARDEN_TEAM=ml", "CUDA_VISIBLE_DEVICES=0,1",
       "GPUWARDEN_SIM_STATE_DIR=" + state, std::string(GW_BINARY_DIR) + "/bin/gw-training-sim",
       "--listen", "127.0.0.1:" + std::to_string(port)},
      dir / "train.log");
  ASSERT_TRUE(WaitFor([&] { return HttpGet(port, "/healthz").status == 200; }, 30)) << run.Output();
  // The simulator finds the run on its next scan (real time), the collector lists it on a slow
  // cycle, the task layer makes it job train-7.
  ASSERT_TRUE(WaitFor(
      [&] {
        agent.Advance(2);
        return agent.Get("/api/gw/v1/jobs/train-7").status == 200;
      },
      60))
      << agent.Get("/api/snapshot").body << agent.Log();

  // Before the cap: both GPUs at full clock, 2 x 400 samples/s (the run's defaults; the shared
  // all-reduce is part of its full-speed step). The H100s may brush their 700 W limit under
  // training, so "about".
  Step(agent, 90);
  ASSERT_LT(Now(agent) - started_at, 250) << "finding the job took too long in simulated time";
  std::string body;
  const double before = QueryOne(
      agent, "gpu_job_training_throughput{job_id=\"train-7\",team=\"ml\",unit=\"samples\"}", &body);
  ASSERT_FALSE(std::isnan(before)) << body << agent.Log();
  EXPECT_GT(before, 760) << body;
  EXPECT_LE(before, 808) << body;
  EXPECT_NEAR(QueryOne(agent, "gpu_job_training_throughput_per_gpu{job_id=\"train-7\"}"),
              before / 2, before * 0.02);
  // Per watt and per cost: the two H100s draw hundreds of watts each.
  const double per_watt =
      QueryOne(agent, "gpu_job_training_throughput_per_watt{job_id=\"train-7\"}");
  EXPECT_GT(per_watt, before / 1400) << "two GPUs draw at most 2 x 700 W";
  EXPECT_LT(per_watt, before / 200);
  EXPECT_GT(QueryOne(agent, "gpu_job_training_units_per_cost{job_id=\"train-7\",currency=\"USD\"}"),
            0);
  // The running job's record carries its throughput so far.
  json running = json::parse(agent.Get("/api/gw/v1/jobs/train-7").body)["data"];
  ASSERT_TRUE(running.contains("throughput")) << running.dump();
  EXPECT_EQ(running["throughput"]["unit"], "samples");
  EXPECT_GT(running["throughput"]["total"].get<double>(), 0);
  EXPECT_TRUE(agent.Get("/api/v1/alerts").body.find("TrainingThroughputDropped") ==
              std::string::npos);

  // GPU 1 is capped at 300 s; advance to 6 minutes past it, then the throughput is lower by about
  // a third (GPU 1's clock at ~64 % sets every step's pace), and the rule has fired.
  std::vector<json> firing;
  for (int i = 0; i < 80 && firing.empty(); ++i) {
    Step(agent, 15);
    const json alerts = json::parse(agent.Get("/api/v1/alerts").body);
    for (const json& a : alerts["data"]["alerts"])
      if (a["labels"]["alertname"] == "TrainingThroughputDropped" && a["state"] == "firing")
        firing.push_back(a);
  }
  ASSERT_EQ(firing.size(), 1u) << agent.Get("/api/v1/alerts").body;
  EXPECT_EQ(firing[0]["labels"]["job_id"], "train-7");
  EXPECT_EQ(firing[0]["labels"]["team"], "ml");
  EXPECT_GT(Now(agent) - started_at, 300 + 5 * 60) << "fired before the cap had held 5 minutes";
  const double after = QueryOne(agent, "gpu_job_training_throughput{job_id=\"train-7\"}");
  EXPECT_LT(after, 0.75 * before) << after;
  EXPECT_GT(after, 0.5 * before) << after;
  // GPU 1, not GPU 0, is held down by its power cap.
  EXPECT_GT(
      QueryOne(agent, "rate(gpu_clock_event_seconds_total{gpu=\"1\",reason=\"sw_power_cap\"}[1m])"),
      0.5);
  EXPECT_LT(
      QueryOne(agent, "rate(gpu_clock_event_seconds_total{gpu=\"0\",reason=\"sw_power_cap\"}[1m])"),
      0.5);

  // The diagnosis (evaluated by the agent once per recorded minute, on a thread of its own, so in
  // real time behind the stepped clock) names GPU 1 and the cause.
  json finding;
  std::string findings_seen;
  WaitFor(
      [&] {
        Step(agent, 1);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        findings_seen = agent.Get("/api/gw/v1/findings").body;
        const json doc = json::parse(findings_seen);
        for (const json& f : doc["data"]["findings"])
          if (f["kind"] == "training-throughput-drop") finding = f;
        return finding.is_object();
      },
      60);
  ASSERT_TRUE(finding.is_object())
      << findings_seen << "\n"
      << agent
             .Get("/api/v1/query?query=" + UrlEncode("gpu_job_training_throughput[20m]") +
                  "&time=" + std::to_string(Now(agent)))
             .body;
  EXPECT_EQ(finding["subject"]["job"], "train-7") << finding.dump();
  EXPECT_EQ(finding["cause"], "power cap on GPU 1") << finding.dump();
  const std::string title = finding["title"];
  EXPECT_NE(title.find("GPU 1 is power-capped"), std::string::npos) << title;
  EXPECT_NE(title.find("job train-7 trains"), std::string::npos) << title;
  EXPECT_EQ(finding["related_gpus"], json::array({"0", "1"})) << finding.dump();

  // The job ends (SIGTERM, as scancel would): its record has the totals.
  const double units = QueryOne(agent, "gpu_job_training_units_total{job_id=\"train-7\"}");
  ASSERT_GT(units, 0);
  run.Stop();
  json record;
  ASSERT_TRUE(WaitFor(
      [&] {
        Step(agent, 5);
        const json r = json::parse(agent.Get("/api/gw/v1/jobs/train-7").body)["data"];
        if (r.value("state", "") == "RUNNING") return false;
        record = r;
        return true;
      },
      60))
      << agent.Log();
  ASSERT_TRUE(record.contains("throughput")) << record.dump();
  const json& t = record["throughput"];
  EXPECT_EQ(t["unit"], "samples");
  EXPECT_EQ(t["metric"], "training_samples_total");
  EXPECT_GE(t["total"].get<double>(), units);
  const double run_s = record["end_time"].get<double>() - record["start_time"].get<double>();
  EXPECT_NEAR(t["avg_per_s"].get<double>(), t["total"].get<double>() / run_s, 1e-6);
  EXPECT_GT(t["avg_per_s"].get<double>(), 0.5 * before);
  EXPECT_LT(t["avg_per_s"].get<double>(), before);
  ASSERT_TRUE(t.contains("per_gpu_hour") && t.contains("per_kwh") && t.contains("per_cost"))
      << t.dump();
  EXPECT_GT(t["per_gpu_hour"].get<double>(), 0);
  // After the end the job's series are gone (stale).
  EXPECT_TRUE(std::isnan(QueryOne(agent, "gpu_job_training_throughput{job_id=\"train-7\"}")));
}

}  // namespace
}  // namespace gw::testing
