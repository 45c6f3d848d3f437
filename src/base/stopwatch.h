// base/stopwatch.h — clocks cheap enough to read around every NVML call.
//
//   uint64_t t0 = Ticks();                     // before the call
//   ... the call ...
//   uint64_t spent = TicksSince(t0);           // after it (never negative)
//   TickRate rate;                             // made once, early
//   double s = spent * rate.SecondsPerTick();  // later, when the figures are published
//
//   int64_t ns = CoarseMonotonicNs();          // ~7 ns, but only as fine as the kernel tick
//
// Why: steady_clock::now() costs 50–60 ns on a KVM guest (the kvm-clock vDSO path), so timing a
// 0.5 µs call with two reads adds about a fifth to what the collector measures around it
// (docs/benchmarks.md, issue 12). Where the CPU's time-stamp counter is invariant — x86-64 with
// CPUID 0x80000007 EDX bit 8: one constant rate in every power state, which the kernel keeps in
// step across cores — Ticks() is one RDTSC (~17 ns there); everywhere else it is steady_clock in
// nanoseconds. Ticks become seconds through a TickRate, measured against steady_clock over its
// whole life (after 2 ms its error is below 1e-6; it only improves). A span read on two cores
// whose counters disagree comes out clamped at 0, never negative: these clocks are for
// self-metrics, never for deadlines.
//
// CoarseMonotonicNs is CLOCK_MONOTONIC_COARSE: the same time base as steady_clock, lagging it by
// at most one kernel tick (1–10 ms). Good enough for the watchdog's "running for 5 s", not for
// timing a call.
#ifndef GPUWARDEN_BASE_STOPWATCH_H_
#define GPUWARDEN_BASE_STOPWATCH_H_

#include <chrono>
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace gw {

// True when Ticks() reads the invariant time-stamp counter (decided once, at first use).
bool TicksAreCycles();

inline uint64_t Ticks() {
#if defined(__x86_64__)
  if (TicksAreCycles()) return __rdtsc();
#endif
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// Ticks from `start` to now, 0 if the counter read lower (another core's counter).
inline uint64_t TicksSince(uint64_t start) {
  const uint64_t now = Ticks();
  return now > start ? now - start : 0;
}

// Converts ticks to seconds. Thread-compatible (one owner calls SecondsPerTick).
class TickRate {
 public:
  TickRate();
  // Seconds per tick, measured over the span since construction: 1e-9 when ticks are
  // nanoseconds; otherwise waits once, if needed, until 2 ms have passed since construction.
  double SecondsPerTick();

 private:
  std::chrono::steady_clock::time_point steady0_;
  uint64_t ticks0_;
};

// CLOCK_MONOTONIC_COARSE in nanoseconds (steady_clock where that clock does not exist).
int64_t CoarseMonotonicNs();

}  // namespace gw

#endif  // GPUWARDEN_BASE_STOPWATCH_H_
