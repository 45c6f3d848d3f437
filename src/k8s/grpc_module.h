// k8s/grpc_module.h — the gRPC pod-resources client (k8s/grpc_client.h) as a module loaded with
// dlopen, so that an agent without `jobs.scheduler: kubernetes` never maps gRPC, protobuf and
// abseil (about 6 MiB resident: their relocations and static initializers run at load time;
// docs/benchmarks.md, issue 12).
//
//   Expected<std::unique_ptr<PodResourcesApi>> api = LoadPodResourcesApi(socket);
//   if (!api) log(api.error().message);  // names every place it looked
//
// The module is libgpuwarden-k8s.so (target gpuwarden-k8s: api.proto's generated code and
// grpc_client.cpp, linked against Debian's grpc++ and protobuf). It is looked for, in order:
//   1. $GPUWARDEN_K8S_MODULE when set and not empty (a path; nothing else is tried then);
//   2. beside the executable (/proc/self/exe's directory: build/bin in a build tree);
//   3. ../lib/gpuwarden/ relative to the executable's directory (installed: /usr/bin/gpuwarden
//      and /usr/lib/gpuwarden/libgpuwarden-k8s.so).
// It exports two C symbols (kModuleAbiSymbol, kModuleFactorySymbol); a module whose ABI number
// differs from kModuleAbi (another build's) is refused. The module stays loaded for the life of
// the process (the objects it made point into its code).
//
// Threading: LoadPodResourcesApi may be called from any thread; what it returns is used as any
// PodResourcesApi (one thread at a time). Errors: the module missing (every path tried is named),
// not loadable (dlerror's text), without the symbols, of another ABI.
#ifndef GPUWARDEN_K8S_GRPC_MODULE_H_
#define GPUWARDEN_K8S_GRPC_MODULE_H_

#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "k8s/pod_resources.h"

namespace gw::k8s {

inline constexpr const char* kModuleFileName = "libgpuwarden-k8s.so";
inline constexpr const char* kModuleEnvVar = "GPUWARDEN_K8S_MODULE";
// Bumped whenever PodResourcesApi, the structs of k8s/pod_resources.h or the factory change.
inline constexpr int kModuleAbi = 1;
// extern "C" int gpuwarden_k8s_module_abi(void);
inline constexpr const char* kModuleAbiSymbol = "gpuwarden_k8s_module_abi";
// extern "C" gw::k8s::PodResourcesApi* gpuwarden_k8s_make_api(const char* socket_path);
// (ownership passes to the caller; never null).
inline constexpr const char* kModuleFactorySymbol = "gpuwarden_k8s_make_api";

// The paths tried, in order (see above); `exe_path` empty means /proc/self/exe.
std::vector<std::string> PodResourcesModuleCandidates(const std::string& exe_path = "");

// Loads the module (once per path; later calls reuse it) and makes a client for `socket_path`.
Expected<std::unique_ptr<PodResourcesApi>> LoadPodResourcesApi(const std::string& socket_path);

// A PodResourcesApi that cannot reach anything: every call fails with `why` (e.g. the module
// load error), so the poller reports the source down (gpuwarden_kubernetes_up 0) as it does for
// a missing socket.
std::unique_ptr<PodResourcesApi> MakeUnavailablePodResourcesApi(const std::string& socket_path,
                                                                std::string why);

}  // namespace gw::k8s

#endif  // GPUWARDEN_K8S_GRPC_MODULE_H_
