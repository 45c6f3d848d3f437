#include "sim/fleet.h"

#include <cmath>
#include <cstdlib>

#include "nvml/abi.h"
#include "sim/host_processes.h"

namespace gw::sim {
namespace {

constexpr std::size_t kEventQueueLimit = 4096;  // per set; the oldest are dropped beyond it

}  // namespace

VirtualUs VirtualClock::Now(RealTime real_now) const {
  if (mode_ == ClockMode::kStepped) return stepped_us_;
  const double real_us = std::chrono::duration<double, std::micro>(real_now - origin_).count();
  return static_cast<VirtualUs>(std::max(0.0, real_us * speed_));
}

RealTime VirtualClock::RealTimeOf(VirtualUs t_us) const {
  const double real_us = static_cast<double>(t_us) / speed_;
  return origin_ + std::chrono::microseconds(static_cast<std::int64_t>(std::ceil(real_us)));
}

Fleet::Fleet(Scenario scenario, VirtualClock clock)
    : scenario_(std::move(scenario)), clock_(clock) {
  if (const char* machine = std::getenv("GPUWARDEN_SIM_MACHINE")) machine_ = machine;
  devices_.reserve(scenario_.gpus.size());
  for (const GpuSpec& gpu : scenario_.gpus) {
    devices_.push_back(std::make_unique<Device>(gpu, scenario_.seed));
    for (const FaultEvent& event : FaultEvents(gpu)) pending_.push({event, next_sequence_++});
  }
}

std::uint64_t Fleet::TimestampUs(VirtualUs t_us) const {
  return static_cast<std::uint64_t>(scenario_.start_time_s) * 1'000'000ULL +
         static_cast<std::uint64_t>(t_us);
}

Device& Fleet::DeviceAt(unsigned index, VirtualUs now) {
  Device& device = *devices_[index];
  device.AdvanceTo(now);
  return device;
}

bool Fleet::RefreshHostProcesses(RealTime real_now, VirtualUs now) {
  if (!scenario_.host_processes) return false;
  if (last_host_scan_ &&
      real_now - *last_host_scan_ < std::chrono::duration<double>(scenario_.host_scan_interval_s))
    return false;
  last_host_scan_ = real_now;
  std::vector<HostMigDevice> mig;
  for (const GpuSpec& gpu : scenario_.gpus)
    if (const MigLayout* layout = MigLayoutAt(gpu, now); layout != nullptr && layout->enabled)
      for (const MigInstanceSpec& m : layout->instances) mig.push_back({m.uuid, gpu.index});
  const std::vector<HostProcess> found =
      ScanHostProcesses(scenario_.host_proc_root, scenario_.gpus, machine_, mig);
  std::vector<std::vector<ProcessSpec>> per_gpu(devices_.size());
  std::vector<std::optional<WorkloadSegment>> workload(devices_.size());
  for (const HostProcess& p : found) {
    for (std::size_t i = 0; i < p.gpus.size(); ++i) {
      const unsigned gpu = p.gpus[i];
      per_gpu[gpu].push_back(ProcessSpec{.pid = p.pid,
                                         .name = p.name,
                                         .memory_mib = p.memory_mib,
                                         .mig_uuid = p.mig_uuids[i],
                                         .workload = p.workload});
      if (!p.mig_uuids[i].empty()) continue;  // it drives its MIG instance, not the whole GPU
      // Several host processes on one GPU: the busiest workload sets the pace.
      if (!workload[gpu] || p.workload.util_pct > workload[gpu]->util_pct)
        workload[gpu] = p.workload;
    }
  }
  for (unsigned i = 0; i < devices_.size(); ++i) {
    devices_[i]->AdvanceTo(now);
    devices_[i]->SetHostProcesses(std::move(per_gpu[i]), workload[i]);
  }
  return true;
}

void Fleet::DeliverEvents(VirtualUs now) {
  while (!pending_.empty() && pending_.top().event.at_us <= now) {
    Pending due = pending_.top();
    pending_.pop();
    const FaultEvent& e = due.event;
    if (e.period_us > 0 && e.at_us + e.period_us <= e.end_us) {
      Pending next = due;
      next.event.at_us += e.period_us;
      next.sequence = next_sequence_++;
      pending_.push(next);
    }
    // A GPU that fell off the bus raises nothing after its XID 79.
    const bool lost_before = devices_[e.gpu]->LostAt(e.at_us) &&
                             !(e.event_type == nvmlEventTypeXidCriticalError &&
                               e.event_data == 79 && LostAtUs(devices_[e.gpu]->spec()) == e.at_us);
    if (lost_before) continue;
    for (auto& [id, set] : event_sets_) {
      auto mask = set.masks.find(e.gpu);
      if (mask == set.masks.end() || (mask->second & e.event_type) == 0) continue;
      if (set.queue.size() >= kEventQueueLimit) set.queue.pop_front();
      set.queue.push_back({e.gpu, e.event_type, e.event_data});
    }
  }
}

std::optional<VirtualUs> Fleet::NextEventUs() const {
  if (pending_.empty()) return std::nullopt;
  return pending_.top().event.at_us;
}

std::uint32_t Fleet::CreateEventSet() {
  const std::uint32_t id = next_set_id_++;
  event_sets_[id];
  return id;
}

bool Fleet::FreeEventSet(std::uint32_t id) {
  return event_sets_.erase(id) != 0;
}

bool Fleet::Register(std::uint32_t id, unsigned gpu, std::uint64_t event_types) {
  auto set = event_sets_.find(id);
  if (set == event_sets_.end()) return false;
  set->second.masks[gpu] |= event_types;
  return true;
}

std::optional<DeliveredEvent> Fleet::PopEvent(std::uint32_t id) {
  auto set = event_sets_.find(id);
  if (set == event_sets_.end() || set->second.queue.empty()) return std::nullopt;
  DeliveredEvent event = set->second.queue.front();
  set->second.queue.pop_front();
  return event;
}

std::uint64_t Fleet::SupportedEventTypes(unsigned gpu) const {
  std::uint64_t types = nvmlEventTypePState | nvmlEventTypeXidCriticalError | nvmlEventTypeClock;
  if (devices_[gpu]->model().ecc)
    types |= nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError;
  if (devices_[gpu]->model().max_mig_devices > 0) types |= kEventTypeMigConfigChange;
  return types;
}

}  // namespace gw::sim
