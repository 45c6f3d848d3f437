// k8s/grpc_module.cpp — finding and loading libgpuwarden-k8s.so (k8s/grpc_module.h).
#include "k8s/grpc_module.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <utility>

namespace gw::k8s {
namespace {

namespace fs = std::filesystem;

using AbiFn = int (*)();
using FactoryFn = PodResourcesApi* (*)(const char*);
// The loaded module's factory (a struct: Expected of a bare function pointer trips -Wshadow).
struct Module {
  FactoryFn make = nullptr;
};

std::string EndpointOf(const std::string& socket_path) {
  return socket_path.starts_with("/") ? "unix://" + socket_path : "unix:" + socket_path;
}

class UnavailablePodResourcesApi : public PodResourcesApi {
 public:
  UnavailablePodResourcesApi(const std::string& socket_path, std::string why)
      : endpoint_(EndpointOf(socket_path)), why_(std::move(why)) {}
  std::string Endpoint() const override { return endpoint_; }
  Expected<std::vector<PodResources>> List(double) override { return Error{why_}; }
  Expected<Allocatable> GetAllocatable(double) override { return Error{why_}; }

 private:
  std::string endpoint_;
  std::string why_;
};

// The factory of the module at `path`, loaded once; dlclose is never called (see the header).
Expected<Module> LoadFactory(const std::string& path) {
  static std::mutex mu;
  static std::map<std::string, Module> loaded;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = loaded.find(path); it != loaded.end()) return it->second;
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return Error{std::string("cannot load the Kubernetes module: ") + (why ? why : path)};
  }
  auto abi = reinterpret_cast<AbiFn>(dlsym(handle, kModuleAbiSymbol));
  auto factory = reinterpret_cast<FactoryFn>(dlsym(handle, kModuleFactorySymbol));
  if (abi == nullptr || factory == nullptr) {
    dlclose(handle);
    return Error{path + " is not a gpuwarden Kubernetes module (no " + kModuleAbiSymbol + " / " +
                 kModuleFactorySymbol + ")"};
  }
  if (const int found = abi(); found != kModuleAbi) {
    dlclose(handle);
    return Error{path + " is a Kubernetes module of another gpuwarden build (ABI " +
                 std::to_string(found) + ", this agent needs " + std::to_string(kModuleAbi) +
                 "); install the module that came with this binary"};
  }
  loaded.emplace(path, Module{factory});
  return Module{factory};
}

}  // namespace

std::vector<std::string> PodResourcesModuleCandidates(const std::string& exe_path) {
  const char* env = std::getenv(kModuleEnvVar);
  if (env != nullptr && *env != '\0') return {env};
  std::error_code ec;
  fs::path exe = exe_path.empty() ? fs::read_symlink("/proc/self/exe", ec) : fs::path(exe_path);
  if (ec || exe.empty()) return {};
  const fs::path dir = exe.parent_path();
  return {(dir / kModuleFileName).string(),
          (dir / ".." / "lib" / "gpuwarden" / kModuleFileName).lexically_normal().string()};
}

Expected<std::unique_ptr<PodResourcesApi>> LoadPodResourcesApi(const std::string& socket_path) {
  const std::vector<std::string> candidates = PodResourcesModuleCandidates();
  std::string tried;
  for (const std::string& path : candidates) {
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      tried += (tried.empty() ? "" : ", ") + path;
      continue;
    }
    Expected<Module> module = LoadFactory(path);
    if (!module) return module.error();
    return std::unique_ptr<PodResourcesApi>(module->make(socket_path.c_str()));
  }
  const char* env = std::getenv(kModuleEnvVar);
  const bool from_env = env != nullptr && *env != '\0';
  return Error{std::string("the Kubernetes module ") + kModuleFileName + " (the gRPC client) " +
               "was not found: looked for " + (tried.empty() ? "nothing" : tried) +
               (from_env ? std::string(" (from ") + kModuleEnvVar + ")"
                         : std::string("; set ") + kModuleEnvVar + " to its path")};
}

std::unique_ptr<PodResourcesApi> MakeUnavailablePodResourcesApi(const std::string& socket_path,
                                                                std::string why) {
  return std::make_unique<UnavailablePodResourcesApi>(socket_path, std::move(why));
}

}  // namespace gw::k8s
