#include "sim/workload.h"

#include <algorithm>

#include "sim/noise.h"

namespace gw::sim {
namespace {

constexpr VirtualUs kTickUs = 100'000;
constexpr VirtualUs kInferenceSlotUs = 500'000;  // bursts start and end on 500 ms slots

// Noise channels, so that each quantity jitters independently.
enum Channel : std::uint64_t { kUtil = 10, kMemUtil, kBurst, kPcieRx, kPcieTx };

double Clamp(double pct) {
  return std::clamp(pct, 0.0, 100.0);
}

const WorkloadSegment& SegmentAt(const GpuSpec& gpu, VirtualUs timeline_us) {
  auto later =
      std::upper_bound(gpu.workload.begin(), gpu.workload.end(), timeline_us,
                       [](VirtualUs t, const WorkloadSegment& s) { return t < s.start_us; });
  return *(later - 1);  // the first segment starts at 0, so `later` is never begin()
}

}  // namespace

VirtualUs TimelineUs(const GpuSpec& gpu, VirtualUs t_us) {
  return gpu.loop_us > 0 ? t_us % gpu.loop_us : t_us;
}

Activity ActivityAt(const GpuSpec& gpu, std::uint64_t seed, VirtualUs t_us) {
  const VirtualUs local = TimelineUs(gpu, t_us);
  return SegmentActivity(gpu, seed, t_us, local, SegmentAt(gpu, local));
}

Activity SegmentActivity(const GpuSpec& gpu, std::uint64_t seed, VirtualUs t_us, VirtualUs local,
                         const WorkloadSegment& s) {
  const std::uint64_t tick = static_cast<std::uint64_t>(t_us / kTickUs);
  auto jitter = [&](Channel channel, int amplitude) {
    return static_cast<double>(Jitter(seed, gpu.index, tick, channel, amplitude));
  };
  Activity a;
  double pcie_rx_full = 0, pcie_tx_full = 0;  // KB/s at 100 % utilization
  switch (s.type) {
    case WorkloadType::kIdle:
    case WorkloadType::kIdleAllocated:
      a.pcie_rx_kbps = 12;
      a.pcie_tx_kbps = 8;
      return a;
    case WorkloadType::kTraining:
      a.util_pct = Clamp(s.util_pct + jitter(kUtil, 2));
      a.mem_util_pct = Clamp(s.mem_util_pct + jitter(kMemUtil, 3));
      pcie_rx_full = 20'000;
      pcie_tx_full = 6'000;
      break;
    case WorkloadType::kInference: {
      const std::uint64_t slot = static_cast<std::uint64_t>(t_us / kInferenceSlotUs);
      const bool burst = Unit(seed, gpu.index, slot, kBurst) < s.duty;
      const double scale = s.util_pct > 0 ? (burst ? 1.0 : s.base_util_pct / s.util_pct) : 0;
      a.util_pct = Clamp((burst ? s.util_pct : s.base_util_pct) + jitter(kUtil, burst ? 4 : 1));
      a.mem_util_pct =
          Clamp((burst ? s.mem_util_pct : s.base_mem_util_pct) + jitter(kMemUtil, burst ? 3 : 1));
      a.enc_util_pct = s.enc_util_pct * scale;
      a.dec_util_pct = s.dec_util_pct * scale;
      pcie_rx_full = 4'000;
      pcie_tx_full = 2'500;
      break;
    }
    case WorkloadType::kMemoryBound:
      a.util_pct = Clamp(s.util_pct + jitter(kUtil, 3));
      a.mem_util_pct = Clamp(s.mem_util_pct + jitter(kMemUtil, 2));
      pcie_rx_full = 60'000;
      pcie_tx_full = 9'000;
      break;
    case WorkloadType::kBusyHollow:
      a.util_pct = Clamp(s.util_pct + jitter(kUtil, 1));
      a.mem_util_pct = Clamp(s.mem_util_pct + jitter(kMemUtil, 1));
      pcie_rx_full = 300;
      pcie_tx_full = 200;
      break;
    case WorkloadType::kSpikes: {
      const VirtualUs phase = (local - s.start_us) % s.period_us;
      const bool spike = phase < s.spike_us;
      a.util_pct = Clamp(spike ? s.util_pct : s.base_util_pct + jitter(kUtil, 1));
      a.mem_util_pct = Clamp(spike ? s.mem_util_pct : s.base_mem_util_pct + jitter(kMemUtil, 1));
      a.extra_memory_mib = spike ? s.spike_memory_mib : 0;
      pcie_rx_full = 3'000;
      pcie_tx_full = 1'500;
      break;
    }
  }
  if (s.type != WorkloadType::kInference) {
    a.enc_util_pct = s.enc_util_pct;
    a.dec_util_pct = s.dec_util_pct;
  }
  a.pcie_rx_kbps = 12 + pcie_rx_full * a.util_pct * (1 + jitter(kPcieRx, 5) / 100);
  a.pcie_tx_kbps = 8 + pcie_tx_full * a.util_pct * (1 + jitter(kPcieTx, 5) / 100);
  a.gpm = ProfileOf(s, a.util_pct, a.mem_util_pct);
  a.nvlink_share = NvLinkShareOf(s, a.util_pct);
  a.power_util_pct =
      s.type == WorkloadType::kBusyHollow ? std::min(100.0, a.gpm[kGpmSm] + 15) : a.util_pct;
  return a;
}

bool ProcessRunning(const GpuSpec& gpu, const ProcessSpec& process, VirtualUs t_us) {
  const VirtualUs local = TimelineUs(gpu, t_us);
  return local >= process.start_us && local < process.stop_us;
}

}  // namespace gw::sim
