#include "collect/peak_window.h"

#include <cmath>
#include <limits>

namespace gw::collect {

PeakWindow::PeakWindow(double window_s, double interval_s) {
  if (!(window_s > 0) || !(interval_s > 0)) return;
  // One cycle more than the window (two reads window_s apart may see snapshots one cycle
  // further apart), and half a cycle for the lateness of a cycle's clock reading.
  span_s_ = window_s + 1.5 * interval_s;
  capacity_ = static_cast<size_t>(std::ceil(span_s_ / interval_s)) + 2;
  ring_.resize(capacity_);
}

void PeakWindow::Clear() {
  head_ = count_ = 0;
  any_ = false;
}

double PeakWindow::Add(double t_s, double value) {
  if (!enabled() || std::isnan(value)) return std::numeric_limits<double>::quiet_NaN();
  if (any_ && t_s < last_t_) Clear();
  last_t_ = t_s;
  any_ = true;
  // What left the window.
  while (count_ > 0 && At(0).t <= t_s - span_s_) {
    head_ = (head_ + 1) % capacity_;
    --count_;
  }
  // Entries not above the new value can never be the maximum again: the new one outlives them.
  while (count_ > 0 && At(count_ - 1).value <= value) --count_;
  if (count_ == capacity_) {
    // More cycles than the window was sized for (cycles closer together than the interval):
    // the newest entry, higher than `value`, stands for it and lives as long as it would. A
    // peak is never lost; one may be held up to a cycle longer.
    At(count_ - 1).t = t_s;
  } else {
    At(count_) = Entry{t_s, value};
    ++count_;
  }
  return At(0).value;
}

}  // namespace gw::collect
