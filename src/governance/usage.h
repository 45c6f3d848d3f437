// governance/usage.h — team quotas (allocated vs used vs quota) and cost (per job, team,
// partition, and the node's idle cost), from this node's GPUs and the jobs holding them.
//
//   UsageLedger usage(settings.quotas, settings.prices, settings.idle_threshold);
//   each cycle: usage.Observe(cycle);   then read teams(), partitions(), jobs(), node()
//
// Each interval between two cycles (dt, at most 120 s) is charged to the state at its end. A GPU
// held by n jobs is shared 1/n to each.
//
// MIG: a MIG instance is a GPU unit of its own (governance/cycle.h, jobs/gpu_unit.h) and counts as
// its share of the GPU everywhere below — GPUs held, GPU-hours, idle GPU-seconds, its price
// (the model's price x share) and its energy (the GPU's energy x share). A 3g.40gb instance of an
// H100 (share 3/7) held for an hour is 0.43 allocated GPU-hours. The GPU itself keeps the share
// its instances leave, so the node's capacity still counts each GPU once.
//
// Cost — OpenCost's model applied to GPUs (amount x duration x hourly rate):
//   allocation cost   allocated GPU-hours x the GPU's price (PriceSettings::GpuHourPrice(model))
//   energy cost       kWh used by the job's GPUs (energy-counter deltas; power x dt without one)
//                     x energy_per_kwh
//   idle-allocated    the allocation cost of GPU-time spent at or below the idle threshold: paid
//   cost              for, held, unused (efficiency = used / allocated GPU-hours)
//   node capacity     every GPU of the node x its price (OpenCost's asset cost)
//   node idle cost    capacity cost - allocation cost: GPUs nobody held (OpenCost's "idle")
//   idle cost ratio   node idle cost / capacity cost (0-1: the share of the GPU bill not allocated)
// Cost per job is what its GPUs cost while it held them (allocation + energy).
//
// Quotas (QuotaSettings, per team): `gpus` = GPUs held at once; `gpu_hours` per `period_s`
// (periods aligned to the unix epoch: a 1d period is a UTC day). Per team:
//   allocated_gpus   GPUs its jobs hold now (shares)
//   used_gpus        the same weighted by utilization (sum of util x share)
//   deviation        (allocated - quota) / quota, and (used - quota) / quota (GPU quota); for a
//                    GPU-hour quota the same with this period's GPU-hours
//   over_quota       allocated above the GPU quota, or this period's allocated GPU-hours above
//                    the GPU-hour quota
//   under_use        used / quota below under_use_ratio continuously for under_use_for_s (for a
//                    GPU-hour quota: this period's used GPU-hours / the quota's pro-rated part)
// Restarts: Checkpoint() is the running totals as text and Restore() takes them back, so that a
// restarted agent continues its cost counters and each team's GPU-hour period instead of
// starting them from zero (cli/governance_service.h writes the checkpoint every minute).
//
// Threading: none (one owner).
#ifndef GPUWARDEN_GOVERNANCE_USAGE_H_
#define GPUWARDEN_GOVERNANCE_USAGE_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <string_view>

#include "base/error.h"
#include "governance/cycle.h"
#include "governance/settings.h"
#include "jobs/job_records.h"

namespace gw::governance {

struct CostTotals {
  double allocated_gpu_s = 0;
  double used_gpu_s = 0;  // utilization-weighted
  double idle_gpu_s = 0;
  double energy_j = 0;
  double allocation_cost = 0;
  double energy_cost = 0;
  double idle_cost = 0;  // allocation cost of idle GPU-time
  double Total() const { return allocation_cost + energy_cost; }
  double Efficiency() const { return allocated_gpu_s > 0 ? used_gpu_s / allocated_gpu_s : 0; }
};

struct TeamUsage {
  std::string team;
  CostTotals cost;            // since the data directory was first used (checkpointed)
  double allocated_gpus = 0;  // now
  double used_gpus = 0;       // now, utilization-weighted
  TeamQuota quota;            // zeros: no quota
  bool has_quota = false;
  double period_start_s = 0;  // the GPU-hour quota's current period
  double period_allocated_gpu_h = 0;
  double period_used_gpu_h = 0;
  double deviation_allocated = 0;  // see the header comment
  double deviation_used = 0;
  bool over_quota = false;
  bool under_use = false;
  double under_use_for_s = 0;  // how long used / quota has been below the ratio
};

struct JobCost {
  std::string id, team, partition, user;
  double start_s = 0, last_s = 0;
  CostTotals cost;
};

struct NodeCost {
  double capacity_gpu_s = 0;
  double capacity_cost = 0;
  double allocation_cost = 0;
  double idle_cost = 0;  // capacity - allocation (OpenCost idle)
  double energy_j = 0;
  double energy_cost = 0;  // every GPU's energy, allocated or not
  double IdleRatio() const { return capacity_cost > 0 ? idle_cost / capacity_cost : 0; }
};

class UsageLedger {
 public:
  UsageLedger(QuotaSettings quotas, PriceSettings prices, double idle_threshold,
              double max_gap_s = 120);

  void Observe(const Cycle& cycle);

  const std::map<std::string, TeamUsage>& teams() const { return teams_; }
  const std::map<std::string, CostTotals>& partitions() const { return partitions_; }
  const std::map<std::pair<std::string, std::string>, CostTotals>& by_team_partition() const {
    return by_team_partition_;
  }
  // Running jobs, and the last 200 that ended (with their final figures).
  const std::map<std::string, JobCost>& jobs() const { return jobs_; }
  const std::vector<JobCost>& ended_jobs() const { return ended_; }
  const NodeCost& node() const { return node_; }
  const PriceSettings& prices() const { return prices_; }

  // A job's cost for its record (jobs/job_records.h): so far while it runs, final once it ended
  // (its latest run). nullopt when no price is configured or the job was never seen holding GPUs.
  std::optional<jobs::JobCostRecord> JobCostRecordOf(const std::string& job_id) const;

  // The running totals as JSON text: the cost totals of every team, partition, team x partition
  // and the node; each team's GPU-hour period (its start and figures); the running jobs' cost so
  // far; the last cycle's time and the GPUs' last energy readings. Not kept: the GPUs held now
  // and the under-use streaks (the next cycles rebuild them) and the ended jobs (their records
  // hold their final cost).
  std::string Checkpoint() const;
  // Takes a checkpoint back, before the first Observe. The first cycle after it charges the time
  // since the checkpoint's last cycle only when that is within max_gap_s (a quick restart), as
  // for any gap; energy likewise. Quotas stay those of the configuration; a period that has
  // ended by the first cycle starts from zero, as always. A running job of the checkpoint that no
  // cycle shows any more ends at the first cycle with its cost so far. Error (the text is not a
  // version-1 checkpoint; which field is wrong): nothing changes.
  Status Restore(std::string_view text);

 private:
  QuotaSettings quotas_;
  PriceSettings prices_;
  double threshold_, max_gap_s_;
  double last_s_ = 0;
  std::map<unsigned, double> last_energy_j_;
  std::map<std::string, TeamUsage> teams_;
  std::map<std::string, CostTotals> partitions_;
  std::map<std::pair<std::string, std::string>, CostTotals> by_team_partition_;
  std::map<std::string, JobCost> jobs_;
  std::vector<JobCost> ended_;
  std::map<std::string, double> under_since_s_;
  NodeCost node_;
};

}  // namespace gw::governance

#endif  // GPUWARDEN_GOVERNANCE_USAGE_H_
