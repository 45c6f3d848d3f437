// serve/query_metrics.h — serve's query limits: the engine options every query path uses, and
// the /metrics families about the limits and the process' heap.
//
//   gpuwarden_query_concurrency_max, gpuwarden_query_queue_max      the configured limits
//   gpuwarden_queries{state="running"|"queued"}                     queries now
//   gpuwarden_queries_refused_total{reason="queue_full"|"queue_timeout"}
//   gpuwarden_process_heap_bytes{state="in_use"|"free"}             glibc's mallinfo2
//   gpuwarden_process_heap_trims_total                              malloc_trim calls
//   gpuwarden_process_heap_huge_pages                               1: heap in huge pages
#ifndef GPUWARDEN_SERVE_QUERY_METRICS_H_
#define GPUWARDEN_SERVE_QUERY_METRICS_H_

#include <string>

#include "collect/exposition.h"
#include "config/config.h"
#include "promql/engine.h"
#include "promql/gate.h"

namespace gw::serve {

// The evaluation limits of config.query (timeout, max samples), without a gate: for rules and
// `gpuwarden query`. serve's query API adds its gate (query.max_concurrency, query.max_queued).
promql::EngineOptions QueryEngineOptions(const config::Config& config);

void RenderQueryMetrics(const promql::QueryGate& gate, collect::Format format, std::string* out);

}  // namespace gw::serve

#endif  // GPUWARDEN_SERVE_QUERY_METRICS_H_
