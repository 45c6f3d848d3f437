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
#include <string>
#include <utility>
#include <vector>

#include "collect/catalogue.h"

namespace gw::collect {

inline constexpr double kAbsent = std::numeric_limits<double>::quiet_NaN();
inline bool IsAbsent(double v) {
  return std::isnan(v);
}

struct ProcessSample {
  unsigned pid = 0;
  double memory_bytes = kAbsent;
  double sm_utilization_ratio = kAbsent;
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
  X(ProcessUtilization, "nvmlDeviceGetProcessUtilization")

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
