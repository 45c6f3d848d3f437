// libnvml-sim.so, part 3: ECC, retired pages, row remapping, PCIe, NVLink, processes and field
// values.
#include <algorithm>
#include <cmath>
#include <vector>

#include "sim/api_internal.h"
#include "sim/faults.h"

using gw::sim::api::DeviceCall;
using gw::sim::api::WithDevice;
using gw::sim::api::WithDeviceOrMig;

namespace {

constexpr unsigned kNoInstance = 0xFFFFFFFFu;  // gpuInstanceId/computeInstanceId without MIG
constexpr std::uint64_t kMiB = 1ULL << 20;

gw::sim::ErrorCounters Counters(const DeviceCall& c) {
  return gw::sim::ErrorCountersAt(c.device->spec(), c.device->last_step_us());
}

// Writes the running processes as entries of `stride` bytes in the layout of
// nvmlProcessInfo_v2_t (pid@0, usedGpuMemory@8, gpuInstanceId@16, computeInstanceId@20; a 32-byte
// stride adds usedGpuCcProtectedMemory@24 = 0, as the 535.43-535.86 drivers did). With
// Layout::kV1 the entries are nvmlProcessInfo_v1_t (pid@0, usedGpuMemory@8).
// Size query: *count == 0 or infos == NULL -> INSUFFICIENT_SIZE with the count (SUCCESS and 0
// when nothing runs). *count is the number of entries the caller has room for.
enum class Layout { kV1, kV2, kV2DriverStride };

// On a MIG-enabled GPU every process carries its instance's ids; a MIG device lists only the
// processes on its instance.
nvmlReturn_t RunningProcesses(nvmlDevice_t device, unsigned* count, void* infos, Layout layout,
                              const char* function) {
  const bool v1_layout = layout == Layout::kV1;
  return WithDeviceOrMig(device, function, [&](DeviceCall& c) -> nvmlReturn_t {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    std::vector<const gw::sim::ProcessSpec*> running = c.device->RunningProcesses();
    std::vector<double> held = c.device->RunningProcessMemoryMib();
    if (c.mig != nullptr) {
      std::size_t kept = 0;
      for (std::size_t i = 0; i < running.size(); ++i) {
        if (c.device->InstanceOf(*running[i]) != c.mig_slot) continue;
        running[kept] = running[i];
        held[kept++] = held[i];
      }
      running.resize(kept);
    }
    const auto n = static_cast<unsigned>(running.size());
    if (n == 0) {
      *count = 0;
      return NVML_SUCCESS;
    }
    if (infos == nullptr || *count < n) {
      *count = n;
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    const std::size_t stride = v1_layout ? sizeof(nvmlProcessInfo_v1_t)
                               : layout == Layout::kV2DriverStride
                                   ? c.fleet->scenario().driver.process_info_v3_stride
                                   : sizeof(nvmlProcessInfo_v2_t);
    auto* out = static_cast<unsigned char*>(infos);
    for (unsigned i = 0; i < n; ++i) {
      unsigned char* entry = out + i * stride;
      std::memset(entry, 0, stride);
      const unsigned pid = running[i]->pid;
      const unsigned long long used =
          static_cast<unsigned long long>(held[i] * static_cast<double>(kMiB));
      std::memcpy(entry + 0, &pid, sizeof pid);
      std::memcpy(entry + 8, &used, sizeof used);
      if (!v1_layout) {
        const int slot = c.device->InstanceOf(*running[i]);
        unsigned gi = kNoInstance, ci = kNoInstance;
        if (slot >= 0) {
          const gw::sim::MigInstanceSpec& m =
              c.device->mig_layout()->instances[static_cast<std::size_t>(slot)];
          gi = m.gpu_instance_id;
          ci = m.compute_instance_id;
        }
        std::memcpy(entry + 16, &gi, sizeof gi);
        std::memcpy(entry + 20, &ci, sizeof ci);
      }
    }
    *count = n;
    return NVML_SUCCESS;
  });
}

unsigned NvLinks(const DeviceCall& c) {
  return std::min(c.device->model().nvlinks, gw::sim::kMaxSimNvLinks);
}

gw::sim::NvLinkErrors LinkErrors(const DeviceCall& c, unsigned link) {
  return gw::sim::NvLinkErrorsAt(c.device->spec(), link, c.device->last_step_us());
}

// The NVLink fields (docs/scenarios.md, "NVLink"). False: not an NVLink field.
[[maybe_unused]] bool NvLinkField(const DeviceCall& c, nvmlFieldValue_t& f) {
  const unsigned links = NvLinks(c);
  const unsigned id = f.fieldId;
  const bool total = id == NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL ||
                     id == NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL ||
                     id == NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL ||
                     id == NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL ||
                     id == NVML_FI_DEV_NVLINK_ECC_DATA_ERROR_COUNT_TOTAL;
  const bool per_link = id == NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY ||
                        id == NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY ||
                        id == NVML_FI_DEV_NVLINK_ERROR_DL_CRC || id == NVML_FI_DEV_NVLINK_GET_STATE;
  const bool throughput =
      id == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX || id == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
  if (!total && !per_link && !throughput && id != NVML_FI_DEV_NVLINK_LINK_COUNT) return false;
  if (links == 0) {
    f.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
    return true;
  }
  f.valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
  if (id == NVML_FI_DEV_NVLINK_LINK_COUNT) {
    f.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
    f.value.uiVal = links;
    return true;
  }
  // Per-link fields name the link in scopeId; throughput also takes 0xFFFFFFFF (all links).
  const bool all = throughput && f.scopeId == 0xFFFFFFFFu;
  if ((per_link || throughput) && !all && f.scopeId >= links) {
    f.nvmlReturn = NVML_ERROR_INVALID_ARGUMENT;
    return true;
  }
  if (total) {
    unsigned long long sum = 0;
    for (unsigned l = 0; l < links; ++l) {
      const gw::sim::NvLinkErrors e = LinkErrors(c, l);
      sum += id == NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL   ? e.crc_flit
             : id == NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL ? e.crc_data
             : id == NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL   ? e.replay
             : id == NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL ? e.recovery
                                                                   : e.ecc_data;
    }
    f.value.ullVal = sum;
  } else if (throughput) {
    const gw::sim::GpmCounters& g = c.device->gpm_counters();
    const bool tx = id == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
    double bytes = 0;
    for (unsigned l = all ? 0 : f.scopeId; l < (all ? links : f.scopeId + 1); ++l)
      bytes += tx ? g.nvlink_tx_bytes[l] : g.nvlink_rx_bytes[l];
    f.value.ullVal = static_cast<unsigned long long>(bytes / 1024);  // KiB
  } else if (id == NVML_FI_DEV_NVLINK_GET_STATE) {
    f.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
    f.value.uiVal =
        gw::sim::NvLinkUpAt(c.device->spec(), f.scopeId, c.device->last_step_us()) ? 1 : 0;
  } else {
    const gw::sim::NvLinkErrors e = LinkErrors(c, f.scopeId);
    f.value.ullVal = id == NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY     ? e.replay
                     : id == NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY ? e.recovery
                                                                  : e.crc_flit + e.crc_data;
  }
  return true;
}

// T.Limit fields: degrees below a threshold (threshold - current), on models that report them.
[[maybe_unused]] bool TLimitField(const DeviceCall& c, nvmlFieldValue_t& f) {
  const gw::sim::GpuModel& m = c.device->model();
  unsigned threshold = 0;
  int current = static_cast<int>(c.device->temperature_c());
  switch (f.fieldId) {
    case NVML_FI_DEV_TEMPERATURE_SHUTDOWN_TLIMIT:
      threshold = m.shutdown_c;
      break;
    case NVML_FI_DEV_TEMPERATURE_SLOWDOWN_TLIMIT:
      threshold = m.slowdown_c;
      break;
    case NVML_FI_DEV_TEMPERATURE_MEM_MAX_TLIMIT:
      threshold = m.memory_temperature ? m.mem_max_c : 0;
      current = static_cast<int>(c.device->memory_temperature_c());
      break;
    case NVML_FI_DEV_TEMPERATURE_GPU_MAX_TLIMIT:
      threshold = m.gpu_max_c;
      break;
    default:
      return false;
  }
  if (!m.tlimit || threshold == 0) {
    f.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
    return true;
  }
  f.valueType = NVML_VALUE_TYPE_SIGNED_INT;
  f.value.siVal = static_cast<int>(threshold) - current;
  return true;
}

[[maybe_unused]] nvmlFieldValue_t FieldValue(const DeviceCall& c, nvmlFieldValue_t request) {
  request.timestamp = static_cast<long long>(c.timestamp_us);
  request.latencyUsec = 4;
  request.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
  request.value.ullVal = 0;
  request.nvmlReturn = NVML_SUCCESS;
  if (NvLinkField(c, request) || TLimitField(c, request)) {
    if (request.nvmlReturn != NVML_SUCCESS) request.latencyUsec = 0;
    return request;
  }
  switch (request.fieldId) {
    case NVML_FI_DEV_MEMORY_TEMP:
      if (!c.device->model().memory_temperature) break;
      request.value.uiVal = c.device->memory_temperature_c();
      return request;
    case NVML_FI_DEV_POWER_AVERAGE:
      request.value.uiVal = c.device->average_power_mw();
      return request;
    case NVML_FI_DEV_POWER_INSTANT:
      request.value.uiVal = c.device->latest().power_mw;
      return request;
    default:
      break;
  }
  request.latencyUsec = 0;
  request.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
  return request;
}

// Splits the GPU's `total_pct` among `running` in whole percent that add up to it: a process with
// its own figure (`fixed`, the scenario's sm_util/mem_util) gets it — scaled down when those
// alone exceed the total — and the others share the rest equally.
template <class Fixed>
std::vector<unsigned> Shares(const std::vector<const gw::sim::ProcessSpec*>& running,
                             double total_pct, Fixed fixed) {
  const long total = std::lround(std::clamp(total_pct, 0.0, 100.0));
  double asked = 0;
  std::size_t free_count = 0;
  for (const gw::sim::ProcessSpec* p : running) {
    if (auto f = fixed(*p))
      asked += std::max(0.0, *f);
    else
      ++free_count;
  }
  const double scale = asked > static_cast<double>(total) ? static_cast<double>(total) / asked : 1;
  const double rest = std::max(0.0, static_cast<double>(total) - asked * scale);
  std::vector<unsigned> out(running.size());
  long given = 0;
  for (std::size_t i = 0; i < running.size(); ++i) {
    const auto f = fixed(*running[i]);
    const double share = f ? std::max(0.0, *f) * scale
                           : rest / static_cast<double>(std::max<std::size_t>(1, free_count));
    out[i] = static_cast<unsigned>(std::floor(share));
    given += static_cast<long>(out[i]);
  }
  // Whole percent lost to rounding down go to the first process without a figure of its own
  // (else the first), so the shares add up to the total (or to the fixed figures, when they ask
  // for less and no process shares the rest).
  const long target = free_count > 0 ? total : std::lround(asked * scale);
  std::size_t first = 0;
  while (first < running.size() && free_count > 0 && fixed(*running[first])) ++first;
  if (first < out.size() && given < target) out[first] += static_cast<unsigned>(target - given);
  return out;
}

}  // namespace

extern "C" {

// ---- ECC, retirement, remapping ----------------------------------------------------------------

nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, int* current, int* pending) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (current == nullptr || pending == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!c.device->model().ecc) return NVML_ERROR_NOT_SUPPORTED;
    *current = NVML_FEATURE_ENABLED;
    *pending = NVML_FEATURE_ENABLED;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, int errorType, int counterType,
                                         unsigned long long* eccCounts) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (eccCounts == nullptr || errorType < 0 || errorType > 1 || counterType < 0 ||
        counterType > 1)
      return NVML_ERROR_INVALID_ARGUMENT;
    if (!c.device->model().ecc) return NVML_ERROR_NOT_SUPPORTED;
    const gw::sim::ErrorCounters e = Counters(c);
    const bool corrected = errorType == NVML_MEMORY_ERROR_TYPE_CORRECTED;
    if (counterType == NVML_VOLATILE_ECC)
      *eccCounts = corrected ? e.sbe_volatile : e.dbe_volatile;
    else
      *eccCounts = corrected ? e.sbe_aggregate : e.dbe_aggregate;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device, int cause, unsigned int* pageCount,
                                       unsigned long long* addresses) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (pageCount == nullptr || cause < 0 || cause > 1) return NVML_ERROR_INVALID_ARGUMENT;
    if (!c.device->model().page_retirement) return NVML_ERROR_NOT_SUPPORTED;
    const std::vector<std::uint64_t> pages = gw::sim::RetiredPageAddresses(
        c.device->spec(), c.fleet->scenario().seed,
        cause == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, c.device->last_step_us());
    const auto n = static_cast<unsigned>(pages.size());
    if (n > 0 && (addresses == nullptr || *pageCount < n)) {
      *pageCount = n;
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned i = 0; i < n; ++i) addresses[i] = pages[i];
    *pageCount = n;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device, int* isPending) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (isPending == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!c.device->model().page_retirement) return NVML_ERROR_NOT_SUPPORTED;
    *isPending = Counters(c).retirement_pending ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int* corrRows,
                                       unsigned int* uncRows, unsigned int* isPending,
                                       unsigned int* failureOccurred) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (corrRows == nullptr || uncRows == nullptr || isPending == nullptr ||
        failureOccurred == nullptr)
      return NVML_ERROR_INVALID_ARGUMENT;
    if (!c.device->model().row_remapping) return NVML_ERROR_NOT_SUPPORTED;
    const gw::sim::ErrorCounters e = Counters(c);
    *corrRows = e.corrected_rows;
    *uncRows = e.uncorrected_rows;
    *isPending = e.remap_pending ? 1 : 0;
    *failureOccurred = e.remap_failure ? 1 : 0;
    return NVML_SUCCESS;
  });
}

// ---- PCIe
// ----------------------------------------------------------------------------------------

nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t device, unsigned int* value) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (value == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *value = Counters(c).pcie_replays;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device, int counter, unsigned int* value) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (value == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const gw::sim::Activity& a = c.device->activity();
    if (counter == NVML_PCIE_UTIL_TX_BYTES)
      *value = static_cast<unsigned>(a.pcie_tx_kbps);
    else if (counter == NVML_PCIE_UTIL_RX_BYTES)
      *value = static_cast<unsigned>(a.pcie_rx_kbps);
    else
      return NVML_ERROR_INVALID_ARGUMENT;
    return NVML_SUCCESS;
  });
}

// ---- NVLink
// --------------------------------------------------------------------------------------

// NOT_SUPPORTED on boards without NVLink; INVALID_ARGUMENT for a link the board lacks.
nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, int* isActive) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (isActive == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (NvLinks(c) == 0) return NVML_ERROR_NOT_SUPPORTED;
    if (link >= NvLinks(c)) return NVML_ERROR_INVALID_ARGUMENT;
    *isActive = gw::sim::NvLinkUpAt(c.device->spec(), link, c.device->last_step_us())
                    ? NVML_FEATURE_ENABLED
                    : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t device, unsigned int link, int counter,
                                             unsigned long long* counterValue) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (counterValue == nullptr || counter < NVML_NVLINK_ERROR_DL_REPLAY ||
        counter > NVML_NVLINK_ERROR_DL_ECC_DATA)
      return NVML_ERROR_INVALID_ARGUMENT;
    if (NvLinks(c) == 0) return NVML_ERROR_NOT_SUPPORTED;
    if (link >= NvLinks(c)) return NVML_ERROR_INVALID_ARGUMENT;
    const gw::sim::NvLinkErrors e = LinkErrors(c, link);
    switch (counter) {
      case NVML_NVLINK_ERROR_DL_REPLAY:
        *counterValue = e.replay;
        break;
      case NVML_NVLINK_ERROR_DL_RECOVERY:
        *counterValue = e.recovery;
        break;
      case NVML_NVLINK_ERROR_DL_CRC_FLIT:
        *counterValue = e.crc_flit;
        break;
      case NVML_NVLINK_ERROR_DL_CRC_DATA:
        *counterValue = e.crc_data;
        break;
      default:
        *counterValue = e.ecc_data;
        break;
    }
    return NVML_SUCCESS;
  });
}

// ---- processes
// -----------------------------------------------------------------------------------

#ifndef GW_SIM_LEGACY
// With `driver: {process_info_v3_stride: 32}` this writes 32-byte entries while *infoCount still
// counts 24-byte ones (docs/nvml-notes.md, trap 1): callers must over-allocate or use _v2.
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_v2_t* infos) {
  return RunningProcesses(device, infoCount, infos, Layout::kV2DriverStride, __func__);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_v2_t* infos) {
  return RunningProcesses(device, infoCount, infos, Layout::kV2, __func__);
}
#endif

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int* infoCount,
                                                  nvmlProcessInfo_v1_t* infos) {
  return RunningProcesses(device, infoCount, infos, Layout::kV1, __func__);
}

// One sample per running process (the latest step), if newer than lastSeenTimeStamp. SM and
// memory shares are the scenario's sm_util/mem_util, else an equal split of what is left of the
// GPU's; they add up to the GPU's utilization (Shares).
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                             nvmlProcessUtilizationSample_t* utilization,
                                             unsigned int* processSamplesCount,
                                             unsigned long long lastSeenTimeStamp) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (processSamplesCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (c.device->mig_enabled()) return NVML_ERROR_NOT_SUPPORTED;  // as GetUtilizationRates
    const std::vector<const gw::sim::ProcessSpec*> running = c.device->RunningProcesses();
    const auto n = static_cast<unsigned>(running.size());
    if (n == 0 || c.timestamp_us <= lastSeenTimeStamp) {
      *processSamplesCount = 0;
      return NVML_ERROR_NOT_FOUND;
    }
    if (utilization == nullptr || *processSamplesCount < n) {
      *processSamplesCount = n;
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    const gw::sim::StepSample& s = c.device->latest();
    const std::vector<unsigned> sm =
        Shares(running, s.util_pct, [](const gw::sim::ProcessSpec& p) { return p.sm_util_pct; });
    const std::vector<unsigned> mem = Shares(
        running, s.mem_util_pct, [](const gw::sim::ProcessSpec& p) { return p.mem_util_pct; });
    for (unsigned i = 0; i < n; ++i) {
      nvmlProcessUtilizationSample_t& out = utilization[i];
      out.pid = running[i]->pid;
      out.timeStamp = c.timestamp_us;
      out.smUtil = sm[i];
      out.memUtil = mem[i];
      out.encUtil = s.enc_util_pct / n;
      out.decUtil = s.dec_util_pct / n;
    }
    *processSamplesCount = n;
    return NVML_SUCCESS;
  });
}

// ---- field values
// ----------------------------------------------------------------------------------

#ifndef GW_SIM_LEGACY
// Supported: 82 MEMORY_TEMP (HBM boards), 185 POWER_AVERAGE, 186 POWER_INSTANT (mW). Any other
// field gets nvmlReturn = NOT_SUPPORTED in its own entry; the call itself succeeds.
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount,
                                      nvmlFieldValue_t* values) {
  return WithDevice(device, __func__, [&](DeviceCall& c) -> nvmlReturn_t {
    if (values == nullptr || valuesCount < 0) return NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < valuesCount; ++i) values[i] = FieldValue(c, values[i]);
    return NVML_SUCCESS;
  });
}
#endif

}  // extern "C"
