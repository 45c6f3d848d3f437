// The task layer with Kubernetes as the scheduler, without a kubelet: a KubernetesPoller over a
// fake PodResourcesApi (tests/k8s/fake_pod_resources.h), polled by the test, snapshots built by
// hand and a fake /proc tree with pod cgroups. Pods become jobs holding the GPUs and MIG instances
// their device ids name; processes in a pod join its job; teams come from teams.namespaces; the
// jobs API serves "namespace/pod" ids; dcgm-exporter mode gets pod labels on device series.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "cli/jobs_commands.h"
#include "collect/dcgm_exposition.h"
#include "collect/exposition.h"
#include "http/server.h"
#include "k8s/fake_pod_resources.h"
#include "serve/governance_service.h"
#include "serve/jobs_service.h"
#include "support/fake_proc.h"
#include "support/http_client.h"
#include "support/process.h"

namespace gw::serve {
namespace {

using gw::k8s::testing::FakeDevices;
using gw::k8s::testing::FakeKubelet;
using gw::k8s::testing::FakePod;
using gw::k8s::testing::FakePodResourcesApi;
using gw::testing::FakeProcess;
using gw::testing::ReadFile;
using gw::testing::TempDir;
using gw::testing::WaitFor;
using gw::testing::WriteFile;

constexpr double kT0 = 1'700'000'000;

collect::GpuSnapshot Gpu(unsigned index, double util_ratio, std::vector<unsigned> pids = {}) {
  collect::GpuSnapshot g;
  g.values.fill(collect::kAbsent);
  g.identity.index = index;
  g.identity.uuid = "GPU-" + std::to_string(index);
  g.identity.name = "NVIDIA H100 80GB HBM3";
  auto set = [&g](collect::Slot s, double v) { g.values[static_cast<size_t>(s)] = v; };
  set(collect::Slot::kUtilization, util_ratio);
  set(collect::Slot::kMemoryUsed, 1e9);
  set(collect::Slot::kMemoryTotal, 80e9);
  set(collect::Slot::kPower, 100);
  for (unsigned pid : pids) g.processes.push_back({pid, 1e9, collect::kAbsent});
  return g;
}

void AddMig(collect::GpuSnapshot* gpu, unsigned gi) {
  collect::MigInstanceSnapshot m;
  m.gpu_instance_id = gi;
  m.profile = "3g.40gb";
  m.uuid = "MIG-" + std::to_string(gpu->identity.index) + "-" + std::to_string(gi);
  m.slice_ratio = 3.0 / 7;
  m.memory_total_bytes = 40e9;
  m.memory_used_bytes = 1e9;
  m.gpm[static_cast<size_t>(collect::Gpm::kGraphicsActive)] = 0;
  gpu->mig.push_back(m);
}

// GPUs 0, 1, 3 whole; GPU 2 with MIG instances 1 (and 2 when `second_instance`).
std::vector<collect::GpuSnapshot> Node(bool second_instance = false) {
  std::vector<collect::GpuSnapshot> gpus = {Gpu(0, 0), Gpu(1, 0), Gpu(2, 0), Gpu(3, 0.9)};
  AddMig(&gpus[2], 1);
  if (second_instance) AddMig(&gpus[2], 2);
  return gpus;
}

collect::Snapshot Snap(double t, std::vector<collect::GpuSnapshot> gpus) {
  collect::Snapshot s;
  s.taken_unix_seconds = t;
  s.gpus = std::move(gpus);
  return s;
}

bool Has(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

std::string Metrics(const JobsService& jobs) {
  std::string out;
  jobs.RenderMetrics(collect::Format::kText, &out);
  return out;
}

// A service whose scheduler is a KubernetesPoller over `kubelet`, polled by the test.
struct Fixture {
  explicit Fixture(std::string proc = "/nonexistent-proc") : proc_root(std::move(proc)) {
    config.storage.path = dir / "data";
    config.jobs.scheduler = "kubernetes";
    config.jobs.idle_window_s = 60;
    config.teams.namespaces = {{"ml", "research"}, {"/vision-.*/", "vision"}};
    config.teams.users = {{"alice", "alice-team"}};
    kubelet->pods = {
        FakePod("ml", "train-0", {{"main", "nvidia.com/gpu", {"GPU-0", "1"}}}),
        FakePod("vision-a", "infer", {{"srv", "nvidia.com/mig-3g.40gb", {"MIG-2-1"}}}),
        FakePod("web", "odd", {{"app", "nvidia.com/gpu", {"GPU-does-not-exist"}}}),
    };
    kubelet->allocatable.devices = {
        {"nvidia.com/gpu", {"GPU-0", "GPU-1", "GPU-3"}, {}},
        {"nvidia.com/mig-3g.40gb", {"MIG-2-1", "MIG-2-2"}, {}},
    };
    Make();
  }
  void Make() {
    JobsServiceOptions options;
    options.proc_root = proc_root;
    options.node_name = "node-1";
    options.job_source = [this](const config::Config&, Logger* log) {
      k8s::KubernetesPollerOptions o;
      o.table.node_name = "node-1";
      auto p = std::make_unique<k8s::KubernetesPoller>(
          o, std::make_unique<FakePodResourcesApi>(kubelet), log, &clock);
      poller = p.get();
      return p;
    };
    jobs.reset();
    jobs = std::make_unique<JobsService>(config, &logger, options);
  }
  void Poll(double t) {
    clock.SetSeconds(t);
    poller->PollOnce();
  }

  TempDir dir;
  std::string proc_root;
  config::Config config;
  Logger logger{LogLevel::kError};
  ManualClock clock{static_cast<std::int64_t>(kT0 * 1000)};
  std::shared_ptr<FakeKubelet> kubelet = std::make_shared<FakeKubelet>();
  k8s::KubernetesPoller* poller = nullptr;
  std::unique_ptr<JobsService> jobs;
};

TEST(KubernetesJobs, PodsHoldTheirGpusAndMigInstances) {
  Fixture f;
  f.Poll(kT0);
  f.jobs->OnSnapshot(Snap(kT0, Node()));
  const std::string m = Metrics(*f.jobs);
  // GPU UUID and index text both resolve; labels of the pod and the container it was given to.
  for (const char* gpu : {"0", "1"})
    EXPECT_TRUE(Has(m, std::string("gpu_allocation_info{gpu=\"") + gpu + "\",uuid=\"GPU-" + gpu +
                           "\",job_id=\"ml/train-0\",user=\"\",team=\"research\",partition=\"\","
                           "pod=\"train-0\",namespace=\"ml\",container=\"main\"} 1"))
        << m;
  // A MIG UUID: the instance's unit.
  EXPECT_TRUE(Has(m,
                  "gpu_allocation_info{gpu=\"2\",uuid=\"GPU-2\",mig_instance=\"1\","
                  "mig_profile=\"3g.40gb\",job_id=\"vision-a/infer\",user=\"\",team=\"vision\","
                  "partition=\"\",pod=\"infer\",namespace=\"vision-a\",container=\"srv\"} 1"))
      << m;
  EXPECT_FALSE(Has(m, "gpu_allocation_info{gpu=\"3\"")) << m;
  // Per-job families carry pod and namespace (no container: a job spans containers).
  EXPECT_TRUE(Has(m,
                  "gpu_job_gpus{job_id=\"ml/train-0\",user=\"\",team=\"research\","
                  "partition=\"\",pod=\"train-0\",namespace=\"ml\"} 2"))
      << m;
  // The unknown id is counted, and its pod holds nothing here.
  EXPECT_TRUE(Has(m, "gpuwarden_kubernetes_unknown_devices 1")) << m;
  EXPECT_FALSE(Has(m, "job_id=\"web/odd\"")) << m;
  // The source's health under its own name; no Slurm families.
  EXPECT_TRUE(Has(m, "gpuwarden_kubernetes_up 1")) << m;
  EXPECT_TRUE(Has(m, "gpuwarden_kubernetes_polls_total 1")) << m;
  EXPECT_TRUE(Has(m, "gpuwarden_kubernetes_poll_failures_total 0")) << m;
  EXPECT_TRUE(Has(m, "gpuwarden_kubernetes_allocatable_devices{resource=\"nvidia.com/gpu\"} 3"))
      << m;
  EXPECT_FALSE(Has(m, "gpuwarden_slurm_")) << m;
  EXPECT_FALSE(Has(m, "gpuwarden_kubernetes_pod_list_up")) << m;  // no pod list configured

  // Held GPUs with no process are allocated and idle: after the idle window they count.
  for (double t = kT0 + 1; t <= kT0 + 61; t += 1) f.jobs->OnSnapshot(Snap(t, Node()));
  const std::string later = Metrics(*f.jobs);
  // GPUs 0 and 1 whole; the MIG instance (GPM graphics 0) by its share.
  EXPECT_TRUE(Has(later, "gpu_idle_allocated_gpus 2.42857")) << later;

  // The platform layer's view: the pod's facts.
  bool found = false;
  for (const JobsService::HeldGpus& h : f.jobs->AllocatedJobs()) {
    if (h.job_id != "ml/train-0") continue;
    found = true;
    EXPECT_EQ(h.source, "kubernetes");
    EXPECT_EQ(h.account, "ml");
    EXPECT_EQ(h.name, "train-0");
    EXPECT_EQ(h.pod_namespace, "ml");
    EXPECT_EQ(h.pod_name, "train-0");
    EXPECT_EQ(h.team, "research");
    EXPECT_EQ(h.gpus, (std::vector<unsigned>{0, 1}));
  }
  EXPECT_TRUE(found);
}

// Time-slicing: the device plugin hands out "<uuid>::<replica>" ids, several pods sharing a GPU.
// Each replica is its GPU; both pods hold it; nothing is unknown.
TEST(KubernetesJobs, TimeSlicedReplicasHoldTheirGpu) {
  Fixture f;
  f.kubelet->pods = {
      FakePod("ml", "a", {{"main", "nvidia.com/gpu", {"GPU-1::0"}}}),
      FakePod("ml", "b", {{"main", "nvidia.com/gpu", {"GPU-1::1", "GPU-1::2"}}}),
  };
  f.Poll(kT0);
  f.jobs->OnSnapshot(Snap(kT0, Node()));
  const std::string m = Metrics(*f.jobs);
  for (const char* pod : {"a", "b"})
    EXPECT_TRUE(Has(
        m, std::string("gpu_allocation_info{gpu=\"1\",uuid=\"GPU-1\",job_id=\"ml/") + pod + "\""))
        << m;
  EXPECT_TRUE(Has(m, "gpuwarden_kubernetes_unknown_devices 0")) << m;
  // Pod b's two replicas are one GPU.
  EXPECT_TRUE(Has(m, "gpu_job_gpus{job_id=\"ml/b\",user=\"\",team=\"research\"")) << m;
  EXPECT_TRUE(Has(m, "pod=\"b\",namespace=\"ml\"} 1")) << m;
}

TEST(KubernetesJobs, NewMigLayoutResolvesWithoutAPoll) {
  Fixture f;
  f.kubelet->pods = {FakePod("vision-b", "x", {{"c", "nvidia.com/mig-3g.40gb", {"MIG-2-2"}}})};
  f.Poll(kT0);
  f.jobs->OnSnapshot(Snap(kT0, Node(false)));
  std::string m = Metrics(*f.jobs);
  EXPECT_TRUE(Has(m, "gpuwarden_kubernetes_unknown_devices 1")) << m;
  EXPECT_FALSE(Has(m, "job_id=\"vision-b/x\"")) << m;
  // The instance appears (the snapshot's layout moved): resolved, no new poll needed.
  f.jobs->OnSnapshot(Snap(kT0 + 1, Node(true)));
  m = Metrics(*f.jobs);
  EXPECT_TRUE(Has(m, "gpuwarden_kubernetes_unknown_devices 0")) << m;
  EXPECT_TRUE(Has(m, "mig_instance=\"2\",mig_profile=\"3g.40gb\",job_id=\"vision-b/x\"")) << m;
  EXPECT_EQ(f.kubelet->list_calls, 1);
  // ...and its figures start then: the per-job families have it, by the instance's share.
  EXPECT_TRUE(Has(m,
                  "gpu_job_gpus{job_id=\"vision-b/x\",user=\"\",team=\"vision\",partition=\"\","
                  "pod=\"x\",namespace=\"vision-b\"} 0.428571"))
      << m;
}

TEST(KubernetesJobs, PodProcessesJoinThePodsJob) {
  TempDir procs;
  const std::string proc = procs / "proc";
  // A process of the pod holding GPU 0 (matched through the one pod holding its GPU), and one in
  // another pod on GPU 3, which no pod holds: never claimed.
  FakeProcess(proc, 4242, 100,
              "0::/kubepods.slice/kubepods-burstable.slice/"
              "kubepods-burstable-pod1f2e3d4c_5b6a_4789_8abc_def012345678.slice/"
              "cri-containerd-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef."
              "scope\n",
              {});
  FakeProcess(proc, 4343, 100,
              "0::/kubepods/besteffort/pod99999999-5b6a-4789-8abc-def012345678/"
              "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n",
              {});
  Fixture f(proc);
  f.Poll(kT0);
  auto gpus = Node();
  gpus[0].processes.push_back({4242, 1e9, collect::kAbsent});
  gpus[3].processes.push_back({4343, 1e9, collect::kAbsent});
  f.jobs->OnSnapshot(Snap(kT0, gpus));
  const std::string m = Metrics(*f.jobs);
  // One allocation line for GPU 0: the process and the kubelet name the same job.
  std::size_t lines = 0;
  for (std::size_t at = m.find("gpu_allocation_info{gpu=\"0\""); at != std::string::npos;
       at = m.find("gpu_allocation_info{gpu=\"0\"", at + 1))
    ++lines;
  EXPECT_EQ(lines, 1u) << m;
  EXPECT_TRUE(Has(m, "gpu_allocation_info{gpu=\"0\",uuid=\"GPU-0\",job_id=\"ml/train-0\"")) << m;
  EXPECT_FALSE(Has(m, "gpu_allocation_info{gpu=\"3\"")) << m;
  // The pod's GPU 0 is busy now (a process runs there): running jobs list it once.
  const nlohmann::json running =
      nlohmann::json::parse(f.jobs->JobsJson(JobsQuery{.running_only = true}));
  int train = 0;
  for (const auto& j : running["data"]["jobs"]) train += j["job_id"] == "ml/train-0";
  EXPECT_EQ(train, 1) << running.dump();
}

TEST(KubernetesJobs, RecordsAndTheApiServeNamespacePodIds) {
  Fixture f;
  f.Poll(kT0);
  f.jobs->OnSnapshot(Snap(kT0, Node()));
  f.jobs->OnSnapshot(Snap(kT0 + 30, Node()));
  // Running: by id with a '/', encoded or not, over HTTP.
  Logger quiet(LogLevel::kError);
  auto server = http::Server::Create(http::ServerOptions{.listen_address = "127.0.0.1:0"}, &quiet);
  ASSERT_TRUE(server.ok());
  f.jobs->RegisterRoutes(server->get());
  ASSERT_TRUE((*server)->Start().ok());
  for (const char* path : {"/api/gw/v1/jobs/ml%2Ftrain-0", "/api/gw/v1/jobs/ml/train-0"}) {
    const auto reply = gw::testing::HttpGet((*server)->port(), path);
    ASSERT_EQ(reply.status, 200) << path << ": " << reply.body;
    const nlohmann::json j = nlohmann::json::parse(reply.body)["data"];
    EXPECT_EQ(j["job_id"], "ml/train-0");
    EXPECT_EQ(j["source"], "kubernetes");
    EXPECT_EQ(j["state"], "RUNNING");
  }
  EXPECT_EQ(gw::testing::HttpGet((*server)->port(), "/api/gw/v1/jobs/ml/train-9").status, 404);

  // The pod leaves the kubelet's answer: its record, with the pod's facts and the team.
  f.kubelet->pods.erase(f.kubelet->pods.begin());
  f.Poll(kT0 + 60);
  f.jobs->OnSnapshot(Snap(kT0 + 60, Node()));
  const std::optional<std::string> body = f.jobs->JobJson("ml/train-0");
  ASSERT_TRUE(body);
  const nlohmann::json r = nlohmann::json::parse(*body)["data"];
  EXPECT_EQ(r["source"], "kubernetes");
  EXPECT_EQ(r["name"], "train-0");
  EXPECT_EQ(r["account"], "ml");
  EXPECT_EQ(r["team"], "research");
  EXPECT_NE(r["state"], "RUNNING");
  ASSERT_TRUE(r.contains("gpu")) << r.dump();
  EXPECT_EQ(r["gpu"]["gpus"], (nlohmann::json{0, 1}));
  const auto reply = gw::testing::HttpGet((*server)->port(), "/api/gw/v1/jobs/ml%2Ftrain-0");
  EXPECT_EQ(reply.status, 200);
  (*server)->Stop();

  // `gpuwarden jobs show` names the namespace as such, and no partition.
  const std::string detail = cli::JobDetail(*jobs::JobRecordFromJson(r.dump()));
  EXPECT_TRUE(Has(detail, "namespace:          ml\n")) << detail;
  EXPECT_FALSE(Has(detail, "account:")) << detail;
  EXPECT_FALSE(Has(detail, "partition:")) << detail;

  // `gpuwarden jobs` shows namespace/pod as the id, whole, and a long one keeps the columns
  // after it aligned.
  jobs::JobRecord long_id = *jobs::JobRecordFromJson(r.dump());
  long_id.job_id = "ml-research-platform/train-llama-70b-0";
  const std::string table = cli::JobsTable({*jobs::JobRecordFromJson(r.dump()), long_id});
  std::vector<std::string> rows;
  for (std::size_t at = 0, nl; (nl = table.find('\n', at)) != std::string::npos; at = nl + 1)
    rows.push_back(table.substr(at, nl - at));
  ASSERT_EQ(rows.size(), 3u) << table;
  EXPECT_EQ(rows[1].rfind("ml/train-0 ", 0), 0u) << table;
  EXPECT_EQ(rows[2].rfind("ml-research-platform/train-llama-70b-0 ", 0), 0u) << table;
  const std::size_t team = rows[0].find("TEAM");
  for (int i : {1, 2})  // the team column, after the id
    EXPECT_EQ(rows[i].find(" research") + 1, team) << table;
}

TEST(KubernetesJobs, FailingKubeletKeepsThePodsAndSaysSo) {
  Fixture f;
  f.Poll(kT0);
  f.jobs->OnSnapshot(Snap(kT0, Node()));
  f.kubelet->fail = "connection refused";
  f.Poll(kT0 + 10);
  f.jobs->OnSnapshot(Snap(kT0 + 10, Node()));
  const std::string m = Metrics(*f.jobs);
  EXPECT_TRUE(Has(m, "gpuwarden_kubernetes_up 0")) << m;
  EXPECT_TRUE(Has(m, "gpuwarden_kubernetes_poll_failures_total 1")) << m;
  EXPECT_TRUE(Has(m, "gpu_allocation_info{gpu=\"0\",uuid=\"GPU-0\",job_id=\"ml/train-0\"")) << m;
}

// dcgm-exporter mode: the device series of a GPU or MIG instance a pod holds carry pod,
// namespace and container (DcgmOptions::pod_of = JobsService::PodOfDevice); gpuwarden's own
// device families never do.
TEST(KubernetesJobs, PodLabelsOnDeviceSeriesInDcgmModeOnly) {
  Fixture f;
  f.Poll(kT0);
  const collect::Snapshot snap = Snap(kT0, Node());
  f.jobs->OnSnapshot(snap);
  collect::DcgmPodLabels pod;
  ASSERT_TRUE(f.jobs->PodOfDevice("GPU-1", &pod));
  EXPECT_EQ(pod.pod, "train-0");
  EXPECT_EQ(pod.pod_namespace, "ml");
  EXPECT_EQ(pod.container, "main");
  ASSERT_TRUE(f.jobs->PodOfDevice("MIG-2-1", &pod));
  EXPECT_EQ(pod.pod, "infer");
  EXPECT_FALSE(f.jobs->PodOfDevice("GPU-3", &pod));

  collect::RenderOptions dcgm;
  dcgm.names = collect::ExpositionNames::kDcgmExporter;
  dcgm.dcgm = std::make_shared<collect::DcgmExposition>(collect::DcgmOptions{
      .hostname = "", .pod_of = [&f](std::string_view uuid, collect::DcgmPodLabels* out) {
        return f.jobs->PodOfDevice(uuid, out);
      }});
  std::string page;
  collect::Render(snap, collect::Format::kText, dcgm, {}, &page);
  EXPECT_TRUE(Has(page, "container=\"main\",namespace=\"ml\",pod=\"train-0\"")) << page;
  EXPECT_TRUE(Has(page, "container=\"srv\",namespace=\"vision-a\",pod=\"infer\"")) << page;

  collect::RenderOptions own;  // gpuwarden's names: no hook, no pod labels
  std::string plain;
  collect::Render(snap, collect::Format::kText, own, {}, &plain);
  EXPECT_FALSE(Has(plain, "pod=\"")) << plain;
}

// The platform layer on pods: teams (and so quotas and cost) by namespace, and the reclaim hook
// with the pod's facts and the decision's evidence in its environment.
TEST(KubernetesJobs, GovernanceCostsByNamespaceTeamAndTheHookGetsThePod) {
  Fixture f;
  WriteFile(f.dir / "hook",
            "#!/bin/sh\nenv | grep -E '^GPUWARDEN_(JOB_SOURCE|POD_|RECLAIM_EVIDENCE|"
            "JOB_ID)' | sort > '" +
                (f.dir / "env.tmp") + "' && mv '" + (f.dir / "env.tmp") + "' '" + (f.dir / "env") +
                "'\n");
  chmod((f.dir / "hook").c_str(), 0755);
  governance::ReclaimPolicy p;
  p.idle_for_s = 10;
  p.grace_s = 5;
  p.action = governance::ReclaimAction::kCommand;
  p.command = {f.dir / "hook"};
  p.team = "research";
  f.config.governance.settings.reclaim = {p};
  f.config.governance.settings.prices.default_gpu_hour = 3.6;  // 0.001 per GPU-second
  f.config.governance.capacity_command.clear();
  f.Make();
  f.Poll(kT0);
  GovernanceService gov(f.config, f.jobs.get(), nullptr, &f.logger);
  gov.Start();
  for (int t = 0; t <= 16; ++t) {
    const collect::Snapshot s = Snap(kT0 + t, Node());
    f.jobs->OnSnapshot(s);
    gov.OnSnapshot(s, static_cast<std::int64_t>((kT0 + t) * 1000));
  }
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(f.dir / "env"); }, 10));
  const std::string env = ReadFile(f.dir / "env");
  EXPECT_TRUE(Has(env, "GPUWARDEN_JOB_ID=ml/train-0\n")) << env;
  EXPECT_TRUE(Has(env, "GPUWARDEN_JOB_SOURCE=kubernetes\n")) << env;
  EXPECT_TRUE(Has(env, "GPUWARDEN_POD_NAMESPACE=ml\n")) << env;
  EXPECT_TRUE(Has(env, "GPUWARDEN_POD_NAME=train-0\n")) << env;
  const std::size_t at = env.find("GPUWARDEN_RECLAIM_EVIDENCE=");
  ASSERT_NE(at, std::string::npos) << env;
  const std::size_t from = at + std::string("GPUWARDEN_RECLAIM_EVIDENCE=").size();
  const nlohmann::json evidence =
      nlohmann::json::parse(env.substr(from, env.find('\n', from) - from));
  ASSERT_EQ(evidence["gpus"].size(), 2u) << evidence.dump();
  EXPECT_EQ(evidence["gpus"][0]["uuid"], "GPU-0");
  EXPECT_EQ(evidence["gpus"][1]["uuid"], "GPU-1");

  // Cost per team: the namespace's team (2 GPUs for 16 s at 0.001 per GPU-second), and the
  // vision-a pod's MIG instance under "vision".
  const nlohmann::json teams = nlohmann::json::parse(gov.TeamsJson());
  std::map<std::string, double> cost;
  for (const auto& t : teams["data"]["teams"])
    cost[t["team"].get<std::string>()] = t["cost"]["allocation_cost"].get<double>();
  ASSERT_TRUE(cost.count("research")) << teams.dump();
  EXPECT_NEAR(cost["research"], 0.032, 1e-9);
  ASSERT_TRUE(cost.count("vision")) << teams.dump();
  EXPECT_NEAR(cost["vision"], 0.016 * 3 / 7, 1e-9);
  gov.Stop();
}

}  // namespace
}  // namespace gw::serve
