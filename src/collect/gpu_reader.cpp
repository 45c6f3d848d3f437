#include "collect/gpu_reader.h"

#include <algorithm>
#include <chrono>

#include "collect/exposition.h"

namespace gw::collect {

namespace {
constexpr double kMega = 1e6;
}  // namespace

GpuReader::GpuReader(size_t position, nvml::Device device, unsigned nvml_index,
                     const CollectorOptions& options, CallGuard* guard)
    : position_(position), device_(device), options_(options), guard_(guard) {
  snap_.values.fill(kAbsent);
  for (PeakWindow& w : peak_windows_)
    w = PeakWindow(options_.peak_window_s, options_.fast_interval_s);
  GpuIdentity& id = snap_.identity;
  id.index = nvml_index;
  id.name = device_.Name().value_or("");
  id.uuid = device_.Uuid().value_or("");
  id.serial = device_.Serial().value_or("");
  auto pci = device_.Pci();
  if (pci.ok()) id.pci_bus_id = pci.value().bus_id;
  id.architecture = device_.Architecture().value_or(0);
  id.label_text = "gpu=\"" + std::to_string(id.index) + "\",uuid=\"";
  AppendEscapedLabelValue(&id.label_text, id.uuid);
  id.label_text += "\"";
  if (options_.gpm) {
    auto gpm = device_.GpmSupported();
    snap_.gpm_supported = gpm.ok() && gpm.value();
  }
  if (snap_.gpm_supported) {
    gpm_ = nvml::GpmSampler(device_);
    BuildGpmRequest();
    pcie_from_gpm_ = true;
  }
}

void GpuReader::MarkLost() {
  snap_.lost = true;
  snap_.last_error_code = NVML_ERROR_GPU_IS_LOST;
  snap_.values.fill(kAbsent);
  snap_.peak_window.fill(kAbsent);
  for (PeakWindow& w : peak_windows_) w.Clear();
  Set(Slot::kUp, 0);
  snap_.processes.clear();
  mig_.clear();  // frees the instances' GPM samples
  snap_.mig.clear();
  snap_.nvlinks.clear();
}

void GpuReader::FastCycle(double now_s) {
  if (snap_.lost) {
    Set(Slot::kUp, 0);
    return;
  }
  any_success_ = false;

  auto util = Read(Call::kUtilization, [&] { return device_.Utilization(); });
  Set(Slot::kUtilization, util.ok() ? util.value().gpu / 100.0 : kAbsent);
  Set(Slot::kMemoryUtilization, util.ok() ? util.value().memory / 100.0 : kAbsent);

  auto mem = Read(Call::kMemory, [&] { return device_.Memory(); });
  if (mem.ok()) {
    const nvml::MemoryInfo& m = mem.value();
    Set(Slot::kMemoryTotal, static_cast<double>(m.total_bytes));
    Set(Slot::kMemoryUsed, static_cast<double>(m.used_bytes));
    Set(Slot::kMemoryFree, static_cast<double>(m.free_bytes));
    Set(Slot::kMemoryReserved, m.has_reserved ? static_cast<double>(m.reserved_bytes) : kAbsent);
    double used = static_cast<double>(m.used_bytes);
    Set(Slot::kMemoryUsedPeak,
        IsAbsent(memory_used_peak_) ? used : std::max(used, memory_used_peak_));
  } else {
    for (Slot s : {Slot::kMemoryTotal, Slot::kMemoryUsed, Slot::kMemoryFree, Slot::kMemoryReserved,
                   Slot::kMemoryUsedPeak})
      Clear(s);
  }
  memory_used_peak_ = kAbsent;

  auto enc = Read(Call::kEncoder, [&] { return device_.EncoderUtilization(); });
  Set(Slot::kEncoderUtilization, enc.ok() ? enc.value() / 100.0 : kAbsent);
  auto dec = Read(Call::kDecoder, [&] { return device_.DecoderUtilization(); });
  Set(Slot::kDecoderUtilization, dec.ok() ? dec.value() / 100.0 : kAbsent);

  auto temp = Read(Call::kTemperature, [&] { return device_.TemperatureC(); });
  Set(Slot::kTemperature, temp.ok() ? temp.value() : kAbsent);
  ReadTemperatureLimits();
  auto mem_temp =
      Read(Call::kMemoryTemperature, [&] { return device_.FieldValue(NVML_FI_DEV_MEMORY_TEMP); });
  Set(Slot::kMemoryTemperature, mem_temp.ok() ? mem_temp.value().uiVal : kAbsent);

  auto power = Read(Call::kPower, [&] { return device_.PowerUsageMw(); });
  Set(Slot::kPower, power.ok() ? power.value() / 1000.0 : kAbsent);
  auto limit = Read(Call::kPowerLimit, [&] { return device_.EnforcedPowerLimitMw(); });
  Set(Slot::kPowerLimit, limit.ok() ? limit.value() / 1000.0 : kAbsent);
  auto energy = Read(Call::kEnergy, [&] { return device_.TotalEnergyMj(); });
  Set(Slot::kEnergy, energy.ok() ? static_cast<double>(energy.value()) / 1000.0 : kAbsent);

  auto sm = Read(Call::kClocks, [&] { return device_.ClockMhz(NVML_CLOCK_SM); });
  Set(Slot::kSmClock, sm.ok() ? sm.value() * kMega : kAbsent);
  auto mclk = Read(Call::kClocks, [&] { return device_.ClockMhz(NVML_CLOCK_MEM); });
  Set(Slot::kMemoryClock, mclk.ok() ? mclk.value() * kMega : kAbsent);

  auto reasons = Read(Call::kClockEvents, [&] { return device_.ClocksEventReasons(); });
  double dt = last_fast_s_ >= 0 ? std::max(0.0, now_s - last_fast_s_) : 0.0;
  for (size_t r = 0; r < kClockEventReasons.size(); ++r) {
    bool supported = snap_.supported_clock_events == 0 ||
                     (snap_.supported_clock_events & kClockEventReasons[r].bit) != 0;
    if (!reasons.ok() || !supported) {
      Clear(ClockEventActiveSlot(r));
      Clear(ClockEventSecondsSlot(r));
      continue;
    }
    bool active = (reasons.value() & kClockEventReasons[r].bit) != 0;
    // Each cycle credits the time since the previous one to every reason active now.
    if (active) event_seconds_[r] += dt;
    Set(ClockEventActiveSlot(r), active ? 1 : 0);
    Set(ClockEventSecondsSlot(r), event_seconds_[r]);
  }
  last_fast_s_ = now_s;

  auto pstate = Read(Call::kPerformanceState, [&] { return device_.PerformanceState(); });
  Set(Slot::kPerformanceState,
      pstate.ok() && pstate.value() != NVML_PSTATE_UNKNOWN ? pstate.value() : kAbsent);
  auto fan = Read(Call::kFan, [&] { return device_.FanSpeedPercent(); });
  Set(Slot::kFanSpeed, fan.ok() ? fan.value() / 100.0 : kAbsent);

  ReadSamplePeaks();
  ReadGpm(now_s);
  ReadMigFast(now_s);

  if (snap_.lost) return;  // MarkLost already cleared every value
  Set(Slot::kUp, any_success_ ? 1 : 0);
  UpdatePeakWindows(now_s);
}

// Each per-cycle peak into its trailing window (collect/peak_window.h). A cycle whose peak is
// absent shows no window value either, so the two families come and go together.
void GpuReader::UpdatePeakWindows(double now_s) {
  for (size_t k = 0; k < kPeakWindowCount; ++k)
    snap_.peak_window[k] = peak_windows_[k].Add(now_s, snap_.value(kPeakWindows[k].first));
}

void GpuReader::ReadSamplePeaks() {
  struct Peak {
    nvmlSamplingType_t type;
    unsigned long long* since;
    Slot peak, current;
    double divisor;  // to base units; dividing keeps 35/100 exactly 0.35
  } peaks[] = {
      {NVML_GPU_UTILIZATION_SAMPLES, &util_since_us_, Slot::kUtilizationPeak, Slot::kUtilization,
       100},
      {NVML_MEMORY_UTILIZATION_SAMPLES, &mem_util_since_us_, Slot::kMemoryUtilizationPeak,
       Slot::kMemoryUtilization, 100},
      {NVML_TOTAL_POWER_SAMPLES, &power_since_us_, Slot::kPowerPeak, Slot::kPower, 1000},
  };
  for (Peak& p : peaks) {
    bool first = *p.since == 0;
    auto window =
        Read(Call::kSamples, [&] { return device_.Samples(p.type, *p.since, &sample_scratch_); });
    if (!window.ok()) {
      Clear(p.peak);
      continue;
    }
    *p.since = window.value().newest_us;
    double current = snap_.values[static_cast<size_t>(p.current)];
    // The first read returns the driver's whole buffer, older than our first cycle: ignore it.
    double peak = (!first && window.value().count > 0) ? window.value().max / p.divisor : kAbsent;
    if (IsAbsent(peak) || (!IsAbsent(current) && current > peak)) peak = current;
    Set(p.peak, peak);
  }
}

void GpuReader::PeakSample() {
  if (snap_.lost) return;
  auto mem = Read(Call::kMemory, [&] { return device_.Memory(); });
  if (!mem.ok()) return;
  double used = static_cast<double>(mem.value().used_bytes);
  if (IsAbsent(memory_used_peak_) || used > memory_used_peak_) memory_used_peak_ = used;
}

void GpuReader::SlowCycle(double /*now_s*/) {
  if (snap_.lost) {
    // A lost GPU stays lost until it is reset; probe it cheaply once per slow cycle.
    snap_.lost = false;
    auto probe = Read(Call::kTemperature, [&] { return device_.TemperatureC(); });
    if (!probe.ok()) {
      snap_.lost = true;
      Set(Slot::kUp, 0);
      return;
    }
  }

  auto thresholds = Read(Call::kThresholds, [&] { return device_.Thresholds(); });
  if (thresholds.ok()) {
    const nvml::TemperatureThresholds& t = thresholds.value();
    Set(Slot::kThresholdShutdown, t.has_shutdown ? t.shutdown_c : kAbsent);
    Set(Slot::kThresholdSlowdown, t.has_slowdown ? t.slowdown_c : kAbsent);
    Set(Slot::kThresholdGpuMax, t.has_gpu_max ? t.gpu_max_c : kAbsent);
    Set(Slot::kThresholdMemoryMax, t.has_mem_max ? t.mem_max_c : kAbsent);
  } else {
    for (Slot s : {Slot::kThresholdShutdown, Slot::kThresholdSlowdown, Slot::kThresholdGpuMax,
                   Slot::kThresholdMemoryMax})
      Clear(s);
  }

  auto def = Read(Call::kPowerLimits, [&] { return device_.DefaultPowerLimitMw(); });
  Set(Slot::kPowerDefaultLimit, def.ok() ? def.value() / 1000.0 : kAbsent);
  auto range = Read(Call::kPowerLimits, [&] { return device_.PowerLimitConstraints(); });
  Set(Slot::kPowerMinLimit, range.ok() ? range.value().min_mw / 1000.0 : kAbsent);
  Set(Slot::kPowerMaxLimit, range.ok() ? range.value().max_mw / 1000.0 : kAbsent);

  auto max_sm = Read(Call::kMaxClocks, [&] { return device_.MaxClockMhz(NVML_CLOCK_SM); });
  Set(Slot::kSmClockMax, max_sm.ok() ? max_sm.value() * kMega : kAbsent);
  auto max_mem = Read(Call::kMaxClocks, [&] { return device_.MaxClockMhz(NVML_CLOCK_MEM); });
  Set(Slot::kMemoryClockMax, max_mem.ok() ? max_mem.value() * kMega : kAbsent);

  auto supported = Read(Call::kClockEvents, [&] { return device_.SupportedClocksEventReasons(); });
  snap_.supported_clock_events = supported.ok() ? supported.value() : 0;

  auto ecc_mode = Read(Call::kEccMode, [&] { return device_.EccEnabled(); });
  Set(Slot::kEccEnabled, ecc_mode.ok() ? (ecc_mode.value() ? 1 : 0) : kAbsent);
  bool ecc_on = ecc_mode.ok() && ecc_mode.value();
  auto ecc = ecc_on ? Read(Call::kEccCounts, [&] { return device_.Ecc(); })
                    : nvml::Result<nvml::EccCounts>::Fail(NVML_ERROR_NOT_SUPPORTED);
  Set(Slot::kEccCorrectedVolatile,
      ecc.ok() ? static_cast<double>(ecc.value().corrected_volatile) : kAbsent);
  Set(Slot::kEccUncorrectedVolatile,
      ecc.ok() ? static_cast<double>(ecc.value().uncorrected_volatile) : kAbsent);
  Set(Slot::kEccCorrectedAggregate,
      ecc.ok() ? static_cast<double>(ecc.value().corrected_aggregate) : kAbsent);
  Set(Slot::kEccUncorrectedAggregate,
      ecc.ok() ? static_cast<double>(ecc.value().uncorrected_aggregate) : kAbsent);

  auto retired_sbe = Read(Call::kRetiredPages, [&] {
    return device_.RetiredPages(NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS);
  });
  Set(Slot::kRetiredSingleBit, retired_sbe.ok() ? retired_sbe.value() : kAbsent);
  if (retired_sbe.ok()) {
    auto retired_dbe = Read(Call::kRetiredPages, [&] {
      return device_.RetiredPages(NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR);
    });
    Set(Slot::kRetiredDoubleBit, retired_dbe.ok() ? retired_dbe.value() : kAbsent);
    auto pending = Read(Call::kRetiredPages, [&] { return device_.RetiredPagesPending(); });
    Set(Slot::kRetiredPending, pending.ok() ? (pending.value() ? 1 : 0) : kAbsent);
  } else {
    Clear(Slot::kRetiredDoubleBit);
    Clear(Slot::kRetiredPending);
  }

  auto remap = Read(Call::kRemappedRows, [&] { return device_.Remapped(); });
  Set(Slot::kRemappedCorrectable, remap.ok() ? remap.value().correctable : kAbsent);
  Set(Slot::kRemappedUncorrectable, remap.ok() ? remap.value().uncorrectable : kAbsent);
  Set(Slot::kRemappedPending, remap.ok() ? (remap.value().pending ? 1 : 0) : kAbsent);
  Set(Slot::kRemappedFailure, remap.ok() ? (remap.value().failure ? 1 : 0) : kAbsent);

  auto replays = Read(Call::kPcieReplays, [&] { return device_.PcieReplays(); });
  Set(Slot::kPcieReplays, replays.ok() ? replays.value() : kAbsent);
  // Where GPM gives PCIe rates (each fast cycle, over the whole interval), the ~20 ms blocking
  // nvmlDeviceGetPcieThroughput pair is skipped (docs/metrics.md, "Profiling").
  if (!pcie_from_gpm_) {
    auto tx = Read(Call::kPcieThroughput,
                   [&] { return device_.PcieThroughputKBps(NVML_PCIE_UTIL_TX_BYTES); });
    Set(Slot::kPcieTx, tx.ok() ? tx.value() * 1024.0 : kAbsent);
    auto rx = Read(Call::kPcieThroughput,
                   [&] { return device_.PcieThroughputKBps(NVML_PCIE_UTIL_RX_BYTES); });
    Set(Slot::kPcieRx, rx.ok() ? rx.value() * 1024.0 : kAbsent);
  }

  ReadNvLink();
  ReadMigLayout();
  ReadMigProcesses();
  ReadProcesses();
  if (snap_.lost) return;
  Set(Slot::kUp, 1);
}

void GpuReader::ReadProcesses() {
  auto count = Read(Call::kProcesses, [&] { return device_.ComputeProcesses(&process_scratch_); });
  if (!count.ok()) {
    Clear(Slot::kProcesses);
    Clear(Slot::kProcessesMemory);
    snap_.processes.clear();
    return;
  }
  snap_.processes.resize(process_scratch_.size());
  double total = 0;
  bool total_known = true;
  for (size_t i = 0; i < process_scratch_.size(); ++i) {
    const nvml::ProcessInfo& p = process_scratch_[i];
    ProcessSample& out = snap_.processes[i];
    out = ToProcessSample(p, p.gpu_instance_id);
    // Drivers that leave the instance out of the parent's list: find the pid in an instance's.
    if (out.gpu_instance_id == kNoMigInstance)
      for (const MigInstanceSnapshot& m : snap_.mig)
        for (const ProcessSample& q : m.processes)
          if (q.pid == p.pid) out.gpu_instance_id = m.gpu_instance_id;
    if (p.memory_known) {
      total += static_cast<double>(p.used_memory_bytes);
    } else {
      total_known = false;
    }
  }
  Set(Slot::kProcesses, static_cast<double>(process_scratch_.size()));
  Set(Slot::kProcessesMemory, total_known ? total : kAbsent);

  // Per-process SM utilization is always read (top and the console show it); only its /metrics
  // series wait for per_process_metrics (collect/exposition.h).
  if (snap_.processes.empty()) return;
  auto util = Read(Call::kProcessUtilization, [&] {
    return device_.ProcessUtilization(process_util_since_us_, &process_util_scratch_);
  });
  if (!util.ok()) return;
  for (const nvmlProcessUtilizationSample_t& s : process_util_scratch_) {
    process_util_since_us_ = std::max(process_util_since_us_, s.timeStamp);
    for (ProcessSample& p : snap_.processes) {
      if (p.pid != s.pid) continue;
      double ratio = s.smUtil / 100.0;
      if (IsAbsent(p.sm_utilization_ratio) || ratio > p.sm_utilization_ratio)
        p.sm_utilization_ratio = ratio;
    }
  }
}

}  // namespace gw::collect
