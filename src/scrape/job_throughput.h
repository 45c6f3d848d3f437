// scrape/job_throughput.h — a job's throughput from its own progress counter, as the scraper
// counts it (scrape.targets[].job_id with `outputs`; docs/jobs.md, "Training throughput").
//
//   JobThroughput t;
//   each cycle: if (scraper.Outputs(i, &total, &t_ms)) t.Observe(t_ms, total);
//               double per_s; if (t.Rate(now_ms, &per_s)) ...
//
// The counts are the scraper's reset-aware sums (a restarted counter counts on). The rate is
// Prometheus' rate() over the last minute without extrapolation: (newest count - oldest count of
// the minute ending at the newest) / their time apart, so at least two scrapes must fall in that
// minute; a newest count older than a minute before `now` gives none (the job stopped answering).
// Fixed storage: no allocation.
//
// Threading: none (one owner).
#ifndef GPUWARDEN_SCRAPE_JOB_THROUGHPUT_H_
#define GPUWARDEN_SCRAPE_JOB_THROUGHPUT_H_

#include <array>
#include <cstddef>
#include <cstdint>

namespace gw::scrape {

class JobThroughput {
 public:
  static constexpr std::int64_t kWindowMs = 60'000;
  static constexpr std::size_t kPoints = 128;  // counts kept; older ones are dropped first

  // The count `total` of the scrape at `t_ms`. The same time again is ignored (a cycle that saw
  // no new scrape); an earlier time restarts the history (a new clock).
  void Observe(std::int64_t t_ms, double total);

  // Units per second over the minute ending at the newest count; false without two counts in it
  // or when the newest is older than `now_ms` - kWindowMs.
  bool Rate(std::int64_t now_ms, double* per_s) const;

  bool started() const { return size_ > 0; }
  // Units counted from the first count to the newest, and when those were scraped.
  double total() const { return size_ ? At(size_ - 1).total - first_total_ : 0; }
  std::int64_t first_ms() const { return first_ms_; }
  std::int64_t last_ms() const { return size_ ? At(size_ - 1).t_ms : 0; }

 private:
  struct Point {
    std::int64_t t_ms = 0;
    double total = 0;
  };
  const Point& At(std::size_t i) const { return points_[(head_ + i) % kPoints]; }

  std::array<Point, kPoints> points_{};
  std::size_t head_ = 0, size_ = 0;
  std::int64_t first_ms_ = 0;
  double first_total_ = 0;
};

}  // namespace gw::scrape

#endif  // GPUWARDEN_SCRAPE_JOB_THROUGHPUT_H_
