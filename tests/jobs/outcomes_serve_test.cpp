// Outcomes through the serve command's task layer (serve/jobs_service.h) without a GPU or a
// scheduler: process jobs over a fake /proc tree, snapshots built by hand carrying XIDs; the
// record's outcome, gpu_job_outcomes_total, the reclaim lookup, and the counter after a restart.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "serve/jobs_service.h"
#include "support/fake_proc.h"
#include "support/process.h"

namespace gw::serve {
namespace {

using nlohmann::json;

// GPU `index` at `util` with the given processes and XID counts so far.
collect::GpuSnapshot Device(unsigned index, double util, std::vector<unsigned> pids,
                            std::vector<std::pair<unsigned, std::uint64_t>> xids = {}) {
  collect::GpuSnapshot g;
  g.values.fill(collect::kAbsent);
  g.identity.index = index;
  g.identity.uuid = "GPU-outcome-" + std::to_string(index);
  g.values[static_cast<size_t>(collect::Slot::kUtilization)] = util;
  g.values[static_cast<size_t>(collect::Slot::kMemoryUsed)] = 10e9;
  g.values[static_cast<size_t>(collect::Slot::kMemoryTotal)] = 80e9;
  for (unsigned pid : pids) g.processes.push_back({pid, 1e9, collect::kAbsent});
  g.xid_counts = std::move(xids);
  return g;
}

collect::Snapshot At(double t, std::vector<collect::GpuSnapshot> gpus) {
  collect::Snapshot s;
  s.taken_unix_seconds = t;
  s.gpus = std::move(gpus);
  return s;
}

std::string Page(const JobsService& jobs) {
  std::string out;
  jobs.RenderMetrics(collect::Format::kText, &out);
  return out;
}

json Outcome(const JobsService& jobs, const std::string& id) {
  auto one = jobs.JobJson(id);
  if (!one) return json();
  return json::parse(*one)["data"]["outcome"];
}

TEST(JobsOutcomes, RecordsCountsReclaimAndRestart) {
  gw::testing::TempDir dir;
  const std::string proc = dir / "proc";
  gw::testing::FakeProcess(proc, 4242, 777, "0::/user.slice\n",
                           {"GPUWARDEN_JOB=train-7", "GPUWARDEN_TEAM=vision"});
  gw::testing::FakeProcess(proc, 4343, 778, "0::/user.slice\n",
                           {"GPUWARDEN_JOB=eval-8", "GPUWARDEN_TEAM=vision"});
  gw::testing::FakeProcess(proc, 4444, 779, "0::/user.slice\n",
                           {"GPUWARDEN_JOB=idle-9", "GPUWARDEN_TEAM=nlp"});
  config::Config config;
  config.storage.path = dir / "data";
  config.jobs.outcome_window_s = 60;
  Logger logger(LogLevel::kError);
  const std::string fault =
      "gpu_job_outcomes_total{outcome=\"failed\",cause=\"gpu_fault\",team=\"vision\","
      "partition=\"\"} 1\n";
  const std::string clean =
      "gpu_job_outcomes_total{outcome=\"completed\",cause=\"unknown\",team=\"vision\","
      "partition=\"\"} 1\n";
  const std::string reclaimed =
      "gpu_job_outcomes_total{outcome=\"reclaimed\",cause=\"scheduler\",team=\"nlp\","
      "partition=\"\"} 1\n";
  {
    JobsService jobs(config, &logger, JobsServiceOptions{proc, "testnode"});
    int asked = 0;
    jobs.SetReclaimLookup([&asked](const std::string& id) -> std::optional<jobs::ReclaimNote> {
      ++asked;
      if (id != "idle-9") return std::nullopt;
      return jobs::ReclaimNote{1025, "command", "gpu/idle", "idle for 20m"};
    });
    // GPU 1 (train-7) reports XID 79 at 1010; GPU 0 (eval-8) a benign XID 13 and an XID 79 long
    // before eval-8's end (outside its 60 s window); GPU 2 (idle-9) nothing.
    jobs.OnSnapshot(At(900, {Device(0, 0.9, {}), Device(1, 0.9, {}), Device(2, 0, {})}));
    jobs.OnSnapshot(At(910, {Device(0, 0.9, {}, {{79, 1}}), Device(1, 0.9, {}), Device(2, 0, {})}));
    jobs.OnSnapshot(At(
        1000, {Device(0, 0.9, {4343}, {{79, 1}}), Device(1, 0.9, {4242}), Device(2, 0, {4444})}));
    jobs.OnSnapshot(At(1010, {Device(0, 0.9, {4343}, {{13, 1}, {79, 1}}),
                              Device(1, 0.9, {4242}, {{79, 1}}), Device(2, 0, {4444})}));
    EXPECT_EQ(Page(jobs).find("gpu_job_outcomes_total{"), std::string::npos) << Page(jobs);
    jobs.OnSnapshot(At(1030, {Device(0, 0.9, {}, {{13, 1}, {79, 1}}), Device(1, 0.9, {}, {{79, 1}}),
                              Device(2, 0, {})}));

    const json failed = Outcome(jobs, "train-7");
    ASSERT_TRUE(failed.is_object()) << jobs.JobsJson({});
    EXPECT_EQ(failed["outcome"], "failed");
    EXPECT_EQ(failed["cause"], "gpu_fault");
    EXPECT_NE(failed["summary"].get<std::string>().find(
                  "XID 79 (GPU has fallen off the bus) on GPU 1 at "),
              std::string::npos)
        << failed.dump();
    EXPECT_NE(failed["summary"].get<std::string>().find("20 s before the job ended"),
              std::string::npos)
        << failed.dump();
    const json completed = Outcome(jobs, "eval-8");
    EXPECT_EQ(completed["outcome"], "completed") << completed.dump();
    EXPECT_EQ(completed["cause"], "unknown") << completed.dump();
    const json idle = Outcome(jobs, "idle-9");
    EXPECT_EQ(idle["outcome"], "reclaimed") << idle.dump();
    EXPECT_EQ(idle["cause"], "scheduler") << idle.dump();
    EXPECT_EQ(asked, 3);

    const std::string page = Page(jobs);
    EXPECT_NE(page.find("# TYPE gpu_job_outcomes_total counter\n"), std::string::npos) << page;
    EXPECT_NE(page.find(fault), std::string::npos) << page;
    EXPECT_NE(page.find(clean), std::string::npos) << page;
    EXPECT_NE(page.find(reclaimed), std::string::npos) << page;
  }
  // The agent restarts: the counter goes on from the records.
  JobsService restarted(config, &logger, JobsServiceOptions{proc + "-none", "testnode"});
  const std::string page = Page(restarted);
  EXPECT_NE(page.find(fault), std::string::npos) << page;
  EXPECT_NE(page.find(clean), std::string::npos) << page;
  EXPECT_NE(page.find(reclaimed), std::string::npos) << page;
}

}  // namespace
}  // namespace gw::serve
