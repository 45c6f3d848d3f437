#include "jobs/job_stats.h"

#include <algorithm>
#include <array>
#include <bit>
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

namespace {

// The map key of one reason bit, built once (charging a throttled interval allocates no name).
const std::string& ReasonKey(std::uint64_t bit) {
  static const std::array<std::string, 64> kKeys = [] {
    std::array<std::string, 64> keys;
    for (int n = 0; n < 64; ++n) keys[static_cast<size_t>(n)] = ThrottleReasonName(1ull << n);
    return keys;
  }();
  return kKeys[static_cast<size_t>(std::countr_zero(bit))];
}

// `*to = from` that keeps to's storage: strings, the GPU list and the throttle map's nodes (a
// map's copy-assignment would construct every key again).
void AssignStats(const JobGpuStats& from, JobGpuStats* to) {
  to->job_id = from.job_id;
  to->gpus = from.gpus;
  to->mig = from.mig;  // element-wise: the strings keep their storage
  to->start_s = from.start_s;
  to->end_s = from.end_s;
  to->gpu_seconds = from.gpu_seconds;
  to->observed_gpu_seconds = from.observed_gpu_seconds;
  to->energy_j = from.energy_j;
  to->power_integral_j = from.power_integral_j;
  to->util_avg = from.util_avg;
  to->util_max = from.util_max;
  to->sm_active_avg = from.sm_active_avg;
  to->sm_active_max = from.sm_active_max;
  to->tensor_active_avg = from.tensor_active_avg;
  to->tensor_active_max = from.tensor_active_max;
  to->memory_peak_bytes = from.memory_peak_bytes;
  const bool same_reasons =
      to->throttle_s.size() == from.throttle_s.size() &&
      std::equal(from.throttle_s.begin(), from.throttle_s.end(), to->throttle_s.begin(),
                 [](const auto& a, const auto& b) { return a.first == b.first; });
  if (same_reasons) {
    auto out = to->throttle_s.begin();
    for (const auto& [reason, seconds] : from.throttle_s) (out++)->second = seconds;
  } else {
    to->throttle_s = from.throttle_s;
  }
  to->ecc_corrected = from.ecc_corrected;
  to->ecc_uncorrected = from.ecc_uncorrected;
  to->xid_count = from.xid_count;
  to->first_activity_s = from.first_activity_s;
  to->start_latency_s = from.start_latency_s;
  to->idle_gpu_seconds = from.idle_gpu_seconds;
  to->idle_while_allocated = from.idle_while_allocated;
}

bool Present(double v) {
  return !std::isnan(v);
}

// The larger of a running maximum and a reading.
void Max(std::optional<double>* to, double v) {
  if (!to->has_value() || v > **to) *to = v;
}

}  // namespace

double GpuEquivalents(const JobGpuStats& s) {
  double n = 0;
  for (unsigned unit : s.gpus) {
    double share = 1;  // a whole GPU; a MIG unit nobody described counts whole too
    if (IsMigUnit(unit))
      for (const MigUnitInfo& m : s.mig)
        if (m.unit() == unit) share = m.share;
    n += share;
  }
  return n;
}

std::string GpuUnitsText(const JobGpuStats& s) {
  std::string out;
  for (unsigned unit : s.gpus) {
    if (!out.empty()) out += ",";
    out += UnitText(unit);
    if (!IsMigUnit(unit)) continue;
    for (const MigUnitInfo& m : s.mig)
      if (m.unit() == unit) out += " " + ShareText(m.share, m.profile);
  }
  return out;
}

void JobStatsTracker::IntervalRing::push_back(const Interval& iv) {
  if (count_ == items_.size()) {
    // Full: unroll into a larger buffer, oldest first.
    std::vector<Interval> larger;
    larger.reserve(std::max<std::size_t>(16, items_.size() * 2));
    for (std::size_t i = 0; i < count_; ++i) larger.push_back((*this)[i]);
    larger.resize(larger.capacity());
    items_.swap(larger);
    head_ = 0;
  }
  items_[(head_ + count_) % items_.size()] = iv;
  ++count_;
}

void JobStatsTracker::IntervalRing::pop_front() {
  head_ = (head_ + 1) % items_.size();
  --count_;
}

void JobStatsTracker::Begin(const std::string& job_id, std::vector<unsigned> gpus, double start_s) {
  if (jobs_.count(job_id)) return;
  Job job;
  std::sort(gpus.begin(), gpus.end());
  gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
  job.committed.stats.job_id = job_id;
  job.committed.stats.gpus = std::move(gpus);
  job.committed.stats.start_s = start_s;
  Describe(&job.committed.stats);
  job.through_now = job.committed;
  // Intervals seen before the start was learnt, in time order (Observe appends them so).
  std::vector<Interval> earlier;
  for (unsigned gpu : job.committed.stats.gpus) {
    auto h = history_.find(gpu);
    if (h == history_.end()) continue;
    for (std::size_t i = 0; i < h->second.size(); ++i)
      if (h->second[i].t1 > start_s) earlier.push_back(h->second[i]);
  }
  std::stable_sort(earlier.begin(), earlier.end(),
                   [](const Interval& a, const Interval& b) { return a.t1 < b.t1; });
  for (const Interval& iv : earlier) {
    job.recent.push_back(iv);
    Commit(iv, kForeverS, &job.through_now, options_);
  }
  jobs_.emplace(job_id, std::move(job));
}

void JobStatsTracker::Commit(const Interval& iv, double until_s, Totals* totals,
                             const JobStatsOptions& o) {
  JobGpuStats& s = totals->stats;
  const double lo = std::max(iv.t0, s.start_s), hi = std::min(iv.t1, until_s);
  if (iv.t1 <= iv.t0 || hi <= lo) return;
  const double fraction = (hi - lo) / (iv.t1 - iv.t0);
  const double dt = (hi - lo) * iv.share;  // GPU-seconds: a MIG unit counts its share
  s.observed_gpu_seconds += dt;
  s.energy_j += iv.energy_j * fraction;
  s.power_integral_j += iv.power_j * fraction;
  if (iv.util_known) {
    totals->util_time_pct_s += iv.util_pct * dt;
    totals->util_s += dt;
  }
  if (Present(iv.sm_active)) {
    totals->sm_time_s += iv.sm_active * dt;
    totals->sm_s += dt;
  }
  if (Present(iv.tensor_active)) {
    totals->tensor_time_s += iv.tensor_active * dt;
    totals->tensor_s += dt;
  }
  const bool active = iv.util_known && iv.util_pct > o.idle_util_pct;
  if (iv.util_known && !active) s.idle_gpu_seconds += dt;
  for (std::uint64_t bits = iv.throttle; bits != 0; bits &= bits - 1)
    s.throttle_s[ReasonKey(bits & (~bits + 1))] += dt;
  // Point readings belong to the job when taken inside its lifetime.
  if (iv.t1 <= until_s) {
    if (iv.util_known) s.util_max = std::max(s.util_max, iv.util_pct / 100);
    if (Present(iv.sm_active)) Max(&s.sm_active_max, iv.sm_active);
    if (Present(iv.tensor_active)) Max(&s.tensor_active_max, iv.tensor_active);
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
      if (prev.energy_j && cur.energy_j && *cur.energy_j >= *prev.energy_j &&
          prev.share == cur.share)  // a MIG unit's counter is its share of the GPU's
        iv.energy_j = *cur.energy_j - *prev.energy_j;
      iv.share = cur.share;
      iv.util_pct = cur.util_pct;
      iv.util_known = cur.util_known;
      iv.sm_active = cur.sm_active;
      iv.tensor_active = cur.tensor_active;
      iv.memory = cur.memory_used_bytes;
      iv.throttle = cur.throttle_reasons;
      auto delta = [](std::uint64_t a, std::uint64_t b) { return b >= a ? b - a : 0; };
      iv.ecc_corrected = delta(prev.ecc_corrected_total, cur.ecc_corrected_total);
      iv.ecc_uncorrected = delta(prev.ecc_uncorrected_total, cur.ecc_uncorrected_total);
      iv.xid = delta(prev.xid_total, cur.xid_total);
      for (auto& [id, job] : jobs_) {
        const JobGpuStats& s = job.committed.stats;
        if (iv.t1 <= s.start_s) continue;
        if (!std::binary_search(s.gpus.begin(), s.gpus.end(), cur.index)) continue;
        job.recent.push_back(iv);
        Commit(iv, kForeverS, &job.through_now, options_);
      }
      history_[cur.index].push_back(iv);
    }
    if (prev_it != last_.end()) {
      prev_it->second = cur;
    } else {
      last_.emplace(cur.index, cur);
    }
  }
  // Commit what is older than the retention window.
  double newest = 0;
  for (const GpuCycleSample& cur : cycle.gpus) newest = std::max(newest, cur.time_s);
  for (auto& [gpu, intervals] : history_)
    while (!intervals.empty() && intervals.front().t1 < newest - options_.retention_s)
      intervals.pop_front();
  for (auto& [id, job] : jobs_) {
    while (!job.recent.empty() && job.recent.front().t1 < newest - options_.retention_s) {
      Commit(job.recent.front(), kForeverS, &job.committed, options_);
      job.recent.pop_front();
    }
  }
}

void JobStatsTracker::Conclude(const Totals& totals, JobGpuStats* s) {
  if (totals.util_s > 0) s->util_avg = totals.util_time_pct_s / totals.util_s / 100;
  if (totals.sm_s > 0) s->sm_active_avg = totals.sm_time_s / totals.sm_s;
  if (totals.tensor_s > 0) s->tensor_active_avg = totals.tensor_time_s / totals.tensor_s;
  s->idle_while_allocated = !s->first_activity_s.has_value();
}

std::optional<JobGpuStats> JobStatsTracker::End(const std::string& job_id, double end_s) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return std::nullopt;
  Job job = std::move(it->second);
  jobs_.erase(it);
  for (std::size_t i = 0; i < job.recent.size(); ++i)
    Commit(job.recent[i], end_s, &job.committed, options_);
  JobGpuStats s = std::move(job.committed.stats);
  Conclude(job.committed, &s);
  s.end_s = end_s;
  s.gpu_seconds = GpuEquivalents(s) * std::max(0.0, end_s - s.start_s);
  return s;
}

std::optional<JobGpuStats> JobStatsTracker::Current(const std::string& job_id, double now_s) const {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return std::nullopt;
  JobGpuStats s = it->second.through_now.stats;
  Conclude(it->second.through_now, &s);
  s.end_s = 0;
  s.gpu_seconds = GpuEquivalents(s) * std::max(0.0, now_s - s.start_s);
  return s;
}

void JobStatsTracker::RunningInto(double now_s, std::vector<JobGpuStats>* out) const {
  out->resize(jobs_.size());
  std::size_t i = 0;
  for (const auto& [id, job] : jobs_) {
    JobGpuStats& s = (*out)[i++];
    AssignStats(job.through_now.stats, &s);
    Conclude(job.through_now, &s);
    s.end_s = 0;
    s.gpu_seconds = GpuEquivalents(s) * std::max(0.0, now_s - s.start_s);
  }
}

void JobStatsTracker::Describe(JobGpuStats* s) const {
  s->mig.clear();
  for (unsigned unit : s->gpus) {
    if (!IsMigUnit(unit)) continue;
    auto it = units_.find(unit);
    if (it != units_.end()) s->mig.push_back(it->second);
  }
}

void JobStatsTracker::DescribeUnit(const MigUnitInfo& info) {
  auto it = units_.find(info.unit());
  if (it != units_.end() && it->second == info) return;
  units_[info.unit()] = info;
  for (auto& [id, job] : jobs_) {
    if (!std::binary_search(job.committed.stats.gpus.begin(), job.committed.stats.gpus.end(),
                            info.unit()))
      continue;
    Describe(&job.committed.stats);
    Describe(&job.through_now.stats);
  }
}

void JobStatsTracker::Narrow(const std::string& job_id, unsigned gpu,
                             const std::vector<unsigned>& units) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return;
  for (Totals* t : {&it->second.committed, &it->second.through_now}) {
    std::vector<unsigned>& gpus = t->stats.gpus;
    auto at = std::find(gpus.begin(), gpus.end(), gpu);
    if (at == gpus.end()) return;
    gpus.erase(at);
    gpus.insert(gpus.end(), units.begin(), units.end());
    std::sort(gpus.begin(), gpus.end());
    gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
    Describe(&t->stats);
  }
}

std::vector<std::string> JobStatsTracker::RunningJobs() const {
  std::vector<std::string> ids;
  for (const auto& [id, job] : jobs_) ids.push_back(id);
  return ids;
}

}  // namespace gw::jobs
