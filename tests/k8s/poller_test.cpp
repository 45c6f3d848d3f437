// KubernetesPoller (k8s/poller.h) over an in-memory kubelet: polls, outages (logged once, jobs
// kept, staleness growing on a manual clock, recovery logged once with the outage length),
// GetAllocatableResources and UNIMPLEMENTED, the pod-list command, warnings logged once, the
// index, and readers never blocked by a slow kubelet.
#include "k8s/poller.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>

#include "k8s/fake_pod_resources.h"
#include "support/process.h"

namespace gw::k8s {
namespace {

using gw::testing::TempDir;
using gw::testing::WriteFile;
using testing::FakeKubelet;
using testing::FakePodResourcesApi;

PodResources Pod(const std::string& ns, const std::string& name, std::vector<std::string> ids,
                 const std::string& resource = "nvidia.com/gpu") {
  return PodResources{name, ns, {{"main", {{resource, std::move(ids), {0}}}}}};
}

struct Harness {
  std::shared_ptr<FakeKubelet> kubelet = std::make_shared<FakeKubelet>();
  ManualClock clock{1'800'000'000'000};
  std::mutex log_mu;
  std::vector<std::pair<LogLevel, std::string>> lines;
  Logger logger{LogLevel::kDebug,
                [this](LogLevel level, const std::string& line) {
                  std::lock_guard<std::mutex> lock(log_mu);
                  lines.emplace_back(level, line);
                },
                &clock};
  std::unique_ptr<KubernetesPoller> poller;

  explicit Harness(KubernetesPollerOptions options = {}) {
    if (options.table.node_name.empty()) options.table.node_name = "gpu-07";
    poller = std::make_unique<KubernetesPoller>(
        std::move(options), std::make_unique<FakePodResourcesApi>(kubelet), &logger, &clock);
  }
  int Count(LogLevel level, const std::string& part) {
    std::lock_guard<std::mutex> lock(log_mu);
    int n = 0;
    for (const auto& [l, line] : lines) n += l == level && line.find(part) != std::string::npos;
    return n;
  }
};

TEST(KubernetesPoller, PollsJobsEventsIndexAndStatus) {
  Harness h;
  h.kubelet->Set({Pod("ml", "train-0", {"GPU-a", "GPU-b"}),
                  Pod("ml", "mig-0", {"MIG-x"}, "nvidia.com/mig-1g.10gb")});
  h.kubelet->allocatable.devices = {{"nvidia.com/gpu", {"GPU-a", "GPU-b", "GPU-c"}, {}},
                                    {"nvidia.com/mig-1g.10gb", {"MIG-x", "MIG-y"}, {}},
                                    {"cpu", {"0", "1", "2"}, {}}};
  EXPECT_EQ(h.poller->Name(), "kubernetes");
  EXPECT_EQ(h.poller->JobsVersion(), 0u);
  EXPECT_TRUE(h.poller->Index()->by_device.empty());  // never null
  h.poller->PollOnce();
  EXPECT_EQ(h.poller->JobsVersion(), 1u);
  // The same node again: nothing moved, so neither does the version (nor the index).
  const std::shared_ptr<const PodIndex> first_index = h.poller->Index();
  h.poller->PollOnce();
  EXPECT_EQ(h.poller->JobsVersion(), 1u);
  EXPECT_EQ(h.poller->Index(), first_index);
  std::map<std::string, jobs::SlurmJob> jobs = h.poller->Jobs();
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs.at("ml/train-0").nodes, "gpu-07");
  std::vector<jobs::JobEvent> events = h.poller->TakeEvents();
  EXPECT_EQ(events.size(), 2u);
  EXPECT_TRUE(h.poller->TakeEvents().empty());
  jobs::SlurmHealth health;
  EXPECT_TRUE(h.poller->PendingJobs(&health).empty());
  EXPECT_TRUE(health.up);

  KubernetesStatus status = h.poller->Status();
  EXPECT_EQ(status.endpoint, "unix:///fake/kubelet.sock");
  EXPECT_TRUE(status.allocatable_known);
  EXPECT_EQ(status.allocatable.at("nvidia.com/gpu"), 3);
  EXPECT_EQ(status.allocatable.at("nvidia.com/mig-1g.10gb"), 2);
  EXPECT_FALSE(status.allocatable.count("cpu"));
  EXPECT_EQ(status.allocated.at("nvidia.com/gpu"), 2);
  EXPECT_EQ(status.allocated.at("nvidia.com/mig-1g.10gb"), 1);
  EXPECT_EQ(status.allocatable_ids.size(), 5u);
  EXPECT_FALSE(status.pod_list_configured);

  std::shared_ptr<const PodIndex> index = h.poller->Index();
  ASSERT_EQ(index->by_device.at("GPU-b").size(), 1u);
  EXPECT_EQ(index->by_device.at("GPU-b")[0], (PodRef{"ml", "train-0"}));
  EXPECT_EQ(index->by_device.at("MIG-x")[0].JobId(), "ml/mig-0");
  EXPECT_TRUE(index->by_uid.empty());  // UIDs come only from a pod list

  // The pod ends: the old index stays valid for whoever holds it; a new one replaces it.
  h.kubelet->Set({Pod("ml", "mig-0", {"MIG-x"}, "nvidia.com/mig-1g.10gb")});
  h.poller->PollOnce();
  EXPECT_EQ(h.poller->JobsVersion(), 2u);
  EXPECT_TRUE(index->by_device.count("GPU-a"));
  EXPECT_FALSE(h.poller->Index()->by_device.count("GPU-a"));
  events = h.poller->TakeEvents();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, jobs::JobEventKind::kFinished);
  EXPECT_EQ(h.poller->Status().allocated.count("nvidia.com/gpu"), 0u);
}

TEST(KubernetesPoller, OutageLogsOnceKeepsJobsAndRecoversOnce) {
  Harness h({.interval_s = 10});
  h.kubelet->Set({Pod("ml", "train-0", {"GPU-a"})});
  h.poller->PollOnce();
  const std::uint64_t version = h.poller->JobsVersion();
  h.poller->TakeEvents();

  h.kubelet->Fail("connection refused");
  for (int i = 0; i < 5; ++i) {
    h.clock.AdvanceMs(10'000);
    h.poller->PollOnce();
    const jobs::SlurmHealth health = h.poller->Health();
    EXPECT_FALSE(health.up);
    EXPECT_DOUBLE_EQ(health.StalenessS(h.clock.NowSeconds()), 10.0 * (i + 1));
  }
  EXPECT_EQ(h.Count(LogLevel::kWarn, "pod-resources API unavailable"), 1);
  EXPECT_EQ(h.Count(LogLevel::kWarn, "connection refused"), 1);
  EXPECT_EQ(h.Count(LogLevel::kWarn, "jobs as of 2027-01-15T08:00:00Z are kept"), 1);
  EXPECT_EQ(h.Count(LogLevel::kWarn, "retrying every 10s"), 1);
  EXPECT_EQ(h.poller->Jobs().size(), 1u);       // kept
  EXPECT_EQ(h.poller->JobsVersion(), version);  // failed polls change nothing
  EXPECT_TRUE(h.poller->TakeEvents().empty());  // and end nothing
  EXPECT_EQ(h.poller->Health().failures_total, 5u);

  h.kubelet->Fail("");
  h.clock.AdvanceMs(10'000);
  h.poller->PollOnce();
  EXPECT_TRUE(h.poller->Health().up);
  EXPECT_EQ(h.Count(LogLevel::kInfo, "answers again after 50s down"), 1);
  h.clock.AdvanceMs(10'000);
  h.poller->PollOnce();
  EXPECT_EQ(h.Count(LogLevel::kInfo, "answers again"), 1);
  // A second outage is logged again, once.
  h.kubelet->Fail("socket gone");
  h.poller->PollOnce();
  h.poller->PollOnce();
  EXPECT_EQ(h.Count(LogLevel::kWarn, "socket gone"), 1);
}

TEST(KubernetesPoller, DownFromTheStart) {
  Harness h;
  h.kubelet->Fail("no such file");
  h.poller->PollOnce();
  h.clock.AdvanceMs(30'000);
  h.poller->PollOnce();
  EXPECT_EQ(h.Count(LogLevel::kWarn, "no jobs known yet"), 1);
  EXPECT_FALSE(h.poller->Health().ever_succeeded);
  EXPECT_DOUBLE_EQ(h.poller->Health().StalenessS(h.clock.NowSeconds()), 30);
  EXPECT_EQ(h.kubelet->allocatable_calls, 0);
}

TEST(KubernetesPoller, EventQueueIsBounded) {
  Harness h({.max_queued_events = 100});
  std::vector<PodResources> many;
  for (int i = 0; i < 30; ++i) many.push_back(Pod("bulk", "p" + std::to_string(i), {"GPU-x"}));
  for (int round = 0; round < 2; ++round) {
    h.kubelet->Set(many);
    h.poller->PollOnce();
    h.clock.AdvanceMs(1000);
    h.kubelet->Set({});
    h.poller->PollOnce();
    h.clock.AdvanceMs(1000);
  }
  std::vector<jobs::JobEvent> events = h.poller->TakeEvents();  // 120 produced
  ASSERT_EQ(events.size(), 100u);
  // The oldest 20 (of the first round's starts) were dropped; the newest are kept.
  std::size_t started = 0;
  for (const jobs::JobEvent& e : events) started += e.kind == jobs::JobEventKind::kStarted;
  EXPECT_EQ(started, 40u);
  EXPECT_EQ(events.front().kind, jobs::JobEventKind::kStarted);
  EXPECT_EQ(events.front().job_id, "bulk/p27");  // map order: p0, p1, p10, ..., p19, p2, p20, ...
  EXPECT_EQ(events.front().time, 1'800'000'000);
  EXPECT_EQ(events.back().kind, jobs::JobEventKind::kFinished);
  EXPECT_EQ(events.back().time, 1'800'000'003);
}

TEST(KubernetesPoller, ListAndAllocatableShareOneDeadline) {
  Harness h({.timeout_s = 5});
  h.poller->PollOnce();
  EXPECT_EQ(h.kubelet->allocatable_calls, 1);
  EXPECT_GT(h.kubelet->last_allocatable_timeout_s, 0);
  EXPECT_LE(h.kubelet->last_allocatable_timeout_s, 5);
  // List used up the whole deadline: GetAllocatableResources waits for the next poll.
  Harness slow({.timeout_s = 0.02});
  slow.kubelet->list_delay_ms = 50;
  slow.poller->PollOnce();
  EXPECT_EQ(slow.kubelet->allocatable_calls, 0);
  EXPECT_TRUE(slow.poller->Health().up);
  EXPECT_FALSE(slow.poller->Status().allocatable_known);
}

TEST(KubernetesPoller, AllocatableUnimplementedIsRemembered) {
  Harness h;
  h.kubelet->allocatable_unimplemented = true;
  h.poller->PollOnce();
  h.poller->PollOnce();
  h.poller->PollOnce();
  EXPECT_EQ(h.kubelet->list_calls, 3);
  EXPECT_EQ(h.kubelet->allocatable_calls, 1);
  EXPECT_FALSE(h.poller->Status().allocatable_known);
  EXPECT_EQ(h.Count(LogLevel::kInfo, "does not offer GetAllocatableResources"), 1);
}

// Kubernetes 1.21-1.22 with KubeletPodResourcesGetAllocatable off answer UNKNOWN "... disabled":
// as final as UNIMPLEMENTED. Any other failure is logged once per run of failures.
TEST(KubernetesPoller, AllocatableDisabledIsRememberedOtherFailuresLoggedOnce) {
  Harness h;
  h.kubelet->allocatable_error = "UNKNOWN: Pod Resources API GetAllocatableResources disabled";
  h.poller->PollOnce();
  h.poller->PollOnce();
  EXPECT_EQ(h.kubelet->allocatable_calls, 1);
  EXPECT_TRUE(h.poller->Health().up);

  Harness flaky;
  flaky.kubelet->allocatable_error = "UNAVAILABLE: transient";
  for (int i = 0; i < 3; ++i) flaky.poller->PollOnce();
  EXPECT_EQ(flaky.kubelet->allocatable_calls, 3);
  EXPECT_EQ(flaky.Count(LogLevel::kWarn, "GetAllocatableResources failed"), 1);
  flaky.kubelet->allocatable_error.clear();
  flaky.poller->PollOnce();
  EXPECT_TRUE(flaky.poller->Status().allocatable_known);
  flaky.kubelet->allocatable_error = "UNAVAILABLE: again";
  flaky.poller->PollOnce();
  EXPECT_EQ(flaky.Count(LogLevel::kWarn, "GetAllocatableResources failed"), 2);
}

TEST(KubernetesPoller, AnswerWarningsLoggedOnceEach) {
  Harness h;
  h.kubelet->Set(
      {Pod("ml", "dup", {"GPU-a"}), Pod("ml", "dup", {"GPU-b"}), Pod("", "x", {"GPU-c"})});
  for (int i = 0; i < 4; ++i) h.poller->PollOnce();
  EXPECT_EQ(h.Count(LogLevel::kWarn, "ml/dup is listed more than once"), 1);
  EXPECT_EQ(h.Count(LogLevel::kWarn, "without a namespace or name"), 1);
  EXPECT_EQ(h.poller->Status().answer_warnings_total, 8u);  // counted every poll
  EXPECT_EQ(h.poller->Jobs().at("ml/dup").devices.size(), 2u);
}

TEST(KubernetesPoller, PodListCommand) {
  TempDir dir;
  const std::string list = R"({"apiVersion":"v1","kind":"List","items":[
      {"metadata":{"namespace":"ml","name":"train-0","uid":"uid-train",
                   "labels":{"user":"alice"}},
       "status":{"phase":"Running","startTime":"2027-01-15T07:00:00Z"}}]})";
  WriteFile(dir / "gpu-07.json", list);
  Harness h(
      {.table = {.user_label = "user"}, .pod_list_command = {"cat", dir.path() + "/{node}.json"}});
  h.kubelet->Set({Pod("ml", "train-0", {"GPU-a"})});
  h.poller->PollOnce();
  KubernetesStatus status = h.poller->Status();
  EXPECT_TRUE(status.pod_list_configured);
  EXPECT_TRUE(status.pod_list_up);
  jobs::SlurmJob job = h.poller->Jobs().at("ml/train-0");
  EXPECT_EQ(job.user, "alice");
  EXPECT_EQ(job.pod_uid, "uid-train");
  EXPECT_EQ(job.start_time, 1'799'996'400);  // the pod list's startTime
  EXPECT_EQ(h.poller->Index()->by_uid.at("uid-train").JobId(), "ml/train-0");

  // The pod list fails: the poll still succeeds, the failure is logged once.
  std::filesystem::remove(dir / "gpu-07.json");
  h.poller->PollOnce();
  h.poller->PollOnce();
  status = h.poller->Status();
  EXPECT_FALSE(status.pod_list_up);
  EXPECT_EQ(status.pod_list_failures_total, 2u);
  EXPECT_TRUE(h.poller->Health().up);
  EXPECT_EQ(h.Count(LogLevel::kWarn, "pod list command failed"), 1);
  EXPECT_EQ(h.poller->Jobs().at("ml/train-0").user, "alice");  // kept

  // Output that is not a pod list counts as a failure too; then it recovers, logged once.
  WriteFile(dir / "gpu-07.json", "error: You must be logged in to the server (Unauthorized)");
  h.poller->PollOnce();
  EXPECT_EQ(h.poller->Status().pod_list_failures_total, 3u);
  WriteFile(dir / "gpu-07.json", list);
  h.poller->PollOnce();
  h.poller->PollOnce();
  EXPECT_TRUE(h.poller->Status().pod_list_up);
  EXPECT_EQ(h.Count(LogLevel::kInfo, "pod list answers again"), 1);
}

TEST(KubernetesPoller, PodListCommandGetsItsEnvironment) {
  TempDir dir;
  WriteFile(dir / "pods.json",
            R"({"items":[{"metadata":{"namespace":"ml","name":"train-0","uid":"u-1"}}]})");
  Harness h({.pod_list_command = {"sh", "-c", "cat \"$PODS_FILE\""},
             .pod_list_env = {"PODS_FILE=" + (dir / "pods.json")}});
  h.kubelet->Set({Pod("ml", "train-0", {"GPU-a"})});
  h.poller->PollOnce();
  EXPECT_TRUE(h.poller->Status().pod_list_up);
  EXPECT_EQ(h.poller->Jobs().at("ml/train-0").pod_uid, "u-1");
}

TEST(KubernetesPoller, PodListCommandThatExitsNonZero) {
  Harness h({.pod_list_command = {"sh", "-c", "echo denied >&2; exit 3"}});
  h.kubelet->Set({Pod("ml", "train-0", {"GPU-a"})});
  h.poller->PollOnce();
  EXPECT_EQ(h.poller->Jobs().size(), 1u);
  EXPECT_FALSE(h.poller->Status().pod_list_up);
  EXPECT_EQ(h.Count(LogLevel::kWarn, "pod list command failed"), 1);
}

TEST(KubernetesPoller, SlowKubeletDoesNotBlockReaders) {
  Harness h({.interval_s = 3600});
  h.kubelet->Set({Pod("ml", "train-0", {"GPU-a"})});
  h.poller->PollOnce();
  h.kubelet->Block(true);
  h.poller->Start();
  h.kubelet->WaitInList();  // the poller's thread is inside List now
  auto readers = std::async(std::launch::async, [&] {
    std::size_t n = 0;
    for (int i = 0; i < 100; ++i) {
      n += h.poller->Jobs().size();
      n += h.poller->Health().up ? 1 : 0;
      n += h.poller->Status().allocated.size();
      n += h.poller->Index()->by_device.size();
      n += h.poller->JobsVersion() > 0 ? 1 : 0;
      n += h.poller->TakeEvents().size();
    }
    return n;
  });
  const bool done = readers.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  h.kubelet->Block(false);
  ASSERT_TRUE(done) << "a reader waited on the poll in flight";
  EXPECT_GE(readers.get(), 400u);
  h.poller->Stop();
  h.poller->Stop();  // idempotent
  EXPECT_GE(h.kubelet->list_calls, 2);
}

TEST(KubernetesPoller, StartPollsRightAwayAndStopIsPrompt) {
  Harness h({.interval_s = 3600});
  h.kubelet->Set({Pod("ml", "train-0", {"GPU-a"})});
  h.poller->Start();
  for (int i = 0; i < 2000 && h.poller->JobsVersion() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(h.poller->JobsVersion(), 1u);
  h.poller->Stop();  // does not wait out the hour
  EXPECT_EQ(h.kubelet->list_calls, 1);
}

}  // namespace
}  // namespace gw::k8s
