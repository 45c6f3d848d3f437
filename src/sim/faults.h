// Fault effects as pure functions of virtual time.
//
// Counters (ECC, remapped rows, retired pages, PCIe replays) are closed-form in t, so a reading
// never depends on how often it was taken. The one-shot and periodic *events* the faults raise
// (XIDs, ECC events) are listed by `FaultEvents` for the fleet's event scheduler.
#ifndef GPUWARDEN_SIM_FAULTS_H_
#define GPUWARDEN_SIM_FAULTS_H_

#include <cstdint>
#include <vector>

#include "sim/scenario.h"

namespace gw::sim {

// What the faults do to the physics at time t.
struct PhysicsFaults {
  unsigned power_limit_w = 0;   // enforced limit (power_cap lowers it)
  double thermal_factor = 1.0;  // cooling_failure multiplies the thermal resistance
  bool power_brake = false;
};
PhysicsFaults PhysicsFaultsAt(const GpuSpec& gpu, VirtualUs t_us);

struct ErrorCounters {
  std::uint64_t sbe_volatile = 0, dbe_volatile = 0;  // since the driver loaded (t = 0)
  std::uint64_t sbe_aggregate = 0,
                dbe_aggregate = 0;  // lifetime (scenario aggregate_ecc + volatile)
  unsigned corrected_rows = 0, uncorrected_rows = 0;
  bool remap_pending = false, remap_failure = false;
  unsigned retired_sbe_pages = 0, retired_dbe_pages = 0;
  bool retirement_pending = false;
  unsigned pcie_replays = 0;
};
ErrorCounters ErrorCountersAt(const GpuSpec& gpu, VirtualUs t_us);

// Physical addresses of the pages retired by `cause_double_bit` faults up to t (4 KiB aligned,
// deterministic from the seed), oldest first.
std::vector<std::uint64_t> RetiredPageAddresses(const GpuSpec& gpu, std::uint64_t seed,
                                                bool cause_double_bit, VirtualUs t_us);

// NVLink at time t (docs/scenarios.md, "NVLink"): a link is up when the model has it, the
// scenario cables it and no nvlink_down fault holds it down. Error counters per link.
bool NvLinkUpAt(const GpuSpec& gpu, unsigned link, VirtualUs t_us);
struct NvLinkErrors {
  std::uint64_t replay = 0, recovery = 0, crc_flit = 0, crc_data = 0, ecc_data = 0;
};
NvLinkErrors NvLinkErrorsAt(const GpuSpec& gpu, unsigned link, VirtualUs t_us);

// nvmlEventTypeMigConfigChange (not declared in nvml/abi.h).
inline constexpr std::uint64_t kEventTypeMigConfigChange = 0x100;

// When the GPU falls off the bus; kForever if it never does.
VirtualUs LostAtUs(const GpuSpec& gpu);

// One event a fault raises. A periodic source (correctable ECC) repeats every `period_us`
// until `end_us`; one-shot events have period_us == 0.
struct FaultEvent {
  VirtualUs at_us = 0;
  VirtualUs period_us = 0;
  VirtualUs end_us = 0;
  unsigned gpu = 0;
  std::uint64_t event_type = 0;  // nvmlEventType* bit
  std::uint64_t event_data = 0;  // the XID for XidCriticalError, else 0
};
std::vector<FaultEvent> FaultEvents(const GpuSpec& gpu);

}  // namespace gw::sim

#endif  // GPUWARDEN_SIM_FAULTS_H_
