#include "sim/inference/service.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "sim/metrics_text.h"

namespace gw::sim {

InferenceService::InferenceService(ServiceProfile profile)
    : profile_(profile), rng_(profile.seed * 0x9E3779B97F4A7C15ULL + 1) {}

double InferenceService::Uniform() {
  // splitmix64
  std::uint64_t z = (rng_ += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return (static_cast<double>(z >> 11) + 0.5) / 9007199254740992.0;
}

void InferenceService::AdvanceTo(std::uint64_t virtual_ms, const GpuState& gpu) {
  clock_ratio_ = gpu.clock_ratio();
  free_memory_bytes_ = static_cast<double>(gpu.free_memory_bytes());
  if (!started_ || virtual_ms < last_ms_) {
    started_ = true;
    last_ms_ = virtual_ms;
    return;
  }
  std::uint64_t from = last_ms_;
  if (virtual_ms - from > kMaxCatchUpMs) from = virtual_ms - kMaxCatchUpMs;
  last_ms_ = virtual_ms;
  carry_ += profile_.requests_per_s * static_cast<double>(virtual_ms - from) / 1000.0;
  while (carry_ >= 1) {
    carry_ -= 1;
    Serve(gpu);
  }
}

void InferenceService::Serve(const GpuState& gpu) {
  double latency_s;
  const double headroom = profile_.memory_headroom_mib * 1024 * 1024;
  if (gpu.memory_total_bytes > 0 && free_memory_bytes_ < headroom) {
    latency_s = profile_.overhead_ms / 1000;
    ++oom_;
  } else {
    const double ratio = std::max(0.05, clock_ratio_);
    const double service_s = profile_.service_ms / 1000 / ratio;
    const double rho = profile_.requests_per_s * service_s;
    if (rho >= 1 && Uniform() < 1 - 1 / rho) {
      latency_s = profile_.timeout_s;
      ++shed_;
    } else {
      const double busy = std::min(rho, 0.95);
      const double mean_wait_s = service_s / (1 - busy);
      latency_s = profile_.overhead_ms / 1000 - mean_wait_s * std::log(Uniform());
      if (latency_s > profile_.timeout_s) {
        latency_s = profile_.timeout_s;
        ++timed_out_;
      } else {
        ++ok_;
        tokens_ += profile_.tokens_per_request;
      }
    }
  }
  ++count_;
  sum_s_ += latency_s;
  for (std::size_t i = 0; i < kBuckets.size(); ++i)
    if (latency_s <= kBuckets[i]) ++buckets_[i];
}

std::uint64_t InferenceService::requests(int code) const {
  switch (code) {
    case 200:
      return ok_;
    case 500:
      return oom_;
    case 503:
      return shed_;
    case 504:
      return timed_out_;
  }
  return 0;
}

std::uint64_t InferenceService::bucket(std::size_t i) const {
  return i < buckets_.size() ? buckets_[i] : count_;
}

void InferenceService::Render(std::string* out) const {
  out->append(
      "# HELP inference_request_duration_seconds Time from a request's arrival to its answer.\n"
      "# TYPE inference_request_duration_seconds histogram\n");
  for (std::size_t i = 0; i < kBuckets.size(); ++i) {
    out->append("inference_request_duration_seconds_bucket{le=\"");
    AppendNumber(out, kBuckets[i]);
    out->append("\"} ");
    AppendNumber(out, static_cast<double>(buckets_[i]));
    out->append("\n");
  }
  out->append("inference_request_duration_seconds_bucket{le=\"+Inf\"} ");
  AppendNumber(out, static_cast<double>(count_));
  out->append("\ninference_request_duration_seconds_sum ");
  AppendNumber(out, sum_s_);
  out->append("\ninference_request_duration_seconds_count ");
  AppendNumber(out, static_cast<double>(count_));
  out->append(
      "\n# HELP inference_requests_total Requests answered, by HTTP status code (200 served, "
      "500 GPU out of memory, 503 shed under overload, 504 timed out).\n"
      "# TYPE inference_requests_total counter\n");
  for (int code : {200, 500, 503, 504}) {
    out->append("inference_requests_total{code=\"" + std::to_string(code) + "\"} ");
    AppendNumber(out, static_cast<double>(requests(code)));
    out->append("\n");
  }
  out->append(
      "# HELP inference_output_tokens_total Tokens produced by successful requests (throughput).\n"
      "# TYPE inference_output_tokens_total counter\ninference_output_tokens_total ");
  AppendNumber(out, tokens_);
  out->append(
      "\n# HELP inference_gpu_clock_ratio SM clock over its maximum as the service last saw its "
      "GPU.\n# TYPE inference_gpu_clock_ratio gauge\ninference_gpu_clock_ratio ");
  AppendNumber(out, clock_ratio_);
  out->append(
      "\n# HELP inference_gpu_memory_free_bytes Device memory free for the service's next batch."
      "\n# TYPE inference_gpu_memory_free_bytes gauge\ninference_gpu_memory_free_bytes ");
  AppendNumber(out, free_memory_bytes_);
  out->append("\n");
}

}  // namespace gw::sim
