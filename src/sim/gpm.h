// Profiling counters (NVML GPM) of the simulated GPUs: what each workload keeps busy, how a GPU
// accumulates it, and how nvmlGpmMetricsGet turns two samples into metrics.
//
// Each physics step a GPU (and each MIG instance) adds "percent x seconds" per pipe and bytes per
// link to cumulative counters; a GPM sample is a copy of those counters with the step's time, and
// a metric is the difference of two samples divided by the time between them. So, as the real
// counters, a metric is the average over the interval, and readings stay a pure function of the
// scenario and time (docs/scenarios.md, "Profiling counters").
//
// Pure functions and plain data; any thread.
#ifndef GPUWARDEN_SIM_GPM_H_
#define GPUWARDEN_SIM_GPM_H_

#include <array>

#include "nvml/abi.h"
#include "sim/gpu_model.h"
#include "sim/scenario.h"

namespace gw::sim {

// The percent-valued GPM metrics the simulator models, one counter each.
enum GpmChannel : unsigned {
  kGpmGraphics,
  kGpmSm,
  kGpmOccupancy,
  kGpmInteger,
  kGpmTensorAny,
  kGpmDfma,
  kGpmHmma,
  kGpmDmma,
  kGpmImma,
  kGpmDram,
  kGpmFp64,
  kGpmFp32,
  kGpmFp16,
  kGpmChannels
};
using GpmPercents = std::array<double, kGpmChannels>;

// What a workload keeps busy at one instant, percent per channel. `util_pct`/`mem_util_pct` are
// the step's (jittered) utilizations; the segment's own `util`/`mem_util` scale the defaults, so
// inference lulls and jitter carry through.
GpmPercents ProfileOf(const WorkloadSegment& segment, double util_pct, double mem_util_pct);

// Share (0-1) of each NVLink link's bandwidth, per direction, a workload moves at that instant.
double NvLinkShareOf(const WorkloadSegment& segment, double util_pct);

// Cumulative counters of a GPU or MIG instance since the scenario started.
struct GpmCounters {
  GpmPercents pct_seconds{};
  double pcie_tx_bytes = 0, pcie_rx_bytes = 0;
  std::array<double, kMaxSimNvLinks> nvlink_tx_bytes{}, nvlink_rx_bytes{};
};

// One metric of nvmlGpmMetricsGet, computed from two samples `seconds` apart. `links` is the
// GPU's NVLink count; `mig` says the samples are of a MIG instance (no PCIe or NVLink there).
// rc is the entry's nvmlReturn: NOT_SUPPORTED for ids the simulator does not model.
struct GpmMetricOutcome {
  nvmlReturn_t rc = NVML_ERROR_NOT_SUPPORTED;
  double value = 0;
  const char* short_name = nullptr;
  const char* long_name = nullptr;
  const char* unit = nullptr;
};
GpmMetricOutcome ComputeGpmMetric(unsigned metric_id, const GpmCounters& older,
                                  const GpmCounters& newer, double seconds, unsigned links,
                                  bool mig);

}  // namespace gw::sim

#endif  // GPUWARDEN_SIM_GPM_H_
