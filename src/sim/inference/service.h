// sim/inference/service.h — the simulated inference service behind gw-inference-sim: a request
// stream served by one simulated GPU, whose latency and success follow that GPU's state.
//
// Model (per request; time is the simulation's virtual time, so a stepped simulation gives the
// same numbers however fast it is stepped):
//   * requests arrive at `requests_per_s`;
//   * GPU time per request s = service_ms / clock_ratio (clock_ratio = SM clock / max SM clock:
//     thermal or power throttling slows every request);
//   * the GPU is a single queue with load rho = requests_per_s * s: latency = overhead_ms +
//     Exp(mean s / (1 - rho)), so a service near its knee gets much slower when its GPU throttles
//     (at the defaults: p95 ~ 0.07 s at full clock, ~ 0.4 s at 70 % clock);
//   * past saturation (rho >= 1) the share 1 - 1/rho is shed with 503 after `timeout_s`, the rest
//     is served as at rho = 0.95; a latency beyond `timeout_s` is a 504;
//   * with less than `memory_headroom_mib` of free device memory every request fails at once
//     with 500 (CUDA out of memory);
//   * a success produces `tokens_per_request` output tokens.
// Randomness is a seeded generator: equal inputs give equal counters.
//
// Thread-safety: none; gw-inference-sim serialises calls with its mutex.
#ifndef GPUWARDEN_SIM_INFERENCE_SERVICE_H_
#define GPUWARDEN_SIM_INFERENCE_SERVICE_H_

#include <array>
#include <cstdint>
#include <string>

#include "sim/state_file.h"

namespace gw::sim {

struct ServiceProfile {
  double requests_per_s = 80;
  double service_ms = 8;
  double overhead_ms = 5;
  double timeout_s = 2;
  double memory_headroom_mib = 1024;
  double tokens_per_request = 128;
  std::uint64_t seed = 1;
};

class InferenceService {
 public:
  // Histogram bucket upper bounds (seconds), Prometheus' defaults.
  static constexpr std::array<double, 11> kBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                      0.5,   1,    2.5,   5,    10};
  // Catching up further than this (virtual) serves only the last stretch of it.
  static constexpr std::uint64_t kMaxCatchUpMs = 10 * 60 * 1000;

  explicit InferenceService(ServiceProfile profile);

  // Serves the requests arriving in (last time, virtual_ms] under `gpu`'s state. The first call
  // only sets the clock. A clock that goes backwards (a new simulation) restarts from there.
  void AdvanceTo(std::uint64_t virtual_ms, const GpuState& gpu);

  // The exposition in Prometheus text format 0.0.4.
  void Render(std::string* out) const;

  std::uint64_t requests(int code) const;
  std::uint64_t requests_total() const { return count_; }
  // Observations at or below kBuckets[i] (cumulative).
  std::uint64_t bucket(std::size_t i) const;
  double clock_ratio() const { return clock_ratio_; }

 private:
  void Serve(const GpuState& gpu);
  double Uniform();  // (0, 1)

  ServiceProfile profile_;
  std::uint64_t rng_;
  bool started_ = false;
  std::uint64_t last_ms_ = 0;
  double carry_ = 0;  // fractional arrivals not yet served
  std::array<std::uint64_t, kBuckets.size()> buckets_{};
  std::uint64_t count_ = 0;
  double sum_s_ = 0;
  std::uint64_t ok_ = 0, oom_ = 0, shed_ = 0, timed_out_ = 0;
  double tokens_ = 0;
  double clock_ratio_ = 1;
  double free_memory_bytes_ = 0;
};

}  // namespace gw::sim

#endif  // GPUWARDEN_SIM_INFERENCE_SERVICE_H_
