// serve/serve.h — `gpuwarden serve`: the running agent. cli/ parses the command line and calls Run.
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
