// serve/governance_service.h — the serve command's platform layer as a serve::Service:
// idle-but-allocated GPUs and the reclaim policy, shared-pool congestion, team quotas and cost
// (governance/), on /metrics, in the store (so rules evaluate in-agent), and through
// /api/gw/v1/teams and /api/gw/v1/reclaim. It wires the parts below and holds their one mutex:
//
//   serve/governance_cycle.h       a snapshot + the jobs holding its GPUs -> governance::Cycle
//   serve/governance_state.h       the domain's trackers and the reclaim counters
//   serve/governance_decisions.h   the decisions log (JSONL) and the recent decisions
//   serve/governance_commands.h    the worker: reclaim commands and capacity polls
//   serve/governance_checkpoint.h  usage.json, so a restarted agent continues the figures
//   serve/governance_metrics.h     the families (docs/metrics.md, "Governance")
//   serve/governance_api.h         the JSON routes
//
//   GovernanceService gov(config, &jobs, appender, logger);   // reads usage.json back
//   gov.RegisterRoutes(server); gov.Start();                  // the worker
//   gov.OnSnapshot(snapshot, t_ms);                           // after JobsService::OnSnapshot
//   gov.RenderMetrics(format, &page);
//   gov.Stop();                                               // also done by the destructor
//
// Each snapshot: the cycle goes to the idle tracker, the reclaim engine and the usage ledger;
// with jobs.scheduler: slurm the pool tracker takes squeue's jobs and the partitions' capacity
// (`governance.capacity_command`, polled every jobs.poll_interval on the worker). The figures are
// appended to the store at the snapshot's time.
//
// Reclaim decisions are logged (info; failures as errors), appended to the decisions log and
// counted in gpu_reclaim_actions_total{reason,action}. Commands run on the worker, one at a time,
// without a shell and with a timeout; a failure is logged, counted in gpu_reclaim_failures_total
// and never retried for that job.
//
// Restarts: the checkpoint is written once a minute of snapshot time and at Stop (kill -9 loses
// at most the last minute; a quick restart charges the gap as any gap of at most 2 minutes).
//
// Threading: OnSnapshot on the recorder's thread (it alone uses the appender); RenderMetrics and
// the API on the HTTP threads; commands and capacity polls on the worker. One mutex guards the
// state; no NVML call or disk read happens on a request path.
#ifndef GPUWARDEN_SERVE_GOVERNANCE_SERVICE_H_
#define GPUWARDEN_SERVE_GOVERNANCE_SERVICE_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "collect/exposition.h"
#include "collect/recorder.h"
#include "collect/snapshot.h"
#include "config/config.h"
#include "jobs/job_records.h"
#include "serve/governance_api.h"
#include "serve/governance_checkpoint.h"
#include "serve/governance_commands.h"
#include "serve/governance_cycle.h"
#include "serve/governance_decisions.h"
#include "serve/governance_metrics.h"
#include "serve/governance_state.h"
#include "serve/jobs_series.h"
#include "serve/jobs_service.h"
#include "serve/service.h"

namespace gw::http {
class Server;
}

namespace gw::serve {

class GovernanceService : public Service {
 public:
  // `jobs` and `logger` must outlive this object; `appender` (may be null: no store) too.
  // `clock` (default: the system's) is read for a command's outcome before the first snapshot.
  GovernanceService(const config::Config& config, const JobsService* jobs, tsdb::Appender* appender,
                    Logger* logger, const Clock* clock = &SystemClock());
  ~GovernanceService() override;
  GovernanceService(const GovernanceService&) = delete;
  GovernanceService& operator=(const GovernanceService&) = delete;

  const char* name() const override { return "governance"; }
  void Start() override;
  void Stop() override;

  // One recorded snapshot (the recorder's thread, after JobsService::OnSnapshot).
  void OnSnapshot(const collect::Snapshot& snapshot, int64_t t_ms) override;

  void RenderMetrics(collect::Format format, std::string* out) override;

  // GET /api/gw/v1/teams and GET /api/gw/v1/reclaim (?limit=N decisions, newest first; ?job=,
  // ?team=, ?gpu= filters: serve/governance_api.h).
  void RegisterRoutes(http::Server* server) override;
  std::string TeamsJson() const;
  std::string ReclaimJson(const ReclaimQuery& query) const;
  std::string ReclaimJson(std::size_t limit) const { return ReclaimJson(ReclaimQuery{limit}); }

  // A job's cost so far (running) or final (ended; the latest run), for its record
  // (JobsService::SetJobCostLookup): nullopt for a job never seen holding GPUs. Any thread.
  std::optional<jobs::JobCostRecord> FinalJobCost(const std::string& job_id) const;
  // Whether the reclaim policy acted on a job (cancel, requeue or its command; the first such
  // decision of its latest run), for its outcome (JobsService::SetReclaimLookup): nullopt if never.
  // Kept in memory for the last 10,000 jobs acted on (not across restarts). Any thread.
  std::optional<jobs::ReclaimNote> ReclaimOf(const std::string& job_id) const;

 private:
  void Record(const governance::Decision& d);  // mu_ held: counted, logged, queued for the file
  void CommandDone(const governance::ReclaimCommand& command, const std::string& error);
  void PollCapacity();               // the worker
  void AppendToStore(int64_t t_ms);  // recorder thread

  const config::Config config_;
  Logger* log_;
  const Clock* clock_;
  const bool slurm_;
  tsdb::Appender* appender_;

  mutable std::mutex mu_;
  GovernanceState state_;                  // (mu_)
  std::vector<GovernanceFigure> figures_;  // the last snapshot's (mu_)
  DecisionsLog decisions_;
  GovernanceCheckpoint checkpoint_;
  CycleBuilder cycles_;  // recorder thread
  CommandWorker worker_;

  // The figures into the store, with series references and stale markers as the task layer's
  // families (serve/jobs_series.h); touched only on the recorder thread. Null without a store.
  std::unique_ptr<TaskSeriesRecorder> series_;
  std::vector<TaskLabel> labels_;  // reused per figure
  std::uint64_t store_errors_seen_ = 0;
  // ReclaimOf's answers (mu_), and the jobs in the order they were acted on (for the bound).
  std::map<std::string, jobs::ReclaimNote> reclaimed_;
  std::deque<std::string> reclaimed_order_;
};

}  // namespace gw::serve

#endif  // GPUWARDEN_SERVE_GOVERNANCE_SERVICE_H_
