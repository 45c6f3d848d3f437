// serve/serve.h — `gpuwarden serve`, the running agent; the entry to the serve/ module.
//
// cli/ parses the command line and calls serve::Run. Run holds one ordered list of parts, each a
// serve::Service (serve/service.h): the store (store.h), the scraper, the task layer
// (jobs_service.h), the platform layer (governance_service.h), cost per output
// (service_cost_service.h), alerting (alerting.h), findings (findings_service.h), the recorder,
// the HTTP side (/metrics, /api/snapshot via snapshot_json.h, the query API behind its limits,
// query_metrics.h, and the web console) and last the collector (agent.h). Routes and starts go in
// list order, each recorded snapshot goes to every part in list order, and stops go in reverse
// order: the collector first (bounded), then the query gate and the server, the recorder (which
// records the last snapshot), and last the store's final flush.
#ifndef GPUWARDEN_SERVE_SERVE_H_
#define GPUWARDEN_SERVE_SERVE_H_

#include <string>

#include "base/log.h"
#include "config/config.h"

namespace gw::serve {

// Serves until SIGINT/SIGTERM. Exit 0 on a clean stop, 1 if the listener cannot start.
// Without NVML it keeps serving self-metrics and logs why.
// `serve` stops within kCollectorStopSeconds of SIGTERM as far as NVML is concerned: a collector
// thread still inside NVML after that is left behind, the rest is stopped and written, and the
// process exits with kExitLeftInsideNvml (docs/operations.md).
inline constexpr double kCollectorStopSeconds = 2.0;
inline constexpr int kExitLeftInsideNvml = 3;
int Run(const config::Config& config, const std::string& version, Logger* logger);

}  // namespace gw::serve

#endif  // GPUWARDEN_SERVE_SERVE_H_
