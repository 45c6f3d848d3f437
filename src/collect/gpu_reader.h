// collect/gpu_reader.h — reads one GPU into its GpuSnapshot (internal to collect/).
//
// A GpuReader belongs to the collector's worker thread. Each read goes through a CallGuard,
// which times it, counts errors, lets the watchdog see a call that hangs, and skips calls the
// watchdog has marked hung. Values land in the snapshot's slot array in base units; a failed or
// unsupported read leaves its slots absent.
#ifndef GPUWARDEN_COLLECT_GPU_READER_H_
#define GPUWARDEN_COLLECT_GPU_READER_H_

#include <array>
#include <vector>

#include "collect/collector.h"
#include "collect/snapshot.h"
#include "nvml/device.h"

namespace gw::collect {

class CallGuard {
 public:
  virtual ~CallGuard() = default;
  // False if the call is quarantined (hung earlier): skip it.
  virtual bool Enter(size_t gpu, Call call) = 0;
  // Records the outcome. May throw (internally) to unwind an abandoned worker.
  virtual void Leave(size_t gpu, Call call, nvmlReturn_t status, double seconds) = 0;
};

class GpuReader {
 public:
  // Reads the identity (name, UUID, serial, PCI bus id) at once.
  GpuReader(size_t position, nvml::Device device, unsigned nvml_index,
            const CollectorOptions& options, CallGuard* guard);

  void FastCycle(double now_s);
  void SlowCycle(double now_s);
  void PeakSample();  // memory used only, between fast cycles

  const GpuSnapshot& snapshot() const { return snap_; }
  const nvml::Device& device() const { return device_; }

 private:
  template <class Fn>
  auto Read(Call call, Fn&& fn) -> decltype(fn());
  void Set(Slot slot, double value) { snap_.values[static_cast<size_t>(slot)] = value; }
  void Clear(Slot slot) { Set(slot, kAbsent); }
  void MarkLost();
  void ReadSamplePeaks();
  void ReadProcesses();

  size_t position_;
  nvml::Device device_;
  const CollectorOptions& options_;
  CallGuard* guard_;
  GpuSnapshot snap_;

  bool any_success_ = false;  // in the current fast cycle
  double last_fast_s_ = -1;
  std::array<double, 9> event_seconds_{};
  double memory_used_peak_ = kAbsent;
  unsigned long long util_since_us_ = 0, mem_util_since_us_ = 0, power_since_us_ = 0;
  unsigned long long process_util_since_us_ = 0;
  std::vector<nvmlSample_t> sample_scratch_;
  std::vector<nvml::ProcessInfo> process_scratch_;
  std::vector<nvmlProcessUtilizationSample_t> process_util_scratch_;
};

}  // namespace gw::collect

#endif  // GPUWARDEN_COLLECT_GPU_READER_H_
