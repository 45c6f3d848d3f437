// jobs/idle_streak.h — since when each allocated GPU has been idle: the one idle rule that the
// task layer (gpu_idle_streak_seconds, serve/jobs_service.h) and the platform layer's reclaim
// (governance/reclaim.h) share.
//
//   jobs::IdleStreaks idle(threshold);
//   each reading:  idle.Observe(index, allocated, util_known, util_ratio, now_s);
//   idle.Since(index)        // the first idle reading of the streak; nullopt when not idle
//   idle.Retain(pred)        // forget GPUs that are gone (not allocated, not read)
//
// A GPU is idle in a reading when it is allocated and its utilization is known and at or below the
// threshold; its streak starts at the first idle reading and ends at any other reading. The streak
// has no gap rule: a pause between readings (an agent stall) neither ends nor extends it. What
// governance charges per interval (idle GPU-seconds, where intervals over 120 s are not charged)
// is a total over intervals, kept by governance::IdleTracker on top of these streaks.
//
// Callers differ only in when they forget a GPU, so that is theirs (Retain): the task layer keeps
// an allocated GPU's streak through a snapshot that lacks the GPU; governance forgets a GPU that
// a cycle did not read.
//
// Steady state allocates nothing (a streak that continues touches no node). Not thread-safe.
#ifndef GPUWARDEN_JOBS_IDLE_STREAK_H_
#define GPUWARDEN_JOBS_IDLE_STREAK_H_

#include <map>
#include <optional>

namespace gw::jobs {

class IdleStreaks {
 public:
  explicit IdleStreaks(double idle_threshold) : threshold_(idle_threshold) {}

  // One reading of GPU `index` at `now_s`; returns whether it is idle in it.
  bool Observe(unsigned index, bool allocated, bool util_known, double util_ratio, double now_s) {
    const bool idle = allocated && util_known && util_ratio <= threshold_;
    if (idle) {
      since_.try_emplace(index, now_s);  // emplace would build a node each time
    } else {
      since_.erase(index);
    }
    return idle;
  }
  // Keeps the GPUs `keep(index)` accepts.
  template <typename Keep>
  void Retain(Keep keep) {
    for (auto it = since_.begin(); it != since_.end();)
      it = keep(it->first) ? std::next(it) : since_.erase(it);
  }

  double threshold() const { return threshold_; }
  // The time of the streak's first idle reading; nullopt when GPU `index` is not idle.
  std::optional<double> Since(unsigned index) const {
    auto it = since_.find(index);
    if (it == since_.end()) return std::nullopt;
    return it->second;
  }
  // Every idle GPU: index -> idle since.
  const std::map<unsigned, double>& since() const { return since_; }

 private:
  double threshold_;
  std::map<unsigned, double> since_;
};

}  // namespace gw::jobs

#endif  // GPUWARDEN_JOBS_IDLE_STREAK_H_
