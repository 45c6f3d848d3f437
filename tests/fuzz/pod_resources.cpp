// The kubelet's List answer (k8s/grpc_client.h) as bytes off the wire, then through the
// Kubernetes source as the agent runs it: two polls of a KubernetesPoller (k8s/poller.h) at
// different times — the decoded answer, then a changed one (pods ended, a device swapped, a pod
// repeated) — its PodIndex, and the attribution source over that index. The input is also
// decoded as a GetAllocatableResources answer, which the same polls read.
//
// Properties besides "no crash": what decodes encodes and decodes to the same pods; every job
// holds a device and is named namespace/pod; every pod the index names is a job; no more jobs than
// max_pods; every line the poller logs is a non-empty "kubernetes: ..." line; a process claimed
// through the index gets the job id of a job.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "fuzz_util.h"
#include "jobs/attribution.h"
#include "k8s/attribution_source.h"
#include "k8s/grpc_client.h"
#include "k8s/poller.h"

namespace {

using gw::fuzz::Fail;
using gw::k8s::Allocatable;
using gw::k8s::PodResources;

// Answers the polls from a script: each List takes the next answer (the last one repeats).
class ScriptedApi : public gw::k8s::PodResourcesApi {
 public:
  ScriptedApi(std::vector<std::vector<PodResources>> answers, gw::Expected<Allocatable> allocatable)
      : answers_(std::move(answers)), allocatable_(std::move(allocatable)) {}
  std::string Endpoint() const override { return "unix:///fuzz/kubelet.sock"; }
  gw::Expected<std::vector<PodResources>> List(double) override {
    const std::size_t i = next_ < answers_.size() ? next_++ : answers_.size() - 1;
    return answers_[i];
  }
  gw::Expected<Allocatable> GetAllocatable(double) override { return allocatable_; }

 private:
  std::vector<std::vector<PodResources>> answers_;
  std::size_t next_ = 0;
  gw::Expected<Allocatable> allocatable_;
};

// The second answer: every other pod gone, the first device of the rest replaced (a new pod
// instance), and the first remaining pod listed twice.
std::vector<PodResources> Changed(const std::vector<PodResources>& pods) {
  std::vector<PodResources> out;
  for (std::size_t i = 1; i < pods.size(); i += 2) {
    PodResources pod = pods[i];
    for (auto& container : pod.containers) {
      for (auto& group : container.devices) {
        if (!group.device_ids.empty()) {
          group.device_ids.front() += "-moved";
          break;
        }
      }
    }
    out.push_back(std::move(pod));
  }
  if (!out.empty()) out.push_back(out.front());
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes = gw::fuzz::AsText(data, size);
  gw::Expected<std::vector<PodResources>> pods = gw::k8s::DecodeListResponse(bytes);
  gw::Expected<Allocatable> allocatable = gw::k8s::DecodeAllocatableResponse(bytes);
  if (!allocatable.ok() && allocatable.error().message.empty()) Fail("allocatable: empty error");
  if (!pods.ok()) {
    if (pods.error().message.empty()) Fail("list: empty error");
    return 0;
  }
  gw::Expected<std::vector<PodResources>> again =
      gw::k8s::DecodeListResponse(gw::k8s::EncodeListResponse(*pods));
  if (!again.ok() || *again != *pods) Fail("an answer does not survive Encode then Decode");

  // Small limits, so that inputs of a few KB reach them.
  gw::k8s::KubernetesPollerOptions options;
  options.table.node_name = "gpu-07";
  options.table.max_pods = 64;
  options.table.max_devices = 512;
  const std::size_t max_pods = options.table.max_pods;
  gw::ManualClock clock(1'700'000'000'000);
  std::vector<std::string> lines;
  gw::Logger logger(
      gw::LogLevel::kDebug, [&](gw::LogLevel, const std::string& line) { lines.push_back(line); },
      &clock);
  auto api = std::make_unique<ScriptedApi>(
      std::vector<std::vector<PodResources>>{*pods, Changed(*pods)}, std::move(allocatable));
  gw::k8s::KubernetesPoller poller(std::move(options), std::move(api), &logger, &clock);
  gw::k8s::PodAttributionSource attribution;

  for (int poll = 0; poll < 2; ++poll) {
    poller.PollOnce();
    const std::map<std::string, gw::jobs::SlurmJob> jobs = poller.Jobs();
    if (jobs.size() > max_pods) Fail("more jobs than max_pods");
    for (const auto& [id, job] : jobs) {
      if (job.devices.empty()) Fail("job " + id + " holds no device");
      if (id != job.pod_namespace + "/" + job.pod_name) Fail("job id " + id + " is not ns/pod");
    }
    const std::shared_ptr<const gw::k8s::PodIndex> index = poller.Index();
    if (index == nullptr) Fail("no index");
    for (const auto& [device, holders] : index->by_device) {
      for (const gw::k8s::PodRef& pod : holders)
        if (!jobs.count(pod.JobId())) Fail("index names " + pod.JobId() + ", not a job");
    }
    attribution.Set(index);
    int n = 0;
    for (const auto& [device, holders] : index->by_device) {
      if (++n > 64) break;
      gw::jobs::ProcessAttribution process;
      process.pod_uid = "uid-" + std::to_string(n % 8);
      attribution.Refine(device, &process);
      if (!process.job_id.empty() && !jobs.count(process.job_id))
        Fail("process claimed by " + process.job_id + ", not a job");
    }
    (void)poller.TakeEvents();
    (void)poller.Status();
    clock.AdvanceMs(10'000);
  }
  for (const std::string& line : lines)
    if (line.find("kubernetes: ") == std::string::npos) Fail("log line: " + line);
  return 0;
}
