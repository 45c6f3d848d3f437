// What a process's /proc/<pid>/cgroup says about who runs it: a Slurm job (and step), a
// Kubernetes pod, a container. Pure text parsing: no I/O, no state, safe from any thread.
//
// Layouts recognised (any line of the file; cgroup v1 lines "N:controller:/path", v2 "0::/path"):
//   Slurm v2   /system.slice/slurmstepd.scope/job_<id>/step_<batch|extern|interactive|N>/...
//              (also "<node>_slurmstepd.scope")
//   Slurm v1   /slurm/uid_<uid>/job_<id>/step_<x>/task_<n>   (under any controller)
//   Kubernetes .../kubepods[-burstable|-besteffort]/pod<uid>/...   and the systemd form
//              kubepods-burstable-pod<uid with '_'>.slice   ('_' is turned back into '-')
//   Containers docker-<64 hex>.scope, /docker/<64 hex>, cri-containerd-<hex>.scope,
//              /containerd/<hex>, crio-<hex>.scope, libpod-<hex>.scope (podman), and a bare
//              64-hex last component under kubepods (containerd/cri-o with cgroupfs).
#ifndef GPUWARDEN_JOBS_CGROUP_H_
#define GPUWARDEN_JOBS_CGROUP_H_

#include <string>
#include <string_view>

namespace gw::jobs {

struct CgroupIdentity {
  std::string slurm_job_id;       // "" when the process is not inside a Slurm job cgroup
  std::string slurm_step;         // "batch", "extern", "interactive", "0", ...
  std::string pod_uid;            // Kubernetes pod UID with dashes, "" if none
  std::string container_id;       // full hex id, "" if none
  std::string container_runtime;  // "docker", "containerd", "cri-o", "podman", "" if unknown
};

// Parses the whole text of /proc/<pid>/cgroup.
CgroupIdentity ParseCgroup(std::string_view text);

}  // namespace gw::jobs

#endif  // GPUWARDEN_JOBS_CGROUP_H_
