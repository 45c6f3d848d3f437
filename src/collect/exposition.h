// collect/exposition.h — the snapshot in Prometheus text format 0.0.4 or OpenMetrics 1.0.
//
// Rendering reads only the published snapshot (no NVML, no disk) and writes, through the one
// family writer (expo/expo.h), into a caller-owned string whose capacity is reused. `MetricsPage`
// caches the last rendering per format, keyed by the snapshot's generation, so any number of
// scrapes per collection cycle cost one render.
#ifndef GPUWARDEN_COLLECT_EXPOSITION_H_
#define GPUWARDEN_COLLECT_EXPOSITION_H_

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "collect/dcgm_exposition.h"
#include "collect/snapshot.h"
#include "expo/expo.h"

namespace gw::collect {

// The format, its negotiation and the value and label writers are expo's; these names keep
// collect's callers working.
using expo::AppendEscapedLabelValue;
using expo::AppendValue;
using expo::ContentType;
using expo::Format;
using expo::NegotiateFormat;

struct RenderOptions {
  bool per_process_metrics = false;
  bool nvlink_link_metrics = false;  // collect.nvlink_link_metrics (CollectorOptions)
  std::string version;               // gpuwarden_build_info{version}
  // exposition.names: the device families under gpuwarden's names, dcgm-exporter's (written by
  // `dcgm`, which must then be set), or both (collect/dcgm_exposition.h).
  ExpositionNames names = ExpositionNames::kGpuwarden;
  std::shared_ptr<DcgmExposition> dcgm;
};

// Figures about this process, read from /proc/self (procfs, not disk).
struct ProcessFigures {
  double cpu_seconds = -1, resident_bytes = -1, start_unix_seconds = -1;
};
ProcessFigures ReadProcessFigures();

// Figures about the history store and the recorder feeding it, for /metrics.
struct StoreFigures {
  bool present = false;  // false: no store (nothing rendered)
  double series = 0, samples_appended = 0, out_of_order = 0, bytes_on_disk = 0, wal_bytes = 0;
  double wal_corruptions = 0, chunk_corruptions = 0, chunks_persisted = 0;
  double wal_write_failures = 0, wal_writes_failing = 0, wal_pending_bytes = 0;
  double wal_dropped_samples = 0, flush_failures = 0;
  double last_flush_seconds = 0;
  double compactions = 0, blocks_written = 0, compaction_seconds = 0, last_compaction_seconds = 0;
  double selects = 0, select_seconds = 0, block_cache_hits = 0, block_cache_misses = 0;
  double block_cache_bytes = 0;
  double rollups_decoded = 0, rollup_cache_hits = 0, rollup_cache_bytes = 0;
  double snapshots_recorded = 0, snapshots_skipped = 0, stale_markers = 0, append_errors = 0;
};

// Writes the store's own families (gpuwarden_tsdb_*, gpuwarden_recorder_*).
void WriteStore(const StoreFigures& store, expo::Writer* writer);
void RenderStore(const StoreFigures& store, Format format, std::string* out);

// Writes the families of `snapshot` (devices, then gpuwarden's own).
void WriteSnapshot(const Snapshot& snapshot, const RenderOptions& options,
                   const ProcessFigures& process, expo::Writer* writer);
// Appends the whole exposition of `snapshot` to `out`, as a page (with `# EOF` in OpenMetrics).
void Render(const Snapshot& snapshot, Format format, const RenderOptions& options,
            const ProcessFigures& process, std::string* out);

// Thread-safe cache of the rendered page.
class MetricsPage {
 public:
  using StoreSource = std::function<StoreFigures()>;
  explicit MetricsPage(RenderOptions options, StoreSource store = nullptr)
      : options_(std::move(options)), store_(std::move(store)) {}
  // The page for `snapshot` in `format`; the snapshot part is re-rendered only when the
  // snapshot is newer, the store figures (which move between snapshots) every time.
  std::string Get(const Snapshot& snapshot, Format format);
  // More families rendered fresh on every request, after the store's (rules, notifications).
  // Set before the page is served.
  using ExtraSource = std::function<void(Format, std::string*)>;
  void SetExtra(ExtraSource extra) { extra_ = std::move(extra); }

 private:
  RenderOptions options_;
  StoreSource store_;
  ExtraSource extra_;
  std::mutex mu_;
  struct Entry {
    uint64_t generation = ~uint64_t{0};
    std::string body;
  } cache_[2];
};

}  // namespace gw::collect

#endif  // GPUWARDEN_COLLECT_EXPOSITION_H_
