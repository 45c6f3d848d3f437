// base/clock.h — the one place gpuwarden reads wall time (Unix time), so tests can drive it.
//
//   const Clock& clock = SystemClock();      // production: the system's real-time clock
//   int64_t t_ms = clock.NowMs();            // milliseconds since the Unix epoch
//   double t_s = clock.NowSeconds();         // seconds since the Unix epoch, sub-second part kept
//
//   ManualClock clock(1'700'000'000'000);    // tests: time stands still until told to move
//   clock.AdvanceMs(15'000);
//
// A component that reads wall time takes a `const Clock*` (default: &SystemClock()) and never
// calls std::chrono::system_clock itself. Intervals and deadlines that must not jump when the
// wall clock is set (timeouts, back-off, sleeps) keep using std::chrono::steady_clock.
//
// Both clocks are thread-safe: SystemClock has no state, ManualClock keeps its time in an atomic.
// Reading a clock allocates nothing and takes no lock.
#ifndef GPUWARDEN_BASE_CLOCK_H_
#define GPUWARDEN_BASE_CLOCK_H_

#include <atomic>
#include <chrono>
#include <cstdint>

namespace gw {

class Clock {
 public:
  using TimePoint = std::chrono::system_clock::time_point;

  virtual ~Clock() = default;

  // The current wall time.
  virtual TimePoint Now() const = 0;

  // Milliseconds since the Unix epoch (rounded toward zero).
  int64_t NowMs() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Now().time_since_epoch()).count();
  }
  // Seconds since the Unix epoch, with the clock's full sub-second resolution.
  double NowSeconds() const {
    return std::chrono::duration<double>(Now().time_since_epoch()).count();
  }
};

// The system's real-time clock (std::chrono::system_clock). Lives for the whole process.
const Clock& SystemClock();

// A clock that moves only when told to. Starts at `start_ms` milliseconds since the epoch.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t start_ms = 0) { SetMs(start_ms); }

  TimePoint Now() const override {
    return TimePoint(TimePoint::duration(ticks_.load(std::memory_order_relaxed)));
  }

  void Set(TimePoint t) { ticks_.store(t.time_since_epoch().count(), std::memory_order_relaxed); }
  void SetMs(int64_t ms) { Set(TimePoint(std::chrono::milliseconds(ms))); }
  void SetSeconds(double s) {
    Set(TimePoint(
        std::chrono::duration_cast<TimePoint::duration>(std::chrono::duration<double>(s))));
  }
  // Moves the time forward (or back, with a negative step).
  void Advance(TimePoint::duration step) {
    ticks_.fetch_add(step.count(), std::memory_order_relaxed);
  }
  void AdvanceMs(int64_t ms) { Advance(std::chrono::milliseconds(ms)); }

 private:
  std::atomic<TimePoint::rep> ticks_{0};
};

}  // namespace gw

#endif  // GPUWARDEN_BASE_CLOCK_H_
