// k8s/grpc_client.cpp — the pod-resources client over gRPC and the conversion between the
// generated wire types (api.proto) and the plain values of k8s/pod_resources.h. The only file of
// src/ that includes the generated headers.
#include "k8s/grpc_client.h"

#include <google/protobuf/stubs/logging.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <utility>

#include "api.grpc.pb.h"
#include "api.pb.h"

namespace gw::k8s {
namespace {

// How long the channel waits between attempts to reach a kubelet that is down. gRPC's default
// grows to two minutes; the kubelet restarts in seconds and the poller asks every few seconds,
// so the channel retries at least once a second and a restart is seen at the next poll.
constexpr int kReconnectBackoffMs = 1000;

// Protobuf reports why a message does not parse (a string that is not UTF-8, say) on stderr, past
// our logger. Its complaints are kept instead, per thread, and put into the decode error; only a
// fatal one still goes to stderr. Installed at load time, before any thread parses (protobuf
// asks for that); nothing else in gpuwarden uses protobuf.
thread_local std::string t_protobuf_complaint;

void KeepProtobufComplaint(google::protobuf::LogLevel level, const char* file, int line,
                           const std::string& message) {
  if (level == google::protobuf::LOGLEVEL_FATAL) {
    std::fprintf(stderr, "protobuf %s:%d: %s\n", file, line, message.c_str());
    return;
  }
  // The first sentence says it ("String field 'v1.PodResources.name' contains invalid UTF-8
  // data when parsing a protocol buffer").
  t_protobuf_complaint = message.substr(0, message.find(". "));
}

[[maybe_unused]] const bool kProtobufComplaintsKept =
    (google::protobuf::SetLogHandler(&KeepProtobufComplaint), true);

std::string StatusCodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "code " + std::to_string(static_cast<int>(code));
  }
}

DeviceGroup FromProto(const v1::ContainerDevices& in) {
  DeviceGroup out;
  out.resource_name = in.resource_name();
  out.device_ids.assign(in.device_ids().begin(), in.device_ids().end());
  out.numa_nodes.reserve(in.topology().nodes_size());
  for (const v1::NUMANode& node : in.topology().nodes()) out.numa_nodes.push_back(node.id());
  return out;
}

void ToProto(const DeviceGroup& in, v1::ContainerDevices* out) {
  out->set_resource_name(in.resource_name);
  for (const std::string& id : in.device_ids) out->add_device_ids(id);
  if (!in.numa_nodes.empty()) {
    v1::TopologyInfo* topology = out->mutable_topology();
    for (std::int64_t node : in.numa_nodes) topology->add_nodes()->set_id(node);
  }
}

std::vector<PodResources> FromProto(const v1::ListPodResourcesResponse& in) {
  std::vector<PodResources> pods;
  pods.reserve(in.pod_resources_size());
  for (const v1::PodResources& pod_in : in.pod_resources()) {
    PodResources& pod = pods.emplace_back();
    pod.name = pod_in.name();
    pod.ns = pod_in.namespace_();
    pod.containers.reserve(pod_in.containers_size());
    for (const v1::ContainerResources& container_in : pod_in.containers()) {
      ContainerResources& container = pod.containers.emplace_back();
      container.name = container_in.name();
      container.devices.reserve(container_in.devices_size());
      for (const v1::ContainerDevices& devices : container_in.devices())
        container.devices.push_back(FromProto(devices));
    }
  }
  return pods;
}

Allocatable FromProto(const v1::AllocatableResourcesResponse& in) {
  Allocatable out;
  out.devices.reserve(in.devices_size());
  for (const v1::ContainerDevices& devices : in.devices())
    out.devices.push_back(FromProto(devices));
  return out;
}

// What a person can do about a failed call, when the status alone does not say.
std::string Hint(const grpc::Status& status, const std::string& socket_path, double timeout_s) {
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      if (access(socket_path.c_str(), F_OK) != 0)
        return " (no socket at " + socket_path + ": kubelet down, or the directory not mounted)";
      if (access(socket_path.c_str(), R_OK | W_OK) != 0 && errno == EACCES)
        return " (no permission to connect to " + socket_path +
               ": needs read and write access, normally root)";
      return "";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return " (no answer within " + FormatDuration(timeout_s) + ")";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return " (answers are limited to " + std::to_string(kMaxAnswerBytes >> 20) + " MiB)";
    case grpc::StatusCode::UNIMPLEMENTED:
      return " (this kubelet does not serve the call)";
    case grpc::StatusCode::UNKNOWN:
      // Kubernetes 1.21-1.22 with the gate off answer a plain error, not UNIMPLEMENTED.
      if (status.error_message().find("GetAllocatableResources disabled") != std::string::npos)
        return " (the kubelet's feature gate KubeletPodResourcesGetAllocatable is off)";
      return "";
    default:
      return "";
  }
}

class GrpcPodResourcesApi : public PodResourcesApi {
 public:
  explicit GrpcPodResourcesApi(std::string socket_path)
      : socket_path_(std::move(socket_path)),
        endpoint_(socket_path_.starts_with("/") ? "unix://" + socket_path_
                                                : "unix:" + socket_path_) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(kMaxAnswerBytes);
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, kReconnectBackoffMs);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, kReconnectBackoffMs);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, kReconnectBackoffMs);
    // The connection is local; nothing to proxy.
    args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
    channel_ = grpc::CreateCustomChannel(endpoint_, grpc::InsecureChannelCredentials(), args);
    stub_ = v1::PodResourcesLister::NewStub(channel_);
  }

  std::string Endpoint() const override { return endpoint_; }

  Expected<std::vector<PodResources>> List(double timeout_s) override {
    grpc::ClientContext context;
    SetDeadline(&context, timeout_s);
    v1::ListPodResourcesResponse answer;
    grpc::Status status = stub_->List(&context, v1::ListPodResourcesRequest(), &answer);
    if (!status.ok()) return CallError("List", status, timeout_s);
    return FromProto(answer);
  }

  Expected<Allocatable> GetAllocatable(double timeout_s) override {
    grpc::ClientContext context;
    SetDeadline(&context, timeout_s);
    v1::AllocatableResourcesResponse answer;
    grpc::Status status =
        stub_->GetAllocatableResources(&context, v1::AllocatableResourcesRequest(), &answer);
    if (!status.ok()) return CallError("GetAllocatableResources", status, timeout_s);
    return FromProto(answer);
  }

 private:
  static void SetDeadline(grpc::ClientContext* context, double timeout_s) {
    // NaN, negative or absurd timeouts become "now" or a day: a deadline always exists.
    double seconds = std::isfinite(timeout_s) ? timeout_s : 0;
    if (seconds < 0) seconds = 0;
    if (seconds > 86400) seconds = 86400;
    context->set_deadline(std::chrono::system_clock::now() +
                          std::chrono::microseconds(static_cast<std::int64_t>(seconds * 1e6)));
  }

  Error CallError(const char* call, const grpc::Status& status, double timeout_s) const {
    std::string message =
        "pod-resources " + endpoint_ + ": " + call + ": " + StatusCodeName(status.error_code());
    if (!status.error_message().empty()) message += ": " + status.error_message();
    message += Hint(status, socket_path_, timeout_s);
    return Error{std::move(message)};
  }

  std::string socket_path_;
  std::string endpoint_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::PodResourcesLister::Stub> stub_;
};

template <class Message>
Expected<Message> Parse(std::string_view bytes, const char* what) {
  if (bytes.size() > static_cast<std::size_t>(kMaxAnswerBytes))
    return Error{std::string("pod-resources ") + what + ": " + std::to_string(bytes.size()) +
                 " bytes, over the limit of " + std::to_string(kMaxAnswerBytes) + " bytes"};
  Message message;
  t_protobuf_complaint.clear();
  if (!message.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    std::string error = std::string("pod-resources ") + what + ": not a valid " +
                        Message::descriptor()->name() + " (" + std::to_string(bytes.size()) +
                        " bytes)";
    if (!t_protobuf_complaint.empty()) error += ": " + t_protobuf_complaint;
    return Error{std::move(error)};
  }
  return message;
}

}  // namespace

std::unique_ptr<PodResourcesApi> MakeGrpcPodResourcesApi(const std::string& socket_path) {
  return std::make_unique<GrpcPodResourcesApi>(socket_path);
}

Expected<std::vector<PodResources>> DecodeListResponse(std::string_view bytes) {
  Expected<v1::ListPodResourcesResponse> message =
      Parse<v1::ListPodResourcesResponse>(bytes, "List answer");
  if (!message) return message.error();
  return FromProto(*message);
}

Expected<Allocatable> DecodeAllocatableResponse(std::string_view bytes) {
  Expected<v1::AllocatableResourcesResponse> message =
      Parse<v1::AllocatableResourcesResponse>(bytes, "GetAllocatableResources answer");
  if (!message) return message.error();
  return FromProto(*message);
}

std::string EncodeListResponse(const std::vector<PodResources>& pods) {
  v1::ListPodResourcesResponse message;
  for (const PodResources& pod : pods) {
    v1::PodResources* pod_out = message.add_pod_resources();
    pod_out->set_name(pod.name);
    pod_out->set_namespace_(pod.ns);
    for (const ContainerResources& container : pod.containers) {
      v1::ContainerResources* container_out = pod_out->add_containers();
      container_out->set_name(container.name);
      for (const DeviceGroup& group : container.devices)
        ToProto(group, container_out->add_devices());
    }
  }
  return message.SerializeAsString();
}

std::string EncodeAllocatableResponse(const Allocatable& allocatable) {
  v1::AllocatableResourcesResponse message;
  for (const DeviceGroup& group : allocatable.devices) ToProto(group, message.add_devices());
  return message.SerializeAsString();
}

}  // namespace gw::k8s
