// The report's data: PromQL over the store (every query in the table below) and the findings.
#include "report/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "diagnose/checks.h"

namespace gw::report {

namespace {

// ${P}: the period; ${S}: a chart step's window. Governance families: docs/metrics.md
// "Governance" (gpu_team_quota_gpus, gpu_cost_allocation_total, gpu_cost_idle_allocated_total,
// gpu_pool_congestion_ratio).
constexpr const char* kThrottleReasons =
    "reason=~\"sw_power_cap|sw_thermal_slowdown|hw_thermal_slowdown|hw_power_brake_slowdown\"";
const std::map<std::string, std::string> kQueries = {
    {"gpus", "count(max_over_time(gpu_up[${P}]))"},
    {"gpus_up", "sum(last_over_time(gpu_up[${P}]))"},
    {"utilization", "avg(avg_over_time(gpu_utilization_ratio[${P}]))"},
    {"memory_utilization", "avg(avg_over_time(gpu_memory_utilization_ratio[${P}]))"},
    {"energy_kwh", "sum(increase(gpu_energy_joules_total[${P}])) / 3.6e6"},
    {"throttled",
     "avg(max by (gpu, uuid) (rate(gpu_clock_event_seconds_total{${throttle}}[${P}])))"},
    {"util_chart", "avg_over_time(gpu_utilization_ratio[${S}])"},
    {"util_chart_fleet", "avg(avg_over_time(gpu_utilization_ratio[${S}]))"},
    {"gpu_info", "max by (gpu, uuid, name) (max_over_time(gpu_info[${P}]))"},
    {"gpu_util", "avg_over_time(gpu_utilization_ratio[${P}])"},
    {"gpu_temp", "max_over_time(gpu_temperature_celsius[${P}])"},
    {"gpu_throttled",
     "max by (gpu, uuid) (rate(gpu_clock_event_seconds_total{${throttle}}[${P}]))"},
    {"gpu_ecc_corrected",
     "max_over_time(gpu_ecc_errors_total{type=\"corrected\",scope=\"aggregate\"}[${P}]) - "
     "min_over_time(gpu_ecc_errors_total{type=\"corrected\",scope=\"aggregate\"}[${P}])"},
    {"gpu_ecc_uncorrected",
     "max_over_time(gpu_ecc_errors_total{type=\"uncorrected\",scope=\"aggregate\"}[${P}]) - "
     "min_over_time(gpu_ecc_errors_total{type=\"uncorrected\",scope=\"aggregate\"}[${P}])"},
    {"gpu_remapped", "sum by (gpu, uuid) (max_over_time(gpu_remapped_rows[${P}]))"},
    {"gpu_pending",
     "max by (gpu, uuid) (max_over_time(gpu_remapped_rows_pending[${P}])) or max by (gpu, uuid) "
     "(max_over_time(gpu_retired_pages_pending[${P}]))"},
    {"gpu_xids",
     "(max_over_time(gpu_xid_errors_total[${P}]) - last_over_time(gpu_xid_errors_total[${P}] "
     "offset ${P})) or max_over_time(gpu_xid_errors_total[${P}])"},
    {"ecc_chart", "gpu_ecc_errors_total{type=\"corrected\",scope=\"aggregate\"}"},
    {"team_gpu_hours", "sum by (team) (max_over_time(gpu_job_gpu_seconds_total[${P}])) / 3600"},
    {"team_idle_hours",
     "sum by (team) (max_over_time(gpu_job_idle_gpu_seconds_total[${P}])) / 3600"},
    {"team_energy", "sum by (team) (max_over_time(gpu_job_energy_joules_total[${P}])) / 3.6e6"},
    {"team_quota", "max by (team) (max_over_time(gpu_team_quota_gpus[${P}]))"},
    {"team_cost", "sum by (team) (increase(gpu_cost_allocation_total[${P}]))"},
    {"team_idle_cost", "sum by (team) (increase(gpu_cost_idle_allocated_total[${P}]))"},
    {"service_cost", "sum by (target) (increase(gpu_service_cost_total[${P}]))"},
    {"service_outputs", "sum by (target) (increase(gpu_service_outputs_total[${P}]))"},
    {"service_unit", "max by (target, unit) (max_over_time(gpu_service_output_info[${P}]))"},
    {"queue_p95",
     "histogram_quantile(0.95, max by (partition, le) "
     "(rate(gpu_job_queue_wait_seconds_bucket[${S}])))"},
    {"queue_p50",
     "histogram_quantile(0.5, max by (partition, le) "
     "(rate(gpu_job_queue_wait_seconds_bucket[${S}])))"},
    {"queue_p95_period",
     "histogram_quantile(0.95, sum by (le) (max by (partition, le) "
     "(rate(gpu_job_queue_wait_seconds_bucket[${P}]))))"},
    {"congestion", "avg(avg_over_time(gpu_pool_congestion_ratio[${P}]))"},
};

struct Ctx {
  tsdb::Querier* querier;
  const promql::Engine* engine;
  int64_t start_ms, end_ms, step_ms;
  std::map<std::string, std::string> vars;
  Report* out;

  std::string Text(const std::string& name) const {
    return diagnose::Substitute(kQueries.at(name), vars);
  }
  std::vector<promql::Series> Instant(const std::string& name) {
    promql::QueryResult r = engine->Instant(*querier, Text(name), end_ms);
    if (!r.ok()) {
      out->errors.push_back(name + ": " + r.error().message);
      return {};
    }
    if (r.value().type == promql::ValueType::kScalar)
      return {promql::Series{{}, {{r.value().t_ms, r.value().scalar}}}};
    return std::move(r.value().series);
  }
  double Scalar(const std::string& name) {
    auto s = Instant(name);
    return s.empty() || s[0].points.empty() ? NAN : s[0].points[0].v;
  }
  Chart Range(const std::string& name, const std::string& title, const std::string& unit,
              const std::string& label_name) {
    Chart c{title, unit, Text(name), {}};
    promql::QueryResult r = engine->Range(*querier, c.query, start_ms, end_ms, step_ms);
    if (!r.ok()) {
      out->errors.push_back(name + ": " + r.error().message);
      return c;
    }
    for (promql::Series& s : r.value().series) {
      std::string label = std::string(tsdb::LabelValue(s.labels, label_name));
      c.lines.push_back(ChartLine{label, std::move(s.points)});
    }
    return c;
  }
};

std::string Key(const tsdb::Labels& l) {
  return std::string(tsdb::LabelValue(l, "gpu")) + "/" + std::string(tsdb::LabelValue(l, "uuid"));
}

double First(const promql::Series& s) {
  return s.points.empty() ? NAN : s.points[0].v;
}

void BuildFleet(Ctx& c) {
  Fleet& f = c.out->fleet;
  f.gpus = c.Scalar("gpus");
  f.gpus_up = c.Scalar("gpus_up");
  f.utilization = c.Scalar("utilization");
  f.memory_utilization = c.Scalar("memory_utilization");
  f.energy_kwh = c.Scalar("energy_kwh");
  f.throttled_share = c.Scalar("throttled");
  if (std::isnan(f.gpus)) f.gpus = 0;
  if (std::isnan(f.gpus_up)) f.gpus_up = 0;
  const bool per_gpu = f.gpus <= 16;
  c.out->utilization =
      c.Range(per_gpu ? "util_chart" : "util_chart_fleet",
              per_gpu ? "GPU utilization by GPU" : "Fleet GPU utilization", "ratio", "gpu");
  if (per_gpu) {
    for (ChartLine& l : c.out->utilization.lines) l.label = "GPU " + l.label;
  } else if (!c.out->utilization.lines.empty()) {
    c.out->utilization.lines[0].label = "fleet average";
  }
}

void BuildGpus(Ctx& c) {
  std::map<std::string, GpuRow> rows;
  for (const promql::Series& s : c.Instant("gpu_info")) {
    GpuRow& r = rows[Key(s.labels)];
    r.gpu = std::string(tsdb::LabelValue(s.labels, "gpu"));
    r.uuid = std::string(tsdb::LabelValue(s.labels, "uuid"));
    r.name = std::string(tsdb::LabelValue(s.labels, "name"));
  }
  auto fill = [&](const std::string& name, double GpuRow::*field) {
    for (const promql::Series& s : c.Instant(name)) {
      auto it = rows.find(Key(s.labels));
      if (it != rows.end()) it->second.*field = First(s);
    }
  };
  fill("gpu_util", &GpuRow::utilization);
  fill("gpu_temp", &GpuRow::temperature_max);
  fill("gpu_throttled", &GpuRow::throttled_share);
  fill("gpu_ecc_corrected", &GpuRow::ecc_corrected);
  fill("gpu_ecc_uncorrected", &GpuRow::ecc_uncorrected);
  fill("gpu_remapped", &GpuRow::remapped_rows);
  for (const promql::Series& s : c.Instant("gpu_pending")) {
    auto it = rows.find(Key(s.labels));
    if (it != rows.end() && First(s) >= 1) it->second.repair_pending = true;
  }
  for (const promql::Series& s : c.Instant("gpu_xids")) {
    auto it = rows.find(Key(s.labels));
    if (it != rows.end() && First(s) > 0)
      it->second.xids[std::string(tsdb::LabelValue(s.labels, "xid"))] = First(s);
  }
  for (auto& [key, row] : rows) c.out->gpus.push_back(std::move(row));
  std::sort(c.out->gpus.begin(), c.out->gpus.end(), [](const GpuRow& a, const GpuRow& b) {
    return std::atoi(a.gpu.c_str()) != std::atoi(b.gpu.c_str())
               ? std::atoi(a.gpu.c_str()) < std::atoi(b.gpu.c_str())
               : a.uuid < b.uuid;
  });
  Chart ecc = c.Range("ecc_chart", "Lifetime corrected ECC errors (GPUs whose count grew)",
                      "errors", "gpu");
  std::vector<ChartLine> grew;
  for (ChartLine& l : ecc.lines) {
    if (l.points.size() >= 2 && l.points.back().v > l.points.front().v) {
      l.label = "GPU " + l.label;
      grew.push_back(std::move(l));
    }
  }
  ecc.lines = std::move(grew);
  c.out->ecc = std::move(ecc);
}

void BuildTeams(Ctx& c) {
  std::map<std::string, TeamRow> rows;
  auto fill = [&](const std::string& name, auto setter) {
    bool any = false;
    for (const promql::Series& s : c.Instant(name)) {
      TeamRow& r = rows[std::string(tsdb::LabelValue(s.labels, "team"))];
      setter(r, First(s));
      any = true;
    }
    return any;
  };
  fill("team_gpu_hours", [](TeamRow& r, double v) { r.gpu_hours = v; });
  fill("team_idle_hours", [](TeamRow& r, double v) { r.idle_gpu_hours = v; });
  fill("team_energy", [](TeamRow& r, double v) { r.energy_kwh = v; });
  c.out->has_quota = fill("team_quota", [](TeamRow& r, double v) { r.quota_gpus = v; });
  c.out->has_cost = fill("team_cost", [](TeamRow& r, double v) { r.cost = v; });
  fill("team_idle_cost", [](TeamRow& r, double v) { r.idle_cost = v; });
  // Hours the store has data for in the period: GPUs held on average are over those hours.
  const double data_hours = double(c.out->data_end_ms - c.out->data_start_ms) / 3.6e6;
  for (auto& [team, row] : rows) {
    row.team = team;
    if (data_hours > 0 && std::isfinite(row.gpu_hours))
      row.avg_gpus_held = row.gpu_hours / data_hours;
    c.out->teams.push_back(std::move(row));
  }
  std::sort(c.out->teams.begin(), c.out->teams.end(), [](const TeamRow& a, const TeamRow& b) {
    const double ha = std::isnan(a.gpu_hours) ? -1 : a.gpu_hours;
    const double hb = std::isnan(b.gpu_hours) ? -1 : b.gpu_hours;
    return ha != hb ? ha > hb : a.team < b.team;
  });
}

void BuildServices(Ctx& c) {
  std::map<std::string, ServiceRow> rows;
  for (const promql::Series& s : c.Instant("service_cost"))
    rows[std::string(tsdb::LabelValue(s.labels, "target"))].cost = First(s);
  if (rows.empty()) return;
  for (const promql::Series& s : c.Instant("service_outputs")) {
    auto it = rows.find(std::string(tsdb::LabelValue(s.labels, "target")));
    if (it != rows.end()) it->second.outputs = First(s);
  }
  for (const promql::Series& s : c.Instant("service_unit")) {
    auto it = rows.find(std::string(tsdb::LabelValue(s.labels, "target")));
    if (it != rows.end()) it->second.unit = std::string(tsdb::LabelValue(s.labels, "unit"));
  }
  for (auto& [target, row] : rows) {
    row.target = target;
    if (row.outputs > 0) row.cost_per_output = row.cost / row.outputs;
    c.out->services.push_back(std::move(row));
  }
}

void BuildQueue(Ctx& c) {
  Chart p95 = c.Range("queue_p95", "Queue wait by partition (p50, p95)", "seconds", "partition");
  Chart p50 = c.Range("queue_p50", "", "seconds", "partition");
  Chart out{p95.title, "seconds", p95.query + "\n" + p50.query, {}};
  for (ChartLine& l : p95.lines) {
    l.label += " p95";
    out.lines.push_back(std::move(l));
  }
  for (ChartLine& l : p50.lines) {
    l.label += " p50";
    out.lines.push_back(std::move(l));
  }
  c.out->queue_wait = std::move(out);
}

void BuildCapacity(Ctx& c) {
  Capacity& cap = c.out->capacity;
  cap.queue_wait_p95_s = c.Scalar("queue_p95_period");
  cap.congestion = c.Scalar("congestion");
  cap.utilization = c.out->fleet.utilization;
  double allocated = 0, idle = 0;
  for (const TeamRow& t : c.out->teams) {
    if (!std::isnan(t.gpu_hours)) allocated += t.gpu_hours;
    if (!std::isnan(t.idle_gpu_hours)) idle += t.idle_gpu_hours;
  }
  if (allocated > 0) cap.idle_ratio = idle / allocated;
  const bool queued = (std::isfinite(cap.queue_wait_p95_s) && cap.queue_wait_p95_s > 3600) ||
                      (std::isfinite(cap.congestion) && cap.congestion > 1);
  const bool no_queue =
      !queued && (!std::isfinite(cap.queue_wait_p95_s) || cap.queue_wait_p95_s < 600);
  const double idle_ratio = std::isfinite(cap.idle_ratio) ? cap.idle_ratio : 0;
  const std::string util = diagnose::FormatValue(cap.utilization, "ratio");
  const std::string wait = diagnose::FormatValue(cap.queue_wait_p95_s, "seconds");
  const std::string idle_text = diagnose::FormatValue(cap.idle_ratio, "ratio");
  if (c.out->fleet.gpus == 0) {
    cap.verdict = "unknown";
    cap.reason = "No GPU telemetry in the period.";
  } else if (queued && idle_ratio >= 0.1) {
    cap.verdict = "reclaim";
    cap.reason = "Jobs waited (p95 " + wait + ") while " + idle_text +
                 " of the allocated GPU time was idle: reclaim idle allocations and check the "
                 "reclaim policy before adding GPUs.";
  } else if (queued) {
    cap.verdict = "grow";
    cap.reason = "Jobs waited " + wait +
                 " at the 95th percentile while allocated GPUs were busy "
                 "(idle " +
                 idle_text + ", fleet utilization " + util +
                 "): demand exceeds the pool; add GPUs to the congested partitions.";
  } else if (std::isfinite(cap.utilization) && cap.utilization < 0.3 && no_queue) {
    cap.verdict = "shrink";
    cap.reason = "The fleet averaged " + util +
                 " utilization with no queueing: consolidate work, lend GPUs to other pools, or "
                 "shrink the pool.";
  } else {
    cap.verdict = "hold";
    cap.reason = "Fleet utilization " + util;
    if (std::isfinite(cap.queue_wait_p95_s)) cap.reason += ", queue wait p95 " + wait;
    if (std::isfinite(cap.idle_ratio)) cap.reason += ", idle share of allocated time " + idle_text;
    cap.reason += ": capacity matches demand in this period.";
    if (!std::isfinite(cap.queue_wait_p95_s))
      cap.reason += " (No queue-wait data: with Slurm polled, congestion would be judged too.)";
  }
}

// Alerts that fired: the raw ALERTS samples (one per rule evaluation while firing), grouped by
// series; an episode ends where the gap between samples exceeds 2.5 evaluation intervals.
void BuildAlerts(Ctx& c) {
  std::vector<tsdb::Matcher> m = {
      *tsdb::Matcher::Make(tsdb::MatchType::kEqual, "__name__", "ALERTS"),
      *tsdb::Matcher::Make(tsdb::MatchType::kEqual, "alertstate", "firing")};
  std::vector<tsdb::SeriesData> series;
  if (Status s = c.querier->Select(m, c.start_ms, c.end_ms, &series); !s.ok()) {
    c.out->errors.push_back("alerts: " + s.message());
    return;
  }
  for (const tsdb::SeriesData& sd : series) {
    std::vector<int64_t> t;
    for (const tsdb::Sample& p : sd.samples)
      if (!tsdb::IsStaleNaN(p.v)) t.push_back(p.t_ms);
    if (t.empty()) continue;
    AlertRow a;
    for (const auto& [name, value] : sd.labels) {
      if (name == "__name__" || name == "alertstate") continue;
      if (name == "alertname") {
        a.alertname = value;
      } else if (name == "severity") {
        a.severity = value;
      } else {
        a.labels += (a.labels.empty() ? "" : ", ") + name + "=" + value;
      }
    }
    // The evaluation interval: the most common gap (the median), 0 with a single sample.
    std::vector<int64_t> gaps;
    for (size_t i = 1; i < t.size(); ++i) gaps.push_back(t[i] - t[i - 1]);
    int64_t interval = 0;
    if (!gaps.empty()) {
      std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
      interval = gaps[gaps.size() / 2];
    }
    a.first_ms = t.front();
    a.last_ms = t.back();
    size_t begin = 0;
    for (size_t i = 1; i <= t.size(); ++i) {
      if (i < t.size() && double(t[i] - t[i - 1]) <= 2.5 * double(interval)) continue;
      a.firing_s += double(t[i - 1] - t[begin] + interval) / 1000;
      ++a.episodes;
      begin = i;
    }
    a.active = c.end_ms - a.last_ms <= std::max<int64_t>(2 * interval, 60000) &&
               c.out->data_end_ms >= c.end_ms - std::max<int64_t>(2 * interval, 60000);
    c.out->alerts.push_back(std::move(a));
  }
  std::sort(c.out->alerts.begin(), c.out->alerts.end(), [](const AlertRow& a, const AlertRow& b) {
    return a.firing_s != b.firing_s ? a.firing_s > b.firing_s : a.first_ms < b.first_ms;
  });
}

// Outcomes and throughput per team, from the job records that ended in the period.
void BuildOutcomes(Ctx& c, const std::vector<jobs::JobRecord>* records) {
  if (records == nullptr) return;
  c.out->has_outcome_records = true;
  std::map<std::string, TeamOutcomeRow> rows;
  for (const jobs::JobRecord& r : *records) {
    const int64_t end_ms = r.end_time * 1000;
    if (r.end_time <= 0 || end_ms <= c.start_ms || end_ms > c.end_ms) continue;
    TeamOutcomeRow& row = rows[r.team.empty() ? "-" : r.team];
    ++row.jobs;
    if (r.outcome) {
      ++row.with_outcome;
      if (r.outcome->outcome == "completed") ++row.completed;
      if (r.outcome->cause == "gpu_fault") ++row.gpu_failures;
    }
    if (r.throughput && !r.throughput->unit.empty()) {
      TeamOutcomeRow::Throughput& t = row.throughput[r.throughput->unit];
      t.total += r.throughput->total;
      t.gpu_hours += r.gpu ? r.gpu->gpu_seconds / 3600 : 0;
      if (r.cost) {
        t.cost += r.cost->Total();
        t.currency = r.cost->currency;
      }
      ++t.jobs;
    }
  }
  for (auto& [team, row] : rows) {
    row.team = team;
    c.out->outcomes.push_back(std::move(row));
  }
}

}  // namespace

Expected<ReportRequest> ParseReportRequest(const std::string& period, const std::string& format) {
  const std::string p = period.empty() ? "7d" : period;
  ReportRequest out;
  if (!ParseDurationSeconds(p, &out.period_s) || out.period_s < 600)
    return Error{"period: expected a duration of at least 10m such as 7d, got '" + p + "'"};
  if (!format.empty() && format != "html" && format != "json")
    return Error{"format: expected html or json, got '" + format + "'"};
  out.json = format == "json";
  return out;
}

Expected<Report> Build(tsdb::Querier& querier, const promql::Engine& engine,
                       const Options& options) {
  if (!(options.period_s >= 600)) return Error{"the period must be at least 10m"};
  if (options.time_ms <= 0) return Error{"no report time"};
  Report out;
  out.time_ms = options.time_ms;
  out.period_s = options.period_s;
  const double step_s = std::max(60.0, std::round(options.period_s / 60));
  Ctx c{&querier,
        &engine,
        options.time_ms - static_cast<int64_t>(options.period_s * 1000),
        options.time_ms,
        static_cast<int64_t>(step_s * 1000),
        {},
        &out};
  c.vars["P"] = diagnose::PromDuration(options.period_s);
  c.vars["S"] = diagnose::PromDuration(std::max(300.0, step_s));
  c.vars["throttle"] = kThrottleReasons;
  if (auto extent = diagnose::FindDataExtent(querier, engine, "gpu_up", c.start_ms, c.end_ms)) {
    out.data_start_ms = extent->first_ms;
    out.data_end_ms = extent->last_ms;
  }
  BuildFleet(c);
  diagnose::Options d;
  d.time_ms = options.time_ms;
  d.window_s = options.period_s;
  d.thresholds = options.thresholds;
  auto diagnosis = diagnose::Diagnose(querier, engine, d);
  if (diagnosis.ok()) {
    out.diagnosis = std::move(*diagnosis);
    for (const diagnose::Finding& f : out.diagnosis.findings)
      ++out.fleet.findings[static_cast<int>(f.severity)];
    for (const std::string& e : out.diagnosis.errors) out.errors.push_back("findings: " + e);
  } else {
    out.errors.push_back("findings: " + diagnosis.error().message);
  }
  BuildTeams(c);
  BuildAlerts(c);
  BuildOutcomes(c, options.records);
  BuildServices(c);
  BuildQueue(c);
  BuildGpus(c);
  BuildCapacity(c);
  if (out.teams.empty())
    out.notes.push_back(
        "No task-layer data (gpu_job_* families) in the period: per-team usage "
        "needs `gpuwarden serve` with jobs attributed (docs/metrics.md, Task "
        "layer).");
  if (!out.teams.empty() && !out.has_quota)
    out.notes.push_back(
        "No team quotas (gpu_team_quota_gpus) in the store: quota columns are "
        "left out.");
  if (!out.teams.empty() && !out.has_cost)
    out.notes.push_back(
        "No cost data (gpu_cost_allocation_total) in the store: cost columns are left out.");
  if (out.queue_wait.lines.empty())
    out.notes.push_back(
        "No queue-wait data (gpu_job_queue_wait_seconds) in the period: it needs "
        "jobs.scheduler: slurm.");
  return out;
}

namespace {

using nlohmann::json;

json Num(double v) {
  return std::isfinite(v) ? json(v) : json(nullptr);
}

json ChartJson(const Chart& c) {
  json lines = json::array();
  for (const ChartLine& l : c.lines) {
    json points = json::array();
    for (const promql::Point& p : l.points) points.push_back({double(p.t_ms) / 1000, Num(p.v)});
    lines.push_back({{"label", l.label}, {"points", points}});
  }
  return {{"title", c.title}, {"unit", c.unit}, {"query", c.query}, {"lines", lines}};
}

}  // namespace

std::string ToJson(const Report& r) {
  json fleet = {{"gpus", r.fleet.gpus},
                {"gpus_up", r.fleet.gpus_up},
                {"utilization", Num(r.fleet.utilization)},
                {"memory_utilization", Num(r.fleet.memory_utilization)},
                {"energy_kwh", Num(r.fleet.energy_kwh)},
                {"throttled_share", Num(r.fleet.throttled_share)},
                {"findings",
                 {{"critical", r.fleet.findings[0]},
                  {"warning", r.fleet.findings[1]},
                  {"info", r.fleet.findings[2]}}}};
  json teams = json::array();
  for (const TeamRow& t : r.teams) {
    json j = {{"team", t.team},
              {"gpu_hours", Num(t.gpu_hours)},
              {"idle_gpu_hours", Num(t.idle_gpu_hours)},
              {"energy_kwh", Num(t.energy_kwh)}};
    j["avg_gpus_held"] = Num(t.avg_gpus_held);
    // No quota is null, never 0 (as in the API).
    j["quota_gpus"] = t.quota_gpus && *t.quota_gpus > 0 ? Num(*t.quota_gpus) : json(nullptr);
    if (t.cost) j["cost"] = Num(*t.cost);
    if (t.idle_cost) j["idle_cost"] = Num(*t.idle_cost);
    teams.push_back(j);
  }
  json services = json::array();
  for (const ServiceRow& s : r.services)
    services.push_back({{"target", s.target},
                        {"unit", s.unit},
                        {"cost", Num(s.cost)},
                        {"outputs", Num(s.outputs)},
                        {"cost_per_output", Num(s.cost_per_output)}});
  json gpus = json::array();
  for (const GpuRow& g : r.gpus) {
    json xids = json::object();
    for (const auto& [code, n] : g.xids) xids[code] = n;
    gpus.push_back({{"gpu", g.gpu},
                    {"uuid", g.uuid},
                    {"name", g.name},
                    {"utilization", Num(g.utilization)},
                    {"temperature_max", Num(g.temperature_max)},
                    {"throttled_share", Num(g.throttled_share)},
                    {"ecc_corrected", Num(g.ecc_corrected)},
                    {"ecc_uncorrected", Num(g.ecc_uncorrected)},
                    {"remapped_rows", Num(g.remapped_rows)},
                    {"repair_pending", g.repair_pending},
                    {"xids", xids}});
  }
  json alerts = json::array();
  for (const AlertRow& a : r.alerts)
    alerts.push_back({{"alertname", a.alertname},
                      {"severity", a.severity},
                      {"labels", a.labels},
                      {"first", double(a.first_ms) / 1000},
                      {"last", double(a.last_ms) / 1000},
                      {"firing_seconds", a.firing_s},
                      {"episodes", a.episodes},
                      {"active", a.active}});
  json outcomes = json::array();
  for (const TeamOutcomeRow& o : r.outcomes) {
    json throughput = json::array();
    for (const auto& [unit, t] : o.throughput)
      throughput.push_back(
          {{"unit", unit},
           {"jobs", t.jobs},
           {"total", t.total},
           {"per_gpu_hour", t.gpu_hours > 0 ? json(t.total / t.gpu_hours) : json()},
           {"per_cost", t.cost > 0 ? json(t.total / t.cost) : json()},
           {"currency", t.currency.empty() ? json() : json(t.currency)}});
    outcomes.push_back({{"team", o.team},
                        {"jobs", o.jobs},
                        {"with_outcome", o.with_outcome},
                        {"completed", o.completed},
                        {"success_ratio",
                         o.with_outcome > 0 ? json(double(o.completed) / o.with_outcome) : json()},
                        {"gpu_failures", o.gpu_failures},
                        {"throughput", throughput}});
  }
  // The findings as the API gives them.
  json findings = json::parse(diagnose::ToJson(r.diagnosis))["data"]["findings"];
  json out = {{"time", double(r.time_ms) / 1000},
              {"period_seconds", r.period_s},
              {"data_start", r.data_end_ms > 0 ? json(double(r.data_start_ms) / 1000) : json()},
              {"data_end", r.data_end_ms > 0 ? json(double(r.data_end_ms) / 1000) : json()},
              {"coverage", diagnose::CoverageText(r.period_s, r.data_start_ms, r.data_end_ms)},
              {"alerts", alerts},
              {"outcomes", outcomes},
              {"fleet", fleet},
              {"utilization", ChartJson(r.utilization)},
              {"findings", findings},
              {"teams", teams},
              {"has_quota", r.has_quota},
              {"has_cost", r.has_cost},
              {"services", services},
              {"queue_wait", ChartJson(r.queue_wait)},
              {"gpus", gpus},
              {"ecc", ChartJson(r.ecc)},
              {"capacity",
               {{"verdict", r.capacity.verdict},
                {"reason", r.capacity.reason},
                {"queue_wait_p95_seconds", Num(r.capacity.queue_wait_p95_s)},
                {"idle_ratio", Num(r.capacity.idle_ratio)},
                {"utilization", Num(r.capacity.utilization)},
                {"congestion_ratio", Num(r.capacity.congestion)}}},
              {"notes", r.notes},
              {"errors", r.errors}};
  return out.dump(2) + "\n";
}

}  // namespace gw::report
