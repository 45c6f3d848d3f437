// nvml/device.h — typed reads of one GPU.
//
// Every read returns `Result<T>`: the value, or the nvmlReturn_t that explains its absence.
// NOT_SUPPORTED and FUNCTION_NOT_FOUND (the library lacks the symbol) mean "this GPU or driver
// has no such field": callers leave the series out rather than report 0. GPU_IS_LOST means the
// GPU fell off the bus. No method throws, allocates in steady state (except the string reads of
// identity, done once), or caches: each call is exactly one NVML call (the fallbacks try a
// second symbol only when the first is missing).
//
// Threading: a Device is a value (a handle and the function table); calls follow NVML's rules.
#ifndef GPUWARDEN_NVML_DEVICE_H_
#define GPUWARDEN_NVML_DEVICE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "nvml/abi.h"
#include "nvml/library.h"

namespace gw::nvml {

template <class T>
class Result {
 public:
  Result(T value) : value_(std::move(value)), status_(NVML_SUCCESS) {}  // NOLINT: implicit
  static Result Fail(nvmlReturn_t status) { return Result(status, 0); }

  bool ok() const { return status_ == NVML_SUCCESS; }
  nvmlReturn_t status() const { return status_; }
  // The field does not exist on this GPU/driver: leave the series out, it is not an error.
  bool unsupported() const {
    return status_ == NVML_ERROR_NOT_SUPPORTED || status_ == NVML_ERROR_FUNCTION_NOT_FOUND;
  }
  const T& value() const { return value_; }
  T value_or(T fallback) const { return ok() ? value_ : fallback; }

 private:
  Result(nvmlReturn_t status, int) : value_(), status_(status) {}
  T value_;
  nvmlReturn_t status_;
};

struct PciIdentity {
  std::string bus_id;          // "00000000:18:00.0"
  uint32_t pci_device_id = 0;  // device id << 16 | vendor 0x10DE
};

struct MemoryInfo {
  uint64_t total_bytes = 0, used_bytes = 0, free_bytes = 0;
  uint64_t reserved_bytes = 0;
  bool has_reserved = false;  // only the _v2 call reports reserved memory
};

struct TemperatureThresholds {
  // Absent thresholds are NaN-free: check the flags.
  unsigned shutdown_c = 0, slowdown_c = 0, gpu_max_c = 0, mem_max_c = 0;
  bool has_shutdown = false, has_slowdown = false, has_gpu_max = false, has_mem_max = false;
};

struct PowerLimitRange {
  unsigned min_mw = 0, max_mw = 0;
};

struct EccCounts {
  uint64_t corrected_volatile = 0, uncorrected_volatile = 0;
  uint64_t corrected_aggregate = 0, uncorrected_aggregate = 0;
};

struct RemappedRows {
  unsigned correctable = 0, uncorrectable = 0;
  bool pending = false, failure = false;
};

struct ProcessInfo {
  unsigned pid = 0;
  uint64_t used_memory_bytes = 0;
  bool memory_known = false;  // NVML_VALUE_NOT_AVAILABLE otherwise
  // The MIG instance the process runs in (from the _v2/_v3 entries); NVML_MIG_NO_INSTANCE
  // without MIG or from the v1 call.
  unsigned gpu_instance_id = NVML_MIG_NO_INSTANCE;
  unsigned compute_instance_id = NVML_MIG_NO_INSTANCE;
};

struct MigModes {
  bool current = false;  // MIG on now
  bool pending = false;  // MIG on after the next GPU reset
};

// A field value as a double, whatever its valueType.
double FieldAsDouble(const nvmlFieldValue_t& field);
// The same for a value of a known type (nvmlDeviceGetSamples).
double ValueAsDouble(nvmlValueType_t type, const nvmlValue_t& value);

// Peak and last of the samples NVML buffered since `since_us`; `newest_us` is the timestamp to
// pass next time. count == 0 means nothing new.
struct SampleWindow {
  double max = 0, last = 0;
  unsigned count = 0;
  unsigned long long newest_us = 0;
};

class Device {
 public:
  Device() = default;
  Device(const Api* api, nvmlDevice_t handle) : api_(api), handle_(handle) {}
  nvmlDevice_t handle() const { return handle_; }
  const Api* api() const { return api_; }

  // Identity (once per discovery).
  Result<std::string> Name() const;
  Result<std::string> Uuid() const;
  // The UUID into `buffer` (NUL-terminated) without allocating; the result is its length.
  Result<size_t> UuidInto(char* buffer, unsigned size) const;
  Result<std::string> Serial() const;
  Result<PciIdentity> Pci() const;  // _v3 → _v2
  Result<unsigned> Architecture() const;

  // Fast fields.
  Result<nvmlUtilization_t> Utilization() const;  // percent
  Result<MemoryInfo> Memory() const;              // _v2 (with the correct version value) → v1
  Result<unsigned> EncoderUtilization() const;    // percent
  Result<unsigned> DecoderUtilization() const;    // percent
  // nvmlDeviceGetTemperatureV (NVML 13) first; nvmlDeviceGetTemperature when the library lacks
  // it or refuses the versioned struct.
  Result<int> TemperatureC() const;
  Result<unsigned> FanSpeedPercent() const;
  Result<unsigned> PowerUsageMw() const;
  Result<unsigned> EnforcedPowerLimitMw() const;
  Result<uint64_t> TotalEnergyMj() const;
  Result<int> PerformanceState() const;  // 0..15, 32 = unknown
  Result<unsigned> ClockMhz(int clock_type) const;
  Result<uint64_t> ClocksEventReasons() const;  // EventReasons → ThrottleReasons
  // One value through nvmlDeviceGetFieldValues (e.g. NVML_FI_DEV_MEMORY_TEMP).
  Result<nvmlValue_t> FieldValue(unsigned field_id) const;
  // Many values in one nvmlDeviceGetFieldValues call: the caller fills fieldId and scopeId of
  // each entry; each entry's nvmlReturn says whether its value is good. The result is the
  // number of entries that succeeded, or the call's own failure.
  Result<unsigned> FieldValues(nvmlFieldValue_t* values, unsigned count) const;
  // Peak/last of the NVML sample buffer for `type` since `since_us`. `scratch` is reused
  // between calls so steady-state reads do not allocate.
  Result<SampleWindow> Samples(nvmlSamplingType_t type, unsigned long long since_us,
                               std::vector<nvmlSample_t>* scratch) const;

  // Static and slow fields.
  Result<TemperatureThresholds> Thresholds() const;
  Result<unsigned> DefaultPowerLimitMw() const;
  Result<PowerLimitRange> PowerLimitConstraints() const;
  Result<unsigned> MaxClockMhz(int clock_type) const;
  Result<uint64_t> SupportedClocksEventReasons() const;
  Result<bool> EccEnabled() const;
  Result<EccCounts> Ecc() const;
  Result<unsigned> RetiredPages(int cause) const;  // count only
  Result<bool> RetiredPagesPending() const;
  Result<RemappedRows> Remapped() const;
  Result<unsigned> PcieReplays() const;
  Result<unsigned> PcieThroughputKBps(int counter) const;  // blocks ~20 ms in the driver
  // Compute processes into `out` (cleared, capacity reused): _v3 with stride detection (the
  // 535.43–535.86 drivers wrote 32-byte entries there), then _v2, then v1.
  Result<unsigned> ComputeProcesses(std::vector<ProcessInfo>* out) const;
  // Per-process SM utilization samples since `since_us` (percent), into `out`.
  Result<unsigned> ProcessUtilization(unsigned long long since_us,
                                      std::vector<nvmlProcessUtilizationSample_t>* out) const;

  // NVLink per-link calls: the fallback where field values are unavailable.
  Result<bool> NvLinkActive(unsigned link) const;
  Result<uint64_t> NvLinkErrorCounter(unsigned link, int counter) const;  // NVML_NVLINK_ERROR_DL_*

  // MIG (Ampere and Hopper datacenter GPUs). On a MIG device handle (from MigDeviceByIndex) the
  // identity reads, Memory() and ComputeProcesses() answer for that instance.
  Result<MigModes> MigMode() const;
  Result<unsigned> MaxMigDeviceCount() const;             // 7 on A100/H100/H200
  Result<Device> MigDeviceByIndex(unsigned index) const;  // NOT_FOUND: no device in that slot
  Result<unsigned> GpuInstanceId() const;                 // on a MIG device handle
  Result<unsigned> ComputeInstanceId() const;             // on a MIG device handle

  // GPM (profiling counters): whether this GPU supports them (nvmlGpmQueryDeviceSupport).
  // Sampling is nvml::GpmSampler's (gpm.h).
  Result<bool> GpmSupported() const;

 private:
  const Api* api_ = nullptr;
  nvmlDevice_t handle_ = nullptr;
  // Scratch for the process list, grown once and reused.
  mutable std::vector<unsigned char> process_buffer_;
};

// System-wide reads: versions, GPU count, handles.
class System {
 public:
  explicit System(const Api* api) : api_(api) {}
  Result<std::string> DriverVersion() const;
  Result<std::string> NvmlVersion() const;
  Result<int> CudaDriverVersion() const;  // e.g. 12040 = 12.4
  // nvmlSystemGetProcessName into `out` (cut to size - 1 bytes, NUL-terminated); no allocation.
  Result<bool> ProcessName(unsigned pid, char* out, unsigned size) const;
  Result<unsigned> DeviceCount() const;                // _v2 → v1
  Result<Device> DeviceByIndex(unsigned index) const;  // _v2 → v1

 private:
  const Api* api_;
};

// The process-info stride the last _v3 call used (24 normally, 32 on the buggy drivers).
// Exposed for tests.
size_t DetectProcessStride(const unsigned char* buffer, unsigned count, size_t buffer_size);

}  // namespace gw::nvml

#endif  // GPUWARDEN_NVML_DEVICE_H_
