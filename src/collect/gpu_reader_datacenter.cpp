// GpuReader's datacenter reads (gpu_reader.h): T.Limit temperature margins, GPM profiling counters
// per GPU and per MIG instance, the MIG layout, and NVLink. All on the collector's NVML worker,
// each NVML call through Read() (self-metrics, watchdog). Units and rules: docs/metrics.md
// ("Profiling", "MIG", "NVLink", "Temperature limits").
#include <algorithm>
#include <cstring>
#include <numeric>

#include "collect/exposition.h"
#include "collect/gpu_reader.h"

namespace gw::collect {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

constexpr unsigned kGpmMetricIds[kGpmCount] = {
#define GW_GPM_ID(id, metric) metric,
    GW_GPM_SIGNALS(GW_GPM_ID)
#undef GW_GPM_ID
};

// NVML's GPM units to ours: percent to a ratio, MiB/s to bytes per second.
double GpmToBase(size_t signal, double value) {
  if (IsAbsent(value)) return kAbsent;
  return signal >= static_cast<size_t>(Gpm::kPcieTxPerSecond) ? value * kMiB : value / 100.0;
}

bool IsPcie(size_t signal) {
  return signal == static_cast<size_t>(Gpm::kPcieTxPerSecond) ||
         signal == static_cast<size_t>(Gpm::kPcieRxPerSecond);
}

// The NVLink field-value request: the totals first, then four fields per link.
enum NvLinkField : size_t {
  kFieldLinkCount,
  kFieldReplay,
  kFieldRecovery,
  kFieldCrcFlit,
  kFieldCrcData,
  kFieldEccData,
  kFieldTx,
  kFieldRx,
  kNvLinkTotals
};
constexpr unsigned kPerLinkFields[] = {
    NVML_FI_DEV_NVLINK_GET_STATE, NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY,
    NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY, NVML_FI_DEV_NVLINK_ERROR_DL_CRC};
constexpr size_t kFieldsPerLink = std::size(kPerLinkFields);
constexpr unsigned kAllLinks = 0xFFFFFFFFu;  // scopeId of the throughput fields: every link

double FieldOrAbsent(const nvmlFieldValue_t& f, double scale = 1) {
  return f.nvmlReturn == NVML_SUCCESS ? nvml::FieldAsDouble(f) * scale : kAbsent;
}

constexpr unsigned kMaxMigSlots = 16;  // NVML's maximum MIG device count is 7 on every GPU so far

}  // namespace

std::string_view MigProfileFromName(std::string_view name) {
  size_t at = name.rfind("MIG ");
  if (at != std::string_view::npos) {
    name.remove_prefix(at + 4);
  } else if (size_t space = name.rfind(' '); space != std::string_view::npos) {
    name.remove_prefix(space + 1);
  }
  while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
  while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
  return name;
}

unsigned MigComputeSlices(std::string_view profile) {
  unsigned n = 0;
  size_t i = 0;
  while (i < profile.size() && profile[i] >= '0' && profile[i] <= '9' && n < 1000)
    n = n * 10 + static_cast<unsigned>(profile[i++] - '0');
  if (i == 0 || i >= profile.size() || (profile[i] != 'g' && profile[i] != 'c')) return 0;
  return n;
}

// ---- temperature limits (fast) -------------------------------------------------------------

void GpuReader::ReadTemperatureLimits() {
  static constexpr std::pair<unsigned, Slot> kLimits[] = {
      {NVML_FI_DEV_TEMPERATURE_SHUTDOWN_TLIMIT, Slot::kMarginShutdown},
      {NVML_FI_DEV_TEMPERATURE_SLOWDOWN_TLIMIT, Slot::kMarginSlowdown},
      {NVML_FI_DEV_TEMPERATURE_MEM_MAX_TLIMIT, Slot::kMarginMemoryMax},
      {NVML_FI_DEV_TEMPERATURE_GPU_MAX_TLIMIT, Slot::kMarginGpuMax},
  };
  nvmlFieldValue_t fields[std::size(kLimits)] = {};
  for (size_t i = 0; i < std::size(kLimits); ++i) fields[i].fieldId = kLimits[i].first;
  auto r = Read(Call::kTemperatureLimits,
                [&] { return device_.FieldValues(fields, std::size(fields)); });
  for (size_t i = 0; i < std::size(kLimits); ++i)
    Set(kLimits[i].second, r.ok() ? FieldOrAbsent(fields[i]) : kAbsent);
}

// ---- GPM (fast) ----------------------------------------------------------------------------

void GpuReader::BuildGpmRequest() {
  gpm_id_count_ = 0;
  for (unsigned id : kGpmMetricIds) gpm_ids_[gpm_id_count_++] = id;
  const unsigned links = std::min<unsigned>(nvlink_links_, NVML_GPM_NVLINK_PER_LINK_MAX);
  for (unsigned n = 0; n < links; ++n) {
    gpm_ids_[gpm_id_count_++] = NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC + 2 * n;
    gpm_ids_[gpm_id_count_++] = NVML_GPM_METRIC_NVLINK_L0_TX_PER_SEC + 2 * n;
  }
}

void GpuReader::ClearGpm() {
  for (size_t g = 0; g < kGpmCount; ++g)
    if (!IsPcie(g)) Clear(kGpmSlots[g]);
  if (pcie_from_gpm_) {  // from now on the slow cycle's nvmlDeviceGetPcieThroughput owns them
    Clear(Slot::kPcieTx);
    Clear(Slot::kPcieRx);
    pcie_from_gpm_ = false;
  }
  for (NvLinkSnapshot& l : snap_.nvlinks) l.tx_bytes_per_second = l.rx_bytes_per_second = kAbsent;
}

void GpuReader::ReadGpm(double now_s) {
  if (!snap_.gpm_supported || !gpm_.Due(now_s)) return;  // too soon: keep the last values
  auto sample = Read(Call::kGpmSample, [&] { return gpm_.Sample(now_s); });
  if (!sample.ok()) {
    ClearGpm();
    return;
  }
  if (!sample.value()) return;  // the first sample: nothing to compare it with yet
  auto got = Read(Call::kGpmMetrics,
                  [&] { return gpm_.Metrics(gpm_ids_.data(), gpm_id_count_, gpm_values_.data()); });
  if (!got.ok()) {
    ClearGpm();
    return;
  }
  for (size_t g = 0; g < kGpmCount; ++g)
    if (!IsPcie(g)) Set(kGpmSlots[g], GpmToBase(g, gpm_values_[g]));
  const double tx = GpmToBase(static_cast<size_t>(Gpm::kPcieTxPerSecond),
                              gpm_values_[static_cast<size_t>(Gpm::kPcieTxPerSecond)]);
  const double rx = GpmToBase(static_cast<size_t>(Gpm::kPcieRxPerSecond),
                              gpm_values_[static_cast<size_t>(Gpm::kPcieRxPerSecond)]);
  const bool pcie = !IsAbsent(tx) && !IsAbsent(rx);
  if (pcie || pcie_from_gpm_) {
    Set(Slot::kPcieTx, tx);
    Set(Slot::kPcieRx, rx);
  }
  pcie_from_gpm_ = pcie;
  const size_t links = (gpm_id_count_ - kGpmCount) / 2;
  for (size_t n = 0; n < links && n < snap_.nvlinks.size(); ++n) {
    snap_.nvlinks[n].rx_bytes_per_second = GpmToBase(kGpmCount, gpm_values_[kGpmCount + 2 * n]);
    snap_.nvlinks[n].tx_bytes_per_second = GpmToBase(kGpmCount, gpm_values_[kGpmCount + 2 * n + 1]);
  }
}

// ---- MIG -----------------------------------------------------------------------------------

void GpuReader::ClearMig() {
  if (!mig_.empty()) gpm_.Restart();  // the layout went away: see ReadMigLayout
  mig_.clear();                       // frees the instances' GPM samples
  snap_.mig.clear();
  Clear(Slot::kMigInstances);
}

void GpuReader::RescanMig() {
  if (snap_.lost) return;
  ReadMigLayout();
  ReadMigProcesses();
}

void GpuReader::ReadMigFast(double now_s) {
  for (size_t i = 0; i < mig_.size(); ++i) {
    MigInstanceSnapshot& m = snap_.mig[i];
    MigState& st = mig_[i];
    auto mem = Read(Call::kMigMemory, [&] { return st.device.Memory(); });
    m.memory_total_bytes = mem.ok() ? static_cast<double>(mem.value().total_bytes) : kAbsent;
    m.memory_used_bytes = mem.ok() ? static_cast<double>(mem.value().used_bytes) : kAbsent;
    m.memory_free_bytes = mem.ok() ? static_cast<double>(mem.value().free_bytes) : kAbsent;
    if (snap_.lost) return;
    if (!snap_.gpm_supported || !st.gpm.Due(now_s)) continue;
    auto sample = Read(Call::kGpmMigSample, [&] { return st.gpm.Sample(now_s); });
    if (!sample.ok()) m.gpm.fill(kAbsent);
    if (!sample.ok() || !sample.value()) continue;
    auto got = Read(Call::kGpmMetrics,
                    [&] { return st.gpm.Metrics(gpm_ids_.data(), kGpmCount, gpm_values_.data()); });
    for (size_t g = 0; g < kGpmCount; ++g)
      m.gpm[g] = got.ok() ? GpmToBase(g, gpm_values_[g]) : kAbsent;
  }
}

void GpuReader::ReadMigLayout() {
  auto mode = Read(Call::kMigMode, [&] { return device_.MigMode(); });
  if (!mode.ok()) {
    Clear(Slot::kMigEnabledCurrent);
    Clear(Slot::kMigEnabledPending);
    ClearMig();
    return;
  }
  Set(Slot::kMigEnabledCurrent, mode.value().current ? 1 : 0);
  Set(Slot::kMigEnabledPending, mode.value().pending ? 1 : 0);
  if (!mode.value().current) {
    ClearMig();
    return;
  }
  if (mig_max_devices_ == 0) {
    auto max = Read(Call::kMigDevices, [&] { return device_.MaxMigDeviceCount(); });
    if (max.ok()) mig_max_devices_ = max.value();
  }

  // Which MIG devices exist now: a handle and a UUID per occupied slot, without allocating.
  std::array<nvml::Device, kMaxMigSlots> found;
  std::array<std::array<char, NVML_DEVICE_UUID_V2_BUFFER_SIZE>, kMaxMigSlots> uuids;
  unsigned n = 0;
  const unsigned slots = std::min(mig_max_devices_ > 0 ? mig_max_devices_ : 7u, kMaxMigSlots);
  for (unsigned slot = 0; slot < slots; ++slot) {
    auto handle = Read(Call::kMigDevices, [&] { return device_.MigDeviceByIndex(slot); });
    if (!handle.ok()) continue;  // NOT_FOUND: nothing in this slot
    auto len = Read(Call::kMigDevices,
                    [&] { return handle.value().UuidInto(uuids[n].data(), uuids[n].size()); });
    if (!len.ok()) continue;
    found[n++] = handle.value();
  }
  if (snap_.lost) return;
  auto known = [&](const char* uuid) -> size_t {
    for (size_t j = 0; j < snap_.mig.size(); ++j)
      if (snap_.mig[j].uuid == uuid) return j;
    return snap_.mig.size();
  };
  bool same = n == snap_.mig.size();
  for (unsigned i = 0; i < n && same; ++i) same = known(uuids[i].data()) < snap_.mig.size();
  if (same) {  // the steady state: the same instances (handles may move between slots)
    for (unsigned i = 0; i < n; ++i) mig_[known(uuids[i].data())].device = found[i];
    Set(Slot::kMigInstances, n);
    return;
  }

  // The layout changed: keep the instances that remain (and their GPM buffers), read the new
  // ones, and let the vanished ones go (their samplers free their samples). Samples taken before
  // the change, the whole GPU's included, do not compare with those after it.
  gpm_.Restart();
  std::vector<MigInstanceSnapshot> next;
  std::vector<MigState> next_state;
  next.reserve(n);
  next_state.reserve(n);
  for (unsigned i = 0; i < n; ++i) {
    const size_t j = known(uuids[i].data());
    if (j < snap_.mig.size()) {
      next.push_back(std::move(snap_.mig[j]));
      next_state.push_back(std::move(mig_[j]));
      next_state.back().device = found[i];
      next_state.back().gpm.Restart();  // its last sample is of the old layout
      next.back().gpm.fill(kAbsent);
      continue;
    }
    const nvml::Device& d = found[i];
    auto gi = Read(Call::kMigDevices, [&] { return d.GpuInstanceId(); });
    if (!gi.ok()) continue;  // without its GPU instance id it cannot be named
    auto ci = Read(Call::kMigDevices, [&] { return d.ComputeInstanceId(); });
    auto name = Read(Call::kMigDevices, [&] { return d.Name(); });
    MigInstanceSnapshot m;
    m.gpu_instance_id = gi.value();
    m.compute_instance_id = ci.value_or(0);
    m.uuid = uuids[i].data();
    m.profile = std::string(MigProfileFromName(name.value_or("")));
    const unsigned slices = MigComputeSlices(m.profile);
    // The instance's share of the GPU for quotas and cost (docs/metrics.md, "MIG").
    m.slice_ratio = slices > 0 && mig_max_devices_ > 0
                        ? static_cast<double>(slices) / static_cast<double>(mig_max_devices_)
                        : kAbsent;
    m.label_text = snap_.identity.label_text + ",mig_instance=\"" +
                   std::to_string(m.gpu_instance_id) + "\",mig_profile=\"";
    AppendEscapedLabelValue(&m.label_text, m.profile);
    m.label_text += "\"";
    next.push_back(std::move(m));
    next_state.push_back(
        {d, snap_.gpm_supported ? nvml::GpmSampler(device_, gi.value()) : nvml::GpmSampler()});
  }
  // In GPU-instance-id order (then compute instance), both lists alike.
  std::vector<size_t> order(next.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::pair(next[a].gpu_instance_id, next[a].compute_instance_id) <
           std::pair(next[b].gpu_instance_id, next[b].compute_instance_id);
  });
  snap_.mig.clear();
  mig_.clear();
  for (size_t k : order) {
    snap_.mig.push_back(std::move(next[k]));
    mig_.push_back(std::move(next_state[k]));
  }
  Set(Slot::kMigInstances, static_cast<double>(snap_.mig.size()));
}

void GpuReader::ReadMigProcesses() {
  for (size_t i = 0; i < mig_.size(); ++i) {
    MigInstanceSnapshot& m = snap_.mig[i];
    auto count = Read(Call::kMigProcesses,
                      [&] { return mig_[i].device.ComputeProcesses(&mig_process_scratch_); });
    if (!count.ok()) {
      m.processes.clear();
      continue;
    }
    m.processes.resize(mig_process_scratch_.size());
    for (size_t k = 0; k < mig_process_scratch_.size(); ++k)
      m.processes[k] = ToProcessSample(mig_process_scratch_[k], m.gpu_instance_id);
  }
}

// ---- NVLink (slow) -------------------------------------------------------------------------

void GpuReader::ClearNvLink() {
  for (Slot s :
       {Slot::kNvlinkTxBytes, Slot::kNvlinkRxBytes, Slot::kNvlinkLinks, Slot::kNvlinkLinksDown,
        Slot::kNvlinkReplayErrors, Slot::kNvlinkRecoveryErrors, Slot::kNvlinkCrcFlitErrors,
        Slot::kNvlinkCrcDataErrors, Slot::kNvlinkEccDataErrors})
    Clear(s);
  snap_.nvlinks.clear();
}

void GpuReader::SetNvLinkTotals() {
  Set(Slot::kNvlinkLinks, static_cast<double>(snap_.nvlinks.size()));
  double down = 0;
  bool known = false;
  for (const NvLinkSnapshot& l : snap_.nvlinks) {
    if (IsAbsent(l.up)) continue;
    known = true;
    down += l.up == 0 ? 1 : 0;
  }
  Set(Slot::kNvlinkLinksDown, known ? down : kAbsent);
}

void GpuReader::ReadNvLink() {
  if (nvlink_per_link_calls_) {
    ReadNvLinkPerLink();
    return;
  }
  // At most twice: the first request of a GPU learns the link count, the second reads its links.
  for (int attempt = 0; attempt < 2; ++attempt) {
    const size_t want = kNvLinkTotals + kFieldsPerLink * nvlink_links_;
    if (nvlink_fields_.size() != want) {
      nvlink_fields_.assign(want, nvmlFieldValue_t{});
      static constexpr unsigned kTotals[kNvLinkTotals] = {
          NVML_FI_DEV_NVLINK_LINK_COUNT,
          NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL,
          NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL,
          NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL,
          NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL,
          NVML_FI_DEV_NVLINK_ECC_DATA_ERROR_COUNT_TOTAL,
          NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX,
          NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX};
      for (size_t i = 0; i < kNvLinkTotals; ++i) nvlink_fields_[i].fieldId = kTotals[i];
      nvlink_fields_[kFieldTx].scopeId = kAllLinks;
      nvlink_fields_[kFieldRx].scopeId = kAllLinks;
      for (unsigned l = 0; l < nvlink_links_; ++l)
        for (size_t k = 0; k < kFieldsPerLink; ++k) {
          nvmlFieldValue_t& f = nvlink_fields_[kNvLinkTotals + kFieldsPerLink * l + k];
          f.fieldId = kPerLinkFields[k];
          f.scopeId = l;
        }
    }
    auto r = Read(Call::kNvLinkFields, [&] {
      return device_.FieldValues(nvlink_fields_.data(), static_cast<unsigned>(want));
    });
    if (!r.ok()) {
      if (r.status() == NVML_ERROR_FUNCTION_NOT_FOUND) {
        nvlink_per_link_calls_ = true;  // a library without field values
        ReadNvLinkPerLink();
        return;
      }
      ClearNvLink();
      return;
    }
    const double count = FieldOrAbsent(nvlink_fields_[kFieldLinkCount]);
    const unsigned links =
        IsAbsent(count) || count <= 0
            ? 0
            : std::min<unsigned>(static_cast<unsigned>(count), NVML_NVLINK_MAX_LINKS);
    if (links != nvlink_links_) {
      nvlink_links_ = links;
      snap_.nvlinks.assign(links, NvLinkSnapshot{});
      for (unsigned l = 0; l < links; ++l) snap_.nvlinks[l].link = l;
      if (snap_.gpm_supported) BuildGpmRequest();
      if (links > 0) continue;  // ask again, now with the per-link fields
    }
    if (links == 0) {
      ClearNvLink();
      return;
    }
    Set(Slot::kNvlinkReplayErrors, FieldOrAbsent(nvlink_fields_[kFieldReplay]));
    Set(Slot::kNvlinkRecoveryErrors, FieldOrAbsent(nvlink_fields_[kFieldRecovery]));
    Set(Slot::kNvlinkCrcFlitErrors, FieldOrAbsent(nvlink_fields_[kFieldCrcFlit]));
    Set(Slot::kNvlinkCrcDataErrors, FieldOrAbsent(nvlink_fields_[kFieldCrcData]));
    Set(Slot::kNvlinkEccDataErrors, FieldOrAbsent(nvlink_fields_[kFieldEccData]));
    Set(Slot::kNvlinkTxBytes, FieldOrAbsent(nvlink_fields_[kFieldTx], 1024));  // KiB
    Set(Slot::kNvlinkRxBytes, FieldOrAbsent(nvlink_fields_[kFieldRx], 1024));
    for (unsigned l = 0; l < links; ++l) {
      const nvmlFieldValue_t* f = &nvlink_fields_[kNvLinkTotals + kFieldsPerLink * l];
      NvLinkSnapshot& out = snap_.nvlinks[l];
      const double state = FieldOrAbsent(f[0]);
      out.up = IsAbsent(state) ? kAbsent : (state != 0 ? 1 : 0);
      out.replay_errors = FieldOrAbsent(f[1]);
      out.recovery_errors = FieldOrAbsent(f[2]);
      out.crc_errors = FieldOrAbsent(f[3]);
    }
    SetNvLinkTotals();
    return;
  }
}

// Without nvmlDeviceGetFieldValues: one call per link for its state and one per counter.
// Throughput and the ECC-data total are field values only: absent here.
void GpuReader::ReadNvLinkPerLink() {
  if (nvlink_links_ == 0) {  // count the links once: the first one that answers no ends them
    unsigned links = 0;
    for (; links < NVML_NVLINK_MAX_LINKS; ++links) {
      auto active = Read(Call::kNvLinkLinks, [&] { return device_.NvLinkActive(links); });
      if (!active.ok()) break;
    }
    if (links == 0) {
      ClearNvLink();
      return;
    }
    nvlink_links_ = links;
    snap_.nvlinks.assign(links, NvLinkSnapshot{});
    for (unsigned l = 0; l < links; ++l) snap_.nvlinks[l].link = l;
    if (snap_.gpm_supported) BuildGpmRequest();
  }
  double replay = 0, recovery = 0, crc_flit = 0, crc_data = 0;
  bool all = true;
  auto counter = [&](unsigned link, int which) {
    auto r = Read(Call::kNvLinkLinks, [&] { return device_.NvLinkErrorCounter(link, which); });
    if (!r.ok()) all = false;
    return r.ok() ? static_cast<double>(r.value()) : kAbsent;
  };
  for (unsigned l = 0; l < nvlink_links_; ++l) {
    NvLinkSnapshot& out = snap_.nvlinks[l];
    auto active = Read(Call::kNvLinkLinks, [&] { return device_.NvLinkActive(l); });
    out.up = active.ok() ? (active.value() ? 1 : 0) : kAbsent;
    out.replay_errors = counter(l, NVML_NVLINK_ERROR_DL_REPLAY);
    out.recovery_errors = counter(l, NVML_NVLINK_ERROR_DL_RECOVERY);
    out.crc_errors = counter(l, NVML_NVLINK_ERROR_DL_CRC_FLIT);
    const double data = counter(l, NVML_NVLINK_ERROR_DL_CRC_DATA);
    replay += out.replay_errors;
    recovery += out.recovery_errors;
    crc_flit += out.crc_errors;
    crc_data += data;
  }
  if (snap_.lost) return;
  Set(Slot::kNvlinkReplayErrors, all ? replay : kAbsent);
  Set(Slot::kNvlinkRecoveryErrors, all ? recovery : kAbsent);
  Set(Slot::kNvlinkCrcFlitErrors, all ? crc_flit : kAbsent);
  Set(Slot::kNvlinkCrcDataErrors, all ? crc_data : kAbsent);
  SetNvLinkTotals();
}

}  // namespace gw::collect
