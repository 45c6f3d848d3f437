#include "tsdb/rollup.h"

#include <algorithm>
#include <cmath>

namespace gw::tsdb {

int64_t RollupWindowStart(int64_t t_ms) {
  const int64_t r = t_ms % kRollupWindowMs;
  return t_ms - (r < 0 ? r + kRollupWindowMs : r);
}

void MergeRollup(Rollup* a, const Rollup& b) {
  if (b.raw_count() == 0) return;
  if (a->raw_count() == 0) {
    *a = b;
    return;
  }
  const bool b_newer = b.first_raw_t_ms > a->last_raw_t_ms;
  const Rollup& older = b_newer ? *a : b;
  const Rollup& newer = b_newer ? b : *a;
  Rollup m = older;
  m.exact = a->exact && b.exact;
  m.nan_count = older.nan_count + newer.nan_count;
  m.stale_count = older.stale_count + newer.stale_count;
  m.last_raw_t_ms = newer.last_raw_t_ms;
  m.newest_stale = newer.newest_stale;
  if (newer.count > 0) {
    if (older.count == 0) {
      m.min = newer.min;
      m.max = newer.max;
      m.sum = newer.sum;
      m.first = newer.first;
      m.first_t_ms = newer.first_t_ms;
      m.counter_correction = newer.counter_correction;
    } else {
      m.min = std::min(older.min, newer.min);
      m.max = std::max(older.max, newer.max);
      m.sum = older.sum + newer.sum;
      m.counter_correction = older.counter_correction + newer.counter_correction +
                             (newer.first < older.last ? older.last : 0);
    }
    m.count = older.count + newer.count;
    m.last = newer.last;
    m.last_t_ms = newer.last_t_ms;
  }
  *a = m;
}

void MergeRollups(std::vector<Rollup>* rollups, std::span<const Rollup> newer) {
  if (newer.empty()) return;
  if (rollups->empty() || rollups->back().t_ms < newer.front().t_ms) {
    rollups->insert(rollups->end(), newer.begin(), newer.end());
    return;
  }
  std::vector<Rollup> out;
  out.reserve(rollups->size() + newer.size());
  size_t i = 0, k = 0;
  while (i < rollups->size() || k < newer.size()) {
    if (k == newer.size() || (i < rollups->size() && (*rollups)[i].t_ms < newer[k].t_ms)) {
      out.push_back((*rollups)[i++]);
    } else if (i == rollups->size() || newer[k].t_ms < (*rollups)[i].t_ms) {
      out.push_back(newer[k++]);
    } else {
      out.push_back((*rollups)[i++]);
      MergeRollup(&out.back(), newer[k++]);
    }
  }
  rollups->swap(out);
}

void AddToRollups(std::span<const Sample> samples, std::vector<Rollup>* rollups) {
  for (const Sample& s : samples) {
    const int64_t w = RollupWindowStart(s.t_ms);
    if (rollups->empty() || rollups->back().t_ms != w) rollups->push_back(Rollup{.t_ms = w});
    Rollup& r = rollups->back();
    // The usual case, a number newer than everything in a window that has numbers: what
    // MergeRollup(&r, one) below would do, in place (it copies two 120-byte rollups a sample).
    if (r.count > 0 && s.t_ms > r.last_raw_t_ms && !std::isnan(s.v)) {
      r.min = std::min(r.min, s.v);
      r.max = std::max(r.max, s.v);
      r.sum = r.sum + s.v;
      // "+ 0": the new sample's own correction, added as MergeRollup adds it (same rounding).
      r.counter_correction = r.counter_correction + 0 + (s.v < r.last ? r.last : 0);
      ++r.count;
      r.last = s.v;
      r.last_t_ms = r.last_raw_t_ms = s.t_ms;
      r.newest_stale = false;
      continue;
    }
    Rollup one{.t_ms = w};
    one.first_raw_t_ms = one.last_raw_t_ms = s.t_ms;
    if (IsStaleNaN(s.v)) {
      one.stale_count = 1;
      one.newest_stale = true;
    } else if (std::isnan(s.v)) {
      one.nan_count = 1;
    } else {
      one.min = one.max = one.sum = one.first = one.last = s.v;
      one.first_t_ms = one.last_t_ms = s.t_ms;
      one.count = 1;
    }
    MergeRollup(&rollups->back(), one);
  }
}

std::vector<uint8_t> CoveredWindows(const std::vector<SeriesRollups>& rolls, int64_t w0, size_t n,
                                    bool (*usable)(const Rollup&)) {
  // Per window, how many series stand in the way: a difference array over the windows.
  std::vector<int64_t> blocked(n + 1, 0);
  for (const SeriesRollups& s : rolls) {
    // Windows [0, known) end at or before complete_before_ms.
    size_t known = 0;
    if (s.complete_before_ms > w0) {
      const uint64_t span = static_cast<uint64_t>(s.complete_before_ms) - static_cast<uint64_t>(w0);
      known = static_cast<size_t>(std::min<uint64_t>(n, span / kRollupWindowMs));
    }
    ++blocked[known];
    --blocked[n];
    for (const Rollup& r : s.rollups) {
      if (r.t_ms < w0 || usable(r)) continue;
      const uint64_t i =
          (static_cast<uint64_t>(r.t_ms) - static_cast<uint64_t>(w0)) / kRollupWindowMs;
      if (i >= known) continue;  // counted above (and beyond n)
      ++blocked[i];
      --blocked[i + 1];
    }
  }
  std::vector<uint8_t> covered(n, 0);
  int64_t in_way = 0;
  for (size_t i = 0; i < n; ++i) {
    in_way += blocked[i];
    covered[i] = in_way == 0;
  }
  return covered;
}

}  // namespace gw::tsdb
