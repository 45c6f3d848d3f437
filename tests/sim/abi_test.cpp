// Layouts of the nvml/abi.h types against the sizes and offsets in docs/nvml-notes.md
// (computed from NVIDIA's header for x86-64). A wrong layout corrupts memory silently on a
// real driver, so every field offset is pinned.
#include <gtest/gtest.h>

#include <cstddef>

#include "nvml/abi.h"

namespace {

TEST(AbiLayout, HandlesAndEnumsHaveTheDriverSizes) {
  EXPECT_EQ(sizeof(nvmlDevice_t), 8u);
  EXPECT_EQ(sizeof(nvmlEventSet_t), 8u);
  EXPECT_EQ(sizeof(nvmlReturn_t), 4u);
  EXPECT_EQ(sizeof(nvmlSamplingType_t), 4u);
  EXPECT_EQ(sizeof(nvmlValueType_t), 4u);
}

TEST(AbiLayout, PciInfo) {
  EXPECT_EQ(sizeof(nvmlPciInfo_t), 68u);
  EXPECT_EQ(alignof(nvmlPciInfo_t), 4u);
  EXPECT_EQ(offsetof(nvmlPciInfo_t, busIdLegacy), 0u);
  EXPECT_EQ(offsetof(nvmlPciInfo_t, domain), 16u);
  EXPECT_EQ(offsetof(nvmlPciInfo_t, bus), 20u);
  EXPECT_EQ(offsetof(nvmlPciInfo_t, device), 24u);
  EXPECT_EQ(offsetof(nvmlPciInfo_t, pciDeviceId), 28u);
  EXPECT_EQ(offsetof(nvmlPciInfo_t, pciSubSystemId), 32u);
  EXPECT_EQ(offsetof(nvmlPciInfo_t, busId), 36u);
}

TEST(AbiLayout, Memory) {
  EXPECT_EQ(sizeof(nvmlMemory_t), 24u);
  EXPECT_EQ(sizeof(nvmlMemory_v2_t), 40u);
  EXPECT_EQ(offsetof(nvmlMemory_v2_t, version), 0u);
  EXPECT_EQ(offsetof(nvmlMemory_v2_t, total), 8u);
  EXPECT_EQ(offsetof(nvmlMemory_v2_t, reserved), 16u);
  EXPECT_EQ(offsetof(nvmlMemory_v2_t, free), 24u);
  EXPECT_EQ(offsetof(nvmlMemory_v2_t, used), 32u);
  EXPECT_EQ(nvmlMemory_v2, 0x02000028u);
}

TEST(AbiLayout, Utilization) {
  EXPECT_EQ(sizeof(nvmlUtilization_t), 8u);
  EXPECT_EQ(offsetof(nvmlUtilization_t, memory), 4u);
}

TEST(AbiLayout, SamplesAndValues) {
  EXPECT_EQ(sizeof(nvmlValue_t), 8u);
  EXPECT_EQ(sizeof(nvmlSample_t), 16u);
  EXPECT_EQ(offsetof(nvmlSample_t, timeStamp), 0u);
  EXPECT_EQ(offsetof(nvmlSample_t, sampleValue), 8u);
}

TEST(AbiLayout, Processes) {
  EXPECT_EQ(sizeof(nvmlProcessInfo_v1_t), 16u);
  EXPECT_EQ(offsetof(nvmlProcessInfo_v1_t, usedGpuMemory), 8u);
  EXPECT_EQ(sizeof(nvmlProcessInfo_v2_t), 24u);
  EXPECT_EQ(offsetof(nvmlProcessInfo_v2_t, pid), 0u);
  EXPECT_EQ(offsetof(nvmlProcessInfo_v2_t, usedGpuMemory), 8u);
  EXPECT_EQ(offsetof(nvmlProcessInfo_v2_t, gpuInstanceId), 16u);
  EXPECT_EQ(offsetof(nvmlProcessInfo_v2_t, computeInstanceId), 20u);
  EXPECT_EQ(sizeof(nvmlProcessUtilizationSample_t), 32u);
  EXPECT_EQ(offsetof(nvmlProcessUtilizationSample_t, timeStamp), 8u);
  EXPECT_EQ(offsetof(nvmlProcessUtilizationSample_t, smUtil), 16u);
  EXPECT_EQ(offsetof(nvmlProcessUtilizationSample_t, memUtil), 20u);
  EXPECT_EQ(offsetof(nvmlProcessUtilizationSample_t, encUtil), 24u);
  EXPECT_EQ(offsetof(nvmlProcessUtilizationSample_t, decUtil), 28u);
}

TEST(AbiLayout, EventData) {
  EXPECT_EQ(sizeof(nvmlEventData_t), 32u);
  EXPECT_EQ(offsetof(nvmlEventData_t, device), 0u);
  EXPECT_EQ(offsetof(nvmlEventData_t, eventType), 8u);
  EXPECT_EQ(offsetof(nvmlEventData_t, eventData), 16u);
  EXPECT_EQ(offsetof(nvmlEventData_t, gpuInstanceId), 24u);
  EXPECT_EQ(offsetof(nvmlEventData_t, computeInstanceId), 28u);
}

TEST(AbiLayout, FieldValue) {
  EXPECT_EQ(sizeof(nvmlFieldValue_t), 40u);
  EXPECT_EQ(offsetof(nvmlFieldValue_t, fieldId), 0u);
  EXPECT_EQ(offsetof(nvmlFieldValue_t, scopeId), 4u);
  EXPECT_EQ(offsetof(nvmlFieldValue_t, timestamp), 8u);
  EXPECT_EQ(offsetof(nvmlFieldValue_t, latencyUsec), 16u);
  EXPECT_EQ(offsetof(nvmlFieldValue_t, valueType), 24u);
  EXPECT_EQ(offsetof(nvmlFieldValue_t, nvmlReturn), 28u);
  EXPECT_EQ(offsetof(nvmlFieldValue_t, value), 32u);
}

TEST(AbiConstants, ReasonAndEventBits) {
  EXPECT_EQ(nvmlClocksEventReasonGpuIdle, 0x1ULL);
  EXPECT_EQ(nvmlClocksEventReasonSwPowerCap, 0x4ULL);
  EXPECT_EQ(nvmlClocksEventReasonSwThermalSlowdown, 0x20ULL);
  EXPECT_EQ(nvmlClocksThrottleReasonHwThermalSlowdown, 0x40ULL);
  EXPECT_EQ(nvmlClocksThrottleReasonHwPowerBrakeSlowdown, 0x80ULL);
  EXPECT_EQ(nvmlEventTypeXidCriticalError, 0x8ULL);
  EXPECT_EQ(NVML_ERROR_GPU_IS_LOST, 15);
  EXPECT_EQ(NVML_ERROR_UNKNOWN, 999);
}

}  // namespace
