// The catalogue of simulated GPU models and their constants.
//
// Each model carries what NVML reports for that board (name, memory, power limits, clocks,
// temperature thresholds, PCI device id, architecture) and what the simulator needs to move its
// readings in a believable way (idle and full-load power, thermal resistance and time constant).
// Values come from docs/nvml-notes.md ("Typical values") and public spec sheets; where that marks
// a value UNCONFIRMED the simulator uses a plausible one (docs/scenarios.md lists them all).
//
// Thread-safety: the catalogue is immutable; every function here may be called from any thread.
#ifndef GPUWARDEN_SIM_GPU_MODEL_H_
#define GPUWARDEN_SIM_GPU_MODEL_H_

#include <span>
#include <string_view>

namespace gw::sim {

// NVML architecture codes (nvmlDeviceArchitecture_t). Volta is not declared in nvml/abi.h.
inline constexpr unsigned kArchVolta = 5;

// The most NVLink links a simulated model has (NVML allows 36; GPM reports links 0-17).
inline constexpr unsigned kMaxSimNvLinks = 18;

// A MIG GPU-instance profile: "3g.40gb" takes 3 of the GPU's 7 compute slices and 4 of its 8
// memory slices. `placements` lists the memory-slice positions an instance may start at
// (docs/scenarios.md, "MIG").
struct MigProfile {
  std::string_view name;
  unsigned compute_slices;
  unsigned memory_slices;
  unsigned placement_mask;  // bit s: may start at memory slice s
};

struct GpuModel {
  std::string_view short_name;   // scenario alias, e.g. "H100"
  std::string_view nvml_name;    // what nvmlDeviceGetName reports, e.g. "NVIDIA H100 80GB HBM3"
  unsigned architecture;         // NVML_DEVICE_ARCH_*
  unsigned pci_device_id;        // upper 16 bits of nvmlPciInfo_t.pciDeviceId
  unsigned memory_total_mib;     // nvmlMemory_t.total / 2^20
  unsigned memory_reserved_mib;  // nvmlMemory_v2_t.reserved / 2^20 (firmware, ECC, driver)
  unsigned power_default_w;      // default power management limit
  unsigned power_min_w;          // lowest settable limit
  unsigned power_max_w;          // highest settable limit
  double idle_power_w;           // board power with no work at idle clocks
  double full_power_w;           // demanded power at 100 % SM and memory activity at max clock
  unsigned max_sm_clock_mhz;
  unsigned max_mem_clock_mhz;
  unsigned idle_sm_clock_mhz;
  unsigned idle_mem_clock_mhz;
  unsigned shutdown_c;                // NVML_TEMPERATURE_THRESHOLD_SHUTDOWN
  unsigned slowdown_c;                // NVML_TEMPERATURE_THRESHOLD_SLOWDOWN (HW thermal slowdown)
  unsigned gpu_max_c;                 // NVML_TEMPERATURE_THRESHOLD_GPU_MAX (SW thermal slowdown)
  unsigned mem_max_c;                 // NVML_TEMPERATURE_THRESHOLD_MEM_MAX; 0 = not reported
  double thermal_resistance_c_per_w;  // steady-state rise above ambient per watt
  double thermal_tau_s;               // first-order thermal time constant
  bool ecc;                           // ECC memory (enabled by default)
  bool row_remapping;                 // Ampere and newer
  bool page_retirement;               // pre-Ampere mechanism
  bool has_fan;                       // passive boards report NOT_SUPPORTED for the fan speed
  bool memory_temperature;            // HBM boards report field 82 (NVML_FI_DEV_MEMORY_TEMP)
  bool averaged_power;  // nvmlDeviceGetPowerUsage is a 1 s average (Ampere+ but GA100)
  // ---- datacenter features (docs/nvml-notes.md, "GPM, MIG, NVLink") ----
  bool gpm = false;              // nvmlGpmQueryDeviceSupport says supported (Hopper and newer)
  bool tlimit = false;           // field values 193-196 (T.Limit margins) answer
  unsigned nvlinks = 0;          // NVLink links (0: a PCIe board, NVLink calls NOT_SUPPORTED)
  double nvlink_gbps = 0;        // per link and direction, GB/s
  unsigned max_mig_devices = 0;  // nvmlDeviceGetMaxMigDeviceCount; 0 = no MIG
  std::span<const MigProfile> mig_profiles{};
};

// The model's MIG profile of that name ("1g.10gb"), or nullptr.
const MigProfile* FindMigProfile(const GpuModel& model, std::string_view name);

// Every model the simulator knows, in documentation order.
std::span<const GpuModel> AllGpuModels();

// Finds a model by its NVML name or its short alias (exact, case-sensitive); nullptr if unknown.
const GpuModel* FindGpuModel(std::string_view name);

}  // namespace gw::sim

#endif  // GPUWARDEN_SIM_GPU_MODEL_H_
