#include "nvml/device.h"

#include <algorithm>
#include <cstring>

namespace gw::nvml {

namespace {

constexpr nvmlReturn_t kMissing = NVML_ERROR_FUNCTION_NOT_FOUND;
constexpr unsigned char kStrideSentinel = 0xA5;
constexpr size_t kWideEntry = 32;  // what the buggy _v3 drivers wrote
constexpr size_t kEntry = sizeof(nvmlProcessInfo_v2_t);

template <class Fn>
Result<std::string> ReadString(Fn fn, nvmlDevice_t handle, unsigned size) {
  if (fn == nullptr) return Result<std::string>::Fail(kMissing);
  char buffer[128] = {0};
  nvmlReturn_t rc = fn(handle, buffer, std::min<unsigned>(size, sizeof buffer - 1));
  if (rc != NVML_SUCCESS) return Result<std::string>::Fail(rc);
  buffer[sizeof buffer - 1] = '\0';
  return std::string(buffer);
}

template <class T, class Fn, class... Args>
Result<T> ReadScalar(Fn fn, nvmlDevice_t handle, Args... args) {
  if (fn == nullptr) return Result<T>::Fail(kMissing);
  T value{};
  nvmlReturn_t rc = fn(handle, args..., &value);
  if (rc != NVML_SUCCESS) return Result<T>::Fail(rc);
  return value;
}

}  // namespace

double ValueAsDouble(nvmlValueType_t type, const nvmlValue_t& v) {
  switch (type) {
    case NVML_VALUE_TYPE_DOUBLE:
      return v.dVal;
    case NVML_VALUE_TYPE_UNSIGNED_INT:
      return v.uiVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG:
      return static_cast<double>(v.ulVal);
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
      return static_cast<double>(v.ullVal);
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
      return static_cast<double>(v.sllVal);
    case NVML_VALUE_TYPE_SIGNED_INT:
      return v.siVal;
    case NVML_VALUE_TYPE_UNSIGNED_SHORT:
      return v.usVal;
    default:
      return v.uiVal;
  }
}

double FieldAsDouble(const nvmlFieldValue_t& field) {
  return ValueAsDouble(field.valueType, field.value);
}

Result<std::string> Device::Name() const {
  return ReadString(api_->nvmlDeviceGetName, handle_, NVML_DEVICE_NAME_V2_BUFFER_SIZE);
}
Result<std::string> Device::Uuid() const {
  return ReadString(api_->nvmlDeviceGetUUID, handle_, NVML_DEVICE_UUID_V2_BUFFER_SIZE);
}
Result<size_t> Device::UuidInto(char* buffer, unsigned size) const {
  if (api_->nvmlDeviceGetUUID == nullptr) return Result<size_t>::Fail(kMissing);
  if (size == 0) return Result<size_t>::Fail(NVML_ERROR_INSUFFICIENT_SIZE);
  buffer[0] = '\0';
  nvmlReturn_t rc = api_->nvmlDeviceGetUUID(handle_, buffer, size - 1);
  if (rc != NVML_SUCCESS) return Result<size_t>::Fail(rc);
  buffer[size - 1] = '\0';
  return std::strlen(buffer);
}
Result<std::string> Device::Serial() const {
  return ReadString(api_->nvmlDeviceGetSerial, handle_, NVML_DEVICE_SERIAL_BUFFER_SIZE);
}

Result<PciIdentity> Device::Pci() const {
  auto fn =
      api_->nvmlDeviceGetPciInfo_v3 ? api_->nvmlDeviceGetPciInfo_v3 : api_->nvmlDeviceGetPciInfo_v2;
  if (fn == nullptr) return Result<PciIdentity>::Fail(kMissing);
  nvmlPciInfo_t pci{};
  nvmlReturn_t rc = fn(handle_, &pci);
  if (rc != NVML_SUCCESS) return Result<PciIdentity>::Fail(rc);
  pci.busId[sizeof pci.busId - 1] = '\0';
  PciIdentity out;
  out.bus_id = pci.busId;
  out.pci_device_id = pci.pciDeviceId;
  return out;
}

Result<unsigned> Device::Architecture() const {
  return ReadScalar<unsigned>(api_->nvmlDeviceGetArchitecture, handle_);
}

Result<nvmlUtilization_t> Device::Utilization() const {
  return ReadScalar<nvmlUtilization_t>(api_->nvmlDeviceGetUtilizationRates, handle_);
}

Result<MemoryInfo> Device::Memory() const {
  MemoryInfo out;
  if (api_->nvmlDeviceGetMemoryInfo_v2 != nullptr) {
    nvmlMemory_v2_t m{};
    m.version = nvmlMemory_v2;  // 0x02000028, not 2: drivers reject the bare number
    nvmlReturn_t rc = api_->nvmlDeviceGetMemoryInfo_v2(handle_, &m);
    if (rc == NVML_SUCCESS) {
      out.total_bytes = m.total;
      out.used_bytes = m.used;
      out.free_bytes = m.free;
      out.reserved_bytes = m.reserved;
      out.has_reserved = true;
      return out;
    }
    // An old driver without the versioned struct answers FUNCTION_NOT_FOUND or
    // ARGUMENT_VERSION_MISMATCH: fall through to v1. Anything else is the GPU's answer.
    if (rc != NVML_ERROR_FUNCTION_NOT_FOUND && rc != NVML_ERROR_ARGUMENT_VERSION_MISMATCH &&
        rc != NVML_ERROR_NOT_SUPPORTED)
      return Result<MemoryInfo>::Fail(rc);
  }
  if (api_->nvmlDeviceGetMemoryInfo == nullptr) return Result<MemoryInfo>::Fail(kMissing);
  nvmlMemory_t m{};
  nvmlReturn_t rc = api_->nvmlDeviceGetMemoryInfo(handle_, &m);
  if (rc != NVML_SUCCESS) return Result<MemoryInfo>::Fail(rc);
  out.total_bytes = m.total;
  out.used_bytes = m.used;
  out.free_bytes = m.free;
  return out;
}

Result<unsigned> Device::EncoderUtilization() const {
  if (api_->nvmlDeviceGetEncoderUtilization == nullptr) return Result<unsigned>::Fail(kMissing);
  unsigned util = 0, period = 0;
  nvmlReturn_t rc = api_->nvmlDeviceGetEncoderUtilization(handle_, &util, &period);
  if (rc != NVML_SUCCESS) return Result<unsigned>::Fail(rc);
  return util;
}

Result<unsigned> Device::DecoderUtilization() const {
  if (api_->nvmlDeviceGetDecoderUtilization == nullptr) return Result<unsigned>::Fail(kMissing);
  unsigned util = 0, period = 0;
  nvmlReturn_t rc = api_->nvmlDeviceGetDecoderUtilization(handle_, &util, &period);
  if (rc != NVML_SUCCESS) return Result<unsigned>::Fail(rc);
  return util;
}

Result<int> Device::TemperatureC() const {
  if (api_->nvmlDeviceGetTemperatureV != nullptr) {
    nvmlTemperature_t t{};
    t.version = nvmlTemperature_v1;
    t.sensorType = NVML_TEMPERATURE_GPU;
    nvmlReturn_t rc = api_->nvmlDeviceGetTemperatureV(handle_, &t);
    if (rc == NVML_SUCCESS) return t.temperature;
    // A driver that exports the symbol but not this struct version, or answers for the old call
    // only: fall through. Anything else (GPU_IS_LOST, …) is the GPU's answer.
    if (rc != NVML_ERROR_FUNCTION_NOT_FOUND && rc != NVML_ERROR_ARGUMENT_VERSION_MISMATCH &&
        rc != NVML_ERROR_NOT_SUPPORTED)
      return Result<int>::Fail(rc);
  }
  auto r = ReadScalar<unsigned>(api_->nvmlDeviceGetTemperature, handle_,
                                static_cast<int>(NVML_TEMPERATURE_GPU));
  if (!r.ok()) return Result<int>::Fail(r.status());
  return static_cast<int>(r.value());
}
Result<unsigned> Device::FanSpeedPercent() const {
  return ReadScalar<unsigned>(api_->nvmlDeviceGetFanSpeed, handle_);
}
Result<unsigned> Device::PowerUsageMw() const {
  return ReadScalar<unsigned>(api_->nvmlDeviceGetPowerUsage, handle_);
}
Result<unsigned> Device::EnforcedPowerLimitMw() const {
  return ReadScalar<unsigned>(api_->nvmlDeviceGetEnforcedPowerLimit, handle_);
}
Result<uint64_t> Device::TotalEnergyMj() const {
  auto r = ReadScalar<unsigned long long>(api_->nvmlDeviceGetTotalEnergyConsumption, handle_);
  if (!r.ok()) return Result<uint64_t>::Fail(r.status());
  return static_cast<uint64_t>(r.value());
}
Result<int> Device::PerformanceState() const {
  return ReadScalar<int>(api_->nvmlDeviceGetPerformanceState, handle_);
}
Result<unsigned> Device::ClockMhz(int clock_type) const {
  return ReadScalar<unsigned>(api_->nvmlDeviceGetClockInfo, handle_, clock_type);
}
Result<unsigned> Device::MaxClockMhz(int clock_type) const {
  return ReadScalar<unsigned>(api_->nvmlDeviceGetMaxClockInfo, handle_, clock_type);
}

Result<uint64_t> Device::ClocksEventReasons() const {
  auto fn = api_->nvmlDeviceGetCurrentClocksEventReasons
                ? api_->nvmlDeviceGetCurrentClocksEventReasons
                : api_->nvmlDeviceGetCurrentClocksThrottleReasons;
  auto r = ReadScalar<unsigned long long>(fn, handle_);
  if (!r.ok()) return Result<uint64_t>::Fail(r.status());
  return static_cast<uint64_t>(r.value());
}

Result<uint64_t> Device::SupportedClocksEventReasons() const {
  auto fn = api_->nvmlDeviceGetSupportedClocksEventReasons
                ? api_->nvmlDeviceGetSupportedClocksEventReasons
                : api_->nvmlDeviceGetSupportedClocksThrottleReasons;
  auto r = ReadScalar<unsigned long long>(fn, handle_);
  if (!r.ok()) return Result<uint64_t>::Fail(r.status());
  return static_cast<uint64_t>(r.value());
}

Result<nvmlValue_t> Device::FieldValue(unsigned field_id) const {
  if (api_->nvmlDeviceGetFieldValues == nullptr) return Result<nvmlValue_t>::Fail(kMissing);
  nvmlFieldValue_t fv{};
  fv.fieldId = field_id;
  nvmlReturn_t rc = api_->nvmlDeviceGetFieldValues(handle_, 1, &fv);
  if (rc != NVML_SUCCESS) return Result<nvmlValue_t>::Fail(rc);
  if (fv.nvmlReturn != NVML_SUCCESS) return Result<nvmlValue_t>::Fail(fv.nvmlReturn);
  return fv.value;
}

Result<unsigned> Device::FieldValues(nvmlFieldValue_t* values, unsigned count) const {
  if (api_->nvmlDeviceGetFieldValues == nullptr) return Result<unsigned>::Fail(kMissing);
  nvmlReturn_t rc = api_->nvmlDeviceGetFieldValues(handle_, static_cast<int>(count), values);
  if (rc != NVML_SUCCESS) return Result<unsigned>::Fail(rc);
  unsigned good = 0;
  for (unsigned i = 0; i < count; ++i) good += values[i].nvmlReturn == NVML_SUCCESS ? 1 : 0;
  return good;
}

Result<SampleWindow> Device::Samples(nvmlSamplingType_t type, unsigned long long since_us,
                                     std::vector<nvmlSample_t>* scratch) const {
  if (api_->nvmlDeviceGetSamples == nullptr) return Result<SampleWindow>::Fail(kMissing);
  SampleWindow window;
  window.newest_us = since_us;
  nvmlValueType_t value_type = NVML_VALUE_TYPE_UNSIGNED_INT;
  unsigned count = 0;
  nvmlReturn_t rc =
      api_->nvmlDeviceGetSamples(handle_, type, since_us, &value_type, &count, nullptr);
  if (rc == NVML_ERROR_NOT_FOUND) return window;  // nothing new since since_us
  if (rc != NVML_SUCCESS) return Result<SampleWindow>::Fail(rc);
  if (count == 0) return window;
  if (scratch->size() < count) scratch->resize(count);
  rc = api_->nvmlDeviceGetSamples(handle_, type, since_us, &value_type, &count, scratch->data());
  if (rc == NVML_ERROR_NOT_FOUND) return window;
  if (rc != NVML_SUCCESS) return Result<SampleWindow>::Fail(rc);
  bool first = true;
  for (unsigned i = 0; i < count; ++i) {
    const nvmlSample_t& s = (*scratch)[i];
    if (s.timeStamp <= since_us) continue;  // drivers may return the boundary sample again
    double v = ValueAsDouble(value_type, s.sampleValue);
    if (first || v > window.max) window.max = v;
    if (s.timeStamp >= window.newest_us) {
      window.newest_us = s.timeStamp;
      window.last = v;
    }
    first = false;
    ++window.count;
  }
  return window;
}

Result<TemperatureThresholds> Device::Thresholds() const {
  auto fn = api_->nvmlDeviceGetTemperatureThreshold;
  if (fn == nullptr) return Result<TemperatureThresholds>::Fail(kMissing);
  TemperatureThresholds t;
  nvmlReturn_t first_error = NVML_SUCCESS;
  auto read = [&](int which, unsigned* value, bool* has) {
    nvmlReturn_t rc = fn(handle_, which, value);
    *has = rc == NVML_SUCCESS;
    if (rc != NVML_SUCCESS && first_error == NVML_SUCCESS) first_error = rc;
  };
  read(NVML_TEMPERATURE_THRESHOLD_SHUTDOWN, &t.shutdown_c, &t.has_shutdown);
  read(NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, &t.slowdown_c, &t.has_slowdown);
  read(NVML_TEMPERATURE_THRESHOLD_GPU_MAX, &t.gpu_max_c, &t.has_gpu_max);
  read(NVML_TEMPERATURE_THRESHOLD_MEM_MAX, &t.mem_max_c, &t.has_mem_max);
  if (!t.has_shutdown && !t.has_slowdown && !t.has_gpu_max && !t.has_mem_max)
    return Result<TemperatureThresholds>::Fail(first_error);
  return t;
}

Result<unsigned> Device::DefaultPowerLimitMw() const {
  return ReadScalar<unsigned>(api_->nvmlDeviceGetPowerManagementDefaultLimit, handle_);
}

Result<PowerLimitRange> Device::PowerLimitConstraints() const {
  if (api_->nvmlDeviceGetPowerManagementLimitConstraints == nullptr)
    return Result<PowerLimitRange>::Fail(kMissing);
  PowerLimitRange range;
  nvmlReturn_t rc =
      api_->nvmlDeviceGetPowerManagementLimitConstraints(handle_, &range.min_mw, &range.max_mw);
  if (rc != NVML_SUCCESS) return Result<PowerLimitRange>::Fail(rc);
  return range;
}

Result<bool> Device::EccEnabled() const {
  if (api_->nvmlDeviceGetEccMode == nullptr) return Result<bool>::Fail(kMissing);
  int current = 0, pending = 0;
  nvmlReturn_t rc = api_->nvmlDeviceGetEccMode(handle_, &current, &pending);
  if (rc != NVML_SUCCESS) return Result<bool>::Fail(rc);
  return current == NVML_FEATURE_ENABLED;
}

Result<EccCounts> Device::Ecc() const {
  auto fn = api_->nvmlDeviceGetTotalEccErrors;
  if (fn == nullptr) return Result<EccCounts>::Fail(kMissing);
  EccCounts c;
  struct Slot {
    int type, counter;
    uint64_t* out;
  } slots[] = {
      {NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &c.corrected_volatile},
      {NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &c.uncorrected_volatile},
      {NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC, &c.corrected_aggregate},
      {NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC, &c.uncorrected_aggregate},
  };
  for (Slot& s : slots) {
    unsigned long long v = 0;
    nvmlReturn_t rc = fn(handle_, s.type, s.counter, &v);
    if (rc != NVML_SUCCESS) return Result<EccCounts>::Fail(rc);
    *s.out = v;
  }
  return c;
}

Result<unsigned> Device::RetiredPages(int cause) const {
  if (api_->nvmlDeviceGetRetiredPages == nullptr) return Result<unsigned>::Fail(kMissing);
  unsigned count = 0;  // count only: NULL addresses with count 0 asks for the size
  nvmlReturn_t rc = api_->nvmlDeviceGetRetiredPages(handle_, cause, &count, nullptr);
  if (rc != NVML_SUCCESS && rc != NVML_ERROR_INSUFFICIENT_SIZE) return Result<unsigned>::Fail(rc);
  return count;
}

Result<bool> Device::RetiredPagesPending() const {
  auto r = ReadScalar<int>(api_->nvmlDeviceGetRetiredPagesPendingStatus, handle_);
  if (!r.ok()) return Result<bool>::Fail(r.status());
  return r.value() != 0;
}

Result<RemappedRows> Device::Remapped() const {
  if (api_->nvmlDeviceGetRemappedRows == nullptr) return Result<RemappedRows>::Fail(kMissing);
  unsigned corr = 0, unc = 0, pending = 0, failure = 0;
  nvmlReturn_t rc = api_->nvmlDeviceGetRemappedRows(handle_, &corr, &unc, &pending, &failure);
  if (rc != NVML_SUCCESS) return Result<RemappedRows>::Fail(rc);
  RemappedRows r;
  r.correctable = corr;
  r.uncorrectable = unc;
  r.pending = pending != 0;
  r.failure = failure != 0;
  return r;
}

Result<unsigned> Device::PcieReplays() const {
  return ReadScalar<unsigned>(api_->nvmlDeviceGetPcieReplayCounter, handle_);
}

Result<unsigned> Device::PcieThroughputKBps(int counter) const {
  return ReadScalar<unsigned>(api_->nvmlDeviceGetPcieThroughput, handle_, counter);
}

size_t DetectProcessStride(const unsigned char* buffer, unsigned count, size_t buffer_size) {
  // A 24-byte writer leaves [count*24, count*32) untouched; a 32-byte writer fills it.
  size_t begin = count * kEntry, end = std::min(count * kWideEntry, buffer_size);
  for (size_t i = begin; i < end; ++i)
    if (buffer[i] != kStrideSentinel) return kWideEntry;
  return kEntry;
}

Result<unsigned> Device::ComputeProcesses(std::vector<ProcessInfo>* out) const {
  out->clear();
  auto v3 = api_->nvmlDeviceGetComputeRunningProcesses_v3;
  auto v2 = api_->nvmlDeviceGetComputeRunningProcesses_v2;
  auto v1 = api_->nvmlDeviceGetComputeRunningProcesses;
  if (v3 == nullptr && v2 == nullptr && v1 == nullptr) return Result<unsigned>::Fail(kMissing);

  // Ask for the count first, then read with room for a few more (processes come and go).
  unsigned count = 0;
  nvmlReturn_t rc;
  if (v3) {
    rc = v3(handle_, &count, nullptr);
  } else if (v2) {
    rc = v2(handle_, &count, nullptr);
  } else {
    rc = v1(handle_, &count, nullptr);
  }
  if (rc == NVML_SUCCESS && count == 0) return 0u;
  if (rc != NVML_SUCCESS && rc != NVML_ERROR_INSUFFICIENT_SIZE) return Result<unsigned>::Fail(rc);

  unsigned capacity = count + 8;
  size_t bytes = static_cast<size_t>(capacity) * kWideEntry;  // room even for 32-byte entries
  if (process_buffer_.size() < bytes) process_buffer_.resize(bytes);
  std::fill(process_buffer_.begin(), process_buffer_.begin() + bytes, kStrideSentinel);
  unsigned got = capacity;
  size_t stride = kEntry;
  if (v3) {
    rc = v3(handle_, &got, reinterpret_cast<nvmlProcessInfo_v2_t*>(process_buffer_.data()));
    if (rc == NVML_SUCCESS) stride = DetectProcessStride(process_buffer_.data(), got, bytes);
  } else if (v2) {
    rc = v2(handle_, &got, reinterpret_cast<nvmlProcessInfo_v2_t*>(process_buffer_.data()));
  } else {
    rc = v1(handle_, &got, reinterpret_cast<nvmlProcessInfo_v1_t*>(process_buffer_.data()));
    stride = sizeof(nvmlProcessInfo_v1_t);
  }
  if (rc != NVML_SUCCESS) return Result<unsigned>::Fail(rc);
  out->reserve(got);
  for (unsigned i = 0; i < got; ++i) {
    const unsigned char* entry = process_buffer_.data() + i * stride;
    ProcessInfo p;
    std::memcpy(&p.pid, entry + offsetof(nvmlProcessInfo_v2_t, pid), sizeof p.pid);
    unsigned long long mem = 0;
    std::memcpy(&mem, entry + offsetof(nvmlProcessInfo_v2_t, usedGpuMemory), sizeof mem);
    p.memory_known = mem != static_cast<unsigned long long>(NVML_VALUE_NOT_AVAILABLE);
    p.used_memory_bytes = p.memory_known ? mem : 0;
    if (stride != sizeof(nvmlProcessInfo_v1_t)) {
      std::memcpy(&p.gpu_instance_id, entry + offsetof(nvmlProcessInfo_v2_t, gpuInstanceId),
                  sizeof p.gpu_instance_id);
      std::memcpy(&p.compute_instance_id, entry + offsetof(nvmlProcessInfo_v2_t, computeInstanceId),
                  sizeof p.compute_instance_id);
    }
    out->push_back(p);
  }
  return got;
}

Result<unsigned> Device::ProcessUtilization(
    unsigned long long since_us, std::vector<nvmlProcessUtilizationSample_t>* out) const {
  out->clear();
  auto fn = api_->nvmlDeviceGetProcessUtilization;
  if (fn == nullptr) return Result<unsigned>::Fail(kMissing);
  unsigned count = 0;
  nvmlReturn_t rc = fn(handle_, nullptr, &count, since_us);
  if (rc == NVML_ERROR_NOT_FOUND || (rc == NVML_SUCCESS && count == 0)) return 0u;
  if (rc != NVML_SUCCESS && rc != NVML_ERROR_INSUFFICIENT_SIZE) return Result<unsigned>::Fail(rc);
  out->resize(count + 8);
  count = static_cast<unsigned>(out->size());
  rc = fn(handle_, out->data(), &count, since_us);
  if (rc == NVML_ERROR_NOT_FOUND) {
    out->clear();
    return 0u;
  }
  if (rc != NVML_SUCCESS) return Result<unsigned>::Fail(rc);
  out->resize(count);
  return count;
}

Result<bool> Device::NvLinkActive(unsigned link) const {
  auto r = ReadScalar<int>(api_->nvmlDeviceGetNvLinkState, handle_, link);
  if (!r.ok()) return Result<bool>::Fail(r.status());
  return r.value() == NVML_FEATURE_ENABLED;
}

Result<uint64_t> Device::NvLinkErrorCounter(unsigned link, int counter) const {
  auto r =
      ReadScalar<unsigned long long>(api_->nvmlDeviceGetNvLinkErrorCounter, handle_, link, counter);
  if (!r.ok()) return Result<uint64_t>::Fail(r.status());
  return static_cast<uint64_t>(r.value());
}

Result<MigModes> Device::MigMode() const {
  if (api_->nvmlDeviceGetMigMode == nullptr) return Result<MigModes>::Fail(kMissing);
  unsigned current = 0, pending = 0;
  nvmlReturn_t rc = api_->nvmlDeviceGetMigMode(handle_, &current, &pending);
  if (rc != NVML_SUCCESS) return Result<MigModes>::Fail(rc);
  MigModes m;
  m.current = current == NVML_DEVICE_MIG_ENABLE;
  m.pending = pending == NVML_DEVICE_MIG_ENABLE;
  return m;
}

Result<unsigned> Device::MaxMigDeviceCount() const {
  return ReadScalar<unsigned>(api_->nvmlDeviceGetMaxMigDeviceCount, handle_);
}

Result<Device> Device::MigDeviceByIndex(unsigned index) const {
  auto r = ReadScalar<nvmlDevice_t>(api_->nvmlDeviceGetMigDeviceHandleByIndex, handle_, index);
  if (!r.ok()) return Result<Device>::Fail(r.status());
  return Device(api_, r.value());
}

Result<unsigned> Device::GpuInstanceId() const {
  return ReadScalar<unsigned>(api_->nvmlDeviceGetGpuInstanceId, handle_);
}

Result<unsigned> Device::ComputeInstanceId() const {
  return ReadScalar<unsigned>(api_->nvmlDeviceGetComputeInstanceId, handle_);
}

Result<bool> Device::GpmSupported() const {
  if (api_->nvmlGpmQueryDeviceSupport == nullptr) return Result<bool>::Fail(kMissing);
  nvmlGpmSupport_t support{};
  support.version = NVML_GPM_SUPPORT_VERSION;
  nvmlReturn_t rc = api_->nvmlGpmQueryDeviceSupport(handle_, &support);
  if (rc != NVML_SUCCESS) return Result<bool>::Fail(rc);
  return support.isSupportedDevice != 0;
}

Result<std::string> System::DriverVersion() const {
  if (api_->nvmlSystemGetDriverVersion == nullptr) return Result<std::string>::Fail(kMissing);
  char buffer[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE + 1] = {0};
  nvmlReturn_t rc =
      api_->nvmlSystemGetDriverVersion(buffer, NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE);
  if (rc != NVML_SUCCESS) return Result<std::string>::Fail(rc);
  return std::string(buffer);
}

Result<bool> System::ProcessName(unsigned pid, char* out, unsigned size) const {
  if (api_->nvmlSystemGetProcessName == nullptr) return Result<bool>::Fail(kMissing);
  if (out == nullptr || size == 0) return Result<bool>::Fail(NVML_ERROR_INVALID_ARGUMENT);
  out[0] = '\0';
  nvmlReturn_t rc = api_->nvmlSystemGetProcessName(pid, out, size);
  out[size - 1] = '\0';
  if (rc != NVML_SUCCESS) return Result<bool>::Fail(rc);
  return true;
}

Result<std::string> System::NvmlVersion() const {
  if (api_->nvmlSystemGetNVMLVersion == nullptr) return Result<std::string>::Fail(kMissing);
  char buffer[NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE + 1] = {0};
  nvmlReturn_t rc = api_->nvmlSystemGetNVMLVersion(buffer, NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE);
  if (rc != NVML_SUCCESS) return Result<std::string>::Fail(rc);
  return std::string(buffer);
}

Result<int> System::CudaDriverVersion() const {
  auto fn = api_->nvmlSystemGetCudaDriverVersion_v2 ? api_->nvmlSystemGetCudaDriverVersion_v2
                                                    : api_->nvmlSystemGetCudaDriverVersion;
  if (fn == nullptr) return Result<int>::Fail(kMissing);
  int v = 0;
  nvmlReturn_t rc = fn(&v);
  if (rc != NVML_SUCCESS) return Result<int>::Fail(rc);
  return v;
}

Result<unsigned> System::DeviceCount() const {
  auto fn = api_->nvmlDeviceGetCount_v2 ? api_->nvmlDeviceGetCount_v2 : api_->nvmlDeviceGetCount;
  if (fn == nullptr) return Result<unsigned>::Fail(kMissing);
  unsigned n = 0;
  nvmlReturn_t rc = fn(&n);
  if (rc != NVML_SUCCESS) return Result<unsigned>::Fail(rc);
  return n;
}

Result<Device> System::DeviceByIndex(unsigned index) const {
  auto fn = api_->nvmlDeviceGetHandleByIndex_v2 ? api_->nvmlDeviceGetHandleByIndex_v2
                                                : api_->nvmlDeviceGetHandleByIndex;
  if (fn == nullptr) return Result<Device>::Fail(kMissing);
  nvmlDevice_t handle = nullptr;
  nvmlReturn_t rc = fn(index, &handle);
  if (rc != NVML_SUCCESS) return Result<Device>::Fail(rc);
  return Device(api_, handle);
}

}  // namespace gw::nvml
