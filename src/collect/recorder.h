// collect/recorder.h — keeps every published snapshot in a store.
//
// The collector's worker must never wait for disk, so recording happens on a thread of its own:
// `Offer()` (called by the collector after each publish) only swaps a shared_ptr, and the
// recorder thread appends the newest snapshot it has not recorded yet. If the store falls behind,
// intermediate snapshots are skipped (and counted), never queued without bound.
//
// Series references are cached per (GPU, slot), per MIG instance and per NVLink link, so
// steady-state recording does not hash labels or allocate. The per-instance (gpu_mig_*) and
// per-link (gpu_nvlink_link_*) families are recorded like /metrics writes them, so the rules and
// findings that read them work inside the agent too. A series that had a value and now has none
// (GPU lost, process gone, field no longer supported) gets a stale marker, so queries stop
// returning it at once.
#ifndef GPUWARDEN_COLLECT_RECORDER_H_
#define GPUWARDEN_COLLECT_RECORDER_H_

#include <array>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/log.h"
#include "collect/snapshot.h"
#include "tsdb/storage.h"

namespace gw::collect {

struct RecorderStats {
  uint64_t snapshots_recorded = 0, snapshots_skipped = 0;
  uint64_t samples_appended = 0, stale_markers = 0, append_errors = 0;
};

class Recorder {
 public:
  // `appender` and `log` must outlive the recorder.
  Recorder(tsdb::Appender* appender, Logger* log);
  ~Recorder();  // Stop()s
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // Called after each recorded snapshot is committed, on the thread that recorded it, with the
  // snapshot and its time (ms): the store now holds everything up to that time, so this is where
  // work that reads it at "now" is triggered (rule evaluation, job statistics). Set before
  // Start; must not block for long (the next snapshot waits).
  using AfterRecord = std::function<void(const Snapshot& snapshot, int64_t t_ms)>;
  void SetAfterRecord(AfterRecord after) { after_record_ = std::move(after); }
  // Also record the per-link NVLink error counters and rates (collect.nvlink_link_metrics);
  // gpu_nvlink_link_up is always recorded. Set before Start.
  void SetNvLinkLinkMetrics(bool on) { nvlink_link_metrics_ = on; }

  void Start();
  // Records what was offered last, then stops the thread.
  void Stop();
  // Hands a newly published snapshot over; never blocks on the store.
  void Offer(std::shared_ptr<const Snapshot> snapshot);
  // Records `snapshot` on the calling thread (used by tests and by Stop for the last one).
  void RecordNow(const Snapshot& snapshot);
  RecorderStats stats() const;
  // Held while a snapshot is recorded and its after-record hook runs. The store has one writer at
  // a time; anything else that writes to it outside the hook (the rules on the wall clock when no
  // snapshot comes) takes this first.
  std::mutex& writer_mutex() { return writer_mu_; }

  // One cached series reference (internal; public for the recorder's helper functions).
  struct SeriesSlot {
    tsdb::Appender::Ref ref = 0;
    bool known = false;
    bool had_value = false;
  };

 private:
  std::mutex writer_mu_;
  void Run();
  SeriesSlot* Slot(const GpuSnapshot& gpu, size_t gpu_position, size_t slot);
  // The agent's own state that rules need (gpuwarden_nvml_up, gpuwarden_gpus,
  // gpuwarden_collect_last_success_timestamp_seconds), so that the built-in pack works in the
  // agent as it does in Prometheus.
  void RecordSelf(const Snapshot& snap, int64_t t, RecorderStats* local);
  void RecordIdentityAndXids(const GpuSnapshot& gpu, size_t position, int64_t t,
                             RecorderStats* local);
  // recorder_datacenter.cpp: gpu_mig_* per instance and gpu_nvlink_link_* per link.
  void RecordMig(const GpuSnapshot& gpu, size_t position, int64_t t, RecorderStats* local);
  void RecordNvLinks(const GpuSnapshot& gpu, size_t position, int64_t t, RecorderStats* local);

  tsdb::Appender* appender_;
  Logger* log_;
  AfterRecord after_record_;
  bool nvlink_link_metrics_ = false;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<const Snapshot> pending_;
  uint64_t last_generation_ = 0;
  bool stopping_ = false;
  RecorderStats stats_;
  std::thread thread_;
  // [gpu position][slot]; identity per position to notice a re-discovered fleet.
  std::vector<std::vector<SeriesSlot>> slots_;
  std::vector<std::string> uuids_;
  // gpu_info and XID counter refs per GPU position (same lifetime as slots_).
  std::vector<SeriesSlot> info_;
  static constexpr size_t kSelfSeries = 3;
  SeriesSlot self_[kSelfSeries];
  std::vector<std::vector<std::pair<unsigned, tsdb::Appender::Ref>>> xids_;
  // One MIG instance's series, found again by its MIG UUID: info, share, memory, processes,
  // then one per GPM signal (Gpm order; those without a gpu_mig_* family stay unused).
  struct MigSeries {
    std::string uuid;
    bool seen = false;
    std::vector<SeriesSlot> series;
  };
  std::vector<std::vector<MigSeries>> mig_;  // [gpu position][instance]
  // One NVLink link's series: up, replay/recovery/crc errors, tx/rx rates.
  static constexpr size_t kLinkSeries = 6;
  std::vector<std::vector<std::array<SeriesSlot, kLinkSeries>>> links_;  // [gpu position][link]
};

}  // namespace gw::collect

#endif  // GPUWARDEN_COLLECT_RECORDER_H_
