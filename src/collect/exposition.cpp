#include "collect/exposition.h"

#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <vector>

#include "base/build_info.h"
#include "nvml/library.h"

namespace gw::collect {

namespace {

// Slots of each family, in catalogue order, built once.
const std::array<std::vector<Slot>, kFamilyCount>& SlotsByFamily() {
  static const auto table = [] {
    std::array<std::vector<Slot>, kFamilyCount> t;
    for (size_t s = 0; s < kSlotCount; ++s)
      t[static_cast<size_t>(kSlots[s].family)].push_back(static_cast<Slot>(s));
    return t;
  }();
  return table;
}

expo::Type TypeOf(MetricType type) {
  return type == MetricType::kCounter ? expo::Type::kCounter : expo::Type::kGauge;
}

void BeginFamily(expo::Writer* w, const Family& f) {
  w->Family(f.name, TypeOf(f.type), f.help, f.unit);
}

// The gpu_mig_* families: one series per MIG instance (labels gpu, uuid, mig_instance,
// mig_profile, preformatted in label_text).
void WriteMig(const Snapshot& snap, expo::Writer* w) {
  bool any = false;
  for (const GpuSnapshot& gpu : snap.gpus) any |= !gpu.mig.empty();
  if (!any) return;
  char number[16];
  auto text = [&](unsigned v) {
    auto [end, ec] = std::to_chars(number, number + sizeof number, v);
    return std::string_view(number, end - number);
  };
  BeginFamily(w, DynamicFamily(Dynamic::kMigInfo));
  for (const GpuSnapshot& gpu : snap.gpus)
    for (const MigInstanceSnapshot& m : gpu.mig)
      w->Sample()
          .Escaped(m.label_text)
          .Label("mig_uuid", m.uuid)
          .Label("compute_instance", text(m.compute_instance_id))
          .Value(1);

  // A family of per-instance values, each instance's value from `get` (absent ones left out).
  auto family = [&](Dynamic d, auto get) {
    bool header = false;
    for (const GpuSnapshot& gpu : snap.gpus)
      for (const MigInstanceSnapshot& m : gpu.mig) {
        const double v = get(m);
        if (IsAbsent(v)) continue;
        if (!header) BeginFamily(w, DynamicFamily(d));
        header = true;
        w->Sample().Escaped(m.label_text).Value(v);
      }
  };
  family(Dynamic::kMigSliceRatio, [](const MigInstanceSnapshot& m) { return m.slice_ratio; });
  family(Dynamic::kMigMemoryTotal,
         [](const MigInstanceSnapshot& m) { return m.memory_total_bytes; });
  family(Dynamic::kMigMemoryUsed, [](const MigInstanceSnapshot& m) { return m.memory_used_bytes; });
  family(Dynamic::kMigMemoryFree, [](const MigInstanceSnapshot& m) { return m.memory_free_bytes; });
  family(Dynamic::kMigProcesses,
         [](const MigInstanceSnapshot& m) { return static_cast<double>(m.processes.size()); });

  // The GPM families: the GPU-level family of each signal, renamed gpu_mig_*, with its pipe label.
  for (const auto& [gpu_family, mig_family] : kMigGpmFamilies) {
    bool header = false;
    for (const GpuSnapshot& gpu : snap.gpus)
      for (const MigInstanceSnapshot& m : gpu.mig)
        for (size_t g = 0; g < kGpmCount; ++g) {
          const SlotInfo& slot = kSlots[static_cast<size_t>(kGpmSlots[g])];
          if (slot.family != gpu_family || IsAbsent(m.gpm[g])) continue;
          if (!header) BeginFamily(w, DynamicFamily(mig_family));
          header = true;
          w->Sample().Escaped(m.label_text).Escaped(slot.labels).Value(m.gpm[g]);
        }
  }
}

// The gpu_nvlink_link_* families: one series per NVLink link (labels gpu, uuid, link).
void WriteNvLinkLinks(const Snapshot& snap, bool per_link_counters, expo::Writer* w) {
  char number[16];
  auto link_text = [&](unsigned v) {
    auto [end, ec] = std::to_chars(number, number + sizeof number, v);
    return std::string_view(number, end - number);
  };
  auto family = [&](Dynamic d, std::string_view labels, auto get, bool* header) {
    for (const GpuSnapshot& gpu : snap.gpus)
      for (const NvLinkSnapshot& l : gpu.nvlinks) {
        const double v = get(l);
        if (IsAbsent(v)) continue;
        if (!*header) BeginFamily(w, DynamicFamily(d));
        *header = true;
        w->Sample()
            .Escaped(gpu.identity.label_text)
            .Label("link", link_text(l.link))
            .Escaped(labels)
            .Value(v);
      }
  };
  bool up = false, errors = false, tx = false, rx = false;
  family(
      Dynamic::kNvlinkLinkUp, "", [](const NvLinkSnapshot& l) { return l.up; }, &up);
  if (!per_link_counters) return;  // the GPU's totals stand for them (gpu_nvlink_errors_total)
  family(
      Dynamic::kNvlinkLinkErrors, "type=\"replay\"",
      [](const NvLinkSnapshot& l) { return l.replay_errors; }, &errors);
  family(
      Dynamic::kNvlinkLinkErrors, "type=\"recovery\"",
      [](const NvLinkSnapshot& l) { return l.recovery_errors; }, &errors);
  family(
      Dynamic::kNvlinkLinkErrors, "type=\"crc\"",
      [](const NvLinkSnapshot& l) { return l.crc_errors; }, &errors);
  family(
      Dynamic::kNvlinkLinkTxRate, "", [](const NvLinkSnapshot& l) { return l.tx_bytes_per_second; },
      &tx);
  family(
      Dynamic::kNvlinkLinkRxRate, "", [](const NvLinkSnapshot& l) { return l.rx_bytes_per_second; },
      &rx);
}

void WriteDevice(const Snapshot& snap, const RenderOptions& options, expo::Writer* w) {
  const auto& by_family = SlotsByFamily();
  for (size_t f = 0; f < kFamilyCount; ++f) {
    const Family& family = kFamilies[f];
    bool any = false;
    for (const GpuSnapshot& gpu : snap.gpus)
      for (Slot s : by_family[f])
        if (!IsAbsent(gpu.value(s))) any = true;
    if (!any) continue;  // a family with no value at all is left out entirely
    BeginFamily(w, family);
    for (const GpuSnapshot& gpu : snap.gpus) {
      for (Slot s : by_family[f]) {
        double v = gpu.value(s);
        if (IsAbsent(v)) continue;
        w->Sample()
            .Escaped(gpu.identity.label_text)
            .Escaped(kSlots[static_cast<size_t>(s)].labels)
            .Value(v);
      }
    }
    if (static_cast<FamilyId>(f) != FamilyId::kUp || snap.gpus.empty()) continue;
    // gpu_info follows gpu_up: identity and versions, one series per GPU.
    BeginFamily(w, DynamicFamily(Dynamic::kInfo));
    for (const GpuSnapshot& gpu : snap.gpus)
      w->Sample()
          .Escaped(gpu.identity.label_text)
          .Label("name", gpu.identity.name)
          .Label("serial", gpu.identity.serial)
          .Label("pci_bus_id", gpu.identity.pci_bus_id)
          .Label("driver_version", snap.stats.driver_version)
          .Label("nvml_version", snap.stats.nvml_version)
          .Label("cuda_driver_version", snap.stats.cuda_driver_version)
          .Value(1);
  }

  // The per-cycle peaks' maxima over collect.peak_window (collect/peak_window.h).
  for (size_t k = 0; k < kPeakWindowCount; ++k) {
    bool header = false;
    for (const GpuSnapshot& gpu : snap.gpus) {
      const double v = gpu.peak_window[k];
      if (IsAbsent(v)) continue;
      if (!header) BeginFamily(w, DynamicFamily(kPeakWindows[k].second));
      header = true;
      w->Sample().Escaped(gpu.identity.label_text).Value(v);
    }
  }

  bool any_xid = false;
  for (const GpuSnapshot& gpu : snap.gpus) any_xid |= !gpu.xid_counts.empty();
  if (any_xid) {
    BeginFamily(w, DynamicFamily(Dynamic::kXid));
    char xid[16];
    for (const GpuSnapshot& gpu : snap.gpus)
      for (const auto& [code, count] : gpu.xid_counts) {
        auto [end, ec] = std::to_chars(xid, xid + sizeof xid, code);
        w->Sample()
            .Escaped(gpu.identity.label_text)
            .Label("xid", std::string_view(xid, end - xid))
            .Value(static_cast<double>(count));
      }
  }

  WriteMig(snap, w);
  WriteNvLinkLinks(snap, options.nvlink_link_metrics, w);

  if (!options.per_process_metrics) return;
  char pid[16];
  for (int which = 0; which < 2; ++which) {
    const Family& family =
        DynamicFamily(which == 0 ? Dynamic::kProcessMemory : Dynamic::kProcessSm);
    bool header = false;
    for (const GpuSnapshot& gpu : snap.gpus)
      for (const ProcessSample& p : gpu.processes) {
        double v = which == 0 ? p.memory_bytes : p.sm_utilization_ratio;
        if (IsAbsent(v)) continue;
        if (!header) BeginFamily(w, family);
        header = true;
        auto [end, ec] = std::to_chars(pid, pid + sizeof pid, p.pid);
        w->Sample()
            .Escaped(gpu.identity.label_text)
            .Label("pid", std::string_view(pid, end - pid))
            .Value(v);
      }
  }
}

void WriteSelf(const Snapshot& snap, const RenderOptions& options, const ProcessFigures& process,
               expo::Writer* w) {
  using expo::Type;
  const CollectorStats& st = snap.stats;
  w->Family("gpuwarden_build_info", Type::kGauge,
            "gpuwarden's version and the git commit it was built from (value 1).");
  const BuildInfo& build = GetBuildInfo();
  w->Sample()
      .Label("version", options.version)
      .Label("revision", build.revision)
      .Label("branch", build.branch)
      .Value(1);

  w->Family("gpuwarden_nvml_up", Type::kGauge,
            "1 if NVML is loaded and initialized; 0 means no GPU is being watched.");
  w->Sample(st.nvml_up ? 1 : 0);
  w->Family("gpuwarden_gpus", Type::kGauge, "GPUs discovered through NVML.");
  w->Sample(static_cast<double>(snap.gpus.size()));

  w->Family("gpuwarden_collect_cycles_total", Type::kCounter,
            "Collection cycles completed, by schedule.");
  w->Sample().Label("schedule", "fast").Value(static_cast<double>(st.fast_cycles));
  w->Sample().Label("schedule", "slow").Value(static_cast<double>(st.slow_cycles));
  if (!IsAbsent(st.last_fast_cycle_seconds)) {
    w->Family("gpuwarden_collect_cycle_duration_seconds", Type::kGauge,
              "Duration of the last collection cycle, by schedule.", "seconds");
    w->Sample().Label("schedule", "fast").Value(st.last_fast_cycle_seconds);
    if (!IsAbsent(st.last_slow_cycle_seconds))
      w->Sample().Label("schedule", "slow").Value(st.last_slow_cycle_seconds);
  }
  if (!IsAbsent(st.last_success_unix_seconds) && st.nvml_up) {
    w->Family("gpuwarden_collect_last_success_timestamp_seconds", Type::kGauge,
              "When the last collection cycle completed.", "seconds");
    w->Sample(st.last_success_unix_seconds);
  }

  struct CallFamily {
    std::string_view name, help, unit;
    Type type;
    int which;
  } call_families[] = {
      {"gpuwarden_nvml_calls_total", "NVML calls made, by function.", "", Type::kCounter, 0},
      {"gpuwarden_nvml_call_errors_total",
       "NVML calls that failed (other than NOT_SUPPORTED), by function and error.", "",
       Type::kCounter, 1},
      {"gpuwarden_nvml_call_duration_seconds_total", "Time spent inside NVML, by function.",
       "seconds", Type::kCounter, 2},
      {"gpuwarden_nvml_call_max_duration_seconds", "Slowest single NVML call, by function.",
       "seconds", Type::kGauge, 3},
  };
  for (const CallFamily& cf : call_families) {
    bool header = false;
    for (size_t c = 0; c < kCallCount; ++c) {
      const CallStats& cs = st.calls[c];
      if (cs.calls == 0) continue;
      if (!header) w->Family(cf.name, cf.type, cf.help, cf.unit);
      header = true;
      const std::string_view call = CallName(static_cast<Call>(c));
      if (cf.which == 1) {
        for (const auto& [code, count] : cs.errors_by_code)
          w->Sample()
              .Label("call", call)
              .Label("error", nvml::ReturnName(code))
              .Value(static_cast<double>(count));
        continue;
      }
      double v = cf.which == 0   ? static_cast<double>(cs.calls)
                 : cf.which == 2 ? cs.seconds_total
                                 : cs.max_seconds;
      w->Sample().Label("call", call).Value(v);
    }
  }

  w->Family("gpuwarden_nvml_watchdog_trips_total", Type::kCounter,
            "NVML calls that did not return within call_timeout and were abandoned.");
  w->Sample(static_cast<double>(st.watchdog_trips));
  bool hung_header = false;
  for (const GpuSnapshot& gpu : snap.gpus)
    for (size_t c = 0; c < kCallCount; ++c) {
      if (!gpu.hung[c]) continue;
      if (!hung_header)
        w->Family("gpuwarden_nvml_call_hung", Type::kGauge,
                  "1 while an NVML call on this GPU is quarantined after hanging.");
      hung_header = true;
      w->Sample()
          .Escaped(gpu.identity.label_text)
          .Label("call", CallName(static_cast<Call>(c)))
          .Value(1);
    }
  w->Family("gpuwarden_xid_events_total", Type::kCounter,
            "XID events received from NVML, all GPUs.");
  w->Sample(static_cast<double>(st.xid_events));

  if (process.cpu_seconds >= 0) {
    w->Family("process_cpu_seconds_total", Type::kCounter,
              "Total user and system CPU time spent in seconds.", "seconds");
    w->Sample(process.cpu_seconds);
  }
  if (process.resident_bytes >= 0) {
    w->Family("process_resident_memory_bytes", Type::kGauge, "Resident memory size in bytes.",
              "bytes");
    w->Sample(process.resident_bytes);
  }
  if (process.start_unix_seconds >= 0) {
    w->Family("process_start_time_seconds", Type::kGauge,
              "Start time of the process since unix epoch in seconds.", "seconds");
    w->Sample(process.start_unix_seconds);
  }
}

}  // namespace

ProcessFigures ReadProcessFigures() {
  ProcessFigures f;
  FILE* stat = std::fopen("/proc/self/stat", "r");
  if (stat == nullptr) return f;
  char buffer[1024] = {0};
  size_t n = std::fread(buffer, 1, sizeof buffer - 1, stat);
  std::fclose(stat);
  buffer[n] = '\0';
  // Fields after the ")" that closes the command name: 3 state ... 14 utime 15 stime ...
  // 22 starttime 24 rss.
  const char* p = std::strrchr(buffer, ')');
  if (p == nullptr) return f;
  p += 2;
  unsigned long long fields[24] = {0};
  int field = 3;
  while (*p && field <= 24) {
    if (field >= 4) fields[field - 1] = std::strtoull(p, nullptr, 10);
    while (*p && *p != ' ') ++p;
    while (*p == ' ') ++p;
    ++field;
  }
  double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  f.cpu_seconds = static_cast<double>(fields[13] + fields[14]) / ticks;
  f.resident_bytes = static_cast<double>(fields[23]) * page;
  // starttime is in ticks since boot; boot time comes from /proc/stat's btime.
  FILE* sys = std::fopen("/proc/stat", "r");
  if (sys != nullptr) {
    char line[256];
    while (std::fgets(line, sizeof line, sys)) {
      if (std::strncmp(line, "btime ", 6) == 0) {
        f.start_unix_seconds = static_cast<double>(std::strtoull(line + 6, nullptr, 10)) +
                               static_cast<double>(fields[21]) / ticks;
        break;
      }
    }
    std::fclose(sys);
  }
  return f;
}

void WriteStore(const StoreFigures& st, expo::Writer* w) {
  if (!st.present) return;
  struct Row {
    const char* name;
    MetricType type;
    const char* unit;
    const char* help;
    double value;
  } rows[] = {
      {"gpuwarden_tsdb_series", MetricType::kGauge, "", "Series in the history store.", st.series},
      {"gpuwarden_tsdb_samples_appended_total", MetricType::kCounter, "",
       "Samples accepted by the store since it was opened (WAL replay included).",
       st.samples_appended},
      {"gpuwarden_tsdb_out_of_order_samples_total", MetricType::kCounter, "",
       "Samples refused because they were not newer than their series' last one.", st.out_of_order},
      {"gpuwarden_tsdb_bytes_on_disk", MetricType::kGauge, "",
       "Bytes the store uses on disk (SQLite and WAL).", st.bytes_on_disk},
      {"gpuwarden_tsdb_wal_bytes", MetricType::kGauge, "", "Bytes in the write-ahead log.",
       st.wal_bytes},
      {"gpuwarden_tsdb_wal_corruptions_total", MetricType::kCounter, "",
       "Torn or damaged WAL stretches found at start-up (whole records around them were kept).",
       st.wal_corruptions},
      {"gpuwarden_tsdb_wal_write_failures_total", MetricType::kCounter, "",
       "WAL writes that failed (a full disk, I/O errors); their samples stay in memory and are "
       "written by the next write or flush that works.",
       st.wal_write_failures},
      {"gpuwarden_tsdb_wal_writes_failing", MetricType::kGauge, "",
       "1 while the last WAL write failed (samples since then are not yet safe from a crash), "
       "else 0.",
       st.wal_writes_failing},
      {"gpuwarden_tsdb_wal_pending_bytes", MetricType::kGauge, "bytes",
       "WAL records kept in memory after failed writes, to be written when writing works.",
       st.wal_pending_bytes},
      {"gpuwarden_tsdb_wal_dropped_samples_total", MetricType::kCounter, "",
       "Samples left out of the WAL because its retry buffer was full while writes failed (they "
       "stay in memory and reach SQLite at the next flush that works).",
       st.wal_dropped_samples},
      {"gpuwarden_tsdb_flush_failures_total", MetricType::kCounter, "",
       "Flushes of in-memory chunks to SQLite that failed (the data stays in memory and the WAL).",
       st.flush_failures},
      {"gpuwarden_tsdb_chunk_corruptions_total", MetricType::kCounter, "",
       "Stored chunks that failed their checksum and were skipped.", st.chunk_corruptions},
      {"gpuwarden_tsdb_chunks_persisted_total", MetricType::kCounter, "",
       "Chunks written to SQLite since start-up.", st.chunks_persisted},
      {"gpuwarden_tsdb_last_flush_duration_seconds", MetricType::kGauge, "seconds",
       "Duration of the last flush of in-memory chunks to SQLite.", st.last_flush_seconds},
      {"gpuwarden_tsdb_compactions_total", MetricType::kCounter, "",
       "Compactions that rewrote at least one block.", st.compactions},
      {"gpuwarden_tsdb_blocks_written_total", MetricType::kCounter, "",
       "Blocks (one series, one window) written by compactions.", st.blocks_written},
      {"gpuwarden_tsdb_compaction_seconds_total", MetricType::kCounter, "seconds",
       "Time spent compacting.", st.compaction_seconds},
      {"gpuwarden_tsdb_last_compaction_duration_seconds", MetricType::kGauge, "seconds",
       "Duration of the last compaction.", st.last_compaction_seconds},
      {"gpuwarden_tsdb_selects_total", MetricType::kCounter, "",
       "Series selections served to queries.", st.selects},
      {"gpuwarden_tsdb_select_seconds_total", MetricType::kCounter, "seconds",
       "Time spent reading the store for queries.", st.select_seconds},
      {"gpuwarden_tsdb_block_cache_hits_total", MetricType::kCounter, "",
       "Block reads served from the decoded-block cache.", st.block_cache_hits},
      {"gpuwarden_tsdb_block_cache_misses_total", MetricType::kCounter, "",
       "Block reads that had to read and decode from SQLite.", st.block_cache_misses},
      {"gpuwarden_tsdb_block_cache_bytes", MetricType::kGauge, "bytes",
       "Decoded samples held by the block cache.", st.block_cache_bytes},
      {"gpuwarden_tsdb_rollups_decoded_total", MetricType::kCounter, "",
       "Blocks' rollup columns read and decoded for long-range queries (the rollup cache's "
       "misses).",
       st.rollups_decoded},
      {"gpuwarden_tsdb_rollup_cache_hits_total", MetricType::kCounter, "",
       "Blocks' rollup columns served from the decoded-rollup cache.", st.rollup_cache_hits},
      {"gpuwarden_tsdb_rollup_cache_bytes", MetricType::kGauge, "bytes",
       "Decoded rollups held by the rollup cache.", st.rollup_cache_bytes},
      {"gpuwarden_recorder_snapshots_recorded_total", MetricType::kCounter, "",
       "Collection snapshots written to the store.", st.snapshots_recorded},
      {"gpuwarden_recorder_snapshots_skipped_total", MetricType::kCounter, "",
       "Snapshots not written because the store was behind (a newer one was written instead).",
       st.snapshots_skipped},
      {"gpuwarden_recorder_stale_markers_total", MetricType::kCounter, "",
       "Stale markers written for series that disappeared.", st.stale_markers},
      {"gpuwarden_recorder_append_errors_total", MetricType::kCounter, "",
       "Samples the store refused.", st.append_errors},
  };
  for (const Row& r : rows) {
    w->Family(r.name, TypeOf(r.type), r.help, r.unit);
    w->Sample(r.value);
  }
}

void RenderStore(const StoreFigures& store, Format format, std::string* out) {
  expo::Writer w(format, out);
  WriteStore(store, &w);
}

void WriteSnapshot(const Snapshot& snapshot, const RenderOptions& options,
                   const ProcessFigures& process, expo::Writer* writer) {
  if (options.names != ExpositionNames::kDcgmExporter) WriteDevice(snapshot, options, writer);
  if (options.names != ExpositionNames::kGpuwarden && options.dcgm)
    options.dcgm->Write(snapshot, writer);
  WriteSelf(snapshot, options, process, writer);
}

void Render(const Snapshot& snapshot, Format format, const RenderOptions& options,
            const ProcessFigures& process, std::string* out) {
  expo::Writer w(format, out);
  WriteSnapshot(snapshot, options, process, &w);
  expo::EndPage(format, out);
}

std::string MetricsPage::Get(const Snapshot& snapshot, Format format) {
  std::string page;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Entry& e = cache_[format == Format::kOpenMetrics ? 1 : 0];
    if (e.generation != snapshot.generation) {
      e.body.clear();
      expo::Writer w(format, &e.body);
      WriteSnapshot(snapshot, options_, ReadProcessFigures(), &w);
      e.generation = snapshot.generation;
    }
    // One allocation for the page and what follows it (the store's and the services' families):
    // a page of a few hundred KB copied and grown per request made the allocator map and unmap
    // memory each time (docs/benchmarks.md, issue 12).
    page.reserve(e.body.size() + e.body.size() / 4 + 16384);
    page.append(e.body);
  }
  // The store moves on its own thread, between snapshots: its figures are always current.
  if (store_) RenderStore(store_(), format, &page);
  if (extra_) extra_(format, &page);
  expo::EndPage(format, &page);
  return page;
}

}  // namespace gw::collect
