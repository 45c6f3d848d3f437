// collect/health.h — device-layer health problems read off a snapshot, in words.
//
// Used by `gpuwarden snapshot` and every face that shows a GPU: a lost GPU, uncorrectable ECC
// errors, remapped-row or page-retirement trouble, XIDs, NVLink links down, a pending MIG mode
// change, active throttling, hung NVML calls.
// Each problem carries a severity so faces can sort and colour them.
#ifndef GPUWARDEN_COLLECT_HEALTH_H_
#define GPUWARDEN_COLLECT_HEALTH_H_

#include <string>
#include <vector>

#include "collect/snapshot.h"

namespace gw::collect {

enum class Severity { kInfo, kWarning, kCritical };
std::string_view SeverityName(Severity s);  // "info" | "warning" | "critical"

struct HealthProblem {
  Severity severity;
  std::string what;    // "2 uncorrectable ECC errors since the last reset"
  std::string action;  // "drain the node, reset the GPU, check remapped rows" or ""
};

// Problems of one GPU, most severe first. Empty when healthy.
std::vector<HealthProblem> HealthProblems(const GpuSnapshot& gpu);

// The active throttle reasons in words ("power cap", "HW thermal slowdown"); idle and clock
// settings are not throttling and are left out.
std::vector<std::string> ThrottleReasons(const GpuSnapshot& gpu);

}  // namespace gw::collect

#endif  // GPUWARDEN_COLLECT_HEALTH_H_
