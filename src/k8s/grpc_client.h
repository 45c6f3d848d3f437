// k8s/grpc_client.h — PodResourcesApi over gRPC (Debian's libgrpc++ 1.51) on the kubelet's unix
// socket, and the decoding of the protobuf answers (target gw_k8s_grpc; the .proto is
// src/k8s/api.proto, written from the upstream API — which version it matches is said there).
//
//   auto api = MakeGrpcPodResourcesApi("/var/lib/kubelet/pod-resources/kubelet.sock");
//   Expected<std::vector<PodResources>> pods = api->List(5.0);
//
// Each call has a deadline of `timeout_s`; a missing socket or a kubelet that is down fails
// within that time (no retry inside: the poller polls again). Answers larger than
// kMaxAnswerBytes are refused. The channel is created once and reconnects by itself (a kubelet
// restart replaces the socket file).
//
// Threading: one thread at a time. Errors: "pod-resources <endpoint>: List: <gRPC status and
// message>" — DEADLINE_EXCEEDED, UNAVAILABLE (no socket, kubelet down), UNIMPLEMENTED
// (kubelet too old for GetAllocatableResources), a decode failure.
#ifndef GPUWARDEN_K8S_GRPC_CLIENT_H_
#define GPUWARDEN_K8S_GRPC_CLIENT_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "k8s/pod_resources.h"

namespace gw::k8s {

inline constexpr int kMaxAnswerBytes = 64 << 20;

std::unique_ptr<PodResourcesApi> MakeGrpcPodResourcesApi(const std::string& socket_path);

// The serialized answers (wire format) as values; what the client does with each answer, exposed
// for the fuzz target and tests. Errors: not a valid message of that type. Unknown fields are
// ignored (a newer kubelet's additions, e.g. dynamic_resources, are read and dropped).
Expected<std::vector<PodResources>> DecodeListResponse(std::string_view bytes);
Expected<Allocatable> DecodeAllocatableResponse(std::string_view bytes);

// The reverse, for the stand-in kubelet and tests.
std::string EncodeListResponse(const std::vector<PodResources>& pods);
std::string EncodeAllocatableResponse(const Allocatable& allocatable);

}  // namespace gw::k8s

#endif  // GPUWARDEN_K8S_GRPC_CLIENT_H_
