// libnvml-sim.so, part 4: events (XIDs and ECC) through event sets.
//
// nvmlEventSetWait blocks in real time, up to timeoutms, without holding the library mutex: it
// waits on the library's condition variable, which nvmlSimAdvance (stepped clock), the due time
// of the next fault event (realtime clock) and nvmlShutdown all wake.
#include <algorithm>
#include <chrono>

#include "sim/api_internal.h"

using gw::sim::api::DeviceCall;
using gw::sim::api::Library;
using gw::sim::api::TheLibrary;
using gw::sim::api::WithDevice;

namespace {

constexpr unsigned kNoInstance = 0xFFFFFFFFu;

nvmlReturn_t WaitForEvent(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeout_ms) {
  Library& lib = TheLibrary();
  std::unique_lock<std::mutex> lock(lib.mu);
  if (lib.fleet == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (data == nullptr || !gw::sim::api::DecodeEventSet(lib, set))
    return NVML_ERROR_INVALID_ARGUMENT;
  const std::uint32_t generation = lib.generation;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  const gw::sim::api::BlockedCaller blocked(lib);
  for (;;) {
    if (lib.generation != generation) return NVML_ERROR_UNINITIALIZED;  // shut down meanwhile
    const std::optional<std::uint32_t> id = gw::sim::api::DecodeEventSet(lib, set);
    if (!id) return NVML_ERROR_INVALID_ARGUMENT;  // freed meanwhile
    lib.fleet->DeliverEvents(gw::sim::api::Now(lib));
    if (std::optional<gw::sim::DeliveredEvent> event = lib.fleet->PopEvent(*id)) {
      data->device = gw::sim::api::EncodeDevice(lib.generation, event->gpu);
      data->eventType = event->event_type;
      data->eventData = event->event_data;
      data->gpuInstanceId = kNoInstance;
      data->computeInstanceId = kNoInstance;
      return NVML_SUCCESS;
    }
    const auto real_now = std::chrono::steady_clock::now();
    if (real_now >= deadline) return NVML_ERROR_TIMEOUT;
    auto wake_at = deadline;
    const std::optional<gw::sim::VirtualUs> next = lib.fleet->NextEventUs();
    if (next && lib.fleet->clock().mode() == gw::sim::ClockMode::kRealtime)
      wake_at = std::min(wake_at, lib.fleet->clock().RealTimeOf(*next));
    lib.wake.wait_until(lock, wake_at);
  }
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  Library& lib = TheLibrary();
  std::lock_guard<std::mutex> lock(lib.mu);
  if (lib.fleet == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *set = gw::sim::api::EncodeEventSet(lib.generation, lib.fleet->CreateEventSet());
  return NVML_SUCCESS;
}

// Registering a type the GPU cannot raise returns NOT_SUPPORTED and registers nothing; the set
// stays usable.
nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
                                      nvmlEventSet_t set) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    const std::optional<std::uint32_t> id = gw::sim::api::DecodeEventSet(TheLibrary(), set);
    if (!id || eventTypes == 0) return NVML_ERROR_INVALID_ARGUMENT;
    if ((eventTypes & ~c.fleet->SupportedEventTypes(c.index)) != 0) return NVML_ERROR_NOT_SUPPORTED;
    c.fleet->Register(*id, c.index, eventTypes);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long* eventTypes) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (eventTypes == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *eventTypes = c.fleet->SupportedEventTypes(c.index);
    return NVML_SUCCESS;
  });
}

#ifndef GW_SIM_LEGACY
nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                 unsigned int timeoutms) {
  return WaitForEvent(set, data, timeoutms);
}
#endif

nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeoutms) {
  return WaitForEvent(set, data, timeoutms);
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  Library& lib = TheLibrary();
  std::lock_guard<std::mutex> lock(lib.mu);
  if (lib.fleet == nullptr) return NVML_ERROR_UNINITIALIZED;
  const std::optional<std::uint32_t> id = gw::sim::api::DecodeEventSet(lib, set);
  if (!id) return NVML_ERROR_INVALID_ARGUMENT;
  lib.fleet->FreeEventSet(*id);
  lib.wake.notify_all();  // a waiter on this set returns INVALID_ARGUMENT
  return NVML_SUCCESS;
}

}  // extern "C"
