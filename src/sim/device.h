// One simulated GPU: its physics state, its sample buffer, and its readings.
//
// Physics runs in fixed 100 ms steps of virtual time; step k ends at t = k * 100 ms and its
// sample carries that timestamp. `AdvanceTo(t)` runs every whole step up to t, so readings are
// a pure function of the scenario and t however the device is polled (lazy and eager stepping give
// the same numbers). Readings describe the last completed step.
//
// Per step: the workload gives SM and memory activity; demanded power is
//   P(f) = idle + (full - idle) * (0.85 util + 0.15 mem_util) * (f / f_max)^2 (+ noise),
// the SM clock f is the highest 15 MHz bin that satisfies the enforced power limit (SwPowerCap),
// the SW thermal controller (at/above GPU_MAX; SwThermalSlowdown), HW thermal slowdown (at/above
// SLOWDOWN, 45 % of f_max; HwThermalSlowdown + HwSlowdown) and the power brake (20 % of f_max;
// HwPowerBrakeSlowdown + HwSlowdown); temperature follows dT/dt = (ambient + R P - T) / tau.
//
// MIG (docs/scenarios.md, "MIG"): while a layout with MIG enabled is in force, each instance with
// a running process runs a workload (its host process's, the instance's own, else the GPU's
// timeline) and the GPU's activity is the sum of its instances' weighted by compute slices / the
// model's maximum MIG device count. Profiling counters (sim/gpm.h) accumulate per GPU and per
// instance; an instance's counters start at 0 when a re-partition creates it and carry on when
// one keeps it.
//
// Thread-safety: none; the fleet's owner serialises access.
#ifndef GPUWARDEN_SIM_DEVICE_H_
#define GPUWARDEN_SIM_DEVICE_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "sim/faults.h"
#include "sim/gpm.h"
#include "sim/scenario.h"
#include "sim/workload.h"

namespace gw::sim {

inline constexpr VirtualUs kStepUs = 100'000;
inline constexpr std::size_t kSampleSteps = 256;  // 25.6 s of 100 ms samples per GPU

// What one physics step leaves in the sample buffer (nvmlDeviceGetSamples).
struct StepSample {
  std::uint32_t power_mw = 0;
  std::uint16_t sm_clock_mhz = 0;
  std::uint16_t mem_clock_mhz = 0;
  std::uint8_t util_pct = 0;
  std::uint8_t mem_util_pct = 0;
  std::uint8_t enc_util_pct = 0;
  std::uint8_t dec_util_pct = 0;
};

// A hang fault's progress in real time (the API layer blocks callers on it).
struct HangState {
  const FaultSpec* fault = nullptr;
  bool started = false;
  std::chrono::steady_clock::time_point release_at{};  // meaningful when started and timed
};

class Device {
 public:
  Device(const GpuSpec& spec, std::uint64_t seed);
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const GpuSpec& spec() const { return spec_; }
  const GpuModel& model() const { return *spec_.model; }

  // Runs every whole physics step up to virtual time t (no-op once the GPU is lost).
  void AdvanceTo(VirtualUs t_us);
  // True from the fall_off_bus time on.
  bool LostAt(VirtualUs t_us) const { return t_us >= lost_at_us_; }

  // ---- readings as of the last completed step ----
  std::int64_t last_step() const { return step_; }
  VirtualUs last_step_us() const { return step_ * kStepUs; }
  const StepSample& latest() const { return Sample(step_); }
  const Activity& activity() const { return activity_; }
  unsigned temperature_c() const;
  unsigned memory_temperature_c() const;
  unsigned fan_speed_pct() const;
  unsigned average_power_mw() const;  // over the last 1 s (10 steps)
  unsigned power_limit_w() const { return power_limit_w_; }
  std::uint64_t energy_mj() const { return static_cast<std::uint64_t>(energy_mj_); }
  std::uint64_t clock_event_reasons() const { return reasons_; }
  int pstate() const { return pstate_; }
  // Device memory the running processes (and transient spikes) hold, bytes, clamped to usable.
  std::uint64_t used_memory_bytes() const;
  std::uint64_t total_memory_bytes() const;
  std::uint64_t reserved_memory_bytes() const;
  // Processes alive at the last step: the scenario's in scenario order, then host processes.
  std::vector<const ProcessSpec*> RunningProcesses() const;
  // The device memory each of RunningProcesses() holds (MiB, same order): what it asks for, as far
  // as the card's usable memory still has room after the processes before it. A host process
  // joining a GPU that a scenario process already fills gets what is left (0 when nothing is), so
  // the processes' memory never adds up to more than the card and used_memory_bytes() covers it.
  std::vector<double> RunningProcessMemoryMib() const;

  // ---- profiling counters, NVLink and MIG ----
  const GpmCounters& gpm_counters() const { return gpm_; }
  // The MIG layout in force at the last step (nullptr: none), its index in the spec's list, and
  // whether MIG is enabled (current mode).
  const MigLayout* mig_layout() const { return layout_; }
  std::size_t mig_layout_index() const;
  bool mig_enabled() const { return layout_ != nullptr && layout_->enabled; }
  // Per instance slot of the enabled layout (slot < instance count). An instance a re-partition
  // keeps (sim/scenario.h, SameMigInstance) keeps its counters.
  const GpmCounters& instance_counters(std::size_t slot) const { return instances_[slot].gpm; }
  std::uint64_t instance_total_memory_bytes(std::size_t slot) const;
  std::uint64_t instance_used_memory_bytes(std::size_t slot) const;
  // The slot of the instance a running process is placed on, -1 for none (or MIG disabled).
  int InstanceOf(const ProcessSpec& process) const;

  // Host processes (sim/host_processes.h) on this GPU from now on: they are listed as running,
  // and `workload` (if set) replaces the timeline's activity in later steps.
  void SetHostProcesses(std::vector<ProcessSpec> processes,
                        std::optional<WorkloadSegment> workload);

  // ---- the sample buffer ----
  // Steps [oldest_sample_step(), last_step()] are buffered.
  std::int64_t oldest_sample_step() const;
  const StepSample& Sample(std::int64_t step) const { return samples_[step % kSampleSteps]; }

  // The hang fault on `function` that is due at t, if any.
  HangState* HangFor(std::string_view function, VirtualUs t_us);

 private:
  void Step(std::int64_t k);
  double DemandedPower(double activity, double clock_ratio, double noise_w) const;
  Activity MigActivity(VirtualUs mid, VirtualUs t_end);
  void AccumulateCounters(std::int64_t k, VirtualUs t_end);

  struct InstanceRuntime {
    GpmCounters gpm;
  };

  const GpuSpec& spec_;
  std::uint64_t seed_;
  VirtualUs lost_at_us_;
  std::int64_t step_ = -1;
  double temperature_c_ = 0;
  double sw_thermal_cap_mhz_ = 0;
  bool hw_thermal_engaged_ = false;
  double energy_mj_ = 0;
  unsigned power_limit_w_ = 0;
  std::uint64_t reasons_ = 0;
  int pstate_ = 8;
  Activity activity_;
  std::array<StepSample, kSampleSteps> samples_{};
  std::vector<HangState> hangs_;
  std::vector<ProcessSpec> host_processes_;
  std::optional<WorkloadSegment> host_workload_;
  GpmCounters gpm_;
  const MigLayout* layout_ = nullptr;
  std::vector<InstanceRuntime> instances_;  // one per instance of an enabled layout
};

}  // namespace gw::sim

#endif  // GPUWARDEN_SIM_DEVICE_H_
