#include "tsdb/rollup.h"

#include <algorithm>
#include <cmath>

namespace gw::tsdb {

int64_t RollupWindowStart(int64_t t_ms) {
  const int64_t r = t_ms % kRollupWindowMs;
  return t_ms - (r < 0 ? r + kRollupWindowMs : r);
}

void MergeRollup(Rollup* a, const Rollup& b) {
  if (b.count == 0) return;
  if (a->count == 0) {
    *a = b;
    return;
  }
  a->min = std::min(a->min, b.min);
  a->max = std::max(a->max, b.max);
  a->sum += b.sum;
  a->count += b.count;
  if (b.last_t_ms >= a->last_t_ms) {
    a->last = b.last;
    a->last_t_ms = b.last_t_ms;
  }
}

void AddToRollups(std::span<const Sample> samples, std::vector<Rollup>* rollups) {
  for (const Sample& s : samples) {
    if (std::isnan(s.v)) continue;
    const int64_t w = RollupWindowStart(s.t_ms);
    if (rollups->empty() || rollups->back().t_ms != w) rollups->push_back(Rollup{w});
    Rollup one{w, s.v, s.v, s.v, 1, s.v, s.t_ms};
    MergeRollup(&rollups->back(), one);
  }
}

}  // namespace gw::tsdb
