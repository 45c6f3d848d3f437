// src/k8s/api.proto against the whole upstream surface: every service method, message and field
// (name, number, type, repeated/optional) of k8s.io/kubelet pkg/apis/podresources/v1/api.proto as
// of kubelet v0.36.3 (Kubernetes 1.36.3), written down here from that file, compared with the
// descriptors protoc generated from ours — so a message or field left out, renumbered or retyped
// fails, whether or not the client reads it. Nothing more is allowed either: our file must be
// that API, not a superset.
#include <google/protobuf/descriptor.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace {

using google::protobuf::Descriptor;
using google::protobuf::DescriptorPool;
using google::protobuf::FieldDescriptor;
using google::protobuf::FileDescriptor;

struct UpstreamField {
  const char* message;
  const char* name;
  int number;
  const char* type;   // scalar type name, or the message type's name
  const char* label;  // "repeated", "optional" (proto3 explicit presence) or ""
};

// kubelet v0.36.3, pkg/apis/podresources/v1/api.proto.
const UpstreamField kUpstream[] = {
    {"AllocatableResourcesResponse", "devices", 1, "ContainerDevices", "repeated"},
    {"AllocatableResourcesResponse", "cpu_ids", 2, "int64", "repeated"},
    {"AllocatableResourcesResponse", "memory", 3, "ContainerMemory", "repeated"},
    {"ListPodResourcesResponse", "pod_resources", 1, "PodResources", "repeated"},
    {"PodResources", "name", 1, "string", ""},
    {"PodResources", "namespace", 2, "string", ""},
    {"PodResources", "containers", 3, "ContainerResources", "repeated"},
    {"ContainerResources", "name", 1, "string", ""},
    {"ContainerResources", "devices", 2, "ContainerDevices", "repeated"},
    {"ContainerResources", "cpu_ids", 3, "int64", "repeated"},
    {"ContainerResources", "memory", 4, "ContainerMemory", "repeated"},
    {"ContainerResources", "dynamic_resources", 5, "DynamicResource", "repeated"},
    {"ContainerMemory", "memory_type", 1, "string", ""},
    {"ContainerMemory", "size", 2, "uint64", ""},
    {"ContainerMemory", "topology", 3, "TopologyInfo", ""},
    {"ContainerDevices", "resource_name", 1, "string", ""},
    {"ContainerDevices", "device_ids", 2, "string", "repeated"},
    {"ContainerDevices", "topology", 3, "TopologyInfo", ""},
    {"TopologyInfo", "nodes", 1, "NUMANode", "repeated"},
    {"NUMANode", "ID", 1, "int64", ""},
    {"DynamicResource", "claim_name", 2, "string", ""},
    {"DynamicResource", "claim_namespace", 3, "string", ""},
    {"DynamicResource", "claim_resources", 4, "ClaimResource", "repeated"},
    {"ClaimResource", "cdi_devices", 1, "CDIDevice", "repeated"},
    {"ClaimResource", "driver_name", 2, "string", ""},
    {"ClaimResource", "pool_name", 3, "string", ""},
    {"ClaimResource", "device_name", 4, "string", ""},
    {"ClaimResource", "share_id", 5, "string", "optional"},
    {"CDIDevice", "name", 1, "string", ""},
    {"GetPodResourcesRequest", "pod_name", 1, "string", ""},
    {"GetPodResourcesRequest", "pod_namespace", 2, "string", ""},
    {"GetPodResourcesResponse", "pod_resources", 1, "PodResources", ""},
};
// Messages without fields.
const char* kUpstreamEmpty[] = {"AllocatableResourcesRequest", "ListPodResourcesRequest"};
// service PodResourcesLister: method -> (request, response).
const std::map<std::string, std::pair<std::string, std::string>> kUpstreamMethods = {
    {"List", {"ListPodResourcesRequest", "ListPodResourcesResponse"}},
    {"GetAllocatableResources", {"AllocatableResourcesRequest", "AllocatableResourcesResponse"}},
    {"Get", {"GetPodResourcesRequest", "GetPodResourcesResponse"}},
};

const FileDescriptor* OurFile() {
  return DescriptorPool::generated_pool()->FindFileByName("api.proto");
}

std::string TypeOf(const FieldDescriptor* f) {
  return f->type() == FieldDescriptor::TYPE_MESSAGE ? f->message_type()->name() : f->type_name();
}

std::string LabelOf(const FieldDescriptor* f) {
  if (f->is_repeated()) return "repeated";
  if (f->has_optional_keyword()) return "optional";
  return "";
}

TEST(PodResourcesProto, PackageAndServiceAreUpstreams) {
  const FileDescriptor* file = OurFile();
  ASSERT_NE(file, nullptr) << "api.proto is not linked into this test";
  EXPECT_EQ(file->package(), "v1");
  EXPECT_EQ(file->syntax(), FileDescriptor::SYNTAX_PROTO3);
  ASSERT_EQ(file->service_count(), 1);
  const auto* service = file->service(0);
  EXPECT_EQ(service->name(), "PodResourcesLister");
  EXPECT_EQ(static_cast<std::size_t>(service->method_count()), kUpstreamMethods.size());
  for (int i = 0; i < service->method_count(); ++i) {
    const auto* m = service->method(i);
    auto it = kUpstreamMethods.find(m->name());
    ASSERT_NE(it, kUpstreamMethods.end()) << "method not in upstream: " << m->name();
    EXPECT_EQ(m->input_type()->name(), it->second.first) << m->name();
    EXPECT_EQ(m->output_type()->name(), it->second.second) << m->name();
    EXPECT_FALSE(m->client_streaming() || m->server_streaming()) << m->name();
  }
}

TEST(PodResourcesProto, EveryUpstreamMessageAndFieldAndNothingElse) {
  const FileDescriptor* file = OurFile();
  ASSERT_NE(file, nullptr);
  std::map<std::string, std::set<std::string>> want;  // message -> field names
  for (const char* m : kUpstreamEmpty) want[m];
  for (const UpstreamField& u : kUpstream) {
    want[u.message].insert(u.name);
    const Descriptor* d = file->FindMessageTypeByName(u.message);
    ASSERT_NE(d, nullptr) << "message missing: " << u.message;
    const FieldDescriptor* f = d->FindFieldByName(u.name);
    ASSERT_NE(f, nullptr) << "field missing: " << u.message << "." << u.name;
    EXPECT_EQ(f->number(), u.number) << u.message << "." << u.name;
    EXPECT_EQ(TypeOf(f), u.type) << u.message << "." << u.name;
    EXPECT_EQ(LabelOf(f), u.label) << u.message << "." << u.name;
  }
  EXPECT_EQ(static_cast<std::size_t>(file->message_type_count()), want.size());
  for (int i = 0; i < file->message_type_count(); ++i) {
    const Descriptor* d = file->message_type(i);
    auto it = want.find(d->name());
    ASSERT_NE(it, want.end()) << "message not in upstream: " << d->name();
    EXPECT_EQ(static_cast<std::size_t>(d->field_count()), it->second.size()) << d->name();
    EXPECT_EQ(d->nested_type_count(), 0) << d->name();
  }
}

}  // namespace
