#include "sim/device.h"

#include <algorithm>
#include <cmath>

#include "nvml/abi.h"
#include "sim/noise.h"

namespace gw::sim {
namespace {

constexpr double kStepS = static_cast<double>(kStepUs) / 1e6;
constexpr double kClockBinMhz = 15;       // NVIDIA boards move clocks in 15 MHz bins
constexpr double kSwThermalFloor = 0.70;  // SW thermal never pulls below 70 % of f_max
constexpr double kSwThermalDown = 0.01;   // per step at/above GPU_MAX, share of f_max
constexpr double kSwThermalUp = 0.005;    // per step once 1 °C below GPU_MAX
constexpr double kHwThermalRatio = 0.45;  // HW slowdown: "a factor of 2 or more"
constexpr double kHwThermalReleaseC = 3;  // hysteresis below SLOWDOWN
constexpr double kPowerBrakeRatio = 0.20;
constexpr std::uint64_t kMiB = 1ULL << 20;

enum Channel : std::uint64_t { kPowerNoise = 30, kPowerMilliwatts, kEnergyStart, kNvLink = 64 };

constexpr unsigned kMigMemorySlices = 8;
constexpr std::size_t kMaxMigSlots = 8;  // instances of a layout (the parser allows 7)

void AddScaled(Activity& sum, const Activity& a, double w) {
  sum.util_pct += a.util_pct * w;
  sum.mem_util_pct += a.mem_util_pct * w;
  sum.enc_util_pct += a.enc_util_pct * w;
  sum.dec_util_pct += a.dec_util_pct * w;
  sum.extra_memory_mib += a.extra_memory_mib;
  sum.pcie_rx_kbps += a.pcie_rx_kbps * w;
  sum.pcie_tx_kbps += a.pcie_tx_kbps * w;
  sum.power_util_pct += a.power_util_pct * w;
  for (std::size_t c = 0; c < sum.gpm.size(); ++c) sum.gpm[c] += a.gpm[c] * w;
}

double QuantizeDown(double mhz) {
  return std::floor(mhz / kClockBinMhz) * kClockBinMhz;
}

}  // namespace

Device::Device(const GpuSpec& spec, std::uint64_t seed)
    : spec_(spec), seed_(seed), lost_at_us_(LostAtUs(spec)) {
  const GpuModel& m = model();
  // Start in thermal equilibrium with the first 10 s of work (the server was already busy).
  double start_load = 0;
  for (VirtualUs t = 0; t < 100 * kStepUs; t += kStepUs) {
    const Activity a = ActivityAt(spec, seed, t);
    start_load += (0.85 * a.power_util_pct / 100 + 0.15 * a.mem_util_pct / 100) / 100;
  }
  const double start_power_w =
      std::min<double>(spec.power_limit_w, DemandedPower(start_load, 1.0, 0.0));
  temperature_c_ = spec.ambient_c + m.thermal_resistance_c_per_w * start_power_w;
  sw_thermal_cap_mhz_ = m.max_sm_clock_mhz;
  // The counter runs since the driver loaded: some days of idle power before t = 0.
  const double hours_loaded =
      24.0 + static_cast<double>(Mix(seed, spec.index, 0, kEnergyStart) % 217);
  energy_mj_ = m.idle_power_w * hours_loaded * 3600.0 * 1000.0;
  for (const FaultSpec& f : spec.faults)
    if (f.type == FaultType::kHang) hangs_.push_back(HangState{.fault = &f});
  Step(0);
}

void Device::AdvanceTo(VirtualUs t_us) {
  const std::int64_t target = std::min(t_us, lost_at_us_) / kStepUs;
  while (step_ < target) Step(step_ + 1);
}

double Device::DemandedPower(double activity, double clock_ratio, double noise_w) const {
  const GpuModel& m = model();
  return m.idle_power_w + (m.full_power_w - m.idle_power_w) * activity * clock_ratio * clock_ratio +
         noise_w;
}

void Device::Step(std::int64_t k) {
  const GpuModel& m = model();
  const VirtualUs t_end = k * kStepUs;
  const VirtualUs mid = std::max<VirtualUs>(0, t_end - kStepUs / 2);
  const MigLayout* layout = MigLayoutAt(spec_, t_end);
  if (layout != layout_) {  // a re-partition: new instances start at 0, kept ones carry on
    std::vector<InstanceRuntime> next(
        layout != nullptr && layout->enabled ? layout->instances.size() : 0);
    for (std::size_t i = 0; i < next.size(); ++i)
      for (std::size_t j = 0; j < instances_.size(); ++j)
        if (SameMigInstance(layout->instances[i], layout_->instances[j])) next[i] = instances_[j];
    instances_ = std::move(next);
    layout_ = layout;
  }
  if (mig_enabled())
    activity_ = MigActivity(mid, t_end);
  else
    activity_ = host_workload_ ? SegmentActivity(spec_, seed_, mid, mid, *host_workload_)
                               : ActivityAt(spec_, seed_, mid);
  const PhysicsFaults faults = PhysicsFaultsAt(spec_, t_end);
  const double u = activity_.util_pct / 100, mu = activity_.mem_util_pct / 100;
  const bool busy = u > 0 || mu > 0;
  const double load = 0.85 * activity_.power_util_pct / 100 + 0.15 * mu;
  const double f_max = m.max_sm_clock_mhz;
  const double limit_w = faults.power_limit_w;
  const double noise_w =
      Jitter(seed_, spec_.index, static_cast<std::uint64_t>(k), kPowerNoise, busy ? 3 : 1) +
      Jitter(seed_, spec_.index, static_cast<std::uint64_t>(k), kPowerMilliwatts, 499) / 1000.0;
  std::uint64_t reasons = 0;
  double clock = busy ? f_max : m.idle_sm_clock_mhz;

  // SW power cap: the highest clock whose demanded power stays under the limit (with margin
  // for the noise, so that a capped board reads at or just below its limit).
  if (busy && DemandedPower(load, 1.0, std::max(noise_w, 0.0)) > limit_w) {
    const double dynamic_w = (m.full_power_w - m.idle_power_w) * load;
    const double headroom_w = std::max(0.0, limit_w - m.idle_power_w - 4.0);
    clock = std::min(clock, f_max * std::sqrt(headroom_w / dynamic_w));
    reasons |= nvmlClocksEventReasonSwPowerCap;
  }
  // SW thermal slowdown: a slow controller around GPU_MAX.
  if (temperature_c_ >= m.gpu_max_c)
    sw_thermal_cap_mhz_ -= kSwThermalDown * f_max;
  else if (temperature_c_ < m.gpu_max_c - 1.0)
    sw_thermal_cap_mhz_ += kSwThermalUp * f_max;
  sw_thermal_cap_mhz_ = std::clamp(sw_thermal_cap_mhz_, kSwThermalFloor * f_max, f_max);
  if (busy && sw_thermal_cap_mhz_ < clock) {
    clock = sw_thermal_cap_mhz_;
    reasons |= nvmlClocksEventReasonSwThermalSlowdown;
  }
  // HW thermal slowdown at SLOWDOWN, with hysteresis.
  if (temperature_c_ >= m.slowdown_c)
    hw_thermal_engaged_ = true;
  else if (temperature_c_ < m.slowdown_c - kHwThermalReleaseC)
    hw_thermal_engaged_ = false;
  if (hw_thermal_engaged_) {
    clock = std::min(clock, kHwThermalRatio * f_max);
    reasons |= nvmlClocksThrottleReasonHwThermalSlowdown | nvmlClocksThrottleReasonHwSlowdown;
  }
  if (faults.power_brake) {
    clock = std::min(clock, kPowerBrakeRatio * f_max);
    reasons |= nvmlClocksThrottleReasonHwPowerBrakeSlowdown | nvmlClocksThrottleReasonHwSlowdown;
  }
  clock = std::max(QuantizeDown(clock), static_cast<double>(m.idle_sm_clock_mhz));
  if (!busy && clock <= m.idle_sm_clock_mhz) reasons |= nvmlClocksEventReasonGpuIdle;

  double power_w = DemandedPower(load, busy ? clock / f_max : 0.0, noise_w);
  if ((reasons & nvmlClocksEventReasonSwPowerCap) != 0) power_w = std::min(power_w, limit_w - 0.5);
  power_w = std::clamp(power_w, 1.0, limit_w);

  const double r = m.thermal_resistance_c_per_w * faults.thermal_factor;
  temperature_c_ += (spec_.ambient_c + r * power_w - temperature_c_) * (kStepS / m.thermal_tau_s);
  energy_mj_ += power_w * kStepS * 1000.0;
  power_limit_w_ = faults.power_limit_w;
  reasons_ = reasons;
  pstate_ = busy ? 0 : 8;

  StepSample& s = samples_[static_cast<std::size_t>(k) % kSampleSteps];
  s.power_mw = static_cast<std::uint32_t>(std::lround(power_w * 1000.0));
  s.sm_clock_mhz = static_cast<std::uint16_t>(clock);
  s.mem_clock_mhz = static_cast<std::uint16_t>(busy ? m.max_mem_clock_mhz : m.idle_mem_clock_mhz);
  s.util_pct = static_cast<std::uint8_t>(std::lround(activity_.util_pct));
  s.mem_util_pct = static_cast<std::uint8_t>(std::lround(activity_.mem_util_pct));
  s.enc_util_pct = static_cast<std::uint8_t>(std::lround(activity_.enc_util_pct));
  s.dec_util_pct = static_cast<std::uint8_t>(std::lround(activity_.dec_util_pct));
  AccumulateCounters(k, t_end);
  step_ = k;
}

Activity Device::MigActivity(VirtualUs mid, VirtualUs t_end) {
  // One pass over the processes: which instances are occupied, and by which host workload.
  std::array<bool, kMaxMigSlots> occupied{};
  std::array<const WorkloadSegment*, kMaxMigSlots> host{};
  auto place = [&](const ProcessSpec& p) {
    const int slot = MigInstanceOf(*layout_, p);
    if (slot < 0) return;
    const auto i = static_cast<std::size_t>(slot);
    occupied[i] = true;
    if (p.workload && (host[i] == nullptr || p.workload->util_pct > host[i]->util_pct))
      host[i] = &*p.workload;
  };
  for (const ProcessSpec& p : spec_.processes)
    if (ProcessRunning(spec_, p, t_end)) place(p);
  for (const ProcessSpec& p : host_processes_) place(p);
  Activity sum;
  std::optional<Activity> timeline;  // the same for every instance that runs it
  const double max_devices = std::max(1u, model().max_mig_devices);
  for (std::size_t slot = 0; slot < instances_.size(); ++slot) {
    const MigInstanceSpec& instance = layout_->instances[slot];
    Activity a;
    if (occupied[slot] && host[slot] != nullptr)
      a = SegmentActivity(spec_, seed_, mid, mid, *host[slot]);
    else if (occupied[slot] && instance.workload)
      a = SegmentActivity(spec_, seed_, mid, mid, *instance.workload);
    else if (occupied[slot])
      a = timeline ? *timeline : *(timeline = ActivityAt(spec_, seed_, mid));
    for (std::size_t c = 0; c < a.gpm.size(); ++c)
      instances_[slot].gpm.pct_seconds[c] += a.gpm[c] * kStepS;
    AddScaled(sum, a, instance.profile->compute_slices / max_devices);
  }
  sum.pcie_rx_kbps = std::max(sum.pcie_rx_kbps, 12.0);
  sum.pcie_tx_kbps = std::max(sum.pcie_tx_kbps, 8.0);
  return sum;  // no NVLink traffic: MIG instances do not use peer-to-peer NVLink
}

void Device::AccumulateCounters(std::int64_t k, VirtualUs t_end) {
  for (std::size_t c = 0; c < gpm_.pct_seconds.size(); ++c)
    gpm_.pct_seconds[c] += activity_.gpm[c] * kStepS;
  gpm_.pcie_tx_bytes += activity_.pcie_tx_kbps * 1024 * kStepS;
  gpm_.pcie_rx_bytes += activity_.pcie_rx_kbps * 1024 * kStepS;
  const unsigned links = std::min(model().nvlinks, kMaxSimNvLinks);
  if (links == 0 || activity_.nvlink_share <= 0) return;
  std::array<bool, kMaxSimNvLinks> up{};
  unsigned up_count = 0;
  for (unsigned l = 0; l < links; ++l) up_count += (up[l] = NvLinkUpAt(spec_, l, t_end)) ? 1 : 0;
  if (up_count == 0) return;
  // The collective's traffic spreads over the links that are up.
  const double share = std::min(1.0, activity_.nvlink_share * links / up_count);
  const double bytes = share * model().nvlink_gbps * 1e9 * kStepS;
  const auto tick = static_cast<std::uint64_t>(k);
  for (unsigned l = 0; l < links; ++l) {
    if (!up[l]) continue;
    gpm_.nvlink_tx_bytes[l] += bytes * (0.98 + 0.04 * Unit(seed_, spec_.index, tick, kNvLink + l));
    gpm_.nvlink_rx_bytes[l] +=
        bytes * (0.98 + 0.04 * Unit(seed_, spec_.index, tick, kNvLink + kMaxSimNvLinks + l));
  }
}

std::size_t Device::mig_layout_index() const {
  return layout_ == nullptr ? 0 : static_cast<std::size_t>(layout_ - spec_.mig.data());
}

int Device::InstanceOf(const ProcessSpec& process) const {
  return mig_enabled() ? MigInstanceOf(*layout_, process) : -1;
}

std::uint64_t Device::instance_total_memory_bytes(std::size_t slot) const {
  const std::uint64_t slice_mib = model().memory_total_mib / kMigMemorySlices;
  return layout_->instances[slot].profile->memory_slices * slice_mib * kMiB;
}

std::uint64_t Device::instance_used_memory_bytes(std::size_t slot) const {
  double mib = 0;
  const std::vector<const ProcessSpec*> running = RunningProcesses();
  const std::vector<double> held = RunningProcessMemoryMib();
  for (std::size_t i = 0; i < running.size(); ++i)
    if (InstanceOf(*running[i]) == static_cast<int>(slot)) mib += held[i];
  return std::min(instance_total_memory_bytes(slot),
                  static_cast<std::uint64_t>(mib * static_cast<double>(kMiB)));
}

unsigned Device::temperature_c() const {
  return static_cast<unsigned>(std::lround(std::max(0.0, temperature_c_)));
}

unsigned Device::memory_temperature_c() const {
  // HBM sits a few degrees above the die, more when the memory controller is busy.
  return static_cast<unsigned>(
      std::lround(std::max(0.0, temperature_c_ + 3.0 + 6.0 * activity_.mem_util_pct / 100)));
}

unsigned Device::fan_speed_pct() const {
  return static_cast<unsigned>(std::clamp(30.0 + 2.5 * (temperature_c_ - 40.0), 30.0, 100.0));
}

unsigned Device::average_power_mw() const {
  const std::int64_t first = std::max(oldest_sample_step(), step_ - 9);
  std::uint64_t sum = 0;
  for (std::int64_t k = first; k <= step_; ++k) sum += Sample(k).power_mw;
  return static_cast<unsigned>(sum / static_cast<std::uint64_t>(step_ - first + 1));
}

std::int64_t Device::oldest_sample_step() const {
  return std::max<std::int64_t>(0, step_ - static_cast<std::int64_t>(kSampleSteps) + 1);
}

std::vector<const ProcessSpec*> Device::RunningProcesses() const {
  std::vector<const ProcessSpec*> running;
  for (const ProcessSpec& p : spec_.processes)
    if (ProcessRunning(spec_, p, last_step_us())) running.push_back(&p);
  for (const ProcessSpec& p : host_processes_) running.push_back(&p);
  return running;
}

std::vector<double> Device::RunningProcessMemoryMib() const {
  const std::vector<const ProcessSpec*> running = RunningProcesses();
  std::vector<double> mib(running.size());
  double room = static_cast<double>(total_memory_bytes() - reserved_memory_bytes()) /
                static_cast<double>(kMiB);
  for (std::size_t i = 0; i < running.size(); ++i) {
    mib[i] = std::clamp(running[i]->memory_mib, 0.0, room);
    room -= mib[i];
  }
  return mib;
}

void Device::SetHostProcesses(std::vector<ProcessSpec> processes,
                              std::optional<WorkloadSegment> workload) {
  host_processes_ = std::move(processes);
  host_workload_ = workload;
}

std::uint64_t Device::total_memory_bytes() const {
  return model().memory_total_mib * kMiB;
}
std::uint64_t Device::reserved_memory_bytes() const {
  return model().memory_reserved_mib * kMiB;
}

std::uint64_t Device::used_memory_bytes() const {
  double mib = activity_.extra_memory_mib;
  for (double process_mib : RunningProcessMemoryMib()) mib += process_mib;
  const std::uint64_t usable = total_memory_bytes() - reserved_memory_bytes();
  return std::min(usable, static_cast<std::uint64_t>(mib * static_cast<double>(kMiB)));
}

HangState* Device::HangFor(std::string_view function, VirtualUs t_us) {
  for (HangState& h : hangs_)
    if (h.fault->function == function && t_us >= h.fault->at_us) return &h;
  return nullptr;
}

}  // namespace gw::sim
