#include "nvml/library.h"

#include <gtest/gtest.h>

#include "nvml/device.h"

namespace gw::nvml {
namespace {

TEST(Library, MissingLibraryIsOneClearLine) {
  auto lib = Library::Open("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.error().message.find("cannot load NVML library '/nonexistent/libnvidia-ml.so.1'"),
            std::string::npos)
      << lib.error().message;
  EXPECT_EQ(lib.error().message.find('\n'), std::string::npos);
}

TEST(Library, DefaultLibraryMissingSuggestsSimulation) {
  // No NVIDIA driver on the test machines: the default name does not resolve.
  auto lib = Library::Open(kDefaultLibrary);
  if (lib.ok()) GTEST_SKIP() << "a real NVIDIA driver is installed here";
  EXPECT_NE(lib.error().message.find("--simulate demo"), std::string::npos) << lib.error().message;
}

TEST(Library, RefusesALibraryThatIsNotNvml) {
  auto lib = Library::Open("libz.so.1");
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.error().message.find("is not an NVML library"), std::string::npos)
      << lib.error().message;
}

TEST(Library, SimulatorResolvesEverySymbol) {
  auto lib = Library::Open(GW_SIM_LIBRARY);
  ASSERT_TRUE(lib.ok()) << lib.error().message;
  EXPECT_TRUE((*lib)->missing_symbols().empty());
  EXPECT_TRUE((*lib)->is_simulator());
}

TEST(Library, InitWithoutScenarioFailsClearly) {
  unsetenv("GPUWARDEN_SIM_SCENARIO");
  auto lib = Library::Open(GW_SIM_LIBRARY);
  ASSERT_TRUE(lib.ok());
  Status s = (*lib)->Init();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("NVML init failed: DRIVER_NOT_LOADED"), std::string::npos)
      << s.message();
}

TEST(Library, BadScenarioIsRejectedWithItsReason) {
  auto lib = Library::Open(GW_SIM_LIBRARY);
  ASSERT_TRUE(lib.ok());
  Status s = (*lib)->ConfigureSimulator("/nonexistent/scenario.yaml", 1, 0);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("simulator scenario rejected"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("/nonexistent/scenario.yaml"), std::string::npos) << s.message();
}

TEST(Library, LegacyLibraryLacksNewSymbolsButStillWorks) {
  auto lib = Library::Open(GW_SIM_LEGACY_LIBRARY);
  ASSERT_TRUE(lib.ok()) << lib.error().message;
  const auto& missing = (*lib)->missing_symbols();
  auto lacks = [&](const std::string& name) {
    return std::find(missing.begin(), missing.end(), name) != missing.end();
  };
  EXPECT_TRUE(lacks("nvmlInit_v2"));
  EXPECT_TRUE(lacks("nvmlDeviceGetMemoryInfo_v2"));
  EXPECT_TRUE(lacks("nvmlDeviceGetTotalEnergyConsumption"));
  ASSERT_TRUE((*lib)->ConfigureSimulator("demo", 1, 0).ok());
  ASSERT_TRUE((*lib)->Init().ok());  // through nvmlInit (v1)
  System system(&(*lib)->api());
  auto count = system.DeviceCount();  // through nvmlDeviceGetCount (v1)
  ASSERT_TRUE(count.ok());
  EXPECT_GT(count.value(), 0u);
  auto device = system.DeviceByIndex(0);
  ASSERT_TRUE(device.ok());
  auto memory = device.value().Memory();  // falls back to nvmlDeviceGetMemoryInfo
  ASSERT_TRUE(memory.ok());
  EXPECT_FALSE(memory.value().has_reserved);
  EXPECT_GT(memory.value().total_bytes, 0u);
  auto energy = device.value().TotalEnergyMj();
  EXPECT_EQ(energy.status(), NVML_ERROR_FUNCTION_NOT_FOUND);
  EXPECT_TRUE(energy.unsupported());
  auto reasons = device.value().ClocksEventReasons();  // the older ThrottleReasons name
  EXPECT_TRUE(reasons.ok());
}

}  // namespace
}  // namespace gw::nvml
