// governance/pool.h — shared-pool congestion per Slurm partition, queue waits over windows, and
// capacity recommendations.
//
//   PoolTracker pools(settings.pool);
//   pools.SetCapacity(ParsePartitionCapacity(scontrol_show_partition_o_text));  // when known
//   each cycle: pools.Observe(squeue_jobs, now_s);   then read pools.pools()
//
// Definitions (docs/metrics.md, "Governance"):
//   capacity    GPUs in the partition: PoolSettings::capacity_gpus, else `scontrol show
//   partition`'s
//               TRES gres/gpu; unknown (0) = no free/congestion figures
//   allocated   GPUs held by the partition's running jobs (tres_alloc_str gres/gpu, else the
//               gres_detail indices, else the request)
//   pending     GPU demand of its pending jobs (tres_req_str, else --gpus, else --gres per node);
//               a job pending on several partitions ("a,b") counts on the first
//   free        max(0, capacity - allocated)
//   congestion  (allocated + pending) / capacity: the demand on the pool over its size. Below 1 the
//               pool could run everything asked of it; above 1 jobs queue for want of GPUs
//               (1.5 = half again as many GPUs asked as exist). 0 when capacity is unknown.
//   scale-out   congestion > scale_out_ratio and something pending, continuously for
//               scale_out_for_s: recommend adding the smallest shortfall (allocated + pending -
//               capacity, at least 1) seen over that time
//   shrink      free / capacity >= shrink_free_ratio and nothing pending, continuously for
//               shrink_for_s: recommend removing the smallest number of free GPUs seen over that
//               time
//   queue wait  start - eligible time of jobs that started, p50 and p95 over each window (by
//               start time; nearest-rank quantiles)
//
// Threading: none (one owner).
#ifndef GPUWARDEN_GOVERNANCE_POOL_H_
#define GPUWARDEN_GOVERNANCE_POOL_H_

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "governance/settings.h"
#include "jobs/slurm.h"

namespace gw::governance {

struct QueueWaitWindow {
  double window_s = 0;
  std::size_t jobs = 0;  // jobs that started in the window
  double p50_s = 0, p95_s = 0;
};

struct PartitionPool {
  std::string partition;
  double capacity = 0;
  double allocated = 0;
  double pending = 0;
  double pending_jobs = 0;
  double free = 0;
  double congestion = 0;
  double congested_for_s = 0;  // how long the scale-out condition has held (0: not now)
  double idle_for_s = 0;       // how long the shrink condition has held
  double scale_out_gpus = 0;   // the recommendation (0: none)
  double shrink_gpus = 0;
  std::vector<QueueWaitWindow> waits;  // one per PoolSettings::windows_s
};

// Partition -> GPUs, from `sinfo -h -o "%R %D %G"` (nodes x GPUs in each line's generic
// resources, summed per partition) or `scontrol show partition -o` (its TRES gres/gpu, present
// only where AccountingStorageTRES tracks gres/gpu). Partitions without GPUs: 0.
std::map<std::string, double> ParsePartitionCapacity(std::string_view text);

class PoolTracker {
 public:
  explicit PoolTracker(PoolSettings settings) : settings_(std::move(settings)) {}

  // Capacities learnt from the scheduler (configured ones take precedence).
  void SetCapacity(std::map<std::string, double> gpus_by_partition);
  // `jobs_version`: SlurmPoller::JobsVersion() of `jobs` — when it equals the previous call's (and
  // is not 0), the table is known unchanged and is not walked again: a cycle between two squeue
  // polls costs O(partitions x windows) and allocates nothing. 0: always walk the table.
  void Observe(const std::map<std::string, jobs::SlurmJob>& jobs, double now_s,
               std::uint64_t jobs_version = 0);
  const std::map<std::string, PartitionPool>& pools() const { return pools_; }

  // The queue waits the windows hold (and which listed jobs are already counted) as JSON text, and
  // back before the first Observe, so that a restarted agent's windows still hold the jobs that
  // started before it. Capacities and the sustained scale-out/shrink conditions start afresh.
  // Error (not a version-1 pool checkpoint; which field): nothing changes.
  std::string Checkpoint() const;
  Status Restore(std::string_view text);

 private:
  struct Sustained {
    double since_s = -1;  // < 0: condition not holding
    double least = 0;     // the smallest figure since then
  };
  struct Wait {
    double start_s = 0, wait_s = 0;
  };

  struct Demand {
    double allocated = 0, pending = 0, pending_jobs = 0;
  };
  struct Counted {
    double start_s = 0;
    bool listed = false;  // in the table being read
  };
  struct WindowCache {  // one window's quantiles, valid while its waits are unchanged
    bool computed = false;
    std::uint64_t generation = 0;
    double oldest_s = 0;  // start of the oldest wait in the window (+inf: none)
    double at_s = 0;      // when computed or last reused
    QueueWaitWindow result;
  };

  PoolSettings settings_;
  std::map<std::string, double> scheduler_capacity_;
  std::map<std::string, PartitionPool> pools_;
  std::map<std::string, Sustained> congested_, idle_;
  std::map<std::string, std::deque<Wait>> waits_;          // per partition, by start time
  std::map<std::string, std::uint64_t> waits_generation_;  // moves when a partition's waits do
  std::map<std::string, Counted> seen_started_;            // job id -> start time already counted
  std::uint64_t jobs_version_ = 0;
  std::map<std::string, Demand> demand_;  // per partition, from the last table read
  std::map<std::string, std::vector<WindowCache>> window_caches_;
  std::vector<double> values_;  // scratch for the quantiles
};

}  // namespace gw::governance

#endif  // GPUWARDEN_GOVERNANCE_POOL_H_
