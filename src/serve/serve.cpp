#include "serve/serve.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/heap.h"
#include "collect/exposition.h"
#include "http/prom_api.h"
#include "http/server.h"
#include "scrape/scraper.h"
#include "serve/agent.h"
#include "serve/alerting.h"
#include "serve/findings_service.h"
#include "serve/governance_service.h"
#include "serve/jobs_service.h"
#include "serve/query_metrics.h"
#include "serve/service_cost_service.h"
#include "serve/snapshot_json.h"
#include "serve/store.h"
#include "web/console.h"

namespace gw::serve {

namespace {

void RegisterRoutes(http::Server* server, Agent* agent, collect::MetricsPage* page) {
  collect::Collector* collector = &agent->collector();
  server->Get("/metrics", [collector, page](const http::Request& req, http::Response& res) {
    collect::Format format = collect::NegotiateFormat(req.header("Accept"));
    auto snapshot = collector->Latest();
    res.body = page->Get(*snapshot, format);
    res.content_type = std::string(collect::ContentType(format));
  });
  server->Get("/healthz", [](const http::Request&, http::Response& res) { res.body = "ok\n"; });
  server->Get("/readyz", [collector](const http::Request&, http::Response& res) {
    auto snapshot = collector->Latest();
    if (!snapshot->stats.nvml_up) {
      res.status = 503;
      res.body = "not ready: " + snapshot->stats.nvml_error + "\n";
    } else if (snapshot->generation == 0) {
      res.status = 503;
      res.body = "not ready: the first collection cycle has not completed\n";
    } else {
      res.body = "ready\n";
    }
  });
  server->Get("/api/snapshot", [collector](const http::Request&, http::Response& res) {
    res.body = SnapshotJson(*collector->Latest());
    res.content_type = "application/json";
  });
  if (!collector->options().stepped) return;
  // Simulator with a stepped clock: tests move time and read exact values.
  server->Post("/-/sim/advance", [collector](const http::Request& req, http::Response& res) {
    double seconds = 0;
    if (!ParseDurationSeconds(req.param("seconds"), &seconds) || seconds <= 0) {
      res.status = 400;
      res.body = "seconds: expected a positive duration such as 10 or 1m30s\n";
      return;
    }
    Status s = collector->Advance(seconds);
    if (!s.ok()) {
      res.status = 503;
      res.body = s.message() + "\n";
      return;
    }
    auto snapshot = collector->Latest();
    nlohmann::json j = {{"generation", snapshot->generation},
                        {"taken_at", snapshot->taken_unix_seconds}};
    res.body = j.dump() + "\n";
    res.content_type = "application/json";
  });
}

// The port in a listen address (":9966", "127.0.0.1:0", "[::1]:80"); 0 if none.
int ListenPort(const std::string& listen) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return 0;
  return std::atoi(listen.c_str() + colon + 1);
}

// `serve` until SIGINT/SIGTERM; the exit code.
int Serve(const config::Config& config, const std::string& version, Logger* logger) {
  // SIGINT/SIGTERM stop, SIGHUP reloads the rules; all taken by sigwait below, so block them
  // before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // One writer per data directory (the store, alert queues, job records, governance state): a
  // second agent or an import is refused before it touches anything.
  auto data_lock = LockDataDir(config.storage, "serve");
  if (!data_lock.ok()) {
    logger->Error(data_lock.error().message);
    return 1;
  }
  // The query API on workers of its own, one per query evaluating (query.max_concurrency) or
  // waiting for a slot (query.max_queued), so queries never take the workers of the other routes;
  // more wait in the server's query queue without holding a thread (docs/configuration.md, Query
  // limits). With as many workers as slots plus queue, a query on a worker is never refused.
  const int query_threads = config.query.max_concurrency + config.query.max_queued;
  auto query_gate = std::make_shared<promql::QueryGate>(promql::GateOptions{
      .max_concurrency = config.query.max_concurrency, .max_queued = config.query.max_queued});
  http::ServerOptions options;
  options.listen_address = config.listen;
  options.web_config_file = config.web_config_file;
  options.query_paths = {"/api/v1/query", "/api/v1/query_range"};
  options.query_threads = query_threads;
  auto server = http::Server::Create(options, logger);
  if (!server.ok()) {
    logger->Error(server.error().message);
    return 1;
  }
  // History: the store, fed by the recorder, read by the Prometheus API and the rules.
  std::unique_ptr<tsdb::DB> db;
  std::unique_ptr<StoreAppender> appender;
  std::unique_ptr<collect::Recorder> recorder;
  if (auto opened = OpenStore(config.storage, logger); !opened.ok()) {
    logger->Error(opened.error().message + "; running without history (and without rules)");
  } else {
    db = std::move(*opened);
    appender = std::make_unique<StoreAppender>(db.get(), config.storage, logger);
    recorder = std::make_unique<collect::Recorder>(appender.get(), logger);
  }
  // Alerting: rules evaluated right after each recorded snapshot, at its time.
  Alerting alerting(config, db.get(), ListenPort(config.listen), logger);
  alerting.StartNotifier();
  (void)alerting.Load();             // a bad rule file is logged; serve runs without those rules
  JobsService jobs(config, logger);  // the task layer: attribution, jobs, records
  // Its families go into the store too, before the rules run on each snapshot (task-layer rules).
  if (appender) jobs.RecordSeriesInto(appender.get());
  const bool stepped = !config.simulate.scenario.empty() && config.simulate.clock == "stepped";
  // A stepped simulator's time is not the wall clock: flush and retention follow it.
  if (appender && stepped) appender->FollowDataClock();
  jobs.Start();
  scrape::Scraper scraper(config.scrape.targets, logger);  // business metrics (scrape.targets)
  // The platform layer: idle reclaim, pools, quotas, cost (after the task layer each cycle).
  GovernanceService governance(config, &jobs, appender.get(), logger);
  governance.Start();
  // A finished job's record carries its final cost (jobs -> governance, never the reverse).
  jobs.SetJobCostLookup(
      [&governance](const std::string& id) { return governance.FinalJobCost(id); });
  // Cost per output of the scraped services (scrape.targets[].gpus, .outputs).
  ServiceCostService services(config, &scraper, appender.get(), logger);
  // A stepped simulator records synchronously, so that /-/sim/advance returns with every
  // snapshot stored and every rule evaluated (deterministic tests); otherwise on its own thread.
  collect::Recorder* rec = recorder.get();
  FindingsService findings(db.get(), stepped, logger, config.diagnose,
                           appender.get());  // diagnose/ over the store; /metrics, the store
  findings.Start();
  if (rec) {
    StoreAppender* app = appender.get();
    rec->SetAfterRecord([&alerting, &jobs, &governance, &findings, &scraper, &services, stepped,
                         app](const collect::Snapshot& s, int64_t t_ms) {
      if (stepped) scraper.ScrapeDue(t_ms);  // scrapes follow the simulated clock
      if (scraper.Drain(app, s) > 0) (void)app->Commit();
      jobs.OnSnapshot(s);
      governance.OnSnapshot(s, t_ms);
      services.OnSnapshot(s, t_ms);
      alerting.Tick(t_ms);
      findings.Tick(t_ms);
    });
    if (!stepped) rec->Start();
  }
  Agent agent(config, logger);
  // On every way out, an early error return below included: stop the producers before what their
  // threads call is destroyed. The collector publishes to the recorder, whose after-record hook
  // calls alerting, jobs, governance, findings and the scraper — all declared above, so destroyed
  // after this guard. (Both Stop()s may run twice: the shutdown path calls them too.)
  struct StopProducers {
    Agent* agent;
    collect::Recorder* recorder;
    ~StopProducers() {
      (void)agent->Stop();
      if (recorder != nullptr) recorder->Stop();
    }
  } stop_producers{&agent, rec};
  collect::Collector::PublishListener listener = nullptr;
  if (rec && stepped) {
    listener = [rec](std::shared_ptr<const collect::Snapshot> s) { rec->RecordNow(*s); };
  } else if (rec) {
    listener = [rec](std::shared_ptr<const collect::Snapshot> s) { rec->Offer(s); };
  }
  agent.Start(listener);
  if (!agent.nvml_error().empty()) {
    logger->Error(agent.nvml_error() + "; serving self-metrics only, no GPU is being watched");
    // Nothing is recorded, so rules follow the wall clock — writing to the store only while the
    // recorder (which still records the agent's own state) is not.
    alerting.StartWallClock(rec != nullptr ? &rec->writer_mutex() : nullptr);
  }
  // Scrapes are stored by the recorder's thread; without one they are only shown on /metrics.
  const bool scrapes_stored = rec != nullptr && agent.nvml_error().empty();
  if (!scrapes_stored) scraper.SetStoreless();
  if (!stepped || !scrapes_stored) scraper.Start();
  collect::RenderOptions render;
  render.per_process_metrics = config.collect.per_process_metrics;
  render.version = version;
  tsdb::DB* store = db.get();
  collect::MetricsPage page(render, store ? collect::MetricsPage::StoreSource([store, rec] {
                              return StoreFiguresOf(*store, rec);
                            })
                                          : nullptr);
  page.SetExtra([&alerting, &jobs, &scraper, &governance, &findings, &services, gate = query_gate](
                    collect::Format f, std::string* out) {
    RenderQueryMetrics(*gate, f, out);
    alerting.RenderMetrics(f, out);
    jobs.RenderMetrics(f, out);
    scraper.RenderMetrics(f, out);
    governance.RenderMetrics(f, out);
    findings.RenderMetrics(f, out);
    services.RenderMetrics(f, out);
  });
  RegisterRoutes(server->get(), &agent, &page);
  alerting.RegisterRoutes(server->get());
  jobs.RegisterRoutes(server->get());
  findings.RegisterRoutes(server->get());
  governance.RegisterRoutes(server->get());
  services.RegisterRoutes(server->get());
  if (store) {
    http::PromApiOptions api;
    api.version = version;
    api.engine = QueryEngineOptions(config);
    api.engine.gate = query_gate;
    http::RegisterPromApi(
        server->get(), [store] { return store->NewQuerier(); }, api);
  }
  // The web console at / (web/console.h); its charts read the store.
  web::ConsoleOptions console;
  console.version = version;
  if (store) console.queriers = [store] { return store->NewQuerier(); };
  console.now_ms = [collector = &agent.collector()] {
    return static_cast<int64_t>(collector->Latest()->taken_unix_seconds * 1000);
  };
  web::RegisterConsole(server->get(), std::move(console));
  if (Status s = (*server)->Start(); !s.ok()) {
    logger->Error(s.message());
    return 1;
  }
  logger->Info("gpuwarden " + version + " serving on " + config.listen + " (port " +
               std::to_string((*server)->port()) + ")" +
               (agent.simulated() ? ", simulated fleet '" + config.simulate.scenario + "'" : "") +
               (config.web_config_file.empty() ? "" : ", web config " + config.web_config_file));
  // Memory freed by the last large queries goes back to the kernel while the agent idles.
  PeriodicHeapTrim idle_trim;
  int signal_number = 0;
  while (true) {
    sigwait(&signals, &signal_number);
    if (signal_number != SIGHUP) break;
    logger->Info("received SIGHUP, reloading the rules");
    (void)alerting.Load();
  }
  logger->Info(std::string("received ") + (signal_number == SIGINT ? "SIGINT" : "SIGTERM") +
               ", shutting down");
  // The collector first: it stops within kCollectorStopSeconds whatever NVML does (a thread
  // inside a stuck call is left behind, never joined), and wakes the /-/sim/advance requests
  // waiting on it, so the HTTP server's stop below does not wait on them.
  const collect::Collector::StopOutcome stopped = agent.collector().Stop(kCollectorStopSeconds);
  // Queries still waiting or evaluating end now ("query was canceled"), so the server's Stop
  // does not wait for them.
  query_gate->Shutdown();
  (*server)->Stop();
  (void)agent.Stop();
  // What must be durable is written whatever the collector left behind: the last snapshot and
  // the WAL commit, the rules' and queues' state, the governance checkpoint, the chunks.
  if (recorder) recorder->Stop();  // records the last snapshot
  jobs.Stop();
  findings.Stop();
  governance.Stop();
  if (db) {
    if (Status s = db->Flush(); !s.ok()) logger->Error("store: final flush failed: " + s.message());
  }
  if (!stopped.clean()) {
    std::string what;
    for (const std::string& a : stopped.abandoned) what += (what.empty() ? "" : "; ") + a;
    logger->Error("shutdown: left behind, still inside NVML: " + what +
                  ". Everything else was stopped and written; exiting with code " +
                  std::to_string(kExitLeftInsideNvml));
    return kExitLeftInsideNvml;
  }
  logger->Info("shutdown complete");
  return 0;
}

}  // namespace

int Run(const config::Config& config, const std::string& version, Logger* logger) {
  const int code = Serve(config, version, logger);
  if (code == kExitLeftInsideNvml) {
    // A thread is still inside NVML and the library stays loaded: leave without the process's
    // static destructors, which could block behind that thread or pull state from under it.
    std::fflush(nullptr);
    _exit(code);
  }
  return code;
}

}  // namespace gw::serve
