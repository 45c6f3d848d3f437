#include "collect/recorder.h"

#include "collect/recorder_internal.h"

#include <algorithm>
#include <cmath>

namespace gw::collect {

void AddSlotLabels(std::string_view text, tsdb::Labels* out) {
  while (!text.empty()) {
    size_t eq = text.find('=');
    if (eq == std::string_view::npos) return;
    std::string name(text.substr(0, eq));
    size_t close = text.find('"', eq + 2);
    if (close == std::string_view::npos) return;
    out->push_back({name, std::string(text.substr(eq + 2, close - eq - 2))});
    text.remove_prefix(close + 1);
    if (!text.empty() && text[0] == ',') text.remove_prefix(1);
  }
}

tsdb::Labels GpuLabels(std::string_view name, const GpuIdentity& id) {
  return {{"__name__", std::string(name)}, {"gpu", std::to_string(id.index)}, {"uuid", id.uuid}};
}

namespace {

int64_t ToMs(double unix_seconds) {
  return static_cast<int64_t>(std::llround(unix_seconds * 1e3));
}

}  // namespace

Recorder::Recorder(tsdb::Appender* appender, Logger* log) : appender_(appender), log_(log) {}

Recorder::~Recorder() {
  Stop();
}

void Recorder::Start() {
  thread_ = std::thread([this] { Run(); });
}

void Recorder::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Recorder::Offer(std::shared_ptr<const Snapshot> snapshot) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (pending_) ++stats_.snapshots_skipped;  // the store is behind: keep only the newest
    pending_ = std::move(snapshot);
  }
  cv_.notify_one();
}

RecorderStats Recorder::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void Recorder::Run() {
  while (true) {
    std::shared_ptr<const Snapshot> next;
    bool stop;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || pending_ != nullptr; });
      next = std::move(pending_);
      pending_.reset();
      stop = stopping_;
    }
    if (next) RecordNow(*next);
    if (stop) return;
  }
}

Recorder::SeriesSlot* Recorder::Slot(const GpuSnapshot& gpu, size_t position, size_t slot) {
  if (slots_.size() <= position) {
    slots_.resize(position + 1, std::vector<SeriesSlot>(kSlotCount));
    uuids_.resize(position + 1);
    info_.resize(position + 1);
    xids_.resize(position + 1);
    mig_.resize(position + 1);
    links_.resize(position + 1);
  }
  if (uuids_[position] != gpu.identity.uuid) {  // a different GPU at this position: forget refs
    uuids_[position] = gpu.identity.uuid;
    slots_[position].assign(kSlotCount, SeriesSlot{});
    info_[position] = SeriesSlot{};
    xids_[position].clear();
    mig_[position].clear();
    links_[position].clear();
  }
  SeriesSlot& s = slots_[position][slot];
  if (!s.known) {
    const SlotInfo& info = kSlots[slot];
    tsdb::Labels labels = GpuLabels(kFamilies[static_cast<size_t>(info.family)].name, gpu.identity);
    AddSlotLabels(info.labels, &labels);
    std::sort(labels.begin(), labels.end());
    auto ref = appender_->GetRef(labels);
    if (!ref.ok()) return nullptr;
    s.ref = *ref;
    s.known = true;
  }
  return &s;
}

void Recorder::RecordSelf(const Snapshot& snap, int64_t t, RecorderStats* local) {
  const double values[kSelfSeries] = {
      snap.stats.nvml_up ? 1.0 : 0.0, static_cast<double>(snap.gpus.size()),
      snap.stats.nvml_up ? snap.stats.last_success_unix_seconds : kAbsent};
  static constexpr const char* kNames[kSelfSeries] = {
      "gpuwarden_nvml_up", "gpuwarden_gpus", "gpuwarden_collect_last_success_timestamp_seconds"};
  for (size_t i = 0; i < kSelfSeries; ++i) {
    SeriesSlot& slot = self_[i];
    const bool present = !IsAbsent(values[i]);
    if (!present && !slot.had_value) continue;
    if (!slot.known) {
      auto ref = appender_->GetRef(tsdb::Labels{{"__name__", kNames[i]}});
      if (!ref.ok()) {
        ++local->append_errors;
        continue;
      }
      slot.ref = *ref;
      slot.known = true;
    }
    if (appender_->Append(slot.ref, t, present ? values[i] : tsdb::StaleNaN()).ok())
      ++(present ? local->samples_appended : local->stale_markers);
    slot.had_value = present;
  }
}

void Recorder::RecordIdentityAndXids(const GpuSnapshot& gpu, size_t position, int64_t t,
                                     RecorderStats* local) {
  Slot(gpu, position, 0);  // sizes the per-position tables and checks the identity
  SeriesSlot& info = info_[position];
  if (!info.known) {
    tsdb::Labels labels = GpuLabels("gpu_info", gpu.identity);
    for (auto [name, value] :
         {std::pair<const char*, const std::string*>{"name", &gpu.identity.name},
          {"pci_bus_id", &gpu.identity.pci_bus_id},
          {"serial", &gpu.identity.serial}})
      if (!value->empty()) labels.push_back({name, *value});
    std::sort(labels.begin(), labels.end());
    auto ref = appender_->GetRef(labels);
    if (!ref.ok()) {
      ++local->append_errors;
      return;
    }
    info.ref = *ref;
    info.known = true;
  }
  if (appender_->Append(info.ref, t, 1).ok()) ++local->samples_appended;
  auto& refs = xids_[position];
  for (const auto& [xid, count] : gpu.xid_counts) {
    auto it = std::find_if(refs.begin(), refs.end(), [&](auto& p) { return p.first == xid; });
    if (it == refs.end()) {
      tsdb::Labels labels = GpuLabels("gpu_xid_errors_total", gpu.identity);
      labels.push_back({"xid", std::to_string(xid)});
      std::sort(labels.begin(), labels.end());
      auto ref = appender_->GetRef(labels);
      if (!ref.ok()) {
        ++local->append_errors;
        continue;
      }
      it = refs.insert(refs.end(), {xid, *ref});
    }
    if (appender_->Append(it->second, t, static_cast<double>(count)).ok())
      ++local->samples_appended;
  }
}

void Recorder::RecordNow(const Snapshot& snap) {
  std::lock_guard<std::mutex> writer(writer_mu_);
  if (snap.generation != 0 && snap.generation == last_generation_) return;
  last_generation_ = snap.generation;
  const int64_t t = ToMs(snap.taken_unix_seconds);
  RecorderStats local;
  for (size_t g = 0; g < snap.gpus.size(); ++g) {
    const GpuSnapshot& gpu = snap.gpus[g];
    for (size_t s = 0; s < kSlotCount; ++s) {
      double v = gpu.values[s];
      bool present = !IsAbsent(v);
      if (!present && !(slots_.size() > g && slots_[g][s].had_value)) continue;
      SeriesSlot* slot = Slot(gpu, g, s);
      if (slot == nullptr) {
        ++local.append_errors;
        continue;
      }
      Status st = appender_->Append(slot->ref, t, present ? v : tsdb::StaleNaN());
      if (!st.ok()) {
        ++local.append_errors;
        continue;
      }
      ++(present ? local.samples_appended : local.stale_markers);
      slot->had_value = present;
    }
    RecordIdentityAndXids(gpu, g, t, &local);
    RecordMig(gpu, g, t, &local);
    RecordNvLinks(gpu, g, t, &local);
  }
  RecordSelf(snap, t, &local);
  if (Status st = appender_->Commit(); !st.ok()) {
    ++local.append_errors;
    if (log_) log_->Error("store: commit failed: " + st.message());
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.snapshots_recorded;
    stats_.samples_appended += local.samples_appended;
    stats_.stale_markers += local.stale_markers;
    stats_.append_errors += local.append_errors;
  }
  if (after_record_) after_record_(snap, t);
}

}  // namespace gw::collect
