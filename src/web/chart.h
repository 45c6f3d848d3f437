// web/chart.h — server-side downsampling for the console's charts.
//
//   GET
//   /api/gw/v1/chart?metric=gpu_temperature_celsius&gpu=3&start=1700000000&end=1700086400&points=600
//
// Every series of `metric` (optionally of one GPU) with samples in [start, end) is cut into
// `points` equal buckets; each bucket reports the min, max and mean of the samples in it, so a
// day at 1 s (86,400 samples per GPU) comes back as a few hundred numbers per series and a
// spike between two pixels is still drawn (min/max keep it). Stale markers (a GPU lost, a series
// gone) are skipped; NaN values are skipped; a bucket without samples is null.
//
// Response (JSON, columns rather than objects so a 600-point chart of 8 GPUs stays small):
//   {"status":"success","data":{"metric":"...","start":S,"end":E,"step":STEP,"points":N,
//     "series":[{"labels":{"gpu":"3","uuid":"..."},"min":[...],"max":[...],"avg":[...]}, ...]}}
// Bucket i covers [start + i*step, start + (i+1)*step) seconds; arrays have `points` entries.
// Errors: {"status":"error","errorType":"bad_data","error":"..."} with 400, as the Prometheus
// API's.
//
// Parameters: metric (required, a metric name), gpu (optional, the GPU index), start and end
// (Unix seconds or RFC 3339, as the Prometheus API takes; default: the last hour up to now),
// points (1..kMaxChartPoints, default kDefaultChartPoints).
//
// Long ranges from rollups (docs/tsdb-format.md, "Which queries read rollups"): when every bucket
// is a whole number of 5-minute rollup windows (start a multiple of 5 minutes, end - start =
// points x a multiple of 5 minutes: what the console asks for ranges of a day and more), a
// window's min, max, sum and count come from its rollup (Querier::SelectRollups) wherever the
// rollup stands exactly for the window's drawable samples — format 3 and no +-Inf sample (NaN
// and stale markers are left out of both) — and every matching series has one there; the other
// windows (the head's recent ones, gaps, series that come and go) are read raw, in at most
// kMaxChartRawReads reads. The answer is the raw one: min, max and count exactly, avg to float
// rounding (sums of window sums; tests/web/chart_test.cpp compares both on a week of data).
// Other grids read raw samples only (a bucket edge inside a window cannot be split).
//
// Cost: one Querier::SelectRuns (the store's normal read path without a copy, no NVML call), or
// with rollups one SelectRollups plus the raw reads above; one pass over the samples, output
// written straight into the response string. Thread-safe: each call owns its state; the querier
// factory must be callable from any thread.
#ifndef GPUWARDEN_WEB_CHART_H_
#define GPUWARDEN_WEB_CHART_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "http/server.h"
#include "tsdb/storage.h"

namespace gw::web {

inline constexpr int kDefaultChartPoints = 600;
inline constexpr int kMaxChartPoints = 4000;
// Longest range a chart may span: beyond it the request is refused rather than read.
inline constexpr int64_t kMaxChartRangeMs = 400LL * 24 * 3600 * 1000;
// Most raw reads a chart from rollups makes for the windows rollups cannot answer.
inline constexpr size_t kMaxChartRawReads = 16;

struct ChartQuery {
  std::string metric;
  std::string gpu;  // "" = every GPU
  int64_t start_ms = 0, end_ms = 0;
  int points = kDefaultChartPoints;
};

// Reads a ChartQuery from request parameters; `now_ms` fills in a missing end (and start = end -
// 1 h). Errors name the parameter ("points: expected an integer from 1 to 4000, got 'x'").
Expected<ChartQuery> ParseChartQuery(const http::Request& req, int64_t now_ms);

// Per-bucket statistics of one series. Buckets without a sample have count 0.
struct ChartBuckets {
  std::vector<double> min, max, sum;
  std::vector<uint32_t> count;
  void Reset(int points);
};

// Adds the samples of [start_ms, end_ms) to `points` buckets (others, stale markers and NaN are
// ignored). `out` is reset first; its vectors keep their capacity across calls.
void Downsample(const std::vector<tsdb::Sample>& samples, int64_t start_ms, int64_t end_ms,
                int points, ChartBuckets* out);

struct ChartOptions {
  bool rollups = true;  // false: raw samples only (benches and tests compare the two)
};

// Whether `query`'s buckets are whole rollup windows, so that a chart may read rollups.
bool ChartGridFitsRollups(const ChartQuery& query);

// One series' buckets, as ChartJson writes them.
struct ChartSeries {
  tsdb::Labels labels;
  ChartBuckets buckets;
};

// The buckets of every series of the query with at least one drawable sample, in label order.
Status ChartSeriesOf(tsdb::Querier* querier, const ChartQuery& query, const ChartOptions& options,
                     std::vector<ChartSeries>* out);

// Runs the query against `querier` and writes the JSON body above into `out`.
Status ChartJson(tsdb::Querier* querier, const ChartQuery& query, std::string* out,
                 const ChartOptions& options = {});

using QuerierFactory = std::function<std::unique_ptr<tsdb::Querier>()>;
using NowMs = std::function<int64_t()>;

// Registers GET /api/gw/v1/chart. `now_ms` is the time a request without `end` ends at (the
// latest collected snapshot's time, so a simulated clock is followed).
void RegisterChartApi(http::Server* server, QuerierFactory queriers, NowMs now_ms);

}  // namespace gw::web

#endif  // GPUWARDEN_WEB_CHART_H_
