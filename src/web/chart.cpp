#include "web/chart.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "http/prom_api.h"
#include "http/prom_format.h"
#include "tsdb/rollup.h"
#include "web/json_text.h"

namespace gw::web {

namespace {

// Tells whether `text` is a whole decimal number in [lo, hi]; stores it in `out`.
bool ParseIntIn(const std::string& text, int lo, int hi, int* out) {
  int v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool IsGpuIndex(const std::string& text) {
  return !text.empty() && text.size() <= 6 &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// One bucket's value column: null where the bucket is empty (or the value is not finite).
template <typename ValueOf>
void AppendColumn(std::string* out, const ChartBuckets& b, ValueOf value_of) {
  out->push_back('[');
  for (size_t i = 0; i < b.count.size(); ++i) {
    if (i) out->push_back(',');
    if (b.count[i] == 0) {
      out->append("null");
      continue;
    }
    AppendJsonNumber(out, value_of(i));
  }
  out->push_back(']');
}

// Adds the drawable samples of `run` (time-ordered) in [start_ms, end_ms) to `points` buckets.
// `skip(t)` leaves out samples that rollups already counted.
template <typename Skip>
void AddRun(std::span<const tsdb::Sample> run, int64_t start_ms, int64_t end_ms, int points,
            ChartBuckets* out, Skip skip) {
  const int64_t range_ms = end_ms - start_ms;
  if (range_ms <= 0 || points <= 0) return;
  // Samples are time-ordered: skip to the first in range, stop at the first past it.
  auto it = std::lower_bound(run.begin(), run.end(), start_ms,
                             [](const tsdb::Sample& s, int64_t t) { return s.t_ms < t; });
  for (; it != run.end() && it->t_ms < end_ms; ++it) {
    const double v = it->v;
    if (!std::isfinite(v)) continue;  // stale markers are NaN; +-Inf cannot be drawn
    if (skip(it->t_ms)) continue;
    // range_ms <= kMaxChartRangeMs and points <= kMaxChartPoints: the product fits in int64.
    const auto i = static_cast<size_t>((it->t_ms - start_ms) * points / range_ms);
    out->min[i] = std::min(out->min[i], v);
    out->max[i] = std::max(out->max[i], v);
    out->sum[i] += v;
    ++out->count[i];
  }
}

void AddSamples(std::span<const tsdb::Sample> samples, int64_t start_ms, int64_t end_ms, int points,
                ChartBuckets* out) {
  AddRun(samples, start_ms, end_ms, points, out, [](int64_t) { return false; });
}

// A rollup stands exactly for the drawable samples of its window: format 3 (every field known)
// and no +-Inf among its numeric samples (the chart leaves those out, the rollup would not).
bool ChartUsable(const tsdb::Rollup& r) {
  return r.exact && (r.count == 0 || (std::isfinite(r.min) && std::isfinite(r.max)));
}

// Sorted, disjoint [lo, hi] intervals cut down to at most `max_reads` by joining the neighbours
// across the narrowest gaps (reading a little more raw data than needed, in fewer reads).
std::vector<std::pair<int64_t, int64_t>> FewerReads(std::vector<std::pair<int64_t, int64_t>> iv,
                                                    size_t max_reads) {
  if (iv.size() <= max_reads || max_reads == 0) return iv;
  if (max_reads == 1) return {{iv.front().first, iv.back().second}};
  std::vector<int64_t> gaps;
  for (size_t i = 1; i < iv.size(); ++i) gaps.push_back(iv[i].first - iv[i - 1].second);
  // The (max_reads - 1) widest gaps stay open; ties at the threshold are closed from the left.
  std::vector<int64_t> sorted = gaps;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<ptrdiff_t>(max_reads - 2),
                   sorted.end(), std::greater<>());
  const int64_t threshold = sorted[max_reads - 2];
  size_t wider = 0;
  for (int64_t g : gaps) wider += g > threshold;
  size_t ties_open = max_reads - 1 - wider;
  std::vector<std::pair<int64_t, int64_t>> out{iv[0]};
  for (size_t i = 1; i < iv.size(); ++i) {
    const int64_t g = gaps[i - 1];
    bool open = g > threshold;
    if (!open && g == threshold && ties_open > 0) {
      open = true;
      --ties_open;
    }
    if (open) {
      out.push_back(iv[i]);
    } else {
      out.back().second = iv[i].second;
    }
  }
  return out;
}

// One series of a chart read from rollups: its rollups and its raw runs.
struct Gathered {
  std::vector<tsdb::Rollup> rollups;
  std::vector<std::span<const tsdb::Sample>> runs;
  std::vector<std::shared_ptr<const std::vector<tsdb::Sample>>> owners;
};

}  // namespace

void ChartBuckets::Reset(int points) {
  const auto n = static_cast<size_t>(points);
  min.assign(n, std::numeric_limits<double>::infinity());
  max.assign(n, -std::numeric_limits<double>::infinity());
  sum.assign(n, 0.0);
  count.assign(n, 0);
}

void Downsample(const std::vector<tsdb::Sample>& samples, int64_t start_ms, int64_t end_ms,
                int points, ChartBuckets* out) {
  out->Reset(points);
  AddSamples(samples, start_ms, end_ms, points, out);
}

Expected<ChartQuery> ParseChartQuery(const http::Request& req, int64_t now_ms) {
  ChartQuery q;
  q.metric = req.param("metric");
  if (q.metric.empty()) return Error{"metric: required (a metric name such as gpu_power_watts)"};
  if (!tsdb::IsValidMetricName(q.metric))
    return Error{"metric: '" + q.metric + "' is not a valid metric name"};
  q.gpu = req.param("gpu");
  if (!q.gpu.empty() && !IsGpuIndex(q.gpu))
    return Error{"gpu: expected a GPU index such as 0 or 3, got '" + q.gpu + "'"};
  const std::string end = req.param("end"), start = req.param("start");
  q.end_ms = now_ms;
  if (!end.empty() && !http::ParsePromTime(end, &q.end_ms))
    return Error{"end: expected Unix seconds or RFC 3339, got '" + end + "'"};
  q.start_ms = q.end_ms - 3600 * 1000;
  if (!start.empty() && !http::ParsePromTime(start, &q.start_ms))
    return Error{"start: expected Unix seconds or RFC 3339, got '" + start + "'"};
  if (q.end_ms <= q.start_ms) return Error{"end: must be after start"};
  int64_t span_ms = 0;  // a far-out start or end must not overflow the subtraction
  if (__builtin_sub_overflow(q.end_ms, q.start_ms, &span_ms) || span_ms > kMaxChartRangeMs)
    return Error{"start: the range may span at most 400 days"};
  if (const std::string points = req.param("points"); !points.empty()) {
    if (!ParseIntIn(points, 1, kMaxChartPoints, &q.points))
      return Error{"points: expected an integer from 1 to " + std::to_string(kMaxChartPoints) +
                   ", got '" + points + "'"};
  }
  return q;
}

bool ChartGridFitsRollups(const ChartQuery& query) {
  constexpr int64_t kWin = tsdb::kRollupWindowMs;
  const int64_t range_ms = query.end_ms - query.start_ms;
  if (query.points <= 0 || range_ms <= 0 || range_ms % query.points != 0) return false;
  const int64_t step_ms = range_ms / query.points;
  return step_ms % kWin == 0 && tsdb::RollupWindowStart(query.start_ms) == query.start_ms;
}

Status ChartSeriesOf(tsdb::Querier* querier, const ChartQuery& query, const ChartOptions& options,
                     std::vector<ChartSeries>* out) {
  out->clear();
  std::vector<tsdb::Matcher> matchers;
  auto name = tsdb::Matcher::Make(tsdb::MatchType::kEqual, "__name__", query.metric);
  if (!name.ok()) return name.error();
  matchers.push_back(std::move(*name));
  if (!query.gpu.empty()) {
    auto gpu = tsdb::Matcher::Make(tsdb::MatchType::kEqual, "gpu", query.gpu);
    if (!gpu.ok()) return gpu.error();
    matchers.push_back(std::move(*gpu));
  }
  const int64_t start_ms = query.start_ms, end_ms = query.end_ms;
  const int points = query.points;
  auto keep = [&](tsdb::Labels labels, const ChartBuckets& b) {
    if (std::all_of(b.count.begin(), b.count.end(), [](uint32_t c) { return c == 0; }))
      return;  // only stale markers or NaN in range
    out->push_back(ChartSeries{std::move(labels), b});
  };
  std::vector<tsdb::SeriesRollups> rolls;
  bool supported = false;
  if (options.rollups && ChartGridFitsRollups(query)) {
    // The store's range is inclusive; the chart's end is exclusive.
    if (Status s = querier->SelectRollups(matchers, start_ms, end_ms - 1, &rolls, &supported);
        !s.ok())
      return s;
  }
  ChartBuckets buckets;
  if (!supported) {  // raw samples throughout
    std::vector<tsdb::SeriesRuns> series;
    if (Status s = querier->SelectRuns(matchers, start_ms, end_ms - 1, &series); !s.ok()) return s;
    for (tsdb::SeriesRuns& s : series) {
      buckets.Reset(points);
      for (const auto& run : s.runs) AddSamples(run, start_ms, end_ms, points, &buckets);
      keep(std::move(s.labels), buckets);
    }
    return Status::Ok();
  }
  // Window w is [start + w * 5 min, start + (w + 1) * 5 min); each lies in one bucket. It is read
  // from rollups when every series has a usable rollup there or none in a window complete for it
  // (no sample there: tsdb::CoveredWindows).
  constexpr int64_t kWin = tsdb::kRollupWindowMs;
  const size_t nw = static_cast<size_t>((end_ms - start_ms) / kWin);
  const std::vector<uint8_t> covered = tsdb::CoveredWindows(rolls, start_ms, nw, ChartUsable);
  std::vector<std::pair<int64_t, int64_t>> reads;  // the other windows, inclusive bounds
  for (size_t w = 0; w < nw; ++w) {
    if (covered[w]) continue;
    const int64_t lo = start_ms + static_cast<int64_t>(w) * kWin;
    if (!reads.empty() && reads.back().second + 1 == lo) {
      reads.back().second = lo + kWin - 1;
    } else {
      reads.emplace_back(lo, lo + kWin - 1);
    }
  }
  std::map<tsdb::Labels, Gathered> by_labels;
  for (tsdb::SeriesRollups& s : rolls)
    by_labels[std::move(s.labels)].rollups = std::move(s.rollups);
  std::vector<tsdb::SeriesRuns> runs;
  for (const auto& [lo, hi] : FewerReads(std::move(reads), kMaxChartRawReads)) {
    runs.clear();
    if (Status s = querier->SelectRuns(matchers, lo, hi, &runs); !s.ok()) return s;
    for (tsdb::SeriesRuns& s : runs) {
      Gathered& g = by_labels[s.labels];
      g.runs.insert(g.runs.end(), s.runs.begin(), s.runs.end());
      g.owners.insert(g.owners.end(), s.owners.begin(), s.owners.end());
    }
  }
  const int64_t step_ms = (end_ms - start_ms) / points;
  auto in_covered = [&](int64_t t) {
    return covered[static_cast<size_t>((t - start_ms) / kWin)] != 0;
  };
  for (auto& [labels, g] : by_labels) {
    buckets.Reset(points);
    for (const tsdb::Rollup& r : g.rollups) {
      if (r.t_ms < start_ms || r.t_ms + kWin > end_ms || !in_covered(r.t_ms) || r.count == 0)
        continue;
      const auto i = static_cast<size_t>((r.t_ms - start_ms) / step_ms);
      buckets.min[i] = std::min(buckets.min[i], r.min);
      buckets.max[i] = std::max(buckets.max[i], r.max);
      buckets.sum[i] += r.sum;
      buckets.count[i] += static_cast<uint32_t>(r.count);
    }
    for (const auto& run : g.runs) AddRun(run, start_ms, end_ms, points, &buckets, in_covered);
    keep(labels, buckets);
  }
  return Status::Ok();
}

Status ChartJson(tsdb::Querier* querier, const ChartQuery& query, std::string* out,
                 const ChartOptions& options) {
  std::vector<ChartSeries> series;
  if (Status s = ChartSeriesOf(querier, query, options, &series); !s.ok()) return s;

  out->clear();
  // About 3 columns x points x ~8 bytes per series.
  out->reserve(256 + series.size() * (static_cast<size_t>(query.points) * 24 + 128));
  out->append(R"({"status":"success","data":{"metric":)");
  AppendJsonString(out, query.metric);
  out->append(",\"start\":");
  http::AppendPromTimestamp(out, query.start_ms);
  out->append(",\"end\":");
  http::AppendPromTimestamp(out, query.end_ms);
  out->append(",\"step\":");
  AppendJsonNumber(out, double(query.end_ms - query.start_ms) / 1000.0 / query.points);
  out->append(",\"points\":");
  out->append(std::to_string(query.points));
  out->append(",\"series\":[");
  bool first = true;
  for (const ChartSeries& s : series) {
    const ChartBuckets& buckets = s.buckets;
    if (!first) out->push_back(',');
    first = false;
    out->append("{\"labels\":{");
    bool first_label = true;
    for (const tsdb::Label& l : s.labels) {
      if (l.name == "__name__") continue;
      if (!first_label) out->push_back(',');
      first_label = false;
      AppendJsonString(out, l.name);
      out->push_back(':');
      AppendJsonString(out, l.value);
    }
    out->append("},\"min\":");
    AppendColumn(out, buckets, [&](size_t i) { return buckets.min[i]; });
    out->append(",\"max\":");
    AppendColumn(out, buckets, [&](size_t i) { return buckets.max[i]; });
    out->append(",\"avg\":");
    AppendColumn(out, buckets, [&](size_t i) { return buckets.sum[i] / buckets.count[i]; });
    out->push_back('}');
  }
  out->append("]}}");
  return Status::Ok();
}

void RegisterChartApi(http::Server* server, QuerierFactory queriers, NowMs now_ms) {
  server->Get("/api/gw/v1/chart", [queriers = std::move(queriers), now_ms = std::move(now_ms)](
                                      const http::Request& req, http::Response& res) {
    res.content_type = "application/json";
    auto query = ParseChartQuery(req, now_ms());
    if (!query.ok()) return http::WriteApiError(res, 400, "bad_data", query.error().message);
    auto querier = queriers();
    if (Status s = ChartJson(querier.get(), *query, &res.body); !s.ok())
      http::WriteApiError(res, 500, "internal", s.message());
  });
}

}  // namespace gw::web
