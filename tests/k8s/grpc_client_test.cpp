// The pod-resources gRPC client (k8s/grpc_client.h) against the stand-in kubelet
// (gw-fake-kubelet, a child process on a unix socket in a temp dir), and the decoding of answers
// on its own: round trips, fields a newer kubelet sends, garbage and mutated bytes.
#include "k8s/grpc_client.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "k8s/fake_kubelet_process.h"
#include "support/mutate.h"
#include "support/process.h"

namespace gw::k8s {
namespace {

using gw::testing::FakeKubelet;
using nlohmann::json;

const char* kGpu0 = "GPU-5d3f3c1e-2a4b-4c8d-9e0f-111111111111";
const char* kGpu1 = "GPU-5d3f3c1e-2a4b-4c8d-9e0f-222222222222";
const char* kGpu2 = "GPU-5d3f3c1e-2a4b-4c8d-9e0f-333333333333";
const char* kMig0 = "MIG-8c3e2a77-0b1d-5f6e-a7b8-444444444444";
const char* kMig1 = "MIG-8c3e2a77-0b1d-5f6e-a7b8-555555555555";

// A node with whole GPUs and MIG devices (mixed strategy), pods with several containers, a
// container without devices, a pod without any, and NUMA placement.
json NodeState() {
  return {{"pods",
           {{{"namespace", "ml-research"},
             {"name", "train-0"},
             {"containers",
              {{{"name", "main"},
                {"devices",
                 {{{"resource", "nvidia.com/gpu"}, {"ids", {kGpu0, kGpu1}}, {"numa", {0}}}}}},
               {{"name", "sidecar"}, {"devices", json::array()}}}}},
            {{"namespace", "vision-a"},
             {"name", "infer-7"},
             {"containers",
              {{{"name", "server"},
                {"devices",
                 {{{"resource", "nvidia.com/mig-1g.10gb"}, {"ids", {kMig0}}, {"numa", {1}}},
                  {{"resource", "example.com/nic"}, {"ids", {"nic-3"}}}}}},
               {{"name", "worker"},
                {"devices",
                 {{{"resource", "nvidia.com/mig-1g.10gb"}, {"ids", {kMig1}}, {"numa", {1}}}}}}}}},
            {{"namespace", "kube-system"},
             {"name", "coredns-abc"},
             {"containers", {{{"name", "coredns"}}}}}}},
          {"allocatable",
           {{{"resource", "nvidia.com/gpu"}, {"ids", {kGpu0, kGpu1}}, {"numa", {0}}},
            {{"resource", "nvidia.com/mig-1g.10gb"}, {"ids", {kMig0, kMig1}}, {"numa", {1}}},
            {{"resource", "nvidia.com/gpu"}, {"ids", {kGpu2}}, {"numa", {0, 1}}}}}};
}

std::vector<PodResources> NodePods() {
  return {
      {.name = "train-0",
       .ns = "ml-research",
       .containers = {{.name = "main",
                       .devices = {{.resource_name = "nvidia.com/gpu",
                                    .device_ids = {kGpu0, kGpu1},
                                    .numa_nodes = {0}}}},
                      {.name = "sidecar", .devices = {}}}},
      {.name = "infer-7",
       .ns = "vision-a",
       .containers = {{.name = "server",
                       .devices = {{.resource_name = "nvidia.com/mig-1g.10gb",
                                    .device_ids = {kMig0},
                                    .numa_nodes = {1}},
                                   {.resource_name = "example.com/nic",
                                    .device_ids = {"nic-3"},
                                    .numa_nodes = {}}}},
                      {.name = "worker",
                       .devices = {{.resource_name = "nvidia.com/mig-1g.10gb",
                                    .device_ids = {kMig1},
                                    .numa_nodes = {1}}}}}},
      {.name = "coredns-abc", .ns = "kube-system", .containers = {{.name = "coredns"}}},
  };
}

Allocatable NodeAllocatable() {
  return {.devices = {
              {.resource_name = "nvidia.com/gpu", .device_ids = {kGpu0, kGpu1}, .numa_nodes = {0}},
              {.resource_name = "nvidia.com/mig-1g.10gb",
               .device_ids = {kMig0, kMig1},
               .numa_nodes = {1}},
              {.resource_name = "nvidia.com/gpu", .device_ids = {kGpu2}, .numa_nodes = {0, 1}},
          }};
}

// Each test has a stand-in kubelet on a socket in its own temp dir; Serve starts it.
class GrpcClientTest : public ::testing::Test {
 protected:
  // Starts the kubelet with `state`; returns a client of its socket.
  std::unique_ptr<PodResourcesApi> Serve(const json& state) {
    kubelet.SetState(state);
    if (!kubelet.Start()) ADD_FAILURE() << "gw-fake-kubelet did not start: " << kubelet.Output();
    return MakeGrpcPodResourcesApi(kubelet.socket());
  }

  FakeKubelet kubelet;
};

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST_F(GrpcClientTest, ListAndAllocatableRoundTrip) {
  auto api = Serve(NodeState());
  EXPECT_EQ(api->Endpoint(), "unix://" + kubelet.socket());

  Expected<std::vector<PodResources>> pods = api->List(10);
  ASSERT_TRUE(pods.ok()) << pods.error().message;
  EXPECT_EQ(*pods, NodePods());

  Expected<Allocatable> allocatable = api->GetAllocatable(10);
  ASSERT_TRUE(allocatable.ok()) << allocatable.error().message;
  EXPECT_EQ(*allocatable, NodeAllocatable());

  // The state is read per request: a pod moves, the next answer says so.
  json state = NodeState();
  state["pods"].erase(0);
  kubelet.SetState(state);
  pods = api->List(10);
  ASSERT_TRUE(pods.ok()) << pods.error().message;
  ASSERT_EQ(pods->size(), 2u);
  EXPECT_EQ((*pods)[0].name, "infer-7");
}

TEST_F(GrpcClientTest, CopiesRepeatThePods) {
  json state = NodeState();
  state["copies"] = 3;
  auto api = Serve(state);
  Expected<std::vector<PodResources>> pods = api->List(10);
  ASSERT_TRUE(pods.ok()) << pods.error().message;
  std::vector<PodResources> want;
  for (int i = 0; i < 3; ++i)
    for (const PodResources& pod : NodePods()) want.push_back(pod);
  EXPECT_EQ(*pods, want);
  state["copies"] = 0;
  kubelet.SetState(state);
  pods = api->List(10);
  ASSERT_FALSE(pods.ok());
  EXPECT_NE(pods.error().message.find("copies must be 1 to 100000"), std::string::npos)
      << pods.error().message;
}

TEST_F(GrpcClientTest, EmptyNode) {
  auto api = Serve(json::object());
  Expected<std::vector<PodResources>> pods = api->List(10);
  ASSERT_TRUE(pods.ok()) << pods.error().message;
  EXPECT_TRUE(pods->empty());
  Expected<Allocatable> allocatable = api->GetAllocatable(10);
  ASSERT_TRUE(allocatable.ok()) << allocatable.error().message;
  EXPECT_TRUE(allocatable->devices.empty());
}

TEST_F(GrpcClientTest, MissingSocketIsUnavailableBeforeTheDeadline) {
  gw::testing::TempDir dir;
  const std::string socket = dir / "kubelet.sock";
  auto api = MakeGrpcPodResourcesApi(socket);
  const auto start = std::chrono::steady_clock::now();
  Expected<std::vector<PodResources>> pods = api->List(30);
  const double took = SecondsSince(start);
  ASSERT_FALSE(pods.ok());
  const std::string& message = pods.error().message;
  EXPECT_NE(message.find("pod-resources unix://" + socket + ": List: UNAVAILABLE"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("no socket at " + socket), std::string::npos) << message;
  // UNAVAILABLE, not DEADLINE_EXCEEDED: the call did not wait for its 30 s.
  EXPECT_LT(took, 30.0);
  std::printf("missing socket: failed in %.3f s\n", took);

  Expected<Allocatable> allocatable = api->GetAllocatable(30);
  ASSERT_FALSE(allocatable.ok());
  EXPECT_NE(allocatable.error().message.find("GetAllocatableResources: UNAVAILABLE"),
            std::string::npos)
      << allocatable.error().message;
}

TEST_F(GrpcClientTest, SlowAnswerHitsTheDeadline) {
  json state = NodeState();
  state["delay_ms"] = 20000;
  auto api = Serve(state);
  const auto start = std::chrono::steady_clock::now();
  Expected<std::vector<PodResources>> pods = api->List(0.5);
  const double took = SecondsSince(start);
  ASSERT_FALSE(pods.ok());
  EXPECT_NE(pods.error().message.find("List: DEADLINE_EXCEEDED"), std::string::npos)
      << pods.error().message;
  EXPECT_NE(pods.error().message.find("no answer within 500ms"), std::string::npos)
      << pods.error().message;
  // It gave up at its deadline, not when the kubelet answered 20 s later.
  EXPECT_GE(took, 0.5);
  EXPECT_LT(took, 20.0);
  std::printf("slow kubelet: deadline 0.5 s, gave up after %.3f s\n", took);

  // The same client answers once the kubelet is quick again.
  kubelet.SetState(NodeState());
  pods = api->List(10);
  ASSERT_TRUE(pods.ok()) << pods.error().message;
  EXPECT_EQ(*pods, NodePods());
}

TEST_F(GrpcClientTest, KubeletRestartOnTheSamePath) {
  auto api = Serve(NodeState());
  ASSERT_TRUE(api->List(10).ok());

  // Stopped: the socket goes away and calls fail, without waiting for the deadline.
  EXPECT_EQ(kubelet.Stop(), 0);
  struct stat st;
  EXPECT_NE(stat(kubelet.socket().c_str(), &st), 0) << "socket left behind";
  Expected<std::vector<PodResources>> pods = api->List(30);
  ASSERT_FALSE(pods.ok());
  EXPECT_NE(pods.error().message.find("UNAVAILABLE"), std::string::npos) << pods.error().message;

  // A new kubelet on the same path, with other pods: the same client object finds it.
  json state = NodeState();
  state["pods"].erase(1);
  kubelet.SetState(state);
  ASSERT_TRUE(kubelet.Start()) << kubelet.Output();
  ASSERT_TRUE(gw::testing::WaitFor([&] { return api->List(5).ok(); }, 30));
  pods = api->List(10);
  ASSERT_TRUE(pods.ok()) << pods.error().message;
  ASSERT_EQ(pods->size(), 2u);
  EXPECT_EQ((*pods)[1].name, "coredns-abc");

  // Killed (a crash: the socket file stays, nobody listens), then restarted.
  kubelet.Kill();
  EXPECT_EQ(stat(kubelet.socket().c_str(), &st), 0);
  pods = api->List(30);
  ASSERT_FALSE(pods.ok());
  EXPECT_NE(pods.error().message.find("UNAVAILABLE"), std::string::npos) << pods.error().message;
  kubelet.SetState(NodeState());
  ASSERT_TRUE(kubelet.Start()) << kubelet.Output();
  ASSERT_TRUE(gw::testing::WaitFor([&] { return api->List(5).ok(); }, 30));
  pods = api->List(10);
  ASSERT_TRUE(pods.ok()) << pods.error().message;
  EXPECT_EQ(*pods, NodePods());
}

TEST_F(GrpcClientTest, FailureTextIsCarried) {
  json state = NodeState();
  state["fail"] = "podresources: kubelet is restarting";
  auto api = Serve(state);
  Expected<std::vector<PodResources>> pods = api->List(10);
  ASSERT_FALSE(pods.ok());
  EXPECT_EQ(pods.error().message, "pod-resources unix://" + kubelet.socket() +
                                      ": List: UNAVAILABLE: podresources: kubelet is restarting");
  Expected<Allocatable> allocatable = api->GetAllocatable(10);
  ASSERT_FALSE(allocatable.ok());
  EXPECT_NE(allocatable.error().message.find(
                "GetAllocatableResources: UNAVAILABLE: podresources: kubelet is restarting"),
            std::string::npos)
      << allocatable.error().message;
}

TEST_F(GrpcClientTest, UnreadableStateIsUnavailable) {
  auto api = Serve(json::object());
  gw::testing::WriteFile(kubelet.state_path(), "{\"pods\": [");
  Expected<std::vector<PodResources>> pods = api->List(10);
  ASSERT_FALSE(pods.ok());
  EXPECT_NE(pods.error().message.find("List: UNAVAILABLE: state file"), std::string::npos)
      << pods.error().message;
  std::remove(kubelet.state_path().c_str());
  pods = api->List(10);
  ASSERT_FALSE(pods.ok());
  EXPECT_NE(pods.error().message.find("cannot be read"), std::string::npos) << pods.error().message;
}

TEST_F(GrpcClientTest, AllocatableUnimplemented) {
  json state = NodeState();
  state["allocatable_unimplemented"] = true;
  auto api = Serve(state);
  Expected<Allocatable> allocatable = api->GetAllocatable(10);
  ASSERT_FALSE(allocatable.ok());
  EXPECT_NE(allocatable.error().message.find("GetAllocatableResources: UNIMPLEMENTED"),
            std::string::npos)
      << allocatable.error().message;
  EXPECT_NE(allocatable.error().message.find("does not serve the call"), std::string::npos)
      << allocatable.error().message;
  Expected<std::vector<PodResources>> pods = api->List(10);
  ASSERT_TRUE(pods.ok()) << pods.error().message;
  EXPECT_EQ(*pods, NodePods());

  // A 1.21-1.22 kubelet with the feature gate off says so with a plain error.
  state.erase("allocatable_unimplemented");
  state["allocatable_disabled"] = true;
  kubelet.SetState(state);
  allocatable = api->GetAllocatable(10);
  ASSERT_FALSE(allocatable.ok());
  EXPECT_NE(allocatable.error().message.find(
                "GetAllocatableResources: UNKNOWN: Pod Resources API GetAllocatableResources "
                "disabled (the kubelet's feature gate KubeletPodResourcesGetAllocatable is off)"),
            std::string::npos)
      << allocatable.error().message;
}

TEST_F(GrpcClientTest, AnswerOverTheLimitIsRefused) {
  // A pod with a 64 KiB device id, listed 1025 times: an answer just over 64 MiB.
  auto api = Serve(
      {{"pods",
        {{{"namespace", "ml"},
          {"name", "huge"},
          {"containers",
           {{{"name", "main"},
             {"devices",
              {{{"resource", "nvidia.com/gpu"}, {"ids", {std::string(64 << 10, 'x')}}}}}}}}}}},
       {"copies", 1025}});
  Expected<std::vector<PodResources>> pods = api->List(60);
  ASSERT_FALSE(pods.ok());
  EXPECT_NE(pods.error().message.find("List: RESOURCE_EXHAUSTED"), std::string::npos)
      << pods.error().message;
  EXPECT_NE(pods.error().message.find("limited to 64 MiB"), std::string::npos)
      << pods.error().message;

  // The channel survives a refused answer.
  kubelet.SetState(NodeState());
  pods = api->List(10);
  ASSERT_TRUE(pods.ok()) << pods.error().message;
  EXPECT_EQ(*pods, NodePods());
}

// The cost of one List at the benchmark's node size (110 pods x 8 GPUs), through the stand-in
// kubelet and on its own; printed, not asserted (docs/kubernetes.md quotes the answer's size).
TEST_F(GrpcClientTest, ListAt110PodsTimesEightGpus) {
  json pods = json::array();
  std::vector<PodResources> want;
  for (int p = 0; p < 110; ++p) {
    json ids = json::array();
    DeviceGroup group{.resource_name = "nvidia.com/gpu", .device_ids = {}, .numa_nodes = {p % 2}};
    for (int g = 0; g < 8; ++g) {
      char id[64];
      std::snprintf(id, sizeof id, "GPU-5d3f3c1e-2a4b-4c8d-9e0f-%012d", p * 8 + g);
      ids.push_back(id);
      group.device_ids.push_back(id);
    }
    const std::string name = "train-" + std::to_string(p) + "-worker-0";
    pods.push_back(
        {{"namespace", "ml-research"},
         {"name", name},
         {"containers",
          {{{"name", "main"},
            {"devices", {{{"resource", "nvidia.com/gpu"}, {"ids", ids}, {"numa", {p % 2}}}}}}}}});
    want.push_back({.name = name, .ns = "ml-research", .containers = {{"main", {group}}}});
  }
  auto api = Serve({{"pods", pods}});
  ASSERT_TRUE(api->List(10).ok());  // connected
  const int kCalls = 20;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kCalls; ++i) {
    Expected<std::vector<PodResources>> answer = api->List(10);
    ASSERT_TRUE(answer.ok()) << answer.error().message;
    ASSERT_EQ(*answer, want);
  }
  const double per_call_ms = SecondsSince(start) * 1000 / kCalls;

  const std::string bytes = EncodeListResponse(want);
  const auto decode_start = std::chrono::steady_clock::now();
  for (int i = 0; i < kCalls; ++i) ASSERT_TRUE(DecodeListResponse(bytes).ok());
  const double decode_ms = SecondsSince(decode_start) * 1000 / kCalls;
  std::printf(
      "List at 110 pods x 8 GPUs: answer %zu bytes; %.2f ms per call through "
      "gw-fake-kubelet (it re-reads its state file each time); decoding alone %.3f ms\n",
      bytes.size(), per_call_ms, decode_ms);
}

// --- Decode/Encode without a kubelet -------------------------------------------------------------

TEST(GrpcCodecTest, RoundTrips) {
  const std::vector<PodResources> pods = NodePods();
  Expected<std::vector<PodResources>> decoded = DecodeListResponse(EncodeListResponse(pods));
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  EXPECT_EQ(*decoded, pods);

  Expected<Allocatable> allocatable =
      DecodeAllocatableResponse(EncodeAllocatableResponse(NodeAllocatable()));
  ASSERT_TRUE(allocatable.ok()) << allocatable.error().message;
  EXPECT_EQ(*allocatable, NodeAllocatable());

  // Nothing encodes as no bytes, and no bytes is a valid, empty answer.
  EXPECT_EQ(EncodeListResponse({}), "");
  decoded = DecodeListResponse("");
  ASSERT_TRUE(decoded.ok());
  EXPECT_TRUE(decoded->empty());
  allocatable = DecodeAllocatableResponse("");
  ASSERT_TRUE(allocatable.ok());
  EXPECT_TRUE(allocatable->devices.empty());

  // Repeated pods (a misbehaving kubelet) are kept as they come: the pod table merges them.
  std::vector<PodResources> twice = pods;
  twice.insert(twice.end(), pods.begin(), pods.end());
  decoded = DecodeListResponse(EncodeListResponse(twice));
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(*decoded, twice);
}

// Protobuf wire format by hand, for what our Encode never writes: the fields a kubelet adds.
std::string Varint(std::uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
  return out;
}
std::string Bytes(int field, const std::string& payload) {
  return Varint(static_cast<std::uint64_t>(field) << 3 | 2) + Varint(payload.size()) + payload;
}
std::string Number(int field, std::uint64_t v) {
  return Varint(static_cast<std::uint64_t>(field) << 3) + Varint(v);
}

TEST(GrpcCodecTest, FieldsOfANewerKubeletAreIgnored) {
  // ContainerDevices{resource_name, device_ids, topology{nodes{ID 1}}}
  const std::string devices =
      Bytes(1, "nvidia.com/gpu") + Bytes(2, kGpu0) + Bytes(3, Bytes(1, Number(1, 1)));
  // A DynamicResource with one claim and a CDI device.
  const std::string claim =
      Bytes(2, "gpu-claim") + Bytes(3, "ml") +
      Bytes(4, Bytes(1, Bytes(1, "nvidia.com/gpu=0")) + Bytes(2, "gpu.nvidia.com") +
                   Bytes(3, "node-a") + Bytes(4, "gpu-0") + Bytes(5, "share-1"));
  // ContainerMemory{memory_type, size, topology}
  const std::string memory = Bytes(1, "memory") + Number(2, 1u << 30) + Bytes(3, "");
  const std::string container =
      Bytes(1, "main") + Bytes(2, devices) + Bytes(3, Varint(2) + Varint(3)) +  // cpu_ids, packed
      Bytes(4, memory) + Bytes(5, claim) + Number(42, 7);  // a field nobody has defined yet
  // A pod with pod-level cpu_ids (field 4) and memory (field 5), added after 1.36.
  const std::string pod = Bytes(1, "train-0") + Bytes(2, "ml") + Bytes(3, container) +
                          Bytes(4, Varint(2) + Varint(3)) + Bytes(5, memory);
  Expected<std::vector<PodResources>> decoded = DecodeListResponse(Bytes(1, pod));
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  const std::vector<PodResources> want = {
      {.name = "train-0",
       .ns = "ml",
       .containers = {
           {.name = "main",
            .devices = {
                {.resource_name = "nvidia.com/gpu", .device_ids = {kGpu0}, .numa_nodes = {1}}}}}}};
  EXPECT_EQ(*decoded, want);

  // AllocatableResourcesResponse{devices, cpu_ids, memory}
  Expected<Allocatable> allocatable = DecodeAllocatableResponse(
      Bytes(1, devices) + Bytes(2, Varint(0) + Varint(1)) + Bytes(3, memory));
  ASSERT_TRUE(allocatable.ok()) << allocatable.error().message;
  ASSERT_EQ(allocatable->devices.size(), 1u);
  EXPECT_EQ(allocatable->devices[0].device_ids, std::vector<std::string>{kGpu0});
}

TEST(GrpcCodecTest, GarbageIsAnError) {
  for (const std::string& bytes : {
           std::string("\xff\xff\xff\xff", 4),              // a tag that never ends
           std::string("\x0a\x05\x0a\x01", 4),              // a length past the end
           std::string("\x0a\x80\x80\x80\x80\x10", 6),      // a length of 4 GiB
           std::string("\x0b", 1),                          // a start-group tag
           Bytes(1, Bytes(1, std::string("\xc3\x28", 2))),  // a name that is not UTF-8
       }) {
    Expected<std::vector<PodResources>> pods = DecodeListResponse(bytes);
    ASSERT_FALSE(pods.ok()) << ::testing::PrintToString(bytes);
    EXPECT_NE(pods.error().message.find("not a valid ListPodResourcesResponse"), std::string::npos)
        << pods.error().message;
    Expected<Allocatable> allocatable = DecodeAllocatableResponse(bytes);
    ASSERT_FALSE(allocatable.ok());
    EXPECT_NE(allocatable.error().message.find("not a valid AllocatableResourcesResponse"),
              std::string::npos)
        << allocatable.error().message;
  }

  // Protobuf's own reason is in the error (not on stderr).
  Expected<std::vector<PodResources>> not_utf8 =
      DecodeListResponse(Bytes(1, Bytes(2, std::string("ml\xff", 3))));
  ASSERT_FALSE(not_utf8.ok());
  EXPECT_NE(not_utf8.error().message.find("'v1.PodResources.namespace' contains invalid UTF-8"),
            std::string::npos)
      << not_utf8.error().message;

  // Bytes over the answer limit are refused before parsing.
  const std::string huge(static_cast<std::size_t>(kMaxAnswerBytes) + 1, '\0');
  Expected<std::vector<PodResources>> pods = DecodeListResponse(huge);
  ASSERT_FALSE(pods.ok());
  EXPECT_NE(pods.error().message.find("over the limit"), std::string::npos) << pods.error().message;
}

TEST(GrpcCodecTest, MutatedAnswersNeverCrash) {
  const std::string list = EncodeListResponse(NodePods());
  const std::string allocatable = EncodeAllocatableResponse(NodeAllocatable());
  gw::testing::Mutator mutator(13);
  int valid = 0, invalid = 0;
  for (int i = 0; i < 5000; ++i) {
    const std::string mutant = mutator.Mutate(i % 2 ? list : allocatable);
    Expected<std::vector<PodResources>> pods = DecodeListResponse(mutant);
    Expected<Allocatable> devices = DecodeAllocatableResponse(mutant);
    for (bool ok : {pods.ok(), devices.ok()}) ok ? ++valid : ++invalid;
    if (!pods.ok()) {
      EXPECT_FALSE(pods.error().message.empty());
    }
    if (!devices.ok()) {
      EXPECT_FALSE(devices.error().message.empty());
    }
  }
  // Both kinds happen: the mutations reach the decoder's error paths and its success paths.
  EXPECT_GT(valid, 0);
  EXPECT_GT(invalid, 0);
}

}  // namespace
}  // namespace gw::k8s
