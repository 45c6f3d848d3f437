// Business latency findings: is a slow service slow because of the GPUs serving it?
#include "diagnose/business.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "diagnose/checks.h"

namespace gw::diagnose {

namespace {

// Device-side findings that slow a service down, most telling first.
int CauseRank(const Finding& f) {
  if (f.kind == "busy-but-throttled") return 0;
  if (f.kind == "memory-pressure") return 1;
  if (f.kind == "near-thermal-limit") return 2;
  if (f.kind == "ecc-trend") return 3;
  return -1;
}

struct Degraded {
  int64_t first_ms = 0, last_ms = 0;
  double held_s = 0, peak = 0, baseline = 0;
};

// The steps at which p95 exceeded factor × the best p95 of the window.
bool FindDegraded(const promql::Series& s, double factor, double step_s, Degraded* d) {
  double best = INFINITY;
  for (const promql::Point& p : s.points)
    if (std::isfinite(p.v) && p.v > 0) best = std::min(best, p.v);
  if (!std::isfinite(best)) return false;
  d->baseline = best;
  size_t n = 0;
  for (const promql::Point& p : s.points) {
    if (!std::isfinite(p.v) || p.v <= factor * best) continue;
    if (n++ == 0) d->first_ms = p.t_ms;
    d->last_ms = p.t_ms;
    d->peak = std::max(d->peak, p.v);
  }
  d->held_s = double(n) * step_s;
  return n > 0;
}

}  // namespace

void RunBusinessChecks(RunContext& ctx) {
  const std::string p95_query = Substitute(queries::kLatencyP95, ctx.vars);
  promql::QueryResult p95 =
      ctx.engine->Range(*ctx.querier, p95_query, ctx.start_ms, ctx.end_ms, ctx.step_ms);
  if (!p95.ok()) {
    ctx.out->errors.push_back("business-latency: " + p95.error().message);
    return;
  }
  if (p95.value().series.empty()) return;
  // target -> the GPUs serving it.
  std::map<std::string, std::set<std::pair<std::string, std::string>>> serving;
  const std::string service_query = Substitute(queries::kServiceGpus, ctx.vars);
  promql::QueryResult service = ctx.engine->Instant(*ctx.querier, service_query, ctx.end_ms);
  if (service.ok()) {
    for (const promql::Series& s : service.value().series)
      serving[std::string(tsdb::LabelValue(s.labels, "target"))].insert(
          {std::string(tsdb::LabelValue(s.labels, "gpu")),
           std::string(tsdb::LabelValue(s.labels, "uuid"))});
  } else {
    ctx.out->errors.push_back("business-latency (gpu_service_info): " + service.error().message);
  }
  const std::string error_query = Substitute(queries::kErrorRatio, ctx.vars);
  const Thresholds& t = ctx.options->thresholds;
  const double step_s = double(ctx.step_ms) / 1000;
  const size_t device_count = ctx.out->findings.size();
  for (const promql::Series& s : p95.value().series) {
    Degraded d;
    if (!FindDegraded(s, t.latency_factor, step_s, &d)) continue;
    // At least two steps, so that one slow scrape is not a finding.
    if (d.held_s < 2 * step_s) continue;
    Finding f;
    f.kind = "business-latency";
    f.layer = Layer::kBusiness;
    f.subject.target = std::string(tsdb::LabelValue(s.labels, "target"));
    f.since_ms = d.first_ms;
    f.last_ms = d.last_ms;
    f.held_s = d.held_s;
    f.active = d.last_ms + ctx.step_ms / 2 >= ctx.end_ms && ctx.current;
    const auto& gpus = serving[f.subject.target];
    for (const auto& [gpu, uuid] : gpus) f.related_gpus.push_back(gpu);
    f.evidence.push_back(Evidence{"request latency, 95th percentile (max while degraded)", d.peak,
                                  "seconds", d.first_ms, d.last_ms, p95_query});
    f.evidence.push_back(Evidence{"request latency, 95th percentile (best in the window)",
                                  d.baseline, "seconds", ctx.start_ms, ctx.end_ms, p95_query});
    promql::QueryResult errors =
        ctx.engine->Range(*ctx.querier, error_query, d.first_ms, d.last_ms, ctx.step_ms);
    if (errors.ok()) {
      for (const promql::Series& e : errors.value().series) {
        if (tsdb::LabelValue(e.labels, "target") != f.subject.target) continue;
        double worst = 0;
        for (const promql::Point& p : e.points)
          if (std::isfinite(p.v)) worst = std::max(worst, p.v);
        f.evidence.push_back(Evidence{"failed requests / all requests (max while degraded)", worst,
                                      "ratio", d.first_ms, d.last_ms, error_query});
      }
    }
    // The device finding on a serving GPU that overlaps the degradation, most telling first.
    const Finding* cause = nullptr;
    for (size_t i = 0; i < device_count; ++i) {
      const Finding& df = ctx.out->findings[i];
      if (CauseRank(df) < 0 || df.subject.gpu.empty()) continue;
      bool serves = false;
      for (const auto& [gpu, uuid] : gpus)
        if (gpu == df.subject.gpu && (uuid.empty() || uuid == df.subject.uuid)) serves = true;
      if (!serves || df.last_ms < d.first_ms || df.since_ms > d.last_ms) continue;
      if (cause == nullptr || df.severity < cause->severity ||
          (df.severity == cause->severity && CauseRank(df) < CauseRank(*cause)))
        cause = &df;
    }
    char ratio[64];
    std::snprintf(ratio, sizeof ratio, "%.1f×", d.peak / d.baseline);
    const std::string rose = "p95 latency of " + f.subject.target + " rose to " +
                             FormatValue(d.peak, "seconds") + " (" + ratio + " its best, " +
                             FormatValue(d.baseline, "seconds") + ")";
    if (cause != nullptr) {
      f.cause = cause->kind + (cause->cause.empty() ? "" : " (" + cause->cause + ")") + " on GPU " +
                cause->subject.gpu;
      f.severity =
          cause->severity == Severity::kCritical ? Severity::kCritical : Severity::kWarning;
      f.title = rose + " while GPU " + cause->subject.gpu + " serving it: " + cause->title;
      for (size_t i = 0; i < cause->evidence.size() && i < 2; ++i) {
        Evidence e = cause->evidence[i];
        e.what = "GPU " + cause->subject.gpu + ": " + e.what;
        f.evidence.push_back(std::move(e));
      }
      f.action = "The device is the cause: " + cause->action +
                 " Meanwhile route traffic away from GPU " + cause->subject.gpu + ".";
    } else if (gpus.empty()) {
      f.cause = "unknown (no gpu_service_info for this target)";
      f.severity = Severity::kInfo;
      f.title = rose + "; which GPUs serve it is not known";
      f.action =
          "Export gpu_service_info{target, gpu, uuid} for the service so that its latency "
          "can be tied to the GPUs serving it.";
    } else {
      f.cause = "not the GPUs";
      f.severity = Severity::kInfo;
      std::string list;
      for (const std::string& g : f.related_gpus) list += (list.empty() ? "" : ", ") + g;
      f.title = rose + "; the GPUs serving it (" + list + ") showed no device problem meanwhile";
      f.action =
          "Look at the service itself: load and queueing, batch sizes, inputs, the host "
          "and downstream dependencies.";
    }
    f.id = f.kind + "/target=" + f.subject.target;
    ctx.out->findings.push_back(std::move(f));
  }
}

}  // namespace gw::diagnose
