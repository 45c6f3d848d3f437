#include "jobs/job_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gw::jobs {
namespace {

struct ReasonName {
  std::uint64_t bit;
  const char* name;
};
// nvmlClocksEventReason* bits (nvml.h).
constexpr ReasonName kReasons[] = {
    {0x1, "gpu_idle"},
    {0x2, "applications_clocks_setting"},
    {0x4, "sw_power_cap"},
    {0x8, "hw_slowdown"},
    {0x10, "sync_boost"},
    {0x20, "sw_thermal_slowdown"},
    {0x40, "hw_thermal_slowdown"},
    {0x80, "hw_power_brake_slowdown"},
    {0x100, "display_clock_setting"},
};

constexpr double kForeverS = std::numeric_limits<double>::infinity();

}  // namespace

std::string ThrottleReasonName(std::uint64_t bit) {
  for (const ReasonName& r : kReasons)
    if (r.bit == bit) return r.name;
  int n = 0;
  while (n < 63 && (bit >> n) != 1) ++n;
  return "bit_" + std::to_string(n);
}

void JobStatsTracker::Begin(const std::string& job_id, std::vector<unsigned> gpus, double start_s) {
  if (jobs_.count(job_id)) return;
  Job job;
  std::sort(gpus.begin(), gpus.end());
  gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
  job.stats.job_id = job_id;
  job.stats.gpus = std::move(gpus);
  job.stats.start_s = start_s;
  // Intervals seen before the start was learnt, in time order (Observe appends them so).
  for (unsigned gpu : job.stats.gpus) {
    auto h = history_.find(gpu);
    if (h == history_.end()) continue;
    for (const Interval& iv : h->second)
      if (iv.t1 > start_s) job.recent.push_back(iv);
  }
  std::stable_sort(job.recent.begin(), job.recent.end(),
                   [](const Interval& a, const Interval& b) { return a.t1 < b.t1; });
  jobs_.emplace(job_id, std::move(job));
}

void JobStatsTracker::Commit(const Interval& iv, double until_s, Job* job,
                             const JobStatsOptions& o) {
  JobGpuStats& s = job->stats;
  const double lo = std::max(iv.t0, s.start_s), hi = std::min(iv.t1, until_s);
  if (iv.t1 <= iv.t0 || hi <= lo) return;
  const double dt = hi - lo;
  const double fraction = dt / (iv.t1 - iv.t0);
  s.observed_gpu_seconds += dt;
  s.energy_j += iv.energy_j * fraction;
  s.power_integral_j += iv.power_j * fraction;
  job->util_time_pct_s += iv.util_pct * dt;
  const bool active = iv.util_pct > o.idle_util_pct;
  if (!active) s.idle_gpu_seconds += dt;
  for (std::uint64_t bits = iv.throttle; bits != 0; bits &= bits - 1)
    s.throttle_s[ThrottleReasonName(bits & (~bits + 1))] += dt;
  // Point readings belong to the job when taken inside its lifetime.
  if (iv.t1 <= until_s) {
    s.util_max_pct = std::max(s.util_max_pct, iv.util_pct);
    s.memory_peak_bytes = std::max(s.memory_peak_bytes, iv.memory);
    s.ecc_corrected += iv.ecc_corrected;
    s.ecc_uncorrected += iv.ecc_uncorrected;
    s.xid_count += iv.xid;
    if (active && (!s.first_activity_s || iv.t1 < *s.first_activity_s)) {
      s.first_activity_s = iv.t1;
      s.start_latency_s = std::max(0.0, iv.t1 - s.start_s);
    }
  }
}

void JobStatsTracker::Observe(const CycleInput& cycle) {
  for (const GpuCycleSample& cur : cycle.gpus) {
    auto prev_it = last_.find(cur.index);
    if (prev_it != last_.end() && cur.time_s > prev_it->second.time_s &&
        cur.time_s - prev_it->second.time_s <= options_.max_gap_s) {
      const GpuCycleSample& prev = prev_it->second;
      Interval iv;
      iv.gpu = cur.index;
      iv.t0 = prev.time_s;
      iv.t1 = cur.time_s;
      iv.power_j = (prev.power_w + cur.power_w) / 2 * (iv.t1 - iv.t0);
      iv.energy_j = iv.power_j;
      if (prev.energy_j && cur.energy_j && *cur.energy_j >= *prev.energy_j)
        iv.energy_j = *cur.energy_j - *prev.energy_j;
      iv.util_pct = cur.util_pct;
      iv.memory = cur.memory_used_bytes;
      iv.throttle = cur.throttle_reasons;
      auto delta = [](std::uint64_t a, std::uint64_t b) { return b >= a ? b - a : 0; };
      iv.ecc_corrected = delta(prev.ecc_corrected_total, cur.ecc_corrected_total);
      iv.ecc_uncorrected = delta(prev.ecc_uncorrected_total, cur.ecc_uncorrected_total);
      iv.xid = delta(prev.xid_total, cur.xid_total);
      for (auto& [id, job] : jobs_) {
        if (iv.t1 <= job.stats.start_s) continue;
        if (!std::binary_search(job.stats.gpus.begin(), job.stats.gpus.end(), cur.index)) continue;
        job.recent.push_back(iv);
      }
      history_[cur.index].push_back(iv);
    }
    last_[cur.index] = cur;
  }
  // Commit what is older than the retention window.
  double newest = 0;
  for (const GpuCycleSample& cur : cycle.gpus) newest = std::max(newest, cur.time_s);
  for (auto& [gpu, intervals] : history_)
    while (!intervals.empty() && intervals.front().t1 < newest - options_.retention_s)
      intervals.pop_front();
  for (auto& [id, job] : jobs_) {
    while (!job.recent.empty() && job.recent.front().t1 < newest - options_.retention_s) {
      Commit(job.recent.front(), kForeverS, &job, options_);
      job.recent.pop_front();
    }
  }
}

JobGpuStats JobStatsTracker::Finish(Job job, double until_s, const JobStatsOptions& o) {
  for (const Interval& iv : job.recent) Commit(iv, until_s, &job, o);
  JobGpuStats s = std::move(job.stats);
  const double end = std::isfinite(until_s) ? until_s : 0;
  if (end > 0) s.end_s = end;
  if (s.observed_gpu_seconds > 0) s.util_avg_pct = job.util_time_pct_s / s.observed_gpu_seconds;
  s.idle_while_allocated = !s.first_activity_s.has_value();
  return s;
}

std::optional<JobGpuStats> JobStatsTracker::End(const std::string& job_id, double end_s) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return std::nullopt;
  Job job = std::move(it->second);
  jobs_.erase(it);
  JobGpuStats s = Finish(std::move(job), end_s, options_);
  s.end_s = end_s;
  s.gpu_seconds = static_cast<double>(s.gpus.size()) * std::max(0.0, end_s - s.start_s);
  return s;
}

std::optional<JobGpuStats> JobStatsTracker::Current(const std::string& job_id, double now_s) const {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return std::nullopt;
  JobGpuStats s = Finish(it->second, kForeverS, options_);
  s.end_s = 0;
  s.gpu_seconds = static_cast<double>(s.gpus.size()) * std::max(0.0, now_s - s.start_s);
  return s;
}

std::vector<std::string> JobStatsTracker::RunningJobs() const {
  std::vector<std::string> ids;
  for (const auto& [id, job] : jobs_) ids.push_back(id);
  return ids;
}

}  // namespace gw::jobs
