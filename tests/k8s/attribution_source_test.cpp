// PodAttributionSource (k8s/attribution_source.h) through the real Attributor over fixture /proc
// trees whose cgroup files carry kubepods paths: a UID the pod list knows, a UID learned through
// the one pod holding the GPU (then followed on another GPU), a host process never claimed, a
// GPU shared by several pods left alone.
#include "k8s/attribution_source.h"

#include <gtest/gtest.h>

#include "k8s/fake_pod_resources.h"
#include "k8s/poller.h"
#include "support/fake_proc.h"

namespace gw::k8s {
namespace {

using gw::testing::FakeProcess;
using gw::testing::TempDir;

constexpr const char* kTrainUid = "1f2e3d4c-5b6a-4789-8abc-def012345678";
constexpr const char* kEvalUid = "aaaabbbb-cccc-4ddd-8eee-ffff00001111";
constexpr const char* kShareUid = "22223333-4444-4555-8666-777788889999";

// The systemd cgroup driver's form (UID with '_') and the cgroupfs form (UID with '-').
std::string SystemdCgroup(std::string uid) {
  for (char& c : uid) c = c == '-' ? '_' : c;
  return "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uid +
         ".slice/cri-containerd-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
         ".scope\n";
}
std::string CgroupfsCgroup(const std::string& uid) {
  return "0::/kubepods/besteffort/pod" + uid +
         "/fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210\n";
}

std::shared_ptr<const PodIndex> MakeIndex() {
  auto index = std::make_shared<PodIndex>();
  index->by_device["GPU-train-0"] = {{"ml", "train-0"}};
  index->by_device["GPU-train-1"] = {{"ml", "train-0"}};
  index->by_device["GPU-eval"] = {{"vision", "eval-7"}};
  index->by_device["MIG-eval"] = {{"vision", "eval-7"}};
  index->by_device["GPU-shared"] = {{"a", "left"}, {"b", "right"}};
  index->by_uid[kTrainUid] = {"ml", "train-0"};
  return index;
}

class PodAttribution : public ::testing::Test {
 protected:
  void SetUp() override {
    auto source = std::make_unique<PodAttributionSource>();
    pods_ = source.get();
    attributor_.AddSource(std::move(source));
    pods_->Set(MakeIndex());
  }
  jobs::ProcessAttribution Attribute(pid_t pid, const std::string& gpu) {
    Expected<jobs::ProcessAttribution> a = attributor_.Attribute(pid, gpu);
    EXPECT_TRUE(a.ok());
    return a.ok() ? *a : jobs::ProcessAttribution{};
  }
  TempDir root_;
  jobs::Attributor attributor_{jobs::AttributorOptions{root_.path()}};
  PodAttributionSource* pods_ = nullptr;
};

TEST_F(PodAttribution, UidKnownFromThePodList) {
  FakeProcess(root_.path(), 100, 1, SystemdCgroup(kTrainUid), {});
  // Even on a GPU the index does not know (a device the kubelet names differently).
  jobs::ProcessAttribution a = Attribute(100, "GPU-unknown");
  EXPECT_EQ(a.pod_uid, kTrainUid);
  EXPECT_EQ(a.pod_namespace, "ml");
  EXPECT_EQ(a.pod_name, "train-0");
  EXPECT_EQ(a.job_id, "ml/train-0");
  EXPECT_EQ(a.job_source, "kubernetes");
}

TEST_F(PodAttribution, UidLearnedThroughTheGpuThenFollowed) {
  FakeProcess(root_.path(), 200, 1, CgroupfsCgroup(kEvalUid), {});
  FakeProcess(root_.path(), 201, 1, CgroupfsCgroup(kEvalUid), {});
  // Before the GPU names it, nothing: the UID is unknown and the process' GPU is unknown.
  jobs::ProcessAttribution unknown = Attribute(201, "");
  EXPECT_EQ(unknown.job_id, "");
  EXPECT_EQ(unknown.pod_name, "");
  jobs::ProcessAttribution a = Attribute(200, "GPU-eval");
  EXPECT_EQ(a.job_id, "vision/eval-7");
  EXPECT_EQ(a.pod_namespace, "vision");
  // Its sibling on a GPU no pod is known to hold follows through the learned UID.
  FakeProcess(root_.path(), 202, 2, CgroupfsCgroup(kEvalUid), {});
  jobs::ProcessAttribution b = Attribute(202, "GPU-not-in-index");
  EXPECT_EQ(b.job_id, "vision/eval-7");
  // Once the pod is gone from the index, the learned UID is forgotten.
  auto without = std::make_shared<PodIndex>(*MakeIndex());
  without->by_device.erase("GPU-eval");
  without->by_device.erase("MIG-eval");
  pods_->Set(without);
  FakeProcess(root_.path(), 203, 3, CgroupfsCgroup(kEvalUid), {});
  EXPECT_EQ(Attribute(203, "GPU-not-in-index").job_id, "");
}

TEST_F(PodAttribution, HostProcessNeverClaimed) {
  FakeProcess(root_.path(), 300, 1, "0::/system.slice/nvidia-persistenced.service\n", {});
  FakeProcess(root_.path(), 301, 1, "0::/user.slice/user-1000.slice/session-4.scope\n",
              {"GPUWARDEN_JOB=bench"});
  jobs::ProcessAttribution a = Attribute(300, "GPU-train-0");  // a pod's GPU, yet not the pod's
  EXPECT_EQ(a.job_id, "");
  EXPECT_EQ(a.pod_name, "");
  jobs::ProcessAttribution b = Attribute(301, "GPU-eval");
  EXPECT_EQ(b.job_id, "bench");
  EXPECT_EQ(b.job_source, "gpuwarden-env");
}

TEST_F(PodAttribution, SharedGpuLeftAlone) {
  FakeProcess(root_.path(), 400, 1, SystemdCgroup(kShareUid), {});
  jobs::ProcessAttribution a = Attribute(400, "GPU-shared");
  EXPECT_EQ(a.pod_uid, kShareUid);
  EXPECT_EQ(a.job_id, "");
  EXPECT_EQ(a.pod_name, "");
  // Nothing was learned from the ambiguous match either.
  FakeProcess(root_.path(), 401, 1, SystemdCgroup(kShareUid), {});
  EXPECT_EQ(Attribute(401, "GPU-not-in-index").job_id, "");
}

TEST_F(PodAttribution, NoIndexYetChangesNothing) {
  PodAttributionSource bare;
  jobs::ProcessAttribution p;
  p.pod_uid = kTrainUid;
  bare.Refine("GPU-train-0", &p);
  EXPECT_EQ(p.job_id, "");
  bare.Set(nullptr);
  bare.Refine("GPU-train-0", &p);
  EXPECT_EQ(p.job_id, "");
}

// End to end with the poller's index: a pod list UID and a GPU-only pod.
TEST(PodAttributionWithPoller, IndexFromPoller) {
  auto kubelet = std::make_shared<testing::FakeKubelet>();
  kubelet->Set({PodResources{"train-0", "ml", {{"main", {{"nvidia.com/gpu", {"GPU-1"}, {0}}}}}},
                PodResources{"eval-7", "vision", {{"e", {{"nvidia.com/gpu", {"GPU-2"}, {0}}}}}}});
  ManualClock clock(1'800'000'000'000);
  KubernetesPoller poller({}, std::make_unique<testing::FakePodResourcesApi>(kubelet), nullptr,
                          &clock);
  poller.PollOnce();
  PodAttributionSource source;
  source.Set(poller.Index());
  jobs::ProcessAttribution p;
  p.pod_uid = kEvalUid;
  source.Refine("GPU-2", &p);
  EXPECT_EQ(p.job_id, "vision/eval-7");
  EXPECT_EQ(poller.Jobs().count(p.job_id), 1u);  // the same id as the pod's job
}

// Time-slicing replicas ("<uuid>::<n>") are indexed by their GPU: one pod holding replicas of a
// GPU claims its processes; two pods sharing a GPU's replicas leave them alone.
TEST(PodAttributionWithPoller, TimeSlicedReplicasIndexedByGpu) {
  auto kubelet = std::make_shared<testing::FakeKubelet>();
  kubelet->Set(
      {PodResources{"solo", "ml", {{"main", {{"nvidia.com/gpu", {"GPU-1::0", "GPU-1::1"}, {}}}}}},
       PodResources{"a", "ml", {{"main", {{"nvidia.com/gpu", {"GPU-2::0"}, {}}}}}},
       PodResources{"b", "ml", {{"main", {{"nvidia.com/gpu", {"GPU-2::1"}, {}}}}}}});
  ManualClock clock(1'800'000'000'000);
  KubernetesPoller poller({}, std::make_unique<testing::FakePodResourcesApi>(kubelet), nullptr,
                          &clock);
  poller.PollOnce();
  const std::shared_ptr<const PodIndex> index = poller.Index();
  ASSERT_EQ(index->by_device.count("GPU-1"), 1u);
  EXPECT_EQ(index->by_device.at("GPU-1").size(), 1u);
  EXPECT_EQ(index->by_device.at("GPU-2").size(), 2u);
  PodAttributionSource source;
  source.Set(index);
  jobs::ProcessAttribution p;
  p.pod_uid = kEvalUid;
  source.Refine("GPU-1", &p);
  EXPECT_EQ(p.job_id, "ml/solo");
  jobs::ProcessAttribution q;
  q.pod_uid = kTrainUid;
  source.Refine("GPU-2", &q);
  EXPECT_EQ(q.job_id, "");
}

}  // namespace
}  // namespace gw::k8s
