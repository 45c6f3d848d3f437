// cli/diagnose_commands.h — `gpuwarden diagnose`, `gpuwarden report`, and the findings that
// `serve` keeps for GET /api/gw/v1/findings, /metrics and the store.
//
//   gpuwarden diagnose [--gpu G | --job J | --team T] [--since D] [--time T] [--json]
//                      [--url U | --data-dir DIR] [--config FILE]
//   gpuwarden report [--period D] [--time T] [--out FILE] [--json] [--url U | --data-dir DIR]
//                    [--config FILE]
//
// diagnose and report read the data directory (offline) or ask a running agent (--url: GET
// /api/gw/v1/findings, GET /api/gw/v1/report — useful while the agent holds the data directory).
// Both evaluate at --time (Unix seconds or RFC 3339; default now, or the agent's latest recorded
// time with --url). Offline, the thresholds and diagnose's default window are the configuration's
// `diagnose` section (config/diagnose_config.h); with --url, the agent's. Exit codes: 0 ok, 1
// failure (store unreadable, agent unreachable or refusing, file not written), 2 bad arguments.
//
// FindingsService (serve): evaluates the findings over diagnose.window every diagnose.interval of
// recorded time, off the request path — on its own thread, or synchronously after each recorded
// snapshot with a stepped simulator (so that tests see them when /-/sim/advance returns).
// Requests with the default window are answered from that cache (filters applied to it); a
// request with another `since` or a `time` is evaluated then, through the store's normal read
// path, as is GET /api/gw/v1/report (one at a time; another meanwhile gets 503).
//
// The cached evaluation is also exported (docs/metrics.md, "Findings"): gpuwarden_findings
// {kind,layer,severity} (active findings per kind, 0 included), gpuwarden_finding_active{id,kind,
// cause,layer,severity,gpu,uuid,job_id,team,partition,target} (1 per active finding; labels that
// do not apply are left out), gpuwarden_diagnose_duration_seconds, _errors_total,
// _evaluations_total and _last_evaluation_timestamp_seconds. RenderMetrics renders them from the
// cache; Tick appends them to the store at each recorded snapshot's time (stale markers when a
// finding ends), so rules in the agent see what Prometheus scrapes.
//
// Threading: Tick on the recorder's thread (it alone uses the appender); RenderMetrics and the
// routes on HTTP threads; evaluations on the service's thread (or in Tick). One mutex guards the
// cache; no evaluation and no disk I/O happens under it or on the /metrics path.
#ifndef GPUWARDEN_CLI_DIAGNOSE_COMMANDS_H_
#define GPUWARDEN_CLI_DIAGNOSE_COMMANDS_H_

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/log.h"
#include "cli/jobs_series.h"
#include "collect/exposition.h"
#include "collect/recorder.h"
#include "config/config.h"
#include "diagnose/diagnose.h"
#include "http/server.h"
#include "tsdb/db.h"

namespace gw::cli {

struct DiagnoseArgs {
  std::string gpu, job, team;  // at most one
  std::string since;           // empty: diagnose.window
  std::string time;            // empty: now
  bool json = false;
  std::string url;  // a running gpuwarden
};
int RunDiagnose(const config::Config& config, const DiagnoseArgs& args, Logger* logger);

struct ReportArgs {
  std::string period = "7d";
  std::string time;  // empty: now
  std::string out;   // file to write; empty: stdout
  bool json = false;
  std::string url;  // a running gpuwarden: GET /api/gw/v1/report
};
int RunReport(const config::Config& config, const ReportArgs& args, Logger* logger);

class FindingsService {
 public:
  // `db` may be null (no history: the endpoints answer 503, nothing is exported). `synchronous`:
  // evaluate inside Tick (stepped simulator) instead of on the service's thread. `appender` (may
  // be null) gets the exported families at each Tick.
  FindingsService(tsdb::DB* db, bool synchronous, Logger* log,
                  const config::DiagnoseConfig& config = {},
                  collect::SampleAppender* appender = nullptr);
  ~FindingsService();  // Stop()s
  FindingsService(const FindingsService&) = delete;
  FindingsService& operator=(const FindingsService&) = delete;

  void Start();
  void Stop();
  // After each recorded snapshot, with its time (the recorder's thread): evaluates when one is due
  // and the service is synchronous (else wakes the service's thread), then appends the exported
  // families of the latest evaluation at t_ms.
  void Tick(int64_t t_ms);
  // The exported families of the latest evaluation (nothing without a store).
  void RenderMetrics(collect::Format format, std::string* out) const;
  // GET /api/gw/v1/findings?gpu=&job=&team=&since=&time=
  // GET /api/gw/v1/report?period=&time=&format=html|json
  void RegisterRoutes(http::Server* server);

 private:
  // One sample of gpuwarden_findings or gpuwarden_finding_active.
  struct Figure {
    const char* family;
    std::vector<std::pair<std::string, std::string>> labels;  // in exposition order
    double value = 0;
  };

  void Run();
  void Evaluate(int64_t t_ms);
  static std::vector<Figure> BuildFigures(const diagnose::Diagnosis& d);
  // Every exported family, to `sink`; mu_ held. `scratch` holds one sample's label views.
  void Walk(TaskFamilySink* sink, std::vector<TaskLabel>* scratch) const;
  void AppendToStore(int64_t t_ms);  // the recorder's thread
  void ServeReport(const http::Request& req, http::Response& res);

  tsdb::DB* db_;
  bool synchronous_;
  Logger* log_;
  const config::DiagnoseConfig config_;
  collect::SampleAppender* appender_;
  promql::Engine engine_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int64_t last_eval_ms_ = 0, pending_ms_ = 0, latest_ms_ = 0;
  bool stopping_ = false;
  std::shared_ptr<const diagnose::Diagnosis> cached_;
  // The exported state (mu_).
  std::vector<Figure> figures_;
  double evaluations_ = 0, errors_ = 0, last_duration_s_ = 0;
  int64_t last_evaluated_ms_ = 0;
  std::thread thread_;
  std::mutex report_mu_;  // one report at a time
  // The store side (the recorder's thread only).
  std::unique_ptr<TaskSeriesRecorder> series_;
  std::vector<TaskLabel> labels_;
  std::uint64_t store_errors_seen_ = 0;
};

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_DIAGNOSE_COMMANDS_H_
