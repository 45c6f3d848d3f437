// What NVIDIA's dcgm-exporter exports by default and what its Grafana dashboard asks for, written
// down as data for the compatibility tests (dcgm_exporter_test.cpp, dcgm_exporter_serve_test.cpp).
//
// Derived by reading, in github.com/NVIDIA/dcgm-exporter at release tag 4.5.3-4.8.2 (commit
// 691c92762eb551313c825f6efe4ceeee20982801; etc/ and grafana/ are unchanged up to d5e5f510a1b6 of
// 2026-05-12):
//   etc/default-counters.csv        every line, the muted (commented-out) ones too
//   etc/dcp-metrics-included.csv    the same fields as default-counters.csv at that tag
//   grafana/dcgm-exporter-dashboard.json   every `expr` and templating query
// Their files are not copied here: this is the list of names, types and units they use, and for
// each whether NVML can provide it (and why not, where it cannot). docs/dcgm-exporter.md has the
// same list for people.
#ifndef GPUWARDEN_TESTS_COMPAT_DCGM_EXPORTER_UPSTREAM_H_
#define GPUWARDEN_TESTS_COMPAT_DCGM_EXPORTER_UPSTREAM_H_

#include <string_view>

namespace gw::compat {

enum class Listed {
  kDefault,  // an active line of default-counters.csv: dcgm-exporter exports it out of the box
  kMuted,    // a commented-out line: exported once a user enables it in their CSV
};

struct UpstreamMetric {
  std::string_view name;
  std::string_view type;  // as the CSV types it: gauge, counter, label
  std::string_view unit;  // DCGM's unit: MHz, C, W, mJ, MiB, %, ratio, B/s, B, ns, "" (count)
  Listed listed;
  // "" when gpuwarden gets it from NVML; otherwise why it is not provided.
  std::string_view not_provided;
};

inline constexpr UpstreamMetric kUpstreamMetrics[] = {
    {"DCGM_FI_DEV_SM_CLOCK", "gauge", "MHz", Listed::kDefault, ""},
    {"DCGM_FI_DEV_MEM_CLOCK", "gauge", "MHz", Listed::kDefault, ""},
    {"DCGM_FI_DEV_MEMORY_TEMP", "gauge", "C", Listed::kDefault, ""},
    {"DCGM_FI_DEV_GPU_TEMP", "gauge", "C", Listed::kDefault, ""},
    {"DCGM_FI_DEV_POWER_USAGE", "gauge", "W", Listed::kDefault, ""},
    {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "mJ", Listed::kDefault, ""},
    {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "", Listed::kDefault, ""},
    {"DCGM_FI_DEV_GPU_UTIL", "gauge", "%", Listed::kDefault, ""},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "%", Listed::kDefault, ""},
    {"DCGM_FI_DEV_ENC_UTIL", "gauge", "%", Listed::kDefault, ""},
    {"DCGM_FI_DEV_DEC_UTIL", "gauge", "%", Listed::kDefault, ""},
    {"DCGM_FI_DEV_XID_ERRORS", "gauge", "", Listed::kDefault, ""},
    {"DCGM_FI_DEV_FB_FREE", "gauge", "MiB", Listed::kDefault, ""},
    {"DCGM_FI_DEV_FB_USED", "gauge", "MiB", Listed::kDefault, ""},
    {"DCGM_FI_DEV_FB_RESERVED", "gauge", "MiB", Listed::kDefault, ""},
    {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter", "B", Listed::kDefault, ""},
    {"DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge", "", Listed::kDefault,
     "vGPU guests only: the licence state of a virtual GPU; gpuwarden watches physical GPUs and "
     "does not read vGPU licensing"},
    {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "", Listed::kDefault, ""},
    {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "", Listed::kDefault, ""},
    {"DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "", Listed::kDefault, ""},
    {"DCGM_FI_DRIVER_VERSION", "label", "", Listed::kDefault, ""},
    {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "ratio", Listed::kDefault, ""},
    {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "ratio", Listed::kDefault, ""},
    {"DCGM_FI_PROF_DRAM_ACTIVE", "gauge", "ratio", Listed::kDefault, ""},
    {"DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", "B/s", Listed::kDefault, ""},
    {"DCGM_FI_PROF_PCIE_RX_BYTES", "gauge", "B/s", Listed::kDefault, ""},
    // Muted lines.
    {"DCGM_FI_DEV_POWER_VIOLATION", "counter", "ns", Listed::kMuted, ""},
    {"DCGM_FI_DEV_THERMAL_VIOLATION", "counter", "ns", Listed::kMuted, ""},
    {"DCGM_FI_DEV_SYNC_BOOST_VIOLATION", "counter", "ns", Listed::kMuted, ""},
    {"DCGM_FI_DEV_BOARD_LIMIT_VIOLATION", "counter", "ns", Listed::kMuted,
     "DCGM's own policy accounting (nvmlDeviceGetViolationStatus board limit); gpuwarden does not "
     "read violation counters, it integrates clock-event reasons, which have no board-limit "
     "reason"},
    {"DCGM_FI_DEV_LOW_UTIL_VIOLATION", "counter", "ns", Listed::kMuted,
     "as the board-limit violation: no clock-event reason corresponds"},
    {"DCGM_FI_DEV_RELIABILITY_VIOLATION", "counter", "ns", Listed::kMuted,
     "as the board-limit violation: no clock-event reason corresponds"},
    {"DCGM_EXP_CLOCK_EVENTS_COUNT", "counter", "", Listed::kMuted,
     "dcgm-exporter's own windowed count; gpuwarden has gpu_clock_event_seconds_total instead"},
    {"DCGM_EXP_XID_ERRORS_COUNT", "counter", "", Listed::kMuted,
     "dcgm-exporter's count per XID over its own window; gpuwarden has gpu_xid_errors_total{xid} "
     "(cumulative) instead"},
    {"DCGM_EXP_GPU_HEALTH_STATUS", "counter", "", Listed::kMuted,
     "DCGM's health-check engine (DCGM only); gpuwarden's health is gpu_up and its alert pack"},
    {"DCGM_EXP_P2P_STATUS", "counter", "", Listed::kMuted,
     "DCGM's peer-to-peer NVLink test (DCGM only)"},
    {"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "", Listed::kMuted, ""},
    {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "", Listed::kMuted, ""},
    {"DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "counter", "", Listed::kMuted, ""},
    {"DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "counter", "", Listed::kMuted, ""},
    {"DCGM_FI_DEV_RETIRED_SBE", "counter", "", Listed::kMuted, ""},
    {"DCGM_FI_DEV_RETIRED_DBE", "counter", "", Listed::kMuted, ""},
    {"DCGM_FI_DEV_RETIRED_PENDING", "counter", "", Listed::kMuted, ""},
    {"DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter", "", Listed::kMuted, ""},
    {"DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "counter", "", Listed::kMuted, ""},
    {"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "counter", "", Listed::kMuted, ""},
    {"DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "counter", "", Listed::kMuted, ""},
    {"DCGM_FI_DEV_NVLINK_BANDWIDTH_L0", "counter", "B", Listed::kMuted,
     "per-link byte counters: gpuwarden reads NVLink throughput for the whole GPU (field values) "
     "and per link only as rates (gpu_nvlink_link_*_bytes_per_second)"},
    {"DCGM_FI_NVML_VERSION", "label", "", Listed::kMuted,
     "a label field; gpuwarden writes the NVML version on gpuwarden_* and gpu_info, not as a label "
     "on every series"},
    {"DCGM_FI_DEV_BRAND", "label", "", Listed::kMuted, "a label field gpuwarden does not read"},
    {"DCGM_FI_DEV_SERIAL", "label", "", Listed::kMuted,
     "a label field; the serial is on gpu_info{serial} under gpuwarden's names"},
    {"DCGM_FI_DEV_OEM_INFOROM_VER", "label", "", Listed::kMuted,
     "a label field gpuwarden does not read (inforom versions)"},
    {"DCGM_FI_DEV_ECC_INFOROM_VER", "label", "", Listed::kMuted,
     "a label field gpuwarden does not read (inforom versions)"},
    {"DCGM_FI_DEV_POWER_INFOROM_VER", "label", "", Listed::kMuted,
     "a label field gpuwarden does not read (inforom versions)"},
    {"DCGM_FI_DEV_INFOROM_IMAGE_VER", "label", "", Listed::kMuted,
     "a label field gpuwarden does not read (inforom versions)"},
    {"DCGM_FI_DEV_VBIOS_VERSION", "label", "", Listed::kMuted,
     "a label field gpuwarden does not read"},
    {"DCGM_FI_PROF_SM_ACTIVE", "gauge", "ratio", Listed::kMuted, ""},
    {"DCGM_FI_PROF_SM_OCCUPANCY", "gauge", "ratio", Listed::kMuted, ""},
    {"DCGM_FI_PROF_PIPE_FP64_ACTIVE", "gauge", "ratio", Listed::kMuted, ""},
    {"DCGM_FI_PROF_PIPE_FP32_ACTIVE", "gauge", "ratio", Listed::kMuted, ""},
    {"DCGM_FI_PROF_PIPE_FP16_ACTIVE", "gauge", "ratio", Listed::kMuted, ""},
};

// The dashboard's panel queries, as written (Grafana replaces $instance and $gpu before sending).
inline constexpr std::string_view kDashboardExpressions[] = {
    R"(DCGM_FI_DEV_GPU_TEMP{instance=~"$instance", gpu=~"$gpu"})",
    R"(avg(DCGM_FI_DEV_GPU_TEMP{instance=~"$instance", gpu=~"$gpu"}))",
    R"(DCGM_FI_DEV_POWER_USAGE{instance=~"$instance", gpu=~"$gpu"})",
    R"(sum(DCGM_FI_DEV_POWER_USAGE{instance=~"$instance", gpu=~"$gpu"}))",
    R"(DCGM_FI_DEV_SM_CLOCK{instance=~"$instance", gpu=~"$gpu"} * 1000000)",
    R"(DCGM_FI_DEV_GPU_UTIL{instance=~"$instance", gpu=~"$gpu"})",
    R"(DCGM_FI_DEV_FB_USED{instance=~"$instance", gpu=~"$gpu"})",
    R"(DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{instance=~"$instance", gpu=~"$gpu"})",
};
// Its template variables: label_values(METRIC, LABEL) (Grafana's syntax, not PromQL). `instance`
// is the scrape target Prometheus adds; the others must be on the metric.
struct DashboardVariable {
  std::string_view metric, label;
};
inline constexpr DashboardVariable kDashboardVariables[] = {
    {"DCGM_FI_DEV_GPU_TEMP", "instance"},
    {"DCGM_FI_DEV_GPU_TEMP", "gpu"},
};

// The labels dcgm-exporter puts on every GPU series (internal/pkg/rendermetrics at that tag),
// in its order; GPU_I_PROFILE and GPU_I_ID come after modelName on MIG devices.
inline constexpr std::string_view kGpuLabels[] = {
    "gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname", "DCGM_FI_DRIVER_VERSION"};

}  // namespace gw::compat

#endif  // GPUWARDEN_TESTS_COMPAT_DCGM_EXPORTER_UPSTREAM_H_
