// collect/snapshot.h — what the collector publishes after each cycle.
//
// A Snapshot is immutable once published: readers (the /metrics renderer, `gpuwarden snapshot`,
// later the store and the console) hold a shared_ptr<const Snapshot> and never see it change.
// The collector recycles snapshot objects no reader holds any more, so steady-state publishing
// does not allocate.
#ifndef GPUWARDEN_COLLECT_SNAPSHOT_H_
#define GPUWARDEN_COLLECT_SNAPSHOT_H_

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "collect/catalogue.h"
#include "nvml/abi.h"

namespace gw::collect {

inline constexpr double kAbsent = std::numeric_limits<double>::quiet_NaN();
inline bool IsAbsent(double v) {
  return std::isnan(v);
}

inline constexpr unsigned kNoMigInstance = 0xFFFFFFFFu;  // NVML_MIG_NO_INSTANCE

// Who a GPU process is, for people (collect/process_details.h fills it). Shared and never changed
// once published, so that copying a snapshot copies a pointer, not the strings.
struct ProcessDetails {
  std::string name;  // /proc/<pid>/comm, else the driver's (nvmlSystemGetProcessName); "" unknown
  std::string user;  // the owner's user name (the uid as text without one); "" unknown
  std::string command;  // /proc/<pid>/cmdline, arguments joined by spaces, cut at 256 bytes
  // The job the task layer attributed it to: never set by the collector; a snapshot read back
  // from an agent's JSON (top --url) carries the agent's "job_id".
  std::string job_id;
};

struct ProcessSample {
  unsigned pid = 0;
  double memory_bytes = kAbsent;
  double sm_utilization_ratio = kAbsent;
  unsigned gpu_instance_id = kNoMigInstance;  // the MIG instance it runs in, if any
  // Filled by the collector's process details (collect/process_details.h); null / absent where
  // unknown (not read yet, or the pid is not in this machine's /proc).
  std::shared_ptr<const ProcessDetails> details;
  double host_cpu_ratio = kAbsent;     // host CPU cores it used lately (1.0 = one whole core)
  double host_memory_bytes = kAbsent;  // resident set size
};

// Profiling signals from NVML GPM (docs/metrics.md, "Profiling"), per GPU and per MIG instance.
// Ratios are 0-1; the *PerSecond ones are bytes per second. Absent (NaN) where GPM is
// unsupported or no previous sample exists yet — never 0.
#define GW_GPM_SIGNALS(X)                                       \
  X(GraphicsActive, NVML_GPM_METRIC_GRAPHICS_UTIL)              \
  X(SmActive, NVML_GPM_METRIC_SM_UTIL)                          \
  X(SmOccupancy, NVML_GPM_METRIC_SM_OCCUPANCY)                  \
  X(TensorAny, NVML_GPM_METRIC_ANY_TENSOR_UTIL)                 \
  X(TensorHmma, NVML_GPM_METRIC_HMMA_TENSOR_UTIL)               \
  X(TensorImma, NVML_GPM_METRIC_IMMA_TENSOR_UTIL)               \
  X(TensorDmma, NVML_GPM_METRIC_DMMA_TENSOR_UTIL)               \
  X(TensorDfma, NVML_GPM_METRIC_DFMA_TENSOR_UTIL)               \
  X(Fp16, NVML_GPM_METRIC_FP16_UTIL)                            \
  X(Fp32, NVML_GPM_METRIC_FP32_UTIL)                            \
  X(Fp64, NVML_GPM_METRIC_FP64_UTIL)                            \
  X(Integer, NVML_GPM_METRIC_INTEGER_UTIL)                      \
  X(DramActive, NVML_GPM_METRIC_DRAM_BW_UTIL)                   \
  X(PcieTxPerSecond, NVML_GPM_METRIC_PCIE_TX_PER_SEC)           \
  X(PcieRxPerSecond, NVML_GPM_METRIC_PCIE_RX_PER_SEC)           \
  X(NvlinkTxPerSecond, NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC) \
  X(NvlinkRxPerSecond, NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC)

enum class Gpm : uint8_t {
#define GW_GPM_ENUM(id, metric) k##id,
  GW_GPM_SIGNALS(GW_GPM_ENUM)
#undef GW_GPM_ENUM
      kCount
};
inline constexpr size_t kGpmCount = static_cast<size_t>(Gpm::kCount);
using GpmValues = std::array<double, kGpmCount>;  // indexed by Gpm; kAbsent where none

// The GPU-level catalogue slot of each GPM signal (its family and pipe label), in Gpm order.
inline constexpr std::array<Slot, kGpmCount> kGpmSlots = {
    Slot::kGraphicsActive, Slot::kSmActive,   Slot::kSmOccupancy, Slot::kTensorAny,
    Slot::kTensorHmma,     Slot::kTensorImma, Slot::kTensorDmma,  Slot::kTensorDfma,
    Slot::kPipeFp16,       Slot::kPipeFp32,   Slot::kPipeFp64,    Slot::kPipeInteger,
    Slot::kDramActive,     Slot::kPcieTx,     Slot::kPcieRx,      Slot::kNvlinkTxRate,
    Slot::kNvlinkRxRate};
inline constexpr Slot GpmSlot(Gpm g) {
  return kGpmSlots[static_cast<size_t>(g)];
}
static_assert(GpmSlot(Gpm::kSmActive) == Slot::kSmActive);
static_assert(GpmSlot(Gpm::kInteger) == Slot::kPipeInteger);
static_assert(GpmSlot(Gpm::kDramActive) == Slot::kDramActive);
static_assert(GpmSlot(Gpm::kNvlinkRxPerSecond) == Slot::kNvlinkRxRate);

// One MIG device (a GPU instance with its compute instance) of a MIG-enabled GPU.
struct MigInstanceSnapshot {
  unsigned gpu_instance_id = 0;  // `mig_instance` label
  unsigned compute_instance_id = 0;
  std::string uuid;     // "MIG-…", what CUDA_VISIBLE_DEVICES may name
  std::string profile;  // "1g.10gb", parsed from the MIG device's name
  // The instance's share of its GPU for quotas and cost: compute slices / the GPU's maximum MIG
  // device count (docs/metrics.md, "MIG"). 1g on an H100 = 1/7.
  double slice_ratio = kAbsent;
  double memory_total_bytes = kAbsent, memory_used_bytes = kAbsent, memory_free_bytes = kAbsent;
  GpmValues gpm;                         // per-instance profiling (nvmlGpmMigSampleGet)
  std::vector<ProcessSample> processes;  // filled on the slow interval
  // Preformatted: gpu="0",uuid="GPU-…",mig_instance="3",mig_profile="1g.10gb" (escaped).
  std::string label_text;

  MigInstanceSnapshot() { gpm.fill(kAbsent); }
  double value(Gpm g) const { return gpm[static_cast<size_t>(g)]; }
};

// One NVLink link of a GPU. Counters are the driver's, since the driver loaded.
struct NvLinkSnapshot {
  unsigned link = 0;
  double up = kAbsent;  // 1 active, 0 down (NVML_FI_DEV_NVLINK_GET_STATE)
  double replay_errors = kAbsent, recovery_errors = kAbsent, crc_errors = kAbsent;
  double tx_bytes_per_second = kAbsent, rx_bytes_per_second = kAbsent;  // GPM, links 0-17
};

struct GpuIdentity {
  unsigned index = 0;
  std::string uuid, name, serial, pci_bus_id;
  unsigned architecture = 0;  // NVML_DEVICE_ARCH_*, 0 if unknown
  // Preformatted label text for device series: gpu="0",uuid="GPU-…" (escaped).
  std::string label_text;
};

// The NVML calls gpuwarden makes, for per-call self-metrics and the watchdog.
#define GW_NVML_CALLS(X)                                         \
  X(Utilization, "nvmlDeviceGetUtilizationRates")                \
  X(Memory, "nvmlDeviceGetMemoryInfo")                           \
  X(Encoder, "nvmlDeviceGetEncoderUtilization")                  \
  X(Decoder, "nvmlDeviceGetDecoderUtilization")                  \
  X(Temperature, "nvmlDeviceGetTemperature")                     \
  X(MemoryTemperature, "nvmlDeviceGetFieldValues")               \
  X(Power, "nvmlDeviceGetPowerUsage")                            \
  X(PowerLimit, "nvmlDeviceGetEnforcedPowerLimit")               \
  X(Energy, "nvmlDeviceGetTotalEnergyConsumption")               \
  X(Clocks, "nvmlDeviceGetClockInfo")                            \
  X(ClockEvents, "nvmlDeviceGetCurrentClocksEventReasons")       \
  X(PerformanceState, "nvmlDeviceGetPerformanceState")           \
  X(Fan, "nvmlDeviceGetFanSpeed")                                \
  X(Samples, "nvmlDeviceGetSamples")                             \
  X(Thresholds, "nvmlDeviceGetTemperatureThreshold")             \
  X(PowerLimits, "nvmlDeviceGetPowerManagementLimitConstraints") \
  X(MaxClocks, "nvmlDeviceGetMaxClockInfo")                      \
  X(EccMode, "nvmlDeviceGetEccMode")                             \
  X(EccCounts, "nvmlDeviceGetTotalEccErrors")                    \
  X(RetiredPages, "nvmlDeviceGetRetiredPages")                   \
  X(RemappedRows, "nvmlDeviceGetRemappedRows")                   \
  X(PcieReplays, "nvmlDeviceGetPcieReplayCounter")               \
  X(PcieThroughput, "nvmlDeviceGetPcieThroughput")               \
  X(Processes, "nvmlDeviceGetComputeRunningProcesses")           \
  X(ProcessUtilization, "nvmlDeviceGetProcessUtilization")       \
  X(TemperatureLimits, "nvmlDeviceGetFieldValues(TLIMIT)")       \
  X(GpmSample, "nvmlGpmSampleGet")                               \
  X(GpmMigSample, "nvmlGpmMigSampleGet")                         \
  X(GpmMetrics, "nvmlGpmMetricsGet")                             \
  X(MigMode, "nvmlDeviceGetMigMode")                             \
  X(MigDevices, "nvmlDeviceGetMigDeviceHandleByIndex")           \
  X(MigMemory, "nvmlDeviceGetMemoryInfo(MIG)")                   \
  X(MigProcesses, "nvmlDeviceGetComputeRunningProcesses(MIG)")   \
  X(NvLinkFields, "nvmlDeviceGetFieldValues(NVLINK)")            \
  X(NvLinkLinks, "nvmlDeviceGetNvLinkState/ErrorCounter")

enum class Call : uint8_t {
#define GW_CALL_ENUM(id, name) k##id,
  GW_NVML_CALLS(GW_CALL_ENUM)
#undef GW_CALL_ENUM
      kCount
};
inline constexpr size_t kCallCount = static_cast<size_t>(Call::kCount);
std::string_view CallName(Call call);

struct GpuSnapshot {
  GpuIdentity identity;
  std::array<double, kSlotCount> values;  // kAbsent where there is no value
  bool lost = false;                      // GPU_IS_LOST seen: fell off the bus
  int last_error_code = 0;                // last failing nvmlReturn_t of any call, 0 if none
  uint64_t supported_clock_events = 0;    // mask; 0 if unknown (then all are reported)
  std::vector<std::pair<unsigned, uint64_t>> xid_counts;  // (xid, count), sorted by xid
  std::vector<ProcessSample> processes;                   // filled on the slow interval
  std::array<bool, kCallCount> hung{};                    // the watchdog quarantined this call
  // The per-cycle peaks' maxima over collect.peak_window, in kPeakWindows order (/metrics only;
  // collect/peak_window.h); kAbsent where the per-cycle peak is absent or the window is off.
  std::array<double, kPeakWindowCount> peak_window{kAbsent, kAbsent, kAbsent, kAbsent};
  // GPM signals of the whole GPU are catalogue slots (Slot::kSmActive …); these say whether GPM
  // runs here at all (nvmlGpmQueryDeviceSupport), so "absent" can be told from "not yet".
  bool gpm_supported = false;
  // MIG instances, in GPU-instance-id order; empty when MIG is off. Re-enumerated on the slow
  // interval and on a MigConfigChange event.
  std::vector<MigInstanceSnapshot> mig;
  // NVLink links 0..gpu_nvlink_links-1; empty on GPUs without NVLink.
  std::vector<NvLinkSnapshot> nvlinks;

  double value(Slot s) const { return values[static_cast<size_t>(s)]; }
};

struct CallStats {
  uint64_t calls = 0;
  uint64_t errors = 0;       // any status but SUCCESS, NOT_SUPPORTED, FUNCTION_NOT_FOUND
  double seconds_total = 0;  // time spent inside NVML
  double max_seconds = 0;    // slowest single call since start
  // Errors by NVML code, small and sorted: (code, count).
  std::vector<std::pair<int, uint64_t>> errors_by_code;
};

struct CollectorStats {
  bool nvml_up = false;
  std::string nvml_error;  // why NVML is unavailable, "" if it is up
  std::string driver_version, nvml_version, cuda_driver_version, library_path;
  uint64_t fast_cycles = 0, slow_cycles = 0;
  double last_fast_cycle_seconds = kAbsent, last_slow_cycle_seconds = kAbsent;
  double last_success_unix_seconds = kAbsent;
  uint64_t watchdog_trips = 0;
  uint64_t xid_events = 0;
  std::array<CallStats, kCallCount> calls{};
};

struct Snapshot {
  uint64_t generation = 0;        // increases with every publish
  double taken_unix_seconds = 0;  // wall clock of the cycle (simulated time in stepped mode)
  std::vector<GpuSnapshot> gpus;
  CollectorStats stats;
};

}  // namespace gw::collect

#endif  // GPUWARDEN_COLLECT_SNAPSHOT_H_
