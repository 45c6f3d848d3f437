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

TEST(AbiLayout, GpmSupportAndSample) {
  EXPECT_EQ(sizeof(nvmlGpmSample_t), 8u);
  EXPECT_EQ(sizeof(nvmlGpmSupport_t), 8u);
  EXPECT_EQ(offsetof(nvmlGpmSupport_t, version), 0u);
  EXPECT_EQ(offsetof(nvmlGpmSupport_t, isSupportedDevice), 4u);
  EXPECT_EQ(NVML_GPM_SUPPORT_VERSION, 1);
}

TEST(AbiLayout, GpmMetric) {
  EXPECT_EQ(sizeof(nvmlGpmMetric_t), 40u);
  EXPECT_EQ(offsetof(nvmlGpmMetric_t, metricId), 0u);
  EXPECT_EQ(offsetof(nvmlGpmMetric_t, nvmlReturn), 4u);
  EXPECT_EQ(offsetof(nvmlGpmMetric_t, value), 8u);
  EXPECT_EQ(offsetof(nvmlGpmMetric_t, shortName), 16u);
  EXPECT_EQ(offsetof(nvmlGpmMetric_t, longName), 24u);
  EXPECT_EQ(offsetof(nvmlGpmMetric_t, unit), 32u);
}

TEST(AbiLayout, GpmMetricsGetHeader) {
  EXPECT_EQ(offsetof(nvmlGpmMetricsGet_t, version), 0u);
  EXPECT_EQ(offsetof(nvmlGpmMetricsGet_t, numMetrics), 4u);
  EXPECT_EQ(offsetof(nvmlGpmMetricsGet_t, sample1), 8u);
  EXPECT_EQ(offsetof(nvmlGpmMetricsGet_t, sample2), 16u);
  EXPECT_EQ(offsetof(nvmlGpmMetricsGet_t, metrics), 24u);
  // The array is this project's own bound; entries follow each other at 40 bytes.
  EXPECT_EQ(sizeof(nvmlGpmMetricsGet_t), 24u + 40u * GW_GPM_METRICS_CAPACITY);
  EXPECT_EQ(NVML_GPM_METRICS_GET_VERSION, 1);
}

TEST(AbiLayout, TemperatureV) {
  EXPECT_EQ(sizeof(nvmlTemperature_t), 12u);
  EXPECT_EQ(offsetof(nvmlTemperature_t, version), 0u);
  EXPECT_EQ(offsetof(nvmlTemperature_t, sensorType), 4u);
  EXPECT_EQ(offsetof(nvmlTemperature_t, temperature), 8u);
  EXPECT_EQ(nvmlTemperature_v1, 0x0100000Cu);
  EXPECT_EQ(nvmlTemperature_v1, (sizeof(nvmlTemperature_t) | (1u << 24)));
}

TEST(AbiConstants, GpmMetricIds) {
  EXPECT_EQ(NVML_GPM_METRIC_GRAPHICS_UTIL, 1);
  EXPECT_EQ(NVML_GPM_METRIC_SM_UTIL, 2);
  EXPECT_EQ(NVML_GPM_METRIC_SM_OCCUPANCY, 3);
  EXPECT_EQ(NVML_GPM_METRIC_INTEGER_UTIL, 4);
  EXPECT_EQ(NVML_GPM_METRIC_ANY_TENSOR_UTIL, 5);
  EXPECT_EQ(NVML_GPM_METRIC_DFMA_TENSOR_UTIL, 6);
  EXPECT_EQ(NVML_GPM_METRIC_HMMA_TENSOR_UTIL, 7);
  EXPECT_EQ(NVML_GPM_METRIC_DMMA_TENSOR_UTIL, 8);
  EXPECT_EQ(NVML_GPM_METRIC_IMMA_TENSOR_UTIL, 9);
  EXPECT_EQ(NVML_GPM_METRIC_DRAM_BW_UTIL, 10);
  EXPECT_EQ(NVML_GPM_METRIC_FP64_UTIL, 11);
  EXPECT_EQ(NVML_GPM_METRIC_FP32_UTIL, 12);
  EXPECT_EQ(NVML_GPM_METRIC_FP16_UTIL, 13);
  EXPECT_EQ(NVML_GPM_METRIC_PCIE_TX_PER_SEC, 20);
  EXPECT_EQ(NVML_GPM_METRIC_PCIE_RX_PER_SEC, 21);
  EXPECT_EQ(NVML_GPM_METRIC_NVDEC_0_UTIL, 30);
  EXPECT_EQ(NVML_GPM_METRIC_NVJPG_0_UTIL, 40);
  EXPECT_EQ(NVML_GPM_METRIC_NVOFA_0_UTIL, 50);
  EXPECT_EQ(NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, 60);
  EXPECT_EQ(NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, 61);
  EXPECT_EQ(NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC, 62);
  EXPECT_EQ(NVML_GPM_METRIC_NVLINK_L0_TX_PER_SEC, 63);
  EXPECT_EQ(NVML_GPM_METRIC_NVLINK_L17_TX_PER_SEC, 63 + 2 * 17);
  EXPECT_EQ(NVML_GPM_NVLINK_PER_LINK_MAX, 18);
}

TEST(AbiConstants, FieldIdsMigAndNvLink) {
  EXPECT_EQ(NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL, 38);
  EXPECT_EQ(NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL, 45);
  EXPECT_EQ(NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL, 52);
  EXPECT_EQ(NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL, 59);
  EXPECT_EQ(NVML_FI_DEV_NVLINK_LINK_COUNT, 91);
  EXPECT_EQ(NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, 138);
  EXPECT_EQ(NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, 139);
  EXPECT_EQ(NVML_FI_DEV_NVLINK_ECC_DATA_ERROR_COUNT_TOTAL, 160);
  EXPECT_EQ(NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY, 161);
  EXPECT_EQ(NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY, 162);
  EXPECT_EQ(NVML_FI_DEV_NVLINK_ERROR_DL_CRC, 163);
  EXPECT_EQ(NVML_FI_DEV_NVLINK_GET_STATE, 165);
  EXPECT_EQ(NVML_FI_DEV_TEMPERATURE_SHUTDOWN_TLIMIT, 193);
  EXPECT_EQ(NVML_FI_DEV_TEMPERATURE_SLOWDOWN_TLIMIT, 194);
  EXPECT_EQ(NVML_FI_DEV_TEMPERATURE_MEM_MAX_TLIMIT, 195);
  EXPECT_EQ(NVML_FI_DEV_TEMPERATURE_GPU_MAX_TLIMIT, 196);
  EXPECT_EQ(NVML_FI_DEV_NVLINK_COUNT_XMIT_BYTES, 202);
  EXPECT_EQ(NVML_FI_DEV_NVLINK_COUNT_RCV_BYTES, 204);
  EXPECT_EQ(NVML_NVLINK_MAX_LINKS, 36);
  EXPECT_EQ(NVML_NVLINK_ERROR_DL_REPLAY, 0);
  EXPECT_EQ(NVML_NVLINK_ERROR_DL_RECOVERY, 1);
  EXPECT_EQ(NVML_NVLINK_ERROR_DL_CRC_FLIT, 2);
  EXPECT_EQ(NVML_NVLINK_ERROR_DL_CRC_DATA, 3);
  EXPECT_EQ(NVML_NVLINK_ERROR_DL_ECC_DATA, 4);
  EXPECT_EQ(NVML_DEVICE_MIG_ENABLE, 1);
  EXPECT_EQ(NVML_MIG_NO_INSTANCE, 0xFFFFFFFFu);
  EXPECT_EQ(NVML_ERROR_ARGUMENT_VERSION_MISMATCH, 25);
  EXPECT_EQ(NVML_ERROR_FUNCTION_NOT_FOUND, 13);
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
