// collect/gpu_reader.h — reads one GPU into its GpuSnapshot (internal to collect/).
//
// A GpuReader belongs to the collector's worker thread. Each read goes through a CallGuard,
// which times it, counts errors, lets the watchdog see a call that hangs, and skips calls the
// watchdog has marked hung. Values land in the snapshot's slot array in base units; a failed or
// unsupported read leaves its slots absent.
#ifndef GPUWARDEN_COLLECT_GPU_READER_H_
#define GPUWARDEN_COLLECT_GPU_READER_H_

#include <array>
#include <chrono>
#include <string_view>
#include <vector>

#include "base/stopwatch.h"
#include "collect/collector.h"
#include "collect/peak_window.h"
#include "collect/snapshot.h"
#include "nvml/device.h"
#include "nvml/gpm.h"

namespace gw::collect {

// The MIG profile in a MIG device's name: "NVIDIA H100 80GB HBM3 MIG 1g.10gb" -> "1g.10gb".
std::string_view MigProfileFromName(std::string_view name);
// Compute slices of a MIG profile: "3g.40gb" -> 3, "1c.3g.40gb" (one compute instance of a 3g
// GPU instance) -> 1, "1g.10gb+me" -> 1; 0 when it is not a profile.
unsigned MigComputeSlices(std::string_view profile);

// One process of NVML's list as the snapshot holds it (SM utilization is filled in later).
inline ProcessSample ToProcessSample(const nvml::ProcessInfo& p, unsigned gpu_instance_id) {
  ProcessSample out;
  out.pid = p.pid;
  out.memory_bytes = p.memory_known ? static_cast<double>(p.used_memory_bytes) : kAbsent;
  out.sm_utilization_ratio = kAbsent;
  out.gpu_instance_id = gpu_instance_id;
  return out;
}

class CallGuard {
 public:
  virtual ~CallGuard() = default;
  // False if the call is quarantined (hung earlier): skip it. Otherwise the call is in flight
  // (for the watchdog) until Leave.
  virtual bool Enter(size_t gpu, Call call) = 0;
  // Records the outcome and the call's duration in base/stopwatch.h ticks (read by the reader
  // right around the call, so the guard's own work is not counted as NVML time). May throw
  // (internally) to unwind an abandoned worker.
  virtual void Leave(size_t gpu, Call call, nvmlReturn_t status, uint64_t ticks) = 0;
};

class GpuReader {
 public:
  // Reads the identity (name, UUID, serial, PCI bus id) at once.
  GpuReader(size_t position, nvml::Device device, unsigned nvml_index,
            const CollectorOptions& options, CallGuard* guard);

  void FastCycle(double now_s);
  void SlowCycle(double now_s);
  void PeakSample();  // memory used only, between fast cycles
  // Re-enumerates the MIG instances now (after a MigConfigChange event), not at the next slow
  // cycle.
  void RescanMig();

  const GpuSnapshot& snapshot() const { return snap_; }
  const nvml::Device& device() const { return device_; }

 private:
  template <class Fn>
  auto Read(Call call, Fn&& fn) -> decltype(fn());
  void Set(Slot slot, double value) { snap_.values[static_cast<size_t>(slot)] = value; }
  void Clear(Slot slot) { Set(slot, kAbsent); }
  void MarkLost();
  void ReadSamplePeaks();
  void UpdatePeakWindows(double now_s);
  void ReadProcesses();

  // gpu_reader_datacenter.cpp: T.Limit margins, GPM, MIG and NVLink.
  void ReadTemperatureLimits();
  void ReadGpm(double now_s);
  void ReadMigFast(double now_s);
  void ReadMigLayout();
  void ReadMigProcesses();
  void ReadNvLink();
  void ReadNvLinkPerLink();
  void SetNvLinkTotals();
  void ClearGpm();
  void ClearMig();
  void ClearNvLink();
  void BuildGpmRequest();

  size_t position_;
  nvml::Device device_;
  const CollectorOptions& options_;
  CallGuard* guard_;
  GpuSnapshot snap_;

  bool any_success_ = false;  // in the current fast cycle
  double last_fast_s_ = -1;
  std::array<double, 9> event_seconds_{};
  double memory_used_peak_ = kAbsent;
  std::array<PeakWindow, kPeakWindowCount> peak_windows_;  // in kPeakWindows order
  unsigned long long util_since_us_ = 0, mem_util_since_us_ = 0, power_since_us_ = 0;
  unsigned long long process_util_since_us_ = 0;
  std::vector<nvmlSample_t> sample_scratch_;
  std::vector<nvml::ProcessInfo> process_scratch_;
  std::vector<nvmlProcessUtilizationSample_t> process_util_scratch_;

  // GPM: one sampler for the whole GPU; the metric ids asked for (the GW_GPM_SIGNALS, then the
  // per-link NVLink rates of the links the GPU has) and their values, sized once.
  nvml::GpmSampler gpm_;
  std::array<unsigned, GW_GPM_METRICS_CAPACITY> gpm_ids_{};
  std::array<double, GW_GPM_METRICS_CAPACITY> gpm_values_{};
  size_t gpm_id_count_ = 0;
  // GPM gives the PCIe rates (assumed where GPM runs until a cycle says otherwise): the slow
  // cycle then skips nvmlDeviceGetPcieThroughput.
  bool pcie_from_gpm_ = false;

  // MIG: per instance (parallel to snap_.mig) its device handle and GPM sampler.
  struct MigState {
    nvml::Device device;
    nvml::GpmSampler gpm;
  };
  std::vector<MigState> mig_;
  unsigned mig_max_devices_ = 0;  // nvmlDeviceGetMaxMigDeviceCount, read once
  std::vector<nvml::ProcessInfo> mig_process_scratch_;

  // NVLink: the field-value request (totals, then 4 per link), built when the link count changes.
  std::vector<nvmlFieldValue_t> nvlink_fields_;
  unsigned nvlink_links_ = 0;           // links the request covers
  bool nvlink_per_link_calls_ = false;  // the library has no field values: per-link calls
};

template <class Fn>
auto GpuReader::Read(Call call, Fn&& fn) -> decltype(fn()) {
  using R = decltype(fn());
  if (snap_.lost) return R::Fail(NVML_ERROR_GPU_IS_LOST);
  if (!guard_->Enter(position_, call)) return R::Fail(NVML_ERROR_TIMEOUT);
  const uint64_t t0 = Ticks();
  R result = fn();
  guard_->Leave(position_, call, result.status(), TicksSince(t0));
  if (result.ok()) {
    any_success_ = true;
  } else if (result.status() == NVML_ERROR_GPU_IS_LOST) {
    MarkLost();
  } else if (!result.unsupported() && result.status() != NVML_ERROR_NOT_FOUND) {
    snap_.last_error_code = result.status();
  }
  return result;
}

}  // namespace gw::collect

#endif  // GPUWARDEN_COLLECT_GPU_READER_H_
