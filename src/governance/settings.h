// governance/settings.h — what a site decides: reclaim policies, pool thresholds, team quotas and
// prices. Plain values, filled from the `governance` section of the configuration
// (config/governance_config.h, docs/configuration.md) or by tests; no defaults that act on a job.
//
// Nothing is ever done to a job unless a ReclaimPolicy matches it and names an action other than
// "dry-run"; the default action is "dry-run" (decide, log and count, touch nothing).
//
// Threading: values; copy freely.
#ifndef GPUWARDEN_GOVERNANCE_SETTINGS_H_
#define GPUWARDEN_GOVERNANCE_SETTINGS_H_

#include <map>
#include <string>
#include <vector>

#include "base/glob.h"

namespace gw::governance {

// Jobs a reclaim policy never touches. A job is exempt when any list names it.
struct Exemptions {
  std::vector<std::string> users;
  std::vector<std::string> accounts;
  std::vector<std::string> qos;
  std::vector<std::string> names;  // glob patterns on the job name ("notebook-*", "*interactive*")
  std::string comment_tag;         // a job whose comment contains this text ("" = none)
};

enum class ReclaimAction { kDryRun, kRequeue, kCancel, kCommand };
const char* ReclaimActionName(ReclaimAction action);  // "dry-run", "requeue", "cancel", "command"

// Which idle GPUs a policy counts: any, only those whose memory is held (a process or loaded
// memory: a forgotten notebook), or only those with nothing in memory.
enum class MemoryFilter { kAny, kHeld, kFree };
const char* MemoryFilterName(MemoryFilter filter);  // "any", "held", "free"

// One reclaim policy: notify after `idle_for_s`, act after a further `grace_s` if still idle.
// A policy applies to jobs of its partition and/or team ("" = any); the first matching policy in
// the list is the job's.
struct ReclaimPolicy {
  std::string partition;
  std::string team;
  double idle_for_s = 3600;
  double grace_s = 900;
  MemoryFilter memory = MemoryFilter::kAny;
  ReclaimAction action = ReclaimAction::kDryRun;
  std::vector<std::string> command;         // argv for kCommand (no shell; job facts in env)
  std::vector<std::string> notify_command;  // optional argv run at the notice (same env)
  Exemptions exempt;

  std::string Describe() const;  // "partition=gpu,team=*": the policy in logs and decisions
};

// Shared-pool congestion and capacity recommendations.
struct PoolSettings {
  std::vector<double> windows_s = {3600, 86400};  // queue-wait quantile windows
  double scale_out_ratio = 1.0;                   // congestion above this ...
  double scale_out_for_s = 1800;                  // ... this long: recommend scaling out
  double shrink_free_ratio = 0.5;                 // free / capacity at or above this ...
  double shrink_for_s = 86400;                    // ... this long, nothing pending: shrink
  std::map<std::string, double> capacity_gpus;    // partition -> GPUs (overrides scontrol)
};

// A team's quota: a number of GPUs held at once, or GPU-hours per period (or both).
struct TeamQuota {
  double gpus = 0;       // 0 = none
  double gpu_hours = 0;  // 0 = none
  double period_s = 7 * 86400.0;
};

struct QuotaSettings {
  std::map<std::string, TeamQuota> teams;
  double under_use_ratio = 0.3;          // used / quota below this ...
  double under_use_for_s = 7 * 86400.0;  // ... this long: chronic under-use
};

// Prices. The GPU-hour price of a GPU is the first entry whose key is contained in its model
// name (case-insensitive, longest key first), else `default_gpu_hour`.
struct PriceSettings {
  std::map<std::string, double> gpu_hour_by_model;
  double default_gpu_hour = 0;
  double energy_per_kwh = 0;
  std::string currency = "USD";

  double GpuHourPrice(const std::string& model) const;
};

struct Settings {
  double idle_threshold = 0.05;  // utilization ratio at or below which an allocated GPU is idle
  // An idle GPU "holds memory" (a forgotten notebook rather than an empty allocation) when a
  // process runs on it or at least this share of its memory is in use
  // (governance.memory_held_ratio). See MemoryHeld.
  double memory_held_ratio = 0.05;
  std::vector<ReclaimPolicy> reclaim;
  PoolSettings pool;
  QuotaSettings quotas;
  PriceSettings prices;

  // The "memory held" rule: true when `has_processes`, or when `total_bytes` is known (above 0)
  // and `used_bytes` is at least memory_held_ratio of it. Decides GpuReading::memory_held, hence a
  // reclaim policy's `memory` filter, the decision's reason and gpu_team_idle_gpus{memory}.
  bool MemoryHeld(bool has_processes, double used_bytes, double total_bytes) const;
};

// Name globs ('*', '?') in exemptions and policies: gw::GlobMatch (base/glob.h).
using gw::GlobMatch;

}  // namespace gw::governance

#endif  // GPUWARDEN_GOVERNANCE_SETTINGS_H_
