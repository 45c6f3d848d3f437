// Internals shared by the files that implement the C API of libnvml-sim.so (not installed).
//
// There is exactly one simulated driver per process, as with the real libnvidia-ml.so.1, so the
// API keeps one `Library` (mutex, fleet, init count). Every exported function locks its mutex;
// calls that block (nvmlEventSetWait, a hang fault) wait on `wake` and so release the mutex while
// they block. nvmlShutdown bumps `generation` and notifies `wake`, which ends every wait.
//
// Handles are not pointers into memory: a device handle encodes (generation << 32 | index + 1),
// a MIG device handle (generation << 32 | 1 << 31 | gpu << 16 | layout << 8 | instance id + 1)
// and an event set handle (generation << 32 | set id), so a stale or forged handle is detected
// (INVALID_ARGUMENT) instead of being dereferenced; a MIG handle also goes stale when a
// re-partition replaces its layout. GPM samples are real heap objects (the caller allocates and
// frees them); the library keeps the set it handed out, so a freed or forged one is refused.
#ifndef GPUWARDEN_SIM_API_INTERNAL_H_
#define GPUWARDEN_SIM_API_INTERNAL_H_

// Everything declared by abi.h is exported; all else in the library is hidden.
#pragma GCC visibility push(default)
#include "nvml/abi.h"
#pragma GCC visibility pop

#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "sim/fleet.h"
#include "sim/state_file.h"

// A GPM sample: a copy of a GPU's (or MIG instance's) profiling counters at one step.
struct nvmlGpmSample_st {
  bool filled = false;
  std::uint32_t generation = 0;  // of the init it was taken in
  unsigned gpu = 0;
  int mig_slot = -1;  // -1: the whole GPU
  std::size_t layout = 0;
  unsigned gpu_instance_id = 0;
  gw::sim::VirtualUs t_us = 0;  // the step's end
  gw::sim::GpmCounters counters;
};

namespace gw::sim::api {

struct Library {
  std::mutex mu;
  std::condition_variable wake;  // event arrivals, shutdown, hang releases
  std::unique_ptr<Fleet> fleet;  // non-null while initialized
  int init_count = 0;
  std::uint32_t generation = 1;        // bumped by every final shutdown
  std::optional<Scenario> configured;  // from nvmlSimConfigure (else the environment)
  int clock_override = -1;             // -1 scenario, 0 realtime, 1 stepped
  double speed_override = 0;           // <= 0: the scenario's
  int blocked_callers = 0;             // inside a hang or an event wait right now
  // GPUWARDEN_SIM_STATE_DIR's records (sim/state_file.h) and the step each GPU last published.
  std::unique_ptr<StateWriter> state;
  std::vector<std::int64_t> state_steps;
  // GPM samples handed out by nvmlGpmSampleAlloc and not yet freed (freed at unload otherwise).
  std::unordered_map<nvmlGpmSample_t, std::unique_ptr<nvmlGpmSample_st>> samples;
};

// Publishes GPU `index`'s state to the state files if it moved since it was last published.
void PublishState(Library& lib, unsigned index, const Device& device);

// The process-wide simulated driver. Freed when the library is unloaded (dlclose, exit) unless a
// caller is still blocked inside it, in which case it is deliberately left allocated.
Library& TheLibrary();

// Counts a caller as blocked for the lifetime of the guard (the lock must be held around both).
class BlockedCaller {
 public:
  explicit BlockedCaller(Library& lib) : lib_(lib) { ++lib_.blocked_callers; }
  ~BlockedCaller() { --lib_.blocked_callers; }
  BlockedCaller(const BlockedCaller&) = delete;
  BlockedCaller& operator=(const BlockedCaller&) = delete;

 private:
  Library& lib_;
};

inline VirtualUs Now(const Library& lib) {
  return lib.fleet->Now(std::chrono::steady_clock::now());
}

nvmlDevice_t EncodeDevice(std::uint32_t generation, unsigned index);
std::optional<unsigned> DecodeDevice(const Library& lib, nvmlDevice_t device);
struct MigHandle {
  unsigned gpu = 0;
  std::size_t layout = 0;
  unsigned gpu_instance_id = 0;
};
nvmlDevice_t EncodeMigDevice(std::uint32_t generation, const MigHandle& mig);
std::optional<MigHandle> DecodeMigDevice(const Library& lib, nvmlDevice_t device);
nvmlEventSet_t EncodeEventSet(std::uint32_t generation, std::uint32_t id);
std::optional<std::uint32_t> DecodeEventSet(const Library& lib, nvmlEventSet_t set);

struct DeviceCall {
  Fleet* fleet = nullptr;
  Device* device = nullptr;
  unsigned index = 0;
  VirtualUs now = 0;
  std::uint64_t timestamp_us = 0;  // of the device's last step
  // With a MIG device handle: the instance and its slot in the device's layout.
  const MigInstanceSpec* mig = nullptr;
  int mig_slot = -1;
};

// Whether the scenario's driver lacks `function` (driver.missing).
bool Missing(const Library& lib, std::string_view function);

// Checks that `function` exists (driver.missing), init and the handle, delivers due events,
// reports a lost GPU, blocks through a due hang fault on `function` (releasing the lock), then
// steps the device up to now. A MIG device handle answers NOT_SUPPORTED unless allow_mig.
nvmlReturn_t EnterDevice(std::unique_lock<std::mutex>& lock, nvmlDevice_t handle,
                         std::string_view function, DeviceCall* call, bool allow_mig = false);

// Runs body(DeviceCall&) -> nvmlReturn_t for a valid, present device, under the lock.
template <class Body>
nvmlReturn_t WithDevice(nvmlDevice_t handle, std::string_view function, Body&& body,
                        bool allow_mig = false) {
  Library& lib = TheLibrary();
  std::unique_lock<std::mutex> lock(lib.mu);
  DeviceCall call;
  if (nvmlReturn_t rc = EnterDevice(lock, handle, function, &call, allow_mig); rc != NVML_SUCCESS)
    return rc;
  return body(call);
}

// The same for calls that also take a MIG device handle (call.mig is then set).
template <class Body>
nvmlReturn_t WithDeviceOrMig(nvmlDevice_t handle, std::string_view function, Body&& body) {
  return WithDevice(handle, function, std::forward<Body>(body), true);
}

// Copies a NUL-terminated string into a caller's buffer; INSUFFICIENT_SIZE if it does not fit.
inline nvmlReturn_t CopyString(std::string_view text, char* out, unsigned int length) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (length < text.size() + 1) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, text.data(), text.size());
  out[text.size()] = '\0';
  return NVML_SUCCESS;
}

}  // namespace gw::sim::api

#endif  // GPUWARDEN_SIM_API_INTERNAL_H_
