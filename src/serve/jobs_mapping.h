// serve/jobs_mapping.h — the task layer's process -> job mapping (who runs each GPU process NVML
// lists), recomputed only when what it is computed from changes.
//
//   ProcessJobMapping mapping("/proc");
//   if (mapping.Update(snapshot)) {            // each recorded snapshot
//     for (const auto& p : mapping.processes()) ...   // changed: rebuild what depends on it
//   }
//
// The mapping depends on the process lists of the GPUs and, for each pid, on the process behind it
// (its cgroup and allow-listed environment, read once per pid and start time by jobs::Attributor).
// `Update` decides, cheapest first:
//   1. the same (GPU index, pid) lists as at the last pass, and the snapshot's slow-cycle count
//      has not moved (the collector re-reads process lists only on its slow cycle; between them a
//      snapshot carries the last lists): reused, nothing read, nothing allocated;
//   2. the same lists, and a slow cycle since: each pid's start time is checked (one stat read
//      each, jobs::Attributor::StillCached) — a pid that exited or was reused by another process
//      (another job's cgroup) fails it; if none does, reused, nothing allocated;
//   3. otherwise (a process appeared or went, a GPU's list changed, a pid was reused or exited):
//      a full attribution pass, `processes()` rebuilt, `Update` returns true.
// So a process that exits between slow cycles keeps its attribution until the next slow cycle
// (when NVML's list changes, or its stat read fails) — as long as NVML's list itself is carried.
// Snapshots built without a collector (tests) keep a slow-cycle count of 0: only list changes
// trigger passes there.
//
// Units (jobs/gpu_unit.h): a process NVML lists on a MIG instance (its GPU-instance id on the
// GPU's list, or on the instance's own list) is on that instance's unit; a process listed on a
// MIG-enabled GPU without an instance is on the instance its CUDA_VISIBLE_DEVICES names by MIG
// UUID ("MIG-…", read from /proc with the allow-listed environment), else on the GPU.
//
// Sources (jobs::AttributionSource, e.g. k8s::PodAttributionSource) refine each process at every
// full pass; each is told the UUID of the unit NVML listed the process on (a MIG instance's own
// UUID for a process on an instance, else the GPU's). When what a source knows changes (the
// kubelet's pods moved), `Invalidate` makes the next `Update` a full pass (the /proc reads stay
// cached: only the refinement runs again).
//
// Threading: one thread at a time (the recorder's, under JobsService's lock). Errors: a process
// that cannot be read is left out of `processes()` (jobs::Attributor).
#ifndef GPUWARDEN_SERVE_JOBS_MAPPING_H_
#define GPUWARDEN_SERVE_JOBS_MAPPING_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "collect/snapshot.h"
#include "jobs/attribution.h"
#include "jobs/job_records.h"

namespace gw::serve {

class ProcessJobMapping {
 public:
  explicit ProcessJobMapping(std::string proc_root);
  ProcessJobMapping(const ProcessJobMapping&) = delete;
  ProcessJobMapping& operator=(const ProcessJobMapping&) = delete;

  // Brings the mapping up to date with `snapshot`; true when it was recomputed (then
  // `processes()` may differ from before), false when the previous one still holds.
  bool Update(const collect::Snapshot& snapshot);

  // Adds a source that refines every attribution (before the first Update).
  void AddSource(std::unique_ptr<jobs::AttributionSource> source);
  // The next Update recomputes the mapping, whatever the snapshot.
  void Invalidate() { valid_ = false; }

  // Every GPU process that could be attributed, in the snapshot's order (GPU, then NVML's order,
  // then each MIG instance's list); `gpu` is the unit it runs on.
  const std::vector<jobs::JobLedger::AttributedGpuProcess>& processes() const { return processes_; }

  // For tests and benchmarks: full attribution passes, start-time checks that found nothing
  // changed, and snapshots that reused the mapping without reading anything.
  std::uint64_t passes() const { return passes_; }
  std::uint64_t verified() const { return verified_; }
  std::uint64_t reused() const { return reused_; }
  // /proc reads of cgroup+environ+status (jobs::Attributor::misses).
  std::uint64_t process_reads() const { return attributor_.misses(); }

 private:
  bool SameLists(const collect::Snapshot& snapshot) const;
  void Recompute(const collect::Snapshot& snapshot);

  jobs::Attributor attributor_;
  bool valid_ = false;
  std::uint64_t slow_cycles_ = 0;                      // the snapshot's count at the last check
  std::vector<std::pair<unsigned, unsigned>> listed_;  // (unit, pid) at the last pass
  std::vector<const collect::GpuSnapshot*> gpus_;      // Recompute's scratch: listed_'s GPUs
  std::vector<pid_t> pids_;                            // listed_'s pids (StillCached)
  std::vector<jobs::GpuProcessRef> refs_;              // scratch of Recompute
  std::vector<jobs::JobLedger::AttributedGpuProcess> processes_;
  std::uint64_t passes_ = 0, verified_ = 0, reused_ = 0;
};

}  // namespace gw::serve

#endif  // GPUWARDEN_SERVE_JOBS_MAPPING_H_
