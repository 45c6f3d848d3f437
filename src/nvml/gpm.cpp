#include "nvml/gpm.h"

#include <cmath>
#include <limits>
#include <utility>

namespace gw::nvml {

GpmSampler::GpmSampler(const Device& device, unsigned gpu_instance_id)
    : api_(device.api()), device_(device.handle()), gpu_instance_id_(gpu_instance_id) {}

GpmSampler::~GpmSampler() {
  Free();
}

GpmSampler::GpmSampler(GpmSampler&& other) noexcept {
  *this = std::move(other);
}

GpmSampler& GpmSampler::operator=(GpmSampler&& other) noexcept {
  if (this == &other) return *this;
  Free();
  api_ = other.api_;
  device_ = other.device_;
  gpu_instance_id_ = other.gpu_instance_id_;
  buffers_[0] = std::exchange(other.buffers_[0], nullptr);
  buffers_[1] = std::exchange(other.buffers_[1], nullptr);
  newest_ = other.newest_;
  samples_ = std::exchange(other.samples_, 0);
  last_s_ = other.last_s_;
  return *this;
}

void GpmSampler::Free() {
  for (nvmlGpmSample_t& b : buffers_) {
    if (b != nullptr && api_ != nullptr && api_->nvmlGpmSampleFree != nullptr)
      api_->nvmlGpmSampleFree(b);
    b = nullptr;
  }
  samples_ = 0;
}

Result<bool> GpmSampler::Sample(double now_s) {
  if (api_ == nullptr || api_->nvmlGpmSampleAlloc == nullptr ||
      api_->nvmlGpmSampleFree == nullptr || api_->nvmlGpmMetricsGet == nullptr)
    return Result<bool>::Fail(NVML_ERROR_FUNCTION_NOT_FOUND);
  const bool mig = gpu_instance_id_ != NVML_MIG_NO_INSTANCE;
  auto get = mig ? nullptr : api_->nvmlGpmSampleGet;
  auto mig_get = mig ? api_->nvmlGpmMigSampleGet : nullptr;
  if (get == nullptr && mig_get == nullptr)
    return Result<bool>::Fail(NVML_ERROR_FUNCTION_NOT_FOUND);
  if (!Due(now_s)) return Result<bool>::Fail(NVML_ERROR_NOT_READY);
  if (buffers_[0] == nullptr) {
    for (nvmlGpmSample_t& b : buffers_) {
      nvmlReturn_t rc = api_->nvmlGpmSampleAlloc(&b);
      if (rc != NVML_SUCCESS) {
        b = nullptr;
        Free();
        return Result<bool>::Fail(rc);
      }
    }
  }
  const int target = 1 - newest_;  // the older buffer (or an unused one)
  nvmlReturn_t rc =
      mig ? mig_get(device_, gpu_instance_id_, buffers_[target]) : get(device_, buffers_[target]);
  if (rc != NVML_SUCCESS) {
    // The target buffer may be half written: only the newer sample is still good.
    if (samples_ > 1) samples_ = 1;
    return Result<bool>::Fail(rc);
  }
  newest_ = target;
  if (samples_ < 2) ++samples_;
  last_s_ = now_s;
  return ready();
}

Result<unsigned> GpmSampler::Metrics(const unsigned* ids, size_t n, double* values) const {
  if (api_ == nullptr || api_->nvmlGpmMetricsGet == nullptr)
    return Result<unsigned>::Fail(NVML_ERROR_FUNCTION_NOT_FOUND);
  if (!ready()) return Result<unsigned>::Fail(NVML_ERROR_NOT_READY);
  if (n > GW_GPM_METRICS_CAPACITY) return Result<unsigned>::Fail(NVML_ERROR_INVALID_ARGUMENT);
  // On the stack (about 2.6 KB): one request per call, nothing kept between cycles.
  nvmlGpmMetricsGet_t request;
  request.version = NVML_GPM_METRICS_GET_VERSION;
  request.numMetrics = static_cast<unsigned>(n);
  request.sample1 = buffers_[1 - newest_];
  request.sample2 = buffers_[newest_];
  for (size_t i = 0; i < n; ++i) {
    request.metrics[i] = nvmlGpmMetric_t{};
    request.metrics[i].metricId = ids[i];
  }
  nvmlReturn_t rc = api_->nvmlGpmMetricsGet(&request);
  if (rc != NVML_SUCCESS) return Result<unsigned>::Fail(rc);
  unsigned good = 0;
  for (size_t i = 0; i < n; ++i) {
    const nvmlGpmMetric_t& m = request.metrics[i];
    const bool ok = m.nvmlReturn == NVML_SUCCESS && std::isfinite(m.value);
    values[i] = ok ? m.value : std::numeric_limits<double>::quiet_NaN();
    good += ok ? 1 : 0;
  }
  return good;
}

}  // namespace gw::nvml
