#include "web/chart.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "http/prom_api.h"
#include "http/prom_format.h"
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
  const int64_t range_ms = end_ms - start_ms;
  if (range_ms <= 0 || points <= 0) return;
  // Samples are time-ordered: skip to the first in range, stop at the first past it.
  auto it = std::lower_bound(samples.begin(), samples.end(), start_ms,
                             [](const tsdb::Sample& s, int64_t t) { return s.t_ms < t; });
  for (; it != samples.end() && it->t_ms < end_ms; ++it) {
    const double v = it->v;
    if (!std::isfinite(v)) continue;  // stale markers are NaN; +-Inf cannot be drawn
    // range_ms <= kMaxChartRangeMs and points <= kMaxChartPoints: the product fits in int64.
    const auto i = static_cast<size_t>((it->t_ms - start_ms) * points / range_ms);
    out->min[i] = std::min(out->min[i], v);
    out->max[i] = std::max(out->max[i], v);
    out->sum[i] += v;
    ++out->count[i];
  }
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

Status ChartJson(tsdb::Querier* querier, const ChartQuery& query, std::string* out) {
  std::vector<tsdb::Matcher> matchers;
  auto name = tsdb::Matcher::Make(tsdb::MatchType::kEqual, "__name__", query.metric);
  if (!name.ok()) return name.error();
  matchers.push_back(std::move(*name));
  if (!query.gpu.empty()) {
    auto gpu = tsdb::Matcher::Make(tsdb::MatchType::kEqual, "gpu", query.gpu);
    if (!gpu.ok()) return gpu.error();
    matchers.push_back(std::move(*gpu));
  }
  std::vector<tsdb::SeriesData> series;
  // The store's range is inclusive; the chart's end is exclusive.
  if (Status s = querier->Select(matchers, query.start_ms, query.end_ms - 1, &series); !s.ok())
    return s;

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
  ChartBuckets buckets;
  bool first = true;
  for (const tsdb::SeriesData& s : series) {
    Downsample(s.samples, query.start_ms, query.end_ms, query.points, &buckets);
    if (std::all_of(buckets.count.begin(), buckets.count.end(), [](uint32_t c) { return c == 0; }))
      continue;  // only stale markers or NaN in range
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
