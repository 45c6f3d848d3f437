// serve/training_service.h — the serve command's training throughput: for each scrape target bound
// to a job (scrape.targets[].job_id with `outputs`, the job's own progress counter), the job's
// throughput while it runs, on /metrics and in the store, and the throughput figures of its job
// record (docs/jobs.md, "Training throughput"). A running job without such a target whose process
// declares GPUWARDEN_METRICS_PORT (JobsService::HeldGpus::metrics_port) gets one found at run
// time: target `job:<id>` on 127.0.0.1:<port>/metrics in one of the scraper's job target slots
// (Scraper::ClaimJobTarget), counting training_{samples,tokens,steps}_total (the unit from the
// page's # TYPE line), released when the job ends.
//
//   TrainingService training(config, &scraper, &jobs, appender, logger);
//   jobs.SetJobThroughputLookup([&](const JobRecord& r) { return training.Throughput(r); });
//   recorder.SetAfterRecord([&](const Snapshot& s, int64_t t) {
//     ...; jobs.OnSnapshot(s); ...; training.OnSnapshot(s, t); });  // after scraper and jobs
//   page.SetExtra([&](Format f, std::string* out) { training.RenderMetrics(f, out); });
//
// Families (docs/metrics.md, "Training throughput"), one series per bound job that is running
// (the jobs service lists it) and has a rate (scrape/job_throughput.h: two scrapes in the last
// minute), labels {job_id, team, unit} (unit = the target's output_unit):
//   gpu_job_training_throughput           units/s (the counter's rate over the last minute)
//   gpu_job_training_throughput_per_gpu   units/s per GPU the job holds (MIG units by share)
//   gpu_job_training_throughput_per_watt  units/s per watt its GPUs draw now (units per joule)
//   gpu_job_training_units_per_cost       units per unit of money at the job's cost rate now
//                                         (+ label currency; only with governance.prices)
//   gpu_job_training_units_total          units the job has done (its counter, from 0)
// A job that ended, or whose counter stopped answering for a minute, gets stale markers.
// Each bound target is scraped only while its job runs here (Scraper::SetJobRunning, told at every
// snapshot): before the job starts and after it ended it is neither scraped nor "down".
//
// Records: Throughput(record) fills JobRecord::throughput — total (the counter as last scraped,
// counted from 0: the job's counter started with it), avg_per_s over the job's run time, and per
// GPU-hour, kWh and cost of the record's own figures (absent where those are). The jobs service
// calls it for finished jobs (final) and for running ones in the API (so far).
//
// Threading: OnSnapshot on the recorder's thread; RenderMetrics on HTTP threads; Throughput on
// the jobs service's threads with its lock held (this service never calls the jobs service while
// holding its own lock, so the two locks never nest the other way). No disk I/O.
#ifndef GPUWARDEN_SERVE_TRAINING_SERVICE_H_
#define GPUWARDEN_SERVE_TRAINING_SERVICE_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/log.h"
#include "collect/exposition.h"
#include "collect/snapshot.h"
#include "config/config.h"
#include "governance/settings.h"
#include "jobs/job_records.h"
#include "scrape/job_throughput.h"
#include "scrape/scraper.h"
#include "serve/jobs_series.h"
#include "serve/jobs_service.h"
#include "serve/service.h"

namespace gw::serve {

class TrainingService {
 public:
  // `scraper`, `jobs` and `logger` must outlive this object; `appender` (may be null) too.
  TrainingService(const config::Config& config, scrape::Scraper* scraper, const JobsService* jobs,
                  tsdb::Appender* appender, Logger* logger);

  // One recorded snapshot (the recorder's thread, after the scraper's Drain and the jobs service).
  void OnSnapshot(const collect::Snapshot& snapshot, int64_t t_ms);

  void RenderMetrics(collect::Format format, std::string* out) const;

  // The throughput figures for `record` (its job bound to a target that was counted), else none.
  std::optional<jobs::JobThroughputRecord> Throughput(const jobs::JobRecord& record) const;

 private:
  struct Bound {
    std::size_t target = 0;  // index in the scraper: scrape.targets, then its job target slots
    std::string job_id, unit, metric;
    scrape::JobThroughput history;
    bool counted = false;
    double total = 0;  // the scraper's count (from 0), as of its last successful scrape
    // As of the last snapshot: running (listed by the jobs service) with a rate.
    bool live = false;
    std::string team;
    double rate = 0, gpus = 0, power_w = 0, cost_per_hour = 0;
    bool has_power = false, has_cost = false;
    // Found at run time (the job's GPUWARDEN_METRICS_PORT), not configured: its port; released
    // once the job ended (its slot may be another job's then), kept a while for the record.
    bool found = false, released = false;
    int port = 0;
    double released_s = 0;
  };
  void Walk(TaskFamilySink* sink) const;  // mu_ held
  // Claims a scrape target for each running job that declares its endpoint and has none (mu_).
  void Discover(const std::vector<JobsService::HeldGpus>& held);
  // A found target's unit and counter, from its page's # TYPE line (mu_ held).
  void LearnUnit(Bound* b);

  scrape::Scraper* scraper_;
  const JobsService* jobs_;
  tsdb::Appender* appender_;
  Logger* log_;
  governance::PriceSettings prices_;
  bool priced_ = false;

  mutable std::mutex mu_;
  std::vector<Bound> bound_;
  std::set<std::string> configured_jobs_;  // jobs with a scrape.targets entry: never discovered
  std::set<std::string> unplaced_;         // jobs whose endpoint found no free slot (logged once)
  double now_s_ = 0;
  std::unique_ptr<TaskSeriesRecorder> series_;  // the recorder's thread
};

// The part of `serve`'s service list (serve/service.h): a TrainingService whose figures go into
// `jobs`' records (JobsService::SetJobThroughputLookup), after the jobs (who runs) and before the
// rules in the list. Every pointer must outlive the returned part.
std::unique_ptr<Service> MakeTrainingService(const config::Config& config, scrape::Scraper* scraper,
                                             JobsService* jobs, tsdb::Appender* appender,
                                             Logger* logger);

}  // namespace gw::serve

#endif  // GPUWARDEN_SERVE_TRAINING_SERVICE_H_
