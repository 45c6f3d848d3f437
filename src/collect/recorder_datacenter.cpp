// Recording of the per-MIG-instance (gpu_mig_*) and per-NVLink-link (gpu_nvlink_link_*) series:
// the same families, names and labels as collect/exposition.cpp writes on /metrics.
#include <algorithm>
#include <charconv>
#include <string>

#include "collect/recorder.h"
#include "collect/recorder_internal.h"

namespace gw::collect {

namespace {

std::string Number(unsigned v) {
  char buf[16];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, end);
}

// Appends `v` (or a stale marker once it turns absent) to the series in `slot`, resolving its
// reference from make_labels() the first time.
template <class MakeLabels>
void Put(tsdb::Appender* appender, Recorder::SeriesSlot* slot, MakeLabels&& make_labels, int64_t t,
         double v, RecorderStats* local) {
  const bool present = !IsAbsent(v);
  if (!present && !slot->had_value) return;
  if (!slot->known) {
    tsdb::Labels labels = make_labels();
    std::sort(labels.begin(), labels.end());
    auto ref = appender->GetRef(labels);
    if (!ref.ok()) {
      ++local->append_errors;
      return;
    }
    slot->ref = *ref;
    slot->known = true;
  }
  if (!appender->Append(slot->ref, t, present ? v : tsdb::StaleNaN()).ok()) {
    ++local->append_errors;
    return;
  }
  ++(present ? local->samples_appended : local->stale_markers);
  slot->had_value = present;
}

// Series index within a MIG instance's series (recorder.h, MigSeries).
enum : size_t { kMigInfo, kMigSlice, kMigTotal, kMigUsed, kMigFree, kMigProcs, kMigGpmFirst };
constexpr size_t kMigSeriesCount = kMigGpmFirst + kGpmCount;

// The gpu_mig_* family of GPM signal g, or nullptr if the signal is per GPU only.
const Family* MigFamilyOfGpm(size_t g) {
  const FamilyId gpu_family = kSlots[static_cast<size_t>(kGpmSlots[g])].family;
  for (const auto& [from, to] : kMigGpmFamilies)
    if (from == gpu_family) return &DynamicFamily(to);
  return nullptr;
}

tsdb::Labels MigLabels(std::string_view name, const GpuIdentity& id, const MigInstanceSnapshot& m) {
  tsdb::Labels labels = GpuLabels(name, id);
  labels.push_back({"mig_instance", Number(m.gpu_instance_id)});
  labels.push_back({"mig_profile", m.profile});
  return labels;
}

}  // namespace

void Recorder::RecordMig(const GpuSnapshot& gpu, size_t position, int64_t t, RecorderStats* local) {
  std::vector<MigSeries>& known = mig_[position];
  if (gpu.mig.empty() && known.empty()) return;
  for (MigSeries& s : known) s.seen = false;
  for (const MigInstanceSnapshot& m : gpu.mig) {
    MigSeries* entry = nullptr;
    for (MigSeries& s : known)
      if (s.uuid == m.uuid) entry = &s;
    if (entry == nullptr) {  // a new instance (first sight or a re-partition)
      entry = &known.emplace_back();
      entry->uuid = m.uuid;
      entry->series.resize(kMigSeriesCount);
    }
    entry->seen = true;
    auto put = [&](size_t i, std::string_view family, double v, auto&& extra) {
      Put(
          appender_, &entry->series[i],
          [&] {
            tsdb::Labels labels = MigLabels(family, gpu.identity, m);
            extra(&labels);
            return labels;
          },
          t, v, local);
    };
    auto none = [](tsdb::Labels*) {};
    put(kMigInfo, DynamicFamily(Dynamic::kMigInfo).name, 1, [&](tsdb::Labels* l) {
      l->push_back({"mig_uuid", m.uuid});
      l->push_back({"compute_instance", Number(m.compute_instance_id)});
    });
    put(kMigSlice, DynamicFamily(Dynamic::kMigSliceRatio).name, m.slice_ratio, none);
    put(kMigTotal, DynamicFamily(Dynamic::kMigMemoryTotal).name, m.memory_total_bytes, none);
    put(kMigUsed, DynamicFamily(Dynamic::kMigMemoryUsed).name, m.memory_used_bytes, none);
    put(kMigFree, DynamicFamily(Dynamic::kMigMemoryFree).name, m.memory_free_bytes, none);
    put(kMigProcs, DynamicFamily(Dynamic::kMigProcesses).name,
        static_cast<double>(m.processes.size()), none);
    for (size_t g = 0; g < kGpmCount; ++g) {
      const Family* family = MigFamilyOfGpm(g);
      if (family == nullptr) continue;
      put(kMigGpmFirst + g, family->name, m.gpm[g], [&](tsdb::Labels* l) {
        AddSlotLabels(kSlots[static_cast<size_t>(kGpmSlots[g])].labels, l);
      });
    }
  }
  // Instances gone since the last snapshot (a re-partition, a lost instance): end their series
  // with stale markers at once, then forget them.
  for (auto it = known.begin(); it != known.end();) {
    if (it->seen) {
      ++it;
      continue;
    }
    for (SeriesSlot& s : it->series)
      if (s.known && s.had_value && appender_->Append(s.ref, t, tsdb::StaleNaN()).ok())
        ++local->stale_markers;
    it = known.erase(it);
  }
}

void Recorder::RecordNvLinks(const GpuSnapshot& gpu, size_t position, int64_t t,
                             RecorderStats* local) {
  auto& links = links_[position];
  if (gpu.nvlinks.empty()) {  // no NVLink, or the GPU is lost: end what was recorded
    for (auto& link : links)
      for (SeriesSlot& s : link)
        if (s.known && s.had_value && appender_->Append(s.ref, t, tsdb::StaleNaN()).ok())
          ++local->stale_markers;
    links.clear();
    return;
  }
  size_t needed = 0;
  for (const NvLinkSnapshot& l : gpu.nvlinks) needed = std::max<size_t>(needed, l.link + 1);
  if (links.size() < needed) links.resize(needed);
  struct Kind {
    Dynamic family;
    const char* type;  // the `type` label, or nullptr
    double NvLinkSnapshot::*value;
  };
  static constexpr Kind kKinds[kLinkSeries] = {
      {Dynamic::kNvlinkLinkUp, nullptr, &NvLinkSnapshot::up},
      {Dynamic::kNvlinkLinkErrors, "replay", &NvLinkSnapshot::replay_errors},
      {Dynamic::kNvlinkLinkErrors, "recovery", &NvLinkSnapshot::recovery_errors},
      {Dynamic::kNvlinkLinkErrors, "crc", &NvLinkSnapshot::crc_errors},
      {Dynamic::kNvlinkLinkTxRate, nullptr, &NvLinkSnapshot::tx_bytes_per_second},
      {Dynamic::kNvlinkLinkRxRate, nullptr, &NvLinkSnapshot::rx_bytes_per_second},
  };
  const size_t kinds = nvlink_link_metrics_ ? kLinkSeries : 1;  // gpu_nvlink_link_up only
  for (const NvLinkSnapshot& l : gpu.nvlinks)
    for (size_t k = 0; k < kinds; ++k)
      Put(
          appender_, &links[l.link][k],
          [&] {
            tsdb::Labels labels = GpuLabels(DynamicFamily(kKinds[k].family).name, gpu.identity);
            labels.push_back({"link", Number(l.link)});
            if (kKinds[k].type != nullptr) labels.push_back({"type", kKinds[k].type});
            return labels;
          },
          t, l.*(kKinds[k].value), local);
}

}  // namespace gw::collect
