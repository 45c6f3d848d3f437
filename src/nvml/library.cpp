#include "nvml/library.h"

#include <dlfcn.h>

#include <cstring>

namespace gw::nvml {

const char* ReturnName(nvmlReturn_t code) {
  switch (code) {
    case NVML_SUCCESS:
      return "SUCCESS";
    case NVML_ERROR_UNINITIALIZED:
      return "UNINITIALIZED";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case NVML_ERROR_NOT_SUPPORTED:
      return "NOT_SUPPORTED";
    case NVML_ERROR_NO_PERMISSION:
      return "NO_PERMISSION";
    case NVML_ERROR_ALREADY_INITIALIZED:
      return "ALREADY_INITIALIZED";
    case NVML_ERROR_NOT_FOUND:
      return "NOT_FOUND";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "INSUFFICIENT_SIZE";
    case NVML_ERROR_INSUFFICIENT_POWER:
      return "INSUFFICIENT_POWER";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "DRIVER_NOT_LOADED";
    case NVML_ERROR_TIMEOUT:
      return "TIMEOUT";
    case NVML_ERROR_IRQ_ISSUE:
      return "IRQ_ISSUE";
    case NVML_ERROR_LIBRARY_NOT_FOUND:
      return "LIBRARY_NOT_FOUND";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "FUNCTION_NOT_FOUND";
    case NVML_ERROR_CORRUPTED_INFOROM:
      return "CORRUPTED_INFOROM";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU_IS_LOST";
    case NVML_ERROR_RESET_REQUIRED:
      return "RESET_REQUIRED";
    case NVML_ERROR_OPERATING_SYSTEM:
      return "OPERATING_SYSTEM";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return "LIB_RM_VERSION_MISMATCH";
    case NVML_ERROR_IN_USE:
      return "IN_USE";
    case NVML_ERROR_MEMORY:
      return "MEMORY";
    case NVML_ERROR_NO_DATA:
      return "NO_DATA";
    case NVML_ERROR_VGPU_ECC_NOT_SUPPORTED:
      return "VGPU_ECC_NOT_SUPPORTED";
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
      return "INSUFFICIENT_RESOURCES";
    case NVML_ERROR_FREQ_NOT_SUPPORTED:
      return "FREQ_NOT_SUPPORTED";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
      return "ARGUMENT_VERSION_MISMATCH";
    case NVML_ERROR_DEPRECATED:
      return "DEPRECATED";
    case NVML_ERROR_NOT_READY:
      return "NOT_READY";
    case NVML_ERROR_GPU_NOT_FOUND:
      return "GPU_NOT_FOUND";
    case NVML_ERROR_INVALID_STATE:
      return "INVALID_STATE";
    case NVML_ERROR_RESET_TYPE_NOT_SUPPORTED:
      return "RESET_TYPE_NOT_SUPPORTED";
    default:
      return "UNKNOWN";
  }
}

namespace {

// What a person should do about an init failure, beyond NVML's own word for it.
const char* InitHint(nvmlReturn_t code) {
  switch (code) {
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "the NVIDIA kernel driver is not running";
    case NVML_ERROR_NO_PERMISSION:
      return "no permission to open /dev/nvidia*";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return "the NVML library and the kernel driver versions differ; reboot or reload the driver";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "the simulator rejected its scenario";
    default:
      return "see the driver's kernel log (dmesg)";
  }
}

}  // namespace

Expected<std::unique_ptr<Library>> Library::Open(const std::string& path) {
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return Error{"cannot load NVML library '" + path + "': " + (why ? why : "unknown error") +
                 (path == kDefaultLibrary
                      ? " (no NVIDIA driver on this machine? use --simulate demo to try gpuwarden "
                        "without a GPU)"
                      : "")};
  }
  std::unique_ptr<Library> lib(new Library());
  lib->handle_ = handle;
  lib->path_ = path;
  Api& api = lib->api_;
#define GW_NVML_RESOLVE(name, params)                                    \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(handle, #name)); \
  if (api.name == nullptr) lib->missing_.emplace_back(#name);
  GW_NVML_FUNCTIONS(GW_NVML_RESOLVE)
#undef GW_NVML_RESOLVE
  api.nvmlErrorString =
      reinterpret_cast<decltype(api.nvmlErrorString)>(dlsym(handle, "nvmlErrorString"));
  api.nvmlSimConfigure =
      reinterpret_cast<decltype(api.nvmlSimConfigure)>(dlsym(handle, "nvmlSimConfigure"));
  api.nvmlSimAdvance =
      reinterpret_cast<decltype(api.nvmlSimAdvance)>(dlsym(handle, "nvmlSimAdvance"));
  api.nvmlSimGetClock =
      reinterpret_cast<decltype(api.nvmlSimGetClock)>(dlsym(handle, "nvmlSimGetClock"));

  if (api.nvmlInit_v2 == nullptr && api.nvmlInit == nullptr) {
    dlclose(handle);
    lib->handle_ = nullptr;
    return Error{"'" + path +
                 "' is not an NVML library (it exports neither nvmlInit_v2 nor nvmlInit)"};
  }
  if (api.nvmlDeviceGetCount_v2 == nullptr && api.nvmlDeviceGetCount == nullptr) {
    dlclose(handle);
    lib->handle_ = nullptr;
    return Error{"'" + path + "' lacks nvmlDeviceGetCount: cannot enumerate GPUs"};
  }
  return lib;
}

Library::~Library() {
  if (initialized_ && !leak_ && api_.nvmlShutdown != nullptr) api_.nvmlShutdown();
  if (handle_ != nullptr && !leak_) dlclose(handle_);
}

Status Library::Init() {
  if (initialized_) return Status::Ok();
  nvmlReturn_t rc = api_.nvmlInit_v2 ? api_.nvmlInit_v2() : api_.nvmlInit();
  if (rc != NVML_SUCCESS) {
    return Error{std::string("NVML init failed: ") + ReturnName(rc) + " (" + InitHint(rc) + ")"};
  }
  initialized_ = true;
  return Status::Ok();
}

Status Library::ConfigureSimulator(const std::string& scenario, int clock_mode, double speed) {
  if (api_.nvmlSimConfigure == nullptr) {
    return Error{"'" + path_ + "' is not the gpuwarden simulator (no nvmlSimConfigure)"};
  }
  char error[1024] = {0};
  nvmlReturn_t rc = api_.nvmlSimConfigure(scenario.c_str(), clock_mode, speed, error, sizeof error);
  if (rc != NVML_SUCCESS) {
    return Error{std::string("simulator scenario rejected: ") +
                 (error[0] ? error : ReturnName(rc))};
  }
  return Status::Ok();
}

}  // namespace gw::nvml
