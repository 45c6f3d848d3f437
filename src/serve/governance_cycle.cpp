// serve/governance_cycle.cpp — a recorded snapshot and the jobs holding its GPUs as a
// governance::Cycle.
#include "serve/governance_cycle.h"

#include <algorithm>
#include <utility>

#include "jobs/gpu_unit.h"

namespace gw::serve {

governance::Cycle CycleBuilder::Build(const collect::Snapshot& snapshot) {
  using collect::Slot;
  governance::Cycle cycle;
  cycle.now_s = snapshot.taken_unix_seconds;
  for (const collect::GpuSnapshot& gpu : snapshot.gpus) {
    governance::GpuReading r;
    r.index = gpu.identity.index;
    r.uuid = gpu.identity.uuid;
    r.model = gpu.identity.name;
    const double util = gpu.value(Slot::kUtilization);
    r.util_known = !collect::IsAbsent(util);
    r.util_ratio = r.util_known ? util : 0;
    const double used = gpu.value(Slot::kMemoryUsed), total = gpu.value(Slot::kMemoryTotal);
    r.memory_used_bytes = collect::IsAbsent(used) ? 0 : used;
    r.memory_held = settings_.MemoryHeld(!gpu.processes.empty(), r.memory_used_bytes,
                                         collect::IsAbsent(total) ? 0 : total);
    if (const double e = gpu.value(Slot::kEnergy); !collect::IsAbsent(e)) r.energy_j = e;
    const double p = gpu.value(Slot::kPower);
    r.power_w = collect::IsAbsent(p) ? 0 : p;
    // A MIG-enabled GPU: each instance a unit of its own (governance/cycle.h), the GPU the rest.
    for (const collect::MigInstanceSnapshot& m : gpu.mig) {
      governance::GpuReading u;
      u.index = jobs::MigUnit(r.index, m.gpu_instance_id);
      u.share = collect::IsAbsent(m.slice_ratio) ? 0 : m.slice_ratio;
      u.mig_profile = m.profile;
      u.uuid = m.uuid;
      u.model = r.model;
      const double mig_util = MigUtilization(m);
      u.util_known = !collect::IsAbsent(mig_util);
      u.util_ratio = u.util_known ? mig_util : 0;
      u.memory_used_bytes = collect::IsAbsent(m.memory_used_bytes) ? 0 : m.memory_used_bytes;
      u.memory_held =
          settings_.MemoryHeld(!m.processes.empty(), u.memory_used_bytes,
                               collect::IsAbsent(m.memory_total_bytes) ? 0 : m.memory_total_bytes);
      u.energy_j = r.energy_j;
      u.power_w = r.power_w;
      r.share -= u.share;
      cycle.gpus.push_back(std::move(u));
    }
    r.share = std::max(0.0, r.share);
    cycle.gpus.push_back(std::move(r));
  }
  // The Slurm job table: copied only when a poll has changed it (it may hold a whole cluster's
  // queue; snapshots come every second, polls every few).
  if (slurm_) {
    const std::uint64_t version = jobs_->SlurmJobsVersion();
    if (version == 0 || version != slurm_version_) {
      slurm_jobs_ = jobs_->SlurmJobs();
      slurm_version_ = version;
    }
  }
  for (JobsService::HeldGpus& h : jobs_->AllocatedJobs()) {
    governance::RunningJob j;
    j.id = h.job_id;
    j.source = h.source;
    j.name = h.name;
    j.user = h.user;
    j.account = h.account;
    j.partition = h.partition;
    j.team = h.team;
    j.pod_namespace = h.pod_namespace;
    j.pod_name = h.pod_name;
    j.gpus = std::move(h.gpus);
    if (auto it = slurm_jobs_.find(j.id); it != slurm_jobs_.end() && j.source == "slurm") {
      j.qos = it->second.qos;
      j.comment = it->second.comment;
      if (j.name.empty()) j.name = it->second.name;
    }
    cycle.jobs.push_back(std::move(j));
  }
  return cycle;
}

}  // namespace gw::serve
