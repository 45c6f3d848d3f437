#include "serve/jobs_mapping.h"

#include <algorithm>

#include "jobs/gpu_unit.h"

namespace gw::serve {

ProcessJobMapping::ProcessJobMapping(std::string proc_root)
    : attributor_(jobs::AttributorOptions{std::move(proc_root)}) {}

namespace {

// Every process NVML listed, with the unit it runs on: a MIG instance when NVML says so (the
// process's GPU-instance id on the GPU's list, or the instance's own list), else the GPU. A pid on
// both lists of the same GPU is visited once, as the instance's.
template <typename Visit>
void ForEachListed(const collect::Snapshot& snapshot, Visit visit) {
  for (const collect::GpuSnapshot& gpu : snapshot.gpus) {
    const unsigned index = gpu.identity.index;
    for (const collect::ProcessSample& p : gpu.processes) {
      if (p.gpu_instance_id != collect::kNoMigInstance) {
        visit(jobs::MigUnit(index, p.gpu_instance_id), p.pid, gpu);
        continue;
      }
      bool on_instance = false;
      for (const collect::MigInstanceSnapshot& m : gpu.mig)
        for (const collect::ProcessSample& q : m.processes) on_instance |= q.pid == p.pid;
      if (!on_instance) visit(index, p.pid, gpu);
    }
    for (const collect::MigInstanceSnapshot& m : gpu.mig) {
      for (const collect::ProcessSample& q : m.processes) {
        bool listed = false;  // already visited from the GPU's list with its instance id
        for (const collect::ProcessSample& p : gpu.processes)
          listed |= p.pid == q.pid && p.gpu_instance_id == m.gpu_instance_id;
        if (!listed) visit(jobs::MigUnit(index, m.gpu_instance_id), q.pid, gpu);
      }
    }
  }
}

// A process NVML listed on a MIG-enabled GPU without naming its instance: the instance its
// CUDA_VISIBLE_DEVICES names by MIG UUID, if one of this GPU's; else the GPU.
unsigned UnitFromEnvironment(const collect::GpuSnapshot& gpu, unsigned unit,
                             const std::string& cuda_visible_devices) {
  if (jobs::IsMigUnit(unit) || gpu.mig.empty() || cuda_visible_devices.empty()) return unit;
  for (const std::string& item : jobs::SplitDeviceList(cuda_visible_devices)) {
    if (item.rfind("MIG-", 0) != 0) continue;
    for (const collect::MigInstanceSnapshot& m : gpu.mig)
      if (m.uuid == item) return jobs::MigUnit(gpu.identity.index, m.gpu_instance_id);
  }
  return unit;
}

}  // namespace

void ProcessJobMapping::AddSource(std::unique_ptr<jobs::AttributionSource> source) {
  attributor_.AddSource(std::move(source));
  valid_ = false;
}

bool ProcessJobMapping::SameLists(const collect::Snapshot& snapshot) const {
  std::size_t at = 0;
  bool same = true;
  ForEachListed(snapshot, [&](unsigned unit, unsigned pid, const collect::GpuSnapshot&) {
    if (!same) return;
    if (at == listed_.size() || listed_[at].first != unit || listed_[at].second != pid) {
      same = false;
      return;
    }
    ++at;
  });
  return same && at == listed_.size();
}

bool ProcessJobMapping::Update(const collect::Snapshot& snapshot) {
  if (valid_ && SameLists(snapshot)) {
    if (snapshot.stats.slow_cycles == slow_cycles_) {
      ++reused_;
      return false;
    }
    slow_cycles_ = snapshot.stats.slow_cycles;
    if (attributor_.StillCached(pids_)) {
      ++verified_;
      return false;
    }
  }
  Recompute(snapshot);
  return true;
}

void ProcessJobMapping::Recompute(const collect::Snapshot& snapshot) {
  ++passes_;
  valid_ = true;
  slow_cycles_ = snapshot.stats.slow_cycles;
  listed_.clear();
  refs_.clear();
  gpus_.clear();
  ForEachListed(snapshot, [&](unsigned unit, unsigned pid, const collect::GpuSnapshot& gpu) {
    listed_.emplace_back(unit, pid);
    // The unit's UUID: a MIG instance's own (the kubelet names instances by it), else the GPU's.
    const std::string* uuid = &gpu.identity.uuid;
    if (jobs::IsMigUnit(unit))
      for (const collect::MigInstanceSnapshot& m : gpu.mig)
        if (jobs::MigUnit(gpu.identity.index, m.gpu_instance_id) == unit && !m.uuid.empty())
          uuid = &m.uuid;
    refs_.push_back({static_cast<pid_t>(pid), *uuid});
    gpus_.push_back(&gpu);
  });
  // AttributeAll answers in the order asked, leaving out the processes it could not read (each
  // keeps the refinement its sources made for that GPU).
  std::vector<jobs::ProcessAttribution> found = attributor_.AttributeAll(refs_);
  processes_.clear();
  std::size_t next = 0;
  for (std::size_t i = 0; i < listed_.size(); ++i) {
    const auto& [unit, pid] = listed_[i];
    if (next == found.size() || found[next].pid != static_cast<pid_t>(pid)) continue;
    const unsigned held = UnitFromEnvironment(*gpus_[i], unit, found[next].cuda_visible_devices);
    processes_.push_back({std::move(found[next]), held});
    ++next;
  }
  gpus_.clear();  // they point into this snapshot
  // Checked at the next slow cycle: every listed pid, also those that could not be read (so an
  // unreadable pid makes that check fail and the pass run again, as it would have before).
  pids_.clear();
  for (const auto& [gpu, pid] : listed_) pids_.push_back(static_cast<pid_t>(pid));
  std::sort(pids_.begin(), pids_.end());
  pids_.erase(std::unique(pids_.begin(), pids_.end()), pids_.end());
}

}  // namespace gw::serve
