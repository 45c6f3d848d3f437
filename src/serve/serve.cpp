// gpuwarden serve (serve/serve.h): the agent's wiring. One piece: every service's construction,
// the routes they register and the order they start and stop in must be read together; each
// service's own logic lives in its own file (jobs_service, governance_service, alerting, ...).
#include "serve/serve.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

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
#include "serve/prom_api_options.h"
#include "serve/query_metrics.h"
#include "serve/remote_write_service.h"
#include "serve/service.h"
#include "serve/service_cost_service.h"
#include "serve/snapshot_json.h"
#include "serve/store.h"
#include "serve/training_service.h"
#include "web/console.h"

namespace gw::serve {

namespace {

// What the heap trims leave warm at the main heap's top (base/heap.h KeepHeapReserve): 8 MiB took
// the first query after a trim from 3.9 to 2.3 ms on 100 series, and 16 MiB did no better
// (docs/benchmarks.md, "A warm heap reserve").
constexpr size_t kHeapReserveBytes = size_t{8} << 20;

// The agent's own routes. Registered before the agent starts (the collector exists from then on,
// before the listener opens), so each handler asks the agent for its collector.
void RegisterRoutes(http::Server* server, Agent* agent, collect::MetricsPage* page, bool stepped) {
  server->Get("/metrics", [agent, page](const http::Request& req, http::Response& res) {
    collect::Format format = collect::NegotiateFormat(req.header("Accept"));
    auto snapshot = agent->collector().Latest();
    res.body = page->Get(*snapshot, format);
    res.content_type = std::string(collect::ContentType(format));
  });
  server->Get("/healthz", [](const http::Request&, http::Response& res) { res.body = "ok\n"; });
  server->Get("/readyz", [agent](const http::Request&, http::Response& res) {
    auto snapshot = agent->collector().Latest();
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
  server->Get("/api/snapshot", [agent](const http::Request&, http::Response& res) {
    res.body = SnapshotJson(*agent->collector().Latest());
    res.content_type = "application/json";
  });
  if (!stepped) return;
  // Simulator with a stepped clock: tests move time and read exact values. (A simulator that
  // could not be loaded runs no stepped collector: the route then answers 404.)
  server->Post("/-/sim/advance", [agent](const http::Request& req, http::Response& res) {
    collect::Collector* collector = &agent->collector();
    if (!collector->options().stepped) {
      res.status = 404;
      res.body = "404 page not found\n";
      return;
    }
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
    auto snapshot = agent->collector().Latest();
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

// What every part below shares.
struct Context {
  const config::Config& config;
  Logger* log;
  // A stepped simulator: its time is not the wall clock, and snapshots are recorded synchronously
  // so that /-/sim/advance returns with every snapshot stored and every rule evaluated.
  bool stepped;
};

// The parts of the agent, in the order of serve's list (Run, below). Each is a thin adapter over
// the class that does the work; each gets pointers to the parts before it.

// History: the store in the data directory and its appender (the recorder's only writer). Without
// a store the agent runs on without history (and without rules). Stopped last: the final flush.
class StoreService : public Service {
 public:
  explicit StoreService(const Context& ctx) : log_(ctx.log) {
    auto opened = OpenStore(ctx.config.storage, ctx.log);
    if (!opened.ok()) {
      ctx.log->Error(opened.error().message + "; running without history (and without rules)");
      return;
    }
    db_ = std::move(*opened);
    appender_ = std::make_unique<StoreAppender>(db_.get(), ctx.config.storage, ctx.log);
    // A stepped simulator's time is not the wall clock: flush and retention follow it.
    if (ctx.stepped) appender_->FollowDataClock();
  }
  const char* name() const override { return "store"; }
  void Stop() override {
    if (!db_ || flushed_) return;
    flushed_ = true;
    if (Status s = db_->Flush(); !s.ok()) log_->Error("store: final flush failed: " + s.message());
  }
  tsdb::DB* db() const { return db_.get(); }
  StoreAppender* appender() const { return appender_.get(); }

 private:
  Logger* log_;
  std::unique_ptr<tsdb::DB> db_;
  std::unique_ptr<StoreAppender> appender_;
  bool flushed_ = false;
};

// Business metrics (scrape.targets). Scraping starts with the agent (AgentService), once it is
// known whether the recorder stores the scrapes.
class ScrapeService : public Service {
 public:
  ScrapeService(const Context& ctx, const StoreService* store)
      : stepped_(ctx.stepped),
        appender_(store->appender()),
        // Room for the jobs' own endpoints (GPUWARDEN_METRICS_PORT; serve/training_service.h).
        scraper_(ctx.config.scrape.targets, ctx.log, [] {
          scrape::ScraperOptions options;
          options.job_target_slots = 32;
          return options;
        }()) {}
  const char* name() const override { return "scrape"; }
  // Scrapes are stored by the recorder's thread; without it they are only shown on /metrics.
  void StartScraping(bool stored) {
    if (!stored) scraper_.SetStoreless();
    if (!stepped_ || !stored) scraper_.Start();
  }
  void OnSnapshot(const collect::Snapshot& snapshot, int64_t t_ms) override {
    if (stepped_) scraper_.ScrapeDue(t_ms);  // scrapes follow the simulated clock
    if (scraper_.Drain(appender_, snapshot) > 0) (void)appender_->Commit();
  }
  void RenderMetrics(collect::Format format, std::string* out) override {
    scraper_.RenderMetrics(format, out);
  }
  void Stop() override { scraper_.Stop(); }
  const scrape::Scraper* scraper() const { return &scraper_; }
  scrape::Scraper* scraper() { return &scraper_; }  // a job-bound target follows its job

 private:
  bool stepped_;
  StoreAppender* appender_;
  scrape::Scraper scraper_;
};

// The task layer: attribution, jobs, records. Its families go into the store too, before the rules
// run on each snapshot (task-layer rules).
class JobsAdapter : public Service {
 public:
  JobsAdapter(const Context& ctx, const StoreService* store) : jobs_(ctx.config, ctx.log) {
    if (store->appender() != nullptr) jobs_.RecordSeriesInto(store->appender());
  }
  const char* name() const override { return "jobs"; }
  void RegisterRoutes(http::Server* server) override { jobs_.RegisterRoutes(server); }
  void Start() override { jobs_.Start(); }
  void OnSnapshot(const collect::Snapshot& snapshot, int64_t) override {
    jobs_.OnSnapshot(snapshot);
  }
  void RenderMetrics(collect::Format format, std::string* out) override {
    jobs_.RenderMetrics(format, out);
  }
  void Stop() override { jobs_.Stop(); }
  JobsService* jobs() { return &jobs_; }

 private:
  JobsService jobs_;
};

// The platform layer: idle reclaim, pools, quotas, cost (after the task layer each cycle).
class GovernanceAdapter : public Service {
 public:
  GovernanceAdapter(const Context& ctx, const StoreService* store, JobsAdapter* jobs)
      : governance_(ctx.config, jobs->jobs(), store->appender(), ctx.log) {
    // A finished job's record carries its final cost (jobs -> governance, never the reverse).
    // Governance stops before jobs (reverse order) but lives until the whole list is destroyed, so
    // the lookup stays valid while jobs runs.
    jobs->jobs()->SetJobCostLookup(
        [this](const std::string& id) { return governance_.FinalJobCost(id); });
    // And whether our reclaim policy ended it (its outcome: reclaimed).
    jobs->jobs()->SetReclaimLookup(
        [this](const std::string& id) { return governance_.ReclaimOf(id); });
  }
  const char* name() const override { return "governance"; }
  void RegisterRoutes(http::Server* server) override { governance_.RegisterRoutes(server); }
  void Start() override { governance_.Start(); }
  void OnSnapshot(const collect::Snapshot& snapshot, int64_t t_ms) override {
    governance_.OnSnapshot(snapshot, t_ms);
  }
  void RenderMetrics(collect::Format format, std::string* out) override {
    governance_.RenderMetrics(format, out);
  }
  void Stop() override { governance_.Stop(); }

 private:
  GovernanceService governance_;
};

// Cost per output of the scraped services (scrape.targets[].gpus, .outputs).
class ServiceCostAdapter : public Service {
 public:
  ServiceCostAdapter(const Context& ctx, const StoreService* store, const ScrapeService* scrape)
      : services_(ctx.config, scrape->scraper(), store->appender(), ctx.log) {}
  const char* name() const override { return "service_cost"; }
  void RegisterRoutes(http::Server* server) override { services_.RegisterRoutes(server); }
  void OnSnapshot(const collect::Snapshot& snapshot, int64_t t_ms) override {
    services_.OnSnapshot(snapshot, t_ms);
  }
  void RenderMetrics(collect::Format format, std::string* out) override {
    services_.RenderMetrics(format, out);
  }
  void Stop() override { services_.Stop(); }

 private:
  ServiceCostService services_;
};

// Alerting: rules evaluated right after each recorded snapshot, at its time. SIGHUP reloads them.
class AlertingAdapter : public Service {
 public:
  AlertingAdapter(const Context& ctx, const StoreService* store)
      : alerting_(ctx.config, store->db(), ListenPort(ctx.config.listen), ctx.log) {}
  const char* name() const override { return "alerting"; }
  void RegisterRoutes(http::Server* server) override { alerting_.RegisterRoutes(server); }
  void Start() override {
    alerting_.StartNotifier();
    (void)alerting_.Load();  // a bad rule file is logged; serve runs without those rules
  }
  void OnSnapshot(const collect::Snapshot&, int64_t t_ms) override { alerting_.Tick(t_ms); }
  void RenderMetrics(collect::Format format, std::string* out) override {
    alerting_.RenderMetrics(format, out);
  }
  void Stop() override { alerting_.Stop(); }
  Alerting* alerting() { return &alerting_; }

 private:
  Alerting alerting_;
};

// diagnose/ over the store: GET /api/gw/v1/findings and /report, its families on /metrics and in
// the store.
class FindingsAdapter : public Service {
 public:
  FindingsAdapter(const Context& ctx, const StoreService* store)
      : findings_(store->db(), ctx.stepped, ctx.log, ctx.config.diagnose, store->appender()) {}
  const char* name() const override { return "findings"; }
  void RegisterRoutes(http::Server* server) override { findings_.RegisterRoutes(server); }
  void Start() override { findings_.Start(); }
  void OnSnapshot(const collect::Snapshot&, int64_t t_ms) override { findings_.Tick(t_ms); }
  void RenderMetrics(collect::Format format, std::string* out) override {
    findings_.RenderMetrics(format, out);
  }
  void Stop() override { findings_.Stop(); }

 private:
  FindingsService findings_;
};

// The recorder: writes each published snapshot into the store, then hands it to every part
// (`after_record`: serve's list, in order). A stepped simulator records synchronously on the
// collector's thread; otherwise it has a thread of its own. Stop records the last snapshot, so
// every part before it in the list still sees it.
class RecorderService : public Service {
 public:
  RecorderService(const Context& ctx, const StoreService* store,
                  collect::Recorder::AfterRecord after_record)
      : stepped_(ctx.stepped) {
    if (store->appender() == nullptr) return;
    recorder_ = std::make_unique<collect::Recorder>(store->appender(), ctx.log);
    recorder_->SetAfterRecord(std::move(after_record));
    recorder_->SetNvLinkLinkMetrics(ctx.config.collect.nvlink_link_metrics);
  }
  const char* name() const override { return "recorder"; }
  void Start() override {
    if (recorder_ && !stepped_) recorder_->Start();
  }
  void Stop() override {
    if (recorder_) recorder_->Stop();  // records the last snapshot
  }
  collect::Recorder* recorder() const { return recorder_.get(); }
  // What the collector calls with each published snapshot (null without a store).
  collect::Collector::PublishListener Listener() const {
    collect::Recorder* rec = recorder_.get();
    if (rec && stepped_)
      return [rec](std::shared_ptr<const collect::Snapshot> s) { rec->RecordNow(*s); };
    if (rec) return [rec](std::shared_ptr<const collect::Snapshot> s) { rec->Offer(s); };
    return nullptr;
  }

 private:
  bool stepped_;
  std::unique_ptr<collect::Recorder> recorder_;
};

// The HTTP side: /metrics (every part's families, `families`: serve's list), /healthz, /readyz,
// /api/snapshot, /-/sim/advance, the Prometheus query API behind its gate and the web console.
// Stop ends the queries still waiting or evaluating ("query was canceled") and then stops the
// server, so that its Stop does not wait for them.
class HttpService : public Service {
 public:
  HttpService(const Context& ctx, const std::string& version, http::Server* server,
              std::shared_ptr<promql::QueryGate> gate, Agent* agent, const StoreService* store,
              const RecorderService* recorder,
              std::function<void(collect::Format, std::string*)> families, const JobsService* jobs,
              const scrape::Scraper* scraper)
      : config_(ctx.config),
        stepped_(ctx.stepped),
        version_(version),
        server_(server),
        gate_(std::move(gate)),
        agent_(agent),
        db_(store->db()),
        scraper_(scraper) {
    collect::RenderOptions render;
    render.per_process_metrics = ctx.config.collect.per_process_metrics;
    render.nvlink_link_metrics = ctx.config.collect.nvlink_link_metrics;
    render.version = version;
    render.names = ctx.config.exposition.names;
    if (render.names != collect::ExpositionNames::kGpuwarden)
      render.dcgm = std::make_shared<collect::DcgmExposition>(
          collect::DcgmOptions{.hostname = collect::DcgmHostname(), .pod_of = PodOf(ctx, jobs)});
    tsdb::DB* db = db_;
    const collect::Recorder* rec = recorder->recorder();
    page_ = std::make_unique<collect::MetricsPage>(
        render,
        db ? collect::MetricsPage::StoreSource([db, rec] { return StoreFiguresOf(*db, rec); })
           : nullptr);
    page_->SetExtra(std::move(families));
  }
  // dcgm-exporter's pod, namespace and container labels, from the task layer's Kubernetes jobs
  // (JobsService::PodOfDevice: a lock and a map lookup per device, nothing built per render).
  static std::function<bool(std::string_view, collect::DcgmPodLabels*)> PodOf(
      const Context& ctx, const JobsService* jobs) {
    if (jobs == nullptr || ctx.config.jobs.scheduler != "kubernetes") return nullptr;
    return [jobs](std::string_view uuid, collect::DcgmPodLabels* out) {
      return jobs->PodOfDevice(uuid, out);
    };
  }
  const char* name() const override { return "http"; }
  void RegisterRoutes(http::Server* server) override {
    gw::serve::RegisterRoutes(server, agent_, page_.get(), stepped_);
    tsdb::DB* store = db_;
    if (store) {
      http::PromApiOptions api;
      api.version = version_;
      api.engine = QueryEngineOptions(config_);
      api.engine.gate = gate_;
      // Metadata from this agent's /metrics page, targets from the scraper, the status pages.
      SetStatusOptions(
          config_, scraper_,
          [page = page_.get(), agent = agent_](bool openmetrics) {
            return page->Get(*agent->collector().Latest(),
                             openmetrics ? collect::Format::kOpenMetrics : collect::Format::kText);
          },
          store, &api);
      http::RegisterPromApi(
          server, [store] { return store->NewQuerier(); }, api);
    }
    // The web console at / (web/console.h); its charts read the store.
    web::ConsoleOptions console;
    console.version = version_;
    console.rule_interval_s = config_.rules.evaluation_interval_s;
    if (store) console.queriers = [store] { return store->NewQuerier(); };
    console.now_ms = [agent = agent_] {
      return static_cast<int64_t>(agent->collector().Latest()->taken_unix_seconds * 1000);
    };
    web::RegisterConsole(server, std::move(console));
  }
  void RenderMetrics(collect::Format format, std::string* out) override {
    RenderQueryMetrics(*gate_, format, out);
  }
  void Stop() override {
    gate_->Shutdown();
    server_->Stop();
  }

 private:
  const config::Config& config_;
  bool stepped_;
  std::string version_;
  http::Server* server_;
  std::shared_ptr<promql::QueryGate> gate_;
  Agent* agent_;
  tsdb::DB* db_;
  const scrape::Scraper* scraper_;
  std::unique_ptr<collect::MetricsPage> page_;
};

// The collector (NVML or the simulator), publishing to the recorder. Last in the list, so stopped
// first: within kCollectorStopSeconds whatever NVML does (a thread inside a stuck call is left
// behind, never joined), waking the /-/sim/advance requests waiting on it, so that the HTTP
// server's stop does not wait on them. Without NVML the agent serves its self-metrics only: rules
// then follow the wall clock and scrapes are not stored.
class AgentService : public Service {
 public:
  AgentService(const Context& ctx, Agent* agent, const RecorderService* recorder,
               AlertingAdapter* alerting, ScrapeService* scrape)
      : log_(ctx.log), agent_(agent), recorder_(recorder), alerting_(alerting), scrape_(scrape) {}
  const char* name() const override { return "agent"; }
  void Start() override {
    agent_->Start(recorder_->Listener());
    collect::Recorder* rec = recorder_->recorder();
    if (!agent_->nvml_error().empty()) {
      log_->Error(agent_->nvml_error() + "; serving self-metrics only, no GPU is being watched");
      // Nothing is recorded, so rules follow the wall clock — writing to the store only while the
      // recorder (which still records the agent's own state) is not.
      alerting_->alerting()->StartWallClock(rec != nullptr ? &rec->writer_mutex() : nullptr);
    }
    scrape_->StartScraping(rec != nullptr && agent_->nvml_error().empty());
    started_ = true;
  }
  void Stop() override {
    if (started_ && !stopped_) outcome_ = agent_->collector().Stop(kCollectorStopSeconds);
    stopped_ = true;
  }
  // What the collector's stop left behind (inside NVML).
  const collect::Collector::StopOutcome& outcome() const { return outcome_; }

 private:
  Logger* log_;
  Agent* agent_;
  const RecorderService* recorder_;
  AlertingAdapter* alerting_;
  ScrapeService* scrape_;
  bool started_ = false, stopped_ = false;
  collect::Collector::StopOutcome outcome_;
};

// serve's list: routes, starts and per-snapshot calls in order, stops in reverse order — on every
// way out, an early error return included (each Stop may run twice).
class ServiceList {
 public:
  // Stops every part, then destroys them in reverse order too (a part's destructor may still
  // reach the parts before it: the recorder's reaches the store's appender).
  ~ServiceList() {
    StopAll();
    while (!services_.empty()) services_.pop_back();
  }
  template <typename T>
  T* Add(std::unique_ptr<T> service) {
    T* raw = service.get();
    services_.push_back(std::move(service));
    return raw;
  }
  void RegisterRoutes(http::Server* server) {
    for (auto& s : services_) s->RegisterRoutes(server);
  }
  void StartAll() {
    for (auto& s : services_) s->Start();
  }
  void OnSnapshot(const collect::Snapshot& snapshot, int64_t t_ms) {
    for (auto& s : services_) s->OnSnapshot(snapshot, t_ms);
  }
  void RenderMetrics(collect::Format format, std::string* out) {
    for (auto& s : services_) s->RenderMetrics(format, out);
  }
  void StopAll() {
    for (size_t i = services_.size(); i-- > 0;) services_[i]->Stop();
  }

 private:
  std::vector<std::unique_ptr<Service>> services_;
};

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
  const Context ctx{config, logger,
                    !config.simulate.scenario.empty() && config.simulate.clock == "stepped"};
  // Outlives the list: the HTTP routes read its collector until the server has stopped.
  Agent agent(config, logger);
  // The order is the dependency order: each part uses only parts before it, and the recorder
  // hands each snapshot to the scraper, jobs, governance, service cost, training, alerting and
  // findings in that order (scrapes drained first; governance after the task layer; rules after
  // every family of the snapshot is in the store).
  ServiceList list;
  auto* store = list.Add(std::make_unique<StoreService>(ctx));
  auto* scrape = list.Add(std::make_unique<ScrapeService>(ctx, store));
  auto* jobs = list.Add(std::make_unique<JobsAdapter>(ctx, store));
  list.Add(std::make_unique<GovernanceAdapter>(ctx, store, jobs));
  list.Add(std::make_unique<ServiceCostAdapter>(ctx, store, scrape));
  list.Add(MakeTrainingService(ctx.config, scrape->scraper(), jobs->jobs(), store->appender(),
                               ctx.log));  // serve/training_service.h
  auto* alerting = list.Add(std::make_unique<AlertingAdapter>(ctx, store));
  list.Add(std::make_unique<FindingsAdapter>(ctx, store));
  list.Add(MakeRemoteWriteService(ctx.config, store->db(), ctx.log));  // remote_write_service.h
  auto* recorder = list.Add(std::make_unique<RecorderService>(
      ctx, store, [&list](const collect::Snapshot& s, int64_t t_ms) { list.OnSnapshot(s, t_ms); }));
  list.Add(std::make_unique<HttpService>(
      ctx, version, server->get(), query_gate, &agent, store, recorder,
      [&list](collect::Format f, std::string* out) { list.RenderMetrics(f, out); }, jobs->jobs(),
      scrape->scraper()));
  auto* collector =
      list.Add(std::make_unique<AgentService>(ctx, &agent, recorder, alerting, scrape));
  list.RegisterRoutes(server->get());
  list.StartAll();
  if (Status s = (*server)->Start(); !s.ok()) {
    logger->Error(s.message());
    return 1;
  }
  logger->Info("gpuwarden " + version + " serving on " + config.listen + " (port " +
               std::to_string((*server)->port()) + ")" +
               (agent.simulated() ? ", simulated fleet '" + config.simulate.scenario + "'" : "") +
               (config.web_config_file.empty() ? "" : ", web config " + config.web_config_file));
  // Memory freed by the last large queries goes back to the kernel while the agent idles, all
  // but a warm reserve at the main heap's top for the next cold query (base/heap.h).
  KeepHeapReserve(kHeapReserveBytes);
  PeriodicHeapTrim idle_trim;
  int signal_number = 0;
  while (true) {
    sigwait(&signals, &signal_number);
    if (signal_number != SIGHUP) break;
    logger->Info("received SIGHUP, reloading the rules");
    (void)alerting->alerting()->Load();
  }
  logger->Info(std::string("received ") + (signal_number == SIGINT ? "SIGINT" : "SIGTERM") +
               ", shutting down");
  // In reverse order: the collector (bounded), the query gate and the server, then the recorder
  // (which records the last snapshot) — so what must be durable is written whatever the collector
  // left behind: the last snapshot and the WAL commit, the rules' and queues' state, the
  // governance checkpoint, and last the store's final flush.
  list.StopAll();
  const collect::Collector::StopOutcome& stopped = collector->outcome();
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
