// serve/service_cost_service.h — the serve command's cost per output: for each application target
// (scrape.targets) with `gpus`, what its GPUs cost (governance.prices: allocation + energy), with
// `outputs`, what it produced, and the cost per output over the last hour
// (governance/service_cost.h); on /metrics, in the store, and through /api/gw/v1/services.
//
//   ServiceCostService services(config, &scraper, appender, logger);
//   recorder.SetAfterRecord([&](const Snapshot& s, int64_t t) {
//     scraper.Drain(...); ...; services.OnSnapshot(s, t); });   // after the scraper's Drain
//   page.SetExtra([&](Format f, std::string* out) { services.RenderMetrics(f, out); });
//   services.RegisterRoutes(server);
//
// Families (docs/metrics.md, "Cost per output"): gpu_service_cost_total{target},
// gpu_service_outputs_total{target}, gpu_service_cost_per_output{target} and
// gpu_service_output_info{target,unit}; appended to the store at each snapshot's time through a
// TaskSeriesRecorder (serve/jobs_series.h), as governance's. A target's outputs are the scraper's
// count as of its last successful scrape (scrape/scraper.h: reset-aware).
//
// GET /api/gw/v1/services: {"status":"success","data":{"currency", "window_seconds",
// "services":[{"target", "gpus", "outputs_selector", "output_unit", "gpu_hours", "energy_kwh",
// "allocation_cost", "energy_cost", "cost", "outputs" (null until counted), "window":
// {"seconds", "cost", "outputs"}, "cost_per_output" and "cost_per_1k_outputs" (null without
// outputs in the window)}]}}.
//
// Restarts: the ledger's checkpoint (totals, outputs so far, the window) is written to
// STORAGE_PATH/governance/services.json (atomically, fsync'ed) once a minute of snapshot time and
// when the service is destroyed, and read back by the constructor, so gpu_service_cost_total and
// gpu_service_outputs_total continue across a restart (outputs made while the agent was down are
// not counted). An unreadable file is kept as services.json.corrupt and said in the log.
//
// Threading: OnSnapshot on the recorder's thread (it alone uses the appender); RenderMetrics and
// the API on the HTTP threads. One mutex guards the ledger; no disk read on a request path.
#ifndef GPUWARDEN_SERVE_SERVICE_COST_SERVICE_H_
#define GPUWARDEN_SERVE_SERVICE_COST_SERVICE_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/log.h"
#include "collect/exposition.h"
#include "collect/recorder.h"
#include "collect/snapshot.h"
#include "config/config.h"
#include "governance/service_cost.h"
#include "scrape/scraper.h"
#include "serve/jobs_series.h"

namespace gw::http {
class Server;
}

namespace gw::serve {

class ServiceCostService {
 public:
  // `scraper` and `logger` must outlive this object; `appender` (may be null: no store) too.
  ServiceCostService(const config::Config& config, const scrape::Scraper* scraper,
                     tsdb::Appender* appender, Logger* logger);
  ~ServiceCostService();  // Stop()s
  ServiceCostService(const ServiceCostService&) = delete;
  ServiceCostService& operator=(const ServiceCostService&) = delete;

  // No target has gpus or outputs: nothing to do.
  bool empty() const { return targets_.empty(); }

  // Writes the last checkpoint; call after the recorder has stopped. Safe to call twice.
  void Stop();

  // One recorded snapshot (the recorder's thread, after the scraper's Drain).
  void OnSnapshot(const collect::Snapshot& snapshot, int64_t t_ms);

  void RenderMetrics(collect::Format format, std::string* out) const;

  // GET /api/gw/v1/services.
  void RegisterRoutes(http::Server* server);
  std::string ServicesJson() const;

 private:
  void Walk(TaskFamilySink* sink) const;  // mu_ held
  void LoadCheckpoint();
  void WriteCheckpoint();  // the recorder's thread or the destructor; mu_ not held

  const scrape::Scraper* scraper_;
  tsdb::Appender* appender_;
  Logger* log_;
  std::vector<std::size_t> targets_;  // ledger service i -> index in scrape.targets
  std::vector<std::string> selectors_;

  mutable std::mutex mu_;
  governance::ServiceCostLedger ledger_;
  bool observed_ = false;

  // Reused each cycle (the recorder's thread).
  governance::Cycle cycle_;
  std::vector<std::optional<double>> outputs_;
  std::unique_ptr<TaskSeriesRecorder> series_;
  std::uint64_t store_errors_seen_ = 0;
  std::string checkpoint_path_;
  bool stopped_ = false;     // Stop wrote the last checkpoint
  double checkpoint_s_ = 0;  // snapshot time of the last checkpoint (the recorder's thread)
  bool checkpoint_failed_ = false;
};

}  // namespace gw::serve

#endif  // GPUWARDEN_SERVE_SERVICE_COST_SERVICE_H_
