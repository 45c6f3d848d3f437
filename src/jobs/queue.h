// jobs/queue.h — the scheduler's queue as a list: which jobs wait, since when, why, and in what
// order, from one squeue poll (jobs/slurm.h). Pure functions; no Slurm call.
//
//   SlurmHealth health;
//   std::vector<QueuedJob> queue = PendingQueue(poller.PendingJobs(&health),
//   health.last_success_s);
//
// Definitions (docs/configuration.md, "GET /api/gw/v1/queue"):
//   wait_s         poll time − eligible time: how long the job has been able to run and not run
//                  (the pending side of gpu_job_queue_wait_seconds, start − eligible); 0 while
//                  not yet eligible (--begin in the future, eligible_time 0)
//   submit_wait_s  poll time − submit time
//   gpus           RequestedGpus(): the TRES total, else --gpus, else --gres / --gpus-per-node
//   position       1-based rank among the pending jobs of the same partition (a job pending on
//                  "a,b" ranks in "a") in the order Slurm's main scheduler considers them: higher
//                  priority first, then earlier submission, then lower job id. An estimate of the
//                  order, not a promise: backfill may start a later job first.
//
// Threading: none (values in, values out).
#ifndef GPUWARDEN_JOBS_QUEUE_H_
#define GPUWARDEN_JOBS_QUEUE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "jobs/slurm.h"

namespace gw::jobs {

struct QueuedJob {
  SlurmJob job;  // as the poll saw it
  std::int64_t wait_s = 0;
  std::int64_t submit_wait_s = 0;
  bool eligible = false;  // eligible_time set and not in the future at the poll
  unsigned gpus = 0;
  unsigned position = 0;
};

// The first partition of a job's list ("a,b" -> "a").
std::string FirstPartition(const std::string& partitions);

// The pending jobs among `jobs` (others are skipped), positioned, sorted by wait, longest first
// (ties: by position, then partition). `polled_at_s` is the poll's time (unix seconds).
std::vector<QueuedJob> PendingQueue(std::vector<SlurmJob> jobs, double polled_at_s);

}  // namespace gw::jobs

#endif  // GPUWARDEN_JOBS_QUEUE_H_
