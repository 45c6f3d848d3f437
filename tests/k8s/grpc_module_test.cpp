// Finding and loading libgpuwarden-k8s.so (k8s/grpc_module.h). This binary links gw_k8s only, as
// the agent does: the gRPC client comes from the module, driven against the stand-in kubelet.
#include "k8s/grpc_module.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "k8s/fake_kubelet_process.h"
#include "support/process.h"

namespace gw::k8s {
namespace {

using gw::testing::FakeKubelet;
using gw::testing::TempDir;

// Sets GPUWARDEN_K8S_MODULE (or clears it) for one test and restores what was there.
class ModuleEnv {
 public:
  explicit ModuleEnv(const std::optional<std::string>& value) {
    if (const char* old = getenv(kModuleEnvVar)) old_ = old;
    if (value)
      setenv(kModuleEnvVar, value->c_str(), 1);
    else
      unsetenv(kModuleEnvVar);
  }
  ~ModuleEnv() {
    if (old_)
      setenv(kModuleEnvVar, old_->c_str(), 1);
    else
      unsetenv(kModuleEnvVar);
  }
  ModuleEnv(const ModuleEnv&) = delete;
  ModuleEnv& operator=(const ModuleEnv&) = delete;

 private:
  std::optional<std::string> old_;
};

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(GrpcModule, LooksBesideTheExecutableThenInTheInstalledLibDir) {
  ModuleEnv env(std::nullopt);
  EXPECT_EQ(PodResourcesModuleCandidates("/usr/bin/gpuwarden"),
            (std::vector<std::string>{"/usr/bin/libgpuwarden-k8s.so",
                                      "/usr/lib/gpuwarden/libgpuwarden-k8s.so"}));
  EXPECT_EQ(PodResourcesModuleCandidates("/opt/gw/build/bin/gpuwarden"),
            (std::vector<std::string>{"/opt/gw/build/bin/libgpuwarden-k8s.so",
                                      "/opt/gw/build/lib/gpuwarden/libgpuwarden-k8s.so"}));
  // Without an argument: this test binary's own directory first.
  const std::vector<std::string> own = PodResourcesModuleCandidates();
  ASSERT_EQ(own.size(), 2u);
  EXPECT_EQ(own[0], std::string(GW_BINARY_DIR) + "/bin/libgpuwarden-k8s.so");
}

TEST(GrpcModule, TheEnvironmentVariableReplacesTheSearch) {
  ModuleEnv env(std::string("/somewhere/else/libk8s.so"));
  EXPECT_EQ(PodResourcesModuleCandidates("/usr/bin/gpuwarden"),
            (std::vector<std::string>{"/somewhere/else/libk8s.so"}));
}

TEST(GrpcModule, AMissingModuleNamesWhereItLooked) {
  TempDir dir;
  const std::string path = dir / "missing/libgpuwarden-k8s.so";
  ModuleEnv env(path);
  Expected<std::unique_ptr<PodResourcesApi>> api = LoadPodResourcesApi("/run/kubelet.sock");
  ASSERT_FALSE(api.ok());
  EXPECT_TRUE(Contains(api.error().message, "was not found")) << api.error().message;
  EXPECT_TRUE(Contains(api.error().message, path)) << api.error().message;
  EXPECT_TRUE(Contains(api.error().message, kModuleEnvVar)) << api.error().message;
}

TEST(GrpcModule, AFileThatIsNotALibraryIsRefusedWithDlerrorsText) {
  TempDir dir;
  const std::string path = dir / "libgpuwarden-k8s.so";
  std::ofstream(path) << "not an ELF file\n";
  ModuleEnv env(path);
  Expected<std::unique_ptr<PodResourcesApi>> api = LoadPodResourcesApi("/run/kubelet.sock");
  ASSERT_FALSE(api.ok());
  EXPECT_TRUE(Contains(api.error().message, "cannot load the Kubernetes module"))
      << api.error().message;
  EXPECT_TRUE(Contains(api.error().message, path)) << api.error().message;
}

#ifdef GW_SIM_LIBRARY
TEST(GrpcModule, ALibraryWithoutTheEntryPointsIsRefused) {
  ModuleEnv env(std::string(GW_SIM_LIBRARY));
  Expected<std::unique_ptr<PodResourcesApi>> api = LoadPodResourcesApi("/run/kubelet.sock");
  ASSERT_FALSE(api.ok());
  EXPECT_TRUE(Contains(api.error().message, "is not a gpuwarden Kubernetes module"))
      << api.error().message;
}
#endif

TEST(GrpcModule, TheBuiltModuleReadsTheKubelet) {
  ModuleEnv env(std::string(GW_K8S_MODULE));
  FakeKubelet kubelet;
  kubelet.SetState(
      {{"pods",
        {{{"namespace", "ml"},
          {"name", "train-0"},
          {"containers",
           {{{"name", "main"},
             {"devices", {{{"resource", "nvidia.com/gpu"}, {"ids", {"GPU-1"}}}}}}}}}}}});
  ASSERT_TRUE(kubelet.Start()) << kubelet.Output();
  Expected<std::unique_ptr<PodResourcesApi>> api = LoadPodResourcesApi(kubelet.socket());
  ASSERT_TRUE(api.ok()) << api.error().message;
  EXPECT_EQ((*api)->Endpoint(), "unix://" + kubelet.socket());
  Expected<std::vector<PodResources>> pods = (*api)->List(10);
  ASSERT_TRUE(pods.ok()) << pods.error().message;
  ASSERT_EQ(pods->size(), 1u);
  EXPECT_EQ((*pods)[0].name, "train-0");
  EXPECT_EQ((*pods)[0].containers.at(0).devices.at(0).device_ids,
            std::vector<std::string>{"GPU-1"});
  // A second client comes from the module already loaded.
  Expected<std::unique_ptr<PodResourcesApi>> again = LoadPodResourcesApi("/no/such/kubelet.sock");
  ASSERT_TRUE(again.ok()) << again.error().message;
  Expected<std::vector<PodResources>> none = (*again)->List(2);
  ASSERT_FALSE(none.ok());
  EXPECT_TRUE(Contains(none.error().message, "/no/such/kubelet.sock")) << none.error().message;
}

TEST(GrpcModule, TheUnavailableApiFailsEveryCallWithTheReason) {
  std::unique_ptr<PodResourcesApi> api =
      MakeUnavailablePodResourcesApi("/run/kubelet.sock", "module not found");
  EXPECT_EQ(api->Endpoint(), "unix:///run/kubelet.sock");
  Expected<std::vector<PodResources>> pods = api->List(1);
  ASSERT_FALSE(pods.ok());
  EXPECT_EQ(pods.error().message, "module not found");
  Expected<Allocatable> allocatable = api->GetAllocatable(1);
  ASSERT_FALSE(allocatable.ok());
  EXPECT_EQ(allocatable.error().message, "module not found");
}

}  // namespace
}  // namespace gw::k8s
