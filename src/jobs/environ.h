// Reads only allow-listed keys from a process's environment (/proc/<pid>/environ).
//
// The file is read through one fixed 4 KiB scratch buffer on the stack, scanned entry by entry:
// an entry's key is compared with the allow-list, and only the values of allowed keys are copied
// out (each capped at kMaxEnvValue bytes). Every other value stays in the scratch buffer until it
// is overwritten by the next read and, at the end, wiped with explicit_bzero. Nothing else from the
// environment is ever stored, logged or returned — a process's AWS_SECRET_ACCESS_KEY never leaves
// that buffer. Errors (no such process, permission) are values.
#ifndef GPUWARDEN_JOBS_ENVIRON_H_
#define GPUWARDEN_JOBS_ENVIRON_H_

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/error.h"

namespace gw::jobs {

inline constexpr std::size_t kMaxEnvValue = 256;  // longer allowed values are truncated

// The keys gpuwarden reads (documented in docs/configuration.md: "Attribution").
enum class EnvKey {
  kSlurmJobId,
  kSlurmJobUser,
  kSlurmJobAccount,
  kSlurmJobPartition,
  kSlurmJobGpus,
  kCudaVisibleDevices,
  kGpuwardenJob,
  kGpuwardenTeam,
  kGpuwardenMetricsPort,  // the job's own /metrics on 127.0.0.1 (docs/jobs.md)
  kCount
};
inline constexpr std::array<std::string_view, static_cast<std::size_t>(EnvKey::kCount)> kEnvKeys = {
    "SLURM_JOB_ID",        "SLURM_JOB_USER", "SLURM_JOB_ACCOUNT",
    "SLURM_JOB_PARTITION", "SLURM_JOB_GPUS", "CUDA_VISIBLE_DEVICES",
    "GPUWARDEN_JOB",       "GPUWARDEN_TEAM", "GPUWARDEN_METRICS_PORT"};

// The allowed values found; unset keys are nullopt.
struct AllowedEnv {
  std::array<std::optional<std::string>, static_cast<std::size_t>(EnvKey::kCount)> values;
  const std::optional<std::string>& Get(EnvKey key) const {
    return values[static_cast<std::size_t>(key)];
  }
};

// Scans the environ file at `path` for `kEnvKeys`.
Expected<AllowedEnv> ReadAllowedEnv(const std::string& path);

// The same scan over a file descriptor already open (the caller closes it). Exposed so that the
// scanner can be tested over a pipe and reused by callers that open files relative to a dirfd.
Expected<AllowedEnv> ScanAllowedEnv(int fd);

}  // namespace gw::jobs

#endif  // GPUWARDEN_JOBS_ENVIRON_H_
