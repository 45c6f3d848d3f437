// A scenario: the simulated fleet, its workloads, processes and faults over virtual time.
//
// Scenarios are YAML files (format: docs/scenarios.md). `LoadScenario` accepts either the name of
// a scenario embedded into the library at build time ("demo", "power-cap") or a path on disk (any
// text containing '/' or ending in ".yaml"). Every error names the file and line at fault:
// "power-cap.yaml:12: faults[0]: unknown fault type 'power_capp'".
//
// All times are virtual microseconds since the scenario started (t = 0 at nvmlInit). Parsing is
// pure: no global state, safe from any thread.
#ifndef GPUWARDEN_SIM_SCENARIO_H_
#define GPUWARDEN_SIM_SCENARIO_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "sim/gpu_model.h"

namespace gw::sim {

using VirtualUs = std::int64_t;  // virtual microseconds since the scenario started
inline constexpr VirtualUs kForever = INT64_MAX;

enum class ClockMode { kRealtime, kStepped };

enum class WorkloadType {
  kIdle,
  kIdleAllocated,
  kTraining,
  kInference,
  kMemoryBound,
  kSpikes,
  kBusyHollow,  // utilization ~100 % from kernels that keep a few SMs busy (launch-bound)
};

// One segment of a GPU's timeline: from `start_us` until the next segment starts.
struct WorkloadSegment {
  VirtualUs start_us = 0;
  WorkloadType type = WorkloadType::kIdle;
  double util_pct = 0;           // SM busy percent (training/inference bursts/spike peaks)
  double mem_util_pct = 0;       // memory-controller busy percent
  double base_util_pct = 0;      // inference between bursts, spikes between spikes
  double base_mem_util_pct = 0;  // spikes between spikes
  double enc_util_pct = 0;
  double dec_util_pct = 0;
  double duty = 0;              // inference: share of 500 ms slots that are bursts
  VirtualUs period_us = 0;      // spikes: one spike per period
  VirtualUs spike_us = 0;       // spikes: how long each spike lasts
  double spike_memory_mib = 0;  // spikes: extra device memory held during a spike
  // Profiling (GPM) overrides in percent at the segment's full `util`; negative: the workload
  // type's default (docs/scenarios.md, "Profiling counters").
  double sm_active_pct = -1;
  double sm_occupancy_pct = -1;
  double tensor_pct = -1;  // HMMA (FP16/BF16 tensor) pipe
  double dram_pct = -1;
  double nvlink_pct = -1;  // share of each NVLink link's bandwidth, per direction
};

struct ProcessSpec {
  unsigned pid = 0;
  std::string name;
  double memory_mib = 0;
  VirtualUs start_us = 0;
  VirtualUs stop_us = kForever;
  std::optional<double> sm_util_pct;   // default: an equal share of the GPU's utilization
  std::optional<double> mem_util_pct;  // default: an equal share of the memory utilization
  // MIG placement (on a MIG-enabled GPU): the instance at this position of the layout's list,
  // else the first instance of this profile, else the instance with this MIG UUID. Resolved
  // against the layout in force at each instant; none: the process is on no instance.
  std::optional<unsigned> mig_index;
  std::string mig_profile;
  std::string mig_uuid;
  // A host process's workload (sim/host_processes.h); scenario processes have none.
  std::optional<WorkloadSegment> workload;
};

// One MIG device: a GPU instance with one compute instance spanning it.
struct MigInstanceSpec {
  const MigProfile* profile = nullptr;
  unsigned gpu_instance_id = 0;  // from the placement (docs/scenarios.md, "MIG")
  unsigned compute_instance_id = 0;
  std::string uuid;  // "MIG-…"; kept across re-partitions while (id, profile) stays
  std::optional<WorkloadSegment> workload;  // default: the GPU's timeline
};

// A GPU's MIG configuration from `at_us` until the next one.
struct MigLayout {
  VirtualUs at_us = 0;
  bool enabled = false;                    // current mode
  bool pending = false;                    // pending mode (after the next reset)
  std::vector<MigInstanceSpec> instances;  // in scenario order
};
inline constexpr std::size_t kMaxMigLayouts = 200;  // a handle carries the layout's index

enum class FaultType {
  kEccCorrectable,
  kEccUncorrectable,
  kRowRemap,
  kRemapFailure,
  kPageRetirement,
  kCoolingFailure,
  kPowerBrake,
  kPowerCap,
  kPcieReplays,
  kFallOffBus,
  kXid,
  kHang,
  kNvLinkDown,
  kNvLinkErrors,
};

struct FaultSpec {
  FaultType type = FaultType::kXid;
  int line = 0;  // where it was written, for messages
  VirtualUs at_us = 0;
  VirtualUs duration_us = kForever;  // ranged faults; pending_for for remap/retirement
  double rate = 0;                   // per hour (ECC) or per minute (PCIe replays)
  unsigned count = 1;                // DBEs, remapped rows, retired pages
  bool double_bit = true;            // row remap / page retirement cause
  double factor = 3.0;               // cooling failure: thermal resistance multiplier
  unsigned limit_w = 0;              // power cap
  unsigned xid = 0;                  // xid fault
  std::string function;              // hang: the NVML function that blocks
  double hang_seconds = 0;           // hang: real seconds; 0 = until nvmlShutdown
  int link = -1;                     // nvlink faults: the link; -1 = every link (nvlink_errors)
  VirtualUs xid_period_us = 0;       // nvlink_errors: an XID 74 every period (0: none)
};

// One GPU of the fleet, after `count:` replication (each replica is its own GpuSpec).
struct GpuSpec {
  const GpuModel* model = nullptr;
  unsigned index = 0;
  std::string uuid;  // "GPU-..." (generated when the scenario gives none)
  std::string serial;
  unsigned pci_domain = 0;
  unsigned pci_bus = 0;
  unsigned power_limit_w = 0;  // enforced limit at t = 0
  double ambient_c = 30;
  VirtualUs loop_us = 0;            // timeline period; 0 = hold the last segment
  std::uint64_t aggregate_sbe = 0;  // historical ECC counts before the driver loaded
  std::uint64_t aggregate_dbe = 0;
  std::vector<WorkloadSegment> workload;  // sorted by start, first at 0
  std::vector<ProcessSpec> processes;
  std::vector<FaultSpec> faults;
  std::vector<MigLayout> mig;    // sorted by time, the first at 0; empty: MIG disabled
  bool nvlink_connected = true;  // the model's links are cabled (scenario `nvlink:`)
};

struct DriverSpec {
  std::string version = "550.127.08";
  int cuda_version = 12040;
  unsigned process_info_v3_stride = 24;  // 32 emulates drivers 535.43-535.86
  // Functions this driver lacks: they answer NVML_ERROR_FUNCTION_NOT_FOUND (docs/scenarios.md).
  std::vector<std::string> missing;
};

struct Scenario {
  std::string name;
  std::string description;
  std::uint64_t seed = 1;
  std::int64_t start_time_s = 0;  // unix seconds of virtual t = 0
  ClockMode clock = ClockMode::kRealtime;
  double speed = 1.0;
  DriverSpec driver;
  std::vector<GpuSpec> gpus;
  // Real processes on this machine that declare GPUWARDEN_SIM_WORKLOAD drive the GPUs named by
  // their CUDA_VISIBLE_DEVICES / SLURM_JOB_GPUS (sim/host_processes.h). Off by default.
  bool host_processes = false;
  double host_scan_interval_s = 1.0;  // real seconds between scans of host_proc_root
  std::string host_proc_root = "/proc";
};

// Parses scenario text. `file_label` prefixes error messages ("demo.yaml"). `default_start_s`
// is used when the scenario has no start_time (the caller passes the wall clock).
Expected<Scenario> ParseScenario(std::string_view text, const std::string& file_label,
                                 std::int64_t default_start_s);

// Loads by embedded name or from disk (see the file comment).
Expected<Scenario> LoadScenario(const std::string& name_or_path, std::int64_t default_start_s);

// The scenarios compiled into the library: name (file stem) -> YAML text. Generated at build time.
struct EmbeddedScenario {
  std::string_view name;
  std::string_view text;
};
std::span<const EmbeddedScenario> EmbeddedScenarios();

// The segment a workload type name stands for with its default parameters ("training",
// "inference", "idle", "idle_allocated", "memory_bound", "spikes"; '-' may stand for '_').
// False if the name is unknown.
bool DefaultWorkloadSegment(std::string_view type, WorkloadSegment* segment);

// Parses "1.5s", "500ms", "2m", "1h30m", "10" (seconds). False if malformed or negative.
bool ParseDurationUs(std::string_view text, VirtualUs* out);

// The NVML function names a hang fault may name (every function in GW_NVML_FUNCTIONS).
bool IsKnownNvmlFunction(std::string_view name);

// The MIG layout in force at t, or nullptr when the GPU has none (MIG disabled throughout).
const MigLayout* MigLayoutAt(const GpuSpec& gpu, VirtualUs t_us);
// Index into layout.instances of the instance a process runs in; -1 for none.
int MigInstanceOf(const MigLayout& layout, const ProcessSpec& process);

}  // namespace gw::sim

#endif  // GPUWARDEN_SIM_SCENARIO_H_
