// cli/query_metrics.h — /metrics families about serve's query limits and the process' heap.
//
//   gpuwarden_query_concurrency_max, gpuwarden_query_queue_max      the configured limits
//   gpuwarden_queries{state="running"|"queued"}                     queries now
//   gpuwarden_queries_refused_total{reason="queue_full"|"queue_timeout"}
//   gpuwarden_process_heap_bytes{state="in_use"|"free"}             glibc's mallinfo2
//   gpuwarden_process_heap_trims_total                              malloc_trim calls
#ifndef GPUWARDEN_CLI_QUERY_METRICS_H_
#define GPUWARDEN_CLI_QUERY_METRICS_H_

#include <string>

#include "collect/exposition.h"
#include "promql/gate.h"

namespace gw::cli {

void RenderQueryMetrics(const promql::QueryGate& gate, collect::Format format, std::string* out);

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_QUERY_METRICS_H_
