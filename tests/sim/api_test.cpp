// The C API of libnvml-sim.so through dlopen: lifecycle, configuration, identity, readings,
// samples, memory version check, process lists, field values, argument checking, and the
// legacy library's missing symbols.
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "sim_library.h"

namespace gw::sim::testing {
namespace {

using SimApiTest = SimTest;

// "GPU-" then hex groups of 8-4-4-4-12 (std::regex trips GCC 12's warnings under ASan).
bool IsUuid(const std::string& text) {
  const std::string shape = "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx";
  if (text.size() != shape.size() || text.rfind("GPU-", 0) != 0) return false;
  for (std::size_t i = 4; i < shape.size(); ++i) {
    const bool hex = (text[i] >= '0' && text[i] <= '9') || (text[i] >= 'a' && text[i] <= 'f');
    if (shape[i] == '-' ? text[i] != '-' : !hex) return false;
  }
  return true;
}

TEST_F(SimApiTest, CallsBeforeInitAreUninitializedAndNoScenarioMeansNoDriver) {
  ASSERT_NE(nvml.handle, nullptr);
  unsigned count = 0;
  EXPECT_EQ(nvml.nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvml.nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvml.nvmlSimAdvance(10), NVML_ERROR_UNINITIALIZED);
  ASSERT_EQ(nvml.nvmlSimConfigure(nullptr, -1, 0, nullptr, 0), NVML_SUCCESS);
  unsetenv("GPUWARDEN_SIM_SCENARIO");
  EXPECT_EQ(nvml.nvmlInit_v2(), NVML_ERROR_DRIVER_NOT_LOADED);
  EXPECT_STREQ(nvml.nvmlErrorString(NVML_ERROR_GPU_IS_LOST), "GPU is lost");
}

TEST_F(SimApiTest, EnvironmentSelectsTheScenarioWhenNotConfigured) {
  ASSERT_EQ(nvml.nvmlSimConfigure(nullptr, -1, 0, nullptr, 0), NVML_SUCCESS);
  setenv("GPUWARDEN_SIM_SCENARIO", "fall-off-bus", 1);
  setenv("GPUWARDEN_SIM_CLOCK", "stepped", 1);
  ASSERT_EQ(nvml.nvmlInit(), NVML_SUCCESS);
  started_ = true;
  unsetenv("GPUWARDEN_SIM_SCENARIO");
  unsetenv("GPUWARDEN_SIM_CLOCK");
  unsigned count = 0;
  EXPECT_EQ(nvml.nvmlDeviceGetCount(&count), NVML_SUCCESS);
  EXPECT_EQ(count, 2u);
  EXPECT_EQ(nvml.nvmlSimAdvance(1000), NVML_SUCCESS);  // stepped, as the environment said
}

TEST_F(SimApiTest, BadScenarioIsRejectedWithFileAndLine) {
  const std::string path = std::string(GW_SOURCE_DIR) + "/tests/sim/data/bad-model.yaml";
  char error[512] = "";
  EXPECT_EQ(nvml.nvmlSimConfigure(path.c_str(), 1, 0, error, sizeof error),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(error).rfind(path + ":4: ", 0), 0u) << error;
  char tiny[8] = "xxxxxxx";
  EXPECT_EQ(nvml.nvmlSimConfigure(path.c_str(), 1, 0, tiny, sizeof tiny),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::strlen(tiny), 7u);  // truncated, still terminated
  EXPECT_EQ(nvml.nvmlSimConfigure("power-cap", 7, 0, error, sizeof error),
            NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(SimApiTest, InitIsCountedAndIdentityIsDeterministic) {
  Start("power-cap");
  ASSERT_EQ(nvml.nvmlInit_v2(), NVML_SUCCESS);  // second init: needs a second shutdown
  char error[128];
  EXPECT_EQ(nvml.nvmlSimConfigure("demo", 1, 0, error, sizeof error), NVML_ERROR_IN_USE);
  unsigned count = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
  ASSERT_EQ(count, 2u);
  nvmlDevice_t gpu = Gpu(1);
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
  ASSERT_EQ(nvml.nvmlDeviceGetName(gpu, name, sizeof name), NVML_SUCCESS);
  EXPECT_STREQ(name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(nvml.nvmlDeviceGetName(gpu, name, 5), NVML_ERROR_INSUFFICIENT_SIZE);
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  ASSERT_EQ(nvml.nvmlDeviceGetUUID(gpu, uuid, sizeof uuid), NVML_SUCCESS);
  EXPECT_TRUE(IsUuid(uuid)) << uuid;
  nvmlPciInfo_t pci;
  ASSERT_EQ(nvml.nvmlDeviceGetPciInfo_v3(gpu, &pci), NVML_SUCCESS);
  EXPECT_STREQ(pci.busId, "00000000:2A:00.0");
  EXPECT_STREQ(pci.busIdLegacy, "0000:2A:00.0");
  EXPECT_EQ(pci.pciDeviceId, 0x233010DEu);
  unsigned index = 9, minor = 9, arch = 0;
  EXPECT_EQ(nvml.nvmlDeviceGetIndex(gpu, &index), NVML_SUCCESS);
  EXPECT_EQ(nvml.nvmlDeviceGetMinorNumber(gpu, &minor), NVML_SUCCESS);
  EXPECT_EQ(nvml.nvmlDeviceGetArchitecture(gpu, &arch), NVML_SUCCESS);
  EXPECT_EQ(index, 1u);
  EXPECT_EQ(minor, 1u);
  EXPECT_EQ(arch, static_cast<unsigned>(NVML_DEVICE_ARCH_HOPPER));
  char version[NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE];
  ASSERT_EQ(nvml.nvmlSystemGetNVMLVersion(version, sizeof version), NVML_SUCCESS);
  EXPECT_STREQ(version, "12.550.127.08");
  int cuda = 0;
  ASSERT_EQ(nvml.nvmlSystemGetCudaDriverVersion_v2(&cuda), NVML_SUCCESS);
  EXPECT_EQ(cuda, 12040);

  ASSERT_EQ(nvml.nvmlShutdown(), NVML_SUCCESS);
  EXPECT_EQ(nvml.nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);  // still one init held
  ASSERT_EQ(nvml.nvmlShutdown(), NVML_SUCCESS);
  EXPECT_EQ(nvml.nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvml.nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
  // A handle from the previous init is stale after re-init.
  ASSERT_EQ(nvml.nvmlInit_v2(), NVML_SUCCESS);
  unsigned temp = 0;
  EXPECT_EQ(nvml.nvmlDeviceGetTemperature(gpu, NVML_TEMPERATURE_GPU, &temp),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlDeviceGetTemperature(Gpu(1), NVML_TEMPERATURE_GPU, &temp), NVML_SUCCESS);
}

TEST_F(SimApiTest, PowerCapReadsThroughTheApi) {
  Start("power-cap");
  nvmlDevice_t gpu = Gpu(0);
  AdvanceTo(70'000);
  unsigned limit = 0, power = 0, sm = 0, max_sm = 0, dflt = 0;
  unsigned long long reasons = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetEnforcedPowerLimit(gpu, &limit), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlDeviceGetPowerUsage(gpu, &power), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlDeviceGetClockInfo(gpu, NVML_CLOCK_SM, &sm), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlDeviceGetMaxClockInfo(gpu, NVML_CLOCK_SM, &max_sm), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlDeviceGetPowerManagementDefaultLimit(gpu, &dflt), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlDeviceGetCurrentClocksEventReasons(gpu, &reasons), NVML_SUCCESS);
  EXPECT_EQ(limit, 300'000u);
  EXPECT_EQ(dflt, 700'000u);
  EXPECT_LE(power, 300'000u);
  EXPECT_EQ(max_sm, 1980u);
  EXPECT_LT(sm, max_sm);
  EXPECT_NE(reasons & nvmlClocksEventReasonSwPowerCap, 0u);
  unsigned long long throttle = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetCurrentClocksThrottleReasons(gpu, &throttle), NVML_SUCCESS);
  EXPECT_EQ(throttle, reasons);
  unsigned long long e1 = 0, e2 = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetTotalEnergyConsumption(gpu, &e1), NVML_SUCCESS);
  AdvanceTo(80'000);
  ASSERT_EQ(nvml.nvmlDeviceGetTotalEnergyConsumption(gpu, &e2), NVML_SUCCESS);
  EXPECT_GT(e2 - e1, 10 * 250'000ULL);  // 10 s near 300 W, in mJ
  EXPECT_LE(e2 - e1, 10 * 300'000ULL);
}

TEST_F(SimApiTest, SamplesCatchSpikesThatWholeSecondReadsMiss) {
  Start("spikes");
  nvmlDevice_t gpu = Gpu(0);
  AdvanceTo(10'000);
  nvmlUtilization_t util{};
  ASSERT_EQ(nvml.nvmlDeviceGetUtilizationRates(gpu, &util), NVML_SUCCESS);
  EXPECT_LE(util.gpu, 11u);  // 10.0 s is between spikes
  nvmlValueType_t type = -1;
  unsigned count = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetSamples(gpu, NVML_GPU_UTILIZATION_SAMPLES, 0, &type, &count, nullptr),
            NVML_SUCCESS);
  EXPECT_EQ(count, 101u);  // steps 0..100
  std::vector<nvmlSample_t> samples(count);
  unsigned small = 10;
  EXPECT_EQ(nvml.nvmlDeviceGetSamples(gpu, NVML_GPU_UTILIZATION_SAMPLES, 0, &type, &small,
                                      samples.data()),
            NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(small, 101u);
  ASSERT_EQ(nvml.nvmlDeviceGetSamples(gpu, NVML_GPU_UTILIZATION_SAMPLES, 0, &type, &count,
                                      samples.data()),
            NVML_SUCCESS);
  EXPECT_EQ(type, NVML_VALUE_TYPE_UNSIGNED_INT);
  std::vector<unsigned long long> spike_times;
  for (const nvmlSample_t& s : samples)
    if (s.sampleValue.uiVal == 100) spike_times.push_back(s.timeStamp - kStartUs);
  EXPECT_EQ(spike_times, (std::vector<unsigned long long>{0, 100'000, 200'000, 300'000, 5'100'000,
                                                          5'200'000, 5'300'000}));
  // Power samples show the spike too (mW).
  unsigned pcount = 200;
  std::vector<nvmlSample_t> power(pcount);
  ASSERT_EQ(nvml.nvmlDeviceGetSamples(gpu, NVML_TOTAL_POWER_SAMPLES, kStartUs + 5'000'000, &type,
                                      &pcount, power.data()),
            NVML_SUCCESS);
  ASSERT_EQ(pcount, 50u);  // 5.1 s .. 10.0 s
  EXPECT_EQ(power[0].timeStamp, kStartUs + 5'100'000);
  EXPECT_GT(power[0].sampleValue.uiVal, 600'000u);
  EXPECT_LT(power[10].sampleValue.uiVal, 200'000u);
  // Nothing newer than the newest sample.
  const unsigned long long newest = samples.back().timeStamp;
  count = 5;
  EXPECT_EQ(nvml.nvmlDeviceGetSamples(gpu, NVML_GPU_UTILIZATION_SAMPLES, newest, &type, &count,
                                      samples.data()),
            NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(nvml.nvmlDeviceGetSamples(gpu, NVML_MODULE_POWER_SAMPLES, 0, &type, &count, nullptr),
            NVML_ERROR_NOT_SUPPORTED);
  // The ring keeps 25.6 s: after a minute, 256 samples.
  AdvanceTo(70'000);
  ASSERT_EQ(nvml.nvmlDeviceGetSamples(gpu, NVML_PROCESSOR_CLK_SAMPLES, 0, &type, &count, nullptr),
            NVML_SUCCESS);
  EXPECT_EQ(count, 256u);
}

TEST_F(SimApiTest, MemoryInfoV2ChecksTheStructVersion) {
  Start("spikes");
  nvmlDevice_t gpu = Gpu(0);
  AdvanceTo(1'000);
  nvmlMemory_v2_t memory{};
  memory.version = 2;  // the classic mistake (docs/nvml-notes.md, trap 2)
  EXPECT_EQ(nvml.nvmlDeviceGetMemoryInfo_v2(gpu, &memory), NVML_ERROR_FUNCTION_NOT_FOUND);
  memory.version = nvmlMemory_v2;
  ASSERT_EQ(nvml.nvmlDeviceGetMemoryInfo_v2(gpu, &memory), NVML_SUCCESS);
  EXPECT_EQ(memory.total, 143771ULL << 20);
  EXPECT_EQ(memory.used, 40960ULL << 20);
  EXPECT_EQ(memory.free, memory.total - memory.reserved - memory.used);
  EXPECT_GT(memory.reserved, 0u);
  nvmlMemory_t v1{};
  ASSERT_EQ(nvml.nvmlDeviceGetMemoryInfo(gpu, &v1), NVML_SUCCESS);
  EXPECT_EQ(v1.total, memory.total);
  EXPECT_EQ(v1.free, memory.free);
  EXPECT_EQ(v1.used, memory.used + memory.reserved);
  AdvanceTo(5'200);  // inside a spike: +8 GiB
  ASSERT_EQ(nvml.nvmlDeviceGetMemoryInfo_v2(gpu, &memory), NVML_SUCCESS);
  EXPECT_EQ(memory.used, (40960ULL + 8192) << 20);
}

TEST_F(SimApiTest, ProcessListsAndTheV3StrideBug) {
  Start("stride32");
  nvmlDevice_t gpu = Gpu(0);
  unsigned count = 0;
  EXPECT_EQ(nvml.nvmlDeviceGetComputeRunningProcesses_v3(gpu, &count, nullptr),
            NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(count, 3u);
  // v2: 24-byte entries.
  std::vector<nvmlProcessInfo_v2_t> v2(3);
  ASSERT_EQ(nvml.nvmlDeviceGetComputeRunningProcesses_v2(gpu, &count, v2.data()), NVML_SUCCESS);
  EXPECT_EQ(v2[1].pid, 10002u);
  EXPECT_EQ(v2[2].usedGpuMemory, 2048ULL << 20);
  EXPECT_EQ(v2[0].gpuInstanceId, 0xFFFFFFFFu);
  EXPECT_EQ(v2[0].computeInstanceId, 0xFFFFFFFFu);
  // v3 on this "driver": 32-byte entries although count says 3 x 24 bytes fit.
  std::vector<unsigned char> buffer(3 * 32 + 64, 0xAB);
  count = 3;
  ASSERT_EQ(nvml.nvmlDeviceGetComputeRunningProcesses_v3(
                gpu, &count, reinterpret_cast<nvmlProcessInfo_v2_t*>(buffer.data())),
            NVML_SUCCESS);
  EXPECT_EQ(count, 3u);
  for (unsigned i = 0; i < 3; ++i) {
    unsigned pid = 0;
    std::memcpy(&pid, buffer.data() + 32 * i, sizeof pid);
    EXPECT_EQ(pid, 10001u + i);
  }
  EXPECT_EQ(buffer[3 * 32], 0xAB);  // nothing beyond three 32-byte entries
  // v1: 16-byte entries.
  std::vector<nvmlProcessInfo_v1_t> v1(3);
  count = 3;
  ASSERT_EQ(nvml.nvmlDeviceGetComputeRunningProcesses(gpu, &count, v1.data()), NVML_SUCCESS);
  EXPECT_EQ(v1[2].pid, 10003u);
  // Per-process utilization: an equal share of the GPU's.
  std::vector<nvmlProcessUtilizationSample_t> util(3);
  count = 3;
  AdvanceTo(2'000);
  ASSERT_EQ(nvml.nvmlDeviceGetProcessUtilization(gpu, util.data(), &count, 0), NVML_SUCCESS);
  EXPECT_EQ(util[0].timeStamp, kStartUs + 2'000'000);
  EXPECT_GE(util[0].smUtil, 30u);
  EXPECT_LE(util[0].smUtil, 34u);
  EXPECT_EQ(nvml.nvmlDeviceGetProcessUtilization(gpu, util.data(), &count, util[0].timeStamp),
            NVML_ERROR_NOT_FOUND);
}

TEST_F(SimApiTest, FieldValuesAnswerPerEntry) {
  Start("power-cap");
  AdvanceTo(5'000);
  nvmlFieldValue_t fields[4] = {};
  fields[0].fieldId = NVML_FI_DEV_MEMORY_TEMP;
  fields[1].fieldId = NVML_FI_DEV_POWER_AVERAGE;
  fields[2].fieldId = NVML_FI_DEV_POWER_INSTANT;
  fields[3].fieldId = 1;  // ECC_CURRENT: not simulated
  ASSERT_EQ(nvml.nvmlDeviceGetFieldValues(Gpu(0), 4, fields), NVML_SUCCESS);
  unsigned temp = 0, power = 0;
  ASSERT_EQ(nvml.nvmlDeviceGetTemperature(Gpu(0), NVML_TEMPERATURE_GPU, &temp), NVML_SUCCESS);
  ASSERT_EQ(nvml.nvmlDeviceGetPowerUsage(Gpu(0), &power), NVML_SUCCESS);
  EXPECT_EQ(fields[0].nvmlReturn, NVML_SUCCESS);
  EXPECT_GT(fields[0].value.uiVal, temp);   // HBM runs above the die
  EXPECT_EQ(fields[1].value.uiVal, power);  // H100: GetPowerUsage is the 1 s average
  EXPECT_GT(fields[2].value.uiVal, 400'000u);
  EXPECT_EQ(fields[0].timestamp, static_cast<long long>(kStartUs + 5'000'000));
  EXPECT_EQ(fields[1].valueType, NVML_VALUE_TYPE_UNSIGNED_INT);
  EXPECT_EQ(fields[3].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);
}

TEST_F(SimApiTest, NullPointersAndBadHandlesAreRejected) {
  Start("page-retirement");
  nvmlDevice_t gpu = Gpu(0);
  const nvmlDevice_t forged = reinterpret_cast<nvmlDevice_t>(0x1234);
  unsigned u = 0;
  EXPECT_EQ(nvml.nvmlDeviceGetCount_v2(nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlDeviceGetHandleByIndex_v2(0, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  nvmlDevice_t out = nullptr;
  EXPECT_EQ(nvml.nvmlDeviceGetHandleByIndex_v2(1, &out), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlDeviceGetPowerUsage(nullptr, &u), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlDeviceGetPowerUsage(forged, &u), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlDeviceGetPowerUsage(gpu, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlDeviceGetName(gpu, nullptr, 64), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlDeviceGetPciInfo_v3(gpu, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlDeviceGetMemoryInfo_v2(gpu, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlDeviceGetSamples(gpu, 0, 0, nullptr, &u, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlDeviceGetTemperature(gpu, 5, &u), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlDeviceGetClockInfo(gpu, 42, &u), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlDeviceGetTotalEccErrors(gpu, 0, 0, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlDeviceGetRemappedRows(gpu, &u, &u, &u, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlDeviceGetComputeRunningProcesses_v3(gpu, nullptr, nullptr),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlDeviceGetFieldValues(gpu, 1, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlEventSetCreate(nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlEventSetFree(reinterpret_cast<nvmlEventSet_t>(0x99)),
            NVML_ERROR_INVALID_ARGUMENT);
  nvmlEventData_t data;
  EXPECT_EQ(nvml.nvmlEventSetWait_v2(nullptr, &data, 0), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvml.nvmlSimGetClock(nullptr), NVML_ERROR_INVALID_ARGUMENT);
  // Model capabilities: a V100 has no fan reading, no row remapping, but page retirement.
  EXPECT_EQ(nvml.nvmlDeviceGetFanSpeed(gpu, &u), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvml.nvmlDeviceGetRemappedRows(gpu, &u, &u, &u, &u), NVML_ERROR_NOT_SUPPORTED);
  int pending = 5;
  EXPECT_EQ(nvml.nvmlDeviceGetRetiredPagesPendingStatus(gpu, &pending), NVML_SUCCESS);
  EXPECT_EQ(pending, 0);
}

TEST(SimLegacyLibrary, LacksTheNewerSymbolsButWorksThroughTheOldOnes) {
  const SimApi legacy = LoadSimApi(GW_SIM_LEGACY_LIBRARY);
  ASSERT_NE(legacy.handle, nullptr) << dlerror();
  EXPECT_EQ(legacy.nvmlInit_v2, nullptr);
  EXPECT_EQ(legacy.nvmlDeviceGetCount_v2, nullptr);
  EXPECT_EQ(legacy.nvmlDeviceGetHandleByIndex_v2, nullptr);
  EXPECT_EQ(legacy.nvmlDeviceGetPciInfo_v3, nullptr);
  EXPECT_EQ(legacy.nvmlDeviceGetMemoryInfo_v2, nullptr);
  EXPECT_EQ(legacy.nvmlDeviceGetComputeRunningProcesses_v3, nullptr);
  EXPECT_EQ(legacy.nvmlDeviceGetComputeRunningProcesses_v2, nullptr);
  EXPECT_EQ(legacy.nvmlEventSetWait_v2, nullptr);
  EXPECT_EQ(legacy.nvmlDeviceGetCurrentClocksEventReasons, nullptr);
  EXPECT_EQ(legacy.nvmlDeviceGetSupportedClocksEventReasons, nullptr);
  EXPECT_EQ(legacy.nvmlSystemGetCudaDriverVersion_v2, nullptr);
  EXPECT_EQ(legacy.nvmlDeviceGetTotalEnergyConsumption, nullptr);
  EXPECT_EQ(legacy.nvmlDeviceGetFieldValues, nullptr);
  ASSERT_NE(legacy.nvmlInit, nullptr);
  ASSERT_NE(legacy.nvmlDeviceGetComputeRunningProcesses, nullptr);
  ASSERT_NE(legacy.nvmlDeviceGetCurrentClocksThrottleReasons, nullptr);
  ASSERT_NE(legacy.nvmlEventSetWait, nullptr);
  ASSERT_NE(legacy.nvmlDeviceGetPciInfo_v2, nullptr);
  ASSERT_NE(legacy.nvmlSimConfigure, nullptr);
  // Only nvml* names are exported.
  EXPECT_EQ(
      dlsym(legacy.handle, "_ZN2gw3sim12FindGpuModelESt17basic_string_viewIcSt11char_traitsIcEE"),
      nullptr);

  char error[256] = "";
  ASSERT_EQ(legacy.nvmlSimConfigure("stride32", 1, 0, error, sizeof error), NVML_SUCCESS) << error;
  ASSERT_EQ(legacy.nvmlInit(), NVML_SUCCESS);
  nvmlDevice_t gpu = nullptr;
  ASSERT_EQ(legacy.nvmlDeviceGetHandleByIndex(0, &gpu), NVML_SUCCESS);
  std::vector<nvmlProcessInfo_v1_t> v1(4);
  unsigned count = 4;
  ASSERT_EQ(legacy.nvmlDeviceGetComputeRunningProcesses(gpu, &count, v1.data()), NVML_SUCCESS);
  EXPECT_EQ(count, 3u);
  EXPECT_EQ(v1[0].pid, 10001u);
  // The legacy library keeps its own state: the main library is not initialized by this.
  unsigned main_count = 0;
  EXPECT_EQ(Sim().nvmlDeviceGetCount_v2(&main_count), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(legacy.nvmlShutdown(), NVML_SUCCESS);
  dlclose(legacy.handle);
}

}  // namespace
}  // namespace gw::sim::testing
