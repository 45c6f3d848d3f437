// libnvml-sim.so, part 2: identity, utilization, memory, samples, thermal, power and clocks.
#include <cstdio>
#include <string>
#include <vector>

#include "sim/api_internal.h"

using gw::sim::api::CopyString;
using gw::sim::api::DeviceCall;
using gw::sim::api::WithDevice;
using gw::sim::api::WithDeviceOrMig;

namespace {

constexpr unsigned kVendorNvidia = 0x10DE;
constexpr unsigned kSamplingPeriodUs = 100'000;  // one physics step

unsigned VideoClock(unsigned sm_mhz) {
  return sm_mhz * 15 / 16 / 15 * 15;
}

nvmlReturn_t PciInfo(nvmlDevice_t device, nvmlPciInfo_t* pci, const char* function) {
  return WithDevice(device, function, [&](DeviceCall& c) -> nvmlReturn_t {
    if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const gw::sim::GpuSpec& spec = c.device->spec();
    *pci = nvmlPciInfo_t{};
    std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:00.0",
                  spec.pci_domain & 0xFFFF, spec.pci_bus);
    std::snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:00.0", spec.pci_domain, spec.pci_bus);
    pci->domain = spec.pci_domain;
    pci->bus = spec.pci_bus;
    pci->device = 0;
    pci->pciDeviceId = (c.device->model().pci_device_id << 16) | kVendorNvidia;
    pci->pciSubSystemId = ((c.device->model().pci_device_id + 0x100) << 16) | kVendorNvidia;
    return NVML_SUCCESS;
  });
}

std::uint64_t MemoryUsed(const DeviceCall& c) {
  return c.device->used_memory_bytes();
}

unsigned SampleValue(const gw::sim::StepSample& s, nvmlSamplingType_t type) {
  switch (type) {
    case NVML_TOTAL_POWER_SAMPLES:
      return s.power_mw;
    case NVML_GPU_UTILIZATION_SAMPLES:
      return s.util_pct;
    case NVML_MEMORY_UTILIZATION_SAMPLES:
      return s.mem_util_pct;
    case NVML_ENC_UTILIZATION_SAMPLES:
      return s.enc_util_pct;
    case NVML_DEC_UTILIZATION_SAMPLES:
      return s.dec_util_pct;
    case NVML_PROCESSOR_CLK_SAMPLES:
      return s.sm_clock_mhz;
    default:
      return s.mem_clock_mhz;
  }
}

nvmlReturn_t Limit(nvmlDevice_t device, unsigned int* out, const char* function,
                   unsigned (*pick)(const DeviceCall&)) {
  return WithDevice(device, function, [&](DeviceCall& c) -> nvmlReturn_t {
    if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *out = pick(c) * 1000;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t CurrentReasons(nvmlDevice_t device, unsigned long long* reasons, const char* fn) {
  return WithDevice(device, fn, [&](DeviceCall& c) -> nvmlReturn_t {
    if (reasons == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *reasons = c.device->clock_event_reasons();
    return NVML_SUCCESS;
  });
}

nvmlReturn_t SupportedReasons(nvmlDevice_t device, unsigned long long* reasons, const char* fn) {
  return WithDevice(device, fn, [&](DeviceCall&) -> nvmlReturn_t {
    if (reasons == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *reasons = 0x1FFULL;  // every reason bit nvml/abi.h names
    return NVML_SUCCESS;
  });
}

}  // namespace

extern "C" {

// ---- identity -------------------------------------------------------------------------------

// A MIG device is named after its GPU and profile: "NVIDIA H100 80GB HBM3 MIG 1g.10gb".
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  return WithDeviceOrMig(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (c.mig == nullptr) return CopyString(c.device->model().nvml_name, name, length);
    return CopyString(
        std::string(c.device->model().nvml_name) + " MIG " + std::string(c.mig->profile->name),
        name, length);
  });
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  return WithDeviceOrMig(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    return CopyString(c.mig != nullptr ? c.mig->uuid : c.device->spec().uuid, uuid, length);
  });
}

nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char* serial, unsigned int length) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    return CopyString(c.device->spec().serial, serial, length);
  });
}

#ifndef GW_SIM_LEGACY
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return PciInfo(device, pci, __func__);
}
#endif
nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return PciInfo(device, pci, __func__);
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minorNumber) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (minorNumber == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *minorNumber = c.index;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (index == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *index = c.index;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device, unsigned int* arch) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (arch == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *arch = c.device->model().architecture;
    return NVML_SUCCESS;
  });
}

// ---- utilization and memory
// ----------------------------------------------------------------------

// Like the driver, not on a GPU with MIG enabled (GPM per instance replaces it there).
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (utilization == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (c.device->mig_enabled()) return NVML_ERROR_NOT_SUPPORTED;
    utilization->gpu = c.device->latest().util_pct;
    utilization->memory = c.device->latest().mem_util_pct;
    return NVML_SUCCESS;
  });
}

// v1 predates the reserved field: its `used` includes the reserved memory (total = free + used).
// On a MIG device: the instance's memory (nothing reserved).
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  return WithDeviceOrMig(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (c.mig != nullptr) {
      const auto slot = static_cast<std::size_t>(c.mig_slot);
      memory->total = c.device->instance_total_memory_bytes(slot);
      memory->used = c.device->instance_used_memory_bytes(slot);
      memory->free = memory->total - memory->used;
      return NVML_SUCCESS;
    }
    const std::uint64_t used = MemoryUsed(c) + c.device->reserved_memory_bytes();
    memory->total = c.device->total_memory_bytes();
    memory->used = used;
    memory->free = memory->total - used;
    return NVML_SUCCESS;
  });
}

#ifndef GW_SIM_LEGACY
// Like driver 510, any version but nvmlMemory_v2 (0x02000028) is FUNCTION_NOT_FOUND (trap 2).
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory) {
  return WithDeviceOrMig(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (memory->version != nvmlMemory_v2) return NVML_ERROR_FUNCTION_NOT_FOUND;
    if (c.mig != nullptr) {
      const auto slot = static_cast<std::size_t>(c.mig_slot);
      memory->total = c.device->instance_total_memory_bytes(slot);
      memory->reserved = 0;
      memory->used = c.device->instance_used_memory_bytes(slot);
      memory->free = memory->total - memory->used;
      return NVML_SUCCESS;
    }
    memory->total = c.device->total_memory_bytes();
    memory->reserved = c.device->reserved_memory_bytes();
    memory->used = MemoryUsed(c);
    memory->free = memory->total - memory->reserved - memory->used;
    return NVML_SUCCESS;
  });
}
#endif

nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t device, unsigned int* utilization,
                                             unsigned int* samplingPeriodUs) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (utilization == nullptr || samplingPeriodUs == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *utilization = c.device->latest().enc_util_pct;
    *samplingPeriodUs = kSamplingPeriodUs;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t device, unsigned int* utilization,
                                             unsigned int* samplingPeriodUs) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (utilization == nullptr || samplingPeriodUs == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *utilization = c.device->latest().dec_util_pct;
    *samplingPeriodUs = kSamplingPeriodUs;
    return NVML_SUCCESS;
  });
}

// The sample buffer holds one sample per 100 ms step for the last 25.6 s. Samples newer than
// lastSeenTimeStamp are returned oldest first; samples == NULL asks for their count. No newer
// sample: NOT_FOUND. A buffer smaller than the count: INSUFFICIENT_SIZE with the count.
nvmlReturn_t nvmlDeviceGetSamples(nvmlDevice_t device, nvmlSamplingType_t type,
                                  unsigned long long lastSeenTimeStamp,
                                  nvmlValueType_t* sampleValType, unsigned int* sampleCount,
                                  nvmlSample_t* samples) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (sampleValType == nullptr || sampleCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (type < NVML_TOTAL_POWER_SAMPLES || type > NVML_MEMORY_CLK_SAMPLES)
      return NVML_ERROR_NOT_SUPPORTED;
    if (c.device->mig_enabled() &&
        (type == NVML_GPU_UTILIZATION_SAMPLES || type == NVML_MEMORY_UTILIZATION_SAMPLES))
      return NVML_ERROR_NOT_SUPPORTED;
    const gw::sim::Device& d = *c.device;
    std::int64_t first = d.oldest_sample_step();
    while (first <= d.last_step() &&
           c.fleet->TimestampUs(first * gw::sim::kStepUs) <= lastSeenTimeStamp)
      ++first;
    const auto count = static_cast<unsigned>(d.last_step() - first + 1);
    *sampleValType = NVML_VALUE_TYPE_UNSIGNED_INT;
    if (count == 0) {
      *sampleCount = 0;
      return NVML_ERROR_NOT_FOUND;
    }
    if (samples == nullptr) {
      *sampleCount = count;
      return NVML_SUCCESS;
    }
    if (*sampleCount < count) {
      *sampleCount = count;
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned i = 0; i < count; ++i) {
      const std::int64_t step = first + i;
      samples[i].timeStamp = c.fleet->TimestampUs(step * gw::sim::kStepUs);
      samples[i].sampleValue.ullVal = 0;
      samples[i].sampleValue.uiVal = SampleValue(d.Sample(step), type);
    }
    *sampleCount = count;
    return NVML_SUCCESS;
  });
}

// ---- thermal and power -------------------------------------------------------------------------

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensorType, unsigned int* temp) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (temp == nullptr || sensorType != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
    *temp = c.device->temperature_c();
    return NVML_SUCCESS;
  });
}

#ifndef GW_SIM_LEGACY
// NVML 13's versioned read: version must be nvmlTemperature_v1, the sensor the GPU's.
nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t device, nvmlTemperature_t* temperature) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (temperature == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (temperature->version != nvmlTemperature_v1) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (temperature->sensorType != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
    temperature->temperature = static_cast<int>(c.device->temperature_c());
    return NVML_SUCCESS;
  });
}
#endif

nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t device, int thresholdType,
                                               unsigned int* temp) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (temp == nullptr || thresholdType < 0 || thresholdType > 7)
      return NVML_ERROR_INVALID_ARGUMENT;
    const gw::sim::GpuModel& m = c.device->model();
    unsigned value = 0;
    switch (thresholdType) {
      case NVML_TEMPERATURE_THRESHOLD_SHUTDOWN:
        value = m.shutdown_c;
        break;
      case NVML_TEMPERATURE_THRESHOLD_SLOWDOWN:
        value = m.slowdown_c;
        break;
      case NVML_TEMPERATURE_THRESHOLD_MEM_MAX:
        value = m.mem_max_c;
        break;
      case NVML_TEMPERATURE_THRESHOLD_GPU_MAX:
        value = m.gpu_max_c;
        break;
      default:
        break;  // acoustic and GPS thresholds: not on datacenter boards
    }
    if (value == 0) return NVML_ERROR_NOT_SUPPORTED;
    *temp = value;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t device, unsigned int* speed) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (speed == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!c.device->model().has_fan) return NVML_ERROR_NOT_SUPPORTED;
    *speed = c.device->fan_speed_pct();
    return NVML_SUCCESS;
  });
}

// A 1 s average on boards that average (Hopper, Ada), the last 100 ms step on the others.
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (power == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *power = c.device->model().averaged_power ? c.device->average_power_mw()
                                              : c.device->latest().power_mw;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int* limit) {
  return Limit(device, limit, __func__,
               [](const DeviceCall& c) { return c.device->power_limit_w(); });
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device, unsigned int* limit) {
  return Limit(device, limit, __func__,
               [](const DeviceCall& c) { return c.device->power_limit_w(); });
}

nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t device,
                                                      unsigned int* defaultLimit) {
  return Limit(device, defaultLimit, __func__,
               [](const DeviceCall& c) { return c.device->model().power_default_w; });
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t device,
                                                          unsigned int* minLimit,
                                                          unsigned int* maxLimit) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (minLimit == nullptr || maxLimit == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *minLimit = c.device->model().power_min_w * 1000;
    *maxLimit = c.device->model().power_max_w * 1000;
    return NVML_SUCCESS;
  });
}

#ifndef GW_SIM_LEGACY
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long* energy) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (energy == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *energy = c.device->energy_mj();
    return NVML_SUCCESS;
  });
}
#endif

nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t device, int* pState) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (pState == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *pState = c.device->pstate();
    return NVML_SUCCESS;
  });
}

// ---- clocks ------------------------------------------------------------------------------------

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, int type, unsigned int* clock) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (clock == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const gw::sim::StepSample& s = c.device->latest();
    switch (type) {
      case NVML_CLOCK_GRAPHICS:
      case NVML_CLOCK_SM:
        *clock = s.sm_clock_mhz;
        return NVML_SUCCESS;
      case NVML_CLOCK_MEM:
        *clock = s.mem_clock_mhz;
        return NVML_SUCCESS;
      case NVML_CLOCK_VIDEO:
        *clock = VideoClock(s.sm_clock_mhz);
        return NVML_SUCCESS;
      default:
        return NVML_ERROR_INVALID_ARGUMENT;
    }
  });
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, int type, unsigned int* clock) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (clock == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const gw::sim::GpuModel& m = c.device->model();
    switch (type) {
      case NVML_CLOCK_GRAPHICS:
      case NVML_CLOCK_SM:
        *clock = m.max_sm_clock_mhz;
        return NVML_SUCCESS;
      case NVML_CLOCK_MEM:
        *clock = m.max_mem_clock_mhz;
        return NVML_SUCCESS;
      case NVML_CLOCK_VIDEO:
        *clock = VideoClock(m.max_sm_clock_mhz);
        return NVML_SUCCESS;
      default:
        return NVML_ERROR_INVALID_ARGUMENT;
    }
  });
}

#ifndef GW_SIM_LEGACY
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                    unsigned long long* clocksEventReasons) {
  return CurrentReasons(device, clocksEventReasons, __func__);
}
nvmlReturn_t nvmlDeviceGetSupportedClocksEventReasons(nvmlDevice_t device,
                                                      unsigned long long* supported) {
  return SupportedReasons(device, supported, __func__);
}
#endif
nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device,
                                                       unsigned long long* reasons) {
  return CurrentReasons(device, reasons, __func__);
}
nvmlReturn_t nvmlDeviceGetSupportedClocksThrottleReasons(nvmlDevice_t device,
                                                         unsigned long long* supported) {
  return SupportedReasons(device, supported, __func__);
}

}  // extern "C"
