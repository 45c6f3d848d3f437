// k8s/grpc_module_entry.cpp — the C entry points of libgpuwarden-k8s.so (k8s/grpc_module.h says
// how the agent finds and loads it). Only these two symbols are exported (module_exports.map).
#include "k8s/grpc_client.h"
#include "k8s/grpc_module.h"

extern "C" {

__attribute__((visibility("default"))) int gpuwarden_k8s_module_abi() {
  return gw::k8s::kModuleAbi;
}

__attribute__((visibility("default"))) gw::k8s::PodResourcesApi* gpuwarden_k8s_make_api(
    const char* socket_path) {
  return gw::k8s::MakeGrpcPodResourcesApi(socket_path ? socket_path : "").release();
}

}  // extern "C"
