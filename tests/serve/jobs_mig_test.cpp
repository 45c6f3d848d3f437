// The task layer over MIG instances and GPM signals, from hand-built snapshots and a fake /proc
// tree: a process NVML lists on an instance, and one whose CUDA_VISIBLE_DEVICES names an
// instance's MIG UUID, are tied to those instances; per-job figures count an instance as its share
// of the GPU; per-job SM and tensor activity reach /metrics, the records and `gpuwarden jobs`, and
// stay absent where no GPU reported them.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "cli/jobs_commands.h"
#include "jobs/gpu_unit.h"
#include "serve/jobs_service.h"
#include "support/fake_proc.h"
#include "support/process.h"

namespace gw::serve {
namespace {

using gw::testing::FakeProcess;
using gw::testing::TempDir;

constexpr double k3g = 3.0 / 7, k1g = 1.0 / 7;

void Set(collect::GpuSnapshot* g, collect::Slot s, double v) {
  g->values[static_cast<size_t>(s)] = v;
}

collect::MigInstanceSnapshot Instance(unsigned gi, const char* profile, const char* uuid,
                                      double share, double graphics, double sm, double tensor) {
  collect::MigInstanceSnapshot m;
  m.gpu_instance_id = gi;
  m.profile = profile;
  m.uuid = uuid;
  m.slice_ratio = share;
  m.memory_total_bytes = 40e9;
  m.memory_used_bytes = 10e9;
  m.gpm[static_cast<size_t>(collect::Gpm::kGraphicsActive)] = graphics;
  m.gpm[static_cast<size_t>(collect::Gpm::kSmActive)] = sm;
  m.gpm[static_cast<size_t>(collect::Gpm::kTensorAny)] = tensor;
  return m;
}

// GPU 0: MIG, a 3g instance busy but hollow (graphics 95 %, SM 5 %, tensor 2 %) running pid 4242
// (listed with its instance id), and a 1g instance, idle, without SM/tensor readings, running pid
// 4343 (listed on the GPU without an instance). GPU 1: whole, SM 70 %, tensor 60 %, pid 4444.
collect::Snapshot Snap(double t, bool with_hollow = true) {
  collect::Snapshot s;
  s.taken_unix_seconds = t;
  collect::GpuSnapshot mig;
  mig.values.fill(collect::kAbsent);
  mig.identity.index = 0;
  mig.identity.uuid = "GPU-0";
  Set(&mig, collect::Slot::kPower, 350);
  mig.mig.push_back(Instance(1, "3g.40gb", "MIG-aaaa", k3g, 0.95, 0.05, 0.02));
  mig.mig.push_back(Instance(9, "1g.10gb", "MIG-bbbb", k1g, 0, collect::kAbsent, collect::kAbsent));
  if (with_hollow) {
    collect::ProcessSample p;
    p.pid = 4242;
    p.gpu_instance_id = 1;
    mig.processes.push_back(p);
  }
  collect::ProcessSample nb;
  nb.pid = 4343;
  mig.processes.push_back(nb);
  collect::GpuSnapshot whole;
  whole.values.fill(collect::kAbsent);
  whole.identity.index = 1;
  whole.identity.uuid = "GPU-1";
  Set(&whole, collect::Slot::kUtilization, 0.9);
  Set(&whole, collect::Slot::kPower, 500);
  Set(&whole, collect::Slot::kSmActive, 0.7);
  Set(&whole, collect::Slot::kTensorAny, 0.6);
  collect::ProcessSample train;
  train.pid = 4444;
  whole.processes.push_back(train);
  s.gpus = {mig, whole};
  return s;
}

// The value of the first sample line starting with `prefix`; NaN if none.
double Value(const std::string& metrics, const std::string& prefix) {
  size_t at = metrics.rfind(prefix, 0) == 0 ? 0 : metrics.find("\n" + prefix);
  if (at == std::string::npos) return NAN;
  if (at > 0 || metrics[0] == '\n') ++at;  // past the newline
  const size_t space = metrics.find(' ', at + prefix.size() - 1);
  return std::strtod(metrics.c_str() + space + 1, nullptr);
}

TEST(JobsMig, JobsOnMigInstancesCountTheirShareAndCarryGpmActivity) {
  TempDir dir;
  const std::string proc = dir / "proc";
  FakeProcess(proc, 4242, 0, "0::/user.slice\n", {"GPUWARDEN_JOB=hollow", "GPUWARDEN_TEAM=nlp"});
  FakeProcess(proc, 4343, 0, "0::/user.slice\n",
              {"GPUWARDEN_JOB=notebook", "GPUWARDEN_TEAM=nlp", "CUDA_VISIBLE_DEVICES=MIG-bbbb"});
  FakeProcess(proc, 4444, 0, "0::/user.slice\n", {"GPUWARDEN_JOB=train", "GPUWARDEN_TEAM=vision"});
  config::Config config;
  config.storage.path = dir / "data";
  config.jobs.idle_window_s = 60;
  Logger logger(LogLevel::kError, [](LogLevel, const std::string&) {});
  JobsService jobs(config, &logger, JobsServiceOptions{proc, "testnode"});

  for (double t = 1000; t <= 1100; t += 10) jobs.OnSnapshot(Snap(t));
  std::string m;
  jobs.RenderMetrics(collect::Format::kText, &m);

  // Allocation per unit: the instance's labels on the MIG ones.
  const std::string hollow_alloc =
      "gpu_allocation_info{gpu=\"0\",uuid=\"GPU-0\",mig_instance=\"1\",mig_profile=\"3g.40gb\","
      "job_id=\"hollow\",";
  EXPECT_EQ(Value(m, hollow_alloc), 1) << m;
  EXPECT_EQ(Value(m,
                  "gpu_allocation_info{gpu=\"0\",uuid=\"GPU-0\",mig_instance=\"9\","
                  "mig_profile=\"1g.10gb\",job_id=\"notebook\","),
            1)
      << m;  // tied through CUDA_VISIBLE_DEVICES
  EXPECT_EQ(Value(m, "gpu_allocation_info{gpu=\"1\",uuid=\"GPU-1\",job_id=\"train\","), 1) << m;
  EXPECT_EQ(m.find("gpu_allocation_info{gpu=\"0\",uuid=\"GPU-0\",job_id="), std::string::npos)
      << m;  // nobody holds GPU 0 whole

  const std::string hollow = "{job_id=\"hollow\",user=\"root\",team=\"nlp\",partition=\"\"";
  const std::string notebook = "{job_id=\"notebook\",user=\"root\",team=\"nlp\",partition=\"\"";
  const std::string train = "{job_id=\"train\",user=\"root\",team=\"vision\",partition=\"\"";
  EXPECT_NEAR(Value(m, "gpu_job_gpus" + hollow + "}"), k3g, 1e-12) << m;
  EXPECT_NEAR(Value(m, "gpu_job_gpus" + train + "}"), 1, 1e-12) << m;
  EXPECT_NEAR(Value(m, "gpu_job_gpu_seconds_total" + hollow + "}"), k3g * 100, 1e-9) << m;
  EXPECT_NEAR(Value(m, "gpu_job_sm_active_ratio" + hollow + ",stat=\"avg\"}"), 0.05, 1e-12) << m;
  EXPECT_NEAR(Value(m, "gpu_job_tensor_active_ratio" + hollow + ",stat=\"max\"}"), 0.02, 1e-12);
  EXPECT_NEAR(Value(m, "gpu_job_sm_active_ratio" + train + ",stat=\"avg\"}"), 0.7, 1e-12) << m;
  EXPECT_NEAR(Value(m, "gpu_job_tensor_active_ratio" + train + ",stat=\"avg\"}"), 0.6, 1e-12);
  // Utilization of an instance: its graphics activity.
  EXPECT_NEAR(Value(m, "gpu_job_sm_utilization_ratio" + hollow + ",stat=\"avg\"}"), 0.95, 1e-9);
  // The notebook's instance reports no SM or tensor activity: absent, not 0.
  EXPECT_EQ(m.find("gpu_job_sm_active_ratio" + notebook), std::string::npos) << m;
  EXPECT_EQ(m.find("gpu_job_tensor_active_ratio" + notebook), std::string::npos) << m;
  // It is idle (graphics 0) for over the window: a seventh of a GPU idle.
  EXPECT_NEAR(Value(m, "gpu_idle_allocated_gpus "), k1g, 1e-12) << m;
  EXPECT_NEAR(Value(m,
                    "gpu_idle_streak_seconds{gpu=\"0\",uuid=\"GPU-0\",mig_instance=\"9\","
                    "mig_profile=\"1g.10gb\"}"),
              100, 1e-9)
      << m;
  EXPECT_NEAR(Value(m, "gpu_job_idle_gpu_seconds_total" + notebook + "}"), k1g * 100, 1e-9) << m;

  // The platform layer's view: the units each job holds.
  for (const JobsService::HeldGpus& h : jobs.AllocatedJobs()) {
    std::vector<unsigned> expected;
    if (h.job_id == "hollow") expected = {jobs::MigUnit(0, 1)};
    if (h.job_id == "notebook") expected = {jobs::MigUnit(0, 9)};
    if (h.job_id == "train") expected = {1};
    EXPECT_EQ(h.gpus, expected) << h.job_id;
  }

  // The hollow job ends: its record has the instance and the low SM activity.
  jobs.OnSnapshot(Snap(1110, /*with_hollow=*/false));
  std::optional<std::string> one = jobs.JobJson("hollow");
  ASSERT_TRUE(one.has_value());
  nlohmann::json record = nlohmann::json::parse(*one)["data"];
  EXPECT_EQ(record["state"], "ENDED");
  EXPECT_EQ(record["gpu"]["gpus"], nlohmann::json::array({0}));  // the GPU it ran on
  ASSERT_EQ(record["gpu"]["mig"].size(), 1u);
  EXPECT_EQ(record["gpu"]["mig"][0]["mig_profile"], "3g.40gb");
  EXPECT_EQ(record["gpu"]["mig"][0]["mig_uuid"], "MIG-aaaa");
  EXPECT_NEAR(record["gpu"]["sm_active_avg"].get<double>(), 0.05, 1e-12);
  EXPECT_NEAR(record["gpu"]["gpu_equivalents"].get<double>(), k3g, 1e-12);
  Expected<jobs::JobRecord> parsed = jobs::JobRecordFromJson(record.dump());
  ASSERT_TRUE(parsed.ok());
  const std::string detail = cli::JobDetail(*parsed);
  EXPECT_NE(detail.find("0/1 0.43 GPU (3g.40gb)"), std::string::npos) << detail;
  EXPECT_NE(detail.find("SM activity:        avg 5.0%"), std::string::npos) << detail;
  const std::string table = cli::JobsTable({*parsed});
  EXPECT_NE(table.find(" 5%  "), std::string::npos) << table;  // the SM ACT column

  // A running job without GPM figures shows "-" for them, never 0 %.
  nlohmann::json running = nlohmann::json::parse(jobs.JobsJson({.running_only = true}));
  for (const nlohmann::json& j : running["data"]["jobs"]) {
    if (j["job_id"] != "notebook") continue;
    EXPECT_FALSE(j["gpu"].contains("sm_active_avg")) << j.dump();
    Expected<jobs::JobRecord> nb = jobs::JobRecordFromJson(j.dump());
    ASSERT_TRUE(nb.ok());
    const std::string d = cli::JobDetail(*nb);
    EXPECT_NE(d.find("SM activity:        -\n"), std::string::npos) << d;
    EXPECT_EQ(d.find("SM activity:        avg 0"), std::string::npos) << d;
  }
}

}  // namespace
}  // namespace gw::serve
