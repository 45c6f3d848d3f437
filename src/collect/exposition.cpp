#include "collect/exposition.h"

#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <vector>

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

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

void AppendHelpText(std::string* out, std::string_view help) {
  for (char c : help) {
    if (c == '\\') {
      *out += "\\\\";
    } else if (c == '\n') {
      *out += "\\n";
    } else {
      *out += c;
    }
  }
}

// Writes the # HELP / # TYPE (/ # UNIT) block. In OpenMetrics a counter family is named
// without its _total suffix, which stays on the samples.
void AppendHeader(std::string* out, Format format, std::string_view name, MetricType type,
                  std::string_view unit, std::string_view help) {
  std::string_view family = name;
  if (format == Format::kOpenMetrics && type == MetricType::kCounter && EndsWith(name, "_total"))
    family = name.substr(0, name.size() - 6);
  *out += "# HELP ";
  *out += family;
  *out += ' ';
  AppendHelpText(out, help);
  *out += "\n# TYPE ";
  *out += family;
  *out += type == MetricType::kCounter ? " counter\n" : " gauge\n";
  if (format == Format::kOpenMetrics && !unit.empty() && EndsWith(family, unit)) {
    *out += "# UNIT ";
    *out += family;
    *out += ' ';
    *out += unit;
    *out += '\n';
  }
}

void AppendHeader(std::string* out, Format format, const Family& f) {
  AppendHeader(out, format, f.name, f.type, f.unit, f.help);
}

// name{labels} value\n — `labels` already in exposition syntax (may be empty).
void AppendSample(std::string* out, std::string_view name, std::string_view labels,
                  std::string_view extra, double value) {
  *out += name;
  if (!labels.empty() || !extra.empty()) {
    *out += '{';
    *out += labels;
    if (!labels.empty() && !extra.empty()) *out += ',';
    *out += extra;
    *out += '}';
  }
  *out += ' ';
  AppendValue(out, value);
  *out += '\n';
}

void AppendLabel(std::string* out, std::string_view name, std::string_view value) {
  if (!out->empty() && out->back() != '{' && out->back() != ',') *out += ',';
  *out += name;
  *out += "=\"";
  AppendEscapedLabelValue(out, value);
  *out += '"';
}

void RenderDevice(const Snapshot& snap, Format format, const RenderOptions& options,
                  std::string* out) {
  const auto& by_family = SlotsByFamily();
  std::string labels;
  for (size_t f = 0; f < kFamilyCount; ++f) {
    const Family& family = kFamilies[f];
    bool any = false;
    for (const GpuSnapshot& gpu : snap.gpus)
      for (Slot s : by_family[f])
        if (!IsAbsent(gpu.value(s))) any = true;
    if (!any) continue;  // a family with no value at all is left out entirely
    AppendHeader(out, format, family);
    for (const GpuSnapshot& gpu : snap.gpus) {
      for (Slot s : by_family[f]) {
        double v = gpu.value(s);
        if (IsAbsent(v)) continue;
        AppendSample(out, family.name, gpu.identity.label_text,
                     kSlots[static_cast<size_t>(s)].labels, v);
      }
    }
    if (static_cast<FamilyId>(f) != FamilyId::kUp || snap.gpus.empty()) continue;
    // gpu_info follows gpu_up: identity and versions, one series per GPU.
    AppendHeader(out, format, kDynamicFamilies[0]);
    for (const GpuSnapshot& gpu : snap.gpus) {
      labels.clear();
      labels += gpu.identity.label_text;
      AppendLabel(&labels, "name", gpu.identity.name);
      AppendLabel(&labels, "serial", gpu.identity.serial);
      AppendLabel(&labels, "pci_bus_id", gpu.identity.pci_bus_id);
      AppendLabel(&labels, "driver_version", snap.stats.driver_version);
      AppendLabel(&labels, "nvml_version", snap.stats.nvml_version);
      AppendLabel(&labels, "cuda_driver_version", snap.stats.cuda_driver_version);
      AppendSample(out, "gpu_info", labels, "", 1);
    }
  }

  bool any_xid = false;
  for (const GpuSnapshot& gpu : snap.gpus) any_xid |= !gpu.xid_counts.empty();
  if (any_xid) {
    AppendHeader(out, format, kDynamicFamilies[1]);
    char xid_label[32];
    for (const GpuSnapshot& gpu : snap.gpus)
      for (const auto& [xid, count] : gpu.xid_counts) {
        std::snprintf(xid_label, sizeof xid_label, "xid=\"%u\"", xid);
        AppendSample(out, "gpu_xid_errors_total", gpu.identity.label_text, xid_label,
                     static_cast<double>(count));
      }
  }

  if (!options.per_process_metrics) return;
  char pid_label[32];
  for (int which = 0; which < 2; ++which) {
    const Family& family = kDynamicFamilies[2 + which];
    bool header = false;
    for (const GpuSnapshot& gpu : snap.gpus)
      for (const ProcessSample& p : gpu.processes) {
        double v = which == 0 ? p.memory_bytes : p.sm_utilization_ratio;
        if (IsAbsent(v)) continue;
        if (!header) AppendHeader(out, format, family);
        header = true;
        std::snprintf(pid_label, sizeof pid_label, "pid=\"%u\"", p.pid);
        AppendSample(out, family.name, gpu.identity.label_text, pid_label, v);
      }
  }
}

void RenderSelf(const Snapshot& snap, Format format, const RenderOptions& options,
                const ProcessFigures& process, std::string* out) {
  const CollectorStats& st = snap.stats;
  std::string labels;
  AppendHeader(out, format, "gpuwarden_build_info", MetricType::kGauge, "",
               "gpuwarden's version (value 1).");
  labels.clear();
  AppendLabel(&labels, "version", options.version);
  AppendSample(out, "gpuwarden_build_info", labels, "", 1);

  AppendHeader(out, format, "gpuwarden_nvml_up", MetricType::kGauge, "",
               "1 if NVML is loaded and initialized; 0 means no GPU is being watched.");
  AppendSample(out, "gpuwarden_nvml_up", "", "", st.nvml_up ? 1 : 0);
  AppendHeader(out, format, "gpuwarden_gpus", MetricType::kGauge, "",
               "GPUs discovered through NVML.");
  AppendSample(out, "gpuwarden_gpus", "", "", static_cast<double>(snap.gpus.size()));

  AppendHeader(out, format, "gpuwarden_collect_cycles_total", MetricType::kCounter, "",
               "Collection cycles completed, by schedule.");
  AppendSample(out, "gpuwarden_collect_cycles_total", "schedule=\"fast\"", "",
               static_cast<double>(st.fast_cycles));
  AppendSample(out, "gpuwarden_collect_cycles_total", "schedule=\"slow\"", "",
               static_cast<double>(st.slow_cycles));
  if (!IsAbsent(st.last_fast_cycle_seconds)) {
    AppendHeader(out, format, "gpuwarden_collect_cycle_duration_seconds", MetricType::kGauge,
                 "seconds", "Duration of the last collection cycle, by schedule.");
    AppendSample(out, "gpuwarden_collect_cycle_duration_seconds", "schedule=\"fast\"", "",
                 st.last_fast_cycle_seconds);
    if (!IsAbsent(st.last_slow_cycle_seconds))
      AppendSample(out, "gpuwarden_collect_cycle_duration_seconds", "schedule=\"slow\"", "",
                   st.last_slow_cycle_seconds);
  }
  if (!IsAbsent(st.last_success_unix_seconds) && st.nvml_up) {
    AppendHeader(out, format, "gpuwarden_collect_last_success_timestamp_seconds",
                 MetricType::kGauge, "seconds", "When the last collection cycle completed.");
    AppendSample(out, "gpuwarden_collect_last_success_timestamp_seconds", "", "",
                 st.last_success_unix_seconds);
  }

  struct CallFamily {
    std::string_view name, help, unit;
    MetricType type;
    int which;
  } call_families[] = {
      {"gpuwarden_nvml_calls_total", "NVML calls made, by function.", "", MetricType::kCounter, 0},
      {"gpuwarden_nvml_call_errors_total",
       "NVML calls that failed (other than NOT_SUPPORTED), by function and error.", "",
       MetricType::kCounter, 1},
      {"gpuwarden_nvml_call_duration_seconds_total", "Time spent inside NVML, by function.",
       "seconds", MetricType::kCounter, 2},
      {"gpuwarden_nvml_call_max_duration_seconds", "Slowest single NVML call, by function.",
       "seconds", MetricType::kGauge, 3},
  };
  for (const CallFamily& cf : call_families) {
    bool header = false;
    for (size_t c = 0; c < kCallCount; ++c) {
      const CallStats& cs = st.calls[c];
      if (cs.calls == 0) continue;
      if (!header) AppendHeader(out, format, cf.name, cf.type, cf.unit, cf.help);
      header = true;
      labels.clear();
      AppendLabel(&labels, "call", CallName(static_cast<Call>(c)));
      if (cf.which == 1) {
        std::string with_error;
        for (const auto& [code, count] : cs.errors_by_code) {
          with_error = labels;
          AppendLabel(&with_error, "error", nvml::ReturnName(code));
          AppendSample(out, cf.name, with_error, "", static_cast<double>(count));
        }
        continue;
      }
      double v = cf.which == 0   ? static_cast<double>(cs.calls)
                 : cf.which == 2 ? cs.seconds_total
                                 : cs.max_seconds;
      AppendSample(out, cf.name, labels, "", v);
    }
  }

  AppendHeader(out, format, "gpuwarden_nvml_watchdog_trips_total", MetricType::kCounter, "",
               "NVML calls that did not return within call_timeout and were abandoned.");
  AppendSample(out, "gpuwarden_nvml_watchdog_trips_total", "", "",
               static_cast<double>(st.watchdog_trips));
  bool hung_header = false;
  for (const GpuSnapshot& gpu : snap.gpus)
    for (size_t c = 0; c < kCallCount; ++c) {
      if (!gpu.hung[c]) continue;
      if (!hung_header)
        AppendHeader(out, format, "gpuwarden_nvml_call_hung", MetricType::kGauge, "",
                     "1 while an NVML call on this GPU is quarantined after hanging.");
      hung_header = true;
      labels.clear();
      AppendLabel(&labels, "call", CallName(static_cast<Call>(c)));
      AppendSample(out, "gpuwarden_nvml_call_hung", gpu.identity.label_text, labels, 1);
    }
  AppendHeader(out, format, "gpuwarden_xid_events_total", MetricType::kCounter, "",
               "XID events received from NVML, all GPUs.");
  AppendSample(out, "gpuwarden_xid_events_total", "", "", static_cast<double>(st.xid_events));

  if (process.cpu_seconds >= 0) {
    AppendHeader(out, format, "process_cpu_seconds_total", MetricType::kCounter, "seconds",
                 "Total user and system CPU time spent in seconds.");
    AppendSample(out, "process_cpu_seconds_total", "", "", process.cpu_seconds);
  }
  if (process.resident_bytes >= 0) {
    AppendHeader(out, format, "process_resident_memory_bytes", MetricType::kGauge, "bytes",
                 "Resident memory size in bytes.");
    AppendSample(out, "process_resident_memory_bytes", "", "", process.resident_bytes);
  }
  if (process.start_unix_seconds >= 0) {
    AppendHeader(out, format, "process_start_time_seconds", MetricType::kGauge, "seconds",
                 "Start time of the process since unix epoch in seconds.");
    AppendSample(out, "process_start_time_seconds", "", "", process.start_unix_seconds);
  }
}

}  // namespace

Format NegotiateFormat(std::string_view accept) {
  return accept.find("application/openmetrics-text") != std::string_view::npos
             ? Format::kOpenMetrics
             : Format::kText;
}

std::string_view ContentType(Format format) {
  return format == Format::kOpenMetrics
             ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
             : "text/plain; version=0.0.4; charset=utf-8";
}

void AppendEscapedLabelValue(std::string* out, std::string_view value) {
  for (char c : value) {
    switch (c) {
      case '\\':
        *out += "\\\\";
        break;
      case '"':
        *out += "\\\"";
        break;
      case '\n':
        *out += "\\n";
        break;
      default:
        *out += c;
    }
  }
}

void AppendValue(std::string* out, double value) {
  if (std::isnan(value)) {
    *out += "NaN";
    return;
  }
  if (std::isinf(value)) {
    *out += value > 0 ? "+Inf" : "-Inf";
    return;
  }
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  if (ec != std::errc()) {
    *out += "NaN";
    return;
  }
  out->append(buffer, end);
}

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

void RenderStore(const StoreFigures& st, Format format, std::string* out) {
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
    AppendHeader(out, format, r.name, r.type, r.unit, r.help);
    AppendSample(out, r.name, "", "", r.value);
  }
}

void Render(const Snapshot& snapshot, Format format, const RenderOptions& options,
            const ProcessFigures& process, std::string* out) {
  RenderDevice(snapshot, format, options, out);
  RenderSelf(snapshot, format, options, process, out);
  if (format == Format::kOpenMetrics) *out += "# EOF\n";
}

std::string MetricsPage::Get(const Snapshot& snapshot, Format format) {
  std::string page;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Entry& e = cache_[format == Format::kOpenMetrics ? 1 : 0];
    if (e.generation != snapshot.generation) {
      e.body.clear();
      RenderDevice(snapshot, format, options_, &e.body);
      RenderSelf(snapshot, format, options_, ReadProcessFigures(), &e.body);
      e.generation = snapshot.generation;
    }
    page = e.body;
  }
  // The store moves on its own thread, between snapshots: its figures are always current.
  if (store_) RenderStore(store_(), format, &page);
  if (extra_) extra_(format, &page);
  if (format == Format::kOpenMetrics) page += "# EOF\n";
  return page;
}

}  // namespace gw::collect
