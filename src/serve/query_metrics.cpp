#include "serve/query_metrics.h"

#include "base/heap.h"
#include "serve/jobs_series.h"

namespace gw::serve {

promql::EngineOptions QueryEngineOptions(const config::Config& config) {
  promql::EngineOptions o;
  o.timeout_s = config.query.timeout_s;
  o.max_samples = static_cast<size_t>(config.query.max_samples);
  return o;
}

void RenderQueryMetrics(const promql::QueryGate& gate, collect::Format format, std::string* out) {
  ExpositionSink sink(format, out);
  const promql::QueryGate::Figures f = gate.figures();
  sink.Family("gpuwarden_query_concurrency_max", "gauge", "",
              "Queries the query API evaluates at once (query.max_concurrency).");
  sink.Sample("gpuwarden_query_concurrency_max", {}, gate.options().max_concurrency);
  sink.Family("gpuwarden_query_queue_max", "gauge", "",
              "Queries that may wait for an evaluation slot (query.max_queued).");
  sink.Sample("gpuwarden_query_queue_max", {}, gate.options().max_queued);
  sink.Family("gpuwarden_queries", "gauge", "",
              "Queries of the query API now, evaluating (running) or waiting (queued).");
  TaskLabel running[] = {{"state", "running"}}, queued[] = {{"state", "queued"}};
  sink.Sample("gpuwarden_queries", running, f.running);
  sink.Sample("gpuwarden_queries", queued, f.queued);
  sink.Family("gpuwarden_queries_refused_total", "counter", "",
              "Queries answered 503 before evaluation: the queue was full, or the query timed out "
              "while waiting.");
  TaskLabel full[] = {{"reason", "queue_full"}}, timeout[] = {{"reason", "queue_timeout"}};
  sink.Sample("gpuwarden_queries_refused_total", full, static_cast<double>(f.queue_full_total));
  sink.Sample("gpuwarden_queries_refused_total", timeout,
              static_cast<double>(f.queue_timeouts_total));

  const HeapFigures heap = ReadHeap();
  sink.Family("gpuwarden_process_heap_bytes", "gauge", "bytes",
              "The C allocator's heap: in use, and free but held (returned by trims).");
  TaskLabel in_use[] = {{"state", "in_use"}}, free_held[] = {{"state", "free"}};
  sink.Sample("gpuwarden_process_heap_bytes", in_use, static_cast<double>(heap.in_use_bytes));
  sink.Sample("gpuwarden_process_heap_bytes", free_held, static_cast<double>(heap.free_bytes));
  sink.Family("gpuwarden_process_heap_trims_total", "counter", "",
              "Times the agent gave the allocator's free memory back to the kernel (malloc_trim).");
  sink.Sample("gpuwarden_process_heap_trims_total", {}, static_cast<double>(TrimsTotal()));
  sink.Family("gpuwarden_process_heap_huge_pages", "gauge", "",
              "1 when the C allocator asks the kernel for transparent huge pages for its heap "
              "(glibc.malloc.hugetlb=1).");
  sink.Sample("gpuwarden_process_heap_huge_pages", {}, HugePageHeap() ? 1 : 0);
}

}  // namespace gw::serve
