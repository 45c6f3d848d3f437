// The Kubernetes source's cost without gRPC: one poll's work after the kubelet answered (PodTable
// Apply, the index and status rebuilt: KubernetesPoller::PollOnce over an in-memory kubelet), and
// PodAttributionSource::Refine per GPU process (it runs in every attribution pass).
//
//   build/bin/k8s_bench [--benchmark_filter=...]
//
// Poll benchmarks' arguments: pods holding GPUs, device ids per such pod, pods changing per poll
// (0 = the same answer again). Every answer lists 110 pods (the kubelet's default pod limit); the
// pods without GPUs hold CPU ids from the CPU manager, which the table must skip.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "k8s/attribution_source.h"
#include "k8s/fake_pod_resources.h"
#include "k8s/poller.h"

namespace {

using namespace gw;
using namespace gw::k8s;

constexpr int kPodsPerNode = 110;

std::string Hex(unsigned n, unsigned width) {
  static const char* digits = "0123456789abcdef";
  std::string out(width, '0');
  for (unsigned i = 0; i < width; ++i, n >>= 4) out[width - 1 - i] = digits[n & 15];
  return out;
}

std::string Uid(unsigned n) {
  return Hex(n, 8) + "-0000-4000-8000-" + Hex(n * 7919u, 12);
}

// `generation` renames the first `churn` GPU pods, as if they ended and others took their GPUs.
std::vector<PodResources> Answer(int gpu_pods, int devices_per_pod, int churn, int generation) {
  std::vector<PodResources> pods;
  pods.reserve(kPodsPerNode);
  for (int p = 0; p < kPodsPerNode; ++p) {
    PodResources pod;
    pod.ns = p % 3 == 0 ? "ml-research" : "vision-prod";
    if (p < gpu_pods) {
      pod.name =
          "train-" + std::to_string(p) + (p < churn ? "-g" + std::to_string(generation) : "");
      DeviceGroup group{"nvidia.com/gpu", {}, {p % 2}};
      for (int d = 0; d < devices_per_pod; ++d)
        group.device_ids.push_back("GPU-" + Hex(static_cast<unsigned>(p * devices_per_pod + d), 8) +
                                   "-1111-2222-3333-444455556666");
      pod.containers.push_back({"main", {std::move(group)}});
      pod.containers.push_back({"sidecar", {}});
    } else {
      pod.name = "web-" + std::to_string(p);
      pod.containers.push_back(
          {"app", {{"cpu", {std::to_string(p % 64), std::to_string(p % 64 + 64)}, {0}}}});
    }
    pods.push_back(std::move(pod));
  }
  return pods;
}

// The two answers a benchmark alternates between (the same one twice when nothing churns), from
// its arguments: GPU pods, devices per pod, pods replaced per poll.
std::vector<std::vector<PodResources>> Answers(const benchmark::State& state, int* churn) {
  *churn = static_cast<int>(state.range(2));
  const int gpu_pods = static_cast<int>(state.range(0));
  const int per_pod = static_cast<int>(state.range(1));
  return {Answer(gpu_pods, per_pod, *churn, 0), Answer(gpu_pods, per_pod, *churn, 1)};
}

void BM_PodTableApply(benchmark::State& state) {
  int churn = 0;
  const std::vector<std::vector<PodResources>> answers = Answers(state, &churn);
  PodTable table({.node_name = "gpu-07"});
  double now = 1.8e9;
  std::vector<std::string> warnings;
  (void)table.Apply(answers[0], nullptr, now, &warnings);
  std::size_t i = 0, events = 0;
  for (auto _ : state) {
    now += 10;
    events += table.Apply(answers[churn > 0 ? (++i & 1) : 0], nullptr, now, &warnings).size();
  }
  state.counters["events_per_poll"] =
      benchmark::Counter(static_cast<double>(events) / static_cast<double>(state.iterations()));
}

// The whole poll after the answer arrived: Apply, the events queue, status and the index. The
// fake kubelet hands back a copy of its answer, as the gRPC client hands back a decoded one.
void BM_PollerPoll(benchmark::State& state) {
  int churn = 0;
  const std::vector<std::vector<PodResources>> answers = Answers(state, &churn);
  auto kubelet = std::make_shared<testing::FakeKubelet>();
  kubelet->Set(answers[0]);
  for (const PodResources& pod : answers[0])
    for (const ContainerResources& c : pod.containers)
      for (const DeviceGroup& g : c.devices)
        if (g.resource_name == "nvidia.com/gpu") {
          if (kubelet->allocatable.devices.empty())
            kubelet->allocatable.devices.push_back({"nvidia.com/gpu", {}, {}});
          for (const std::string& id : g.device_ids)
            kubelet->allocatable.devices[0].device_ids.push_back(id);
        }
  ManualClock clock(1'800'000'000'000);
  KubernetesPoller poller({.table = {.node_name = "gpu-07"}},
                          std::make_unique<testing::FakePodResourcesApi>(kubelet), nullptr, &clock);
  poller.PollOnce();
  std::size_t i = 0;
  for (auto _ : state) {
    if (churn > 0) {
      state.PauseTiming();
      kubelet->Set(answers[++i & 1]);
      state.ResumeTiming();
    }
    clock.AdvanceMs(10'000);
    poller.PollOnce();
    benchmark::DoNotOptimize(poller.TakeEvents());
  }
}

// Refine for one process: its UID known from the pod list, learned through its GPU earlier, or a
// process outside any pod (the cheap refusal).
void BM_Refine(benchmark::State& state) {
  auto index = std::make_shared<PodIndex>();
  for (unsigned p = 0; p < 110; ++p) {
    PodRef ref{"ml-research", "train-" + std::to_string(p)};
    for (unsigned d = 0; d < 8; ++d)
      index->by_device["GPU-" + Hex(p * 8 + d, 8) + "-1111-2222-3333-444455556666"].push_back(ref);
    if (p % 2 == 0) index->by_uid[Uid(p)] = ref;
  }
  PodAttributionSource source;
  source.Set(index);
  const int kind = static_cast<int>(state.range(0));
  const unsigned pod = kind == 0 ? 40 : 41;  // even: UID in the pod list; odd: learned
  jobs::ProcessAttribution base;
  base.pid = 4242;
  base.pod_uid = kind == 2 ? "" : Uid(pod);
  base.container_id = Hex(0xabcdef, 64);
  const std::string gpu = "GPU-" + Hex(pod * 8 + 3, 8) + "-1111-2222-3333-444455556666";
  {
    jobs::ProcessAttribution first = base;
    source.Refine(gpu, &first);  // learns the odd pod's UID
  }
  for (auto _ : state) {
    jobs::ProcessAttribution p = base;
    source.Refine(gpu, &p);
    benchmark::DoNotOptimize(p.job_id);
  }
  state.SetLabel(kind == 0 ? "uid from pod list" : kind == 1 ? "uid learned" : "host process");
}

// Steady state and churn at 8 whole GPUs (one per pod), 56 MIG-sized devices, and the worst case
// of every pod holding 8 devices.
#define POLL_ARGS         \
  ->Args({8, 1, 0})       \
      ->Args({8, 1, 2})   \
      ->Args({56, 1, 0})  \
      ->Args({56, 1, 5})  \
      ->Args({110, 8, 0}) \
      ->Args({110, 8, 5})
BENCHMARK(BM_PodTableApply) POLL_ARGS;
BENCHMARK(BM_PollerPoll) POLL_ARGS;
BENCHMARK(BM_Refine)->Arg(0)->Arg(1)->Arg(2);

}  // namespace

BENCHMARK_MAIN();
