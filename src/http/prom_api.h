// http/prom_api.h — Prometheus' HTTP query API (2.42) over gpuwarden's store.
//
//   GET|POST /api/v1/query              query, time, timeout
//   GET|POST /api/v1/query_range        query, start, end, step, timeout
//   GET|POST /api/v1/series             match[], start, end
//   GET|POST /api/v1/labels             match[], start, end
//   GET      /api/v1/label/<name>/values match[], start, end
//   GET      /api/v1/status/buildinfo
//
// Shapes, value and timestamp formatting, error types and HTTP codes, the 11,000-points limit
// and the error wording follow Prometheus 2.42 so Grafana, promtool and PromQL clients work
// unchanged. Every handler reads the store through a fresh tsdb::Querier; none touches NVML.
#ifndef GPUWARDEN_HTTP_PROM_API_H_
#define GPUWARDEN_HTTP_PROM_API_H_

#include <functional>
#include <memory>
#include <string>

#include "base/clock.h"
#include "http/server.h"
#include "promql/engine.h"
#include "tsdb/storage.h"

namespace gw::http {

struct PromApiOptions {
  std::string version;  // reported by /api/v1/status/buildinfo
  promql::EngineOptions engine;
  // The time of an instant query without `time` (must outlive the server).
  const Clock* clock = &SystemClock();
};

// A fresh reader of the store for one request.
using QuerierFactory = std::function<std::unique_ptr<tsdb::Querier>()>;

// Registers the routes above on `server` (before Start). `queriers` must outlive the server.
void RegisterPromApi(Server* server, QuerierFactory queriers, PromApiOptions options);

// Writes the API's error document, {"status":"error","errorType":TYPE,"error":MESSAGE}, with HTTP
// `status` — for every gpuwarden JSON endpoint that answers in the Prometheus API's shape.
void WriteApiError(Response& res, int status, std::string_view error_type,
                   std::string_view message);

// The JSON body of a successful query (exposed for tests and the CLI).
std::string QueryResultJson(const promql::Value& value);

}  // namespace gw::http

#endif  // GPUWARDEN_HTTP_PROM_API_H_
