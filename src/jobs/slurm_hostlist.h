// jobs/slurm_hostlist.h — Slurm's compressed host lists, as squeue prints a job's nodes:
// "gpu[01-04,07],login1", "a[1-2],b[3-4]", "gpu[1-12]-ib".
//
//   if (jobs::HostListContains(job.nodes, "gpu03")) { ... }  // the job runs on this machine
//
// Items are separated by commas outside brackets; an item is a plain name, or a prefix, one
// bracket of numbers and ranges ("01-04", "7") and a suffix. A zero-padded range ("01-04") names
// only numbers of its width ("gpu03", not "gpu3"). Numbers of more than 18 digits, and malformed
// brackets, name nothing. Pure function: any input is safe (tests/fuzz/slurm_hostlist.cpp).
#ifndef GPUWARDEN_JOBS_SLURM_HOSTLIST_H_
#define GPUWARDEN_JOBS_SLURM_HOSTLIST_H_

#include <string_view>

namespace gw::jobs {

// Whether the host list `list` names `host` (an empty host is never named).
bool HostListContains(std::string_view list, std::string_view host);

}  // namespace gw::jobs

#endif  // GPUWARDEN_JOBS_SLURM_HOSTLIST_H_
