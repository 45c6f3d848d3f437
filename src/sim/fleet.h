// The simulated fleet: the devices of one scenario, its virtual clock and its event sets.
//
// Time: in stepped mode virtual time moves only through `Advance`; in realtime mode it is
// (real time since construction) x speed. Devices are stepped lazily: a caller asks for
// `DeviceAt(i, now)` and only that device catches up, so a call costs O(steps since that device
// was last read), never O(GPUs). Fault events (XIDs, ECC) sit in a time-ordered queue and are
// handed to the registered event sets by `DeliverEvents(now)`.
//
// Thread-safety: none. The C API (nvml_api.cpp) owns the one Fleet and serialises every call
// with its mutex.
#ifndef GPUWARDEN_SIM_FLEET_H_
#define GPUWARDEN_SIM_FLEET_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/device.h"
#include "sim/faults.h"
#include "sim/scenario.h"

namespace gw::sim {

using RealTime = std::chrono::steady_clock::time_point;

class VirtualClock {
 public:
  VirtualClock(ClockMode mode, double speed, RealTime origin)
      : mode_(mode), speed_(speed), origin_(origin) {}
  ClockMode mode() const { return mode_; }
  double speed() const { return speed_; }
  VirtualUs Now(RealTime real_now) const;
  // Stepped mode only: moves virtual time forward.
  void Advance(VirtualUs delta_us) { stepped_us_ += delta_us; }
  // Realtime mode: the real instant at which virtual time reaches t.
  RealTime RealTimeOf(VirtualUs t_us) const;

 private:
  ClockMode mode_;
  double speed_;
  RealTime origin_;
  VirtualUs stepped_us_ = 0;
};

// An event as nvmlEventSetWait hands it out.
struct DeliveredEvent {
  unsigned gpu = 0;
  std::uint64_t event_type = 0;
  std::uint64_t event_data = 0;
};

class Fleet {
 public:
  Fleet(Scenario scenario, VirtualClock clock);
  Fleet(const Fleet&) = delete;
  Fleet& operator=(const Fleet&) = delete;

  const Scenario& scenario() const { return scenario_; }
  VirtualClock& clock() { return clock_; }
  unsigned device_count() const { return static_cast<unsigned>(devices_.size()); }
  VirtualUs Now(RealTime real_now) const { return clock_.Now(real_now); }
  // Unix microseconds of virtual time t (NVML timestamps).
  std::uint64_t TimestampUs(VirtualUs t_us) const;

  // The device, caught up to `now` (index must be < device_count()).
  Device& DeviceAt(unsigned index, VirtualUs now);
  // The device without stepping it (identity, fault times).
  const Device& DeviceInfo(unsigned index) const { return *devices_[index]; }

  // ---- host processes (scenario host_processes: true) ----
  // Rescans the proc root when host_scan_interval_s of real time has passed since the last scan
  // (or none happened): every device is first caught up to `now` under the old state, so the
  // change applies from `now` on. Returns true when a scan ran.
  bool RefreshHostProcesses(RealTime real_now, VirtualUs now);

  // ---- events ----
  // Hands every fault event due at or before `now` to the sets registered for it.
  void DeliverEvents(VirtualUs now);
  // When the next fault event is due (virtual), if any.
  std::optional<VirtualUs> NextEventUs() const;
  std::uint32_t CreateEventSet();
  bool FreeEventSet(std::uint32_t id);
  bool HasEventSet(std::uint32_t id) const { return event_sets_.count(id) != 0; }
  // Adds event types for one GPU to a set. Returns false if the set does not exist.
  bool Register(std::uint32_t id, unsigned gpu, std::uint64_t event_types);
  // Takes the oldest queued event of a set.
  std::optional<DeliveredEvent> PopEvent(std::uint32_t id);
  // Event types a GPU can raise.
  std::uint64_t SupportedEventTypes(unsigned gpu) const;

 private:
  struct EventSet {
    std::unordered_map<unsigned, std::uint64_t> masks;  // gpu -> registered types
    std::deque<DeliveredEvent> queue;
  };
  struct Pending {
    FaultEvent event;
    std::uint64_t sequence;  // ties broken in scenario order
    bool operator>(const Pending& o) const {
      return event.at_us != o.event.at_us ? event.at_us > o.event.at_us : sequence > o.sequence;
    }
  };

  Scenario scenario_;
  VirtualClock clock_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> pending_;
  std::uint64_t next_sequence_ = 0;
  std::map<std::uint32_t, EventSet> event_sets_;
  std::uint32_t next_set_id_ = 1;
  std::optional<RealTime> last_host_scan_;
  std::string machine_;  // GPUWARDEN_SIM_MACHINE of this process (sim/host_processes.h)
};

}  // namespace gw::sim

#endif  // GPUWARDEN_SIM_FLEET_H_
