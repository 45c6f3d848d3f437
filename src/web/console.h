// web/console.h — gpuwarden's built-in web console, served by `gpuwarden serve`.
//
//   web::ConsoleOptions console;
//   console.version = version;
//   console.queriers = [store] { return store->NewQuerier(); };   // omit: no history
//   console.now_ms = [collector] { return collector->Latest()->taken_unix_seconds * 1000; };
//   web::RegisterConsole(server, std::move(console));             // before server->Start()
//
// Routes:
//   GET /                      the console (one HTML page; the pages inside are #/fleet,
//                              #/gpu/<index>, #/jobs, #/teams, #/alerts, #/findings)
//   GET /ui/<version>/<file>   its scripts, styles and icons, compiled into the binary
//                              (assets.h): Cache-Control immutable, since <version> changes with
//                              any file; /ui/<file> and other versions: revalidated (no-cache).
//                              Every asset has an ETag; If-None-Match answers 304. The HTTP
//                              server gzips them for clients that accept it.
//   GET /api/gw/v1/console     what the console needs to know about this agent:
//                              {"status":"success","data":{"version":"...","history":true,
//                               "ui_version":"v-...","rule_interval_s":15}}
//                              (rule_interval_s: how often alert rules are evaluated; the
//                              charts join evaluations of one alert into episodes with it)
//   GET /api/gw/v1/chart       server-side downsampled history for charts (chart.h); only with
//                              history.
// The pages read everything else from the agent's existing endpoints (/api/snapshot,
// /api/v1/query, /api/v1/alerts, /api/v1/rules, /api/gw/v1/jobs, /api/gw/v1/queue and
// /api/gw/v1/services: the Teams page's services, not waited for) and from optional ones that
// other modules may register (/api/gw/v1/findings): a 404 there shows "not available on this
// agent". Nothing here calls NVML or touches the disk: assets are in memory, history comes
// through the store's Querier.
//
// Threading: handlers run on the HTTP server's threads; they share only immutable state and the
// callbacks in ConsoleOptions, which must be thread-safe.
#ifndef GPUWARDEN_WEB_CONSOLE_H_
#define GPUWARDEN_WEB_CONSOLE_H_

#include <string>

#include "http/server.h"
#include "web/chart.h"

namespace gw::web {

struct ConsoleOptions {
  std::string version;          // gpuwarden's, shown in the console's footer
  QuerierFactory queriers;      // the store; empty: the agent keeps no history
  NowMs now_ms;                 // time of the latest snapshot (simulated time under --simulate)
  double rule_interval_s = 15;  // rules.evaluation_interval
};

// Registers the routes above on `server` (before Start).
void RegisterConsole(http::Server* server, ConsoleOptions options);

}  // namespace gw::web

#endif  // GPUWARDEN_WEB_CONSOLE_H_
