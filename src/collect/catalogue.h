// collect/catalogue.h — every device metric gpuwarden exports, in one table.
//
// A metric *family* (name, type, unit, help, NVML source) owns one or more *slots*; a slot is
// one value per GPU, with the family's fixed extra labels (for example the family
// gpu_clock_event_active has one slot per reason). Each GPU's values live in a flat array indexed
// by slot, NaN meaning "absent" (NOT_SUPPORTED, a failed read, a lost GPU): absent values are
// left out of /metrics, never written as 0.
//
// Families whose label values are not known in advance (gpu_info, XID codes, per-process series)
// and the trailing-window peaks (on /metrics only) are rendered by exposition.cpp from the
// snapshot and listed in kDynamicFamilies.
//
// docs/metrics.md is checked against this table by tests/collect/catalogue_test.cpp.
#ifndef GPUWARDEN_COLLECT_CATALOGUE_H_
#define GPUWARDEN_COLLECT_CATALOGUE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>

namespace gw::collect {

enum class MetricType { kGauge, kCounter };

struct Family {
  std::string_view name;  // Prometheus name, including _total for counters
  MetricType type;
  std::string_view unit;  // OpenMetrics unit ("" when dimensionless or a count)
  std::string_view help;
  std::string_view source;  // the NVML call(s) it comes from
};

// X(family id, name, type, unit, help, source)
#define GW_DEVICE_FAMILIES(X)                                                                      \
  X(Up, "gpu_up", kGauge, "",                                                                      \
    "1 if the GPU answered NVML in the last cycle, 0 if it is lost "                               \
    "or every read failed.",                                                                       \
    "every call; GPU_IS_LOST")                                                                     \
  X(Utilization, "gpu_utilization_ratio", kGauge, "ratio",                                         \
    "Fraction of the last sample period in which a kernel ran.",                                   \
    "nvmlDeviceGetUtilizationRates.gpu")                                                           \
  X(MemoryUtilization, "gpu_memory_utilization_ratio", kGauge, "ratio",                            \
    "Fraction of the last sample period in which device memory was read or written.",              \
    "nvmlDeviceGetUtilizationRates.memory")                                                        \
  X(EncoderUtilization, "gpu_encoder_utilization_ratio", kGauge, "ratio",                          \
    "Video encoder utilization.", "nvmlDeviceGetEncoderUtilization")                               \
  X(DecoderUtilization, "gpu_decoder_utilization_ratio", kGauge, "ratio",                          \
    "Video decoder utilization.", "nvmlDeviceGetDecoderUtilization")                               \
  X(UtilizationPeak, "gpu_utilization_peak_ratio", kGauge, "ratio",                                \
    "Highest GPU utilization in NVML's sample buffer since the previous cycle.",                   \
    "nvmlDeviceGetSamples(GPU_UTILIZATION_SAMPLES)")                                               \
  X(MemoryUtilizationPeak, "gpu_memory_utilization_peak_ratio", kGauge, "ratio",                   \
    "Highest memory-controller utilization in NVML's sample buffer since the previous cycle.",     \
    "nvmlDeviceGetSamples(MEMORY_UTILIZATION_SAMPLES)")                                            \
  X(PowerPeak, "gpu_power_peak_watts", kGauge, "watts",                                            \
    "Highest power draw in NVML's sample buffer since the previous cycle.",                        \
    "nvmlDeviceGetSamples(TOTAL_POWER_SAMPLES)")                                                   \
  X(MemoryTotal, "gpu_memory_total_bytes", kGauge, "bytes", "Device memory, total.",               \
    "nvmlDeviceGetMemoryInfo_v2")                                                                  \
  X(MemoryUsed, "gpu_memory_used_bytes", kGauge, "bytes", "Device memory in use.",                 \
    "nvmlDeviceGetMemoryInfo_v2")                                                                  \
  X(MemoryFree, "gpu_memory_free_bytes", kGauge, "bytes", "Device memory free.",                   \
    "nvmlDeviceGetMemoryInfo_v2")                                                                  \
  X(MemoryReserved, "gpu_memory_reserved_bytes", kGauge, "bytes",                                  \
    "Device memory reserved by the driver and firmware.", "nvmlDeviceGetMemoryInfo_v2")            \
  X(MemoryUsedPeak, "gpu_memory_used_peak_bytes", kGauge, "bytes",                                 \
    "Highest memory in use seen since the previous cycle (sub-sampled between cycles).",           \
    "nvmlDeviceGetMemoryInfo_v2 every memory_peak_interval")                                       \
  X(Temperature, "gpu_temperature_celsius", kGauge, "celsius", "GPU die temperature.",             \
    "nvmlDeviceGetTemperature(GPU)")                                                               \
  X(MemoryTemperature, "gpu_memory_temperature_celsius", kGauge, "celsius", "HBM temperature.",    \
    "nvmlDeviceGetFieldValues(NVML_FI_DEV_MEMORY_TEMP)")                                           \
  X(TemperatureThreshold, "gpu_temperature_threshold_celsius", kGauge, "celsius",                  \
    "Temperature at which the driver slows the GPU (slowdown), shuts it down (shutdown), or "      \
    "the target maxima for GPU and memory.",                                                       \
    "nvmlDeviceGetTemperatureThreshold")                                                           \
  X(Power, "gpu_power_watts", kGauge, "watts", "Power draw (1 s average on Ampere and newer).",    \
    "nvmlDeviceGetPowerUsage")                                                                     \
  X(PowerLimit, "gpu_power_limit_watts", kGauge, "watts", "Enforced power limit.",                 \
    "nvmlDeviceGetEnforcedPowerLimit")                                                             \
  X(PowerDefaultLimit, "gpu_power_default_limit_watts", kGauge, "watts",                           \
    "Default power limit of the board.", "nvmlDeviceGetPowerManagementDefaultLimit")               \
  X(PowerMinLimit, "gpu_power_min_limit_watts", kGauge, "watts",                                   \
    "Lowest power limit that can be set.", "nvmlDeviceGetPowerManagementLimitConstraints")         \
  X(PowerMaxLimit, "gpu_power_max_limit_watts", kGauge, "watts",                                   \
    "Highest power limit that can be set.", "nvmlDeviceGetPowerManagementLimitConstraints")        \
  X(Energy, "gpu_energy_joules_total", kCounter, "joules",                                         \
    "Energy consumed since the driver was loaded.", "nvmlDeviceGetTotalEnergyConsumption")         \
  X(SmClock, "gpu_sm_clock_hertz", kGauge, "hertz", "SM clock.", "nvmlDeviceGetClockInfo(SM)")     \
  X(MemoryClock, "gpu_memory_clock_hertz", kGauge, "hertz", "Memory clock.",                       \
    "nvmlDeviceGetClockInfo(MEM)")                                                                 \
  X(SmClockMax, "gpu_sm_clock_max_hertz", kGauge, "hertz", "Highest SM clock.",                    \
    "nvmlDeviceGetMaxClockInfo(SM)")                                                               \
  X(MemoryClockMax, "gpu_memory_clock_max_hertz", kGauge, "hertz", "Highest memory clock.",        \
    "nvmlDeviceGetMaxClockInfo(MEM)")                                                              \
  X(ClockEventActive, "gpu_clock_event_active", kGauge, "",                                        \
    "1 while the clocks are held down for this reason (throttling), else 0.",                      \
    "nvmlDeviceGetCurrentClocksEventReasons")                                                      \
  X(ClockEventSeconds, "gpu_clock_event_seconds_total", kCounter, "seconds",                       \
    "Time the clocks were held down for this reason, integrated over collection cycles.",          \
    "nvmlDeviceGetCurrentClocksEventReasons")                                                      \
  X(PerformanceState, "gpu_performance_state", kGauge, "",                                         \
    "Performance state: 0 (P0, fastest) to 15 (P15, slowest).", "nvmlDeviceGetPerformanceState")   \
  X(FanSpeed, "gpu_fan_speed_ratio", kGauge, "ratio", "Fan speed as a fraction of its maximum.",   \
    "nvmlDeviceGetFanSpeed")                                                                       \
  X(EccEnabled, "gpu_ecc_enabled", kGauge, "", "1 if ECC is enabled.", "nvmlDeviceGetEccMode")     \
  X(EccErrors, "gpu_ecc_errors_total", kCounter, "",                                               \
    "ECC errors; scope volatile counts since the last reboot or reset, aggregate over the "        \
    "board's life.",                                                                               \
    "nvmlDeviceGetTotalEccErrors")                                                                 \
  X(RetiredPages, "gpu_retired_pages", kGauge, "", "Memory pages retired (pre-Ampere), by cause.", \
    "nvmlDeviceGetRetiredPages")                                                                   \
  X(RetiredPagesPending, "gpu_retired_pages_pending", kGauge, "",                                  \
    "1 if a page retirement waits for the next reset.", "nvmlDeviceGetRetiredPagesPendingStatus")  \
  X(RemappedRows, "gpu_remapped_rows", kGauge, "",                                                 \
    "Memory rows remapped (Ampere and newer), by the kind of error that caused it.",               \
    "nvmlDeviceGetRemappedRows")                                                                   \
  X(RemappedRowsPending, "gpu_remapped_rows_pending", kGauge, "",                                  \
    "1 if a row remap waits for the next reset.", "nvmlDeviceGetRemappedRows")                     \
  X(RemappedRowsFailure, "gpu_remapped_rows_failure", kGauge, "",                                  \
    "1 if a row remap failed (the GPU should be replaced).", "nvmlDeviceGetRemappedRows")          \
  X(PcieReplays, "gpu_pcie_replays_total", kCounter, "", "PCIe replays.",                          \
    "nvmlDeviceGetPcieReplayCounter")                                                              \
  X(PcieTx, "gpu_pcie_transmit_bytes_per_second", kGauge, "",                                      \
    "PCIe transmit throughput over NVML's 20 ms window.", "nvmlDeviceGetPcieThroughput(TX)")       \
  X(PcieRx, "gpu_pcie_receive_bytes_per_second", kGauge, "",                                       \
    "PCIe receive throughput over NVML's 20 ms window.", "nvmlDeviceGetPcieThroughput(RX)")        \
  X(Processes, "gpu_processes", kGauge, "", "Compute processes running on the GPU.",               \
    "nvmlDeviceGetComputeRunningProcesses_v3")                                                     \
  X(ProcessesMemory, "gpu_processes_memory_bytes", kGauge, "bytes",                                \
    "Device memory used by all compute processes.", "nvmlDeviceGetComputeRunningProcesses_v3")     \
  X(TemperatureMargin, "gpu_temperature_limit_margin_celsius", kGauge, "celsius",                  \
    "Degrees left below a temperature limit (T.Limit), as the driver reports it.",                 \
    "nvmlDeviceGetFieldValues(TEMPERATURE_*_TLIMIT)")                                              \
  X(GraphicsActive, "gpu_graphics_active_ratio", kGauge, "ratio",                                  \
    "Fraction of time the graphics or compute engine was busy (GPM).",                             \
    "nvmlGpmMetricsGet(GRAPHICS_UTIL)")                                                            \
  X(SmActive, "gpu_sm_active_ratio", kGauge, "ratio",                                              \
    "Fraction of SMs busy, averaged over the sample period (GPM): low while utilization is high "  \
    "means few SMs do the work.",                                                                  \
    "nvmlGpmMetricsGet(SM_UTIL)")                                                                  \
  X(SmOccupancy, "gpu_sm_occupancy_ratio", kGauge, "ratio",                                        \
    "Resident warps as a fraction of the SMs' maximum (GPM).", "nvmlGpmMetricsGet(SM_OCCUPANCY)")  \
  X(TensorActive, "gpu_tensor_active_ratio", kGauge, "ratio",                                      \
    "Fraction of time a tensor pipe was busy (GPM), any or by kind.",                              \
    "nvmlGpmMetricsGet(*_TENSOR_UTIL)")                                                            \
  X(PipeActive, "gpu_pipe_active_ratio", kGauge, "ratio",                                          \
    "Fraction of time an FP16, FP32, FP64 or integer pipe was busy (GPM).",                        \
    "nvmlGpmMetricsGet(FP16/FP32/FP64/INTEGER_UTIL)")                                              \
  X(DramActive, "gpu_dram_active_ratio", kGauge, "ratio",                                          \
    "Fraction of the device memory bandwidth used (GPM).", "nvmlGpmMetricsGet(DRAM_BW_UTIL)")      \
  X(NvlinkTxRate, "gpu_nvlink_transmit_bytes_per_second", kGauge, "",                              \
    "NVLink transmit throughput over all links (GPM).",                                            \
    "nvmlGpmMetricsGet(NVLINK_TOTAL_TX_PER_SEC)")                                                  \
  X(NvlinkRxRate, "gpu_nvlink_receive_bytes_per_second", kGauge, "",                               \
    "NVLink receive throughput over all links (GPM).",                                             \
    "nvmlGpmMetricsGet(NVLINK_TOTAL_RX_PER_SEC)")                                                  \
  X(NvlinkTxBytes, "gpu_nvlink_transmit_bytes_total", kCounter, "bytes",                           \
    "NVLink data transmitted over all links since the driver loaded.",                             \
    "nvmlDeviceGetFieldValues(NVLINK_THROUGHPUT_DATA_TX)")                                         \
  X(NvlinkRxBytes, "gpu_nvlink_receive_bytes_total", kCounter, "bytes",                            \
    "NVLink data received over all links since the driver loaded.",                                \
    "nvmlDeviceGetFieldValues(NVLINK_THROUGHPUT_DATA_RX)")                                         \
  X(NvlinkLinks, "gpu_nvlink_links", kGauge, "", "NVLink links the GPU has.",                      \
    "nvmlDeviceGetFieldValues(NVLINK_LINK_COUNT)")                                                 \
  X(NvlinkLinksDown, "gpu_nvlink_links_down", kGauge, "",                                          \
    "NVLink links that are not active (gpu_nvlink_link_up names them).",                           \
    "nvmlDeviceGetFieldValues(NVLINK_GET_STATE)")                                                  \
  X(NvlinkErrors, "gpu_nvlink_errors_total", kCounter, "",                                         \
    "NVLink errors over all links, by kind, since the driver loaded.",                             \
    "nvmlDeviceGetFieldValues(NVLINK_*_ERROR_COUNT_TOTAL)")                                        \
  X(MigEnabled, "gpu_mig_enabled", kGauge, "",                                                     \
    "1 if MIG mode is on; state=\"pending\" is the mode after the next reset.",                    \
    "nvmlDeviceGetMigMode")                                                                        \
  X(MigInstances, "gpu_mig_instances", kGauge, "", "MIG devices on the GPU.",                      \
    "nvmlDeviceGetMigDeviceHandleByIndex")

enum class FamilyId : uint8_t {
#define GW_FAMILY_ENUM(id, ...) k##id,
  GW_DEVICE_FAMILIES(GW_FAMILY_ENUM)
#undef GW_FAMILY_ENUM
      kCount
};
inline constexpr size_t kFamilyCount = static_cast<size_t>(FamilyId::kCount);

extern const std::array<Family, kFamilyCount> kFamilies;

// Clock-event reasons, in bit order, with the label value and the words a person reads.
struct ClockEventReason {
  uint64_t bit;
  std::string_view label;        // gpu_clock_event_active{reason="sw_power_cap"}
  std::string_view description;  // "power cap"
  bool is_throttle;              // slows work down (idle and app settings do not count)
};
inline constexpr std::array<ClockEventReason, 9> kClockEventReasons = {{
    {0x001, "gpu_idle", "GPU idle", false},
    {0x002, "applications_clocks_setting", "application clocks setting", false},
    {0x004, "sw_power_cap", "power cap", true},
    {0x008, "hw_slowdown", "HW slowdown", true},
    {0x010, "sync_boost", "sync boost", false},
    {0x020, "sw_thermal_slowdown", "SW thermal slowdown", true},
    {0x040, "hw_thermal_slowdown", "HW thermal slowdown", true},
    {0x080, "hw_power_brake_slowdown", "HW power brake slowdown", true},
    {0x100, "display_clock_setting", "display clock setting", false},
}};

// Slots: one value per GPU each. X(slot id, family id, extra labels in exposition syntax).
#define GW_DEVICE_SLOTS(X)                                                          \
  X(Up, Up, "")                                                                     \
  X(Utilization, Utilization, "")                                                   \
  X(MemoryUtilization, MemoryUtilization, "")                                       \
  X(EncoderUtilization, EncoderUtilization, "")                                     \
  X(DecoderUtilization, DecoderUtilization, "")                                     \
  X(UtilizationPeak, UtilizationPeak, "")                                           \
  X(MemoryUtilizationPeak, MemoryUtilizationPeak, "")                               \
  X(PowerPeak, PowerPeak, "")                                                       \
  X(MemoryTotal, MemoryTotal, "")                                                   \
  X(MemoryUsed, MemoryUsed, "")                                                     \
  X(MemoryFree, MemoryFree, "")                                                     \
  X(MemoryReserved, MemoryReserved, "")                                             \
  X(MemoryUsedPeak, MemoryUsedPeak, "")                                             \
  X(Temperature, Temperature, "")                                                   \
  X(MemoryTemperature, MemoryTemperature, "")                                       \
  X(ThresholdShutdown, TemperatureThreshold, "threshold=\"shutdown\"")              \
  X(ThresholdSlowdown, TemperatureThreshold, "threshold=\"slowdown\"")              \
  X(ThresholdGpuMax, TemperatureThreshold, "threshold=\"gpu_max\"")                 \
  X(ThresholdMemoryMax, TemperatureThreshold, "threshold=\"memory_max\"")           \
  X(Power, Power, "")                                                               \
  X(PowerLimit, PowerLimit, "")                                                     \
  X(PowerDefaultLimit, PowerDefaultLimit, "")                                       \
  X(PowerMinLimit, PowerMinLimit, "")                                               \
  X(PowerMaxLimit, PowerMaxLimit, "")                                               \
  X(Energy, Energy, "")                                                             \
  X(SmClock, SmClock, "")                                                           \
  X(MemoryClock, MemoryClock, "")                                                   \
  X(SmClockMax, SmClockMax, "")                                                     \
  X(MemoryClockMax, MemoryClockMax, "")                                             \
  X(EventGpuIdle, ClockEventActive, "reason=\"gpu_idle\"")                          \
  X(EventAppClocks, ClockEventActive, "reason=\"applications_clocks_setting\"")     \
  X(EventSwPowerCap, ClockEventActive, "reason=\"sw_power_cap\"")                   \
  X(EventHwSlowdown, ClockEventActive, "reason=\"hw_slowdown\"")                    \
  X(EventSyncBoost, ClockEventActive, "reason=\"sync_boost\"")                      \
  X(EventSwThermal, ClockEventActive, "reason=\"sw_thermal_slowdown\"")             \
  X(EventHwThermal, ClockEventActive, "reason=\"hw_thermal_slowdown\"")             \
  X(EventHwPowerBrake, ClockEventActive, "reason=\"hw_power_brake_slowdown\"")      \
  X(EventDisplayClock, ClockEventActive, "reason=\"display_clock_setting\"")        \
  X(SecondsGpuIdle, ClockEventSeconds, "reason=\"gpu_idle\"")                       \
  X(SecondsAppClocks, ClockEventSeconds, "reason=\"applications_clocks_setting\"")  \
  X(SecondsSwPowerCap, ClockEventSeconds, "reason=\"sw_power_cap\"")                \
  X(SecondsHwSlowdown, ClockEventSeconds, "reason=\"hw_slowdown\"")                 \
  X(SecondsSyncBoost, ClockEventSeconds, "reason=\"sync_boost\"")                   \
  X(SecondsSwThermal, ClockEventSeconds, "reason=\"sw_thermal_slowdown\"")          \
  X(SecondsHwThermal, ClockEventSeconds, "reason=\"hw_thermal_slowdown\"")          \
  X(SecondsHwPowerBrake, ClockEventSeconds, "reason=\"hw_power_brake_slowdown\"")   \
  X(SecondsDisplayClock, ClockEventSeconds, "reason=\"display_clock_setting\"")     \
  X(PerformanceState, PerformanceState, "")                                         \
  X(FanSpeed, FanSpeed, "")                                                         \
  X(EccEnabled, EccEnabled, "")                                                     \
  X(EccCorrectedVolatile, EccErrors, "type=\"corrected\",scope=\"volatile\"")       \
  X(EccUncorrectedVolatile, EccErrors, "type=\"uncorrected\",scope=\"volatile\"")   \
  X(EccCorrectedAggregate, EccErrors, "type=\"corrected\",scope=\"aggregate\"")     \
  X(EccUncorrectedAggregate, EccErrors, "type=\"uncorrected\",scope=\"aggregate\"") \
  X(RetiredSingleBit, RetiredPages, "cause=\"multiple_single_bit\"")                \
  X(RetiredDoubleBit, RetiredPages, "cause=\"double_bit\"")                         \
  X(RetiredPending, RetiredPagesPending, "")                                        \
  X(RemappedCorrectable, RemappedRows, "type=\"correctable\"")                      \
  X(RemappedUncorrectable, RemappedRows, "type=\"uncorrectable\"")                  \
  X(RemappedPending, RemappedRowsPending, "")                                       \
  X(RemappedFailure, RemappedRowsFailure, "")                                       \
  X(PcieReplays, PcieReplays, "")                                                   \
  X(PcieTx, PcieTx, "")                                                             \
  X(PcieRx, PcieRx, "")                                                             \
  X(Processes, Processes, "")                                                       \
  X(ProcessesMemory, ProcessesMemory, "")                                           \
  X(MarginShutdown, TemperatureMargin, "threshold=\"shutdown\"")                    \
  X(MarginSlowdown, TemperatureMargin, "threshold=\"slowdown\"")                    \
  X(MarginMemoryMax, TemperatureMargin, "threshold=\"memory_max\"")                 \
  X(MarginGpuMax, TemperatureMargin, "threshold=\"gpu_max\"")                       \
  X(GraphicsActive, GraphicsActive, "")                                             \
  X(SmActive, SmActive, "")                                                         \
  X(SmOccupancy, SmOccupancy, "")                                                   \
  X(TensorAny, TensorActive, "pipe=\"any\"")                                        \
  X(TensorHmma, TensorActive, "pipe=\"hmma\"")                                      \
  X(TensorImma, TensorActive, "pipe=\"imma\"")                                      \
  X(TensorDmma, TensorActive, "pipe=\"dmma\"")                                      \
  X(TensorDfma, TensorActive, "pipe=\"dfma\"")                                      \
  X(PipeFp16, PipeActive, "pipe=\"fp16\"")                                          \
  X(PipeFp32, PipeActive, "pipe=\"fp32\"")                                          \
  X(PipeFp64, PipeActive, "pipe=\"fp64\"")                                          \
  X(PipeInteger, PipeActive, "pipe=\"integer\"")                                    \
  X(DramActive, DramActive, "")                                                     \
  X(NvlinkTxRate, NvlinkTxRate, "")                                                 \
  X(NvlinkRxRate, NvlinkRxRate, "")                                                 \
  X(NvlinkTxBytes, NvlinkTxBytes, "")                                               \
  X(NvlinkRxBytes, NvlinkRxBytes, "")                                               \
  X(NvlinkLinks, NvlinkLinks, "")                                                   \
  X(NvlinkLinksDown, NvlinkLinksDown, "")                                           \
  X(NvlinkReplayErrors, NvlinkErrors, "type=\"replay\"")                            \
  X(NvlinkRecoveryErrors, NvlinkErrors, "type=\"recovery\"")                        \
  X(NvlinkCrcFlitErrors, NvlinkErrors, "type=\"crc_flit\"")                         \
  X(NvlinkCrcDataErrors, NvlinkErrors, "type=\"crc_data\"")                         \
  X(NvlinkEccDataErrors, NvlinkErrors, "type=\"ecc_data\"")                         \
  X(MigEnabledCurrent, MigEnabled, "state=\"current\"")                             \
  X(MigEnabledPending, MigEnabled, "state=\"pending\"")                             \
  X(MigInstances, MigInstances, "")

enum class Slot : uint8_t {
#define GW_SLOT_ENUM(id, ...) k##id,
  GW_DEVICE_SLOTS(GW_SLOT_ENUM)
#undef GW_SLOT_ENUM
      kCount
};
inline constexpr size_t kSlotCount = static_cast<size_t>(Slot::kCount);

struct SlotInfo {
  FamilyId family;
  std::string_view labels;  // extra labels, already in exposition syntax, or ""
};
extern const std::array<SlotInfo, kSlotCount> kSlots;

// The slots of the nine clock-event reasons, in kClockEventReasons order.
Slot ClockEventActiveSlot(size_t reason_index);
Slot ClockEventSecondsSlot(size_t reason_index);

// Families rendered from dynamic data (name, type, help), for docs and the catalogue test.
// Per MIG instance (labels gpu, uuid, mig_instance, mig_profile): gpu_mig_*, named apart from the
// gpu_* families so that a sum over gpu_* never counts an instance twice. Per NVLink link (labels
// gpu, uuid, link): gpu_nvlink_link_*.
#define GW_DYNAMIC_FAMILIES(X)                                                                    \
  X(Info, "gpu_info", kGauge, "",                                                                 \
    "GPU identity: name, serial, PCI bus id, driver, NVML and CUDA driver versions (value 1).",   \
    "nvmlDeviceGetName/Serial/PciInfo_v3, nvmlSystemGet*Version")                                 \
  X(Xid, "gpu_xid_errors_total", kCounter, "",                                                    \
    "XID errors reported by the driver, by XID code, since gpuwarden started.",                   \
    "nvmlEventSetWait_v2 (XidCriticalError)")                                                     \
  X(ProcessMemory, "gpu_process_memory_bytes", kGauge, "bytes",                                   \
    "Device memory used by one process (only with per_process_metrics: true).",                   \
    "nvmlDeviceGetComputeRunningProcesses_v3")                                                    \
  X(ProcessSm, "gpu_process_sm_utilization_ratio", kGauge, "ratio",                               \
    "SM utilization of one process (only with per_process_metrics: true).",                       \
    "nvmlDeviceGetProcessUtilization")                                                            \
  X(MigInfo, "gpu_mig_info", kGauge, "",                                                          \
    "One MIG instance: its MIG UUID and compute instance (value 1).",                             \
    "nvmlDeviceGetMigDeviceHandleByIndex, nvmlDeviceGetUUID/Name (MIG)")                          \
  X(MigSliceRatio, "gpu_mig_slice_ratio", kGauge, "ratio",                                        \
    "The instance's share of its GPU: compute slices / the GPU's maximum MIG device count.",      \
    "the MIG profile, nvmlDeviceGetMaxMigDeviceCount")                                            \
  X(MigMemoryTotal, "gpu_mig_memory_total_bytes", kGauge, "bytes", "MIG instance memory, total.", \
    "nvmlDeviceGetMemoryInfo (MIG)")                                                              \
  X(MigMemoryUsed, "gpu_mig_memory_used_bytes", kGauge, "bytes", "MIG instance memory in use.",   \
    "nvmlDeviceGetMemoryInfo (MIG)")                                                              \
  X(MigMemoryFree, "gpu_mig_memory_free_bytes", kGauge, "bytes", "MIG instance memory free.",     \
    "nvmlDeviceGetMemoryInfo (MIG)")                                                              \
  X(MigProcesses, "gpu_mig_processes", kGauge, "", "Compute processes in the MIG instance.",      \
    "nvmlDeviceGetComputeRunningProcesses (MIG)")                                                 \
  X(MigGraphicsActive, "gpu_mig_graphics_active_ratio", kGauge, "ratio",                          \
    "Fraction of time the instance's graphics or compute engine was busy (GPM).",                 \
    "nvmlGpmMigSampleGet, nvmlGpmMetricsGet(GRAPHICS_UTIL)")                                      \
  X(MigSmActive, "gpu_mig_sm_active_ratio", kGauge, "ratio",                                      \
    "Fraction of the instance's SMs busy (GPM).",                                                 \
    "nvmlGpmMigSampleGet, nvmlGpmMetricsGet(SM_UTIL)")                                            \
  X(MigSmOccupancy, "gpu_mig_sm_occupancy_ratio", kGauge, "ratio",                                \
    "Resident warps as a fraction of the instance's SMs' maximum (GPM).",                         \
    "nvmlGpmMigSampleGet, nvmlGpmMetricsGet(SM_OCCUPANCY)")                                       \
  X(MigTensorActive, "gpu_mig_tensor_active_ratio", kGauge, "ratio",                              \
    "Fraction of time a tensor pipe of the instance was busy (GPM), any or by kind.",             \
    "nvmlGpmMigSampleGet, nvmlGpmMetricsGet(*_TENSOR_UTIL)")                                      \
  X(MigPipeActive, "gpu_mig_pipe_active_ratio", kGauge, "ratio",                                  \
    "Fraction of time an FP16, FP32, FP64 or integer pipe of the instance was busy (GPM).",       \
    "nvmlGpmMigSampleGet, nvmlGpmMetricsGet(FP16/FP32/FP64/INTEGER_UTIL)")                        \
  X(MigDramActive, "gpu_mig_dram_active_ratio", kGauge, "ratio",                                  \
    "Fraction of the instance's memory bandwidth used (GPM).",                                    \
    "nvmlGpmMigSampleGet, nvmlGpmMetricsGet(DRAM_BW_UTIL)")                                       \
  X(NvlinkLinkUp, "gpu_nvlink_link_up", kGauge, "", "1 if the NVLink link is active, 0 if down.", \
    "nvmlDeviceGetFieldValues(NVLINK_GET_STATE)")                                                 \
  X(NvlinkLinkErrors, "gpu_nvlink_link_errors_total", kCounter, "",                               \
    "Errors on one NVLink link, by kind, since the driver loaded.",                               \
    "nvmlDeviceGetFieldValues(NVLINK_ERROR_DL_REPLAY/RECOVERY/CRC)")                              \
  X(NvlinkLinkTxRate, "gpu_nvlink_link_transmit_bytes_per_second", kGauge, "",                    \
    "Transmit throughput of one NVLink link (GPM, links 0-17).",                                  \
    "nvmlGpmMetricsGet(NVLINK_Ln_TX_PER_SEC)")                                                    \
  X(NvlinkLinkRxRate, "gpu_nvlink_link_receive_bytes_per_second", kGauge, "",                     \
    "Receive throughput of one NVLink link (GPM, links 0-17).",                                   \
    "nvmlGpmMetricsGet(NVLINK_Ln_RX_PER_SEC)")                                                    \
  X(UtilizationPeakWindow, "gpu_utilization_peak_window_ratio", kGauge, "ratio",                  \
    "Highest GPU utilization of the collection cycles in the last collect.peak_window.",          \
    "gpu_utilization_peak_ratio, trailing maximum")                                               \
  X(MemoryUtilizationPeakWindow, "gpu_memory_utilization_peak_window_ratio", kGauge, "ratio",     \
    "Highest memory-controller utilization of the collection cycles in the last "                 \
    "collect.peak_window.",                                                                       \
    "gpu_memory_utilization_peak_ratio, trailing maximum")                                        \
  X(PowerPeakWindow, "gpu_power_peak_window_watts", kGauge, "watts",                              \
    "Highest power draw of the collection cycles in the last collect.peak_window.",               \
    "gpu_power_peak_watts, trailing maximum")                                                     \
  X(MemoryUsedPeakWindow, "gpu_memory_used_peak_window_bytes", kGauge, "bytes",                   \
    "Highest memory in use of the collection cycles in the last collect.peak_window.",            \
    "gpu_memory_used_peak_bytes, trailing maximum")

enum class Dynamic : uint8_t {
#define GW_DYNAMIC_ENUM(id, ...) k##id,
  GW_DYNAMIC_FAMILIES(GW_DYNAMIC_ENUM)
#undef GW_DYNAMIC_ENUM
      kCount
};
inline constexpr size_t kDynamicCount = static_cast<size_t>(Dynamic::kCount);
extern const std::array<Family, kDynamicCount> kDynamicFamilies;
inline const Family& DynamicFamily(Dynamic d) {
  return kDynamicFamilies[static_cast<size_t>(d)];
}

// The per-MIG-instance family of each GPU-level GPM family (gpu_sm_active_ratio →
// gpu_mig_sm_active_ratio); GPM signals without one (PCIe, NVLink) are per GPU only.
inline constexpr std::array<std::pair<FamilyId, Dynamic>, 6> kMigGpmFamilies = {{
    {FamilyId::kGraphicsActive, Dynamic::kMigGraphicsActive},
    {FamilyId::kSmActive, Dynamic::kMigSmActive},
    {FamilyId::kSmOccupancy, Dynamic::kMigSmOccupancy},
    {FamilyId::kTensorActive, Dynamic::kMigTensorActive},
    {FamilyId::kPipeActive, Dynamic::kMigPipeActive},
    {FamilyId::kDramActive, Dynamic::kMigDramActive},
}};

// The trailing-window peaks (collect/peak_window.h, docs/metrics.md "Peaks over a window"):
// each per-cycle peak slot and the /metrics-only family of its maximum over collect.peak_window.
// They are not catalogue slots, so the store (which records every cycle's peak already) and
// make_dataset leave them out.
inline constexpr size_t kPeakWindowCount = 4;
inline constexpr std::array<std::pair<Slot, Dynamic>, kPeakWindowCount> kPeakWindows = {{
    {Slot::kUtilizationPeak, Dynamic::kUtilizationPeakWindow},
    {Slot::kMemoryUtilizationPeak, Dynamic::kMemoryUtilizationPeakWindow},
    {Slot::kPowerPeak, Dynamic::kPowerPeakWindow},
    {Slot::kMemoryUsedPeak, Dynamic::kMemoryUsedPeakWindow},
}};

// What an XID means and what to do about it (docs/nvml-notes.md, "Events and XIDs"); "" if unknown.
std::string_view XidMeaning(unsigned xid);
std::string_view XidAction(unsigned xid);

}  // namespace gw::collect

#endif  // GPUWARDEN_COLLECT_CATALOGUE_H_
