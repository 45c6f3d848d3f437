// report/report.h — the periodic report: one self-contained HTML page (or its data as JSON)
// answering the platform team's weekly questions from the store.
//
// Usage:
//   report::Options options;                  // period 7 d
//   options.time_ms = now_ms;
//   auto r = report::Build(querier, engine, options);
//   if (!r.ok()) return Fail(r.error().message);
//   WriteFile("report.html", report::ToHtml(*r));   // or report::ToJson(*r)
//
// Sections: fleet health (GPUs, utilization, energy, throttling, findings by severity, alerts that
// fired, a utilization chart), the alerts that fired (from ALERTS in the store, with their firing
// time), top problems by layer (diagnose/ over the whole period), per-team usage
// (GPU-hours, idle GPU-hours and energy from the task layer; quota and cost when the governance
// families are in the store), cost per output of the scraped services (when configured),
// outcomes and throughput per team (from job records, when given), the queue-wait trend per
// partition, ECC and XID history per GPU, and a capacity recommendation. What
// the store has no data for is said, not invented.
//
// The HTML has inline CSS and inline SVG charts, no script and no external reference: it opens
// offline, in a mail client or from a ticket, and fits a phone's width (wide tables scroll in
// their own box; the page itself never scrolls sideways). Queries: report.cpp's table (the
// governance names are not final; adjust them there).
//
// Threading: Build() reads the querier through PromQL only; the rest is pure.
#ifndef GPUWARDEN_REPORT_REPORT_H_
#define GPUWARDEN_REPORT_REPORT_H_

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "diagnose/diagnose.h"
#include "jobs/job_records.h"
#include "promql/engine.h"
#include "tsdb/storage.h"

namespace gw::report {

struct Options {
  int64_t time_ms = 0;          // the end of the period
  double period_s = 7 * 86400;  // `--period`
  diagnose::Thresholds thresholds;
  // Job records (jobs/job_records.h) for outcomes and throughput per team: those that ended in
  // the period are counted. Null or empty: the section says "no outcome data".
  const std::vector<jobs::JobRecord>* records = nullptr;
};

struct ChartLine {
  std::string label;
  std::vector<promql::Point> points;
};

struct Chart {
  std::string title, unit;  // unit as in diagnose::Evidence (ratio, seconds, errors, ...)
  std::string query;        // the PromQL drawn (range query over the period)
  std::vector<ChartLine> lines;
};

struct Fleet {
  double gpus = 0, gpus_up = 0;
  double utilization = NAN, memory_utilization = NAN;  // averages over the period
  double energy_kwh = NAN;
  double throttled_share = NAN;  // average share of time a GPU's clocks were held down
  int findings[3] = {0, 0, 0};   // critical, warning, info
};

struct TeamRow {
  std::string team;
  double gpu_hours = NAN, idle_gpu_hours = NAN, energy_kwh = NAN;
  // GPUs held on average over the data present in the period (gpu_hours / hours of data), the
  // figure compared with the quota — not over hours before any data existed.
  double avg_gpus_held = NAN;
  std::optional<double> quota_gpus, cost, idle_cost;  // governance families, when present
};

// Cost per output of a scraped service (gpu_service_* families, docs/metrics.md "Cost per
// output"), over the period.
struct ServiceRow {
  std::string target, unit;
  double cost = NAN, outputs = NAN;
  double cost_per_output = NAN;  // cost / outputs; NaN without outputs
};

struct GpuRow {
  std::string gpu, uuid, name;
  double utilization = NAN, temperature_max = NAN, throttled_share = NAN;
  double ecc_corrected = NAN, ecc_uncorrected = NAN;  // new in the period (lifetime counters)
  double remapped_rows = NAN;
  bool repair_pending = false;
  std::map<std::string, double> xids;  // code -> events seen in the period
};

// An alert of the agent's rules that fired in the period (ALERTS{alertstate="firing"} in the
// store), its firing time measured from the samples present.
struct AlertRow {
  std::string alertname, severity;
  std::string labels;                 // the other labels, "gpu=3, team=nlp"
  int64_t first_ms = 0, last_ms = 0;  // first and last evaluation at which it was firing
  double firing_s = 0;                // summed over its episodes, each (last - first + interval)
  int episodes = 0;
  bool active = false;  // firing at the last evaluation in the period
};

// Outcomes and throughput of one team's jobs that ended in the period (job records).
struct TeamOutcomeRow {
  std::string team;
  int jobs = 0;          // ended in the period
  int with_outcome = 0;  // of which carry an outcome
  int completed = 0;
  int gpu_failures = 0;  // outcome cause gpu_fault (the GPU, not the job, failed it)
  struct Throughput {
    double total = 0, gpu_hours = 0, cost = 0;
    std::string currency;
    int jobs = 0;
  };
  std::map<std::string, Throughput> throughput;  // by unit (samples, tokens, …)
};

struct Capacity {
  std::string verdict;  // grow | reclaim | shrink | hold | unknown
  std::string reason;   // one paragraph with the figures
  double queue_wait_p95_s = NAN, idle_ratio = NAN, utilization = NAN, congestion = NAN;
};

struct Report {
  int64_t time_ms = 0;
  double period_s = 0;
  // The part of the period the store has data for (gpu_up), 0 when none: averages are over it,
  // and a partial period says so ("over the 5m of data in this period").
  int64_t data_start_ms = 0, data_end_ms = 0;
  Fleet fleet;
  Chart utilization;
  diagnose::Diagnosis diagnosis;  // findings over the whole period
  std::vector<TeamRow> teams;
  bool has_quota = false, has_cost = false;
  std::vector<ServiceRow> services;  // empty without gpu_service_cost_total in the period
  Chart queue_wait;
  std::vector<GpuRow> gpus;
  Chart ecc;  // lifetime corrected ECC count of the GPUs whose count grew
  Capacity capacity;
  std::vector<AlertRow> alerts;  // firing in the period, most firing time first
  std::vector<TeamOutcomeRow> outcomes;
  bool has_outcome_records = false;  // job records were given (any, in the period or not)
  std::vector<std::string> notes;    // what is missing ("no task-layer data in the period")
  std::vector<std::string> errors;   // queries that failed
};

// Fails only on bad options (period under an hour, no time).
Expected<Report> Build(tsdb::Querier& querier, const promql::Engine& engine,
                       const Options& options);

std::string ToHtml(const Report& report);
// {"time":…, "period_seconds":…, "data_start":…|null, "data_end":…|null, "coverage":"…",
//  "fleet":{…}, "alerts":[{alertname, severity, labels, first, last, firing_seconds, episodes,
//  active}], "findings":[…], "teams":[{…, avg_gpus_held, quota_gpus (null: no quota)}],
//  "outcomes":[{team, jobs, with_outcome, completed, success_ratio, gpu_failures,
//  throughput:[{unit, total, per_gpu_hour, per_cost, currency}]}], "services":[{target,
//  unit, cost, outputs, cost_per_output}], "queue_wait":{…},
//  "gpus":[…], "ecc":{…}, "capacity":{…}, "notes":[…], "errors":[…]}
std::string ToJson(const Report& report);

// GET /api/gw/v1/report's `period` (default 7d, at least 10m) and `format` (html, json; default
// html), as the agent and `gpuwarden hub` both take them; the error names the parameter.
struct ReportRequest {
  double period_s = 0;
  bool json = false;
};
Expected<ReportRequest> ParseReportRequest(const std::string& period, const std::string& format);

}  // namespace gw::report

#endif  // GPUWARDEN_REPORT_REPORT_H_
