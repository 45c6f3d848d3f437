// serve/governance_service.h — the serve command's platform layer: idle-but-allocated GPUs and the
// reclaim policy, shared-pool congestion, team quotas and cost (governance/), on /metrics, in the
// store (so rules evaluate in-agent), and through /api/gw/v1/teams and /api/gw/v1/reclaim.
//
//   GovernanceService gov(config, &jobs, appender, logger);
//   gov.Start();                                  // worker: reclaim commands, capacity polls
//   recorder.SetAfterRecord([&](const Snapshot& s, int64_t t) {
//     jobs.OnSnapshot(s); gov.OnSnapshot(s, t); alerting.Tick(t); });
//   page.SetExtra([&](Format f, std::string* out) { gov.RenderMetrics(f, out); });
//   gov.RegisterRoutes(server);
//   ...
//   gov.Stop();                                   // also done by the destructor
//
// Each snapshot (after the task layer has taken it): the GPUs and the jobs holding them
// (JobsService::AllocatedJobs, plus QOS and comment from the Slurm job table) form a
// governance::Cycle; the idle tracker, the reclaim engine and the usage ledger take it; with
// jobs.scheduler: slurm the pool tracker takes squeue's jobs and the partitions' capacity
// (`governance.capacity_command`, polled every jobs.poll_interval on the worker). The resulting
// families (docs/metrics.md, "Governance") are appended to the store at the snapshot's time.
//
// Reclaim decisions are logged (info; failures as errors), appended to the decisions log (JSONL,
// governance.decisions_log, one DecisionToJson object per line) and counted in
// gpu_reclaim_actions_total{reason,action}. Commands (scontrol requeue, scancel, hooks) run on the
// worker thread, one at a time, as child processes without a shell and with a timeout; a failure
// is logged, counted in gpu_reclaim_failures_total and never retried for that job.
//
// Restarts: the cost totals, each team's GPU-hour period, the reclaim counters and (with Slurm)
// the pools' queue-wait windows are written to STORAGE_PATH/governance/usage.json (the
// checkpoints of governance/usage.h and pool.h, replaced atomically, fsync'ed) once a minute of
// snapshot time and at Stop, and read back by the constructor, so a restarted agent continues them
// (kill -9 loses at most the last minute; a quick restart charges the gap as any gap of at most 2
// minutes). An unreadable file is kept as usage.json.corrupt and said in the log; the figures then
// start from zero.
//
// Threading: OnSnapshot on the recorder's thread (it alone uses the appender); RenderMetrics and
// the API on the HTTP threads; commands and capacity polls on the worker. One mutex guards the
// state; no NVML call or disk read happens on a request path.
#ifndef GPUWARDEN_SERVE_GOVERNANCE_SERVICE_H_
#define GPUWARDEN_SERVE_GOVERNANCE_SERVICE_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/log.h"
#include "collect/exposition.h"
#include "collect/recorder.h"
#include "collect/snapshot.h"
#include "config/config.h"
#include "governance/pool.h"
#include "governance/reclaim.h"
#include "governance/usage.h"
#include "serve/jobs_series.h"
#include "serve/jobs_service.h"
#include "tsdb/storage.h"

namespace gw::http {
class Server;
}

namespace gw::serve {

// The decisions log a configuration names (governance.decisions_log, else
// STORAGE_PATH/governance/decisions.jsonl).
std::string DecisionsLogPath(const config::Config& config);
// Where the running totals are kept across restarts: STORAGE_PATH/governance/usage.json.
std::string UsageCheckpointPath(const config::Config& config);

class GovernanceService {
 public:
  // `jobs` and `logger` must outlive this object; `appender` (may be null: no store) too.
  GovernanceService(const config::Config& config, const JobsService* jobs,
                    collect::SampleAppender* appender, Logger* logger);
  ~GovernanceService();
  GovernanceService(const GovernanceService&) = delete;
  GovernanceService& operator=(const GovernanceService&) = delete;

  void Start();
  void Stop();

  // One recorded snapshot (the recorder's thread, after JobsService::OnSnapshot).
  void OnSnapshot(const collect::Snapshot& snapshot, int64_t t_ms);

  void RenderMetrics(collect::Format format, std::string* out) const;

  // GET /api/gw/v1/teams and GET /api/gw/v1/reclaim (?limit=N decisions, newest first).
  void RegisterRoutes(http::Server* server);
  std::string TeamsJson() const;
  std::string ReclaimJson(std::size_t limit) const;

  // A job's cost so far (running) or final (ended; the latest run), for its record
  // (JobsService::SetJobCostLookup): nullopt for a job never seen holding GPUs. Any thread.
  std::optional<jobs::JobCostRecord> FinalJobCost(const std::string& job_id) const;

 private:
  struct Figure {
    const char* family;   // index into the family table by name
    tsdb::Labels labels;  // sorted, with __name__
    double value = 0;
  };

  void Loop();
  void PollCapacity();
  void Record(const governance::Decision& d);  // mu_ held; queues the line for WriteDecisions
  void WriteDecisions();  // mu_ not held: appends the queued lines to the log, fsync
  void BuildFigures(const governance::Cycle& cycle);  // mu_ held
  void AppendToStore(int64_t t_ms);                   // recorder thread
  void LoadCheckpoint();
  void WriteCheckpoint();  // mu_ not held

  config::Config config_;
  const JobsService* jobs_;
  collect::SampleAppender* appender_;
  Logger* log_;
  const bool slurm_;
  std::string decisions_path_;

  mutable std::mutex mu_;
  governance::IdleTracker idle_;
  governance::ReclaimEngine reclaim_;
  governance::UsageLedger usage_;
  governance::PoolTracker pools_;
  bool capacity_known_ = false;
  bool capacity_up_ = false;
  std::string capacity_error_;
  std::map<std::pair<std::string, std::string>, double> actions_;  // (reason, action) -> count
  std::map<std::string, double> failures_;                         // action -> count
  std::deque<std::string> recent_;                                 // decisions' JSON, newest last
  double last_now_s_ = 0;
  std::vector<Figure> figures_;
  std::uint64_t decision_log_errors_ = 0;
  std::vector<std::string> unwritten_;                // decisions not yet in the log file
  std::mutex file_mu_;                                // serialises appends to the decisions log
  std::map<std::string, jobs::SlurmJob> slurm_jobs_;  // recorder thread: the last table copied
  std::uint64_t slurm_version_ = 0;                   // ... and its JobsVersion (0: none)
  std::string checkpoint_path_;
  double checkpoint_s_ = 0;         // snapshot time of the last checkpoint (mu_)
  std::mutex checkpoint_mu_;        // one checkpoint written at a time (recorder thread, Stop)
  bool checkpoint_failed_ = false;  // said once in the log until a write succeeds (checkpoint_mu_)

  // The worker.
  std::mutex queue_mu_;
  std::condition_variable wake_;
  std::deque<governance::ReclaimCommand> queue_;
  bool stopping_ = false;
  std::thread worker_;

  // The figures into the store, with series references and stale markers as the task layer's
  // families (serve/jobs_series.h); touched only on the recorder thread. Null without a store.
  std::unique_ptr<TaskSeriesRecorder> series_;
  std::vector<TaskLabel> labels_;  // reused per figure
  std::uint64_t store_errors_seen_ = 0;
};

}  // namespace gw::serve

#endif  // GPUWARDEN_SERVE_GOVERNANCE_SERVICE_H_
