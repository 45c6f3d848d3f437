// Every PromQL text of diagnose/ (and the report's findings), in one table.
//
// Families read: device and task layer as in docs/metrics.md (GPM, NVLink and MIG families as
// the issue 12 contract names them). Families of modules built in
// parallel (names not final; adjust them here): governance gpu_pool_congestion_ratio,
// gpu_pool_pending_gpus, gpu_pool_free_gpus, gpu_team_quota_gpus, gpu_team_allocated_gpus;
// business inference_request_duration_seconds (histogram), inference_requests_total{code},
// gpu_service_info{target, gpu, uuid}. A family that is absent makes its checks find nothing.
#include "diagnose/checks.h"

#include <deque>

namespace gw::diagnose {

namespace queries {
const char* const kLatencyP95 =
    "histogram_quantile(0.95, sum by (target, le) "
    "(rate(inference_request_duration_seconds_bucket[${w}])))";
const char* const kErrorRatio =
    "sum by (target) (rate(inference_requests_total{code!~\"2..\"}[${w}])) / "
    "sum by (target) (rate(inference_requests_total[${w}]))";
const char* const kServiceGpus =
    "max by (target, gpu, uuid) (max_over_time(gpu_service_info[${long}]))";
const char* const kAllocations =
    "max by (gpu, uuid, job_id, team) (max_over_time(gpu_allocation_info[${window}]))";
}  // namespace queries

namespace {

const std::vector<std::string> kGpu = {"gpu", "uuid"};
const std::vector<std::string> kMig = {"gpu", "uuid", "mig_instance"};

// Supporting evidence shared by several device checks.
constexpr EvidenceSpec kUtil = {"util", "GPU utilization (avg)", "ratio", Stat::kAvg,
                                "avg_over_time(gpu_utilization_ratio{${sel}}[${w}])"};
constexpr EvidenceSpec kPower = {"power", "power draw (avg)", "watts", Stat::kAvg,
                                 "avg_over_time(gpu_power_watts{${sel}}[${w}])"};
constexpr EvidenceSpec kMemUsed = {"mem_used", "memory in use (avg)", "bytes", Stat::kAvg,
                                   "avg_over_time(gpu_memory_used_bytes{${sel}}[${w}])"};
constexpr EvidenceSpec kProcesses = {"processes", "compute processes (max)", "count", Stat::kMax,
                                     "max_over_time(gpu_processes{${sel}}[${w}])"};
// Profiling signals (GPM) and NVLink.
constexpr EvidenceSpec kOccupancy = {"occupancy", "SM occupancy (avg)", "ratio", Stat::kAvg,
                                     "avg_over_time(gpu_sm_occupancy_ratio{${sel}}[${w}])"};
constexpr EvidenceSpec kTensorAny = {
    "tensor", "tensor pipes active, any (avg)", "ratio", Stat::kAvg,
    "avg_over_time(gpu_tensor_active_ratio{${sel},pipe=\"any\"}[${w}])"};
constexpr EvidenceSpec kDram = {"dram", "DRAM bandwidth used (avg)", "ratio", Stat::kAvg,
                                "avg_over_time(gpu_dram_active_ratio{${sel}}[${w}])"};
// The agent counts XIDs from its start (docs/metrics.md), so this is "since the agent started".
constexpr EvidenceSpec kXid74 = {"xid74", "XID 74 (NVLink error) events seen by the agent",
                                 "errors", Stat::kMax,
                                 "max by (gpu, uuid) (gpu_xid_errors_total{${sel},xid=\"74\"})"};
constexpr EvidenceSpec kNvLinks = {"links", "NVLink links of this GPU", "count", Stat::kLast,
                                   "gpu_nvlink_links{${sel}}"};
constexpr EvidenceSpec kLinksDown = {"links_down", "links down on this GPU (max)", "count",
                                     Stat::kMax,
                                     "max_over_time(gpu_nvlink_links_down{${sel}}[${w}])"};
constexpr EvidenceSpec kRemapped = {"remapped", "memory rows remapped", "count", Stat::kLast,
                                    "sum by (gpu, uuid) (gpu_remapped_rows{${sel}})"};

// Texts built once for Checks(), which holds const char*: kept for the life of the process (a
// deque never moves what it holds).
const char* Keep(std::string text) {
  static std::deque<std::string> kept;
  kept.push_back(std::move(text));
  return kept.back().c_str();
}

// Tensor cores idle under sustained compute, over a GPU's families (prefix "gpu_") or each MIG
// instance's ("gpu_mig_"; an instance has no utilization of its own). The training heuristic
// is in docs/diagnose.md; FP64-bound work (more FP64 than FP32 pipe activity) is HPC, not this
// finding. Per instance the raw cause is "<GPU instance id> <profile>" (label_join), unique per
// instance of a GPU.
Check TensorIdle(bool mig) {
  const std::string p = mig ? "gpu_mig_" : "gpu_";
  const std::string on = mig ? " on(gpu, uuid, mig_instance) " : " on(gpu, uuid) ";
  auto avg = [&p](const std::string& family, const std::string& pipe) {
    return "avg_over_time(" + p + family + (pipe.empty() ? "" : "{pipe=\"" + pipe + "\"}") +
           "[${w}])";
  };
  std::string condition = avg("tensor_active_ratio", "any") + " < ${tensor_idle_ratio} and" + on +
                          avg("sm_active_ratio", "") + " > ${tensor_idle_sm_active} and" + on +
                          "max_over_time(" + p + "processes[${w}]) > 0 unless" + on + "(" +
                          avg("pipe_active_ratio", "fp64") + " >" + on +
                          avg("pipe_active_ratio", "fp32") + ")";
  if (mig)
    condition = "label_join(" + condition + ", \"mig\", \" \", \"mig_instance\", \"mig_profile\")";
  auto pipe = [&p](const char* key, const char* what, const char* name) {
    return EvidenceSpec{
        key, what, "ratio", Stat::kAvg,
        Keep("avg_over_time(" + p + "pipe_active_ratio{${sel},pipe=\"" + name + "\"}[${w}])")};
  };
  std::vector<EvidenceSpec> evidence = {
      {"sm_active", "SM activity (avg)", "ratio", Stat::kAvg,
       Keep("avg_over_time(" + p + "sm_active_ratio{${sel}}[${w}])")},
      pipe("fp32", "FP32 pipe active (avg)", "fp32"),
      pipe("fp16", "FP16 pipe active (avg)", "fp16"),
      pipe("fp64", "FP64 pipe active (avg)", "fp64"),
      {"processes", "compute processes (max)", "count", Stat::kMax,
       Keep("max_over_time(" + p + "processes{${sel}}[${w}])")}};
  if (!mig) evidence.push_back(kUtil);
  return Check{"tensor-idle",
               mig ? nullptr : "",
               mig ? "mig" : nullptr,
               Layer::kTask,
               mig ? kMig : kGpu,
               Keep(condition),
               {"tensor", "tensor pipes active, any (avg)", "ratio", Stat::kAvg, nullptr},
               evidence,
               600,
               0.25,
               DescribeTensorIdle,
               /*contiguous=*/true};
}

std::vector<Check> MakeChecks() {
  std::vector<Check> c;
  // --- device ---
  c.push_back(
      Check{"busy-but-throttled",
            nullptr,
            "reason",
            Layer::kDevice,
            kGpu,
            "rate(gpu_clock_event_seconds_total{reason=~\"sw_power_cap|sw_thermal_slowdown|"
            "hw_thermal_slowdown|hw_power_brake_slowdown\"}[${w}]) > ${throttled_share}"
            " and on(gpu, uuid) avg_over_time(gpu_utilization_ratio[${w}]) > ${busy_utilization}",
            {"share", "share of time the clocks were held down for this reason (avg)", "ratio",
             Stat::kAvg, nullptr},
            {kUtil,
             {"clock", "SM clock / its maximum (avg)", "ratio", Stat::kAvg,
              "avg_over_time(gpu_sm_clock_hertz{${sel}}[${w}]) / on(gpu, uuid) "
              "gpu_sm_clock_max_hertz{${sel}}"},
             kPower,
             {"limit", "enforced power limit (min)", "watts", Stat::kMin,
              "gpu_power_limit_watts{${sel}}"},
             {"default_limit", "default power limit", "watts", Stat::kLast,
              "gpu_power_default_limit_watts{${sel}}"},
             {"temp", "temperature (max)", "celsius", Stat::kMax,
              "max_over_time(gpu_temperature_celsius{${sel}}[${w}])"},
             {"slowdown", "slowdown threshold", "celsius", Stat::kLast,
              "gpu_temperature_threshold_celsius{${sel},threshold=\"slowdown\"}"}},
            60,
            0.05,
            DescribeThrottled});
  c.push_back(
      Check{"near-thermal-limit",
            "",
            nullptr,
            Layer::kDevice,
            kGpu,
            "max_over_time(gpu_temperature_celsius[${w}]) >= on(gpu, uuid) "
            "(gpu_temperature_threshold_celsius{threshold=\"slowdown\"} - ${thermal_margin_c})",
            {"temp", "temperature (max)", "celsius", Stat::kMax, nullptr},
            {{"median", "temperature (median)", "celsius", Stat::kAvg,
              "quantile_over_time(0.5, gpu_temperature_celsius{${sel}}[${w}])"},
             {"slowdown", "slowdown threshold", "celsius", Stat::kLast,
              "gpu_temperature_threshold_celsius{${sel},threshold=\"slowdown\"}"},
             {"gpu_max", "maximum operating temperature", "celsius", Stat::kLast,
              "gpu_temperature_threshold_celsius{${sel},threshold=\"gpu_max\"}"},
             {"fan", "fan speed (max)", "ratio", Stat::kMax,
              "max_over_time(gpu_fan_speed_ratio{${sel}}[${w}])"},
             kPower},
            120,
            0.05,
            DescribeNearThermal});
  c.push_back(Check{
      "ecc-trend",
      "uncorrectable errors",
      nullptr,
      Layer::kDevice,
      kGpu,
      "max_over_time(gpu_ecc_errors_total{type=\"uncorrected\", scope=\"volatile\"}[${w}]) > 0",
      {"uncorrected", "uncorrectable errors since the last reset (max)", "errors", Stat::kMax,
       nullptr},
      {{"lifetime", "uncorrectable errors over the board's life", "errors", Stat::kLast,
        "gpu_ecc_errors_total{${sel},type=\"uncorrected\",scope=\"aggregate\"}"},
       kRemapped,
       {"xids", "XID errors (all codes)", "errors", Stat::kLast,
        "sum by (gpu, uuid) (gpu_xid_errors_total{${sel}})"}},
      0,
      0,
      DescribeEcc});
  c.push_back(Check{
      "ecc-trend",
      "corrected-error trend",
      nullptr,
      Layer::kDevice,
      kGpu,
      "predict_linear(gpu_ecc_errors_total{type=\"corrected\", scope=\"aggregate\"}[${long}], "
      "${ecc_horizon_s}) > ${ecc_review_count} and rate(gpu_ecc_errors_total{type=\"corrected\", "
      "scope=\"aggregate\"}[${long}]) > 0",
      {"projected", "lifetime corrected errors projected at the horizon (max)", "errors",
       Stat::kMax, nullptr},
      {{"rate", "corrected errors per hour (latest)", "per_hour", Stat::kLast,
        "rate(gpu_ecc_errors_total{${sel},type=\"corrected\",scope=\"aggregate\"}[${long}]) * "
        "3600"},
       {"lifetime", "corrected errors over the board's life", "errors", Stat::kLast,
        "gpu_ecc_errors_total{${sel},type=\"corrected\",scope=\"aggregate\"}"},
       kRemapped},
      600,
      0.25,
      DescribeEcc});
  c.push_back(Check{"ecc-trend",
                    "row remap pending",
                    nullptr,
                    Layer::kDevice,
                    kGpu,
                    "max_over_time(gpu_remapped_rows_pending[${w}]) == 1",
                    {"pending", "a row remap waits for a reset", "count", Stat::kMax, nullptr},
                    {kRemapped},
                    0,
                    0,
                    DescribeEcc});
  c.push_back(Check{"ecc-trend",
                    "row remap failed",
                    nullptr,
                    Layer::kDevice,
                    kGpu,
                    "max_over_time(gpu_remapped_rows_failure[${w}]) == 1",
                    {"failed", "a row remap failed (no spare rows)", "count", Stat::kMax, nullptr},
                    {kRemapped},
                    0,
                    0,
                    DescribeEcc});
  c.push_back(
      Check{"ecc-trend",
            "page retirement pending",
            nullptr,
            Layer::kDevice,
            kGpu,
            "max_over_time(gpu_retired_pages_pending[${w}]) == 1",
            {"pending", "a page retirement waits for a reset", "count", Stat::kMax, nullptr},
            {{"retired", "pages retired", "count", Stat::kLast,
              "sum by (gpu, uuid) (gpu_retired_pages{${sel}})"}},
            0,
            0,
            DescribeEcc});
  // NVLink (docs/diagnose.md "NVLink"): one finding per down link (the link number is the raw
  // cause, so ids differ per link), unless every link of the GPU was down over the whole trend
  // window (a board without NVLink connected); and one per GPU for an error storm.
  c.push_back(
      Check{"nvlink-degraded",
            nullptr,
            "link",
            Layer::kDevice,
            kGpu,
            "gpu_nvlink_link_up == 0 and on(gpu, uuid) "
            "(min_over_time(gpu_nvlink_links_down[${long}]) < on(gpu, uuid) gpu_nvlink_links)",
            {"state", "link state (1 up, 0 down; lowest)", "count", Stat::kMin, nullptr},
            {kLinksDown,
             kNvLinks,
             {"link_errors", "errors counted on this link over the trend window (max)", "errors",
              Stat::kMax,
              "sum by (gpu, uuid) (increase(gpu_nvlink_link_errors_total{${sel},link=\"${cause}\"}"
              "[${long}]))"},
             kXid74},
            60,
            0.05,
            DescribeNvLink});
  // A store with the GPU's count of down links but not the per-link series: one finding per GPU.
  c.push_back(
      Check{"nvlink-degraded",
            "links down",
            nullptr,
            Layer::kDevice,
            kGpu,
            "gpu_nvlink_links_down > 0 and on(gpu, uuid) "
            "(min_over_time(gpu_nvlink_links_down[${long}]) < on(gpu, uuid) gpu_nvlink_links) "
            "unless on(gpu, uuid) gpu_nvlink_link_up",
            {"links_down", "links down on this GPU (max)", "count", Stat::kMax, nullptr},
            {kNvLinks, kXid74},
            60,
            0.05,
            DescribeNvLink});
  c.push_back(Check{
      "nvlink-degraded",
      "error storm",
      nullptr,
      Layer::kDevice,
      kGpu,
      "sum by (gpu, uuid) (rate(gpu_nvlink_errors_total[${w}])) > ${nvlink_error_rate}",
      {"rate", "NVLink errors per second, all types (avg)", "per_second", Stat::kAvg, nullptr},
      {{"crc", "CRC errors per second (avg)", "per_second", Stat::kAvg,
        "sum by (gpu, uuid) (rate(gpu_nvlink_errors_total{${sel},type=~\"crc_flit|crc_data\"}"
        "[${w}]))"},
       {"replay", "replays per second (avg)", "per_second", Stat::kAvg,
        "sum by (gpu, uuid) (rate(gpu_nvlink_errors_total{${sel},type=\"replay\"}[${w}]))"},
       {"recovery", "link retrains (recovery) per second (avg)", "per_second", Stat::kAvg,
        "sum by (gpu, uuid) (rate(gpu_nvlink_errors_total{${sel},type=\"recovery\"}[${w}]))"},
       {"worst_link", "errors per second on its worst link (avg)", "per_second", Stat::kAvg,
        "max by (gpu, uuid) (sum by (gpu, uuid, link) "
        "(rate(gpu_nvlink_link_errors_total{${sel}}[${w}])))"},
       kLinksDown,
       kXid74},
      120,
      0.05,
      DescribeNvLink});
  // --- task ---
  c.push_back(
      Check{"memory-bound",
            "",
            nullptr,
            Layer::kTask,
            kGpu,
            "avg_over_time(gpu_memory_utilization_ratio[${w}]) > ${memory_bound_mem_util}"
            " and on(gpu, uuid) (avg_over_time(gpu_memory_utilization_ratio[${w}]) - on(gpu, uuid) "
            "${memory_bound_factor} * avg_over_time(gpu_utilization_ratio[${w}]) > 0)",
            {"mem_util", "memory-controller utilization (avg)", "ratio", Stat::kAvg, nullptr},
            {kUtil, kPower},
            600,
            0.25,
            DescribeMemoryBound});
  c.push_back(
      Check{"memory-pressure",
            "sustained",
            nullptr,
            Layer::kTask,
            kGpu,
            "avg_over_time(gpu_memory_used_bytes[${w}]) / on(gpu, uuid) gpu_memory_total_bytes > "
            "${memory_pressure}",
            {"ratio", "memory in use / total (avg)", "ratio", Stat::kAvg, nullptr},
            {kMemUsed,
             {"total", "memory total", "bytes", Stat::kLast, "gpu_memory_total_bytes{${sel}}"},
             kProcesses},
            600,
            0.25,
            DescribeMemoryPressure});
  c.push_back(
      Check{"memory-pressure",
            "spikes near OOM",
            nullptr,
            Layer::kTask,
            kGpu,
            // The window family first: in a store that scraped /metrics every 15 s only it
            // holds a spike between two scrapes (docs/metrics.md, "Peaks over a window").
            "(max_over_time(gpu_memory_used_peak_window_bytes[${w}]) or "
            "max_over_time(gpu_memory_used_peak_bytes[${w}]) or "
            "max_over_time(gpu_memory_used_bytes[${w}]))"
            " / on(gpu, uuid) gpu_memory_total_bytes > ${memory_spike}"
            " unless on(gpu, uuid) avg_over_time(gpu_memory_used_bytes[${w}]) / on(gpu, uuid) "
            "gpu_memory_total_bytes > ${memory_pressure}",
            {"ratio", "highest memory in use / total", "ratio", Stat::kMax, nullptr},
            {{"peak", "highest memory in use", "bytes", Stat::kMax,
              "max_over_time(gpu_memory_used_peak_window_bytes{${sel}}[${w}]) or "
              "max_over_time(gpu_memory_used_peak_bytes{${sel}}[${w}])"},
             kMemUsed,
             {"total", "memory total", "bytes", Stat::kLast, "gpu_memory_total_bytes{${sel}}"}},
            0,
            0,
            DescribeMemoryPressure});
  c.push_back(Check{
      "data-starved",
      "",
      nullptr,
      Layer::kTask,
      kGpu,
      "avg_over_time(gpu_utilization_ratio[${w}]) > ${idle_utilization} < ${starved_utilization}"
      " and on(gpu, uuid) max_over_time(gpu_processes[${w}]) > 0",
      {"util", "GPU utilization (avg)", "ratio", Stat::kAvg, nullptr},
      {{"peak", "highest utilization within each second (avg)", "ratio", Stat::kAvg,
        "avg_over_time(gpu_utilization_peak_ratio{${sel}}[${w}])"},
       kProcesses,
       kMemUsed,
       kPower},
      1800,
      0.5,
      DescribeDataStarved,
      /*contiguous=*/true});
  // Profiling signals (GPM; absent on GPUs without it, and then these find nothing). Steady
  // states, so the held time is the longest unbroken run, as for data-starved.
  c.push_back(Check{"busy-but-hollow",
                    "few SMs active",
                    nullptr,
                    Layer::kTask,
                    kGpu,
                    "avg_over_time(gpu_sm_active_ratio[${w}]) < ${hollow_sm_active}"
                    " and on(gpu, uuid) avg_over_time(gpu_utilization_ratio[${w}]) > "
                    "${hollow_utilization}",
                    {"sm_active", "SM activity (avg)", "ratio", Stat::kAvg, nullptr},
                    {kUtil, kOccupancy, kTensorAny, kDram, kProcesses, kPower},
                    600,
                    0.25,
                    DescribeHollow,
                    /*contiguous=*/true});
  c.push_back(Check{"busy-but-hollow",
                    "low occupancy",
                    nullptr,
                    Layer::kTask,
                    kGpu,
                    "avg_over_time(gpu_sm_occupancy_ratio[${w}]) < ${hollow_occupancy}"
                    " and on(gpu, uuid) avg_over_time(gpu_sm_active_ratio[${w}]) >= "
                    "${hollow_sm_active}"
                    " and on(gpu, uuid) avg_over_time(gpu_utilization_ratio[${w}]) > "
                    "${hollow_utilization}",
                    {"occupancy", "SM occupancy (avg)", "ratio", Stat::kAvg, nullptr},
                    {kUtil,
                     {"sm_active", "SM activity (avg)", "ratio", Stat::kAvg,
                      "avg_over_time(gpu_sm_active_ratio{${sel}}[${w}])"},
                     kTensorAny,
                     kDram,
                     kProcesses},
                    600,
                    0.25,
                    DescribeHollow,
                    /*contiguous=*/true});
  c.push_back(TensorIdle(/*mig=*/false));
  c.push_back(TensorIdle(/*mig=*/true));
  // --- governance ---
  c.push_back(Check{"idle-allocation",
                    "",
                    nullptr,
                    Layer::kGovernance,
                    kGpu,
                    "avg_over_time(gpu_utilization_ratio[${w}]) <= ${idle_utilization}"
                    " and on(gpu, uuid) (max_over_time(gpu_processes[${w}]) > 0"
                    " or on(gpu, uuid) max_over_time(gpu_allocation_info[${w}]))",
                    {"util", "GPU utilization (avg)", "ratio", Stat::kAvg, nullptr},
                    {kMemUsed,
                     kProcesses,
                     kPower,
                     {"streak", "idle streak (task layer)", "seconds", Stat::kMax,
                      "gpu_idle_streak_seconds{${sel}}"}},
                    600,
                    0.25,
                    DescribeIdleAllocation});
  c.push_back(Check{
      "quota-drift",
      "over quota",
      nullptr,
      Layer::kGovernance,
      {"team"},
      "(max by (team) (gpu_team_allocated_gpus) or sum by (team) (gpu_job_gpus))"
      " / on(team) max by (team) (gpu_team_quota_gpus) > ${quota_over}",
      {"ratio", "allocated GPUs / quota (avg)", "ratio", Stat::kAvg, nullptr},
      {{"quota", "quota (GPUs)", "count", Stat::kLast,
        "max by (team) (gpu_team_quota_gpus{${sel}})"},
       {"allocated", "allocated GPUs (max)", "count", Stat::kMax,
        "max by (team) (gpu_team_allocated_gpus{${sel}}) or sum by (team) (gpu_job_gpus{${sel}})"}},
      900,
      0.25,
      DescribeQuotaDrift});
  c.push_back(Check{
      "quota-drift",
      "under-used quota",
      nullptr,
      Layer::kGovernance,
      {"team"},
      "(max by (team) (gpu_team_allocated_gpus) or sum by (team) (gpu_job_gpus)"
      " or 0 * max by (team) (gpu_team_quota_gpus))"
      " / on(team) max by (team) (gpu_team_quota_gpus) < ${quota_under}",
      {"ratio", "allocated GPUs / quota (avg)", "ratio", Stat::kAvg, nullptr},
      {{"quota", "quota (GPUs)", "count", Stat::kLast,
        "max by (team) (gpu_team_quota_gpus{${sel}})"},
       {"allocated", "allocated GPUs (max)", "count", Stat::kMax,
        "max by (team) (gpu_team_allocated_gpus{${sel}}) or sum by (team) (gpu_job_gpus{${sel}})"}},
      3600,
      0.75,
      DescribeQuotaDrift});
  // --- scheduling ---
  c.push_back(Check{
      "queue-congestion",
      "queue wait",
      nullptr,
      Layer::kScheduling,
      {"partition"},
      "histogram_quantile(0.9, max by (partition, le) "
      "(rate(gpu_job_queue_wait_seconds_bucket[${long}]))) > ${queue_wait_p90_s}",
      {"p90", "queue wait, 90th percentile (max)", "seconds", Stat::kMax, nullptr},
      {{"p50", "queue wait, median (max)", "seconds", Stat::kMax,
        "histogram_quantile(0.5, max by (partition, le) "
        "(rate(gpu_job_queue_wait_seconds_bucket{${sel}}[${long}])))"},
       {"pending", "pending jobs (max)", "count", Stat::kMax, "max(gpu_jobs{state=\"PENDING\"})"},
       {"idle_allocated", "allocated GPUs idle meanwhile (max)", "count", Stat::kMax,
        "sum(gpu_idle_allocated_gpus)"}},
      900,
      0.25,
      DescribeQueueCongestion});
  c.push_back(
      Check{"queue-congestion",
            "pool congested",
            nullptr,
            Layer::kScheduling,
            {"partition"},
            "max by (partition) (gpu_pool_congestion_ratio) > ${congestion_ratio}",
            {"ratio", "(allocated + pending GPUs) / capacity (avg)", "ratio", Stat::kAvg, nullptr},
            {{"pending_gpus", "GPUs requested by pending jobs (max)", "count", Stat::kMax,
              "max by (partition) (gpu_pool_pending_gpus{${sel}})"},
             {"free_gpus", "free GPUs (min)", "count", Stat::kMin,
              "max by (partition) (gpu_pool_free_gpus{${sel}})"},
             {"idle_allocated", "allocated GPUs idle meanwhile (max)", "count", Stat::kMax,
              "sum(gpu_idle_allocated_gpus)"}},
            900,
            0.25,
            DescribeQueueCongestion});
  return c;
}

}  // namespace

const std::vector<Check>& Checks() {
  static const std::vector<Check> checks = MakeChecks();
  return checks;
}

}  // namespace gw::diagnose
