// Test helper: libnvml-sim.so loaded with dlopen and every function resolved with dlsym, the way
// nvml/ loads a real libnvidia-ml.so.1. One instance per process (the library is a singleton).
#ifndef GPUWARDEN_TESTS_SIM_SIM_LIBRARY_H_
#define GPUWARDEN_TESTS_SIM_SIM_LIBRARY_H_

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

#include "nvml/abi.h"

namespace gw::sim::testing {

struct SimApi {
#define GW_SIM_TEST_POINTER(name, params) decltype(&::name) name = nullptr;
  GW_NVML_FUNCTIONS(GW_SIM_TEST_POINTER)
#undef GW_SIM_TEST_POINTER
  decltype(&::nvmlErrorString) nvmlErrorString = nullptr;
  decltype(&::nvmlSimConfigure) nvmlSimConfigure = nullptr;
  decltype(&::nvmlSimAdvance) nvmlSimAdvance = nullptr;
  decltype(&::nvmlSimGetClock) nvmlSimGetClock = nullptr;
  void* handle = nullptr;
};

// Loads `path` (RTLD_NOW | RTLD_LOCAL); missing symbols stay null.
inline SimApi LoadSimApi(const char* path) {
  SimApi api;
  api.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (api.handle == nullptr) return api;
#define GW_SIM_TEST_RESOLVE(name, params) \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(api.handle, #name));
  GW_NVML_FUNCTIONS(GW_SIM_TEST_RESOLVE)
  GW_SIM_TEST_RESOLVE(nvmlErrorString, ())
  GW_SIM_TEST_RESOLVE(nvmlSimConfigure, ())
  GW_SIM_TEST_RESOLVE(nvmlSimAdvance, ())
  GW_SIM_TEST_RESOLVE(nvmlSimGetClock, ())
#undef GW_SIM_TEST_RESOLVE
  return api;
}

// The main simulator library, loaded once for the whole test binary.
inline const SimApi& Sim() {
  static const SimApi api = LoadSimApi(GW_SIM_LIBRARY);
  return api;
}

// Configures a scenario in stepped time, initializes, and shuts down at the end of the test.
class SimTest : public ::testing::Test {
 protected:
  const SimApi& nvml = Sim();

  void Start(const std::string& scenario, int clock_mode = 1, double speed = 0) {
    ASSERT_NE(nvml.handle, nullptr) << dlerror();
    char error[512] = "";
    ASSERT_EQ(nvml.nvmlSimConfigure(scenario.c_str(), clock_mode, speed, error, sizeof error),
              NVML_SUCCESS)
        << error;
    ASSERT_EQ(nvml.nvmlInit_v2(), NVML_SUCCESS);
    started_ = true;
  }
  void TearDown() override {
    if (started_) {
      while (nvml.nvmlShutdown() == NVML_SUCCESS) {
      }
    }
  }
  nvmlDevice_t Gpu(unsigned index) {
    nvmlDevice_t device = nullptr;
    EXPECT_EQ(nvml.nvmlDeviceGetHandleByIndex_v2(index, &device), NVML_SUCCESS);
    return device;
  }
  void AdvanceTo(unsigned long long ms) {
    unsigned long long now = 0;
    ASSERT_EQ(nvml.nvmlSimGetClock(&now), NVML_SUCCESS);
    ASSERT_LE(now, ms);
    ASSERT_EQ(nvml.nvmlSimAdvance(ms - now), NVML_SUCCESS);
  }

  // A new event set with XidCriticalError registered on GPUs 0..gpus-1.
  nvmlEventSet_t XidEventSet(unsigned gpus) {
    nvmlEventSet_t set = nullptr;
    EXPECT_EQ(nvml.nvmlEventSetCreate(&set), NVML_SUCCESS);
    for (unsigned i = 0; i < gpus; ++i)
      EXPECT_EQ(nvml.nvmlDeviceRegisterEvents(Gpu(i), nvmlEventTypeXidCriticalError, set),
                NVML_SUCCESS);
    return set;
  }
  // GPM metric `id` from samples a (older) and b; *rc is the call's return, else the entry's.
  double GpmMetric(nvmlGpmSample_t a, nvmlGpmSample_t b, unsigned id, nvmlReturn_t* rc) {
    nvmlGpmMetricsGet_t get{};
    get.version = NVML_GPM_METRICS_GET_VERSION;
    get.numMetrics = 1;
    get.sample1 = a;
    get.sample2 = b;
    get.metrics[0].metricId = id;
    const nvmlReturn_t call = nvml.nvmlGpmMetricsGet(&get);
    *rc = call != NVML_SUCCESS ? call : get.metrics[0].nvmlReturn;
    return get.metrics[0].value;
  }

  bool started_ = false;
};

inline constexpr unsigned long long kStartUs = 1'700'000'000ULL * 1'000'000ULL;

}  // namespace gw::sim::testing

#endif  // GPUWARDEN_TESTS_SIM_SIM_LIBRARY_H_
