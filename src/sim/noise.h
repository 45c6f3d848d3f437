// Deterministic pseudo-noise: a pure function of (seed, gpu, tick, channel), so a reading at a
// given virtual time is the same however often, and from whichever thread, it is read.
#ifndef GPUWARDEN_SIM_NOISE_H_
#define GPUWARDEN_SIM_NOISE_H_

#include <cstdint>

namespace gw::sim {

// A 64-bit mix (splitmix64 finaliser over the combined inputs).
constexpr std::uint64_t Mix(std::uint64_t seed, std::uint64_t gpu, std::uint64_t tick,
                            std::uint64_t channel) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ULL ^ (gpu + 1) * 0xBF58476D1CE4E5B9ULL ^
                    (tick + 1) * 0x94D049BB133111EBULL ^ (channel + 1) * 0xD6E8FEB86659FD93ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Uniform in [0, 1).
constexpr double Unit(std::uint64_t seed, std::uint64_t gpu, std::uint64_t tick,
                      std::uint64_t channel) {
  return static_cast<double>(Mix(seed, gpu, tick, channel) >> 11) * 0x1.0p-53;
}

// An integer in [-amplitude, +amplitude], as NVML's integer readings jitter.
constexpr int Jitter(std::uint64_t seed, std::uint64_t gpu, std::uint64_t tick,
                     std::uint64_t channel, int amplitude) {
  return static_cast<int>(Mix(seed, gpu, tick, channel) % (2ULL * amplitude + 1)) - amplitude;
}

}  // namespace gw::sim

#endif  // GPUWARDEN_SIM_NOISE_H_
