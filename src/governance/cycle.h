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

// One GPU unit (jobs/gpu_unit.h): a whole GPU, or a MIG instance of one. A MIG-enabled GPU is
// read as its instances plus the GPU itself, whose share is what its instances leave (1 - their
// shares: slices no instance uses), so that the shares of one GPU add up to 1 — capacity and
// energy count each GPU once.
struct GpuReading {
  unsigned index = 0;        // the unit id: the GPU's index, or jobs::MigUnit(gpu, gpu instance)
  double share = 1;          // of the GPU: 1, a MIG instance's slice_ratio, or what instances leave
  std::string mig_profile;   // "3g.40gb" for a MIG instance, else ""
  std::string uuid;          // the GPU's UUID, or the MIG instance's ("MIG-…")
  std::string model;         // gpu_info's name ("NVIDIA A100-SXM4-80GB")
  double util_ratio = 0;     // SM utilization 0-1
  bool util_known = false;   // false: no reading this cycle (never idle then)
  bool memory_held = false;  // Settings::MemoryHeld: a process, or enough memory in use
  double memory_used_bytes = 0;
  // The GPU's (MIG instances: their GPU's; the ledger charges each unit its share of it).
  std::optional<double> energy_j;  // the cumulative energy counter, when the GPU has one
  double power_w = 0;              // used for energy when there is no counter
};

struct RunningJob {
  std::string id;      // the id a person knows ("1234", or GPUWARDEN_JOB's name)
  std::string source;  // "slurm", "kubernetes" (a pod: id "namespace/pod") or "process"
  std::string name, user, account, qos, partition, team, comment;
  std::string pod_namespace, pod_name;  // a Kubernetes pod (account = its namespace)
  std::vector<unsigned> gpus;           // this node's GPU units it holds (GpuReading::index)
};

struct Cycle {
  double now_s = 0;  // the snapshot's time (unix seconds; simulated time under --simulate)
  std::vector<GpuReading> gpus;
  std::vector<RunningJob> jobs;
};

}  // namespace gw::governance

#endif  // GPUWARDEN_GOVERNANCE_CYCLE_H_
