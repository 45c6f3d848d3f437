// http/prom_api.h — Prometheus' HTTP query API (2.42) over gpuwarden's store.
//
//   GET|POST /api/v1/query              query, time, timeout
//   GET|POST /api/v1/query_range        query, start, end, step, timeout
//   GET|POST /api/v1/series             match[], start, end
//   GET|POST /api/v1/labels             match[], start, end
//   GET      /api/v1/label/<name>/values match[], start, end
//   GET|POST /api/v1/metadata           limit, limit_per_metric, metric
//   GET|POST /api/v1/query_exemplars    query, start, end (no exemplars are kept: [] when valid)
//   GET      /api/v1/targets            state=active|dropped|any
//   GET      /api/v1/targets/metadata   match_target, metric, limit
//   GET|POST /api/v1/format_query       query
//   GET      /api/v1/status/tsdb        head stats and the top-10 cardinality lists
//   GET      /api/v1/status/runtimeinfo, /api/v1/status/flags, /api/v1/status/config,
//            /api/v1/status/buildinfo, /api/v1/status/walreplay
//
// Shapes, value and timestamp formatting, error types and HTTP codes, the 11,000-points limit
// and the error wording follow Prometheus 2.42 so Grafana, promtool and PromQL clients work
// unchanged (docs/prometheus-notes.md, "HTTP API"). Query handlers read the store through a fresh
// tsdb::Querier, the status handlers what the options below hand them; none touches NVML or the
// disk.
#ifndef GPUWARDEN_HTTP_PROM_API_H_
#define GPUWARDEN_HTTP_PROM_API_H_

#include <functional>
#include <memory>
#include <string>

#include "base/clock.h"
#include "http/server.h"
#include "promql/engine.h"
#include "tsdb/head.h"
#include "tsdb/storage.h"

namespace gw::http {

// One scrape target as /api/v1/targets lists it.
struct TargetInfo {
  std::string pool;                // scrapePool
  std::string url;                 // scrapeUrl
  tsdb::Labels labels;             // what its series carry
  tsdb::Labels discovered_labels;  // __address__, __scheme__, ... as Prometheus names them
  std::string health = "unknown";  // up | down | unknown (not scraped yet)
  std::string last_error;          // "" while up
  int64_t last_scrape_ms = 0;      // start of the last scrape; 0: never scraped
  double last_scrape_duration_s = 0;
  double interval_s = 0, timeout_s = 0;  // scrapeInterval, scrapeTimeout
};

// HELP, TYPE and UNIT of one metric (/api/v1/metadata). `type` in Prometheus' words: counter,
// gauge, histogram, gaugehistogram, summary, info, stateset or unknown.
struct MetricMetadata {
  std::string metric, type, help, unit;
};

// The metadata of every family of an exposition page: HELP and TYPE from `text` (names and types
// as written there: `x_total` for a counter in text 0.0.4, `x` in OpenMetrics), units from the
// `# UNIT` lines of `openmetrics` (the same page in OpenMetrics, or the same text when the page
// is OpenMetrics already; may be empty). Sorted by metric, one entry per metric.
std::vector<MetricMetadata> MetadataFromExposition(std::string_view text,
                                                   std::string_view openmetrics);

// One metric's metadata as a scrape target's last page gave it (/api/v1/targets/metadata):
// `target` is the target's labels (TargetInfo::labels).
struct TargetMetadata {
  tsdb::Labels target;
  MetricMetadata metadata;
};

// /api/v1/status/runtimeinfo.
struct RuntimeInfo {
  int64_t start_time_ms = 0;
  std::string cwd;
  bool reload_config_success = true;
  int64_t last_config_time_ms = 0;
  std::string storage_retention;  // "15d"
  uint64_t corruption_count = 0;  // damaged WAL stretches found when the store opened
};

struct PromApiOptions {
  std::string version;  // reported by /api/v1/status/buildinfo
  promql::EngineOptions engine;
  // The time of an instant query without `time` (must outlive the server).
  const Clock* clock = &SystemClock();

  // Each called per request, on an HTTP worker; empty: nothing (no targets, no metadata).
  std::function<std::vector<TargetInfo>()> targets;
  std::function<std::vector<MetricMetadata>()> metadata;
  // Per target in /api/v1/targets' order, its metrics' metadata (a target's entries together).
  std::function<std::vector<TargetMetadata>()> target_metadata;
  std::function<RuntimeInfo()> runtime;
  // /api/v1/status/tsdb reads the store's series index here (must outlive the server); none:
  // empty statistics.
  const tsdb::Head* head = nullptr;
  // /api/v1/status/flags: flag name (without dashes) -> effective value, sorted by name.
  std::vector<std::pair<std::string, std::string>> flags;
  std::string config_yaml;  // /api/v1/status/config: the effective configuration
};

// A fresh reader of the store for one request.
using QuerierFactory = std::function<std::unique_ptr<tsdb::Querier>()>;

// Registers the routes above on `server` (before Start). `queriers` must outlive the server.
void RegisterPromApi(Server* server, QuerierFactory queriers, PromApiOptions options);

// Writes the API's error document, {"status":"error","errorType":TYPE,"error":MESSAGE}, with HTTP
// `status` — for every gpuwarden JSON endpoint that answers in the Prometheus API's shape.
void WriteApiError(Response& res, int status, std::string_view error_type,
                   std::string_view message);

// /api/v1/status/tsdb's figures: the head's totals and, for each list, the `top` largest entries
// (count descending, then name ascending).
struct TsdbStatus {
  uint64_t num_series = 0, num_label_pairs = 0, chunk_count = 0;
  int64_t min_time_ms = 0, max_time_ms = 0;
  using Top = std::vector<std::pair<std::string, uint64_t>>;
  Top series_count_by_metric_name, label_value_count_by_label_name, memory_in_bytes_by_label_name,
      series_count_by_label_value_pair;
};
// Computed from the series index alone (labels of every series; no sample is decoded).
TsdbStatus ComputeTsdbStatus(const tsdb::Head& head, size_t top = 10);
std::string TsdbStatusJson(const TsdbStatus& status);

// The JSON body of a successful query (exposed for tests and the CLI).
std::string QueryResultJson(const promql::Value& value);

}  // namespace gw::http

#endif  // GPUWARDEN_HTTP_PROM_API_H_
