#include "scrape/job_throughput.h"

namespace gw::scrape {

void JobThroughput::Observe(std::int64_t t_ms, double total) {
  if (size_ > 0) {
    const Point& last = At(size_ - 1);
    if (t_ms == last.t_ms) return;
    if (t_ms < last.t_ms) size_ = 0;  // a new clock: start over
  }
  if (size_ == 0) {
    head_ = 0;
    first_ms_ = t_ms;
    first_total_ = total;
  }
  if (size_ == kPoints) {
    head_ = (head_ + 1) % kPoints;
    --size_;
  }
  points_[(head_ + size_) % kPoints] = {t_ms, total};
  ++size_;
}

bool JobThroughput::Rate(std::int64_t now_ms, double* per_s) const {
  if (size_ < 2) return false;
  const Point& newest = At(size_ - 1);
  if (newest.t_ms < now_ms - kWindowMs) return false;
  std::size_t oldest = size_ - 1;
  while (oldest > 0 && At(oldest - 1).t_ms >= newest.t_ms - kWindowMs) --oldest;
  if (oldest == size_ - 1) return false;
  const Point& from = At(oldest);
  *per_s = (newest.total - from.total) * 1000.0 / static_cast<double>(newest.t_ms - from.t_ms);
  return true;
}

}  // namespace gw::scrape
