// serve/service.h — what one part of the running agent (`gpuwarden serve`) is to the serve layer.
//
// serve/serve.cpp holds one ordered list of services. For each service, in list order, it calls
// RegisterRoutes (before the listener opens) and Start; after every recorded snapshot it calls
// OnSnapshot in list order on the recorder's thread; each /metrics page asks every service for its
// families in list order; at shutdown it calls Stop in reverse order. A service therefore only
// depends on services earlier in the list (it gets pointers to them at construction), and may use
// them until its own Stop returns.
//
// Every method has a default that does nothing, so a service overrides only what it has.
#ifndef GPUWARDEN_SERVE_SERVICE_H_
#define GPUWARDEN_SERVE_SERVICE_H_

#include <cstdint>
#include <string>

#include "collect/exposition.h"
#include "collect/snapshot.h"

namespace gw::http {
class Server;
}

namespace gw::serve {

class Service {
 public:
  virtual ~Service() = default;

  // A short name for logs ("jobs", "governance").
  virtual const char* name() const = 0;

  // Adds the service's HTTP routes. Called once, before Start, before the listener opens.
  virtual void RegisterRoutes(http::Server* /*server*/) {}

  // Starts the service's own threads, if any. Errors are the service's to log: the agent runs on
  // without what failed (a bad rule file, a missing scheduler), never stops for it.
  virtual void Start() {}

  // One recorded snapshot at time `t_ms`: the store holds every sample up to then. Runs on the
  // recorder's thread (or the simulator's step with a stepped clock) and must return quickly.
  virtual void OnSnapshot(const collect::Snapshot& /*snapshot*/, int64_t /*t_ms*/) {}

  // Appends the service's metric families to a /metrics page in `format`.
  virtual void RenderMetrics(collect::Format /*format*/, std::string* /*out*/) {}

  // Stops threads and makes durable what must survive a restart (checkpoints, records, queues).
  // Called in reverse list order; must be safe to call twice.
  virtual void Stop() {}
};

}  // namespace gw::serve

#endif  // GPUWARDEN_SERVE_SERVICE_H_
