// serve/governance_cycle.h — the snapshot adapter: one recorded snapshot and the jobs holding its
// GPUs (serve/jobs_service.h, plus QOS and comment from the Slurm job table) as the
// governance::Cycle the domain takes (governance/cycle.h). GPU memory is "held" by
// governance::Settings::MemoryHeld.
//
// Threading: the recorder's thread (it keeps the last Slurm table it copied).
#ifndef GPUWARDEN_SERVE_GOVERNANCE_CYCLE_H_
#define GPUWARDEN_SERVE_GOVERNANCE_CYCLE_H_

#include <cstdint>
#include <map>
#include <string>

#include "collect/snapshot.h"
#include "governance/cycle.h"
#include "governance/settings.h"
#include "jobs/slurm.h"
#include "serve/jobs_service.h"

namespace gw::serve {

class CycleBuilder {
 public:
  // `jobs` must outlive this object. `slurm`: jobs.scheduler is slurm (read its job table).
  CycleBuilder(const JobsService* jobs, bool slurm, governance::Settings settings)
      : jobs_(jobs), slurm_(slurm), settings_(std::move(settings)) {}

  governance::Cycle Build(const collect::Snapshot& snapshot);

  // The Slurm job table as last copied, and its JobsService::SlurmJobsVersion (0: none).
  const std::map<std::string, jobs::SlurmJob>& slurm_jobs() const { return slurm_jobs_; }
  std::uint64_t slurm_version() const { return slurm_version_; }

 private:
  const JobsService* jobs_;
  const bool slurm_;
  const governance::Settings settings_;
  std::map<std::string, jobs::SlurmJob> slurm_jobs_;
  std::uint64_t slurm_version_ = 0;
};

}  // namespace gw::serve

#endif  // GPUWARDEN_SERVE_GOVERNANCE_CYCLE_H_
