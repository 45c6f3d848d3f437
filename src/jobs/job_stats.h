// Per-job GPU statistics — DCGM's job statistics without accounting mode — accumulated from the
// collector's readings, one `CycleInput` per collection cycle.
//
// Per job (GPUs given at allocation, e.g. from Slurm's gres_detail):
//   gpu_seconds         allocated GPUs x (end - start)  (the definition, not sampled)
//   energy_j            energy-counter deltas summed over the job's GPUs and lifetime; where a
//                       GPU has no counter (or it went backwards) the trapezoid of power is used
//   power_integral_j    the trapezoid of power alone (a cross-check of energy_j)
//   util avg/max        time-weighted SM utilization over the job's GPUs; max of the samples
//   sm/tensor active    the same for GPM's SM activity and tensor-pipe activity (ratios 0-1);
//                       absent (nullopt) when none of the job's GPUs reported them
//   memory_peak_bytes   max device memory used on any of the job's GPUs
//   throttle_s[reason]  seconds during which each clock-event reason was active
//   ecc / xid           counter deltas during the job
//   start latency       allocation start -> first sample with utilization > idle threshold
//   idle_gpu_seconds    GPU-seconds during which a job GPU was at or below the idle threshold;
//                       a job whose GPUs were never active is flagged idle_while_allocated
//
// GPU units (jobs/gpu_unit.h): a job holds whole GPUs or MIG instances; `index` and the GPU lists
// are unit ids, and every GPU-second figure (gpu_seconds, observed/idle GPU-seconds, throttle
// seconds, the weights of the averages) counts a unit as its share of a GPU. A MIG instance's
// description (profile, UUID, share) comes from DescribeUnit.
//
// An interval between two samples of a GPU is charged to the job for its overlap with
// [start, end]. Because the end is often learnt late (the scheduler is polled), the last
// `retention_s` of intervals stay uncommitted and are clipped at `End`. The start is learnt late
// too: each GPU's intervals of the last `retention_s` are kept, and `Begin` with a start in the
// past charges those after the start (a job whose start is older than that loses the rest).
//
// Cost: each interval is charged twice as it arrives — to the job's committed figures once it is
// older than `retention_s`, and at once to a running view that `Current`/`RunningInto` copy out —
// so reading a running job's figures does not replay its tail. In a steady state (same jobs, same
// GPUs) Observe and RunningInto allocate nothing: intervals live in rings that keep their capacity.
//
// Threading: none (one owner, e.g. the collector's thread or a task-layer thread).
#ifndef GPUWARDEN_JOBS_JOB_STATS_H_
#define GPUWARDEN_JOBS_JOB_STATS_H_

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "jobs/gpu_unit.h"

namespace gw::jobs {

// One GPU's readings in one collection cycle. Counters are cumulative as NVML reports them.
struct GpuCycleSample {
  unsigned index = 0;      // the unit id (jobs/gpu_unit.h): a GPU index, or MigUnit(...)
  double time_s = 0;       // when the readings were taken (unix seconds)
  double share = 1;        // the unit's share of a GPU (MIG: slice_ratio)
  double util_pct = 0;     // SM utilization 0-100
  bool util_known = true;  // false: no utilization reading (never idle, not in the averages)
  // GPM: SM activity and tensor activity (any pipe), ratios 0-1; NaN where absent.
  double sm_active = std::numeric_limits<double>::quiet_NaN();
  double tensor_active = std::numeric_limits<double>::quiet_NaN();
  double power_w = 0;
  std::optional<double>
      energy_j;  // total energy counter (nvmlDeviceGetTotalEnergyConsumption / 1000)
  std::uint64_t memory_used_bytes = 0;
  std::uint64_t throttle_reasons = 0;  // nvmlClocksEventReason* bits
  std::uint64_t ecc_corrected_total = 0;
  std::uint64_t ecc_uncorrected_total = 0;
  std::uint64_t xid_total = 0;  // XID events seen on this GPU so far
};

struct CycleInput {
  std::vector<GpuCycleSample> gpus;
};

// "sw_power_cap", "hw_slowdown", ... for one nvmlClocksEventReason bit; "bit_<n>" if unnamed.
std::string ThrottleReasonName(std::uint64_t bit);

struct JobGpuStats {
  std::string job_id;
  std::vector<unsigned> gpus;    // unit ids, sorted
  std::vector<MigUnitInfo> mig;  // the MIG units among `gpus`, described (gpus' order)
  double start_s = 0;
  double end_s = 0;  // 0 while running
  double gpu_seconds = 0;
  double observed_gpu_seconds = 0;  // sum of charged sample intervals
  double energy_j = 0;
  double power_integral_j = 0;
  double util_avg = 0;  // SM utilization over the job, ratio 0-1 (NVML's percent / 100)
  double util_max = 0;
  std::optional<double> sm_active_avg, sm_active_max;          // ratios; absent: no GPM
  std::optional<double> tensor_active_avg, tensor_active_max;  // ratios; absent: no GPM
  std::uint64_t memory_peak_bytes = 0;
  std::map<std::string, double> throttle_s;
  std::uint64_t ecc_corrected = 0;
  std::uint64_t ecc_uncorrected = 0;
  std::uint64_t xid_count = 0;
  std::optional<double> first_activity_s;
  std::optional<double> start_latency_s;
  double idle_gpu_seconds = 0;
  bool idle_while_allocated = false;
};

// The GPUs a job holds counted by share: whole GPUs 1 each, MIG instances their share.
double GpuEquivalents(const JobGpuStats& stats);
// The job's GPUs as people read them: "0,1", or "0.43 GPU (3g.40gb)" / "0/3 0.43 GPU (3g.40gb)".
std::string GpuUnitsText(const JobGpuStats& stats);

struct JobStatsOptions {
  double idle_util_pct = 0;  // at or below this a GPU is idle
  double retention_s = 300;  // uncommitted tail (must exceed how late job ends are learnt)
  double max_gap_s = 120;    // a longer gap between two samples of a GPU is not charged
};

class JobStatsTracker {
 public:
  explicit JobStatsTracker(JobStatsOptions options = {}) : options_(options) {}

  // Starts accounting a job from `start_s` (allocation start) on the given GPU indices, charging
  // the intervals already observed after `start_s` (up to `retention_s` back). A job already
  // known is left as is.
  void Begin(const std::string& job_id, std::vector<unsigned> gpus, double start_s);
  // Describes a MIG unit (its share and name), for the jobs holding it now and later. Call when
  // the description changes (a re-partition); the same description again changes nothing.
  void DescribeUnit(const MigUnitInfo& info);
  // A running job turned out to hold `units` (MIG instances on GPU `gpu`, from its processes)
  // rather than the whole GPU `gpu` (from the scheduler): the job's GPU list is changed from now
  // on (figures already charged stay). Nothing happens if the job does not hold `gpu`.
  void Narrow(const std::string& job_id, unsigned gpu, const std::vector<unsigned>& units);
  // Feeds one cycle to every running job.
  void Observe(const CycleInput& cycle);
  // Finishes a job at `end_s`; nullopt if unknown. The job is forgotten afterwards.
  std::optional<JobGpuStats> End(const std::string& job_id, double end_s);
  // The statistics so far of a running job (uncommitted tail included, not clipped).
  std::optional<JobGpuStats> Current(const std::string& job_id, double now_s) const;
  std::vector<std::string> RunningJobs() const;
  // Current() of every running job into `out` (job id order), reusing its elements' storage: no
  // allocation when the jobs are those of the last call.
  void RunningInto(double now_s, std::vector<JobGpuStats>* out) const;

 private:
  struct Interval {
    unsigned gpu = 0;
    double t0 = 0, t1 = 0;
    double energy_j = 0, power_j = 0;
    double share = 1;
    double util_pct = 0;  // at t1
    bool util_known = true;
    double sm_active = 0, tensor_active = 0;  // at t1; NaN: absent
    std::uint64_t memory = 0;
    std::uint64_t throttle = 0;
    std::uint64_t ecc_corrected = 0, ecc_uncorrected = 0, xid = 0;  // deltas
  };
  // Intervals oldest first, in a ring that grows when full and never shrinks (a deque frees and
  // allocates a block every few pushes).
  class IntervalRing {
   public:
    bool empty() const { return count_ == 0; }
    std::size_t size() const { return count_; }
    const Interval& front() const { return items_[head_]; }
    const Interval& operator[](std::size_t i) const { return items_[(head_ + i) % items_.size()]; }
    void push_back(const Interval& iv);
    void pop_front();

   private:
    std::vector<Interval> items_;
    std::size_t head_ = 0, count_ = 0;
  };
  struct Totals {
    JobGpuStats stats;
    double util_time_pct_s = 0;              // sum of util x share x dt
    double util_s = 0;                       // share x dt where utilization was known
    double sm_time_s = 0, sm_s = 0;          // sum of SM activity x share x dt; share x dt
    double tensor_time_s = 0, tensor_s = 0;  // likewise for tensor activity
  };
  struct Job {
    Totals committed;    // intervals older than retention_s, for good
    Totals through_now;  // every interval so far, none clipped: what Current reports
    IntervalRing recent;
  };
  // Charges the part of `iv` inside [start, until_s] to `totals`.
  static void Commit(const Interval& iv, double until_s, Totals* totals, const JobStatsOptions& o);
  static void Conclude(const Totals& totals, JobGpuStats* s);  // averages, idle flag
  void Describe(JobGpuStats* s) const;                         // s->mig from units_

  JobStatsOptions options_;
  std::map<std::string, Job> jobs_;
  std::map<unsigned, GpuCycleSample> last_;  // per GPU, the previous sample (any job)
  // Per GPU, the intervals of the last retention_s (for jobs whose start is learnt late).
  std::map<unsigned, IntervalRing> history_;
  std::map<unsigned, MigUnitInfo> units_;  // DescribeUnit
};

}  // namespace gw::jobs

#endif  // GPUWARDEN_JOBS_JOB_STATS_H_
