// Per-job records: written when a job ends, durable across agent restarts, readable back; and the
// ledger that produces them from scheduler events and collection cycles.
//
// On disk: `<dir>/jobs.jsonl`, one JSON object per finished job, appended with O_APPEND and
// fsync'ed before Append returns. Keys: job_id, source, name, user, account, partition, team,
// state, state_reason, submit_time, eligible_time, start_time, end_time (unix seconds; null =
// never; older records wrote 0, read the same; gpu.start_s/end_s and evidence times likewise),
// and when known exit_code, queue_wait_s (start - eligible), submit_wait_s (start - submit), and
// "gpu": {gpus, start_s, end_s, gpu_seconds, observed_gpu_seconds, energy_j, power_integral_j,
// util_avg, util_max (ratios 0-1; older records: util_avg_pct/util_max_pct in percent, read
// as ratios), memory_peak_bytes, throttle_s {reason: seconds}, ecc_corrected,
// ecc_uncorrected, xid_count, idle_gpu_seconds, idle_while_allocated, first_activity_s?,
// start_latency_s?, sm_active_avg?, sm_active_max?, tensor_active_avg?, tensor_active_max?
// (GPM ratios 0-1; left out when no GPU of the job reported them), mig? [{gpu, mig_instance,
// mig_profile, mig_uuid, share}], gpu_equivalents?} — "gpus" lists every GPU the job ran on, "mig"
// the MIG instances it held (jobs/gpu_unit.h; their GPUs are in "gpus" but not held whole),
// "gpu_equivalents" the GPUs held counted by share — and when the
// governance layer priced the job "cost": {currency, allocated_gpu_hours, energy_kwh,
// allocation_cost, energy_cost, idle_allocated_cost, total_cost} (its final figures:
// cli/governance_service.h); "outcome": {outcome, cause, summary, evidence: [{time, gpu?, kind,
// value, detail}]}; "throughput": {unit, metric, total, avg_per_s, per_gpu_hour?, per_kwh?,
// per_cost?}. Readers ignore unknown keys; a record without "cost" (older, or no
// prices) reads with no cost. A torn last line (crash mid-append) is skipped when reading and the
// next append starts on a fresh line. A job id may appear more than once (a requeued job); `Find`
// returns the latest.
//
// In memory (for the agent's API, which must not read the disk per request): a store opened with
// `JobRecordStoreOptions::memory_records` > 0 loads the file once at Open and keeps the most recent
// records — at most that many (100,000 in serve), and only those that ended within `memory_keep_s`
// of the newest one (serve: storage.retention) — appending each new record as it is written.
// Older records stay on disk only (`ReadAll`, `Find`, and `gpuwarden jobs` without --url).
//
// Durability: when Append returns Ok, the record's line is on disk (written and fsync'ed) and
// only then is it added to memory — so a record the agent's API lists as finished (it lists from
// memory) survives a crash of the agent or the machine. A failed write is the exception: the record
// is still kept in memory (the API shows it) and the error returned (serve counts it in
// gpuwarden_job_record_errors_total).
//
// Threading: JobRecordStore serialises its appends and file reads with one mutex and guards the
// records in memory with another, taken only briefly: the API's in-memory reads never wait for a
// write or an fsync. JobLedger is not synchronised (one owner).
#ifndef GPUWARDEN_JOBS_JOB_RECORDS_H_
#define GPUWARDEN_JOBS_JOB_RECORDS_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "jobs/attribution.h"
#include "jobs/job_stats.h"
#include "jobs/slurm.h"
#include "jobs/teams.h"

namespace gw::jobs {

// What a finished job cost (governance/usage.h's figures at its end): its GPUs' allocation cost
// (GPU-hours x the price of their model) and energy cost while it held them.
struct JobCostRecord {
  std::string currency;
  double allocated_gpu_hours = 0;
  double energy_kwh = 0;
  double allocation_cost = 0;
  double energy_cost = 0;
  double idle_allocated_cost = 0;  // the part of allocation_cost spent idle
  double Total() const { return allocation_cost + energy_cost; }
};

// How a job ended and why (jobs/outcome.h classifies; docs/jobs.md "Outcomes" defines the values).
// outcome: "completed", "failed", "cancelled", "timeout", "out_of_memory" (host memory, Slurm's
// OUT_OF_MEMORY), "node_fail", "preempted", "reclaimed" (our governance policy cancelled it),
// "vanished" (left the scheduler unseen). cause: "none" (completed), "gpu_fault", "gpu_oom",
// "user", "scheduler", "unknown".
struct JobOutcomeEvidence {
  std::int64_t time = 0;        // unix seconds
  std::optional<unsigned> gpu;  // the GPU it was seen on (NVML index), if any
  std::string kind;             // "xid", "ecc_uncorrected", "gpu_lost", "memory_full", "exit_code",
                                // "state", "reclaim", "throttle", ...
  double value = 0;    // the XID number, the error count, the memory ratio, the exit code...
  std::string detail;  // one readable sentence
};
struct JobOutcomeRecord {
  std::string outcome;
  std::string cause;
  std::string summary;  // one sentence a user reads: "XID 79 (GPU fell off the bus) on GPU 3 ..."
  std::vector<JobOutcomeEvidence> evidence;
};

// A training job's own output (a scraped throughput counter tied to the job, docs/jobs.md
// "Training throughput"), concluded at its end.
struct JobThroughputRecord {
  std::string unit;    // "samples", "tokens", "steps"
  std::string metric;  // the counter it came from
  double total = 0;    // units produced while the job ran
  double avg_per_s = 0;
  std::optional<double> per_gpu_hour;  // total / allocated GPU-hours
  std::optional<double> per_kwh;       // total / energy (kWh) of its GPUs
  std::optional<double> per_cost;      // total / total cost (the record's cost currency)
};

struct JobRecord {
  std::string job_id;
  std::string source;  // "slurm", "kubernetes" (a pod), or "process" (GPUWARDEN_JOB, no scheduler)
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
  std::optional<std::int64_t> queue_wait_s;       // start - eligible
  std::optional<std::int64_t> submit_wait_s;      // start - submit
  std::optional<JobGpuStats> gpu;                 // absent when the job never ran on GPUs
  std::optional<JobCostRecord> cost;              // absent when nobody priced it
  std::optional<JobOutcomeRecord> outcome;        // absent in records written before outcomes
  std::optional<JobThroughputRecord> throughput;  // absent unless the job exported its output
};

std::string JobRecordToJson(const JobRecord& record);  // one line, no newline
Expected<JobRecord> JobRecordFromJson(std::string_view line);

struct JobRecordStoreOptions {
  std::size_t memory_records = 0;  // 0: nothing kept in memory (offline readers)
  double memory_keep_s = 0;        // > 0: drop records that ended this long before the newest
};

// A record as kept in memory: its JSON line (as on disk) and what the API filters on.
struct StoredJobRecord {
  std::string job_id;
  std::string team;
  std::string partition;
  std::string outcome, cause;  // the record's outcome ("" when it has none)
  std::int64_t start_time = 0;
  std::int64_t end_time = 0;
  std::string json;  // JobRecordToJson
};

class JobRecordStore {
 public:
  // Creates `dir` if needed; with `options.memory_records`, loads the file's records into memory
  // (unreadable lines are skipped, as ReadAll does).
  static Expected<std::unique_ptr<JobRecordStore>> Open(const std::string& dir,
                                                        JobRecordStoreOptions options = {});

  // Writes the record (fsync'ed), then keeps it in memory. If the write fails, the record is
  // still kept in memory (so the API shows it) and the error returned.
  Status Append(const JobRecord& record);
  // Every record in the file, oldest first (reads the disk).
  Expected<std::vector<JobRecord>> ReadAll() const;
  // The latest record in the file for a job id (reads the disk).
  Expected<std::optional<JobRecord>> Find(const std::string& job_id) const;

  // From memory, no disk I/O: the records kept, newest first, until `visit` returns false.
  void VisitRecent(const std::function<bool(const StoredJobRecord&)>& visit) const;
  // From memory: the JSON of the latest record kept for a job id.
  std::optional<std::string> RecentJson(const std::string& job_id) const;
  // From memory: whether the latest record kept for `job_id` has these start and end times (the
  // same run of the job — a requeued job starts again). Lets an agent that restarted skip jobs
  // that squeue still lists as finished and that it recorded before.
  bool RecentlyRecorded(const std::string& job_id, std::int64_t start_time,
                        std::int64_t end_time) const;
  std::size_t RecentCount() const;

  const std::string& path() const { return path_; }

 private:
  JobRecordStore(std::string path, JobRecordStoreOptions options)
      : path_(std::move(path)), options_(options) {}
  void Remember(StoredJobRecord record);       // mu_ held
  Status AppendLine(const std::string& line);  // file_mu_ held

  std::string path_;
  JobRecordStoreOptions options_;
  mutable std::mutex file_mu_;          // the file: appends and whole-file reads
  mutable std::mutex mu_;               // what follows (taken after file_mu_ when both are)
  std::deque<StoredJobRecord> recent_;  // oldest first; recent_[i] has sequence first_seq_ + i
  std::uint64_t first_seq_ = 0;
  std::unordered_map<std::string, std::uint64_t> latest_seq_;  // job id -> its newest record
  std::int64_t newest_end_ = 0;
};

// Turns scheduler events and collector cycles into per-job statistics and records.
//
// Where a finished job's record goes: with a `store`, OnEvent/OnProcesses append it (fsync'ed)
// before they return. With none, it is queued and handed out by TakeFinished, so that a caller
// can write it itself after releasing its own lock (JobsService does: no disk write under the
// lock its API waits on).
class JobLedger {
 public:
  JobLedger(TeamMap teams, JobRecordStore* store, JobStatsOptions options = {});

  // A Slurm lifecycle event (from SlurmPoller::TakeEvents). Finished/vanished jobs are written
  // (or queued, without a store).
  Status OnEvent(const JobEvent& event);
  // One collection cycle.
  void OnCycle(const CycleInput& cycle) { stats_.Observe(cycle); }
  // MIG units: JobStatsTracker::DescribeUnit and Narrow.
  void DescribeUnit(const MigUnitInfo& info) { stats_.DescribeUnit(info); }
  void Narrow(const std::string& job_id, unsigned gpu, const std::vector<unsigned>& units) {
    stats_.Narrow(job_id, gpu, units);
  }

  // Sites without a scheduler: the attributed GPU processes of one cycle at `now_s`. A job named
  // by GPUWARDEN_JOB (job_source "gpuwarden-env") starts when its first process is seen, on the
  // GPUs its processes use then, and ends (record written, source "process", state "ENDED") at
  // the first cycle in which none of its processes is left. Its team is GPUWARDEN_TEAM, else the
  // user's team.
  struct AttributedGpuProcess {
    ProcessAttribution process;
    unsigned gpu = 0;  // the unit id (jobs/gpu_unit.h): a GPU index or a MIG instance
  };
  Status OnProcesses(const std::vector<AttributedGpuProcess>& processes, double now_s);
  // Running jobs' statistics so far (for metrics).
  std::vector<JobGpuStats> Running(double now_s) const;
  // The same into `out`, reusing its storage (JobStatsTracker::RunningInto: no allocation in a
  // steady state).
  void RunningInto(double now_s, std::vector<JobGpuStats>* out) const {
    stats_.RunningInto(now_s, out);
  }
  // Without a store: the records of the jobs that finished since the last call, oldest first.
  std::vector<JobRecord> TakeFinished();
  const TeamMap& teams() const { return teams_; }

  // Where a finished job's cost comes from (the governance layer's ledger): asked, by the job id
  // a person knows ("1234", or the GPUWARDEN_JOB name), just before the record is written;
  // nullopt leaves the record without cost. Unset: no cost.
  using CostLookup = std::function<std::optional<JobCostRecord>(const std::string& job_id)>;
  void SetCostLookup(CostLookup lookup) { cost_lookup_ = std::move(lookup); }
  // How a finished job ended (jobs/outcome.h): asked with its record (cost included) just before
  // it is written; nullopt leaves the record without an outcome. Unset: no outcome.
  using OutcomeLookup = std::function<std::optional<JobOutcomeRecord>(const JobRecord& record)>;
  void SetOutcomeLookup(OutcomeLookup lookup) { outcome_lookup_ = std::move(lookup); }

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
  std::vector<JobRecord> finished_;                 // without a store: not yet taken
  CostLookup cost_lookup_;
  OutcomeLookup outcome_lookup_;
};

}  // namespace gw::jobs

#endif  // GPUWARDEN_JOBS_JOB_RECORDS_H_
