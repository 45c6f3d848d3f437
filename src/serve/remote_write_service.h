// serve/remote_write_service.h — `remote_write:` in the running agent: one remote::Queue (its own
// thread) per configured endpoint, streaming the store to it (docs/remote-write.md), and their
// self-metrics on /metrics under Prometheus' names (docs/metrics.md, "Remote write").
//
// In serve's list after the store (it reads it) and before the recorder (each recorded snapshot's
// time tells the queues how far the store is complete); stopped before the store's final flush.
// Without `remote_write:` it does nothing and renders nothing.
#ifndef GPUWARDEN_SERVE_REMOTE_WRITE_SERVICE_H_
#define GPUWARDEN_SERVE_REMOTE_WRITE_SERVICE_H_

#include <memory>

#include "base/log.h"
#include "config/config.h"
#include "serve/service.h"
#include "tsdb/db.h"

namespace gw::serve {

// `db` may be null (no store: the endpoints are logged as not served). Every pointer must outlive
// the returned part.
std::unique_ptr<Service> MakeRemoteWriteService(const config::Config& config, tsdb::DB* db,
                                                Logger* logger);

}  // namespace gw::serve

#endif  // GPUWARDEN_SERVE_REMOTE_WRITE_SERVICE_H_
