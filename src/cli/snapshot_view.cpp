#include "cli/snapshot_view.h"

#include <cmath>
#include <cstdio>
#include <ctime>

#include "collect/health.h"

namespace gw::cli {

using collect::GpuSnapshot;
using collect::IsAbsent;
using collect::Slot;

namespace {

std::string Fmt(const char* format, double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, v);
  return buffer;
}

// "-" for an absent value, else the formatted value.
std::string Or(double v, const char* format, double scale = 1) {
  return IsAbsent(v) ? "-" : Fmt(format, v * scale);
}

std::string Throttle(const GpuSnapshot& gpu) {
  auto reasons = collect::ThrottleReasons(gpu);
  if (reasons.empty()) return gpu.value(Slot::kEventGpuIdle) == 1 ? "idle" : "none";
  std::string out;
  for (size_t i = 0; i < reasons.size(); ++i) out += (i ? ", " : "") + reasons[i];
  return out;
}

// The lines under a GPU's row: MIG mode and one line per MIG instance, then its NVLink links.
std::string Datacenter(const GpuSnapshot& g) {
  constexpr double kGiB = 1.0 / (1024.0 * 1024 * 1024);
  std::string out;
  const double current = g.value(Slot::kMigEnabledCurrent);
  const double pending = g.value(Slot::kMigEnabledPending);
  if (current == 1 || pending == 1) {
    out += "     MIG " + std::string(current == 1 ? "on" : "off");
    if (!IsAbsent(pending) && (pending == 1) != (current == 1))
      out += pending == 1 ? ", on after the next GPU reset" : ", off after the next GPU reset";
    out += "\n";
  }
  for (const collect::MigInstanceSnapshot& m : g.mig) {
    out += "     mig " + PadRight(std::to_string(m.gpu_instance_id), 4) + PadRight(m.profile, 9) +
           "mem " +
           PadRight(Or(m.memory_used_bytes, "%.1f", kGiB) + "/" +
                        Or(m.memory_total_bytes, "%.1f", kGiB) + " GiB",
                    16) +
           "sm act " + PadRight(Or(m.value(collect::Gpm::kSmActive), "%.0f%%", 100), 6) + "procs " +
           std::to_string(m.processes.size()) + "  " + m.uuid + "\n";
  }
  if (!g.nvlinks.empty()) {
    size_t up = 0;
    std::string down;
    for (const collect::NvLinkSnapshot& l : g.nvlinks) {
      up += l.up == 1;
      if (l.up == 0) down += (down.empty() ? "" : ", ") + std::to_string(l.link);
    }
    out += "     NVLink " + std::to_string(up) + "/" + std::to_string(g.nvlinks.size()) + " up";
    if (!down.empty()) out += ", down: " + down;
    double errors = 0;
    bool any = false;
    for (Slot s : {Slot::kNvlinkReplayErrors, Slot::kNvlinkRecoveryErrors,
                   Slot::kNvlinkCrcFlitErrors, Slot::kNvlinkCrcDataErrors}) {
      if (IsAbsent(g.value(s))) continue;
      errors += g.value(s);
      any = true;
    }
    if (any) out += ", errors " + Fmt("%.0f", errors);
    out += "\n";
  }
  return out;
}

}  // namespace

std::string SnapshotTable(const collect::Snapshot& snap) {
  const collect::CollectorStats& st = snap.stats;
  std::string out;
  if (!st.nvml_up) {
    out += "no GPUs: " + st.nvml_error + "\n";
    return out;
  }
  out += std::to_string(snap.gpus.size()) + " GPU(s), driver " + st.driver_version + ", NVML " +
         st.nvml_version +
         (st.cuda_driver_version.empty() ? "" : ", CUDA " + st.cuda_driver_version) + ", at " +
         UtcTimestamp(snap.taken_unix_seconds) + "\n\n";
  out +=
      "GPU  NAME                         UTIL  SM ACT  MEM USED/TOTAL GiB  TEMP   POWER/LIMIT W  "
      "SM MHz  PSTATE  THROTTLE\n";
  constexpr double kGiB = 1.0 / (1024.0 * 1024 * 1024);
  for (const GpuSnapshot& g : snap.gpus) {
    std::string line =
        PadRight(std::to_string(g.identity.index), 5) + PadRight(g.identity.name.substr(0, 28), 29);
    if (g.lost) {
      out += line + "LOST (fell off the bus)\n";
      continue;
    }
    line += PadRight(Or(g.value(Slot::kUtilization), "%.0f%%", 100), 6);
    line += PadRight(Or(g.value(Slot::kSmActive), "%.0f%%", 100), 8);
    line += PadRight(Or(g.value(Slot::kMemoryUsed), "%.1f", kGiB) + "/" +
                         Or(g.value(Slot::kMemoryTotal), "%.1f", kGiB),
                     20);
    line += PadRight(Or(g.value(Slot::kTemperature), "%.0fC"), 7);
    line += PadRight(
        Or(g.value(Slot::kPower), "%.0f") + "/" + Or(g.value(Slot::kPowerLimit), "%.0f"), 15);
    line += PadRight(Or(g.value(Slot::kSmClock), "%.0f", 1e-6), 8);
    double ps = g.value(Slot::kPerformanceState);
    line += PadRight(IsAbsent(ps) ? "-" : "P" + Fmt("%.0f", ps), 8);
    line += Throttle(g);
    out += line + "\n";
    out += Datacenter(g);
  }
  bool any = false;
  for (const GpuSnapshot& g : snap.gpus) {
    auto problems = collect::HealthProblems(g);
    if (problems.empty()) continue;
    if (!any) out += "\nHealth:\n";
    any = true;
    out += "  GPU " + std::to_string(g.identity.index) + " (" + g.identity.uuid + ")\n";
    for (const auto& p : problems) {
      out += "    [" + std::string(collect::SeverityName(p.severity)) + "] " + p.what;
      if (!p.action.empty()) out += " -> " + p.action;
      out += "\n";
    }
  }
  if (!any) out += "\nHealth: no problems found.\n";
  return out;
}

std::string UtcTimestamp(double unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%d %H:%M:%SZ", &tm);
  return buffer;
}

std::string PadRight(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

}  // namespace gw::cli
