// The HTTP load of issue 16 against a running agent, with its numbers: requests per second of
// the well-formed clients, /metrics and /healthz probe latency (p50, p99, max), errors, what
// happened to the costly queries and the slow sockets. bench/http_load.sh starts the agent and
// adds its RSS before and after.
//   build/bin/http_load_bench PORT [SECONDS] [CLIENTS] [SLOW_SOCKETS] [COSTLY_QUERIES]
#include <cstdio>
#include <cstdlib>

#include "support/http_load.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PORT [SECONDS] [CLIENTS] [SLOW_SOCKETS] [COSTLY_QUERIES]\n",
                 argv[0]);
    return 2;
  }
  gw::testing::LoadOptions o;
  o.port = std::atoi(argv[1]);
  if (argc > 2) o.duration_s = std::atof(argv[2]);
  if (argc > 3) o.clients = std::atoi(argv[3]);
  if (argc > 4) o.slow_sockets = std::atoi(argv[4]);
  if (argc > 5) o.costly_queries = std::atoi(argv[5]);
  gw::testing::LoadReport r = gw::testing::RunLoad(o);
  using R = gw::testing::LoadReport;
  std::printf("clients=%d slow_sockets=%d costly_queries=%d seconds=%.1f\n", o.clients,
              o.slow_sockets, o.costly_queries, r.seconds);
  std::printf("requests=%llu (metrics %llu, query_range %llu) req_per_s=%.0f errors=%llu\n",
              static_cast<unsigned long long>(r.requests),
              static_cast<unsigned long long>(r.metrics_requests),
              static_cast<unsigned long long>(r.range_requests),
              static_cast<double>(r.requests) / r.seconds,
              static_cast<unsigned long long>(r.errors));
  for (const auto& e : r.error_samples) std::printf("  error: %s\n", e.c_str());
  for (const auto& [name, ms] :
       {std::pair{"/metrics", &r.metrics_probe_ms}, std::pair{"/healthz", &r.healthz_probe_ms}}) {
    std::printf("probe %s: n=%zu p50=%.1fms p99=%.1fms max=%.1fms\n", name, ms->size(),
                R::Percentile(*ms, 0.5), R::Percentile(*ms, 0.99), ms->empty() ? 0 : ms->back());
  }
  std::printf("probe_failures=%llu slow_socket_reconnects=%llu\n",
              static_cast<unsigned long long>(r.probe_failures),
              static_cast<unsigned long long>(r.slow_reconnects));
  for (const auto& [status, count] : r.costly_statuses) {
    std::printf("costly queries answered %d: %d%s\n", status, count,
                status == 0 ? " (still running when the bench ended)" : "");
  }
  return r.errors == 0 && r.probe_failures == 0 ? 0 : 1;
}
