// libnvml-sim.so, part 1: library state, init/shutdown, the simulator extensions, system queries
// and device enumeration.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include "sim/api_internal.h"
#include "sim/faults.h"

namespace gw::sim::api {
namespace {

std::uint64_t Pack(std::uint32_t generation, std::uint64_t low) {
  return (std::uint64_t{generation} << 32) | low;
}

std::int64_t WallClockSeconds() {
  return static_cast<std::int64_t>(std::time(nullptr));
}

// Ends a hang fault's block: after its `seconds` of real time, or when nvmlShutdown ends the
// generation (then the hung call reports UNINITIALIZED, as its library is gone).
nvmlReturn_t WaitOutHang(std::unique_lock<std::mutex>& lock, HangState& hang) {
  Library& lib = TheLibrary();
  const auto real_now = std::chrono::steady_clock::now();
  const bool forever = hang.fault->hang_seconds <= 0;
  if (!hang.started) {
    hang.started = true;
    hang.release_at = real_now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                     std::chrono::duration<double>(hang.fault->hang_seconds));
  } else if (!forever && real_now >= hang.release_at) {
    return NVML_SUCCESS;  // the hang is over; calls go through again
  }
  const std::uint32_t generation = lib.generation;
  const auto release_at = hang.release_at;
  const BlockedCaller blocked(lib);
  while (lib.generation == generation &&
         (forever || std::chrono::steady_clock::now() < release_at)) {
    if (forever)
      lib.wake.wait(lock);
    else
      lib.wake.wait_until(lock, release_at);
  }
  return lib.generation == generation ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
}

nvmlReturn_t Initialize() {
  Library& lib = TheLibrary();
  std::lock_guard<std::mutex> lock(lib.mu);
  if (lib.init_count > 0) {
    ++lib.init_count;
    return NVML_SUCCESS;
  }
  std::optional<Scenario> scenario = lib.configured;
  int clock_mode = lib.clock_override;
  double speed = lib.speed_override;
  if (!scenario) {
    const char* name = std::getenv("GPUWARDEN_SIM_SCENARIO");
    if (name == nullptr || *name == '\0') return NVML_ERROR_DRIVER_NOT_LOADED;
    Expected<Scenario> loaded = LoadScenario(name, WallClockSeconds());
    if (!loaded) {
      std::fprintf(stderr, "libnvml-sim: %s\n", loaded.error().message.c_str());
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    scenario = std::move(*loaded);
    const char* clock = std::getenv("GPUWARDEN_SIM_CLOCK");
    if (clock != nullptr && std::string_view(clock) == "stepped") clock_mode = 1;
    if (clock != nullptr && std::string_view(clock) == "realtime") clock_mode = 0;
    if (const char* s = std::getenv("GPUWARDEN_SIM_SPEED")) speed = std::strtod(s, nullptr);
  }
  ClockMode mode = scenario->clock;
  if (clock_mode == 0) mode = ClockMode::kRealtime;
  if (clock_mode == 1) mode = ClockMode::kStepped;
  if (speed <= 0 || !std::isfinite(speed)) speed = scenario->speed;
  lib.fleet = std::make_unique<Fleet>(std::move(*scenario),
                                      VirtualClock(mode, speed, std::chrono::steady_clock::now()));
  lib.init_count = 1;
  if (const char* dir = std::getenv(kStateDirEnv); dir != nullptr && *dir != '\0') {
    std::vector<std::string> uuids;
    for (const GpuSpec& gpu : lib.fleet->scenario().gpus) uuids.push_back(gpu.uuid);
    lib.state = std::make_unique<StateWriter>(dir, uuids);
    lib.state_steps.assign(uuids.size(), -1);
    if (!lib.state->error().empty())
      std::fprintf(stderr, "libnvml-sim: %s: %s\n", kStateDirEnv, lib.state->error().c_str());
  }
  return NVML_SUCCESS;
}

}  // namespace

namespace {
Library* g_library = new Library();  // created when the library is loaded
}  // namespace

Library& TheLibrary() {
  return *g_library;
}

// Runs at dlclose and at exit: frees the fleet and the configuration so that a host that unloads
// the library leaks nothing, unless a blocked caller still needs the mutex.
__attribute__((destructor)) static void ReleaseLibraryAtUnload() {
  if (g_library == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(g_library->mu);
    if (g_library->blocked_callers > 0) return;
  }
  delete g_library;
  g_library = nullptr;
}

nvmlDevice_t EncodeDevice(std::uint32_t generation, unsigned index) {
  return reinterpret_cast<nvmlDevice_t>(
      static_cast<std::uintptr_t>(Pack(generation, index + 1ULL)));
}

std::optional<unsigned> DecodeDevice(const Library& lib, nvmlDevice_t device) {
  const std::uint64_t bits = reinterpret_cast<std::uintptr_t>(device);
  const std::uint64_t low = bits & 0xFFFFFFFFULL;
  if (lib.fleet == nullptr || (bits >> 32) != lib.generation || low == 0 ||
      low > lib.fleet->device_count())
    return std::nullopt;
  return static_cast<unsigned>(low - 1);
}

constexpr std::uint64_t kMigBit = 1ULL << 31;

nvmlDevice_t EncodeMigDevice(std::uint32_t generation, const MigHandle& mig) {
  const std::uint64_t low = kMigBit | (std::uint64_t{mig.gpu} << 16) |
                            (std::uint64_t{mig.layout & 0xFF} << 8) | (mig.gpu_instance_id + 1);
  return reinterpret_cast<nvmlDevice_t>(static_cast<std::uintptr_t>(Pack(generation, low)));
}

std::optional<MigHandle> DecodeMigDevice(const Library& lib, nvmlDevice_t device) {
  const std::uint64_t bits = reinterpret_cast<std::uintptr_t>(device);
  const std::uint64_t low = bits & 0xFFFFFFFFULL;
  if (lib.fleet == nullptr || (bits >> 32) != lib.generation || (low & kMigBit) == 0 ||
      (low & 0xFF) == 0)
    return std::nullopt;
  MigHandle mig;
  mig.gpu = static_cast<unsigned>((low >> 16) & 0x7FFF);
  mig.layout = static_cast<std::size_t>((low >> 8) & 0xFF);
  mig.gpu_instance_id = static_cast<unsigned>((low & 0xFF) - 1);
  if (mig.gpu >= lib.fleet->device_count()) return std::nullopt;
  return mig;
}

bool Missing(const Library& lib, std::string_view function) {
  for (const std::string& name : lib.fleet->scenario().driver.missing)
    if (name == function) return true;
  return false;
}

nvmlEventSet_t EncodeEventSet(std::uint32_t generation, std::uint32_t id) {
  return reinterpret_cast<nvmlEventSet_t>(static_cast<std::uintptr_t>(Pack(generation, id)));
}

std::optional<std::uint32_t> DecodeEventSet(const Library& lib, nvmlEventSet_t set) {
  const std::uint64_t bits = reinterpret_cast<std::uintptr_t>(set);
  const auto id = static_cast<std::uint32_t>(bits & 0xFFFFFFFFULL);
  if (lib.fleet == nullptr || (bits >> 32) != lib.generation || !lib.fleet->HasEventSet(id))
    return std::nullopt;
  return id;
}

// The latest critical XID `spec`'s faults raised at or before t (0 = none), for the state record.
std::uint64_t LatestXid(const GpuSpec& spec, VirtualUs t) {
  VirtualUs latest_at = -1;
  std::uint64_t xid = 0;
  for (const FaultEvent& e : FaultEvents(spec)) {
    if (e.event_type != nvmlEventTypeXidCriticalError || e.at_us > t) continue;
    VirtualUs at = e.at_us;
    if (e.period_us > 0) at += (std::min(t, e.end_us) - e.at_us) / e.period_us * e.period_us;
    if (at >= latest_at) latest_at = at, xid = e.event_data;
  }
  return xid;
}

void PublishState(Library& lib, unsigned index, const Device& device) {
  if (index >= lib.state_steps.size() || lib.state_steps[index] == device.last_step()) return;
  lib.state_steps[index] = device.last_step();
  GpuState s;
  s.index = index;
  s.virtual_ms = static_cast<std::uint64_t>(device.last_step_us() / 1000);
  s.sm_clock_mhz = device.latest().sm_clock_mhz;
  s.max_sm_clock_mhz = device.model().max_sm_clock_mhz;
  s.clock_event_reasons = device.clock_event_reasons();
  s.memory_used_bytes = device.used_memory_bytes();
  s.memory_total_bytes = device.total_memory_bytes();
  s.memory_reserved_bytes = device.reserved_memory_bytes();
  s.utilization_pct = device.latest().util_pct;
  s.temperature_c = device.temperature_c();
  s.xid = LatestXid(device.spec(), device.last_step_us());
  for (unsigned link = 0; link < device.model().nvlinks; ++link)
    if (!NvLinkUpAt(device.spec(), link, device.last_step_us())) ++s.nvlink_down;
  lib.state->Publish(s);
}

nvmlReturn_t EnterDevice(std::unique_lock<std::mutex>& lock, nvmlDevice_t handle,
                         std::string_view function, DeviceCall* call, bool allow_mig) {
  Library& lib = TheLibrary();
  if (lib.fleet == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (Missing(lib, function)) return NVML_ERROR_FUNCTION_NOT_FOUND;
  std::optional<unsigned> index = DecodeDevice(lib, handle);
  const std::optional<MigHandle> mig = index ? std::nullopt : DecodeMigDevice(lib, handle);
  if (mig) index = mig->gpu;
  if (!index) return NVML_ERROR_INVALID_ARGUMENT;
  VirtualUs now = Now(lib);
  lib.fleet->RefreshHostProcesses(std::chrono::steady_clock::now(), now);
  lib.fleet->DeliverEvents(now);
  if (lib.fleet->DeviceInfo(*index).LostAt(now)) {
    if (lib.state) lib.state->PublishLost(*index, static_cast<std::uint64_t>(now / 1000));
    return NVML_ERROR_GPU_IS_LOST;
  }
  if (HangState* hang = lib.fleet->DeviceAt(*index, now).HangFor(function, now)) {
    if (nvmlReturn_t rc = WaitOutHang(lock, *hang); rc != NVML_SUCCESS) return rc;
    now = Now(lib);
    lib.fleet->DeliverEvents(now);
    if (lib.fleet->DeviceInfo(*index).LostAt(now)) return NVML_ERROR_GPU_IS_LOST;
  }
  call->fleet = lib.fleet.get();
  call->device = &lib.fleet->DeviceAt(*index, now);
  if (lib.state) PublishState(lib, *index, *call->device);
  call->index = *index;
  call->now = now;
  call->timestamp_us = lib.fleet->TimestampUs(call->device->last_step_us());
  if (mig) {  // the handle's instance must still exist (a re-partition may have kept it)
    const Device& d = *call->device;
    const std::vector<MigLayout>& layouts = d.spec().mig;
    if (!d.mig_enabled() || mig->layout >= layouts.size()) return NVML_ERROR_INVALID_ARGUMENT;
    const MigInstanceSpec* named = nullptr;
    for (const MigInstanceSpec& m : layouts[mig->layout].instances)
      if (m.gpu_instance_id == mig->gpu_instance_id) named = &m;
    const std::vector<MigInstanceSpec>& instances = d.mig_layout()->instances;
    for (std::size_t slot = 0; named != nullptr && slot < instances.size(); ++slot) {
      if (!SameMigInstance(instances[slot], *named)) continue;
      call->mig = &instances[slot];
      call->mig_slot = static_cast<int>(slot);
    }
    if (call->mig == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!allow_mig) return NVML_ERROR_NOT_SUPPORTED;
  }
  return NVML_SUCCESS;
}

}  // namespace gw::sim::api

using gw::sim::api::Library;
using gw::sim::api::TheLibrary;

extern "C" {

#ifndef GW_SIM_LEGACY
nvmlReturn_t nvmlInit_v2(void) {
  return gw::sim::api::Initialize();
}
#endif
nvmlReturn_t nvmlInit(void) {
  return gw::sim::api::Initialize();
}

nvmlReturn_t nvmlShutdown(void) {
  Library& lib = TheLibrary();
  std::lock_guard<std::mutex> lock(lib.mu);
  if (lib.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (--lib.init_count == 0) {
    lib.state.reset();  // records say alive = 0
    lib.fleet.reset();
    ++lib.generation;
    lib.wake.notify_all();
  }
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlSimConfigure(const char* scenario_path, int clock_mode, double speed, char* error,
                              unsigned int error_length) {
  auto report = [&](const std::string& message) {
    if (error != nullptr && error_length > 0)
      std::snprintf(error, error_length, "%s", message.c_str());
    return NVML_ERROR_INVALID_ARGUMENT;
  };
  Library& lib = TheLibrary();
  std::lock_guard<std::mutex> lock(lib.mu);
  if (lib.init_count > 0) {
    if (error != nullptr && error_length > 0)
      std::snprintf(error, error_length, "nvmlSimConfigure: call it before nvmlInit");
    return NVML_ERROR_IN_USE;
  }
  if (clock_mode < -1 || clock_mode > 1) return report("clock_mode must be -1, 0 or 1");
  if (scenario_path == nullptr) {  // forget the configuration: the environment decides again
    lib.configured.reset();
    lib.clock_override = -1;
    lib.speed_override = 0;
    return NVML_SUCCESS;
  }
  gw::Expected<gw::sim::Scenario> scenario =
      gw::sim::LoadScenario(scenario_path, gw::sim::api::WallClockSeconds());
  if (!scenario) return report(scenario.error().message);
  lib.configured = std::move(*scenario);
  lib.clock_override = clock_mode;
  lib.speed_override = speed;
  if (error != nullptr && error_length > 0) error[0] = '\0';
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlSimAdvance(unsigned long long milliseconds) {
  Library& lib = TheLibrary();
  std::lock_guard<std::mutex> lock(lib.mu);
  if (lib.fleet == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (lib.fleet->clock().mode() != gw::sim::ClockMode::kStepped) return NVML_ERROR_NOT_SUPPORTED;
  if (milliseconds > 10ULL * 365 * 86400 * 1000) return NVML_ERROR_INVALID_ARGUMENT;
  lib.fleet->clock().Advance(static_cast<gw::sim::VirtualUs>(milliseconds) * 1000);
  lib.fleet->DeliverEvents(gw::sim::api::Now(lib));
  lib.wake.notify_all();
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlSimGetClock(unsigned long long* milliseconds) {
  Library& lib = TheLibrary();
  std::lock_guard<std::mutex> lock(lib.mu);
  if (lib.fleet == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (milliseconds == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *milliseconds = static_cast<unsigned long long>(gw::sim::api::Now(lib) / 1000);
  return NVML_SUCCESS;
}

const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED:
      return "Already Initialized";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_INSUFFICIENT_POWER:
      return "Insufficient External Power";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT:
      return "Timeout";
    case NVML_ERROR_IRQ_ISSUE:
      return "Interrupt request issue";
    case NVML_ERROR_LIBRARY_NOT_FOUND:
      return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "Function Not Found";
    case NVML_ERROR_CORRUPTED_INFOROM:
      return "Corrupted infoROM";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED:
      return "GPU requires restart";
    case NVML_ERROR_OPERATING_SYSTEM:
      return "The operating system has blocked the request.";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return "RM has detected an NVML/RM version mismatch.";
    case NVML_ERROR_IN_USE:
      return "In use by another client";
    case NVML_ERROR_MEMORY:
      return "Insufficient Memory";
    case NVML_ERROR_NO_DATA:
      return "No data";
    case NVML_ERROR_VGPU_ECC_NOT_SUPPORTED:
      return "The requested vgpu operation is not available on target device, because ECC is "
             "enabled";
    case NVML_ERROR_FREQ_NOT_SUPPORTED:
      return "The requested frequency is not supported";
    case NVML_ERROR_RESET_TYPE_NOT_SUPPORTED:
      return "The requested reset type is not supported";
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
      return "Ran out of critical resources, other than memory";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
      return "The provided version is invalid/unsupported";
    case NVML_ERROR_DEPRECATED:
      return "The requested functionality has been deprecated";
    case NVML_ERROR_NOT_READY:
      return "The system is not ready for the request";
    case NVML_ERROR_GPU_NOT_FOUND:
      return "The GPU was not found";
    case NVML_ERROR_INVALID_STATE:
      return "The request is invalid in the current state";
    default:
      return "Unknown Error";
  }
}

// ---- system -------------------------------------------------------------------------------------

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  Library& lib = TheLibrary();
  std::lock_guard<std::mutex> lock(lib.mu);
  if (lib.fleet == nullptr) return NVML_ERROR_UNINITIALIZED;
  return gw::sim::api::CopyString(lib.fleet->scenario().driver.version, version, length);
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) {
  Library& lib = TheLibrary();
  std::lock_guard<std::mutex> lock(lib.mu);
  if (lib.fleet == nullptr) return NVML_ERROR_UNINITIALIZED;
  const gw::sim::DriverSpec& driver = lib.fleet->scenario().driver;
  return gw::sim::api::CopyString(std::to_string(driver.cuda_version / 1000) + "." + driver.version,
                                  version, length);
}

static nvmlReturn_t CudaDriverVersion(int* version) {
  Library& lib = TheLibrary();
  std::lock_guard<std::mutex> lock(lib.mu);
  if (lib.fleet == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (version == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *version = lib.fleet->scenario().driver.cuda_version;
  return NVML_SUCCESS;
}
#ifndef GW_SIM_LEGACY
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* v) {
  return CudaDriverVersion(v);
}
#endif
nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* v) {
  return CudaDriverVersion(v);
}

// ---- enumeration
// ----------------------------------------------------------------------------------

static nvmlReturn_t DeviceCount(unsigned int* count) {
  Library& lib = TheLibrary();
  std::lock_guard<std::mutex> lock(lib.mu);
  if (lib.fleet == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *count = lib.fleet->device_count();
  return NVML_SUCCESS;
}
#ifndef GW_SIM_LEGACY
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  return DeviceCount(count);
}
#endif
nvmlReturn_t nvmlDeviceGetCount(unsigned int* count) {
  return DeviceCount(count);
}

static nvmlReturn_t HandleByIndex(unsigned int index, nvmlDevice_t* device) {
  Library& lib = TheLibrary();
  std::lock_guard<std::mutex> lock(lib.mu);
  if (lib.fleet == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (device == nullptr || index >= lib.fleet->device_count()) return NVML_ERROR_INVALID_ARGUMENT;
  *device = gw::sim::api::EncodeDevice(lib.generation, index);
  return NVML_SUCCESS;
}
#ifndef GW_SIM_LEGACY
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  return HandleByIndex(index, device);
}
#endif
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device) {
  return HandleByIndex(index, device);
}

}  // extern "C"
