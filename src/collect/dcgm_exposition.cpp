#include "collect/dcgm_exposition.h"

#include <unistd.h>

#include <array>
#include <charconv>
#include <cmath>

namespace gw::collect {

namespace {

constexpr double kMiB = 1.0 / (1024.0 * 1024.0);
constexpr double kPercent = 100;
constexpr double kMHz = 1e-6;
constexpr double kNanoseconds = 1e9;

using enum MetricType;
using S = Slot;
using G = Gpm;

// Each row: what dcgm-exporter calls it and how gpuwarden's reading becomes DCGM's value.
// docs/dcgm-exporter.md lists the same fields with their sources; the compatibility test
// (tests/compat/) checks them against dcgm-exporter's own lists.
constexpr DcgmField Field(std::string_view name, MetricType type, std::string_view unit,
                          std::string_view help, Slot slot, double scale, bool integer = false) {
  return {name,  type,      unit,      help, DcgmSource::kSlot, slot,
          scale, S::kCount, G::kCount, 1,    MigMemory::kNone,  integer};
}
constexpr DcgmField Sum(std::string_view name, MetricType type, std::string_view unit,
                        std::string_view help, Slot slot, Slot plus, double scale,
                        bool integer = false) {
  return {name,  type, unit,      help, DcgmSource::kSlot, slot,
          scale, plus, G::kCount, 1,    MigMemory::kNone,  integer};
}
constexpr DcgmField Prof(std::string_view name, std::string_view unit, std::string_view help,
                         Slot slot, Gpm gpm) {
  return {name, kGauge,    unit, help, DcgmSource::kGpm, slot,
          1,    S::kCount, gpm,  1,    MigMemory::kNone, false};
}
constexpr DcgmField Memory(std::string_view name, std::string_view help, Slot slot, MigMemory mig) {
  return {name,      kGauge, "MiB", help, DcgmSource::kMigMemory, slot, kMiB, S::kCount,
          G::kCount, 1,      mig,   true};
}

constexpr std::array kFields = {
    // dcgm-exporter's default counters (etc/default-counters.csv), in its order.
    Field("DCGM_FI_DEV_SM_CLOCK", kGauge, "MHz", "SM clock frequency (in MHz).", S::kSmClock, kMHz,
          true),
    Field("DCGM_FI_DEV_MEM_CLOCK", kGauge, "MHz", "Memory clock frequency (in MHz).",
          S::kMemoryClock, kMHz, true),
    Field("DCGM_FI_DEV_MEMORY_TEMP", kGauge, "C", "Memory (HBM) temperature (in C).",
          S::kMemoryTemperature, 1),
    Field("DCGM_FI_DEV_GPU_TEMP", kGauge, "C", "GPU temperature (in C).", S::kTemperature, 1),
    Field("DCGM_FI_DEV_POWER_USAGE", kGauge, "W", "Power draw (in W).", S::kPower, 1),
    Field("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", kCounter, "mJ",
          "Energy consumed since the driver loaded (in mJ).", S::kEnergy, 1000, true),
    Field("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", kCounter, "", "PCIe replays (retries).",
          S::kPcieReplays, 1, true),
    Field("DCGM_FI_DEV_GPU_UTIL", kGauge, "%", "GPU utilization (in %).", S::kUtilization, kPercent,
          true),
    Field("DCGM_FI_DEV_MEM_COPY_UTIL", kGauge, "%", "Memory utilization (in %).",
          S::kMemoryUtilization, kPercent, true),
    Field("DCGM_FI_DEV_ENC_UTIL", kGauge, "%", "Encoder utilization (in %).",
          S::kEncoderUtilization, kPercent, true),
    Field("DCGM_FI_DEV_DEC_UTIL", kGauge, "%", "Decoder utilization (in %).",
          S::kDecoderUtilization, kPercent, true),
    DcgmField{"DCGM_FI_DEV_XID_ERRORS", kGauge, "", "The XID error seen last (0: none).",
              DcgmSource::kLastXid, S::kCount, 1},
    Memory("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", S::kMemoryFree,
           MigMemory::kFree),
    Memory("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", S::kMemoryUsed,
           MigMemory::kUsed),
    Memory("DCGM_FI_DEV_FB_RESERVED", "Framebuffer memory reserved (in MiB).", S::kMemoryReserved,
           MigMemory::kNone),
    Sum("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", kCounter, "B",
        "NVLink data transmitted and received over all links (in bytes).", S::kNvlinkTxBytes,
        S::kNvlinkRxBytes, 1, true),
    Field("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", kCounter, "",
          "Rows remapped for uncorrectable errors.", S::kRemappedUncorrectable, 1, true),
    Field("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", kCounter, "",
          "Rows remapped for correctable errors.", S::kRemappedCorrectable, 1, true),
    Field("DCGM_FI_DEV_ROW_REMAP_FAILURE", kGauge, "", "1 if a row remapping failed.",
          S::kRemappedFailure, 1, true),
    Prof("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "ratio", "Ratio of time the graphics engine is active.",
         S::kGraphicsActive, G::kGraphicsActive),
    Prof("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "ratio", "Ratio of cycles a tensor pipe is active.",
         S::kTensorAny, G::kTensorAny),
    Prof("DCGM_FI_PROF_DRAM_ACTIVE", "ratio",
         "Ratio of cycles the device memory interface is active sending or receiving data.",
         S::kDramActive, G::kDramActive),
    Prof("DCGM_FI_PROF_PCIE_TX_BYTES", "B/s", "PCIe transmit rate (in bytes per second).",
         S::kPcieTx, G::kPcieTxPerSecond),
    Prof("DCGM_FI_PROF_PCIE_RX_BYTES", "B/s", "PCIe receive rate (in bytes per second).",
         S::kPcieRx, G::kPcieRxPerSecond),
    // Listed but muted in that CSV: written whenever gpuwarden has the reading.
    Field("DCGM_FI_DEV_POWER_VIOLATION", kCounter, "ns",
          "Time the clocks were held down by the power cap (in ns).", S::kSecondsSwPowerCap,
          kNanoseconds, true),
    Sum("DCGM_FI_DEV_THERMAL_VIOLATION", kCounter, "ns",
        "Time the clocks were held down by thermal slowdown (in ns).", S::kSecondsSwThermal,
        S::kSecondsHwThermal, kNanoseconds, true),
    Field("DCGM_FI_DEV_SYNC_BOOST_VIOLATION", kCounter, "ns",
          "Time the clocks were held down by sync boost (in ns).", S::kSecondsSyncBoost,
          kNanoseconds, true),
    Field("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", kCounter, "",
          "Single-bit (corrected) ECC errors since the last reset.", S::kEccCorrectedVolatile, 1,
          true),
    Field("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", kCounter, "",
          "Double-bit (uncorrected) ECC errors since the last reset.", S::kEccUncorrectedVolatile,
          1, true),
    Field("DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", kCounter, "",
          "Single-bit (corrected) ECC errors over the board's life.", S::kEccCorrectedAggregate, 1,
          true),
    Field("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", kCounter, "",
          "Double-bit (uncorrected) ECC errors over the board's life.", S::kEccUncorrectedAggregate,
          1, true),
    Field("DCGM_FI_DEV_RETIRED_SBE", kCounter, "", "Pages retired for single-bit errors.",
          S::kRetiredSingleBit, 1, true),
    Field("DCGM_FI_DEV_RETIRED_DBE", kCounter, "", "Pages retired for double-bit errors.",
          S::kRetiredDoubleBit, 1, true),
    Field("DCGM_FI_DEV_RETIRED_PENDING", kCounter, "", "Pages waiting to be retired.",
          S::kRetiredPending, 1, true),
    Field("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", kCounter, "",
          "NVLink flow-control CRC errors, all links.", S::kNvlinkCrcFlitErrors, 1, true),
    Field("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", kCounter, "",
          "NVLink data CRC errors, all links.", S::kNvlinkCrcDataErrors, 1, true),
    Field("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", kCounter, "",
          "NVLink replays (retries), all links.", S::kNvlinkReplayErrors, 1, true),
    Field("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", kCounter, "",
          "NVLink recovery errors, all links.", S::kNvlinkRecoveryErrors, 1, true),
    Prof("DCGM_FI_PROF_SM_ACTIVE", "ratio", "Ratio of cycles an SM has at least one warp assigned.",
         S::kSmActive, G::kSmActive),
    Prof("DCGM_FI_PROF_SM_OCCUPANCY", "ratio", "Ratio of warps resident on an SM to its maximum.",
         S::kSmOccupancy, G::kSmOccupancy),
    Prof("DCGM_FI_PROF_PIPE_FP64_ACTIVE", "ratio", "Ratio of cycles the FP64 pipes are active.",
         S::kPipeFp64, G::kFp64),
    Prof("DCGM_FI_PROF_PIPE_FP32_ACTIVE", "ratio", "Ratio of cycles the FP32 pipes are active.",
         S::kPipeFp32, G::kFp32),
    Prof("DCGM_FI_PROF_PIPE_FP16_ACTIVE", "ratio", "Ratio of cycles the FP16 pipes are active.",
         S::kPipeFp16, G::kFp16),
    // DCGM profiling fields outside that CSV, which GPM also measures.
    Prof("DCGM_FI_PROF_PIPE_TENSOR_HMMA_ACTIVE", "ratio",
         "Ratio of cycles the HMMA tensor pipe is active.", S::kTensorHmma, G::kTensorHmma),
    Prof("DCGM_FI_PROF_PIPE_TENSOR_IMMA_ACTIVE", "ratio",
         "Ratio of cycles the IMMA tensor pipe is active.", S::kTensorImma, G::kTensorImma),
    Prof("DCGM_FI_PROF_PIPE_TENSOR_DFMA_ACTIVE", "ratio",
         "Ratio of cycles the DFMA tensor pipe is active.", S::kTensorDfma, G::kTensorDfma),
    Prof("DCGM_FI_PROF_PIPE_INT_ACTIVE", "ratio", "Ratio of cycles the integer pipe is active.",
         S::kPipeInteger, G::kInteger),
    Prof("DCGM_FI_PROF_NVLINK_TX_BYTES", "B/s", "NVLink transmit rate (in bytes per second).",
         S::kNvlinkTxRate, G::kNvlinkTxPerSecond),
    Prof("DCGM_FI_PROF_NVLINK_RX_BYTES", "B/s", "NVLink receive rate (in bytes per second).",
         S::kNvlinkRxRate, G::kNvlinkRxPerSecond),
};

double Scaled(const DcgmField& f, double v, double scale) {
  if (IsAbsent(v)) return kAbsent;
  v *= scale;
  return f.integer ? std::round(v) : v;
}

// The value of `f` for `gpu`, or for one of its MIG devices when `instance` is set.
double ValueOf(const DcgmField& f, const GpuSnapshot& gpu, const MigInstanceSnapshot* instance,
               unsigned last_xid) {
  switch (f.source) {
    case DcgmSource::kLastXid:
      return static_cast<double>(last_xid);
    case DcgmSource::kGpm:
      if (instance != nullptr) return Scaled(f, instance->value(f.gpm), f.gpm_scale);
      break;
    case DcgmSource::kMigMemory:
      if (instance == nullptr) break;
      switch (f.mig_memory) {
        case MigMemory::kUsed:
          return Scaled(f, instance->memory_used_bytes, f.scale);
        case MigMemory::kFree:
          return Scaled(f, instance->memory_free_bytes, f.scale);
        case MigMemory::kNone:
          return kAbsent;
      }
      return kAbsent;
    case DcgmSource::kSlot:
      break;
  }
  double v = gpu.value(f.slot);
  if (f.plus != Slot::kCount) {
    double plus = gpu.value(f.plus);
    if (IsAbsent(v))
      v = plus;
    else if (!IsAbsent(plus))
      v += plus;
  }
  return Scaled(f, v, f.scale);
}

// The XID whose count rose since the last render (the highest code when several did); the one
// remembered before when none did.
void TrackXids(const GpuSnapshot& gpu, std::vector<std::pair<unsigned, uint64_t>>* seen,
               unsigned* last) {
  unsigned rose = 0;
  for (const auto& [code, count] : gpu.xid_counts) {
    uint64_t before = 0;
    for (const auto& [c, n] : *seen)
      if (c == code) before = n;
    if (count > before && code > rose) rose = code;
  }
  if (rose != 0) *last = rose;
  seen->assign(gpu.xid_counts.begin(), gpu.xid_counts.end());
}

}  // namespace

std::span<const DcgmField> DcgmFields() {
  return kFields;
}

std::string DcgmHostname() {
  char name[256] = {0};
  if (gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

void DcgmExposition::AppendLabels(const Snapshot& snapshot, const GpuSnapshot& gpu,
                                  const MigInstanceSnapshot* instance, std::string* out) const {
  const GpuIdentity& id = gpu.identity;
  char number[16];
  auto append = [out](std::string_view name, std::string_view value) {
    if (!out->empty()) *out += ',';
    *out += name;
    *out += "=\"";
    expo::AppendEscapedLabelValue(out, value);
    *out += '"';
  };
  auto [end, ec] = std::to_chars(number, number + sizeof number, id.index);
  const std::string_view index(number, end - number);
  append("gpu", index);
  append("UUID", id.uuid);
  append("pci_bus_id", id.pci_bus_id);
  // dcgm-exporter names the device node, /dev/nvidia<minor>; NVML numbers minors as it numbers
  // devices on every system we know of, so the index stands in for the minor.
  *out += ",device=\"nvidia";
  *out += index;
  *out += '"';
  append("modelName", id.name);
  if (instance != nullptr) {
    append("GPU_I_PROFILE", instance->profile);
    auto [iend, iec] = std::to_chars(number, number + sizeof number, instance->gpu_instance_id);
    append("GPU_I_ID", std::string_view(number, iend - number));
  }
  if (!options_.hostname.empty()) append("Hostname", options_.hostname);
  if (!snapshot.stats.driver_version.empty())
    append("DCGM_FI_DRIVER_VERSION", snapshot.stats.driver_version);
  DcgmPodLabels pod;
  if (options_.pod_of && options_.pod_of(instance ? instance->uuid : id.uuid, &pod)) {
    if (!pod.container.empty()) append("container", pod.container);
    if (!pod.pod_namespace.empty()) append("namespace", pod.pod_namespace);
    if (!pod.pod.empty()) append("pod", pod.pod);
  }
}

void DcgmExposition::Prepare(const Snapshot& snapshot) {
  if (gpus_.size() != snapshot.gpus.size()) gpus_.resize(snapshot.gpus.size());
  for (size_t i = 0; i < snapshot.gpus.size(); ++i) {
    const GpuSnapshot& gpu = snapshot.gpus[i];
    GpuState& st = gpus_[i];
    if (st.uuid != gpu.identity.uuid) {  // another GPU in this place: its history starts afresh
      st.uuid = gpu.identity.uuid;
      st.xids.clear();
      st.last_xid = 0;
    }
    TrackXids(gpu, &st.xids, &st.last_xid);
    st.labels.clear();
    if (gpu.mig.empty()) AppendLabels(snapshot, gpu, nullptr, &st.labels);
    if (st.instance_labels.size() < gpu.mig.size()) st.instance_labels.resize(gpu.mig.size());
    for (size_t m = 0; m < gpu.mig.size(); ++m) {
      st.instance_labels[m].clear();
      AppendLabels(snapshot, gpu, &gpu.mig[m], &st.instance_labels[m]);
    }
  }
}

void DcgmExposition::Write(const Snapshot& snapshot, expo::Writer* w) {
  Prepare(snapshot);
  const bool open_metrics = w->format() == expo::Format::kOpenMetrics;
  for (const DcgmField& f : kFields) {
    bool header = false;
    for (size_t i = 0; i < snapshot.gpus.size(); ++i) {
      const GpuSnapshot& gpu = snapshot.gpus[i];
      const GpuState& st = gpus_[i];
      // A MIG-enabled GPU is written per MIG device (dcgm-exporter's default device selection).
      const size_t rows = gpu.mig.empty() ? 1 : gpu.mig.size();
      for (size_t r = 0; r < rows; ++r) {
        const MigInstanceSnapshot* instance = gpu.mig.empty() ? nullptr : &gpu.mig[r];
        double v = ValueOf(f, gpu, instance, st.last_xid);
        if (IsAbsent(v)) continue;
        if (!header) {
          expo::Type type = f.type == kGauge ? expo::Type::kGauge
                            : open_metrics   ? expo::Type::kUnknown
                                             : expo::Type::kCounter;
          w->Family(f.name, type, f.help);
          header = true;
        }
        w->Sample().Escaped(instance ? st.instance_labels[r] : st.labels).Value(v);
      }
    }
  }
}

}  // namespace gw::collect
