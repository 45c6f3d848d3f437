// hub/hub.h — `gpuwarden hub`: the web console over a central store holding many agents' data
// (VictoriaMetrics or Prometheus; docs/hub.md).
//
//   hub::HubOptions o;
//   o.store_url = "http://127.0.0.1:8428";
//   o.agents_file = "agents.yml";          // Prometheus file_sd: the nodes' agents (optional)
//   auto hub = hub::Hub::Create(o, &logger);
//   (*hub)->Start();                          // serves until Stop()
//
// Routes (each takes `node=<name>` to scope it to one node; the console adds it once a node is
// chosen): the console itself (web/), /api/snapshot (fleet: the nodes; with node: its GPUs),
// /api/v1/query and query_range (the store's, with the node matcher added to every selector),
// /api/v1/alerts and /api/v1/rules (the store's ALERTS series and rules; with `rules_files`,
// the hub's own evaluation of them instead: rules_eval.h), /api/gw/v1/chart
// (web/chart.h over a RemoteQuerier), /api/gw/v1/jobs[/<id>] (the store's running jobs and the
// nodes' agents' records, running and finished, each with its node; silent agents named),
// /api/gw/v1/teams (with each team's cost from the nodes' gpu_cost_* counters),
// /api/gw/v1/findings (diagnose/ over the store, evaluated every `findings_interval_s` on the
// hub's own thread, never on a request), /api/gw/v1/report, /api/gw/v1/reclaim and
// /api/gw/v1/queue (from the nodes' agents), /api/gw/v1/console, /api/gw/v1/hub (the hub's own
// state), /api/gw/v1/hub/exposition (task-layer families as text for the console), /healthz,
// /metrics (the hub's own: hub_metrics.h).
//
// A store that is down or refuses: every route that needs it answers 503 with the store's URL
// and the reason ({"status":"error","errorType":"unavailable","error":"the store at … did not
// answer: connection refused"}); the hub keeps running and recovers when the store answers.
//
// Threading: HTTP handlers on the server's workers; one background thread reloads the agents
// file and evaluates findings, another (with `rules_files`) evaluates the rules. Shared state is
// behind one mutex, never held across a request to the store or an agent.
#ifndef GPUWARDEN_HUB_HUB_H_
#define GPUWARDEN_HUB_HUB_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/log.h"
#include "diagnose/diagnose.h"

namespace gw::hub {

struct HubOptions {
  std::string store_url;
  std::string agents_file;  // Prometheus file_sd (YAML or JSON); "" = none
  std::string listen_address = ":9967";
  std::string web_config_file;          // TLS / basic auth, as `serve`
  std::string node_label = "instance";  // the label naming a node in the store
  double store_timeout_s = 5;
  double cache_ttl_s = 1.5;
  double findings_window_s = 3600;
  double findings_interval_s = 30;
  double agents_reload_s = 10;
  // How long after a silent agent's last answer its node's last known jobs are still listed
  // (docs/hub.md): the store's default lookback, as long as a series stays visible without
  // staleness markers. After it the node is only named in nodes_unreachable.
  double last_known_jobs_s = 300;
  std::vector<std::string> rules_files;    // alert rules the hub evaluates over the store
  double rules_interval_s = 15;            // for rule groups without their own interval
  std::vector<std::string> alertmanagers;  // where the hub's alerts are sent (with rules_files)
  diagnose::Thresholds thresholds;
  std::string version;
};

// Reads a Prometheus file_sd file: node name -> agent base URL ("http://host:port"). A group's
// node is its labels' `node_label`, else the target itself (Prometheus' default instance).
Expected<std::map<std::string, std::string>> ReadAgentsFile(const std::string& path,
                                                            const std::string& node_label);

class Hub {
 public:
  static Expected<std::unique_ptr<Hub>> Create(HubOptions options, Logger* log);
  ~Hub();
  Status Start();
  void Stop();
  int port() const;

 private:
  struct Impl;
  explicit Hub(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gw::hub

#endif  // GPUWARDEN_HUB_HUB_H_
