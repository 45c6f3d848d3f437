// The task layer's cost per recorded snapshot: JobsService::OnSnapshot (attribution, per-job
// statistics, the ledger, idle tracking) as `serve` runs it, over a fake /proc tree.
//
//   build/bin/jobs_bench [--gpus 8] [--processes-per-gpu 64] [--seconds 300] [--slow-every 10]
//
// One snapshot per simulated second; the process lists are re-read (the snapshot's slow-cycle
// count moves) every --slow-every snapshots, as the collector does on its slow interval. Half of
// the GPUs run Slurm jobs named by the processes' cgroups, the other half GPUWARDEN_JOB process
// jobs, eight processes per job. Each process' environment holds 60 unrelated variables. Prints the
// CPU time of this thread (steadier than the wall clock on a shared machine) and the wall time: per
// snapshot on average, on slow-cycle snapshots, on the others, and per simulated second.
//
//   build/bin/jobs_bench --kubernetes-pods 110 [--devices-per-pod 8] [--poll-every 10]
//                        [--churn 2]
//
// Kubernetes instead: jobs.scheduler kubernetes over an in-memory kubelet (no gRPC; the client's
// cost is k8s_grpc_test's and docs/benchmarks.md's) listing that many pods, each holding
// --devices-per-pod GPUs by UUID (the snapshot has pods x devices GPUs, one process each). Every
// --poll-every snapshots the poller polls (on this thread, timed apart) with --churn pods
// replaced by new ones, so each poll moves the job table and the serve layer joins it again:
// device ids resolved into GPU units, the mapping invalidated, processes re-attributed.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/log.h"
#include "collect/snapshot.h"
#include "config/config.h"
#include "k8s/fake_pod_resources.h"
#include "k8s/poller.h"
#include "serve/jobs_service.h"

namespace {

using namespace gw;

void Write(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

void MakeProcess(const std::string& root, unsigned pid, bool slurm, unsigned job) {
  const std::string dir = root + "/" + std::to_string(pid);
  std::filesystem::create_directories(dir);
  Write(dir + "/stat",
        std::to_string(pid) + " (python3) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 12345 1 1 0\n");
  Write(dir + "/status", "Name:\tpython3\nUid:\t0\t0\t0\t0\n");
  Write(dir + "/cgroup", slurm ? "0::/system.slice/slurmstepd.scope/job_" + std::to_string(job) +
                                     "/step_0/user/task_0\n"
                               : "0::/user.slice/user-0.slice/session-1.scope\n");
  std::string env;
  for (int i = 0; i < 60; ++i)
    env += "SOME_VARIABLE_" + std::to_string(i) + "=" + std::string(40, 'v') + '\0';
  if (slurm) {
    env += "SLURM_JOB_ID=" + std::to_string(job) + '\0';
  } else {
    env += "GPUWARDEN_JOB=run-" + std::to_string(job) + '\0' + "GPUWARDEN_TEAM=vision" + '\0';
  }
  Write(dir + "/environ", env);
}

double ThreadCpuS() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double WallS() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int Flag(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::max(1, std::atoi(argv[i + 1]));
  return fallback;
}

}  // namespace

std::string Uuid(int g) {
  return "GPU-" + std::to_string(g) + "-0000-0000-0000-000000000000";
}

// A fresh directory for the fake /proc and the data dir; "" (and a message) if none can be made.
std::string TempRoot() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "gwjobsbench-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) {
    std::perror("mkdtemp");
    return "";
  }
  return tmpl;
}

// GPU g of the bench's node: busy at `util`, half its memory used.
collect::GpuSnapshot BenchGpu(int g, double util) {
  collect::GpuSnapshot gpu;
  gpu.values.fill(collect::kAbsent);
  gpu.identity.index = static_cast<unsigned>(g);
  gpu.identity.uuid = Uuid(g);
  auto set = [&gpu](collect::Slot slot, double v) { gpu.values[static_cast<size_t>(slot)] = v; };
  set(collect::Slot::kUtilization, util);
  set(collect::Slot::kMemoryUsed, 40e9);
  set(collect::Slot::kMemoryTotal, 80e9);
  set(collect::Slot::kPower, 300);
  return gpu;
}

int KubernetesBench(int argc, char** argv) {
  const int pods = Flag(argc, argv, "--kubernetes-pods", 110);
  const int per_pod = Flag(argc, argv, "--devices-per-pod", 8);
  const int seconds = Flag(argc, argv, "--seconds", 300);
  const int poll_every = Flag(argc, argv, "--poll-every", 10);
  int churn = 2;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--churn") == 0) churn = std::max(0, std::atoi(argv[i + 1]));
  const int gpus = pods * per_pod;

  const std::string root = TempRoot();
  if (root.empty()) return 1;
  const std::string proc = root + "/proc";

  collect::Snapshot snapshot;
  for (int g = 0; g < gpus; ++g) {
    collect::GpuSnapshot gpu = BenchGpu(g, g % 5 == 0 ? 0.0 : 0.8);
    const unsigned pid = 10000 + static_cast<unsigned>(g);
    MakeProcess(proc, pid, false, pid);
    gpu.processes.push_back({pid, 1e9, collect::kAbsent});
    snapshot.gpus.push_back(std::move(gpu));
  }
  auto kubelet = std::make_shared<k8s::testing::FakeKubelet>();
  // Pod p holds GPUs p*per_pod.. ; replacing it gives it a new name (a new job on the same GPUs).
  std::vector<int> generation(static_cast<std::size_t>(pods), 0);
  auto answer = [&] {
    std::vector<k8s::PodResources> list;
    for (int p = 0; p < pods; ++p) {
      std::vector<std::string> ids;
      for (int d = 0; d < per_pod; ++d) ids.push_back(Uuid(p * per_pod + d));
      list.push_back(k8s::testing::FakePod(
          "team-" + std::to_string(p % 7),
          "pod-" + std::to_string(p) + "-g" + std::to_string(generation[std::size_t(p)]),
          {{"main", "nvidia.com/gpu", ids}}));
    }
    return list;
  };
  kubelet->Set(answer());

  config::Config config;
  config.storage.path = root + "/data";
  config.jobs.scheduler = "kubernetes";
  config.teams.namespaces = {{"/team-[0-3]/", "research"}, {"team-4", "vision"}};
  Logger logger(LogLevel::kError);
  ManualClock clock(static_cast<std::int64_t>(1.7e12));
  k8s::KubernetesPoller* poller = nullptr;
  serve::JobsServiceOptions options{proc, "benchnode", {}};
  options.job_source = [&](const config::Config&, Logger* log) {
    k8s::KubernetesPollerOptions o;
    o.table.node_name = "benchnode";
    auto made = std::make_unique<k8s::KubernetesPoller>(
        o, std::make_unique<k8s::testing::FakePodResourcesApi>(kubelet), log, &clock);
    poller = made.get();
    return made;
  };
  serve::JobsService jobs(config, &logger, options);

  double poll_cpu = 0, join_cpu = 0, other_cpu = 0;
  int polls = 0, others = 0;
  const double t0 = 1.7e9;
  poller->PollOnce();
  snapshot.taken_unix_seconds = t0;
  jobs.OnSnapshot(snapshot);  // warm-up: the first join and attribution pass
  for (int s = 1; s <= seconds; ++s) {
    snapshot.taken_unix_seconds = t0 + s;
    clock.SetSeconds(t0 + s);
    const bool poll = s % poll_every == 0;
    if (poll) {
      for (int c = 0; c < churn && c < pods; ++c)
        ++generation[std::size_t((polls * churn + c) % pods)];
      kubelet->Set(answer());  // built outside the timed part
      const double c0 = ThreadCpuS();
      poller->PollOnce();
      poll_cpu += ThreadCpuS() - c0;
      ++polls;
    }
    const double c0 = ThreadCpuS();
    jobs.OnSnapshot(snapshot);
    (poll ? join_cpu : other_cpu) += ThreadCpuS() - c0;
    if (!poll) ++others;
  }
  std::printf(
      "kubernetes, %d pods x %d GPUs (%d GPUs, one process each), %d snapshots 1 s apart, "
      "a poll every %d with %d pods replaced:\n",
      pods, per_pod, gpus, seconds, poll_every, churn);
  if (polls > 0) {
    std::printf("  CPU per poll (fake kubelet):        %8.3f ms\n", poll_cpu * 1e3 / polls);
    std::printf("  CPU per snapshot after a poll:      %8.3f ms (the join)\n",
                join_cpu * 1e3 / polls);
  }
  if (others > 0)
    std::printf("  CPU per other snapshot:             %8.3f ms\n", other_cpu * 1e3 / others);
  std::error_code ec;
  std::filesystem::remove_all(root, ec);
  return 0;
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--kubernetes-pods") == 0) return KubernetesBench(argc, argv);
  const int gpus = Flag(argc, argv, "--gpus", 8);
  const int per_gpu = Flag(argc, argv, "--processes-per-gpu", 64);
  const int seconds = Flag(argc, argv, "--seconds", 300);
  const int slow_every = Flag(argc, argv, "--slow-every", 10);

  const std::string root = TempRoot();
  if (root.empty()) return 1;
  const std::string proc = root + "/proc";

  collect::Snapshot snapshot;
  for (int g = 0; g < gpus; ++g) {
    collect::GpuSnapshot gpu = BenchGpu(g, 0.8);
    gpu.values[static_cast<size_t>(collect::Slot::kEnergy)] = 0;
    const bool slurm = g % 2 == 0;
    for (int p = 0; p < per_gpu; ++p) {
      const unsigned pid = 10000 + static_cast<unsigned>(g * per_gpu + p);
      MakeProcess(proc, pid, slurm, 100 + pid / 8);
      gpu.processes.push_back({pid, 1e9, collect::kAbsent});
    }
    snapshot.gpus.push_back(std::move(gpu));
  }

  config::Config config;
  config.storage.path = root + "/data";
  Logger logger(LogLevel::kError);
  serve::JobsService jobs(config, &logger, serve::JobsServiceOptions{proc, "benchnode"});

  double slow_cpu = 0, fast_cpu = 0, wall = 0;
  int slow_n = 0, fast_n = 0;
  const double t0 = 1.7e9;
  // One warm-up snapshot fills the caches (the cold pass is the attribution test's business).
  snapshot.taken_unix_seconds = t0;
  jobs.OnSnapshot(snapshot);
  for (int s = 1; s <= seconds; ++s) {
    snapshot.taken_unix_seconds = t0 + s;
    const bool slow = s % slow_every == 0;
    if (slow) ++snapshot.stats.slow_cycles;
    for (collect::GpuSnapshot& gpu : snapshot.gpus)
      gpu.values[static_cast<size_t>(collect::Slot::kEnergy)] = 300.0 * s;
    const double c0 = ThreadCpuS(), w0 = WallS();
    jobs.OnSnapshot(snapshot);
    const double c1 = ThreadCpuS(), w1 = WallS();
    wall += w1 - w0;
    (slow ? slow_cpu : fast_cpu) += c1 - c0;
    ++(slow ? slow_n : fast_n);
  }
  const int total = slow_n + fast_n;
  std::printf(
      "task layer, %d GPUs x %d processes (%d), %d snapshots 1 s apart, slow cycle every "
      "%d:\n",
      gpus, per_gpu, gpus * per_gpu, total, slow_every);
  std::printf("  CPU per snapshot:            %8.3f ms (wall %.3f ms)\n",
              (slow_cpu + fast_cpu) * 1e3 / total, wall * 1e3 / total);
  if (slow_n > 0) std::printf("  CPU per slow-cycle snapshot: %8.3f ms\n", slow_cpu * 1e3 / slow_n);
  if (fast_n > 0) std::printf("  CPU per other snapshot:      %8.3f ms\n", fast_cpu * 1e3 / fast_n);
  std::printf("  CPU per simulated second:    %8.3f ms\n", (slow_cpu + fast_cpu) * 1e3 / seconds);

  std::error_code ec;
  std::filesystem::remove_all(root, ec);
  return 0;
}
