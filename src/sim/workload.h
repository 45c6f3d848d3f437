// What a GPU's workload asks of it at a virtual instant: utilization, memory held, PCIe traffic.
//
// A GPU's timeline is a list of segments (scenario `workload:`); with `loop:` it repeats with that
// period, otherwise the last segment holds forever. Processes follow the same (looped) timeline.
// Everything here is a pure function of (scenario, gpu, time): no state, any thread.
#ifndef GPUWARDEN_SIM_WORKLOAD_H_
#define GPUWARDEN_SIM_WORKLOAD_H_

#include <cstdint>

#include "sim/gpm.h"
#include "sim/scenario.h"

namespace gw::sim {

struct Activity {
  double util_pct = 0;      // SM busy
  double mem_util_pct = 0;  // memory controller busy
  double enc_util_pct = 0;
  double dec_util_pct = 0;
  double extra_memory_mib = 0;  // transient allocations beyond the processes' (spikes)
  double pcie_rx_kbps = 0;      // host -> device
  double pcie_tx_kbps = 0;      // device -> host
  // What drives power: util_pct, except busy-but-hollow work (busy on a few SMs).
  double power_util_pct = 0;
  GpmPercents gpm{};        // profiling: percent per GPM channel (sim/gpm.h)
  double nvlink_share = 0;  // share of each NVLink link's bandwidth, per direction
};

// Maps virtual time onto the GPU's timeline (applies `loop:`).
VirtualUs TimelineUs(const GpuSpec& gpu, VirtualUs t_us);

// The activity during the 100 ms physics step whose midpoint is `t_us`.
Activity ActivityAt(const GpuSpec& gpu, std::uint64_t seed, VirtualUs t_us);

// The activity of one given segment (a host process's workload, or the timeline's); `local` is
// the time on the segment's timeline (spikes are phased from the segment's start).
Activity SegmentActivity(const GpuSpec& gpu, std::uint64_t seed, VirtualUs t_us, VirtualUs local,
                         const WorkloadSegment& segment);

// Whether a process is alive at virtual time `t_us` (on the looped timeline).
bool ProcessRunning(const GpuSpec& gpu, const ProcessSpec& process, VirtualUs t_us);

}  // namespace gw::sim

#endif  // GPUWARDEN_SIM_WORKLOAD_H_
