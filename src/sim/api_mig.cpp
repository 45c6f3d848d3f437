// libnvml-sim.so, part 5: MIG devices and GPM profiling samples (docs/scenarios.md, "MIG" and
// "Profiling counters"). The legacy library (an old driver) has neither.
#include <algorithm>
#include <memory>

#include "sim/api_internal.h"

using gw::sim::api::DeviceCall;
using gw::sim::api::Library;
using gw::sim::api::TheLibrary;
using gw::sim::api::WithDevice;
using gw::sim::api::WithDeviceOrMig;

#ifndef GW_SIM_LEGACY
namespace {

constexpr unsigned kGpmMetricMax = 333;  // NVML_GPM_METRIC_MAX in NVML 13

bool HasMig(const DeviceCall& c) {
  return c.device->model().max_mig_devices > 0;
}

// The sample, if the library handed it out and it was not freed.
nvmlGpmSample_st* FindSample(Library& lib, nvmlGpmSample_t sample) {
  auto it = lib.samples.find(sample);
  return it == lib.samples.end() ? nullptr : it->second.get();
}

// Copies the counters of the GPU, or of the instance in `slot` (>= 0), into a sample.
nvmlReturn_t TakeSample(DeviceCall& c, int slot, nvmlGpmSample_t handle) {
  Library& lib = TheLibrary();
  nvmlGpmSample_st* sample = FindSample(lib, handle);
  if (sample == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (!c.device->model().gpm) return NVML_ERROR_NOT_SUPPORTED;
  sample->filled = true;
  sample->generation = lib.generation;
  sample->gpu = c.index;
  sample->mig_slot = slot;
  sample->layout = c.device->mig_layout_index();
  sample->gpu_instance_id =
      slot >= 0 ? c.device->mig_layout()->instances[static_cast<std::size_t>(slot)].gpu_instance_id
                : 0;
  sample->t_us = c.device->last_step_us();
  sample->counters = slot >= 0 ? c.device->instance_counters(static_cast<std::size_t>(slot))
                               : c.device->gpm_counters();
  return NVML_SUCCESS;
}

}  // namespace

extern "C" {

// ---- MIG ---------------------------------------------------------------------------------------

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* currentMode,
                                  unsigned int* pendingMode) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (currentMode == nullptr || pendingMode == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!HasMig(c)) return NVML_ERROR_NOT_SUPPORTED;
    const gw::sim::MigLayout* layout = c.device->mig_layout();
    *currentMode = layout != nullptr && layout->enabled ? NVML_DEVICE_MIG_ENABLE : 0;
    *pendingMode = layout != nullptr && layout->pending ? NVML_DEVICE_MIG_ENABLE : 0;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!HasMig(c)) return NVML_ERROR_NOT_SUPPORTED;
    *count = c.device->model().max_mig_devices;
    return NVML_SUCCESS;
  });
}

// MIG devices in GPU-instance-id order; an index with no instance (or MIG disabled): NOT_FOUND.
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                 nvmlDevice_t* migDevice) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (migDevice == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!HasMig(c)) return NVML_ERROR_NOT_SUPPORTED;
    if (index >= c.device->model().max_mig_devices) return NVML_ERROR_INVALID_ARGUMENT;
    if (!c.device->mig_enabled() || index >= c.device->mig_layout()->instances.size())
      return NVML_ERROR_NOT_FOUND;
    gw::sim::api::MigHandle mig;
    mig.gpu = c.index;
    mig.layout = c.device->mig_layout_index();
    mig.gpu_instance_id = c.device->mig_layout()->instances[index].gpu_instance_id;
    *migDevice = gw::sim::api::EncodeMigDevice(TheLibrary().generation, mig);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int* isMigDevice) {
  return WithDeviceOrMig(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (isMigDevice == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *isMigDevice = c.mig != nullptr ? 1 : 0;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
  return WithDeviceOrMig(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (c.mig == nullptr) return NVML_ERROR_NOT_SUPPORTED;
    *id = c.mig->gpu_instance_id;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int* id) {
  return WithDeviceOrMig(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (c.mig == nullptr) return NVML_ERROR_NOT_SUPPORTED;
    *id = c.mig->compute_instance_id;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice,
                                                          nvmlDevice_t* device) {
  return WithDeviceOrMig(migDevice, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (device == nullptr || c.mig == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *device = gw::sim::api::EncodeDevice(TheLibrary().generation, c.index);
    return NVML_SUCCESS;
  });
}

// ---- GPM ---------------------------------------------------------------------------------------

nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t* gpmSupport) {
  return WithDeviceOrMig(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (gpmSupport == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (gpmSupport->version != NVML_GPM_SUPPORT_VERSION)
      return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    gpmSupport->isSupportedDevice = c.device->model().gpm ? 1 : 0;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* gpmSample) {
  Library& lib = TheLibrary();
  std::lock_guard<std::mutex> lock(lib.mu);
  if (lib.fleet == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (gw::sim::api::Missing(lib, __func__)) return NVML_ERROR_FUNCTION_NOT_FOUND;
  if (gpmSample == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  auto sample = std::make_unique<nvmlGpmSample_st>();
  nvmlGpmSample_t handle = sample.get();
  lib.samples.emplace(handle, std::move(sample));
  *gpmSample = handle;
  return NVML_SUCCESS;
}

// Frees a sample; works after nvmlShutdown too (samples belong to the caller, not to an init).
nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t gpmSample) {
  Library& lib = TheLibrary();
  std::lock_guard<std::mutex> lock(lib.mu);
  if (lib.fleet != nullptr && gw::sim::api::Missing(lib, __func__))
    return NVML_ERROR_FUNCTION_NOT_FOUND;
  return lib.samples.erase(gpmSample) != 0 ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

// On a MIG device handle this samples the instance, as nvmlGpmMigSampleGet does.
nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t gpmSample) {
  return WithDeviceOrMig(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    return TakeSample(c, c.mig_slot, gpmSample);
  });
}

nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t device, unsigned int gpuInstanceId,
                                 nvmlGpmSample_t gpmSample) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (FindSample(TheLibrary(), gpmSample) == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!c.device->model().gpm || !HasMig(c)) return NVML_ERROR_NOT_SUPPORTED;
    if (!c.device->mig_enabled()) return NVML_ERROR_NOT_FOUND;
    const std::vector<gw::sim::MigInstanceSpec>& instances = c.device->mig_layout()->instances;
    for (std::size_t slot = 0; slot < instances.size(); ++slot)
      if (instances[slot].gpu_instance_id == gpuInstanceId)
        return TakeSample(c, static_cast<int>(slot), gpmSample);
    return NVML_ERROR_NOT_FOUND;
  });
}

// Both samples must come from the same GPU (or MIG instance of the same layout) in this init,
// sample2 at least one 100 ms step after sample1; otherwise INVALID_ARGUMENT.
nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* metricsGet) {
  Library& lib = TheLibrary();
  std::lock_guard<std::mutex> lock(lib.mu);
  if (lib.fleet == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (gw::sim::api::Missing(lib, __func__)) return NVML_ERROR_FUNCTION_NOT_FOUND;
  if (metricsGet == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (metricsGet->version != NVML_GPM_METRICS_GET_VERSION)
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if (metricsGet->numMetrics > kGpmMetricMax) return NVML_ERROR_INVALID_ARGUMENT;
  const nvmlGpmSample_st* a = FindSample(lib, metricsGet->sample1);
  const nvmlGpmSample_st* b = FindSample(lib, metricsGet->sample2);
  if (a == nullptr || b == nullptr || !a->filled || !b->filled) return NVML_ERROR_INVALID_ARGUMENT;
  if (a->generation != lib.generation || b->generation != lib.generation || a->gpu != b->gpu ||
      a->mig_slot != b->mig_slot || a->layout != b->layout ||
      a->gpu_instance_id != b->gpu_instance_id)
    return NVML_ERROR_INVALID_ARGUMENT;
  if (b->t_us - a->t_us < gw::sim::kStepUs) return NVML_ERROR_INVALID_ARGUMENT;
  const double seconds = static_cast<double>(b->t_us - a->t_us) / 1e6;
  const unsigned links =
      std::min(lib.fleet->DeviceInfo(a->gpu).model().nvlinks, gw::sim::kMaxSimNvLinks);
  for (unsigned i = 0; i < metricsGet->numMetrics; ++i) {
    nvmlGpmMetric_t& m = metricsGet->metrics[i];
    const gw::sim::GpmMetricOutcome out = gw::sim::ComputeGpmMetric(
        m.metricId, a->counters, b->counters, seconds, links, a->mig_slot >= 0);
    m.nvmlReturn = out.rc;
    m.value = out.rc == NVML_SUCCESS ? out.value : 0;
    m.shortName = const_cast<char*>(out.short_name);
    m.longName = const_cast<char*>(out.long_name);
    m.unit = const_cast<char*>(out.unit);
  }
  return NVML_SUCCESS;
}

}  // extern "C"
#endif  // GW_SIM_LEGACY
