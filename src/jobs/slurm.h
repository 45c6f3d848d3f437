// The Slurm adapter: what `squeue --json` says about jobs, turned into a job table with lifecycle
// events stamped with Slurm's own times, kept through slurmctld outages.
//
// Three layers, each usable alone:
//   ParseSqueueJson     text -> jobs (pure; tolerant of 22.05's plain numbers and the
//                        {"set","number"} objects of later versions)
//   SlurmJobTable       successive polls -> current jobs + events (submitted, eligible, started,
//                        completed/failed/cancelled/timed out); a failed poll keeps the last known
//                        state and only moves the staleness figure
//   SlurmPoller         a thread running the squeue command as a child process with a timeout
//                        every `interval_s`, feeding a SlurmJobTable; never on the collector's
//                        thread
//
// Edge cases (docs/slurm-notes.md): a pending job's start_time (0, or the
// backfill scheduler's estimate — seen with Slurm 22.05) is "not started"; a running job's end_time
// is a projection (time limit, or start + 365 d) and is used only once the job is finished; a job
// cancelled while pending has start = end = cancel time and no nodes — it gets no "started" event;
// a job rejected at submission (FAILED with start = submit = end) gets "submitted" and "failed"
// only; a job that vanishes from squeue (MinJobAge passed, or never seen finishing) while it was
// last seen running or pending is closed with a "vanished" event at the poll time.
//
// Threading: SlurmJobTable is not synchronised (one owner). SlurmPoller is thread-safe: `Jobs()`,
// `PendingJobs()`, `TakeEvents()` and `Health()` may be called from any thread.
#ifndef GPUWARDEN_JOBS_SLURM_H_
#define GPUWARDEN_JOBS_SLURM_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "base/periodic_thread.h"
#include "jobs/job.h"
#include "jobs/job_source.h"

namespace gw::jobs {

// Parses squeue --json output. Errors: malformed JSON, no "jobs" array, or a non-empty "errors".
Expected<std::vector<SlurmJob>> ParseSqueueJson(std::string_view text);

// "gpu:2(IDX:0-1)", "gpu:a100:2(IDX:0,2)", "gpu(IDX:1,3-4)" -> indices; empty if no IDX part.
std::vector<unsigned> ParseGresIndices(std::string_view gres_detail);

// GPU count in a TRES string: "gres:gpu:2", "gres/gpu:a100:2", "cpu=1,gres/gpu=3" -> 2, 2, 3.
unsigned ParseTresGpuCount(std::string_view tres);

class SlurmJobTable {
 public:
  // Applies one successful poll taken at `now_s`; returns the events it produced, in time order.
  std::vector<JobEvent> Apply(const std::vector<SlurmJob>& jobs, double now_s);
  // Records a failed poll: the table keeps its jobs; only health changes.
  void Failed(const std::string& error, double now_s);

  // Jobs as last known: present in squeue, plus jobs that finished and are still listed.
  const std::map<std::string, SlurmJob>& jobs() const { return jobs_; }
  const SlurmHealth& health() const { return health_; }

 private:
  struct Seen {
    bool submitted = false, eligible = false, started = false, finished = false;
  };
  std::map<std::string, SlurmJob> jobs_;
  std::map<std::string, Seen> seen_;
  SlurmHealth health_;
};

struct SlurmPollerOptions {
  std::vector<std::string> command = {"squeue", "--json"};
  std::vector<std::string> extra_env;  // "SLURM_CONF=/x/slurm.conf" etc. added to the child's
  double interval_s = 15;
  double timeout_s = 10;
  std::size_t max_output_bytes = 64u << 20;
};

// Runs argv as a child process (no shell), collecting stdout; kills it after timeout_s.
// Errors: cannot start, timed out, non-zero exit (with the start of its stderr), output too big.
Expected<std::string> RunCommandCapture(const std::vector<std::string>& argv,
                                        const std::vector<std::string>& extra_env, double timeout_s,
                                        std::size_t max_output_bytes);

class SlurmPoller : public JobSource {
 public:
  // `clock` (must outlive the poller) dates the polls: job events, last_success_s.
  SlurmPoller(SlurmPollerOptions options, Logger* logger, const Clock* clock = &SystemClock());
  ~SlurmPoller() override;
  SlurmPoller(const SlurmPoller&) = delete;
  SlurmPoller& operator=(const SlurmPoller&) = delete;

  std::string Name() const override { return "slurm"; }
  void Start() override;  // first poll right away, then every interval
  void Stop() override;
  // Polls once on the calling thread (tests, and Start's thread).
  void PollOnce();

  std::map<std::string, SlurmJob> Jobs() const override;
  // Moves with every successful poll (the job table may have changed), never otherwise: a reader
  // that saw this version can skip copying Jobs() again.
  std::uint64_t JobsVersion() const override;
  SlurmHealth Health() const override;
  // The pending jobs of the last successful poll and the health as of that moment, read together.
  std::vector<SlurmJob> PendingJobs(SlurmHealth* health) const override;
  // Events since the last call (bounded: oldest dropped).
  std::vector<JobEvent> TakeEvents() override;

 private:
  SlurmPollerOptions options_;
  Logger* logger_;
  const Clock* clock_;
  mutable std::mutex mu_;
  SlurmJobTable table_;
  std::vector<JobEvent> events_;
  std::uint64_t jobs_version_ = 0;
  PeriodicThread thread_;  // runs PollOnce every interval_s
};

}  // namespace gw::jobs

#endif  // GPUWARDEN_JOBS_SLURM_H_
