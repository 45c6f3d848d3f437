// scrape/scraper.h — scraping application targets into the store (config `scrape.targets`).
//
//   Scraper scraper(config.scrape.targets, &logger);
//   scraper.Start();                                   // realtime: its own thread, wall clock
//   recorder.SetAfterRecord([&](const Snapshot& s, int64_t t) {
//     scraper.ScrapeDue(t);                            // stepped simulator only (instead of Start)
//     if (scraper.Drain(&appender, s) > 0) appender.Commit();
//   });
//   scraper.WriteFamilies(&writer);                    // into the /metrics page's expo::Writer
//
// A scrape GETs the target's page (Prometheus text 0.0.4 or OpenMetrics, parsed by
// tsdb::ParseText — the same reader as `gpuwarden tsdb import`) and keeps every sample at the
// scrape's start time (timestamps in the page are ignored) with the extra label
// target="<name>". A scraped `target` label is kept as `exported_target` (Prometheus'
// honor_labels: false). A series present in the previous scrape and missing now gets a stale
// marker; a failed scrape (no reply, HTTP error, unparsable page) stores nothing from the page and
// marks every series of the previous scrape stale. Per scrape the store also gets
// gpuwarden_scrape_up, gpuwarden_scrape_duration_seconds and gpuwarden_scrape_samples {target},
// and, for each GPU of the target's `gpus`, gpu_service_info{target, gpu, uuid} 1 (the contract
// diagnosis uses to find the GPUs behind a service). The target going down or coming back is
// logged once per change, with the reason. With `outputs` (a selector over the target's counters)
// each successful scrape also sums the selected series, reset-aware, into the target's outputs
// total (Outputs): a series whose value drops counts from 0 again (the service restarted), a
// series that appears after the first successful scrape counts from 0, and the first successful
// scrape is the baseline (for a target bound to a job — `job_id` — it counts from 0 as well: the
// job's counter started with the job).
//
// A target bound to a job (`job_id`) lives with its job: it is scraped only while the job runs on
// this node, as the caller says through SetJobRunning (serve/training_service.h, from the jobs the
// task layer lists) — not before the job started, not after it ended, never for a job on another
// node. When the job stops running the scraper marks the target's series stale once, its
// gpuwarden_scrape_* series included, and leaves it out of /metrics (/api/v1/targets: "unknown"):
// a training run whose endpoint goes away with it is not a target that is down. Its outputs
// counted so far stay readable (Outputs), for the job's record.
//
// Job endpoints found at run time (a job's GPUWARDEN_METRICS_PORT, docs/jobs.md) take one of
// `job_target_slots` extra targets after the configured ones: ClaimJobTarget scrapes a job's page
// as a job-bound target until ReleaseJobTarget; the slot is free again once the target's stale
// markers are in the store. Slot indices are stable while claimed (Outputs, Health).
//
// Threading: scrapes run on the scrape thread (Start) or on the caller of ScrapeDue — never
// both, never on an HTTP request thread. The store has one writer, so scrape results are queued
// (FIFO, at most kMaxQueued; a target whose results are not drained is not scraped meanwhile)
// and appended by Drain on the store's writer thread (the recorder's). WriteFamilies and
// Health may be called from any thread. Steady state does not allocate per sample: series are
// looked up by their text in a per-target table, and batches are recycled.
#ifndef GPUWARDEN_SCRAPE_SCRAPER_H_
#define GPUWARDEN_SCRAPE_SCRAPER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "collect/recorder.h"
#include "collect/snapshot.h"
#include "expo/expo.h"
#include "scrape/target.h"

namespace gw::scrape {

// What /metrics and tests see of one target.
struct TargetHealth {
  std::string name, url;
  bool scraped = false;  // at least one scrape finished
  bool up = false;
  double duration_s = 0;
  int64_t last_scrape_ms = 0;  // when the last scrape started (its samples' time); 0: none yet
  uint64_t samples = 0;        // in the last successful scrape
  uint64_t scrapes = 0, errors = 0;
  std::string last_error;  // "" while up
  // A job-bound target whose job does not run here (now): not scraped, not listed on /metrics.
  bool waiting_for_job = false;
  // With `outputs` configured: the target's outputs counted since its first successful scrape
  // (Scraper::CountOutputs), as of the last successful scrape.
  bool outputs_known = false;
  double outputs_total = 0;
  int64_t outputs_ms = 0;  // the time of the scrape that counted outputs_total
};

// The clock of the realtime loop (the system clock by default; tests drive it). Must outlive the
// scraper.
struct ScraperOptions {
  const Clock* clock = &SystemClock();
  // Room for job endpoints found at run time (ClaimJobTarget); 0: none.
  size_t job_target_slots = 0;
};

class Scraper {
 public:
  static constexpr size_t kMaxQueued = 256;

  // `log` must outlive the scraper. Targets are taken as validated (cli/config checks names,
  // URLs, intervals).
  Scraper(std::vector<TargetConfig> targets, Logger* log, ScraperOptions options = {});
  ~Scraper();  // Stop()s
  Scraper(const Scraper&) = delete;
  Scraper& operator=(const Scraper&) = delete;

  static constexpr size_t kNoSlot = ~size_t{0};

  // No target configured and no room for found ones.
  bool empty() const { return targets_.empty(); }

  // Without a store writer (no history, or an agent that records nothing because NVML is
  // missing): scrape results update health and /metrics only and are then dropped. Before Start.
  void SetStoreless() { storeless_ = true; }

  // Starts the scrape thread: each target is scraped at once, then every interval (wall clock).
  void Start();
  void Stop();

  // Scrapes, on the calling thread, every target due at `t_ms` (first call: all), stamping the
  // samples with `t_ms`. For a clock that only moves when told (the stepped simulator).
  void ScrapeDue(int64_t t_ms);

  // On the store's writer thread: appends every queued scrape result through `appender` (no
  // Commit — the caller commits) and gpu_service_info with the UUIDs of `snapshot`'s GPUs.
  // Returns the number of samples appended (stale markers included).
  size_t Drain(tsdb::Appender* appender, const collect::Snapshot& snapshot);

  // gpuwarden_scrape_* {target} and gpu_service_info (docs/metrics.md, "Business metrics").
  void WriteFamilies(expo::Writer* writer) const;
  // The same, appended to `out` in `format` (WriteFamilies over a writer of its own).
  void RenderMetrics(expo::Format format, std::string* out) const;
  std::vector<TargetHealth> Health() const;
  // Per target (in the configured order), the # HELP, # TYPE and # UNIT lines of its last
  // successful page, one per line ("" before one): what /api/v1/metadata reports of the targets.
  // Kept as the page wrote them; copied here only when they change.
  std::vector<std::string> Descriptors() const;
  // The outputs of target `target` (index into the configured list) counted so far: false while
  // none are (no `outputs`, or no successful scrape yet). Any thread; no allocation.
  bool Outputs(size_t target, double* total) const;
  // The same, with the time (ms) of the scrape that counted them (a job's throughput is their
  // rate between scrapes).
  bool Outputs(size_t target, double* total, int64_t* t_ms) const;
  // Whether the job of target `target` (bound by `job_id`) runs on this node now. Until the first
  // call a job-bound target is not scraped; other targets ignore it. Any thread; cheap when nothing
  // changes (an atomic exchange). Starting: the target is scraped at once. Stopping: its series get
  // stale markers at the scraping side's next turn and it is no longer scraped.
  void SetJobRunning(size_t target, bool running);
  // Scrapes a job's endpoint found at run time (`config`: name, url, interval, outputs and job_id
  // set; its job runs now) in a free slot, from the scraping side's next turn. Returns its index,
  // or kNoSlot when every slot is taken. Any thread.
  size_t ClaimJobTarget(TargetConfig config);
  // The job of a claimed slot ended: as SetJobRunning(false) for a configured job-bound target,
  // then the slot is free (its index means nothing any more). Any thread.
  void ReleaseJobTarget(size_t index);
  // The configured targets, in order (as given to the constructor).
  const TargetConfig& target_config(size_t target) const;
  size_t size() const { return targets_.size(); }

 private:
  struct Target;
  struct Batch;
  struct Written;  // the writer's per-target refs

  void Run();
  // Scrapes one target at t_ms and queues the result; false when its queue is full.
  void ScrapeOne(size_t index, int64_t t_ms);
  // The scraping side's view of a job-bound target's job: false while the target is not to be
  // scraped (after queueing its stale markers once, when its job just stopped).
  bool FollowJob(size_t index, int64_t t_ms);
  // Queues the stale markers of a target whose job stopped (scraping side); `free_slot`: the
  // slot is free once they are drained.
  void Retire(size_t index, int64_t t_ms, bool free_slot);
  // A slot's claimed config becomes its target (scraping side, mu_ held).
  enum class SlotState { kFree, kClaimed, kActive, kReleasing, kDraining };
  struct Slot {
    SlotState state = SlotState::kFree;
    TargetConfig pending;
  };
  std::unique_ptr<Batch> TakeSpare();
  static void CountOutputs(Target* t, const Batch& batch);  // the scraping side

  Logger* log_;
  ScraperOptions options_;
  // The configured targets, then the job target slots (a slot's Target is replaced under mu_ by
  // the scraping side when claimed; other threads read it only under mu_ or, in Drain, only while
  // it has batches queued).
  std::vector<std::unique_ptr<Target>> targets_;
  size_t configured_ = 0;
  std::vector<Slot> slots_;  // under mu_

  mutable std::mutex mu_;  // queue_, spare_, health, uuids_, stopping_
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Batch>> queue_;
  std::vector<std::unique_ptr<Batch>> spare_;
  std::vector<std::string> uuids_;  // GPU index -> UUID, from the last Drain
  bool stopping_ = false;
  bool wake_ = false;  // a job-bound target's job started or stopped: the scrape thread looks
  std::atomic<bool> storeless_{false};
  std::thread thread_;

  std::vector<std::unique_ptr<Written>> written_;  // writer thread only
};

}  // namespace gw::scrape

#endif  // GPUWARDEN_SCRAPE_SCRAPER_H_
