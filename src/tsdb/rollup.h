// tsdb/rollup.h — 5-minute summaries of a series, kept long after the raw chunks are deleted, and
// read by queries over long ranges instead of the raw samples where that gives the same answer.
//
// A rollup covers the half-open window [t_ms, t_ms + kRollupWindowMs) and summarises every raw
// sample of the series in it. Windows are aligned to multiples of 5 minutes since the Unix epoch.
// min/max/sum/count/first/last/counter_correction are over the window's *numeric* samples (not
// NaN); NaN samples are counted apart, stale markers (storage.h) apart from other NaNs, so a
// reader can tell when a rollup stands exactly for the raw samples (docs/tsdb-format.md,
// "Rollups"). Pure functions; thread-safe.
//
// What a reader can compute exactly from the rollups of the windows inside [lo, hi) (no raw read):
//   min, max, count, sum (to float rounding) and so avg of the numeric samples — when every one of
//   those rollups has nan_count == 0 (a NaN sample changes Prometheus' min/max/sum);
//   the newest sample at or before a time (last/last_t_ms), which is a stale marker when
//   newest_stale; whether a sample lies exactly at a window start (first_raw_t_ms == t_ms);
//   a counter's increase: (last - first) + the counter_corrections + the drops between
//   consecutive windows (previous window's last > next window's first adds the previous last).
// Rollups with exact == false were read from data written before these fields existed (format 2):
// only min/max/sum/count/last/last_t_ms are known; readers must not use them for exact answers.
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
  uint64_t count = 0;      // numeric samples
  double last = 0;         // the value of the newest numeric sample in the window
  int64_t last_t_ms = 0;   // and its timestamp
  double first = 0;        // the value of the oldest numeric sample in the window
  int64_t first_t_ms = 0;  // and its timestamp
  // Sum of v[i-1] over consecutive numeric samples with v[i] < v[i-1] (Prometheus' counter-reset
  // correction inside the window).
  double counter_correction = 0;
  uint32_t nan_count = 0;    // NaN samples that are not stale markers
  uint32_t stale_count = 0;  // stale markers
  // The oldest and newest raw sample of any kind (numeric, NaN or stale marker).
  int64_t first_raw_t_ms = 0, last_raw_t_ms = 0;
  bool newest_stale = false;  // the newest raw sample is a stale marker
  bool exact = true;          // false: a format-2 rollup, see above

  uint64_t raw_count() const { return count + nan_count + stale_count; }
};

// The start of the window holding t_ms (floor, also for negative times).
int64_t RollupWindowStart(int64_t t_ms);

// Folds time-ordered `samples` (stale markers and NaNs included) into `rollups` (ascending by
// t_ms; the last one may be extended when the samples continue its window after its newest raw
// sample).
void AddToRollups(std::span<const Sample> samples, std::vector<Rollup>* rollups);

// Merges `b` into `a` (the same window). The two must not interleave in time: all of b's raw
// samples are older than all of a's, or all newer.
void MergeRollup(Rollup* a, const Rollup& b);

// Merges `newer` (ascending by window) into `rollups` (ascending): windows present in both are
// merged by MergeRollup (the same rule on their raw samples), the others kept in order.
void MergeRollups(std::vector<Rollup>* rollups, std::span<const Rollup> newer);

// Which of the windows [w0 + i * 5 min, + 5 min), i < n, every series in `rolls` can be read in
// from rollups alone: each series has there either a rollup `usable` accepts or none in a window
// complete for it (so no sample). Series absent from `rolls` have no sample in any of them
// (the SelectRollups contract). 1 per covered window.
std::vector<uint8_t> CoveredWindows(const std::vector<SeriesRollups>& rolls, int64_t w0, size_t n,
                                    bool (*usable)(const Rollup&));

}  // namespace gw::tsdb

#endif  // GPUWARDEN_TSDB_ROLLUP_H_
