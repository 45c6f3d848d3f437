// The check runner: conditions as range queries, subjects, held time, evidence, filters.
#include "diagnose/diagnose.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "diagnose/business.h"
#include "diagnose/checks.h"
#include "promql/parser.h"

namespace gw::diagnose {

std::string_view LayerName(Layer layer) {
  switch (layer) {
    case Layer::kDevice:
      return "device";
    case Layer::kTask:
      return "task";
    case Layer::kScheduling:
      return "scheduling";
    case Layer::kGovernance:
      return "governance";
    case Layer::kBusiness:
      return "business";
  }
  return "device";
}

std::string_view SeverityName(Severity severity) {
  switch (severity) {
    case Severity::kCritical:
      return "critical";
    case Severity::kWarning:
      return "warning";
    case Severity::kInfo:
      return "info";
  }
  return "info";
}

std::string Substitute(std::string_view text, const std::map<std::string, std::string>& vars) {
  std::string out;
  out.reserve(text.size() + 64);
  size_t i = 0;
  while (i < text.size()) {
    size_t open = text.find("${", i);
    if (open == std::string_view::npos) break;
    size_t close = text.find('}', open);
    if (close == std::string_view::npos) break;
    out.append(text.substr(i, open - i));
    auto it = vars.find(std::string(text.substr(open + 2, close - open - 2)));
    if (it == vars.end()) {
      out.append(text.substr(open, close + 1 - open));
    } else {
      out += it->second;
    }
    i = close + 1;
  }
  out.append(text.substr(i));
  return out;
}

std::string PromDuration(double seconds) {
  const long s = std::lround(std::max(seconds, 1.0));
  char b[32];
  if (s % 86400 == 0) {
    std::snprintf(b, sizeof b, "%ldd", s / 86400);
  } else if (s % 3600 == 0) {
    std::snprintf(b, sizeof b, "%ldh", s / 3600);
  } else if (s % 60 == 0) {
    std::snprintf(b, sizeof b, "%ldm", s / 60);
  } else {
    std::snprintf(b, sizeof b, "%lds", s);
  }
  return b;
}

std::map<std::string, std::string> ThresholdVars(const Thresholds& t) {
  auto num = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.6g", v);
    return std::string(b);
  };
  return {
      {"busy_utilization", num(t.busy_utilization)},
      {"throttled_share", num(t.throttled_share)},
      {"power_cap_lowered", num(t.power_cap_lowered)},
      {"memory_bound_mem_util", num(t.memory_bound_mem_util)},
      {"memory_bound_factor", num(t.memory_bound_factor)},
      {"memory_pressure", num(t.memory_pressure)},
      {"memory_spike", num(t.memory_spike)},
      {"idle_utilization", num(t.idle_utilization)},
      {"starved_utilization", num(t.starved_utilization)},
      {"thermal_margin_c", num(t.thermal_margin_c)},
      {"ecc_review_count", num(t.ecc_review_count)},
      {"ecc_horizon_s", num(t.ecc_horizon_s)},
      {"queue_wait_p90_s", num(t.queue_wait_p90_s)},
      {"congestion_ratio", num(t.congestion_ratio)},
      {"quota_over", num(t.quota_over)},
      {"quota_under", num(t.quota_under)},
      {"latency_factor", num(t.latency_factor)},
      {"hollow_utilization", num(t.hollow_utilization)},
      {"hollow_sm_active", num(t.hollow_sm_active)},
      {"hollow_occupancy", num(t.hollow_occupancy)},
      {"tensor_idle_sm_active", num(t.tensor_idle_sm_active)},
      {"tensor_idle_ratio", num(t.tensor_idle_ratio)},
      {"nvlink_error_rate", num(t.nvlink_error_rate)},
  };
}

std::string FormatValue(double value, std::string_view unit) {
  char b[64];
  if (!std::isfinite(value)) return "n/a";
  if (unit == "ratio") {
    std::snprintf(b, sizeof b, "%.0f %%", value * 100);
  } else if (unit == "celsius") {
    std::snprintf(b, sizeof b, "%.0f °C", value);
  } else if (unit == "bytes") {
    std::snprintf(b, sizeof b, "%.1f GiB", value / (1024.0 * 1024 * 1024));
  } else if (unit == "watts") {
    std::snprintf(b, sizeof b, "%.0f W", value);
  } else if (unit == "hertz") {
    std::snprintf(b, sizeof b, "%.0f MHz", value / 1e6);
  } else if (unit == "seconds") {
    if (value < 1) {
      std::snprintf(b, sizeof b, "%.0f ms", value * 1000);
    } else {
      return FormatDuration(std::round(value));
    }
  } else if (unit == "per_hour") {
    std::snprintf(b, sizeof b, "%.1f/h", value);
  } else if (unit == "per_second") {
    std::snprintf(b, sizeof b, "%.3g/s", value);
  } else {
    std::snprintf(b, sizeof b, "%.4g", value);
  }
  return b;
}

namespace {

std::string Quote(std::string_view v) {
  std::string out = "\"";
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

double Summarize(const std::vector<promql::Point>& points, Stat stat) {
  double out = std::nan("");
  double sum = 0;
  size_t n = 0;
  for (const promql::Point& p : points) {
    if (std::isnan(p.v)) continue;
    ++n;
    sum += p.v;
    if (n == 1) {
      out = p.v;
    } else if (stat == Stat::kMax) {
      out = std::max(out, p.v);
    } else if (stat == Stat::kMin) {
      out = std::min(out, p.v);
    } else if (stat == Stat::kLast) {
      out = p.v;
    }
  }
  if (stat == Stat::kAvg && n > 0) out = sum / double(n);
  return out;
}

bool BySubjectGpu(const std::string& a, const std::string& b) {
  char* ea = nullptr;
  char* eb = nullptr;
  const long na = std::strtol(a.c_str(), &ea, 10), nb = std::strtol(b.c_str(), &eb, 10);
  if (!a.empty() && !b.empty() && *ea == 0 && *eb == 0 && na != nb) return na < nb;
  return a < b;
}

std::string SubjectKey(const Subject& s) {
  std::string out;
  auto add = [&out](const char* name, const std::string& v) {
    if (v.empty()) return;
    out += (out.empty() ? "" : ",") + std::string(name) + "=" + v;
  };
  add("gpu", s.gpu);
  add("uuid", s.uuid);
  add("partition", s.partition);
  add("team", s.team.empty() || !s.gpu.empty() ? "" : s.team);
  add("target", s.target);
  return out;
}

}  // namespace

namespace {

void SetSubjectLabel(Subject* s, std::string_view name, const std::string& v) {
  if (name == "gpu") s->gpu = v;
  if (name == "uuid") s->uuid = v;
  if (name == "team") s->team = v;
  if (name == "partition") s->partition = v;
  if (name == "target") s->target = v;
  if (name == "job_id") s->job = v;
}

// Adds job and team to a GPU subject from who held the GPU in the window.
void Enrich(Subject* s, const std::vector<Allocation>& allocations) {
  if (s->gpu.empty()) return;
  std::set<std::string> jobs, teams;
  for (const Allocation& a : allocations) {
    if (a.gpu != s->gpu || (!s->uuid.empty() && a.uuid != s->uuid)) continue;
    if (!a.job.empty()) jobs.insert(a.job);
    if (!a.team.empty()) teams.insert(a.team);
  }
  auto join = [](const std::set<std::string>& v) {
    std::string out;
    for (const std::string& x : v) out += (out.empty() ? "" : ",") + x;
    return out;
  };
  s->job = join(jobs);
  s->team = join(teams);
}

void RunCheck(RunContext& ctx, const Check& check) {
  const std::string condition = Substitute(check.condition, ctx.vars);
  promql::QueryResult r =
      ctx.engine->Range(*ctx.querier, condition, ctx.start_ms, ctx.end_ms, ctx.step_ms);
  if (!r.ok()) {
    ctx.out->errors.push_back(std::string(check.kind) + " (" +
                              (check.cause ? check.cause : "by " + std::string(check.cause_label)) +
                              "): " + r.error().message);
    return;
  }
  // The span checked: the data present in the window (Diagnose).
  const double window_s = std::max(double(ctx.step_ms), double(ctx.end_ms - ctx.start_ms)) / 1000;
  const double required = std::min(check.min_held_s, check.min_held_fraction * window_s);
  const double step_s = double(ctx.step_ms) / 1000;
  for (const promql::Series& series : r.value().series) {
    if (series.points.empty()) continue;
    double held_s = double(series.points.size()) * step_s;
    if (check.contiguous) {
      size_t run = 0, longest = 0;
      for (size_t i = 0; i < series.points.size(); ++i) {
        const bool next = i > 0 && series.points[i].t_ms - series.points[i - 1].t_ms == ctx.step_ms;
        run = next ? run + 1 : 1;
        longest = std::max(longest, run);
      }
      held_s = double(longest) * step_s;
    }
    held_s = std::min(held_s, window_s);  // n steps cover the window's both ends
    if (held_s < required) continue;
    Finding f;
    f.kind = check.kind;
    f.layer = check.layer;
    for (const std::string& name : check.subject_labels)
      SetSubjectLabel(&f.subject, name, std::string(tsdb::LabelValue(series.labels, name)));
    Enrich(&f.subject, ctx.out->allocations);
    const std::string raw_cause =
        check.cause ? check.cause : std::string(tsdb::LabelValue(series.labels, check.cause_label));
    f.cause = raw_cause;
    f.since_ms = series.points.front().t_ms;
    f.last_ms = series.points.back().t_ms;
    f.held_s = held_s;
    f.active = f.last_ms + ctx.step_ms / 2 >= ctx.end_ms && ctx.current;
    EvidenceValues values;
    const EvidenceSpec& ce = check.condition_evidence;
    Evidence first{ce.what,  Summarize(series.points, ce.stat), ce.unit, f.since_ms, f.last_ms,
                   condition};
    values[ce.key] = first.value;
    f.evidence.push_back(std::move(first));
    // The subject's matchers, for evidence queries.
    std::string sel;
    for (const std::string& name : check.subject_labels) {
      std::string_view v = tsdb::LabelValue(series.labels, name);
      sel += (sel.empty() ? "" : ",") + name + "=" + Quote(v);
    }
    std::map<std::string, std::string> vars = ctx.vars;
    vars["sel"] = sel;
    vars["cause"] = raw_cause;
    for (const EvidenceSpec& spec : check.evidence) {
      const std::string q = Substitute(spec.query, vars);
      promql::QueryResult e =
          ctx.engine->Range(*ctx.querier, q, f.since_ms, f.last_ms, ctx.step_ms);
      if (!e.ok() || e.value().series.empty()) continue;
      const double v = Summarize(e.value().series.front().points, spec.stat);
      if (std::isnan(v)) continue;
      values[spec.key] = v;
      f.evidence.push_back(Evidence{spec.what, v, spec.unit, f.since_ms, f.last_ms, q});
    }
    check.describe(&f, values, ctx.options->thresholds);
    f.id = f.kind + "/" + raw_cause + "/" + SubjectKey(f.subject);
    ctx.out->findings.push_back(std::move(f));
  }
}

void LoadAllocations(RunContext& ctx) {
  const std::string q = Substitute(queries::kAllocations, ctx.vars);
  promql::QueryResult r = ctx.engine->Instant(*ctx.querier, q, ctx.end_ms);
  if (!r.ok()) {
    ctx.out->errors.push_back("allocations: " + r.error().message);
    return;
  }
  for (const promql::Series& s : r.value().series) {
    ctx.out->allocations.push_back(Allocation{std::string(tsdb::LabelValue(s.labels, "gpu")),
                                              std::string(tsdb::LabelValue(s.labels, "uuid")),
                                              std::string(tsdb::LabelValue(s.labels, "job_id")),
                                              std::string(tsdb::LabelValue(s.labels, "team"))});
  }
}

}  // namespace

std::optional<DataExtent> FindDataExtent(tsdb::Querier& querier, const promql::Engine& engine,
                                         const std::string& selector, int64_t start_ms,
                                         int64_t end_ms) {
  if (end_ms < start_ms) return std::nullopt;
  constexpr int64_t kBuckets = 100;
  // One range query of count_over_time over buckets of `bucket_ms` ending at `hi`: the bucket
  // ends (t) whose (t - bucket, t] holds samples, in time order.
  auto buckets_with_data = [&](int64_t lo, int64_t hi,
                               int64_t bucket_ms) -> std::optional<std::vector<int64_t>> {
    // Enough buckets that (hi - n × bucket, hi] holds lo itself.
    const int64_t n = (hi - lo) / bucket_ms + 1;
    const std::string q =
        "sum(count_over_time(" + selector + "[" + PromDuration(double(bucket_ms) / 1000) + "]))";
    promql::QueryResult r = engine.Range(querier, q, hi - (n - 1) * bucket_ms, hi, bucket_ms);
    if (!r.ok()) return std::nullopt;
    std::vector<int64_t> ends;
    for (const promql::Series& s : r.value().series)
      for (const promql::Point& p : s.points)
        if (p.v > 0) ends.push_back(p.t_ms);
    std::sort(ends.begin(), ends.end());
    return ends;
  };
  auto bucket_for = [](int64_t span_ms) {
    const int64_t ms = (span_ms + kBuckets - 1) / kBuckets;
    return std::max<int64_t>(1000, (ms + 999) / 1000 * 1000);  // whole seconds
  };
  std::vector<tsdb::Matcher> selector_matchers;
  if (auto parsed = promql::Parse(selector);
      parsed.ok() && (*parsed)->kind == promql::ExprKind::kVectorSelector)
    selector_matchers = static_cast<const promql::VectorSelector&>(**parsed).matchers;
  int64_t bucket = bucket_for(end_ms - start_ms);
  auto first_level = buckets_with_data(start_ms, end_ms, bucket);
  if (!first_level || first_level->empty()) return std::nullopt;
  // Narrow each end down to a one-second bucket.
  auto narrow = [&](int64_t t, int64_t width, bool first) -> int64_t {
    while (width > 1000) {
      const int64_t finer = bucket_for(width);
      auto level = buckets_with_data(t - width, t, finer);
      if (!level || level->empty()) break;
      t = first ? level->front() : level->back();
      width = finer;
    }
    // The exact sample within the last one-second bucket (t - width, t].
    std::vector<tsdb::SeriesData> series;
    if (!selector_matchers.empty() &&
        querier.Select(selector_matchers, t - width + 1, t, &series).ok()) {
      int64_t found = first ? INT64_MAX : INT64_MIN;
      for (const tsdb::SeriesData& sd : series)
        for (const tsdb::Sample& p : sd.samples)
          if (!tsdb::IsStaleNaN(p.v))
            found = first ? std::min(found, p.t_ms) : std::max(found, p.t_ms);
      if (found != INT64_MAX && found != INT64_MIN) return found;
    }
    return first ? t - width + 1 : t;  // the bucket (t - width, t]
  };
  DataExtent e;
  e.first_ms = std::max(start_ms, narrow(first_level->front(), bucket, true));
  e.last_ms = std::min(end_ms, narrow(first_level->back(), bucket, false));
  if (e.last_ms < e.first_ms) e.last_ms = e.first_ms;
  return e;
}

std::string CoverageText(double window_s, int64_t data_start_ms, int64_t data_end_ms) {
  const double data_s = double(data_end_ms - data_start_ms) / 1000;
  // A window as people ask for it: "1y", "7d", else "90m", "1h30m".
  const auto whole = static_cast<long long>(std::llround(window_s));
  const std::string window = whole > 0 && whole % (365 * 86400) == 0
                                 ? std::to_string(whole / (365 * 86400)) + "y"
                             : whole > 0 && whole % 86400 == 0 ? std::to_string(whole / 86400) + "d"
                                                               : FormatDuration(window_s);
  if (data_end_ms <= 0) return "the last " + window + " (no data in it)";
  // Coverage within a minute or 2 % of the window reads as the whole window.
  if (data_s >= window_s - std::max(60.0, 0.02 * window_s)) return "the last " + window;
  return "the " + FormatValue(std::max(data_s, 1.0), "seconds") + " of data in the last " + window;
}

Expected<Diagnosis> Diagnose(tsdb::Querier& querier, const promql::Engine& engine,
                             const Options& options) {
  if (!(options.window_s >= 60)) return Error{"the window (--since) must be at least 1m"};
  if (options.time_ms <= 0) return Error{"no evaluation time"};
  Diagnosis out;
  out.time_ms = options.time_ms;
  out.window_s = options.window_s;
  const int64_t window_start_ms = options.time_ms - static_cast<int64_t>(options.window_s * 1000);
  // The checks run over the data present: a year asked of four minutes of data is four minutes.
  int64_t start_ms = window_start_ms, end_ms = options.time_ms;
  if (auto extent = FindDataExtent(querier, engine, "gpu_up", window_start_ms, options.time_ms)) {
    out.data_start_ms = extent->first_ms;
    out.data_end_ms = extent->last_ms;
    start_ms = extent->first_ms;
    end_ms = std::max(extent->last_ms, extent->first_ms);
  }
  std::vector<tsdb::Matcher> up = {
      *tsdb::Matcher::Make(tsdb::MatchType::kEqual, "__name__", "gpu_up")};
  for (const char* label : {"gpu", "uuid"}) {
    std::vector<std::string> values;
    if (querier.LabelValues(label, {up}, window_start_ms, options.time_ms, &values).ok())
      out.gpus.insert(out.gpus.end(), values.begin(), values.end());
  }
  const double span_s = std::max(0.0, double(end_ms - start_ms) / 1000);
  // About 120 steps over the data, never finer than 15 s (a Prometheus scrape), the last one at
  // the end of the data.
  const double step_s = std::max(15.0, std::round(span_s / 120));
  const auto step_ms = static_cast<int64_t>(step_s * 1000);
  start_ms = end_ms - (end_ms - start_ms) / step_ms * step_ms;
  out.step_s = step_s;
  const double w = std::max(300.0, 2 * step_s);
  const double long_w = std::max(w, std::min(options.window_s, 6 * 3600.0));
  RunContext ctx;
  ctx.querier = &querier;
  ctx.engine = &engine;
  ctx.options = &options;
  ctx.end_ms = end_ms;
  ctx.start_ms = start_ms;
  ctx.step_ms = step_ms;
  ctx.vars = ThresholdVars(options.thresholds);
  ctx.vars["w"] = PromDuration(w);
  ctx.vars["long"] = PromDuration(long_w);
  ctx.vars["window"] = PromDuration(options.window_s);
  ctx.out = &out;
  // Data that ended well before the evaluation time makes no finding "still active".
  ctx.current =
      end_ms >= options.time_ms - static_cast<int64_t>(std::max(300.0, 2 * step_s) * 1000);
  LoadAllocations(ctx);
  for (const Check& check : Checks()) RunCheck(ctx, check);
  RunBusinessChecks(ctx);
  std::stable_sort(out.findings.begin(), out.findings.end(),
                   [](const Finding& a, const Finding& b) {
                     if (a.layer != b.layer) return a.layer < b.layer;
                     if (a.severity != b.severity) return a.severity < b.severity;
                     if (a.subject.gpu != b.subject.gpu)
                       return BySubjectGpu(a.subject.gpu, b.subject.gpu);
                     return a.id < b.id;
                   });
  return out;
}

const std::vector<KindLayer>& Kinds() {
  static const std::vector<KindLayer> kinds = [] {
    std::vector<KindLayer> out;
    for (const Check& check : Checks()) {
      bool seen = false;
      for (const KindLayer& k : out) seen = seen || k.kind == check.kind;
      if (!seen) out.push_back(KindLayer{check.kind, check.layer});
    }
    out.push_back(KindLayer{"business-latency", Layer::kBusiness});
    return out;
  }();
  return kinds;
}

Diagnosis Filter(const Diagnosis& diagnosis, const FindingFilter& filter) {
  if (filter.gpu.empty() && filter.job.empty() && filter.team.empty()) return diagnosis;
  Diagnosis out = diagnosis;
  out.findings.clear();
  // The GPUs the job or team held in the window.
  std::set<std::string> gpus;
  for (const Allocation& a : diagnosis.allocations) {
    if ((!filter.job.empty() && a.job == filter.job) ||
        (!filter.team.empty() && a.team == filter.team)) {
      gpus.insert(a.gpu);
      gpus.insert(a.uuid);
    }
  }
  if (!filter.gpu.empty()) gpus.insert(filter.gpu);
  auto on_gpus = [&gpus](const Finding& f) {
    if (!f.subject.gpu.empty() && (gpus.count(f.subject.gpu) || gpus.count(f.subject.uuid)))
      return true;
    for (const std::string& g : f.related_gpus)
      if (gpus.count(g)) return true;
    return false;
  };
  for (const Finding& f : diagnosis.findings) {
    bool keep = on_gpus(f);
    if (!filter.team.empty() && f.subject.gpu.empty() && f.subject.team == filter.team) keep = true;
    if (keep) out.findings.push_back(f);
  }
  return out;
}

}  // namespace gw::diagnose
