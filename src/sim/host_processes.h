// Host processes as simulated GPU processes: a real process on this machine that declares
// GPUWARDEN_SIM_WORKLOAD=<workload type> ("training", "inference", "idle", "memory_bound",
// "spikes", "idle_allocated") runs, as far as libnvml-sim.so tells, on the GPUs in its
// CUDA_VISIBLE_DEVICES (else SLURM_JOB_GPUS): global indices ("0,2"), GPU UUIDs or MIG device
// UUIDs (a unique prefix is enough, as CUDA accepts). While it lives, those GPUs show the
// workload's activity (utilization, memory, power) and list the process (its real pid) among their
// compute processes. It holds HostProcessMemoryMib(type) of device memory on each, or
// GPUWARDEN_SIM_MEMORY_MIB=<whole MiB> when it declares that (gw-training-sim does).
//
// Several simulated machines on one real one (test suites running side by side, two demos):
// GPUWARDEN_SIM_MACHINE names the machine. A process takes part only when its
// GPUWARDEN_SIM_MACHINE equals the simulator's own (the environment of the process that loaded
// the library; absent on both sides counts as equal), so a process started for one simulated
// machine never loads another's GPUs. Children and Slurm jobs (sbatch exports the environment)
// inherit it.
//
// Only with scenario `host_processes: true`. The scan reads, for each pid under the proc root,
// its environ file through a fixed scratch buffer, keeping only those five keys' values — as the
// simulated driver this is its role; nothing else of another process's environment is kept.
// Pure functions of the file tree: any thread.
#ifndef GPUWARDEN_SIM_HOST_PROCESSES_H_
#define GPUWARDEN_SIM_HOST_PROCESSES_H_

#include <string>
#include <string_view>
#include <vector>

#include "sim/scenario.h"

namespace gw::sim {

struct HostProcess {
  unsigned pid = 0;
  std::string name;  // /proc/<pid>/comm
  WorkloadSegment workload;
  double memory_mib = 0;               // device memory it holds on each of its GPUs
  std::vector<unsigned> gpus;          // fleet indices
  std::vector<std::string> mig_uuids;  // per entry of gpus: the MIG device named, "" = whole GPU
};

// A MIG device a process may name, as it exists when the scan runs.
struct HostMigDevice {
  std::string uuid;
  unsigned gpu = 0;
};

// Device memory a host process of each workload type holds per GPU (MiB).
double HostProcessMemoryMib(WorkloadType type);

// Every process under `proc_root` that declares a known workload, names at least one GPU of
// `gpus` and belongs to `machine` (its GPUWARDEN_SIM_MACHINE, "" when absent). Unreadable or
// vanished processes are skipped.
std::vector<HostProcess> ScanHostProcesses(const std::string& proc_root,
                                           const std::vector<GpuSpec>& gpus,
                                           std::string_view machine = "",
                                           const std::vector<HostMigDevice>& mig = {});

}  // namespace gw::sim

#endif  // GPUWARDEN_SIM_HOST_PROCESSES_H_
