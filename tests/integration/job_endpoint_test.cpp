// A job's own metrics endpoint found without configuration (docs/jobs.md, "Training
// throughput"): `gpuwarden serve` on the training-power-cap scenario (stepped clock) and a real
// simulated training run (gw-training-sim) as process job train-9 on GPU 0 — it declares the port
// of its /metrics with GPUWARDEN_METRICS_PORT, as the convention asks; the agent reads it from
// /proc/<pid>/environ (the attribution allow-list) and scrapes it as target `job:train-9` while
// the job runs, with no scrape.targets entry. Its throughput follows from its counter; when the run
// completes its record has the totals, the target leaves /metrics and its series go stale, and no
// ScrapeTargetDown fires. A second run (train-8) with a scrape.targets entry of its own is not
// scraped twice; a process declaring a port that is not one is ignored.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "integration/training_support.h"
#include "support/agent_process.h"

namespace gw::testing {
namespace {

using nlohmann::json;

std::size_t Count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(JobEndpoint, ADeclaredPortIsScrapedWhileTheJobRunsWithoutAScrapeTarget) {
  TempDir dir;
  const std::string state = dir / "state";
  const int port8 = FreePort();
  setenv("GPUWARDEN_SIM_STATE_DIR", state.c_str(), 1);
  AgentProcess agent(TrainingAgentArgs(dir, "train-8", "train-8", port8));
  unsetenv("GPUWARDEN_SIM_STATE_DIR");
  ASSERT_NE(agent.port(), 0);
  const std::string sim = std::string(GW_BINARY_DIR) + "/bin/gw-training-sim";
  // train-9: no --listen: the run picks a port and declares it (GPUWARDEN_METRICS_PORT).
  Process run9({"env", "GPUWARDEN_JOB=train-9", "GPUWARDEN_TEAM=ml", "CUDA_VISIBLE_DEVICES=0",
                "GPUWARDEN_SIM_STATE_DIR=" + state, sim, "--duration", "150"},
               dir / "train-9.log");
  // train-8: its endpoint is configured (and declared too): scraped once, as configured.
  Process run8(
      {"env", "GPUWARDEN_JOB=train-8", "GPUWARDEN_TEAM=ml", "CUDA_VISIBLE_DEVICES=1",
       "GPUWARDEN_SIM_STATE_DIR=" + state, sim, "--listen", "127.0.0.1:" + std::to_string(port8)},
      dir / "train-8.log");
  // Not a port: ignored (the job itself is listed all the same).
  Process bogus({"env", "GPUWARDEN_JOB=bogus", "GPUWARDEN_SIM_WORKLOAD=idle",
                 "CUDA_VISIBLE_DEVICES=1", "GPUWARDEN_METRICS_PORT=99999", "sleep", "600"},
                dir / "bogus.log");
  ASSERT_TRUE(WaitFor(
      [&] {
        agent.Advance(2);
        return agent.Get("/api/gw/v1/jobs/train-9").status == 200 &&
               agent.Get("/api/gw/v1/jobs/train-8").status == 200 &&
               agent.Get("/api/gw/v1/jobs/bogus").status == 200;
      },
      60))
      << run9.Output() << agent.Log();

  // Scraped from its declared port: a throughput at one GPU's full-clock rate (400 samples/s).
  double rate = std::nan("");
  ASSERT_TRUE(WaitFor(
      [&] {
        Step(agent, 5);
        rate = QueryOne(agent,
                        "gpu_job_training_throughput{job_id=\"train-9\",team=\"ml\","
                        "unit=\"samples\"}");
        return !std::isnan(rate);
      },
      60))
      << agent.Get("/metrics").body << agent.Log();
  EXPECT_GT(rate, 300);
  EXPECT_LT(rate, 410);
  const std::string metrics = agent.Get("/metrics").body;
  EXPECT_NE(metrics.find("gpuwarden_scrape_up{target=\"job:train-9\"} 1"), std::string::npos)
      << metrics;
  EXPECT_EQ(Count(metrics, "gpuwarden_scrape_up{target="), 2u)
      << "train-9 found, train-8 as configured, nothing for bogus:\n"
      << metrics;
  EXPECT_EQ(metrics.find("job:train-8"), std::string::npos);
  EXPECT_EQ(metrics.find("job:bogus"), std::string::npos);
  EXPECT_NE(agent.Log().find("job train-9 declares its counter on 127.0.0.1:"), std::string::npos);
  const json running = json::parse(agent.Get("/api/gw/v1/jobs/train-9").body)["data"];
  ASSERT_TRUE(running.contains("throughput")) << running.dump();
  EXPECT_EQ(running["throughput"]["unit"], "samples");
  EXPECT_EQ(running["throughput"]["metric"], "training_samples_total");
  EXPECT_GT(running["throughput"]["total"].get<double>(), 0);

  // The run completes (150 s): the record keeps the totals; the target is gone, not down.
  json record;
  ASSERT_TRUE(WaitFor(
      [&] {
        Step(agent, 5);
        const json r = json::parse(agent.Get("/api/gw/v1/jobs/train-9").body)["data"];
        if (r.value("state", "") == "RUNNING") return false;
        record = r;
        return true;
      },
      90))
      << run9.Output() << agent.Log();
  EXPECT_EQ(record["outcome"]["outcome"], "completed") << record.dump();
  ASSERT_TRUE(record.contains("throughput")) << record.dump();
  const json& t = record["throughput"];
  EXPECT_EQ(t["unit"], "samples");
  // 150 s at up to 400 samples/s, counted as last scraped (every 15 s).
  EXPECT_GT(t["total"].get<double>(), 0.5 * 400 * 150) << t.dump();
  EXPECT_LE(t["total"].get<double>(), 400 * 155) << t.dump();
  EXPECT_GT(t["per_gpu_hour"].get<double>(), 0);
  EXPECT_GT(t["per_cost"].get<double>(), 0);
  Step(agent, 180);  // ScrapeTargetDown (2m) would be pending or firing by now
  const std::string after = agent.Get("/metrics").body;
  EXPECT_EQ(after.find("target=\"job:train-9\""), std::string::npos) << after;
  EXPECT_NE(after.find("gpuwarden_scrape_up{target=\"train-8\"} 1"), std::string::npos);
  EXPECT_TRUE(std::isnan(QueryOne(agent, "gpuwarden_scrape_up{target=\"job:train-9\"}")));
  EXPECT_TRUE(std::isnan(QueryOne(agent, "gpu_job_training_throughput{job_id=\"train-9\"}")));
  const json alerts = json::parse(agent.Get("/api/v1/alerts").body)["data"]["alerts"];
  for (const json& a : alerts) EXPECT_NE(a["labels"]["alertname"], "ScrapeTargetDown") << a.dump();
  run8.Stop();
  bogus.Stop();
}

}  // namespace
}  // namespace gw::testing
