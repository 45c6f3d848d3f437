// Attribution: cgroup layouts, the environment allow-list (with a planted secret), /proc parsing,
// the (pid, start time) cache, sources — over a fake /proc tree and over real child processes.
#include "jobs/attribution.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>

#include "jobs/cgroup.h"
#include "jobs/environ.h"
#include "jobs/job_records.h"
#include "support/fake_proc.h"
#include "support/process.h"

namespace gw::jobs {
namespace {

using gw::testing::FakeProcess;
using gw::testing::ReadFile;
using gw::testing::TempDir;
using gw::testing::WriteFile;

constexpr const char* kSecret = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY-s3cr3t";

TEST(Cgroup, SlurmV2) {
  CgroupIdentity id =
      ParseCgroup("0::/system.slice/slurmstepd.scope/job_4242/step_batch/user/task_0\n");
  EXPECT_EQ(id.slurm_job_id, "4242");
  EXPECT_EQ(id.slurm_step, "batch");
  id = ParseCgroup("0::/system.slice/node7_slurmstepd.scope/job_17/step_3/user/task_0\n");
  EXPECT_EQ(id.slurm_job_id, "17");
  EXPECT_EQ(id.slurm_step, "3");
}

TEST(Cgroup, SlurmV1) {
  CgroupIdentity id = ParseCgroup(
      "12:pids:/user.slice\n"
      "11:devices:/slurm/uid_1000/job_99/step_extern/task_0\n"
      "4:memory:/slurm/uid_1000/job_99/step_extern/task_0\n");
  EXPECT_EQ(id.slurm_job_id, "99");
  EXPECT_EQ(id.slurm_step, "extern");
}

TEST(Cgroup, NotSlurm) {
  EXPECT_EQ(ParseCgroup("0::/user.slice/user-0.slice/session-3.scope\n").slurm_job_id, "");
  // A "job_" directory outside Slurm's layout is not a Slurm job.
  EXPECT_EQ(ParseCgroup("0::/myapp/job_12/x\n").slurm_job_id, "");
}

TEST(Cgroup, KubernetesSystemdAndCgroupfs) {
  CgroupIdentity id = ParseCgroup(
      "0::/kubepods.slice/kubepods-burstable.slice/"
      "kubepods-burstable-pod1f2e3d4c_5b6a_4789_8abc_def012345678.slice/"
      "cri-containerd-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope\n");
  EXPECT_EQ(id.pod_uid, "1f2e3d4c-5b6a-4789-8abc-def012345678");
  EXPECT_EQ(id.container_runtime, "containerd");
  EXPECT_EQ(id.container_id, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
  id = ParseCgroup(
      "4:memory:/kubepods/besteffort/pod1f2e3d4c-5b6a-4789-8abc-def012345678/"
      "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210\n");
  EXPECT_EQ(id.pod_uid, "1f2e3d4c-5b6a-4789-8abc-def012345678");
  EXPECT_EQ(id.container_id, "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210");
  id = ParseCgroup(
      "0::/kubepods.slice/kubepods-pod1f2e3d4c_5b6a_4789_8abc_def012345678.slice/"
      "crio-aaaabbbbccccddddeeeeffff0000111122223333444455556666777788889999.scope\n");
  EXPECT_EQ(id.container_runtime, "cri-o");
}

TEST(Cgroup, Containers) {
  const std::string hex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  EXPECT_EQ(ParseCgroup("0::/system.slice/docker-" + hex + ".scope\n").container_runtime, "docker");
  EXPECT_EQ(ParseCgroup("0::/system.slice/docker-" + hex + ".scope\n").container_id, hex);
  EXPECT_EQ(ParseCgroup("11:devices:/docker/" + hex + "\n").container_runtime, "docker");
  EXPECT_EQ(ParseCgroup("0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" +
                        hex + ".scope/container\n")
                .container_runtime,
            "podman");
  EXPECT_EQ(ParseCgroup("0::/machine.slice/libpod-" + hex + ".scope\n").container_id, hex);
  EXPECT_EQ(ParseCgroup("0::/system.slice/cron.service\n").container_id, "");
}

TEST(ProcParsing, StatStartTimeWithSpacesInComm) {
  std::uint64_t ticks = 0;
  const std::string stat =
      "1234 (my (weird) proc) S 1 1234 1234 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 987654 "
      "1000000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
  ASSERT_TRUE(ParseStatStartTicks(stat, &ticks));
  EXPECT_EQ(ticks, 987654u);
  EXPECT_FALSE(ParseStatStartTicks("garbage", &ticks));
  EXPECT_EQ(ParseStatusUid("Name:\tx\nUid:\t1000\t1000\t1000\t1000\nGid:\t5\n"), 1000);
  EXPECT_EQ(ParseStatusUid("Name:\tx\n"), -1);
  EXPECT_EQ(SplitDeviceList("0, 2,,GPU-abc"), (std::vector<std::string>{"0", "2", "GPU-abc"}));
}

// Writes an environ file (entries NUL-separated) and reads it back through the allow-list.
TEST(Environ, OnlyAllowedKeysAreKept) {
  TempDir dir;
  std::string text;
  for (const std::string& entry :
       {std::string("PATH=/usr/bin"), std::string("AWS_SECRET_ACCESS_KEY=") + kSecret,
        std::string("SLURM_JOB_ID=77"), std::string("SLURM_JOB_IDX=nope"),
        std::string("GPUWARDEN_TEAM=vision"), std::string("GPUWARDEN_METRICS_PORT=9400"),
        std::string("NOEQUALSIGN") + kSecret, std::string("CUDA_VISIBLE_DEVICES=1,3")})
    text += entry + '\0';
  text += std::string(10000, 'x') + "=" + kSecret + '\0';  // a huge key spanning reads
  text += "SLURM_JOB_ACCOUNT=" + std::string(1000, 'a');   // long value, no trailing NUL
  WriteFile(dir / "environ", text);
  Expected<AllowedEnv> env = ReadAllowedEnv(dir / "environ");
  ASSERT_TRUE(env.ok()) << env.error().message;
  EXPECT_EQ(env->Get(EnvKey::kSlurmJobId).value_or(""), "77");
  EXPECT_EQ(env->Get(EnvKey::kGpuwardenTeam).value_or(""), "vision");
  EXPECT_EQ(env->Get(EnvKey::kGpuwardenMetricsPort).value_or(""), "9400");
  EXPECT_EQ(env->Get(EnvKey::kCudaVisibleDevices).value_or(""), "1,3");
  EXPECT_EQ(env->Get(EnvKey::kSlurmJobAccount).value_or("").size(), kMaxEnvValue);
  EXPECT_FALSE(env->Get(EnvKey::kGpuwardenJob).has_value());
  for (const auto& v : env->values)
    if (v) {
      EXPECT_EQ(v->find(kSecret), std::string::npos);
    }
  EXPECT_FALSE(ReadAllowedEnv(dir / "missing").ok());
}

TEST(Attributor, FakeProcTree) {
  TempDir root;
  FakeProcess(root.path(), 100, 5000, "0::/system.slice/slurmstepd.scope/job_12/step_0/user\n",
              {"SLURM_JOB_ID=12", "SLURM_JOB_ACCOUNT=physics", "SLURM_JOB_PARTITION=gpu",
               "SLURM_JOB_USER=alice", "SLURM_JOB_GPUS=0,1",
               std::string("AWS_SECRET_ACCESS_KEY=") + kSecret});
  FakeProcess(root.path(), 200, 6000, "0::/user.slice\n",
              {"GPUWARDEN_JOB=nightly-eval", "GPUWARDEN_TEAM=nlp", "GPUWARDEN_METRICS_PORT=9400"},
              4242424);
  FakeProcess(root.path(), 300, 7000, "0::/user.slice\n",
              {"SLURM_JOB_ID=55", "GPUWARDEN_METRICS_PORT=80a"});
  Attributor attributor(AttributorOptions{root.path()});
  Expected<ProcessAttribution> a = attributor.Attribute(100);
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->job_id, "12");
  EXPECT_EQ(a->job_source, "slurm-cgroup");
  EXPECT_EQ(a->slurm_step, "0");
  EXPECT_EQ(a->slurm_account, "physics");
  EXPECT_EQ(a->slurm_user, "alice");
  EXPECT_EQ(a->slurm_job_gpus, "0,1");
  EXPECT_EQ(a->user, "root");
  EXPECT_EQ(a->start_ticks, 5000u);
  Expected<ProcessAttribution> b = attributor.Attribute(200);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->job_id, "nightly-eval");
  EXPECT_EQ(b->job_source, "gpuwarden-env");
  EXPECT_EQ(b->gpuwarden_team, "nlp");
  EXPECT_EQ(b->gpuwarden_metrics_port, 9400);  // the job's own /metrics (docs/jobs.md)
  EXPECT_EQ(a->gpuwarden_metrics_port, 0);
  EXPECT_EQ(b->user, "4242424");  // no passwd entry: the number
  Expected<ProcessAttribution> c = attributor.Attribute(300);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->job_source, "slurm-env");
  EXPECT_EQ(c->gpuwarden_metrics_port, 0);  // not a port
  EXPECT_FALSE(attributor.Attribute(999).ok());

  // Cached per (pid, start time): a second pass reads nothing new; a reused pid is re-read.
  const std::uint64_t misses = attributor.misses();
  std::vector<GpuProcessRef> refs = {{100, "GPU-a"}, {200, "GPU-a"}};
  EXPECT_EQ(attributor.AttributeAll(refs).size(), 2u);
  EXPECT_EQ(attributor.misses(), misses);
  EXPECT_EQ(attributor.cache_size(), 2u);  // 300 dropped: not in this pass
  FakeProcess(root.path(), 100, 9999, "0::/user.slice\n", {"GPUWARDEN_JOB=other"});
  Expected<ProcessAttribution> reused = attributor.Attribute(100);
  ASSERT_TRUE(reused.ok());
  EXPECT_EQ(reused->job_id, "other");
  EXPECT_EQ(attributor.misses(), misses + 1);
}

class PodNamer : public AttributionSource {
 public:
  std::string Name() const override { return "kubernetes"; }
  void Refine(const std::string& gpu_uuid, ProcessAttribution* p) override {
    if (p->pod_uid == "1f2e3d4c-5b6a-4789-8abc-def012345678") {
      p->pod_name = "trainer-0";
      p->pod_namespace = "ml";
      if (p->job_id.empty()) {
        p->job_id = "ml/trainer-0";
        p->job_source = Name();
      }
    }
    last_uuid = gpu_uuid;
  }
  std::string last_uuid;
};

TEST(Attributor, SourcesRefine) {
  TempDir root;
  FakeProcess(root.path(), 10, 1,
              "0::/kubepods.slice/kubepods-pod1f2e3d4c_5b6a_4789_8abc_def012345678.slice/x\n", {});
  Attributor attributor(AttributorOptions{root.path()});
  auto source = std::make_unique<PodNamer>();
  PodNamer* namer = source.get();
  attributor.AddSource(std::move(source));
  Expected<ProcessAttribution> a = attributor.Attribute(10, "GPU-1234");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->pod_name, "trainer-0");
  EXPECT_EQ(a->job_id, "ml/trainer-0");
  EXPECT_EQ(namer->last_uuid, "GPU-1234");
}

// Everything an attribution holds, as one string (for the secret check).
std::string AllText(const ProcessAttribution& p) {
  return p.user + p.job_id + p.job_source + p.slurm_job_id_cgroup + p.slurm_step + p.pod_uid +
         p.pod_name + p.pod_namespace + p.container_id + p.container_runtime + p.slurm_job_id_env +
         p.slurm_user + p.slurm_account + p.slurm_partition + p.slurm_job_gpus +
         p.cuda_visible_devices + p.gpuwarden_job + p.gpuwarden_team;
}

// A real child process with a secret in its environment: attributed through the real /proc, the
// secret appears in no field.
TEST(Attributor, RealChildProcessWithSecret) {
  TempDir dir;
  std::vector<std::string> argv = {"/usr/bin/env",
                                   std::string("AWS_SECRET_ACCESS_KEY=") + kSecret,
                                   "GPUWARDEN_JOB=job-with-secret",
                                   "GPUWARDEN_TEAM=secops",
                                   "CUDA_VISIBLE_DEVICES=2",
                                   "sleep",
                                   "30"};
  gw::testing::Process child(argv, dir / "child.log");
  ASSERT_TRUE(child.started());
  Attributor attributor;
  ProcessAttribution found;
  // env execs sleep: wait until the environment is the one we set.
  ASSERT_TRUE(gw::testing::WaitFor(
      [&] {
        Expected<ProcessAttribution> a = attributor.Attribute(child.pid());
        if (!a.ok() || a->gpuwarden_job.empty()) {
          attributor.AttributeAll({});  // forget, so the next try re-reads
          return false;
        }
        found = *a;
        return true;
      },
      10));
  EXPECT_EQ(found.job_id, "job-with-secret");
  EXPECT_EQ(found.gpuwarden_team, "secops");
  EXPECT_EQ(found.cuda_visible_devices, "2");
  EXPECT_EQ(found.user, "root");
  // The secret was really there to be found.
  EXPECT_NE(ReadFile("/proc/" + std::to_string(child.pid()) + "/environ").find(kSecret),
            std::string::npos);
  EXPECT_EQ(AllText(found).find(kSecret), std::string::npos);
  EXPECT_EQ(AllText(found).find("AWS_SECRET"), std::string::npos);
  // Through the ledger to a stored record: the file holds the job, not the secret.
  auto store = JobRecordStore::Open(dir / "records");
  ASSERT_TRUE(store.ok());
  JobLedger ledger(TeamMap(), store->get());
  ASSERT_TRUE(ledger.OnProcesses({{found, 2}}, 100).ok());
  ASSERT_TRUE(ledger.OnProcesses({}, 110).ok());
  const std::string stored = ReadFile((*store)->path());
  EXPECT_NE(stored.find("job-with-secret"), std::string::npos);
  EXPECT_NE(stored.find("secops"), std::string::npos);
  EXPECT_EQ(stored.find(kSecret), std::string::npos);
  child.Stop(1);
}

}  // namespace
}  // namespace gw::jobs
