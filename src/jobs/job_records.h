// Per-job records: written when a job ends, durable across agent restarts, readable back; and the
// ledger that produces them from scheduler events and collection cycles.
//
// On disk: `<dir>/jobs.jsonl`, one JSON object per finished job, appended with O_APPEND and
// fsync'ed before Append returns. Keys: job_id, source, name, user, account, partition, team,
// state, state_reason, submit_time, eligible_time, start_time, end_time (unix seconds; 0 = never),
// and when known exit_code, queue_wait_s (start - eligible), submit_wait_s (start - submit), and
// "gpu": {gpus, start_s, end_s, gpu_seconds, observed_gpu_seconds, energy_j, power_integral_j,
// util_avg_pct, util_max_pct, memory_peak_bytes, throttle_s {reason: seconds}, ecc_corrected,
// ecc_uncorrected, xid_count, idle_gpu_seconds, idle_while_allocated, first_activity_s?,
// start_latency_s?}. Readers ignore unknown keys. A torn last line (crash mid-append) is skipped
// when reading and the next append starts on a fresh line. A job id may appear more than once (a
// requeued job); `Find` returns the latest.
//
// Threading: JobRecordStore serialises its own appends and reads (mutex): the ledger writes while
// the HTTP API reads. JobLedger is not synchronised (one owner).
#ifndef GPUWARDEN_JOBS_JOB_RECORDS_H_
#define GPUWARDEN_JOBS_JOB_RECORDS_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "jobs/attribution.h"
#include "jobs/job_stats.h"
#include "jobs/slurm.h"
#include "jobs/teams.h"

namespace gw::jobs {

struct JobRecord {
  std::string job_id;
  std::string source;  // "slurm", or "process" (GPUWARDEN_JOB without a scheduler)
  std::string name;
  std::string user;
  std::string account;
  std::string partition;
  std::string team;
  std::string state;  // Slurm's final state ("COMPLETED", "FAILED", ...; "VANISHED")
  std::string state_reason;
  std::optional<int> exit_code;
  std::int64_t submit_time = 0;
  std::int64_t eligible_time = 0;
  std::int64_t start_time = 0;  // 0: never started (cancelled while pending, rejected)
  std::int64_t end_time = 0;
  std::optional<std::int64_t> queue_wait_s;   // start - eligible
  std::optional<std::int64_t> submit_wait_s;  // start - submit
  std::optional<JobGpuStats> gpu;             // absent when the job never ran on GPUs
};

std::string JobRecordToJson(const JobRecord& record);  // one line, no newline
Expected<JobRecord> JobRecordFromJson(std::string_view line);

class JobRecordStore {
 public:
  // Creates `dir` if needed.
  static Expected<std::unique_ptr<JobRecordStore>> Open(const std::string& dir);

  Status Append(const JobRecord& record);
  // Every record, oldest first.
  Expected<std::vector<JobRecord>> ReadAll() const;
  // The latest record for a job id.
  Expected<std::optional<JobRecord>> Find(const std::string& job_id) const;
  const std::string& path() const { return path_; }

 private:
  explicit JobRecordStore(std::string path) : path_(std::move(path)) {}
  std::string path_;
  mutable std::mutex mu_;
};

// Turns scheduler events and collector cycles into per-job statistics and records.
class JobLedger {
 public:
  JobLedger(TeamMap teams, JobRecordStore* store, JobStatsOptions options = {});

  // A Slurm lifecycle event (from SlurmPoller::TakeEvents). Finished/vanished jobs are written.
  Status OnEvent(const JobEvent& event);
  // One collection cycle.
  void OnCycle(const CycleInput& cycle) { stats_.Observe(cycle); }

  // Sites without a scheduler: the attributed GPU processes of one cycle at `now_s`. A job named
  // by GPUWARDEN_JOB (job_source "gpuwarden-env") starts when its first process is seen, on the
  // GPUs its processes use then, and ends (record written, source "process", state "ENDED") at
  // the first cycle in which none of its processes is left. Its team is GPUWARDEN_TEAM, else the
  // user's team.
  struct AttributedGpuProcess {
    ProcessAttribution process;
    unsigned gpu = 0;
  };
  Status OnProcesses(const std::vector<AttributedGpuProcess>& processes, double now_s);
  // Running jobs' statistics so far (for metrics).
  std::vector<JobGpuStats> Running(double now_s) const;
  const TeamMap& teams() const { return teams_; }

  // Builds the record of a finished job (exposed for tests and the process-based source).
  JobRecord MakeRecord(const SlurmJob& job, std::string_view final_state,
                       std::optional<JobGpuStats> gpu) const;

 private:
  struct ProcessJob {
    std::string user;
    std::string team;
    double start_s = 0;
  };
  TeamMap teams_;
  JobRecordStore* store_;
  JobStatsTracker stats_;
  std::map<std::string, ProcessJob> process_jobs_;  // keyed "process:<GPUWARDEN_JOB>"
};

}  // namespace gw::jobs

#endif  // GPUWARDEN_JOBS_JOB_RECORDS_H_
