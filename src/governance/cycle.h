// governance/cycle.h — what the governance layer is given each collection cycle: this node's GPUs
// as read, and the jobs holding them (from the task layer, cli/jobs_service.h).
//
// Threading: values.
#ifndef GPUWARDEN_GOVERNANCE_CYCLE_H_
#define GPUWARDEN_GOVERNANCE_CYCLE_H_

#include <optional>
#include <string>
#include <vector>

namespace gw::governance {

struct GpuReading {
  unsigned index = 0;
  std::string uuid;
  std::string model;         // gpu_info's name ("NVIDIA A100-SXM4-80GB")
  double util_ratio = 0;     // SM utilization 0-1
  bool util_known = false;   // false: no reading this cycle (never idle then)
  bool memory_held = false;  // Settings::MemoryHeld: a process, or enough memory in use
  double memory_used_bytes = 0;
  std::optional<double> energy_j;  // the cumulative energy counter, when the GPU has one
  double power_w = 0;              // used for energy when there is no counter
};

struct RunningJob {
  std::string id;      // the id a person knows ("1234", or GPUWARDEN_JOB's name)
  std::string source;  // "slurm" or "process"
  std::string name, user, account, qos, partition, team, comment;
  std::vector<unsigned> gpus;  // indices of this node's GPUs it holds
};

struct Cycle {
  double now_s = 0;  // the snapshot's time (unix seconds; simulated time under --simulate)
  std::vector<GpuReading> gpus;
  std::vector<RunningJob> jobs;
};

}  // namespace gw::governance

#endif  // GPUWARDEN_GOVERNANCE_CYCLE_H_
