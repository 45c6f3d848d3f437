// The pod table and the pod list parser (k8s/pod_table.h): lifecycles (appear, move, end with and
// without a pod list), MIG devices, resource globs, realistic kubectl JSON, and bad answers
// (empty, duplicate, huge, empty ids) that must warn once per kind and never crash.
#include "k8s/pod_table.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace gw::k8s {
namespace {

using jobs::JobEventKind;
using jobs::JobState;

std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(GW_SOURCE_DIR) + "/tests/k8s/fixtures/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

PodResources Pod(const std::string& ns, const std::string& name, std::vector<std::string> gpu_ids,
                 const std::string& resource = "nvidia.com/gpu",
                 const std::string& container = "main") {
  PodResources pod{name, ns, {}};
  pod.containers.push_back({container, {{resource, std::move(gpu_ids), {0}}}});
  return pod;
}

PodInfo Info(const std::string& ns, const std::string& name, const std::string& phase,
             const std::string& uid = "") {
  PodInfo info;
  info.ns = ns;
  info.name = name;
  info.phase = phase;
  info.uid = uid;
  return info;
}

TEST(ResourceMatches, ExactAndGlobs) {
  const std::vector<std::string> patterns = {"nvidia.com/gpu", "nvidia.com/mig-*"};
  EXPECT_TRUE(ResourceMatches(patterns, "nvidia.com/gpu"));
  EXPECT_TRUE(ResourceMatches(patterns, "nvidia.com/mig-3g.40gb"));
  EXPECT_TRUE(ResourceMatches(patterns, "nvidia.com/mig-"));
  EXPECT_FALSE(ResourceMatches(patterns, "nvidia.com/gpu.shared"));
  EXPECT_FALSE(ResourceMatches(patterns, "example.com/fpga"));
  EXPECT_FALSE(ResourceMatches(patterns, "cpu"));
  EXPECT_TRUE(ResourceMatches({"*"}, "anything"));
  EXPECT_TRUE(ResourceMatches({"*/gpu*"}, "amd.com/gpu"));
  EXPECT_TRUE(ResourceMatches({"a*b*c"}, "axxbyybzc"));
  EXPECT_FALSE(ResourceMatches({"a*b*c"}, "axxbyy"));
  EXPECT_FALSE(ResourceMatches({}, "nvidia.com/gpu"));
}

TEST(PodTable, PodAppearsAndEndsWithoutPodList) {
  PodTable table({.node_name = "gpu-07"});
  PodResources pod = Pod("ml", "train-0", {"GPU-aaaa", "GPU-bbbb"});
  pod.containers.push_back({"sidecar", {{"cpu", {"0", "1"}, {}}}});
  std::vector<jobs::JobEvent> events = table.Apply({pod}, nullptr, 1000.5, nullptr);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, JobEventKind::kStarted);
  EXPECT_EQ(events[0].job_id, "ml/train-0");
  EXPECT_EQ(events[0].time, 1000);
  ASSERT_EQ(table.jobs().size(), 1u);
  const jobs::SlurmJob& job = table.jobs().at("ml/train-0");
  EXPECT_EQ(job.source, "kubernetes");
  EXPECT_EQ(job.name, "train-0");
  EXPECT_EQ(job.pod_name, "train-0");
  EXPECT_EQ(job.account, "ml");
  EXPECT_EQ(job.pod_namespace, "ml");
  EXPECT_EQ(job.partition, "");
  EXPECT_EQ(job.nodes, "gpu-07");
  EXPECT_EQ(job.state, JobState::kRunning);
  EXPECT_EQ(job.user, "");
  EXPECT_TRUE(job.gpu_indices.empty());
  ASSERT_EQ(job.devices.size(), 2u);  // the sidecar's CPUs are not GPU devices
  EXPECT_EQ(job.devices[0], (jobs::SlurmJob::Device{"GPU-aaaa", "nvidia.com/gpu", "main"}));
  EXPECT_TRUE(table.health().up);

  // The same answer again: nothing happens.
  EXPECT_TRUE(table.Apply({pod}, nullptr, 1010, nullptr).empty());

  // Gone without a pod list: ended, state unknown.
  events = table.Apply({}, nullptr, 1020, nullptr);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, JobEventKind::kFinished);
  EXPECT_EQ(events[0].time, 1020);
  EXPECT_EQ(events[0].state, JobState::kOther);
  EXPECT_EQ(events[0].job.state_text, "ENDED");
  EXPECT_EQ(events[0].job.end_time, 1020);
  EXPECT_FALSE(events[0].job.exit_code.has_value());
  EXPECT_TRUE(table.jobs().empty());
}

TEST(PodTable, PodsWithoutGpusAreNotJobs) {
  PodTable table;
  PodResources cpu_only{"web-1", "default", {{"nginx", {{"cpu", {"2", "3"}, {0}}}}}};
  PodResources no_devices{"idle", "default", {{"c", {}}}};
  PodResources fpga = Pod("hw", "fpga-0", {"fpga-1"}, "example.com/fpga");
  EXPECT_TRUE(table.Apply({cpu_only, no_devices, fpga}, nullptr, 10, nullptr).empty());
  EXPECT_TRUE(table.jobs().empty());
}

TEST(PodTable, ResourcesOptionDecidesWhatIsAGpu) {
  PodTable table({.resources = {"nvidia.com/gpu"}});
  PodResources mig = Pod("ml", "mig-0", {"MIG-1111"}, "nvidia.com/mig-1g.10gb");
  EXPECT_TRUE(table.Apply({mig}, nullptr, 10, nullptr).empty());
  PodTable globbed({.resources = {"nvidia.com/*"}});
  EXPECT_EQ(globbed.Apply({mig}, nullptr, 10, nullptr).size(), 1u);
}

TEST(PodTable, MigDevicesAcrossContainers) {
  PodTable table;
  PodResources pod{"infer", "ns1", {}};
  pod.containers.push_back({"a", {{"nvidia.com/mig-3g.40gb", {"MIG-aaaa"}, {0}}}});
  pod.containers.push_back({"b", {{"nvidia.com/mig-1g.10gb", {"MIG-bbbb", "MIG-cccc"}, {1}}}});
  ASSERT_EQ(table.Apply({pod}, nullptr, 10, nullptr).size(), 1u);
  const jobs::SlurmJob& job = table.jobs().at("ns1/infer");
  ASSERT_EQ(job.devices.size(), 3u);
  EXPECT_EQ(job.devices[0], (jobs::SlurmJob::Device{"MIG-aaaa", "nvidia.com/mig-3g.40gb", "a"}));
  EXPECT_EQ(job.devices[2], (jobs::SlurmJob::Device{"MIG-cccc", "nvidia.com/mig-1g.10gb", "b"}));
}

TEST(PodTable, DeviceSetChangeIsANewInstance) {
  PodTable table;
  table.Apply({Pod("ml", "train-0", {"GPU-aaaa"})}, nullptr, 100, nullptr);
  // Same devices in another order: the same pod.
  PodResources reordered = Pod("ml", "train-0", {"GPU-aaaa"});
  EXPECT_TRUE(table.Apply({reordered}, nullptr, 110, nullptr).empty());
  std::vector<jobs::JobEvent> events =
      table.Apply({Pod("ml", "train-0", {"GPU-bbbb"})}, nullptr, 120, nullptr);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind, JobEventKind::kFinished);
  EXPECT_EQ(events[0].job.devices[0].id, "GPU-aaaa");
  EXPECT_EQ(events[0].job.state_reason, "devices changed");
  EXPECT_EQ(events[1].kind, JobEventKind::kStarted);
  EXPECT_EQ(events[1].time, 120);
  EXPECT_EQ(events[1].job.devices[0].id, "GPU-bbbb");
  EXPECT_EQ(table.jobs().at("ml/train-0").start_time, 120);
  // Losing every GPU ends it as a job.
  PodResources cpu_only{"train-0", "ml", {{"main", {{"cpu", {"1"}, {}}}}}};
  events = table.Apply({cpu_only}, nullptr, 130, nullptr);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, JobEventKind::kFinished);
  EXPECT_TRUE(table.jobs().empty());
}

TEST(PodTable, NewUidWithSameDevicesIsANewInstance) {
  PodTable table;
  std::vector<PodInfo> list = {Info("ml", "worker-0", "Running", "uid-1")};
  list[0].start_time = 90;
  table.Apply({Pod("ml", "worker-0", {"GPU-aaaa"})}, &list, 100, nullptr);
  EXPECT_EQ(table.jobs().at("ml/worker-0").start_time, 90);
  list[0].uid = "uid-2";
  list[0].start_time = 105;
  std::vector<jobs::JobEvent> events =
      table.Apply({Pod("ml", "worker-0", {"GPU-aaaa"})}, &list, 110, nullptr);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind, JobEventKind::kFinished);
  EXPECT_EQ(events[0].job.pod_uid, "uid-1");
  EXPECT_EQ(events[0].time, 105);
  EXPECT_EQ(events[1].kind, JobEventKind::kStarted);
  EXPECT_EQ(events[1].job.pod_uid, "uid-2");
  EXPECT_EQ(events[1].time, 105);
}

struct EndCase {
  const char* phase;
  const char* reason;
  bool deleting;
  std::optional<int> exit_code;
  JobState state;
};

TEST(PodTable, FinalStatesFromThePodList) {
  const std::vector<EndCase> cases = {
      {"Succeeded", "Completed", false, 0, JobState::kCompleted},
      {"Failed", "Error", false, 3, JobState::kFailed},
      {"Failed", "OOMKilled", false, 137, JobState::kOutOfMemory},
      {"Failed", "Evicted", false, std::nullopt, JobState::kPreempted},
      {"Running", "", true, std::nullopt, JobState::kCancelled},
      {"Running", "", false, std::nullopt, JobState::kOther},
  };
  for (const EndCase& c : cases) {
    SCOPED_TRACE(std::string(c.phase) + "/" + c.reason);
    PodTable table({.user_label = "user"});
    std::vector<PodInfo> list = {Info("ml", "p", "Running", "uid-p")};
    list[0].labels["user"] = "carol";
    table.Apply({Pod("ml", "p", {"GPU-1"})}, &list, 100, nullptr);
    EXPECT_EQ(table.jobs().at("ml/p").user, "carol");
    // The last pod list before the pod left says how it ended...
    list[0].phase = c.phase;
    list[0].reason = c.reason;
    list[0].deleting = c.deleting;
    list[0].exit_code = c.exit_code;
    std::vector<jobs::JobEvent> events;
    if (std::string(c.phase) == "Running") {
      table.Apply({Pod("ml", "p", {"GPU-1"})}, &list, 110, nullptr);
      // ...and a later poll without a pod list (it failed) still uses it.
      events = table.Apply({}, nullptr, 120, nullptr);
    } else {
      // A terminal pod the kubelet still lists has ended as well.
      events = table.Apply({Pod("ml", "p", {"GPU-1"})}, &list, 120, nullptr);
    }
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].kind, JobEventKind::kFinished);
    EXPECT_EQ(events[0].state, c.state);
    EXPECT_EQ(events[0].job.state, c.state);
    EXPECT_EQ(events[0].job.exit_code, c.exit_code);
    EXPECT_EQ(events[0].job.user, "carol");
    EXPECT_EQ(events[0].job.pod_uid, "uid-p");
    EXPECT_EQ(events[0].time, 120);
    EXPECT_TRUE(table.jobs().empty());
    // A terminal pod still listed does not come back as a new job.
    EXPECT_TRUE(table.Apply({Pod("ml", "p", {"GPU-1"})}, &list, 130, nullptr).empty() ||
                std::string(c.phase) == "Running");
  }
}

TEST(PodTable, UserFromLabelThenAnnotation) {
  PodTable table({.user_label = "team.example.com/user", .user_annotation = "gpuwarden.io/owner"});
  std::vector<PodInfo> list = {Info("a", "x", "Running"), Info("a", "y", "Running"),
                               Info("a", "z", "Running")};
  list[0].labels["team.example.com/user"] = "alice";
  list[0].annotations["gpuwarden.io/owner"] = "not-alice";
  list[1].annotations["gpuwarden.io/owner"] = "bob";
  table.Apply({Pod("a", "x", {"GPU-1"}), Pod("a", "y", {"GPU-2"}), Pod("a", "z", {"GPU-3"})}, &list,
              10, nullptr);
  EXPECT_EQ(table.jobs().at("a/x").user, "alice");
  EXPECT_EQ(table.jobs().at("a/y").user, "bob");
  EXPECT_EQ(table.jobs().at("a/z").user, "");
  // A pod list that arrives later fills the user of a known job without a new event.
  PodTable late({.user_label = "team.example.com/user"});
  late.Apply({Pod("a", "x", {"GPU-1"})}, nullptr, 10, nullptr);
  EXPECT_EQ(late.jobs().at("a/x").user, "");
  EXPECT_TRUE(late.Apply({Pod("a", "x", {"GPU-1"})}, &list, 20, nullptr).empty());
  EXPECT_EQ(late.jobs().at("a/x").user, "alice");
}

TEST(PodTable, FailedPollKeepsJobs) {
  PodTable table;
  table.Apply({Pod("ml", "p", {"GPU-1"})}, nullptr, 100, nullptr);
  table.Failed("pod-resources unix:///x: List: UNAVAILABLE", 110);
  EXPECT_EQ(table.jobs().size(), 1u);
  EXPECT_FALSE(table.health().up);
  EXPECT_EQ(table.health().failures_total, 1u);
  EXPECT_EQ(table.health().last_success_s, 100);
  EXPECT_DOUBLE_EQ(table.health().StalenessS(130), 30);
  EXPECT_TRUE(table.Apply({Pod("ml", "p", {"GPU-1"})}, nullptr, 140, nullptr).empty());
  EXPECT_TRUE(table.health().up);
}

TEST(PodTable, OdditiesWarnOncePerKindAndLoseNothingElse) {
  PodTable table;
  std::vector<PodResources> pods = {
      Pod("", "nameless-ns", {"GPU-1"}),
      Pod("ml", "", {"GPU-2"}),
      Pod("ml", "dup", {"GPU-3"}),
      Pod("ml", "dup", {"GPU-4"}, "nvidia.com/gpu", "second"),
      Pod("ml", "dup", {"GPU-3"}),  // the same device again: kept once
      Pod("ml", "holes", {"", "GPU-5", ""}),
  };
  std::vector<std::string> warnings;
  std::vector<jobs::JobEvent> events = table.Apply(pods, nullptr, 10, &warnings);
  EXPECT_EQ(events.size(), 2u);
  ASSERT_EQ(table.jobs().size(), 2u);
  EXPECT_EQ(table.jobs().at("ml/dup").devices.size(), 2u);
  ASSERT_EQ(table.jobs().at("ml/holes").devices.size(), 1u);
  EXPECT_EQ(table.jobs().at("ml/holes").devices[0].id, "GPU-5");
  ASSERT_EQ(warnings.size(), 3u);  // empty names (twice: one line), duplicate, empty ids
  auto has = [&](const std::string& part) {
    for (const std::string& w : warnings)
      if (w.find(part) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(has("without a namespace or name"));
  EXPECT_TRUE(has("ml/dup is listed more than once"));
  EXPECT_TRUE(has("empty id"));
  // An empty answer is fine: every job ends, no warning.
  warnings.clear();
  EXPECT_EQ(table.Apply({}, nullptr, 20, &warnings).size(), 2u);
  EXPECT_TRUE(warnings.empty());
}

TEST(PodTable, HugeAnswersAreCapped) {
  PodTable table({.max_pods = 10000});
  std::vector<PodResources> pods;
  pods.reserve(20000);
  for (int i = 0; i < 20000; ++i)
    pods.push_back(Pod("bulk", "pod-" + std::to_string(i), {"GPU-" + std::to_string(i)}));
  std::vector<std::string> warnings;
  std::vector<jobs::JobEvent> events = table.Apply(pods, nullptr, 10, &warnings);
  EXPECT_EQ(events.size(), 10000u);
  EXPECT_EQ(table.jobs().size(), 10000u);
  EXPECT_TRUE(table.jobs().count("bulk/pod-9999"));
  EXPECT_FALSE(table.jobs().count("bulk/pod-10000"));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("more than 10000 pods"), std::string::npos);

  PodTable few_devices({.max_devices = 3});
  warnings.clear();
  few_devices.Apply({Pod("a", "b", {"GPU-1", "GPU-2", "GPU-3", "GPU-4", "GPU-5"})}, nullptr, 10,
                    &warnings);
  EXPECT_EQ(few_devices.jobs().at("a/b").devices.size(), 3u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("max_devices"), std::string::npos);

  // A pod list as large is capped the same way.
  std::vector<PodInfo> list;
  for (int i = 0; i < 20000; ++i)
    list.push_back(Info("bulk", "pod-" + std::to_string(i), "Running"));
  warnings.clear();
  table.Apply(pods, &list, 20, &warnings);
  ASSERT_EQ(warnings.size(), 2u);  // one for the answer, one for the list
  EXPECT_NE(warnings[0].find("pod list: more than 10000"), std::string::npos);
  EXPECT_NE(warnings[1].find("pod-resources answer: more than 10000"), std::string::npos);
}

TEST(PodList, ParsesKubectlOutput) {
  Expected<std::vector<PodInfo>> pods = ParsePodListJson(Fixture("pods_gpu07.json"));
  ASSERT_TRUE(pods.ok()) << pods.error().message;
  ASSERT_EQ(pods->size(), 6u);  // the nameless item and the non-object are skipped
  const PodInfo& train = (*pods)[0];
  EXPECT_EQ(train.ns, "ml-research");
  EXPECT_EQ(train.name, "train-0");
  EXPECT_EQ(train.uid, "1f2e3d4c-5b6a-4789-8abc-def012345678");
  EXPECT_EQ(train.labels.at("team.example.com/user"), "alice");
  EXPECT_EQ(train.annotations.at("gpuwarden.io/owner"), "alice-annotated");
  EXPECT_EQ(train.creation_time, 1796163003);
  EXPECT_EQ(train.start_time, 1796163004);
  EXPECT_EQ(train.phase, "Running");
  EXPECT_EQ(train.node_name, "gpu-07");
  EXPECT_FALSE(train.deleting);
  EXPECT_FALSE(train.exit_code.has_value());  // still running

  const PodInfo& eval = (*pods)[1];
  EXPECT_EQ(eval.creation_time, 1796173200);  // fraction dropped
  EXPECT_EQ(eval.start_time, 1796173201);     // +02:00 offset applied
  EXPECT_EQ(eval.phase, "Succeeded");
  EXPECT_EQ(eval.reason, "Completed");
  EXPECT_EQ(eval.exit_code, 0);

  const PodInfo& oom = (*pods)[2];
  EXPECT_EQ(oom.phase, "Failed");
  EXPECT_EQ(oom.reason, "OOMKilled");  // the failing container's, not the first's
  EXPECT_EQ(oom.exit_code, 137);

  EXPECT_EQ((*pods)[3].reason, "Evicted");
  EXPECT_FALSE((*pods)[3].exit_code.has_value());
  EXPECT_TRUE((*pods)[4].deleting);
  EXPECT_EQ((*pods)[5].ns, "kube-system");
}

TEST(PodList, FixtureDrivesFinalStates) {
  Expected<std::vector<PodInfo>> list = ParsePodListJson(Fixture("pods_gpu07.json"));
  ASSERT_TRUE(list.ok());
  PodTable table({.node_name = "gpu-07", .user_label = "team.example.com/user"});
  std::vector<PodResources> answer = {
      Pod("ml-research", "train-0", {"GPU-0", "GPU-1"}),
      Pod("scratch", "notebook-x", {"MIG-7"}, "nvidia.com/mig-1g.10gb"),
      Pod("kube-system", "kube-proxy-x7k2p", {}),
  };
  std::vector<jobs::JobEvent> events = table.Apply(answer, &*list, 1796180000, nullptr);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].job_id, "ml-research/train-0");  // oldest start first
  EXPECT_EQ(events[0].time, 1796163004);
  EXPECT_EQ(events[0].job.submit_time, 1796163003);
  EXPECT_EQ(events[0].job.user, "alice");
  EXPECT_EQ(events[0].job.pod_uid, "1f2e3d4c-5b6a-4789-8abc-def012345678");
  events = table.Apply({answer[0]}, &*list, 1796180010, nullptr);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].job_id, "scratch/notebook-x");
  EXPECT_EQ(events[0].state, JobState::kCancelled);
}

TEST(PodList, SinglePodEmptyAndBadInput) {
  Expected<std::vector<PodInfo>> one = ParsePodListJson(
      R"({"kind":"Pod","metadata":{"namespace":"a","name":"b","creationTimestamp":"bogus"}})");
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].creation_time, 0);
  Expected<std::vector<PodInfo>> empty =
      ParsePodListJson(R"({"apiVersion":"v1","items":[],"kind":"List"})");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  EXPECT_TRUE(ParsePodListJson(R"({"kind":"PodList","items":null})").ok());
  EXPECT_FALSE(ParsePodListJson("").ok());
  EXPECT_FALSE(ParsePodListJson("No resources found in default namespace.").ok());
  EXPECT_FALSE(ParsePodListJson(R"({"kind":"Status","status":"Failure"})").ok());
  EXPECT_FALSE(ParsePodListJson(R"({"items":{"a":1}})").ok());
  EXPECT_FALSE(ParsePodListJson("[1,2]").ok());
  // Wrong types inside items are ignored, not fatal.
  Expected<std::vector<PodInfo>> odd = ParsePodListJson(
      R"({"items":[{"metadata":{"namespace":"a","name":"b","labels":{"x":1,"y":"z"},
          "uid":7},"status":{"phase":3,"startTime":"2026-13-01T00:00:00Z",
          "containerStatuses":[{"state":{"terminated":{"exitCode":"1"}}},"x"]}}]})");
  ASSERT_TRUE(odd.ok());
  ASSERT_EQ(odd->size(), 1u);
  EXPECT_EQ((*odd)[0].labels.size(), 1u);
  EXPECT_EQ((*odd)[0].uid, "");
  EXPECT_EQ((*odd)[0].start_time, 0);
}

// Attacks on the pod-list command's output (docs/limits.md: nlohmann's parser is iterative):
// nesting far past any recursion limit inside a label value and as the document itself, and a
// 20,000-item list with 1 KiB annotations — parsed or refused, never a crash.
TEST(PodList, DeepNestingAndHugeListsAreSafe) {
  const std::string deep(200000, '[');
  EXPECT_FALSE(ParsePodListJson(deep).ok());
  const std::string nested = R"({"items":[{"metadata":{"namespace":"a","name":"b","labels":{"x":)" +
                             std::string(200000, '[') + std::string(200000, ']') + "}}}]}";
  Expected<std::vector<PodInfo>> one = ParsePodListJson(nested);
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->size(), 1u);
  EXPECT_TRUE((*one)[0].labels.empty());  // not a string: ignored
  std::string big = R"({"items":[)";
  for (int i = 0; i < 20000; ++i) {
    if (i > 0) big += ',';
    big += R"({"metadata":{"namespace":"ns","name":"p)" + std::to_string(i) +
           R"(","annotations":{"note":")" + std::string(1024, 'x') + R"("}}})";
  }
  big += "]}";
  Expected<std::vector<PodInfo>> many = ParsePodListJson(big);
  ASSERT_TRUE(many.ok());
  EXPECT_EQ(many->size(), 20000u);
  EXPECT_EQ(many->back().annotations.at("note").size(), 1024u);
}

TEST(PodList, Rfc3339Forms) {
  auto start = [](const std::string& t) {
    Expected<std::vector<PodInfo>> pods = ParsePodListJson(
        R"({"items":[{"metadata":{"namespace":"a","name":"b"},"status":{"startTime":")" + t +
        R"("}}]})");
    return pods.ok() && !pods->empty() ? (*pods)[0].start_time : -1;
  };
  EXPECT_EQ(start("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(start("1970-01-02T00:00:01Z"), 86401);
  EXPECT_EQ(start("2000-03-01T00:00:00Z"), 951868800);  // after a leap day
  EXPECT_EQ(start("2026-12-01T22:10:04Z"), 1796163004);
  EXPECT_EQ(start("2026-12-01t22:10:04z"), 1796163004);
  EXPECT_EQ(start("2026-12-01T22:10:04.999999999Z"), 1796163004);
  EXPECT_EQ(start("2026-12-02T00:10:04+02:00"), 1796163004);
  EXPECT_EQ(start("2026-12-01T17:40:04-04:30"), 1796163004);
  EXPECT_EQ(start("2026-12-01T22:10:04"), 0);  // no offset
  EXPECT_EQ(start("2026-12-01T22:10:04.Z"), 0);
  EXPECT_EQ(start("2026-12-01T22:10:04Zjunk"), 0);
  EXPECT_EQ(start("2026-12-01"), 0);
}

}  // namespace
}  // namespace gw::k8s
