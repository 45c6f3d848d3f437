#include "sim/gpm.h"

#include <algorithm>

namespace gw::sim {
namespace {

// How a workload type loads the chip at its segment's full `util`: fractions of `util` (dram:
// of `mem_util`; nvlink: of each link's bandwidth). A busy-but-hollow workload's values are
// percent regardless of its utilization: its kernels run all the time on a few SMs.
struct Shape {
  double sm, occupancy, integer, hmma, imma, fp32, fp16, dram, nvlink;
  bool absolute;
};
constexpr Shape kTraining{0.90, 0.50, 0.12, 0.60, 0.00, 0.20, 0.30, 0.85, 0.30, false};
constexpr Shape kInference{0.70, 0.35, 0.15, 0.15, 0.35, 0.10, 0.20, 0.80, 0.02, false};
constexpr Shape kMemoryBound{0.80, 0.25, 0.20, 0.02, 0.00, 0.30, 0.05, 0.95, 0.05, false};
constexpr Shape kSpikes{0.70, 0.40, 0.10, 0.20, 0.00, 0.20, 0.10, 0.85, 0.03, false};
constexpr Shape kBusyHollow{5, 2, 1, 0, 0, 3, 0, 3, 0.005, true};

const Shape* ShapeOf(WorkloadType type) {
  switch (type) {
    case WorkloadType::kTraining:
      return &kTraining;
    case WorkloadType::kInference:
      return &kInference;
    case WorkloadType::kMemoryBound:
      return &kMemoryBound;
    case WorkloadType::kSpikes:
      return &kSpikes;
    case WorkloadType::kBusyHollow:
      return &kBusyHollow;
    case WorkloadType::kIdle:
    case WorkloadType::kIdleAllocated:
      break;
  }
  return nullptr;
}

double Ratio(double now, double full) {
  return full > 0 ? now / full : 0;
}

struct MetricName {
  unsigned id;
  GpmChannel channel;
  const char* short_name;
  const char* long_name;
};
constexpr MetricName kPercentMetrics[] = {
    {NVML_GPM_METRIC_GRAPHICS_UTIL, kGpmGraphics, "gr_util", "graphics engine active"},
    {NVML_GPM_METRIC_SM_UTIL, kGpmSm, "sm_util", "SMs active"},
    {NVML_GPM_METRIC_SM_OCCUPANCY, kGpmOccupancy, "sm_occupancy", "warps resident on SMs"},
    {NVML_GPM_METRIC_INTEGER_UTIL, kGpmInteger, "integer_util", "integer pipe active"},
    {NVML_GPM_METRIC_ANY_TENSOR_UTIL, kGpmTensorAny, "any_tensor_util", "any tensor pipe active"},
    {NVML_GPM_METRIC_DFMA_TENSOR_UTIL, kGpmDfma, "dfma_tensor_util", "DFMA tensor pipe active"},
    {NVML_GPM_METRIC_HMMA_TENSOR_UTIL, kGpmHmma, "hmma_tensor_util", "HMMA tensor pipe active"},
    {NVML_GPM_METRIC_DMMA_TENSOR_UTIL, kGpmDmma, "dmma_tensor_util", "DMMA tensor pipe active"},
    {NVML_GPM_METRIC_IMMA_TENSOR_UTIL, kGpmImma, "imma_tensor_util", "IMMA tensor pipe active"},
    {NVML_GPM_METRIC_DRAM_BW_UTIL, kGpmDram, "dram_bw_util", "DRAM bandwidth used"},
    {NVML_GPM_METRIC_FP64_UTIL, kGpmFp64, "fp64_util", "FP64 pipe active"},
    {NVML_GPM_METRIC_FP32_UTIL, kGpmFp32, "fp32_util", "FP32 pipe active"},
    {NVML_GPM_METRIC_FP16_UTIL, kGpmFp16, "fp16_util", "FP16 pipe active"},
};
constexpr double kMiB = 1024.0 * 1024.0;

}  // namespace

GpmPercents ProfileOf(const WorkloadSegment& s, double util_pct, double mem_util_pct) {
  GpmPercents p{};
  const Shape* shape = ShapeOf(s.type);
  if (shape == nullptr) return p;
  const double r = Ratio(util_pct, s.util_pct), rm = Ratio(mem_util_pct, s.mem_util_pct);
  const double full = shape->absolute ? 1.0 : s.util_pct;
  const double full_mem = shape->absolute ? 1.0 : s.mem_util_pct;
  const double hmma_default = shape->hmma * full;
  const double hmma = s.tensor_pct >= 0 ? s.tensor_pct : hmma_default;
  p[kGpmSm] = s.sm_active_pct >= 0 ? s.sm_active_pct : shape->sm * full;
  p[kGpmOccupancy] = s.sm_occupancy_pct >= 0 ? s.sm_occupancy_pct : shape->occupancy * full;
  p[kGpmInteger] = shape->integer * full;
  p[kGpmHmma] = hmma;
  p[kGpmImma] = shape->imma * full;
  // Work the tensor cores do not do runs on the FP32 pipes instead (FP32 training).
  p[kGpmFp32] = shape->fp32 * full + std::max(0.0, hmma_default - hmma) * 0.6;
  p[kGpmFp16] = shape->fp16 * full;
  for (double& v : p) v *= r;
  p[kGpmDram] = (s.dram_pct >= 0 ? s.dram_pct : shape->dram * full_mem) * rm;
  p[kGpmGraphics] = util_pct;
  p[kGpmTensorAny] = p[kGpmHmma] + p[kGpmImma] + p[kGpmDmma] + p[kGpmDfma];
  for (double& v : p) v = std::clamp(v, 0.0, 100.0);
  return p;
}

double NvLinkShareOf(const WorkloadSegment& s, double util_pct) {
  const Shape* shape = ShapeOf(s.type);
  if (shape == nullptr) return 0;
  const double share = s.nvlink_pct >= 0 ? s.nvlink_pct / 100 : shape->nvlink;
  return std::clamp(share * Ratio(util_pct, s.util_pct), 0.0, 1.0);
}

GpmMetricOutcome ComputeGpmMetric(unsigned id, const GpmCounters& older, const GpmCounters& newer,
                                  double seconds, unsigned links, bool mig) {
  GpmMetricOutcome out;
  for (const MetricName& m : kPercentMetrics) {
    if (m.id != id) continue;
    out.rc = NVML_SUCCESS;
    out.value = std::clamp((newer.pct_seconds[m.channel] - older.pct_seconds[m.channel]) / seconds,
                           0.0, 100.0);
    out.short_name = m.short_name;
    out.long_name = m.long_name;
    out.unit = "%";
    return out;
  }
  auto rate = [&](double bytes_older, double bytes_newer, const char* short_name,
                  const char* long_name) {
    out.rc = NVML_SUCCESS;
    out.value = std::max(0.0, bytes_newer - bytes_older) / seconds / kMiB;
    out.short_name = short_name;
    out.long_name = long_name;
    out.unit = "MiB/sec";
    return out;
  };
  if (mig) return out;  // PCIe and NVLink belong to the whole GPU
  if (id == NVML_GPM_METRIC_PCIE_TX_PER_SEC)
    return rate(older.pcie_tx_bytes, newer.pcie_tx_bytes, "pcie_tx", "PCIe transmit");
  if (id == NVML_GPM_METRIC_PCIE_RX_PER_SEC)
    return rate(older.pcie_rx_bytes, newer.pcie_rx_bytes, "pcie_rx", "PCIe receive");
  if (links == 0) return out;
  if (id == NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC ||
      id == NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC) {
    const bool rx = id == NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC;
    double a = 0, b = 0;
    for (unsigned l = 0; l < links && l < kMaxSimNvLinks; ++l) {
      a += rx ? older.nvlink_rx_bytes[l] : older.nvlink_tx_bytes[l];
      b += rx ? newer.nvlink_rx_bytes[l] : newer.nvlink_tx_bytes[l];
    }
    return rx ? rate(a, b, "nvlink_total_rx", "NVLink receive, all links")
              : rate(a, b, "nvlink_total_tx", "NVLink transmit, all links");
  }
  if (id >= NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC && id <= NVML_GPM_METRIC_NVLINK_L17_TX_PER_SEC) {
    const unsigned link = (id - NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC) / 2;
    if (link >= links) return out;
    if ((id - NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC) % 2 == 0)
      return rate(older.nvlink_rx_bytes[link], newer.nvlink_rx_bytes[link], "nvlink_rx",
                  "NVLink receive, one link");
    return rate(older.nvlink_tx_bytes[link], newer.nvlink_tx_bytes[link], "nvlink_tx",
                "NVLink transmit, one link");
  }
  return out;
}

}  // namespace gw::sim
