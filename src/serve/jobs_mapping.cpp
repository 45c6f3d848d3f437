#include "serve/jobs_mapping.h"

#include <algorithm>

namespace gw::serve {

ProcessJobMapping::ProcessJobMapping(std::string proc_root)
    : attributor_(jobs::AttributorOptions{std::move(proc_root)}) {}

bool ProcessJobMapping::SameLists(const collect::Snapshot& snapshot) const {
  std::size_t at = 0;
  for (const collect::GpuSnapshot& gpu : snapshot.gpus) {
    for (const collect::ProcessSample& p : gpu.processes) {
      if (at == listed_.size() || listed_[at].first != gpu.identity.index ||
          listed_[at].second != p.pid)
        return false;
      ++at;
    }
  }
  return at == listed_.size();
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
  for (const collect::GpuSnapshot& gpu : snapshot.gpus) {
    for (const collect::ProcessSample& p : gpu.processes) {
      listed_.emplace_back(gpu.identity.index, p.pid);
      refs_.push_back({static_cast<pid_t>(p.pid), gpu.identity.uuid});
    }
  }
  // AttributeAll answers in the order asked, leaving out the processes it could not read (each
  // keeps the refinement its sources made for that GPU).
  std::vector<jobs::ProcessAttribution> found = attributor_.AttributeAll(refs_);
  processes_.clear();
  std::size_t next = 0;
  for (const auto& [gpu, pid] : listed_) {
    if (next == found.size() || found[next].pid != static_cast<pid_t>(pid)) continue;
    processes_.push_back({std::move(found[next]), gpu});
    ++next;
  }
  // Checked at the next slow cycle: every listed pid, also those that could not be read (so an
  // unreadable pid makes that check fail and the pass run again, as it would have before).
  pids_.clear();
  for (const auto& [gpu, pid] : listed_) pids_.push_back(static_cast<pid_t>(pid));
  std::sort(pids_.begin(), pids_.end());
  pids_.erase(std::unique(pids_.begin(), pids_.end()), pids_.end());
}

}  // namespace gw::serve
