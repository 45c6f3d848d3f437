// Writes the seeds of the `pod_resources` fuzz target (usage: fuzz_pod_resources_seeds DIR;
// tests/fuzz/make_seeds.py runs it): List answers encoded by the client's own EncodeListResponse,
// so each seed is what a kubelet sends — an empty node, whole GPUs and MIG devices, a busy node,
// and the odd answers the pod table must survive (duplicate pods, unknown and empty ids, empty
// names, more pods than the fuzz target's limit).
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "k8s/grpc_client.h"

namespace {

using gw::k8s::ContainerResources;
using gw::k8s::DeviceGroup;
using gw::k8s::PodResources;

std::string Uuid(const char* prefix, int n) {
  char text[64];
  std::snprintf(text, sizeof text, "%s-%08x-1111-2222-3333-%012x", prefix, 0x5d3f3c1e + n, n);
  return text;
}

PodResources Pod(std::string ns, std::string name, std::vector<ContainerResources> containers) {
  return {.name = std::move(name), .ns = std::move(ns), .containers = std::move(containers)};
}

ContainerResources Container(std::string name, std::string resource, std::vector<std::string> ids,
                             std::vector<std::int64_t> numa = {}) {
  return {.name = std::move(name),
          .devices = {{.resource_name = std::move(resource),
                       .device_ids = std::move(ids),
                       .numa_nodes = std::move(numa)}}};
}

std::vector<std::vector<PodResources>> Answers() {
  std::vector<std::vector<PodResources>> answers;
  answers.push_back({});  // no pods
  answers.push_back(
      {Pod("ml", "train-0", {Container("main", "nvidia.com/gpu", {Uuid("GPU", 0)})})});
  // A busy 8-GPU node: whole GPUs, MIG devices (mixed strategy), sidecars, a pod without GPUs.
  answers.push_back({
      Pod("ml-research", "train-0",
          {Container("main", "nvidia.com/gpu",
                     {Uuid("GPU", 0), Uuid("GPU", 1), Uuid("GPU", 2), Uuid("GPU", 3)}, {0}),
           {.name = "sidecar"}}),
      Pod("vision-a", "infer-7",
          {Container("server", "nvidia.com/mig-1g.10gb", {Uuid("MIG", 40)}, {1}),
           Container("worker", "nvidia.com/mig-3g.40gb", {Uuid("MIG", 41)}, {1})}),
      Pod("ml-research", "eval-3", {Container("main", "nvidia.com/gpu", {Uuid("GPU", 5)}, {1})}),
      Pod("kube-system", "coredns-5d78c9869d-abcde", {{.name = "coredns"}}),
      Pod("default", "nic-user", {Container("main", "example.com/nic", {"nic-3"})}),
  });
  // Duplicates: the same pod twice with other devices, and the same device in two pods.
  answers.push_back({
      Pod("ml", "dup", {Container("a", "nvidia.com/gpu", {Uuid("GPU", 0)})}),
      Pod("ml", "dup", {Container("a", "nvidia.com/gpu", {Uuid("GPU", 1)})}),
      Pod("ml", "other", {Container("b", "nvidia.com/gpu", {Uuid("GPU", 0), Uuid("GPU", 0)})}),
  });
  // Ids that match no GPU of a node: indices, time-slicing replicas, old MIG ids, empty ones.
  answers.push_back({
      Pod("ml", "by-index", {Container("main", "nvidia.com/gpu", {"0", "1", "0:1"})}),
      Pod("ml", "replica", {Container("main", "nvidia.com/gpu", {Uuid("GPU", 2) + "::3"})}),
      Pod("ml", "old-mig",
          {Container("main", "nvidia.com/mig-1g.5gb", {"MIG-" + Uuid("GPU", 3) + "/7/0"})}),
      Pod("ml", "empty-id", {Container("main", "nvidia.com/gpu", {"", ""})}),
      Pod("", "", {Container("", "nvidia.com/gpu", {Uuid("GPU", 4)})}),
      Pod("ml", "no-resource", {Container("main", "", {Uuid("GPU", 6)})}),
  });
  // More pods than the target's max_pods (64), each with one GPU.
  std::vector<PodResources> many;
  for (int i = 0; i < 110; ++i)
    many.push_back(Pod("team-" + std::to_string(i % 7), "pod-" + std::to_string(i),
                       {Container("main", "nvidia.com/gpu", {Uuid("GPU", i)})}));
  answers.push_back(std::move(many));
  return answers;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  int n = 0;
  for (const auto& answer : Answers())
    gw::fuzz::WriteWhole(dir + "/seed-" + std::to_string(++n), gw::k8s::EncodeListResponse(answer));
  // One GetAllocatableResources answer too (the target decodes every input as both).
  gw::k8s::Allocatable allocatable;
  allocatable.devices.push_back({.resource_name = "nvidia.com/gpu",
                                 .device_ids = {Uuid("GPU", 0), Uuid("GPU", 1)},
                                 .numa_nodes = {0}});
  gw::fuzz::WriteWhole(dir + "/seed-" + std::to_string(++n),
                       gw::k8s::EncodeAllocatableResponse(allocatable));
  return 0;
}
