// collect/peak_window.h — the highest per-cycle peak over a trailing window of time.
//
// The per-cycle peak families (gpu_*_peak_*) cover one collection cycle. A scraper that reads
// /metrics every 15 s sees one cycle in fifteen of them, so a spike in the other fourteen never
// reaches it. The gpu_*_peak_window_* families (docs/metrics.md, "Peaks over a window") carry
// the highest per-cycle peak of the cycles in the last `collect.peak_window` (plus one cycle):
// every scraper whose scrape interval is at most the window sees every spike, however many
// scrapers there are, and a scrape changes nothing (no per-scraper state).
//
// PeakWindow keeps a monotonic queue of (time, value): values decrease from front to back, so
// the front is the maximum and each Add is amortized O(1). Its storage is sized once, for the
// number of cycles the window can hold; the steady state allocates nothing.
#ifndef GPUWARDEN_COLLECT_PEAK_WINDOW_H_
#define GPUWARDEN_COLLECT_PEAK_WINDOW_H_

#include <cstddef>
#include <vector>

namespace gw::collect {

class PeakWindow {
 public:
  PeakWindow() = default;
  // A window of `window_s` seconds over cycles every `interval_s` seconds. It covers the cycles
  // whose clock reading is within the last window_s + 1.5 × interval_s (span_s). A cycle's
  // snapshot is published some time after its clock reading (the reads take time, more on a
  // slow cycle or a slow driver): a scrape in between sees the snapshot before it, and when a
  // later cycle publishes faster, the next scrape, window_s later, would see a window that has
  // just let the cycle go. With the extra cycle and a half, a scraper that reads at most every
  // window_s seconds misses no cycle as long as publication lags vary by less than that.
  // `window_s` <= 0 turns the window off (Add answers NaN).
  PeakWindow(double window_s, double interval_s);

  bool enabled() const { return capacity_ > 0; }
  double span_s() const { return span_s_; }

  // Adds the peak of the cycle that ended at `t_s` (seconds on a clock that never goes back;
  // a time earlier than the last one starts the window afresh) and answers the highest value
  // of the window, this one included. A NaN `value` (absent) is not added and answers NaN.
  double Add(double t_s, double value);
  // Forgets everything (the GPU was lost, or its values were absent).
  void Clear();
  size_t size() const { return count_; }

 private:
  struct Entry {
    double t = 0, value = 0;
  };
  Entry& At(size_t i) { return ring_[(head_ + i) % capacity_]; }

  double span_s_ = 0;
  size_t capacity_ = 0;
  std::vector<Entry> ring_;
  size_t head_ = 0, count_ = 0;
  double last_t_ = 0;
  bool any_ = false;
};

}  // namespace gw::collect

#endif  // GPUWARDEN_COLLECT_PEAK_WINDOW_H_
