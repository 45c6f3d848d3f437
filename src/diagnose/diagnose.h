// diagnose/diagnose.h — cross-layer findings: what is wrong, in which layer, on what, since when,
// the evidence behind it and what to do.
//
// Usage:
//   diagnose::Options options;                 // window 1 h, default thresholds (docs/diagnose.md)
//   options.time_ms = now_ms;
//   auto d = diagnose::Diagnose(querier, engine, options);
//   if (!d.ok()) return Fail(d.error().message);   // only when the store itself fails
//   auto mine = diagnose::Filter(*d, {.gpu = "3"});
//   std::string text = diagnose::ToText(mine);     // or ToJson(mine) for /api/gw/v1/findings
//
// How a finding is made: every check is PromQL over the store (the texts are in queries.cpp, in
// one table, so that metric names can be adjusted in one place). A check's condition is an
// instant-vector expression over short sub-windows (`rate(...[5m]) > 0.1`); it is evaluated as a
// range query across the diagnosis window, and each series it returns is a subject (a GPU, a
// partition, a team, a target) for which the condition held at those steps. When it held long
// enough (per check), a finding is raised; its evidence are the condition and supporting queries,
// each with the value over the steps it held, that time range and the exact query text, so a
// user can paste it into `gpuwarden query` or Grafana and see the same thing. Business findings
// then look for device findings on the GPUs serving the slow target (gpu_service_info) in the
// same time range.
//
// A family that is absent (no task layer, no governance, no business targets) makes its checks
// find nothing; a query that fails is reported in Diagnosis::errors and the other checks go on.
//
// Threading: Diagnose() reads the querier through PromQL only; it is as thread-safe as the
// querier. The other functions are pure.
#ifndef GPUWARDEN_DIAGNOSE_DIAGNOSE_H_
#define GPUWARDEN_DIAGNOSE_DIAGNOSE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "promql/engine.h"
#include "tsdb/storage.h"

namespace gw::diagnose {

// The four layers of MISSION.md, with scheduling split from governance as the alert pack does.
enum class Layer { kDevice, kTask, kScheduling, kGovernance, kBusiness };
// Most severe first: sorting by it puts what to act on first.
enum class Severity { kCritical, kWarning, kInfo };

std::string_view LayerName(Layer layer);           // "device", "task", ...
std::string_view SeverityName(Severity severity);  // "critical", "warning", "info"

// Every kind Diagnose() can raise, with its layer, in the order checks run (business last): for
// exporters that show a count per kind, 0 included.
struct KindLayer {
  std::string_view kind;
  Layer layer;
};
const std::vector<KindLayer>& Kinds();

struct Evidence {
  std::string what;  // "share of time the clocks were held down by sw_power_cap (avg)"
  double value = 0;
  std::string
      unit;  // ratio, celsius, bytes, watts, hertz, seconds, errors, per_hour, per_second, count
  int64_t start_ms = 0, end_ms = 0;  // the steps the value summarizes
  std::string query;  // PromQL; evaluated as a range query over [start, end] it shows the value
};

// What a finding is about; empty fields do not apply. Device findings name the GPU and, when a
// job held it in the window (gpu_allocation_info), the job and team. A finding about one MIG
// instance names its GPU here and the instance in its cause ("MIG instance 3 (1g.10gb)").
struct Subject {
  std::string gpu, uuid, job, team, partition, target;
};

struct Finding {
  std::string id;     // stable across evaluations: kind/cause/subject
  std::string kind;   // busy-but-throttled, near-thermal-limit, ecc-trend, nvlink-degraded,
                      // memory-bound, memory-pressure, data-starved, busy-but-hollow,
                      // tensor-idle, idle-allocation, quota-drift, queue-congestion,
                      // business-latency
  std::string cause;  // which cause within the kind ("power cap", "thermal", ...); may be ""
  Layer layer = Layer::kDevice;
  Severity severity = Severity::kInfo;
  Subject subject;
  std::vector<std::string> related_gpus;  // business findings: the GPUs serving the target
  std::string title;                      // one line for people
  std::vector<Evidence> evidence;         // the condition first
  std::string action;                     // what to do about it
  int64_t since_ms = 0;                   // first step in the window at which it held
  int64_t last_ms = 0;                    // last step at which it held
  double held_s = 0;                      // how long it held within the window
  bool active = false;                    // it still held at the end of the window
};

// Every number a check compares with. Defaults and their reasons: docs/diagnose.md.
struct Thresholds {
  double busy_utilization = 0.5;       // a GPU counts as busy above this average utilization
  double throttled_share = 0.1;        // clocks held down this share of a sub-window
  double power_cap_lowered = 0.9;      // enforced limit below this × default: someone lowered it
  double memory_bound_mem_util = 0.6;  // memory controller busier than this ...
  double memory_bound_factor = 1.5;    // ... and this many times busier than the SMs
  double memory_pressure = 0.9;        // used / total, averaged over a sub-window
  double memory_spike = 0.95;          // highest (sub-sampled) used / total in a sub-window
  double idle_utilization = 0.05;      // at or below: idle (jobs.idle_threshold's default)
  double starved_utilization = 0.25;   // above idle but below this with a process: starved
  double thermal_margin_c = 5;         // within this of the slowdown threshold
  double ecc_review_count = 5000;      // lifetime corrected errors that call for a review ...
  double ecc_horizon_s = 7 * 86400;    // ... reached within this, at the window's growth
  double queue_wait_p90_s = 1800;      // 90th percentile queue wait of a partition
  double congestion_ratio = 1;         // (allocated + pending GPUs) / capacity (governance)
  double quota_over = 1.1;             // allocated / quota above this: over quota
  double quota_under = 0.5;            // below this most of the window: chronically under-used
  double latency_factor = 1.5;         // p95 latency above this × its best in the window
  // Profiling signals (GPM) and NVLink.
  double hollow_utilization = 0.8;     // busy but hollow: utilization above this ...
  double hollow_sm_active = 0.25;      // ... with SM activity below this ...
  double hollow_occupancy = 0.05;      // ... or SMs active but occupancy below this
  double tensor_idle_sm_active = 0.5;  // tensor idle: SM activity above this ...
  double tensor_idle_ratio = 0.05;     // ... with the tensor pipes active below this
  double nvlink_error_rate = 1;        // NVLink errors per second (all types) of a GPU
};

struct Options {
  int64_t time_ms = 0;     // the end of the window ("now")
  double window_s = 3600;  // how far back to look (`--since`)
  Thresholds thresholds;
};

// Which GPUs a job held within the window (from gpu_allocation_info): for filters and subjects.
struct Allocation {
  std::string gpu, uuid, job, team;
};

struct Diagnosis {
  int64_t time_ms = 0;
  double window_s = 0;  // as asked (`--since`)
  // The part of the window the store has data for (gpu_up samples): checks run over it, so held
  // times and step sizes come from the data present, not from the window asked for. 0 when the
  // window holds no data at all.
  int64_t data_start_ms = 0, data_end_ms = 0;
  double step_s = 0;              // the range queries' resolution
  std::vector<std::string> gpus;  // GPU indexes and UUIDs with data in the window (`--gpu` checks)
  std::vector<Finding> findings;  // by layer, then severity, then subject
  std::vector<Allocation> allocations;
  std::vector<std::string> errors;  // checks that could not run, with the reason
};

// Runs every check over [time - window, time]. Fails only on bad options; query failures are
// collected in Diagnosis::errors.
Expected<Diagnosis> Diagnose(tsdb::Querier& querier, const promql::Engine& engine,
                             const Options& options);

// The first and last sample time of `selector` (a PromQL series selector, e.g. "gpu_up") within
// [start_ms, end_ms], to about a second, with a few coarse-to-fine count_over_time range queries
// (cheap over rollups even for a year). nullopt when the selector has no sample there or a query
// fails. Used for "over the 5 minutes of data in this period" (report/) as well.
struct DataExtent {
  int64_t first_ms = 0, last_ms = 0;
};
std::optional<DataExtent> FindDataExtent(tsdb::Querier& querier, const promql::Engine& engine,
                                         const std::string& selector, int64_t start_ms,
                                         int64_t end_ms);
// "the 4m10s of data in the last 1y" / "the last 1h": what a window's figures cover, for people.
std::string CoverageText(double window_s, int64_t data_start_ms, int64_t data_end_ms);

struct FindingFilter {
  std::string gpu = {};   // GPU index or UUID
  std::string job = {};   // job id: its own findings and those of the GPUs it held
  std::string team = {};  // team: its own findings, its jobs' and their GPUs'
};
// The findings that concern the filter's subject (all of them when the filter is empty).
Diagnosis Filter(const Diagnosis& diagnosis, const FindingFilter& filter);

// {"status":"success","data":{"time":…,"window_seconds":…,"step_seconds":…,"findings":[…],
//  "errors":[…]}} — the body of GET /api/gw/v1/findings (docs/diagnose.md has the fields).
std::string ToJson(const Diagnosis& diagnosis);
// Reads ToJson's output back (for `gpuwarden diagnose --url`).
Expected<Diagnosis> FromJson(std::string_view text);
// For people: grouped by layer, most severe first, each with its evidence and action.
std::string ToText(const Diagnosis& diagnosis);

}  // namespace gw::diagnose

#endif  // GPUWARDEN_DIAGNOSE_DIAGNOSE_H_
