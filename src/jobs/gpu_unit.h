// jobs/gpu_unit.h — what a job holds: a whole GPU, or one MIG instance of a GPU (a "GPU unit").
//
// The task layer (allocations, idle streaks, per-job statistics, records) and the platform layer
// (idle reclaim, quotas, cost) key everything by a unit id, an `unsigned`:
//   a whole GPU        its NVML index, as before MIG existed (0, 1, ...)
//   a MIG instance     MigUnit(gpu index, GPU-instance id): the top bit set, the GPU index in
//                      bits 8-30 and the GPU-instance id (NVML's, < 256) in bits 0-7
// so maps keyed by GPU index keep working and old figures read back unchanged.
//
// Share: a unit counts as this much of a GPU in GPU counts, GPU-hours, idle GPU-seconds and cost.
// A whole GPU is 1. A MIG instance is its `slice_ratio` (collect::MigInstanceSnapshot): the
// compute slices of its profile ("3g" -> 3) / the GPU's maximum MIG device count (7 on
// A100/H100/H200), so a 3g.40gb instance of an H100 is 3/7 = 0.43 GPU (docs/configuration.md,
// "MIG instances in the task and platform layers").
//
// Threading: values and pure functions.
#ifndef GPUWARDEN_JOBS_GPU_UNIT_H_
#define GPUWARDEN_JOBS_GPU_UNIT_H_

#include <cstdio>
#include <string>

namespace gw::jobs {

inline constexpr unsigned kMigUnitBit = 0x80000000u;

constexpr unsigned MigUnit(unsigned gpu, unsigned gpu_instance_id) {
  return kMigUnitBit | ((gpu & 0x7FFFFFu) << 8) | (gpu_instance_id & 0xFFu);
}
constexpr bool IsMigUnit(unsigned unit) {
  return (unit & kMigUnitBit) != 0;
}
// The GPU index a unit lives on (a whole GPU: itself).
constexpr unsigned UnitGpu(unsigned unit) {
  return IsMigUnit(unit) ? (unit & ~kMigUnitBit) >> 8 : unit;
}
// The GPU-instance id of a MIG unit (meaningless for a whole GPU).
constexpr unsigned UnitMigInstance(unsigned unit) {
  return unit & 0xFFu;
}

// A MIG unit as a job record and the APIs describe it.
struct MigUnitInfo {
  unsigned gpu = 0;              // the GPU's index
  unsigned gpu_instance_id = 0;  // `mig_instance`
  std::string profile;           // "3g.40gb"
  std::string uuid;              // "MIG-…"
  double share = 0;              // slice_ratio
  unsigned unit() const { return MigUnit(gpu, gpu_instance_id); }
  bool operator==(const MigUnitInfo&) const = default;
};

// A unit as people read it: "2" for a whole GPU, "0/3" (GPU 0, GPU instance 3) for MIG.
inline std::string UnitText(unsigned unit) {
  if (!IsMigUnit(unit)) return std::to_string(unit);
  return std::to_string(UnitGpu(unit)) + "/" + std::to_string(UnitMigInstance(unit));
}

// "0.43 GPU (3g.40gb)": a share of a GPU with what it is.
inline std::string ShareText(double share, const std::string& profile) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f GPU", share);
  return profile.empty() ? std::string(buffer) : std::string(buffer) + " (" + profile + ")";
}

}  // namespace gw::jobs

#endif  // GPUWARDEN_JOBS_GPU_UNIT_H_
