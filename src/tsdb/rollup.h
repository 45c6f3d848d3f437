// tsdb/rollup.h — 5-minute summaries of a series, kept long after the raw chunks are deleted.
//
// A rollup covers [t_ms, t_ms + kRollupWindowMs) and summarises the series' numeric samples in it:
// NaN samples (stale markers included) are not counted. Windows are aligned to multiples of
// 5 minutes since the Unix epoch. Pure functions; thread-safe.
#ifndef GPUWARDEN_TSDB_ROLLUP_H_
#define GPUWARDEN_TSDB_ROLLUP_H_

#include <cstdint>
#include <span>
#include <vector>

#include "tsdb/storage.h"

namespace gw::tsdb {

inline constexpr int64_t kRollupWindowMs = 5 * 60 * 1000;

struct Rollup {
  int64_t t_ms = 0;  // window start
  double min = 0, max = 0, sum = 0;
  uint64_t count = 0;
  double last = 0;        // the value of the newest sample in the window
  int64_t last_t_ms = 0;  // and its timestamp
};

// The start of the window holding t_ms (floor, also for negative times).
int64_t RollupWindowStart(int64_t t_ms);

// Folds time-ordered `samples` into `rollups` (ascending by t_ms; the last one may be extended).
void AddToRollups(std::span<const Sample> samples, std::vector<Rollup>* rollups);

// Merges `b` into `a` (the same window); `b` may hold older or newer samples than `a`.
void MergeRollup(Rollup* a, const Rollup& b);

}  // namespace gw::tsdb

#endif  // GPUWARDEN_TSDB_ROLLUP_H_
