// serve/snapshot_json.h — every GPU's state now as JSON for programs: GET /api/snapshot and
// `gpuwarden snapshot --json` (schema in docs/metrics.md, "snapshot --json"). Read back by the
// console (src/web/assets/) and `gpuwarden top --url` (top/sources.h).
//
// Absent values are left out, never written as 0: a slot without a value has no "metrics" key, a
// MIG instance or NVLink link without a reading has no key for it. Each GPU always has
// "gpm_supported", "mig" (its MIG instances; [] when MIG is off) and "nvlinks" ([] without
// NVLink). A MIG instance's profiling signals are under the names its /metrics families have
// (gpu_mig_sm_active_ratio, gpu_mig_tensor_active_ratio{pipe="any"}, ...).
#ifndef GPUWARDEN_SERVE_SNAPSHOT_JSON_H_
#define GPUWARDEN_SERVE_SNAPSHOT_JSON_H_

#include <map>
#include <string>

#include "collect/snapshot.h"

namespace gw::serve {

// `job_of_pid` (optional): the task layer's job of each process it attributed, written as the
// process's "job_id" (a process's details may carry one too, e.g. a snapshot read back from an
// agent).
std::string SnapshotJson(const collect::Snapshot& snapshot,
                         const std::map<unsigned, std::string>* job_of_pid = nullptr);

}  // namespace gw::serve

#endif  // GPUWARDEN_SERVE_SNAPSHOT_JSON_H_
