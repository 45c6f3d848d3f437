// k8s/pod_resources.h — the kubelet's pod-resources API (k8s.io/kubelet/pkg/apis/podresources/v1)
// as plain values, and the interface the poller reads it through.
//
//   std::unique_ptr<PodResourcesApi> api = MakeGrpcPodResourcesApi(
//       "/var/lib/kubelet/pod-resources/kubelet.sock");            // k8s/grpc_client.h
//   Expected<std::vector<PodResources>> pods = api->List(5.0);     // blocks up to 5 s
//
// The kubelet serves it over a unix socket, gRPC, read-only: `List` names, for every pod admitted
// on the node, which devices (by the device plugin's ids) each of its containers was given;
// `GetAllocatableResources` lists the devices the node offers. The NVIDIA device plugin names
// whole GPUs by UUID ("GPU-…", resource nvidia.com/gpu) and, with the mixed MIG strategy, MIG
// devices by MIG UUID ("MIG-…", resource nvidia.com/mig-<profile>); some setups use indices.
// docs/kubernetes.md has the facts the code relies on.
//
// The wire types (generated from src/k8s/api.proto) stay inside the gw_k8s_grpc target; every
// other module sees these structs.
//
// Threading: a PodResourcesApi is used by one thread at a time (the poller's). Errors: the socket
// missing, the kubelet not answering within the timeout, a malformed answer — an Error whose
// message says which (and the socket path).
#ifndef GPUWARDEN_K8S_POD_RESOURCES_H_
#define GPUWARDEN_K8S_POD_RESOURCES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace gw::k8s {

// ContainerDevices: devices of one resource given to a container (or offered by the node).
struct DeviceGroup {
  std::string resource_name;             // "nvidia.com/gpu"
  std::vector<std::string> device_ids;   // the device plugin's ids
  std::vector<std::int64_t> numa_nodes;  // TopologyInfo.nodes[].ID
  bool operator==(const DeviceGroup&) const = default;
};

struct ContainerResources {
  std::string name;
  std::vector<DeviceGroup> devices;
  bool operator==(const ContainerResources&) const = default;
};

struct PodResources {
  std::string name;
  std::string ns;  // namespace
  std::vector<ContainerResources> containers;
  bool operator==(const PodResources&) const = default;
};

struct Allocatable {
  std::vector<DeviceGroup> devices;
  bool operator==(const Allocatable&) const = default;
};

// The physical device a device plugin id names: the NVIDIA device plugin with time-slicing or MPS
// sharing hands out one id per replica, "<uuid>::<replica>" (docs/kubernetes.md); that is the
// GPU "<uuid>". Any other id is returned as it is.
inline std::string_view DeviceBaseId(std::string_view id) {
  const std::size_t sep = id.find("::");
  return sep == std::string_view::npos || sep == 0 ? id : id.substr(0, sep);
}

class PodResourcesApi {
 public:
  virtual ~PodResourcesApi() = default;
  // Where it reads from, for log lines and metrics ("unix:///var/lib/kubelet/...").
  virtual std::string Endpoint() const = 0;
  // PodResourcesLister.List within `timeout_s`.
  virtual Expected<std::vector<PodResources>> List(double timeout_s) = 0;
  // PodResourcesLister.GetAllocatableResources within `timeout_s`.
  virtual Expected<Allocatable> GetAllocatable(double timeout_s) = 0;
};

}  // namespace gw::k8s

#endif  // GPUWARDEN_K8S_POD_RESOURCES_H_
