// sim/metrics_server.h — the HTTP face the simulated workloads share (gw-inference-sim,
// gw-training-sim): /metrics from the caller's renderer and /healthz, started on `listen`.
// Header-only: the workload binaries link http/; the simulator libraries never include this.
#ifndef GPUWARDEN_SIM_METRICS_SERVER_H_
#define GPUWARDEN_SIM_METRICS_SERVER_H_

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "base/log.h"
#include "http/server.h"

namespace gw::sim {

// nullptr after printing "<program>: <why>" to stderr when the server cannot listen or start.
inline std::unique_ptr<http::Server> StartMetricsServer(const char* program,
                                                        const std::string& listen, Logger* log,
                                                        std::function<void(std::string*)> render) {
  auto server = http::Server::Create({.listen_address = listen}, log);
  if (!server.ok()) {
    std::fprintf(stderr, "%s: %s\n", program, server.error().message.c_str());
    return nullptr;
  }
  (*server)->Get("/metrics",
                 [render = std::move(render)](const http::Request&, http::Response& res) {
                   render(&res.body);
                   res.content_type = "text/plain; version=0.0.4; charset=utf-8";
                 });
  (*server)->Get("/healthz", [](const http::Request&, http::Response& res) { res.body = "ok\n"; });
  if (Status s = (*server)->Start(); !s.ok()) {
    std::fprintf(stderr, "%s: %s\n", program, s.message().c_str());
    return nullptr;
  }
  return std::move(*server);
}

}  // namespace gw::sim

#endif  // GPUWARDEN_SIM_METRICS_SERVER_H_
