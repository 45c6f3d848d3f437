// Training throughput findings: is a job training slower because of the GPUs it runs on?
#include "diagnose/training.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <set>

#include "diagnose/checks.h"

namespace gw::diagnose {

namespace {

constexpr const char* kThroughput = "gpu_job_training_throughput";

struct Drop {
  int64_t first_ms = 0, last_ms = 0;
  double held_s = 0, baseline = 0, low = 0;  // low: the run's average
};

double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(std::floor(q * static_cast<double>(v.size() - 1)))];
}

// The latest run of steps below (1 - ratio) × the series' usual level (its 90th percentile).
bool FindDrop(const promql::Series& s, double step_s, Drop* d) {
  std::vector<double> values;
  for (const promql::Point& p : s.points)
    if (std::isfinite(p.v)) values.push_back(p.v);
  if (values.size() < 3) return false;
  d->baseline = Quantile(values, 0.9);
  if (!(d->baseline > 0)) return false;
  const double floor = (1 - kTrainingDropRatio) * d->baseline;
  size_t n = 0;
  int64_t run_first = 0, run_last = 0;
  double run_sum = 0;
  size_t run_n = 0;
  for (const promql::Point& p : s.points) {
    if (!std::isfinite(p.v)) continue;
    if (p.v >= floor) {
      if (run_n > 0) {  // a run ended: keep it as the latest
        n = run_n, d->first_ms = run_first, d->last_ms = run_last, d->low = run_sum / run_n;
      }
      run_n = 0;
      run_sum = 0;
      continue;
    }
    if (run_n++ == 0) run_first = p.t_ms;
    run_last = p.t_ms;
    run_sum += p.v;
  }
  if (run_n > 0)
    n = run_n, d->first_ms = run_first, d->last_ms = run_last, d->low = run_sum / run_n;
  d->held_s = double(n) * step_s;
  return n >= 2;
}

// Per GPU (the "gpu" label), the average over the drop of a range query's points.
std::map<std::string, double> AvgByGpu(RunContext& ctx, const std::string& query, int64_t from,
                                       int64_t to, std::map<std::string, std::string>* uuids,
                                       Stat stat = Stat::kAvg) {
  std::map<std::string, double> out;
  promql::QueryResult r = ctx.engine->Range(*ctx.querier, query, from, to, ctx.step_ms);
  if (!r.ok()) {
    ctx.out->errors.push_back("training-throughput-drop: " + r.error().message);
    return out;
  }
  for (const promql::Series& s : r.value().series) {
    double sum = 0, n = 0, extreme = stat == Stat::kMin ? INFINITY : -INFINITY;
    for (const promql::Point& p : s.points) {
      if (!std::isfinite(p.v)) continue;
      sum += p.v;
      ++n;
      extreme = stat == Stat::kMin ? std::min(extreme, p.v) : std::max(extreme, p.v);
    }
    if (n == 0) continue;
    const std::string gpu(tsdb::LabelValue(s.labels, "gpu"));
    const double v = stat == Stat::kAvg ? sum / n : extreme;
    auto [it, fresh] = out.emplace(gpu, v);
    if (!fresh) it->second = stat == Stat::kMin ? std::min(it->second, v) : std::max(it->second, v);
    if (uuids) (*uuids)[gpu] = std::string(tsdb::LabelValue(s.labels, "uuid"));
  }
  return out;
}

std::string GpuMatcher(const std::vector<std::string>& gpus) {
  std::string re;
  for (const std::string& g : gpus) re += (re.empty() ? "" : "|") + g;
  return "gpu=~\"" + re + "\"";
}

std::string ClockTime(int64_t ms) {
  const std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%H:%M UTC", &tm);
  return text;
}

std::string Percent(double ratio) {
  char text[16];
  std::snprintf(text, sizeof text, "%.0f %%", ratio * 100);
  return text;
}

std::string Rate(double v) {
  char text[32];
  std::snprintf(text, sizeof text, v >= 100 ? "%.0f" : "%.3g", v);
  return text;
}

// "sw_power_cap" -> (cause, how a person says it)
std::pair<std::string, std::string> ReasonWords(const std::string& reason) {
  if (reason == "sw_power_cap") return {"power cap", "is power-capped"};
  if (reason == "hw_power_brake_slowdown") return {"power brake", "is held by the power brake"};
  if (reason == "sw_thermal_slowdown" || reason == "hw_thermal_slowdown")
    return {"thermal", "is thermally throttled"};
  if (reason == "hw_slowdown") return {"hardware slowdown", "is in hardware slowdown"};
  return {"low clock", "runs below its maximum clock"};
}

}  // namespace

void RunTrainingChecks(RunContext& ctx) {
  promql::QueryResult series =
      ctx.engine->Range(*ctx.querier, kThroughput, ctx.start_ms, ctx.end_ms, ctx.step_ms);
  if (!series.ok()) {
    ctx.out->errors.push_back("training-throughput-drop: " + series.error().message);
    return;
  }
  const double step_s = double(ctx.step_ms) / 1000;
  const Thresholds& t = ctx.options->thresholds;
  for (const promql::Series& s : series.value().series) {
    Drop d;
    if (!FindDrop(s, step_s, &d)) continue;
    Finding f;
    f.kind = "training-throughput-drop";
    f.layer = Layer::kTask;
    f.subject.job = std::string(tsdb::LabelValue(s.labels, "job_id"));
    f.subject.team = std::string(tsdb::LabelValue(s.labels, "team"));
    const std::string unit(tsdb::LabelValue(s.labels, "unit"));
    f.since_ms = d.first_ms;
    f.last_ms = d.last_ms;
    f.held_s = d.held_s;
    f.active = d.last_ms + ctx.step_ms / 2 >= ctx.end_ms;
    std::set<std::string> gpu_set;
    for (const Allocation& a : ctx.out->allocations)
      if (a.job == f.subject.job && !a.gpu.empty()) gpu_set.insert(a.gpu);
    f.related_gpus.assign(gpu_set.begin(), gpu_set.end());
    const std::string throughput_query =
        std::string(kThroughput) + "{job_id=\"" + f.subject.job + "\"}";
    f.evidence.push_back(Evidence{"throughput (" + unit + "/s, average while slower)", d.low,
                                  "per_second", d.first_ms, d.last_ms, throughput_query});
    f.evidence.push_back(Evidence{"throughput (" + unit + "/s, usual: 90th percentile)", d.baseline,
                                  "per_second", ctx.start_ms, ctx.end_ms, throughput_query});
    const double slower = 1 - d.low / d.baseline;
    const std::string head = "job " + f.subject.job + " trains " + Percent(slower) +
                             " slower since " + ClockTime(d.first_ms) + " (" + Rate(d.baseline) +
                             " → " + Rate(d.low) + " " + unit + "/s)";
    // What its GPUs did meanwhile.
    std::string culprit, cause_words, cause;
    if (!f.related_gpus.empty()) {
      const std::string sel = GpuMatcher(f.related_gpus);
      const std::string w = PromDuration(std::max(60.0, 2 * step_s));
      std::map<std::string, std::string> uuids;
      const std::string clock_query =
          "gpu_sm_clock_hertz{" + sel + "} / on(gpu, uuid) gpu_sm_clock_max_hertz{" + sel + "}";
      const auto clock = AvgByGpu(ctx, clock_query, d.first_ms, d.last_ms, &uuids);
      // The slowest GPU sets the pace of a data-parallel step.
      std::string slowest;
      for (const auto& [gpu, ratio] : clock)
        if (slowest.empty() || ratio < clock.at(slowest)) slowest = gpu;
      if (!slowest.empty() && clock.at(slowest) < 0.95) {
        culprit = slowest;
        std::string reason;
        double share = 0;
        const std::string reason_query =
            "rate(gpu_clock_event_seconds_total{gpu=\"" + slowest +
            "\",reason=~\"sw_power_cap|sw_thermal_slowdown|hw_thermal_slowdown|"
            "hw_power_brake_slowdown|hw_slowdown\"}[" +
            w + "])";
        promql::QueryResult r =
            ctx.engine->Range(*ctx.querier, reason_query, d.first_ms, d.last_ms, ctx.step_ms);
        if (r.ok()) {
          for (const promql::Series& rs : r.value().series) {
            double sum = 0, n = 0;
            for (const promql::Point& p : rs.points)
              if (std::isfinite(p.v)) sum += p.v, ++n;
            if (n > 0 && sum / n > share)
              share = sum / n, reason = std::string(tsdb::LabelValue(rs.labels, "reason"));
          }
        }
        const auto [c, words] = ReasonWords(reason);
        cause = c;
        cause_words = words + " (SM clock at " + Percent(clock.at(slowest)) + " of its maximum)";
        f.evidence.push_back(Evidence{"GPU " + slowest + ": SM clock / its maximum (avg)",
                                      clock.at(slowest), "ratio", d.first_ms, d.last_ms,
                                      clock_query});
        if (share > 0)
          f.evidence.push_back(
              Evidence{"GPU " + slowest + ": share of time held down (" + reason + ")", share,
                       "ratio", d.first_ms, d.last_ms, reason_query});
        const std::string limit_query = "gpu_power_limit_watts{gpu=\"" + slowest + "\"}";
        const auto limit = AvgByGpu(ctx, limit_query, d.first_ms, d.last_ms, nullptr, Stat::kMin);
        if (limit.count(slowest) && cause == "power cap") {
          f.evidence.push_back(Evidence{"GPU " + slowest + ": enforced power limit (min)",
                                        limit.at(slowest), "watts", d.first_ms, d.last_ms,
                                        limit_query});
          cause_words += ", power limit " + FormatValue(limit.at(slowest), "watts");
        }
      }
      if (culprit.empty()) {
        const std::string links_query = "gpu_nvlink_links_down{" + sel + "}";
        const auto down = AvgByGpu(ctx, links_query, d.first_ms, d.last_ms, nullptr, Stat::kMax);
        for (const auto& [gpu, n] : down) {
          if (n <= 0) continue;
          culprit = gpu;
          cause = "nvlink down";
          cause_words = "lost " + Rate(n) + " NVLink link" + (n == 1 ? "" : "s") +
                        " (the gradient all-reduce falls back to slower paths)";
          f.evidence.push_back(Evidence{"GPU " + gpu + ": NVLink links down (max)", n, "count",
                                        d.first_ms, d.last_ms, links_query});
          break;
        }
      }
      if (culprit.empty()) {
        const std::string util_query = "gpu_utilization_ratio{" + sel + "}";
        const auto util = AvgByGpu(ctx, util_query, d.first_ms, d.last_ms, nullptr);
        for (const auto& [gpu, u] : util) {
          if (u >= t.busy_utilization || (!culprit.empty() && u >= util.at(culprit))) continue;
          culprit = gpu;
        }
        if (!culprit.empty()) {
          cause = "low activity";
          cause_words = "sits at low SM activity (" + Percent(util.at(culprit)) + " utilization)";
          f.evidence.push_back(Evidence{"GPU " + culprit + ": utilization (avg)", util.at(culprit),
                                        "ratio", d.first_ms, d.last_ms, util_query});
        }
      }
    }
    if (!culprit.empty()) {
      f.severity = Severity::kWarning;
      f.cause = cause + " on GPU " + culprit;
      f.title = head + ": GPU " + culprit + " " + cause_words;
      f.action = cause == "power cap" ? "Restore GPU " + culprit +
                                            "'s power limit (nvidia-smi -q -d POWER shows "
                                            "who lowered it), or move the job off it."
                 : cause == "nvlink down" ? "Have GPU " + culprit +
                                                "'s NVLink checked (nvidia-smi nvlink -s); "
                                                "move the job to GPUs with healthy links."
                 : cause == "low activity"
                     ? "Look at what GPU " + culprit +
                           " waits on: input pipeline, host, "
                           "stragglers in its rank."
                     : "See the device findings of GPU " + culprit +
                           "; the slowest GPU sets the pace of every data-parallel step.";
    } else {
      f.severity = Severity::kInfo;
      f.cause = f.related_gpus.empty() ? "unknown (no GPUs known for this job)" : "not the GPUs";
      f.title = head + (f.related_gpus.empty()
                            ? "; which GPUs it holds is not known"
                            : "; its GPUs showed no throttling, NVLink loss or low activity");
      f.action =
          "Look at the job itself: input pipeline, checkpointing, the network between "
          "nodes, other ranks.";
    }
    f.id = f.kind + "/job=" + f.subject.job;
    ctx.out->findings.push_back(std::move(f));
  }
}

}  // namespace gw::diagnose
