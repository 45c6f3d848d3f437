// nvml/library.h — loading NVML at run time.
//
// gpuwarden never links libnvidia-ml: `Library::Open` dlopens the library named by config
// (default "libnvidia-ml.so.1", or libnvml-sim.so for the simulator) and resolves every function
// of GW_NVML_FUNCTIONS with dlsym. A symbol the library lacks stays null; the `Device` wrapper
// then answers NVML_ERROR_FUNCTION_NOT_FOUND for the reads that need it, so an old driver loses
// only those fields. Versioned entry points are tried newest first (_v3 → _v2 → _v1).
//
// Threading: a Library is immutable after Open; its function table may be read from any thread.
// NVML itself serializes calls on a driver-wide lock, so gpuwarden calls it from one collector
// thread (plus the event thread that waits in nvmlEventSetWait).
#ifndef GPUWARDEN_NVML_LIBRARY_H_
#define GPUWARDEN_NVML_LIBRARY_H_

#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "nvml/abi.h"

namespace gw::nvml {

inline constexpr const char* kDefaultLibrary = "libnvidia-ml.so.1";

// The resolved function table: one pointer per GW_NVML_FUNCTIONS entry, null when missing.
struct Api {
#define GW_NVML_POINTER(name, params) nvmlReturn_t(*name) params = nullptr;
  GW_NVML_FUNCTIONS(GW_NVML_POINTER)
#undef GW_NVML_POINTER
  const char* (*nvmlErrorString)(nvmlReturn_t) = nullptr;

  // Simulator-only extensions; null on a real driver.
  nvmlReturn_t (*nvmlSimConfigure)(const char*, int, double, char*, unsigned int) = nullptr;
  nvmlReturn_t (*nvmlSimAdvance)(unsigned long long) = nullptr;
  nvmlReturn_t (*nvmlSimGetClock)(unsigned long long*) = nullptr;
};

// The name NVML gives a return code ("GPU_IS_LOST", "NOT_SUPPORTED", …); never null.
const char* ReturnName(nvmlReturn_t code);

class Library {
 public:
  // Loads the library at `path` (a file name searched by the dynamic loader, or a path).
  // Fails with a one-line, actionable message when the file is missing or is not NVML.
  static Expected<std::unique_ptr<Library>> Open(const std::string& path);

  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  ~Library();  // shuts NVML down if Init succeeded, then dlcloses unless a call may still hang

  // nvmlInit_v2 (or nvmlInit on old drivers). Fails with a message such as
  // "NVML init failed: DRIVER_NOT_LOADED (the NVIDIA kernel driver is not running)".
  Status Init();
  bool initialized() const { return initialized_; }

  // Simulator only: selects the scenario and clock before Init. Fails on a real driver.
  // clock_mode: -1 as the scenario says, 0 real time × speed, 1 stepped by the host.
  Status ConfigureSimulator(const std::string& scenario, int clock_mode, double speed);
  bool is_simulator() const { return api_.nvmlSimConfigure != nullptr; }

  // Keeps the library mapped at destruction (used when a call hung and may still return).
  void LeakOnDestruction() { leak_ = true; }

  const Api& api() const { return api_; }
  const std::string& path() const { return path_; }
  // Names of GW_NVML_FUNCTIONS entries this library lacks (for the startup log line).
  const std::vector<std::string>& missing_symbols() const { return missing_; }

 private:
  Library() = default;
  void* handle_ = nullptr;
  std::string path_;
  Api api_;
  std::vector<std::string> missing_;
  bool initialized_ = false;
  bool leak_ = false;
};

}  // namespace gw::nvml

#endif  // GPUWARDEN_NVML_LIBRARY_H_
