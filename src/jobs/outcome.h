// jobs/outcome.h — why a job ended: its outcome (what the scheduler and our policy say happened)
// and its cause (what the evidence on its GPUs says), for its record (JobRecord::outcome) and
// gpu_job_outcomes_total. docs/jobs.md "Outcomes" is the user's version of this manual.
//
// Two parts:
//
//   DeviceEventLog  a small ring of recent device events per GPU unit, fed from the readings the
//                   agent already takes every collection cycle (Observe): a new XID (by code), new
//                   uncorrectable ECC errors, a GPU lost (fell off the bus), device memory full.
//                   Nothing is read from disk or NVML here; Collect answers from memory.
//   ClassifyOutcome the pure classifier: a finished job's final state, exit code, times, GPU units,
//                   our reclaim decision (if any) and the device events of its GPUs -> outcome,
//                   cause, a one-sentence summary and the evidence items.
//
// Outcome (from the final state; "reclaimed" from our governance decision):
//   COMPLETED -> completed            FAILED -> failed            CANCELLED -> cancelled
//   TIMEOUT, DEADLINE -> timeout      OUT_OF_MEMORY (host memory, Slurm's cgroup) -> out_of_memory
//   NODE_FAIL, BOOT_FAIL -> node_fail PREEMPTED -> preempted      VANISHED -> vanished
//   ENDED (a process job, no scheduler: no exit status): failed with a GPU fault, else completed
//   anything else -> failed
//   A job our reclaim policy acted on (cancel, requeue or its command) that then ended other than
//   COMPLETED is `reclaimed`, whatever state the scheduler gave it (CANCELLED, REQUEUED, ...); a
//   process job our policy acted on (its command) is `reclaimed` too.
//
// Cause, from the evidence in the window [end - window_s, end + late_s] (clipped at the job's
// start), on the job's GPU units — a MIG instance sees its GPU's XIDs, ECC errors and loss, and
// its own memory; a whole GPU sees its MIG instances' memory too:
//   none       completed
//   scheduler  reclaimed, preempted; timeout and node_fail without a GPU fault
//   gpu_fault  any non-completed, non-reclaimed, non-preempted outcome with a fatal device event:
//              a fatal XID (FatalXids()), new uncorrectable ECC errors, or the GPU lost
//   gpu_oom    failed (a non-zero exit or a signal; or out_of_memory) with device memory full on
//              its GPUs (no fatal device event)
//   user       failed / out_of_memory / cancelled without device evidence
//   unknown    vanished without device evidence; a process job without one
// `late_s` admits events the agent saw shortly after the end it learnt from the scheduler (the
// process dies with its GPU; the collector notes the XID at its next cycle).
//
// Threading: DeviceEventLog is not synchronised (one owner); ClassifyOutcome is pure.
#ifndef GPUWARDEN_JOBS_OUTCOME_H_
#define GPUWARDEN_JOBS_OUTCOME_H_

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jobs/job_records.h"

namespace gw::jobs {

enum class DeviceEventKind { kXid, kEccUncorrected, kGpuLost, kMemoryFull };
// "xid", "ecc_uncorrected", "gpu_lost", "memory_full" (the evidence kinds of the record).
std::string_view DeviceEventKindName(DeviceEventKind kind);

struct DeviceEvent {
  DeviceEventKind kind = DeviceEventKind::kXid;
  unsigned unit = 0;   // where it was seen: a GPU index, or a MIG unit (memory; jobs/gpu_unit.h)
  double time_s = 0;   // first seen (unix seconds, the snapshot's time)
  double until_s = 0;  // last seen (memory full: while it stayed full; others: time_s)
  double value = 0;    // XID code; new uncorrectable errors; memory used ratio (highest)
  std::uint64_t count = 1;  // XIDs: events of that code in this reading
};

// The XIDs that end a job's GPU work, with what they mean (docs/jobs.md lists them).
struct XidMeaning {
  unsigned code;
  std::string_view meaning;
};
std::span<const XidMeaning> FatalXids();
// The meaning of a fatal XID, or "" for one that is not in FatalXids().
std::string_view FatalXidMeaning(unsigned code);

// One GPU unit's readings of one cycle (what the collector reported; counters cumulative).
struct DeviceReading {
  unsigned unit = 0;
  double time_s = 0;
  bool lost = false;
  std::optional<std::uint64_t> ecc_uncorrected_total;  // volatile; nullopt: no reading
  // (XID code, count so far), as collect::GpuSnapshot::xid_counts; empty for MIG units.
  std::span<const std::pair<unsigned, std::uint64_t>> xid_counts;
  // Device memory used / usable (total − reserved); nullopt: no reading.
  std::optional<double> memory_used_ratio;
};

struct DeviceEventLogOptions {
  std::size_t per_unit = 32;        // events kept per unit (oldest dropped)
  double memory_full_ratio = 0.95;  // used / usable at or above this: memory full
};

class DeviceEventLog {
 public:
  explicit DeviceEventLog(DeviceEventLogOptions options = {}) : options_(options) {}

  // A unit's readings of a cycle. The first reading of a unit sets its baseline (counters only:
  // a lost GPU or full memory is an event from the first sight). A counter that went backwards
  // (a driver reload) is a new baseline. A lost GPU and full memory are spells: one event each,
  // its until_s moved while the spell lasts (a steady state allocates nothing).
  void Observe(const DeviceReading& reading);
  // Events overlapping [from_s, to_s] on any of `units` (with the matching of the manual above),
  // oldest first.
  std::vector<DeviceEvent> Collect(std::span<const unsigned> units, double from_s,
                                   double to_s) const;
  // Units with a baseline.
  std::size_t units() const { return units_.size(); }

 private:
  struct Unit {
    std::vector<DeviceEvent> ring;  // capacity per_unit; `next` is the oldest once full
    std::size_t next = 0;
    bool seen = false, lost = false, memory_full = false;
    // The current spells' events (ring index, first seen): a lost GPU, memory full.
    std::size_t lost_event = 0, memory_event = 0;
    double lost_since = 0, memory_since = 0;
    std::optional<std::uint64_t> ecc;
    std::vector<std::pair<unsigned, std::uint64_t>> xids;
  };
  std::size_t Push(Unit* unit, const DeviceEvent& event);
  DeviceEventLogOptions options_;
  std::map<unsigned, Unit> units_;
};

// Our reclaim policy's action on a job (governance: a decision at stage "action" or "done" whose
// action is cancel, requeue or command).
struct ReclaimNote {
  double time_s = 0;
  std::string action;  // "cancel", "requeue", "command"
  std::string policy;
  std::string detail;
};

struct OutcomeInput {
  std::string state;  // the record's state: Slurm's final state text, "VANISHED" or "ENDED"
  std::optional<int> exit_code;
  std::int64_t start_time = 0;  // 0: never started
  std::int64_t end_time = 0;
  std::vector<unsigned> units;      // the job's GPU units
  std::vector<DeviceEvent> events;  // events on those units (any time; filtered here)
  std::optional<ReclaimNote> reclaim;
};

struct OutcomeOptions {
  double window_s = 300;  // jobs.outcome_window: how far before the end evidence counts
  double late_s = 15;     // how far after the end evidence still counts
  std::size_t max_evidence = 12;
};

JobOutcomeRecord ClassifyOutcome(const OutcomeInput& input, const OutcomeOptions& options = {});

// "14:05:12 UTC" for unix seconds (the summaries' clock).
std::string OutcomeClock(double unix_s);

}  // namespace gw::jobs

#endif  // GPUWARDEN_JOBS_OUTCOME_H_
