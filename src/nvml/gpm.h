// nvml/gpm.h — GPM profiling counters (SM activity, occupancy, tensor and FP pipes, DRAM, PCIe and
// NVLink rates) from two consecutive samples.
//
// NVML's GPM works in three steps: allocate opaque sample buffers, fill one per period
// (nvmlGpmSampleGet, or nvmlGpmMigSampleGet for one MIG GPU instance), and compute metrics from an
// older and a newer sample (nvmlGpmMetricsGet). A GpmSampler owns exactly two buffers, allocated
// on its first sample and freed by its destructor, and alternates them: each Sample() overwrites
// the older one, so steady-state sampling allocates nothing. It refuses to sample sooner than
// kGpmMinIntervalS after the previous sample (NVML's own refresh floor); Metrics() needs two
// samples. Values are NVML's: percent 0-100, or MiB/s for the *_PER_SEC metrics.
//
// Threading: like Device, a sampler is used by one thread (the collector's NVML worker).
#ifndef GPUWARDEN_NVML_GPM_H_
#define GPUWARDEN_NVML_GPM_H_

#include <cstddef>

#include "nvml/device.h"

namespace gw::nvml {

inline constexpr double kGpmMinIntervalS = 0.1;

class GpmSampler {
 public:
  GpmSampler() = default;
  // Samples the whole GPU `device`, or, with `gpu_instance_id`, one MIG GPU instance of it
  // (`device` is then the parent GPU's handle).
  explicit GpmSampler(const Device& device, unsigned gpu_instance_id = NVML_MIG_NO_INSTANCE);
  ~GpmSampler();
  GpmSampler(GpmSampler&& other) noexcept;
  GpmSampler& operator=(GpmSampler&& other) noexcept;
  GpmSampler(const GpmSampler&) = delete;
  GpmSampler& operator=(const GpmSampler&) = delete;

  // Whether a sample at `now_s` (seconds on any steady clock) is allowed: the first one always,
  // later ones kGpmMinIntervalS after the previous successful sample.
  // (A nanosecond of slack: 5.1 - 5.0 is not quite 0.1 in floating point.)
  bool Due(double now_s) const {
    return samples_ == 0 || now_s - last_s_ >= kGpmMinIntervalS - 1e-9;
  }
  // One nvmlGpmSampleGet (or nvmlGpmMigSampleGet) into the older buffer; the first call also
  // allocates both buffers. NOT_READY without any NVML call when not Due(now_s).
  Result<bool> Sample(double now_s);
  // True once two good samples exist: Metrics() can compute.
  bool ready() const { return samples_ >= 2; }
  // One nvmlGpmMetricsGet over the last two samples: values[i] gets metric ids[i] (NVML's unit),
  // NaN where NVML could not compute that one. n <= GW_GPM_METRICS_CAPACITY. The result is the
  // number of metrics computed. NOT_READY without any NVML call before two samples.
  Result<unsigned> Metrics(const unsigned* ids, size_t n, double* values) const;

  // Forgets the samples taken (keeping the buffers): the next Metrics() needs two new ones. For a
  // MIG instance that outlived a re-partition, whose old sample belongs to the old layout.
  void Restart() { samples_ = 0; }

  unsigned gpu_instance_id() const { return gpu_instance_id_; }
  bool allocated() const { return buffers_[0] != nullptr; }

 private:
  void Free();

  const Api* api_ = nullptr;
  nvmlDevice_t device_ = nullptr;
  unsigned gpu_instance_id_ = NVML_MIG_NO_INSTANCE;
  nvmlGpmSample_t buffers_[2] = {nullptr, nullptr};
  int newest_ = 1;   // index of the newer good sample
  int samples_ = 0;  // good samples held: 0, 1 or 2
  double last_s_ = 0;
};

}  // namespace gw::nvml

#endif  // GPUWARDEN_NVML_GPM_H_
