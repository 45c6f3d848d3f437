#include "base/stopwatch.h"

#include <time.h>

#include <thread>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace gw {

bool TicksAreCycles() {
#if defined(__x86_64__)
  static const bool invariant = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    // The cast: GCC's cpuid.h returns unsigned, clang's int.
    if (static_cast<unsigned>(__get_cpuid_max(0x80000000u, nullptr)) < 0x80000007u) return false;
    if (!__get_cpuid(0x80000007u, &eax, &ebx, &ecx, &edx)) return false;
    return (edx & (1u << 8)) != 0;  // invariant TSC
  }();
  return invariant;
#else
  return false;
#endif
}

TickRate::TickRate() : steady0_(std::chrono::steady_clock::now()), ticks0_(Ticks()) {}

double TickRate::SecondsPerTick() {
  if (!TicksAreCycles()) return 1e-9;
  constexpr auto kMinSpan = std::chrono::milliseconds(2);
  auto steady = std::chrono::steady_clock::now();
  if (steady - steady0_ < kMinSpan) {  // only right after construction
    std::this_thread::sleep_for(kMinSpan - (steady - steady0_));
    steady = std::chrono::steady_clock::now();
  }
  const uint64_t ticks = Ticks();
  if (ticks <= ticks0_) return 1e-9;  // cannot happen with an invariant counter; stay sane
  return std::chrono::duration<double>(steady - steady0_).count() /
         static_cast<double>(ticks - ticks0_);
}

int64_t CoarseMonotonicNs() {
#if defined(CLOCK_MONOTONIC_COARSE)
  timespec ts;
  if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) == 0)
    return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
#endif
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace gw
