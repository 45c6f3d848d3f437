// The task layer's hot path: the process -> job mapping is recomputed only when its inputs change
// (process lists, a listed pid's process, the scheduler's job table) and reused otherwise, while
// per-job statistics keep accumulating every snapshot; finished jobs' records are written after
// the service's lock is released; and a snapshot that reuses the mapping allocates nothing per
// process. Fake /proc trees, hand-built snapshots and a stand-in squeue, as in jobs_service_test.
#include "serve/jobs_mapping.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>

#include "k8s/fake_pod_resources.h"
#include "serve/jobs_service.h"
#include "support/fake_proc.h"
#include "support/process.h"
#include "top/alloc_count.h"

namespace gw::serve {
namespace {

using gw::testing::FakeProcess;
using gw::testing::ReadFile;
using gw::testing::TempDir;
using gw::testing::WaitFor;
using gw::testing::WriteFile;

std::string SlurmCgroup(int job) {
  return "0::/system.slice/slurmstepd.scope/job_" + std::to_string(job) + "/step_0/user/task_0\n";
}

collect::GpuSnapshot Gpu(unsigned index, double util_ratio, double power_w,
                         std::vector<unsigned> pids = {}) {
  collect::GpuSnapshot g;
  g.values.fill(collect::kAbsent);
  g.identity.index = index;
  g.identity.uuid = "GPU-" + std::to_string(index);
  auto set = [&g](collect::Slot s, double v) { g.values[static_cast<size_t>(s)] = v; };
  set(collect::Slot::kUtilization, util_ratio);
  set(collect::Slot::kMemoryUsed, 1e9);
  set(collect::Slot::kMemoryTotal, 80e9);
  set(collect::Slot::kPower, power_w);
  for (unsigned pid : pids) g.processes.push_back({pid, 1e9, collect::kAbsent});
  return g;
}

collect::Snapshot Snap(double t, std::uint64_t slow_cycles,
                       std::vector<collect::GpuSnapshot> gpus) {
  collect::Snapshot s;
  s.taken_unix_seconds = t;
  s.stats.slow_cycles = slow_cycles;
  s.gpus = std::move(gpus);
  return s;
}

std::string Metrics(const JobsService& jobs) {
  std::string out;
  jobs.RenderMetrics(collect::Format::kText, &out);
  return out;
}

bool Has(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

std::string Job(const ProcessJobMapping& mapping, unsigned pid) {
  for (const auto& p : mapping.processes())
    if (p.process.pid == static_cast<pid_t>(pid)) return p.process.job_id;
  return "<none>";
}

TEST(ProcessJobMapping, ReusedUntilAProcessAppearsOrGoes) {
  TempDir dir;
  const std::string proc = dir / "proc";
  FakeProcess(proc, 100, 5000, SlurmCgroup(7), {});
  FakeProcess(proc, 200, 5001, SlurmCgroup(8), {});
  ProcessJobMapping mapping(proc);

  EXPECT_TRUE(mapping.Update(Snap(1, 1, {Gpu(0, 0, 0, {100}), Gpu(1, 0, 0)})));
  EXPECT_EQ(mapping.passes(), 1u);
  EXPECT_EQ(mapping.process_reads(), 1u);
  EXPECT_EQ(Job(mapping, 100), "7");
  // The same lists, no slow cycle since: nothing is read.
  for (int i = 0; i < 5; ++i)
    EXPECT_FALSE(mapping.Update(Snap(2 + i, 1, {Gpu(0, 0, 0, {100}), Gpu(1, 0, 0)})));
  EXPECT_EQ(mapping.reused(), 5u);
  EXPECT_EQ(mapping.passes(), 1u);

  // A process appears on GPU 1.
  EXPECT_TRUE(mapping.Update(Snap(10, 1, {Gpu(0, 0, 0, {100}), Gpu(1, 0, 0, {200})})));
  EXPECT_EQ(mapping.passes(), 2u);
  EXPECT_EQ(mapping.process_reads(), 2u);  // pid 100 came from the cache
  EXPECT_EQ(Job(mapping, 200), "8");
  ASSERT_EQ(mapping.processes().size(), 2u);
  EXPECT_EQ(mapping.processes()[1].gpu, 1u);
  // The same pid listed on another GPU is a change too.
  EXPECT_TRUE(mapping.Update(Snap(11, 1, {Gpu(0, 0, 0, {100, 200}), Gpu(1, 0, 0)})));
  EXPECT_EQ(mapping.processes()[1].gpu, 0u);
  // A process goes.
  EXPECT_TRUE(mapping.Update(Snap(12, 1, {Gpu(0, 0, 0, {100}), Gpu(1, 0, 0)})));
  EXPECT_EQ(mapping.processes().size(), 1u);
  EXPECT_EQ(Job(mapping, 200), "<none>");
  EXPECT_EQ(mapping.passes(), 4u);
}

TEST(ProcessJobMapping, PidReusedByAnotherJobIsSeenAtTheNextSlowCycle) {
  TempDir dir;
  const std::string proc = dir / "proc";
  FakeProcess(proc, 100, 5000, SlurmCgroup(7), {});
  ProcessJobMapping mapping(proc);
  ASSERT_TRUE(mapping.Update(Snap(1, 1, {Gpu(0, 0, 0, {100})})));
  EXPECT_EQ(Job(mapping, 100), "7");

  // A slow cycle with the same lists and the same process: checked (stat), reused.
  EXPECT_FALSE(mapping.Update(Snap(10, 2, {Gpu(0, 0, 0, {100})})));
  EXPECT_EQ(mapping.verified(), 1u);
  EXPECT_EQ(mapping.passes(), 1u);

  // Job 7's process exits; another job's process gets pid 100 (new start time, new cgroup).
  FakeProcess(proc, 100, 9000, SlurmCgroup(9), {});
  // Between slow cycles the collector carries its last lists: nothing is read.
  EXPECT_FALSE(mapping.Update(Snap(11, 2, {Gpu(0, 0, 0, {100})})));
  EXPECT_EQ(Job(mapping, 100), "7");
  // At the next slow cycle the lists are the same, but pid 100 is another process.
  EXPECT_TRUE(mapping.Update(Snap(20, 3, {Gpu(0, 0, 0, {100})})));
  EXPECT_EQ(Job(mapping, 100), "9");
  EXPECT_EQ(mapping.process_reads(), 2u);

  // The process exits and NVML still lists it: at the next slow cycle it is left out.
  std::filesystem::remove_all(proc + "/100");
  EXPECT_TRUE(mapping.Update(Snap(30, 4, {Gpu(0, 0, 0, {100})})));
  EXPECT_TRUE(mapping.processes().empty());
  // Still listed and still unreadable: checked again at each slow cycle (never reused as is).
  EXPECT_FALSE(mapping.Update(Snap(31, 4, {Gpu(0, 0, 0, {100})})));
  EXPECT_TRUE(mapping.Update(Snap(40, 5, {Gpu(0, 0, 0, {100})})));
}

// While the mapping is reused, the job's statistics still accumulate every snapshot. The fake
// /proc entry is removed after the first snapshot: had the service read /proc again before the
// next slow cycle, the job would have ended there.
TEST(JobsServiceMapping, StatisticsAccumulateWhileTheMappingIsReused) {
  TempDir dir;
  const std::string proc = dir / "proc";
  FakeProcess(proc, 4242, 777, "0::/user.slice\n", {"GPUWARDEN_JOB=train-7"});
  config::Config config;
  config.storage.path = dir / "data";
  Logger logger(LogLevel::kError);
  JobsService jobs(config, &logger, JobsServiceOptions{proc, "testnode"});

  jobs.OnSnapshot(Snap(1000, 1, {Gpu(0, 0.5, 100, {4242})}));
  std::filesystem::remove_all(proc + "/4242");
  const std::string l = "{job_id=\"train-7\",user=\"root\",team=\"unassigned\",partition=\"\"";
  for (int s = 1; s <= 9; ++s) {
    jobs.OnSnapshot(Snap(1000 + s, 1, {Gpu(0, s == 9 ? 0.75 : 0.5, 100.0 + 10 * s, {4242})}));
    const std::string m = Metrics(jobs);
    ASSERT_TRUE(Has(m, "gpu_job_gpu_seconds_total" + l + "} " + std::to_string(s) + "\n"))
        << s << "\n"
        << m;
  }
  // Energy: trapezoids of 100, 110, ..., 190 W over 1 s each = 9 x 100 + 10 x (0.5+1.5+...+8.5).
  std::string m = Metrics(jobs);
  EXPECT_TRUE(Has(m, "gpu_job_energy_joules_total" + l + "} 1305\n")) << m;
  EXPECT_TRUE(Has(m, "gpu_job_sm_utilization_ratio" + l + ",stat=\"max\"} 0.75\n")) << m;
  EXPECT_TRUE(Has(m, "gpu_allocation_info{gpu=\"0\",uuid=\"GPU-0\",job_id=\"train-7\"")) << m;

  // The slow cycle checks the pid: it is gone, so the job ends and its record is written.
  jobs.OnSnapshot(Snap(1010, 2, {Gpu(0, 0, 100, {4242})}));
  m = Metrics(jobs);
  EXPECT_FALSE(Has(m, "gpu_allocation_info{")) << m;
  auto record = jobs.JobJson("train-7");
  ASSERT_TRUE(record.has_value());
  nlohmann::json r = nlohmann::json::parse(*record)["data"];
  EXPECT_EQ(r["state"], "ENDED");
  EXPECT_EQ(r["end_time"], 1010);
  EXPECT_EQ(r["gpu"]["gpu_seconds"], 10);
  // Acknowledged in the API, so on disk.
  EXPECT_TRUE(Has(ReadFile(dir / "data/jobs/jobs.jsonl"), "\"job_id\":\"train-7\""));
}

// A pid reused by another job (same pid, new start time, new cgroup): the old job ends and the
// new one holds the GPU from that slow cycle on.
TEST(JobsServiceMapping, PidReusedByAnotherJob) {
  TempDir dir;
  const std::string proc = dir / "proc";
  FakeProcess(proc, 4242, 777, "0::/user.slice\n", {"GPUWARDEN_JOB=first"});
  config::Config config;
  config.storage.path = dir / "data";
  Logger logger(LogLevel::kError);
  JobsService jobs(config, &logger, JobsServiceOptions{proc, "testnode"});
  jobs.OnSnapshot(Snap(1000, 1, {Gpu(0, 0.5, 100, {4242})}));
  jobs.OnSnapshot(Snap(1001, 1, {Gpu(0, 0.5, 100, {4242})}));
  EXPECT_TRUE(Has(Metrics(jobs), "job_id=\"first\""));

  FakeProcess(proc, 4242, 999, "0::/user.slice\n", {"GPUWARDEN_JOB=second"});
  jobs.OnSnapshot(Snap(1002, 1, {Gpu(0, 0.5, 100, {4242})}));  // between slow cycles
  EXPECT_TRUE(Has(Metrics(jobs), "job_id=\"first\""));
  jobs.OnSnapshot(Snap(1010, 2, {Gpu(0, 0.5, 100, {4242})}));
  const std::string m = Metrics(jobs);
  EXPECT_FALSE(Has(m, "job_id=\"first\"")) << m;
  EXPECT_TRUE(Has(m, "gpu_allocation_info{gpu=\"0\",uuid=\"GPU-0\",job_id=\"second\"")) << m;
  auto first = jobs.JobJson("first");
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(nlohmann::json::parse(*first)["data"]["state"], "ENDED");
  auto second = jobs.JobJson("second");
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(nlohmann::json::parse(*second)["data"]["state"], "RUNNING");
}

// The record is written after the lock is released; a write that fails is counted and logged,
// and the record still shown (kept in memory), as before.
TEST(JobsServiceMapping, ARecordThatCannotBeWrittenIsCountedAndKept) {
  TempDir dir;
  const std::string proc = dir / "proc";
  FakeProcess(proc, 4242, 777, "0::/user.slice\n", {"GPUWARDEN_JOB=train-7"});
  config::Config config;
  config.storage.path = dir / "data";
  std::filesystem::create_directories(dir / "data/jobs/jobs.jsonl");  // not a file: writes fail
  std::vector<std::string> logs;
  Logger logger(LogLevel::kError, [&](LogLevel, const std::string& l) { logs.push_back(l); });
  JobsService jobs(config, &logger, JobsServiceOptions{proc, "testnode"});
  jobs.OnSnapshot(Snap(1000, 1, {Gpu(0, 0.5, 100, {4242})}));
  jobs.OnSnapshot(Snap(1010, 1, {Gpu(0, 0.5, 100)}));
  EXPECT_TRUE(Has(Metrics(jobs), "gpuwarden_job_record_errors_total 1\n")) << Metrics(jobs);
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_TRUE(Has(logs[0], "writing the record of job train-7")) << logs[0];
  auto record = jobs.JobJson("train-7");
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ(nlohmann::json::parse(*record)["data"]["state"], "ENDED");
  EXPECT_EQ(nlohmann::json::parse(jobs.JobsJson({}))["data"]["jobs"].size(), 1u);
}

std::string SqueueWith(bool second_job) {
  std::string jobs = R"js({"job_id": 11, "name": "train", "job_state": "RUNNING",
   "user_name": "alice", "account": "physics", "partition": "gpu", "nodes": "node1",
   "submit_time": 1000, "eligible_time": 1000, "start_time": 1100, "end_time": 99999999,
   "gres_detail": ["gpu:1(IDX:0)"], "tres_per_node": "gres:gpu:1"})js";
  if (second_job)
    jobs += R"js(, {"job_id": 12, "name": "tune", "job_state": "RUNNING",
   "user_name": "bob", "account": "bio", "partition": "gpu", "nodes": "node1",
   "submit_time": 1000, "eligible_time": 1000, "start_time": 1150, "end_time": 99999999,
   "gres_detail": ["gpu:1(IDX:1)"], "tres_per_node": "gres:gpu:1"})js";
  return R"js({"meta": {}, "errors": [], "jobs": [)js" + jobs + "]}";
}

// The scheduler's job table is the mapping's other input: a job that starts or ends there shows
// at once, although the process lists (and so the process mapping) stay the same.
TEST(JobsServiceMapping, SchedulerJobsStartingAndEndingUpdateTheAllocations) {
  TempDir dir;
  const std::string proc = dir / "proc";
  FakeProcess(proc, 4242, 777, SlurmCgroup(11), {});
  const std::string script = dir / "squeue";
  WriteFile(dir / "answer.json", SqueueWith(false));
  WriteFile(script, "#!/bin/sh\ncat '" + (dir / "answer.json") + "'\n");
  chmod(script.c_str(), 0755);
  config::Config config;
  config.storage.path = dir / "data";
  config.jobs.scheduler = "slurm";
  config.jobs.squeue_command = {script, "--json"};
  config.jobs.poll_interval_s = 0.05;
  Logger logger(LogLevel::kError);
  JobsService jobs(config, &logger, JobsServiceOptions{proc, "node1"});
  jobs.Start();
  double t = 2000;
  auto snapshot = [&] {
    jobs.OnSnapshot(Snap(t += 1, 1, {Gpu(0, 0.5, 100, {4242}), Gpu(1, 0, 50)}));
  };
  const std::string job12 = "gpu_allocation_info{gpu=\"1\",uuid=\"GPU-1\",job_id=\"12\"";
  ASSERT_TRUE(WaitFor(
      [&] {
        snapshot();
        return Has(Metrics(jobs), "gpu_allocation_info{gpu=\"0\",uuid=\"GPU-0\",job_id=\"11\"");
      },
      30));
  EXPECT_FALSE(Has(Metrics(jobs), job12));
  // Job 12 starts on GPU 1.
  WriteFile(dir / "answer.json", SqueueWith(true));
  ASSERT_TRUE(WaitFor(
      [&] {
        snapshot();
        return Has(Metrics(jobs), job12);
      },
      30))
      << Metrics(jobs);
  EXPECT_TRUE(Has(Metrics(jobs), "gpu_jobs{state=\"RUNNING\"} 2\n"));
  // And leaves squeue (ends): GPU 1 is free again; job 11 keeps GPU 0.
  WriteFile(dir / "answer.json", SqueueWith(false));
  ASSERT_TRUE(WaitFor(
      [&] {
        snapshot();
        return !Has(Metrics(jobs), job12);
      },
      30))
      << Metrics(jobs);
  const std::string m = Metrics(jobs);
  EXPECT_TRUE(Has(m, "gpu_allocation_info{gpu=\"0\",uuid=\"GPU-0\",job_id=\"11\"")) << m;
  EXPECT_TRUE(Has(m, "gpu_jobs{state=\"RUNNING\"} 1\n")) << m;
  jobs.Stop();
}

// Snapshots 400 to 439 of `snapshot` (a slow cycle every ten), after 400 to warm up (the first
// pass, and the statistics' queues at their size): the allocations they make. `check` runs
// between the two, to see that the service holds what the test meant it to.
long CountSteadyState(JobsService* jobs, collect::Snapshot snapshot,
                      const std::function<void()>& check = nullptr) {
  auto run = [&](int from, int to) {
    for (int s = from; s < to; ++s) {
      snapshot.taken_unix_seconds = 1000 + s;
      if (s % 10 == 0) ++snapshot.stats.slow_cycles;
      jobs->OnSnapshot(snapshot);
    }
  };
  run(0, 400);
  if (check) check();
  top::StartCountingAllocations();
  run(400, 440);
  return top::StopCountingAllocations();
}

// No allocation in a steady state: the snapshots of a service whose mapping is reused (and
// checked at slow cycles) allocate nothing, at 8 processes as at 512, and with half the GPUs as
// 7 MIG instances each (GPM values, processes listed on their instances).
long SteadyStateAllocations(int processes, bool mig = false) {
  TempDir dir;
  const std::string proc = dir / "proc";
  std::vector<collect::GpuSnapshot> gpus;
  for (unsigned g = 0; g < 8; ++g) {
    gpus.push_back(Gpu(g, 0.5, 100));
    // Throttled by a reason whose name is longer than a short string's inline buffer.
    gpus.back().values[static_cast<size_t>(collect::Slot::kEventHwThermal)] = 1;
    if (!mig || g >= 4) continue;
    for (unsigned gi = 1; gi <= 7; ++gi) {
      collect::MigInstanceSnapshot m;
      m.gpu_instance_id = gi;
      m.profile = "1g.10gb-with-a-long-name";  // longer than a short string's inline buffer
      m.uuid = "MIG-" + std::to_string(g) + "-" + std::to_string(gi) + "-000000000000000000";
      m.slice_ratio = 1.0 / 7;
      m.memory_total_bytes = 10e9;
      m.memory_used_bytes = 1e9;
      m.gpm[static_cast<size_t>(collect::Gpm::kGraphicsActive)] = 0.01;  // idle
      m.gpm[static_cast<size_t>(collect::Gpm::kSmActive)] = 0.01;
      m.gpm[static_cast<size_t>(collect::Gpm::kTensorAny)] = 0;
      gpus.back().mig.push_back(m);
    }
  }
  for (int i = 0; i < processes; ++i) {
    const unsigned pid = 10000 + static_cast<unsigned>(i);
    // Two jobs, whatever the number of processes: one Slurm (cgroup), one process job.
    if (i % 2 == 0) {
      FakeProcess(proc, pid, 100 + pid, SlurmCgroup(11), {});
    } else {
      FakeProcess(proc, pid, 100 + pid, "0::/user.slice\n", {"GPUWARDEN_JOB=run"});
    }
    collect::GpuSnapshot& gpu = gpus[static_cast<size_t>(i) % 8];
    gpu.processes.push_back({pid, 1e9, collect::kAbsent});
    if (!gpu.mig.empty()) {  // on an instance: named on the GPU's list and the instance's
      collect::MigInstanceSnapshot& m = gpu.mig[static_cast<size_t>(i / 8) % gpu.mig.size()];
      gpu.processes.back().gpu_instance_id = m.gpu_instance_id;
      m.processes.push_back(gpu.processes.back());
    }
  }
  config::Config config;
  config.storage.path = dir / "data";
  Logger logger(LogLevel::kError);
  JobsService jobs(config, &logger, JobsServiceOptions{proc, "testnode"});
  return CountSteadyState(&jobs, Snap(1000, 1, gpus));
}

TEST(JobsServiceMapping, NoAllocationInTheSteadyState) {
  const long few = SteadyStateAllocations(8);
  const long many = SteadyStateAllocations(512);
  EXPECT_EQ(few, 0) << "allocations in 40 snapshots at 8 processes";
  EXPECT_EQ(many, 0) << "allocations in 40 snapshots at 512 processes";
  const long mig = SteadyStateAllocations(512, /*mig=*/true);
  EXPECT_EQ(mig, 0) << "allocations in 40 snapshots at 512 processes on MIG instances";
}

// The same with Kubernetes as the scheduler: pods holding GPUs by UUID and MIG UUID (and one id
// that matches nothing), processes in the pods' cgroups, after a poll: the snapshots between two
// polls allocate nothing either (the devices were resolved once, the layout hash is unchanged).
long KubernetesSteadyStateAllocations(int processes) {
  TempDir dir;
  const std::string proc = dir / "proc";
  std::vector<collect::GpuSnapshot> gpus;
  auto kubelet = std::make_shared<k8s::testing::FakeKubelet>();
  for (unsigned g = 0; g < 8; ++g) {
    gpus.push_back(Gpu(g, g % 2 ? 0.0 : 0.5, 100));  // odd GPUs idle
    if (g < 6) continue;
    for (unsigned gi = 1; gi <= 2; ++gi) {
      collect::MigInstanceSnapshot m;
      m.gpu_instance_id = gi;
      m.profile = "3g.40gb";
      m.uuid = "MIG-" + std::to_string(g) + "-" + std::to_string(gi) + "-000000000000000000";
      m.slice_ratio = 3.0 / 7;
      m.memory_total_bytes = 40e9;
      m.memory_used_bytes = 1e9;
      m.gpm[static_cast<size_t>(collect::Gpm::kGraphicsActive)] = 0.3;
      gpus.back().mig.push_back(m);
      kubelet->pods.push_back(k8s::testing::FakePod(
          "vision-" + std::to_string(g), "mig-" + std::to_string(gi),
          {{"main-container-with-a-long-name", "nvidia.com/mig-3g.40gb", {m.uuid}}}));
    }
  }
  for (unsigned p = 0; p < 3; ++p)  // pods on GPUs 0-5, two each
    kubelet->pods.push_back(k8s::testing::FakePod(
        "ml-research-namespace", "train-" + std::to_string(p),
        {{"main-container-with-a-long-name",
          "nvidia.com/gpu",
          {"GPU-" + std::to_string(2 * p), "GPU-" + std::to_string(2 * p + 1)}}}));
  kubelet->pods.push_back(
      k8s::testing::FakePod("web", "odd", {{"c", "nvidia.com/gpu", {"GPU-x"}}}));
  for (int i = 0; i < processes; ++i) {
    const unsigned pid = 10000 + static_cast<unsigned>(i);
    const unsigned g = static_cast<unsigned>(i) % 6;  // whole GPUs: the pods' processes
    char uid[64];
    std::snprintf(uid, sizeof uid, "%08u-5b6a-4789-8abc-def012345678", g / 2);
    FakeProcess(
        proc, pid, 100 + pid,
        std::string("0::/kubepods/besteffort/pod") + uid + "/" + std::string(64, 'a') + "\n", {});
    gpus[g].processes.push_back({pid, 1e9, collect::kAbsent});
  }
  config::Config config;
  config.storage.path = dir / "data";
  config.jobs.scheduler = "kubernetes";
  config.teams.namespaces = {{"/vision-.*/", "vision"}, {"ml-research-namespace", "research"}};
  Logger logger(LogLevel::kError);
  k8s::KubernetesPoller* poller = nullptr;
  JobsServiceOptions options{proc, "testnode"};
  options.job_source = [&](const config::Config&, Logger* log) {
    auto p = std::make_unique<k8s::KubernetesPoller>(
        k8s::KubernetesPollerOptions{},
        std::make_unique<k8s::testing::FakePodResourcesApi>(kubelet), log);
    poller = p.get();
    return p;
  };
  JobsService jobs(config, &logger, options);
  poller->PollOnce();
  return CountSteadyState(&jobs, Snap(1000, 1, gpus), [&jobs] {
    // The pods are there (a test that allocates nothing because it holds nothing proves nothing).
    const std::string m = Metrics(jobs);
    EXPECT_TRUE(Has(m, "job_id=\"ml-research-namespace/train-2\"")) << m;
    EXPECT_TRUE(Has(m, "mig_instance=\"2\",mig_profile=\"3g.40gb\",job_id=\"vision-7/mig-2\""))
        << m;
    EXPECT_TRUE(Has(m, "gpuwarden_kubernetes_unknown_devices 1")) << m;
  });
}

TEST(JobsServiceMapping, NoAllocationInTheSteadyStateWithKubernetes) {
  EXPECT_EQ(KubernetesSteadyStateAllocations(12), 0) << "allocations in 40 snapshots, 12 processes";
  EXPECT_EQ(KubernetesSteadyStateAllocations(384), 0)
      << "allocations in 40 snapshots, 384 processes";
}

}  // namespace
}  // namespace gw::serve
