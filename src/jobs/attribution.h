// Attribution: who is behind each GPU process NVML reports — Slurm job, Kubernetes pod,
// container, user, team.
//
// For a pid, `Attributor` reads under a configurable /proc root (tests use a fake tree):
//   <root>/<pid>/stat     field 22 (start time, clock ticks since boot): with the pid, the cache
//   key <root>/<pid>/status   "Uid:" (real uid) -> user name through getpwuid_r <root>/<pid>/cgroup
//   Slurm job/step, pod UID, container id (jobs/cgroup.h) <root>/<pid>/environ  only the
//   allow-listed keys of jobs/environ.h; no other value is kept
// Results are cached per (pid, start time), so a pass over long-running processes reads only
// their stat files; a reused pid (different start time) is read afresh. `Attribute` forgets the
// entries of pids it was not asked about in that pass.
//
// Job identity, in order of preference: the Slurm job id from the cgroup, then SLURM_JOB_ID from
// the environment, then GPUWARDEN_JOB (sites without a scheduler). `AttributionSource`s run after
// the /proc reading and may fill or override fields (a Kubernetes pod-resources source would name
// the pod from `pod_uid`, or claim a process by its GPU UUID).
//
// Threading: an Attributor is used by one thread at a time (the collector's). Sources are called
// on that thread; they must not block (poll elsewhere, answer from memory). Errors: a process that
// vanished or is unreadable yields an Error for that pid; others are unaffected.
#ifndef GPUWARDEN_JOBS_ATTRIBUTION_H_
#define GPUWARDEN_JOBS_ATTRIBUTION_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/error.h"

namespace gw::jobs {

struct ProcessAttribution {
  pid_t pid = 0;
  std::uint64_t start_ticks = 0;  // /proc/<pid>/stat field 22
  std::int64_t uid = -1;          // -1 unknown
  std::string user;               // name for uid, or the number as text when it has no name
  // The effective job: cgroup Slurm id, else SLURM_JOB_ID, else GPUWARDEN_JOB; "" if none.
  std::string job_id;
  std::string job_source;  // "slurm-cgroup", "slurm-env", "gpuwarden-env", or a source's name
  // From the cgroup file.
  std::string slurm_job_id_cgroup;
  std::string slurm_step;
  std::string pod_uid;
  std::string pod_name;       // filled by a Kubernetes source
  std::string pod_namespace;  // filled by a Kubernetes source
  std::string container_id;
  std::string container_runtime;
  // From the allow-listed environment.
  std::string slurm_job_id_env;
  std::string slurm_user;
  std::string slurm_account;
  std::string slurm_partition;
  std::string slurm_job_gpus;
  std::string cuda_visible_devices;
  std::string gpuwarden_job;
  std::string gpuwarden_team;
  // GPUWARDEN_METRICS_PORT: the port of the job's own /metrics on 127.0.0.1 (docs/jobs.md), when
  // it is 1-65535 written in decimal digits; else 0.
  int gpuwarden_metrics_port = 0;
};

// A plug-in that refines attributions (Kubernetes pod-resources, a site's own mapping).
class AttributionSource {
 public:
  virtual ~AttributionSource() = default;
  virtual std::string Name() const = 0;
  // Called for each process after /proc was read; `gpu_uuid` is the GPU NVML reported it on
  // ("" if unknown). Must not block.
  virtual void Refine(const std::string& gpu_uuid, ProcessAttribution* process) = 0;
};

struct AttributorOptions {
  std::string proc_root = "/proc";
};

// One process NVML reported, and the GPU it runs on.
struct GpuProcessRef {
  pid_t pid = 0;
  std::string gpu_uuid;
};

class Attributor {
 public:
  explicit Attributor(AttributorOptions options = {});
  Attributor(const Attributor&) = delete;
  Attributor& operator=(const Attributor&) = delete;

  void AddSource(std::unique_ptr<AttributionSource> source);

  // The attribution of one pid (cached per (pid, start time)).
  Expected<ProcessAttribution> Attribute(pid_t pid, const std::string& gpu_uuid = "");

  // One pass: every process NVML reported in this collection cycle. Processes that cannot be read
  // (exited meanwhile) are left out. Cache entries for pids not in `processes` are dropped.
  std::vector<ProcessAttribution> AttributeAll(std::span<const GpuProcessRef> processes);

  // Whether each pid still names the process cached for it: readable, same start time (so it
  // neither exited nor was reused, and its cgroup and environment need not be read again). One
  // stat read per pid into a stack buffer; allocates nothing; stops at the first pid that differs.
  // False for a pid not in the cache. A caller that gets true may reuse what it built from the
  // last AttributeAll.
  bool StillCached(std::span<const pid_t> pids) const;

  std::size_t cache_size() const { return cache_.size(); }
  // How many /proc reads of cgroup+environ+status happened (cache misses), for tests and metrics.
  std::uint64_t misses() const { return misses_; }

 private:
  Expected<ProcessAttribution> ReadProcess(pid_t pid, std::uint64_t start_ticks);
  std::string UserName(std::int64_t uid);

  AttributorOptions options_;
  std::vector<std::unique_ptr<AttributionSource>> sources_;
  std::unordered_map<pid_t, ProcessAttribution> cache_;  // start_ticks inside decides validity
  std::unordered_map<std::int64_t, std::string> users_;
  std::uint64_t misses_ = 0;
};

// Parses field 22 (starttime) of a /proc/<pid>/stat line; false if malformed. The comm field may
// hold spaces and ')' — fields are counted after the last ')'.
bool ParseStatStartTicks(std::string_view stat, std::uint64_t* ticks);

// Parses the real uid from /proc/<pid>/status text ("Uid:\t1000\t1000\t1000\t1000"); -1 if absent.
std::int64_t ParseStatusUid(std::string_view status);

// Splits a CUDA_VISIBLE_DEVICES / SLURM_JOB_GPUS value: "0,2" -> {"0","2"}; GPU UUIDs and
// MIG ids are kept as written. Empty items are dropped.
std::vector<std::string> SplitDeviceList(std::string_view list);

}  // namespace gw::jobs

#endif  // GPUWARDEN_JOBS_ATTRIBUTION_H_
