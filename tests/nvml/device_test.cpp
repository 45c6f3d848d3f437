#include "nvml/device.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace gw::nvml {
namespace {

TEST(ProcessStride, SentinelTellsTwentyFourFromThirtyTwo) {
  const unsigned count = 3;
  std::vector<unsigned char> buffer(count * 32 + 64, 0xA5);
  // A 24-byte writer touches only the first count*24 bytes.
  std::memset(buffer.data(), 0, count * 24);
  EXPECT_EQ(DetectProcessStride(buffer.data(), count, buffer.size()), 24u);
  // A 32-byte writer fills count*32 bytes.
  std::memset(buffer.data(), 0, count * 32);
  EXPECT_EQ(DetectProcessStride(buffer.data(), count, buffer.size()), 32u);
}

class SimDevice : public ::testing::Test {
 protected:
  void Open(const std::string& scenario) {
    auto lib = Library::Open(GW_SIM_LIBRARY);
    ASSERT_TRUE(lib.ok()) << lib.error().message;
    lib_ = std::move(lib.value());
    ASSERT_TRUE(lib_->ConfigureSimulator(scenario, 1, 0).ok());
    ASSERT_TRUE(lib_->Init().ok());
  }
  std::unique_ptr<Library> lib_;
};

TEST_F(SimDevice, ProcessListSurvivesTheV3StrideBug) {
  Open("stride32");
  System system(&lib_->api());
  auto count = system.DeviceCount();
  ASSERT_TRUE(count.ok());
  bool saw_processes = false;
  lib_->api().nvmlSimAdvance(5000);
  for (unsigned i = 0; i < count.value(); ++i) {
    auto device = system.DeviceByIndex(i);
    ASSERT_TRUE(device.ok());
    std::vector<ProcessInfo> processes;
    auto n = device.value().ComputeProcesses(&processes);
    ASSERT_TRUE(n.ok()) << ReturnName(n.status());
    for (const ProcessInfo& p : processes) {
      saw_processes = true;
      // With the wrong stride, pids and memory would be garbage from the neighbouring entry.
      EXPECT_GT(p.pid, 0u);
      EXPECT_LT(p.pid, 4194304u);
      EXPECT_TRUE(p.memory_known);
      EXPECT_GT(p.used_memory_bytes, 0u);
      EXPECT_LT(p.used_memory_bytes, 1ull << 40);
    }
    // The pids must be distinct (a misread stride repeats or scrambles them).
    for (size_t a = 0; a < processes.size(); ++a)
      for (size_t b = a + 1; b < processes.size(); ++b)
        EXPECT_NE(processes[a].pid, processes[b].pid);
  }
  EXPECT_TRUE(saw_processes) << "stride32 scenario should run processes";
}

TEST_F(SimDevice, MemoryV2UsesTheVersionedStruct) {
  Open("demo");
  System system(&lib_->api());
  auto device = system.DeviceByIndex(0);
  ASSERT_TRUE(device.ok());
  auto memory = device.value().Memory();
  ASSERT_TRUE(memory.ok());
  EXPECT_TRUE(memory.value().has_reserved);  // only _v2 reports reserved memory
  EXPECT_EQ(memory.value().total_bytes,
            memory.value().used_bytes + memory.value().free_bytes + memory.value().reserved_bytes);
  // The bare number 2 is refused, as driver 510 did: the version must be the macro value.
  nvmlMemory_v2_t raw{};
  raw.version = 2;
  EXPECT_NE(lib_->api().nvmlDeviceGetMemoryInfo_v2(device.value().handle(), &raw), NVML_SUCCESS);
}

}  // namespace
}  // namespace gw::nvml
