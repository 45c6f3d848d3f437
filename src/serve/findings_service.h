// serve/findings_service.h — the findings that `serve` keeps for GET /api/gw/v1/findings,
// GET /api/gw/v1/report, /metrics and the store (`gpuwarden diagnose` and `gpuwarden report` with
// --url ask these endpoints; cli/diagnose_commands.h).
//
// FindingsService: evaluates the findings over diagnose.window every diagnose.interval of
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
#ifndef GPUWARDEN_SERVE_FINDINGS_SERVICE_H_
#define GPUWARDEN_SERVE_FINDINGS_SERVICE_H_

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/log.h"
#include "collect/exposition.h"
#include "collect/recorder.h"
#include "config/config.h"
#include "diagnose/diagnose.h"
#include "http/server.h"
#include "serve/jobs_series.h"
#include "tsdb/db.h"

namespace gw::serve {

class FindingsService {
 public:
  // `db` may be null (no history: the endpoints answer 503, nothing is exported). `synchronous`:
  // evaluate inside Tick (stepped simulator) instead of on the service's thread. `appender` (may
  // be null) gets the exported families at each Tick.
  FindingsService(tsdb::DB* db, bool synchronous, Logger* log,
                  const config::DiagnoseConfig& config = {}, tsdb::Appender* appender = nullptr);
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
  tsdb::Appender* appender_;
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

}  // namespace gw::serve

#endif  // GPUWARDEN_SERVE_FINDINGS_SERVICE_H_
