#include "sim/faults.h"

#include <algorithm>

#include "nvml/abi.h"
#include "sim/noise.h"

namespace gw::sim {
namespace {

bool Active(const FaultSpec& f, VirtualUs t_us) {
  return t_us >= f.at_us && (f.duration_us == kForever || t_us < f.at_us + f.duration_us);
}

// Occurrences of a rate-driven fault up to t: one every 1/rate, the first one period after `at`.
std::uint64_t Occurrences(const FaultSpec& f, VirtualUs period_us, VirtualUs t_us) {
  if (t_us < f.at_us) return 0;
  const VirtualUs end = f.duration_us == kForever ? t_us : std::min(t_us, f.at_us + f.duration_us);
  return static_cast<std::uint64_t>((end - f.at_us) / period_us);
}

// The parser bounds rates to [0.001, 3.6e6] per hour or minute, so periods are >= 1 µs.
VirtualUs EccPeriodUs(const FaultSpec& f) {
  return std::max<VirtualUs>(1, static_cast<VirtualUs>(3600e6 / f.rate));
}
VirtualUs ReplayPeriodUs(const FaultSpec& f) {
  return std::max<VirtualUs>(1, static_cast<VirtualUs>(60e6 / f.rate));
}

}  // namespace

PhysicsFaults PhysicsFaultsAt(const GpuSpec& gpu, VirtualUs t_us) {
  PhysicsFaults p;
  p.power_limit_w = gpu.power_limit_w;
  VirtualUs cap_at = -1;
  for (const FaultSpec& f : gpu.faults) {
    switch (f.type) {
      case FaultType::kPowerCap:  // the latest cap in force wins
        if (t_us >= f.at_us && f.at_us >= cap_at) {
          p.power_limit_w = f.limit_w;
          cap_at = f.at_us;
        }
        break;
      case FaultType::kCoolingFailure:
        if (Active(f, t_us)) p.thermal_factor *= f.factor;
        break;
      case FaultType::kPowerBrake:
        if (Active(f, t_us)) p.power_brake = true;
        break;
      default:
        break;
    }
  }
  return p;
}

ErrorCounters ErrorCountersAt(const GpuSpec& gpu, VirtualUs t_us) {
  ErrorCounters c;
  for (const FaultSpec& f : gpu.faults) {
    const bool happened = t_us >= f.at_us;
    const bool pending = happened && (f.duration_us == kForever || t_us < f.at_us + f.duration_us);
    switch (f.type) {
      case FaultType::kEccCorrectable:
        c.sbe_volatile += Occurrences(f, EccPeriodUs(f), t_us);
        break;
      case FaultType::kEccUncorrectable:
        if (happened) c.dbe_volatile += f.count;
        break;
      case FaultType::kRowRemap:
        if (!happened) break;
        (f.double_bit ? c.uncorrected_rows : c.corrected_rows) += f.count;
        c.remap_pending = c.remap_pending || pending;
        break;
      case FaultType::kRemapFailure:
        c.remap_failure = c.remap_failure || happened;
        break;
      case FaultType::kPageRetirement:
        if (!happened) break;
        (f.double_bit ? c.retired_dbe_pages : c.retired_sbe_pages) += f.count;
        c.retirement_pending = c.retirement_pending || pending;
        break;
      case FaultType::kPcieReplays:
        c.pcie_replays += static_cast<unsigned>(Occurrences(f, ReplayPeriodUs(f), t_us));
        break;
      default:
        break;
    }
  }
  c.sbe_aggregate = gpu.aggregate_sbe + c.sbe_volatile;
  c.dbe_aggregate = gpu.aggregate_dbe + c.dbe_volatile;
  return c;
}

std::vector<std::uint64_t> RetiredPageAddresses(const GpuSpec& gpu, std::uint64_t seed,
                                                bool cause_double_bit, VirtualUs t_us) {
  std::vector<std::uint64_t> pages;
  const std::uint64_t memory_bytes = std::uint64_t{gpu.model->memory_total_mib} << 20;
  for (std::size_t i = 0; i < gpu.faults.size(); ++i) {
    const FaultSpec& f = gpu.faults[i];
    if (f.type != FaultType::kPageRetirement || f.double_bit != cause_double_bit) continue;
    if (t_us < f.at_us) continue;
    for (unsigned k = 0; k < f.count; ++k)
      pages.push_back((Mix(seed, gpu.index, i, 0x9a9e + k) % memory_bytes) & ~0xFFFULL);
  }
  return pages;
}

namespace {

bool OnLink(const FaultSpec& f, unsigned link) {
  return f.link < 0 || static_cast<unsigned>(f.link) == link;
}

constexpr VirtualUs kStormRecoveryUs = 30'000'000;  // a storm forces a link recovery every 30 s

}  // namespace

bool NvLinkUpAt(const GpuSpec& gpu, unsigned link, VirtualUs t_us) {
  if (link >= gpu.model->nvlinks || !gpu.nvlink_connected) return false;
  for (const FaultSpec& f : gpu.faults)
    if (f.type == FaultType::kNvLinkDown && OnLink(f, link) && Active(f, t_us)) return false;
  return true;
}

NvLinkErrors NvLinkErrorsAt(const GpuSpec& gpu, unsigned link, VirtualUs t_us) {
  NvLinkErrors e;
  for (const FaultSpec& f : gpu.faults) {
    if (!OnLink(f, link) || t_us < f.at_us) continue;
    if (f.type == FaultType::kNvLinkDown) {
      e.recovery += 1;  // the link tried to recover, and failed
    } else if (f.type == FaultType::kNvLinkErrors) {
      const VirtualUs end =
          f.duration_us == kForever ? t_us : std::min(t_us, f.at_us + f.duration_us);
      const double seconds = static_cast<double>(end - f.at_us) / 1e6;
      e.crc_flit += static_cast<std::uint64_t>(f.rate * seconds);
      e.replay += static_cast<std::uint64_t>(f.rate * seconds);  // each bad flit is replayed
      e.crc_data += static_cast<std::uint64_t>(f.rate / 10 * seconds);
      e.ecc_data += static_cast<std::uint64_t>(f.rate / 20 * seconds);
      e.recovery += static_cast<std::uint64_t>((end - f.at_us) / kStormRecoveryUs);
    }
  }
  return e;
}

VirtualUs LostAtUs(const GpuSpec& gpu) {
  VirtualUs lost = kForever;
  for (const FaultSpec& f : gpu.faults)
    if (f.type == FaultType::kFallOffBus) lost = std::min(lost, f.at_us);
  return lost;
}

std::vector<FaultEvent> FaultEvents(const GpuSpec& gpu) {
  std::vector<FaultEvent> events;
  auto xid = [&](VirtualUs at, unsigned code) {
    events.push_back({.at_us = at,
                      .gpu = gpu.index,
                      .event_type = nvmlEventTypeXidCriticalError,
                      .event_data = code});
  };
  for (const FaultSpec& f : gpu.faults) {
    switch (f.type) {
      case FaultType::kEccCorrectable: {
        const VirtualUs period = EccPeriodUs(f);
        events.push_back({.at_us = f.at_us + period,
                          .period_us = period,
                          .end_us = f.duration_us == kForever ? kForever : f.at_us + f.duration_us,
                          .gpu = gpu.index,
                          .event_type = nvmlEventTypeSingleBitEccError});
        break;
      }
      case FaultType::kEccUncorrectable:
        events.push_back(
            {.at_us = f.at_us, .gpu = gpu.index, .event_type = nvmlEventTypeDoubleBitEccError});
        xid(f.at_us, 48);
        break;
      case FaultType::kRowRemap:
      case FaultType::kPageRetirement:
        xid(f.at_us, 63);
        break;
      case FaultType::kRemapFailure:
        xid(f.at_us, 64);
        break;
      case FaultType::kFallOffBus:
        xid(f.at_us, 79);
        break;
      case FaultType::kXid:
        xid(f.at_us, f.xid);
        break;
      case FaultType::kNvLinkDown:
        if (f.xid != 0) xid(f.at_us, f.xid);
        break;
      case FaultType::kNvLinkErrors:
        if (f.xid_period_us > 0)
          events.push_back(
              {.at_us = f.at_us,
               .period_us = f.xid_period_us,
               .end_us = f.duration_us == kForever ? kForever : f.at_us + f.duration_us - 1,
               .gpu = gpu.index,
               .event_type = nvmlEventTypeXidCriticalError,
               .event_data = 74});
        break;
      default:
        break;
    }
  }
  for (std::size_t i = 1; i < gpu.mig.size(); ++i)
    events.push_back(
        {.at_us = gpu.mig[i].at_us, .gpu = gpu.index, .event_type = kEventTypeMigConfigChange});
  return events;
}

}  // namespace gw::sim
