#include "cli/snapshot_view.h"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

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
      "GPU  NAME                         UTIL  MEM USED/TOTAL GiB  TEMP   POWER/LIMIT W  "
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

std::string SnapshotJson(const collect::Snapshot& snap) {
  using nlohmann::json;
  const collect::CollectorStats& st = snap.stats;
  json root;
  root["nvml_up"] = st.nvml_up;
  if (!st.nvml_up) root["nvml_error"] = st.nvml_error;
  root["taken_at"] = snap.taken_unix_seconds;
  root["driver_version"] = st.driver_version;
  root["nvml_version"] = st.nvml_version;
  root["cuda_driver_version"] = st.cuda_driver_version;
  json gpus = json::array();
  for (const GpuSnapshot& g : snap.gpus) {
    json j;
    j["index"] = g.identity.index;
    j["uuid"] = g.identity.uuid;
    j["name"] = g.identity.name;
    j["serial"] = g.identity.serial;
    j["pci_bus_id"] = g.identity.pci_bus_id;
    j["up"] = g.value(Slot::kUp) == 1;
    j["lost"] = g.lost;
    // Every present slot under its metric name (plus its extra labels, if any).
    json metrics = json::object();
    for (size_t s = 0; s < collect::kSlotCount; ++s) {
      double v = g.values[s];
      if (IsAbsent(v)) continue;
      const auto& info = collect::kSlots[s];
      std::string key(collect::kFamilies[static_cast<size_t>(info.family)].name);
      if (!info.labels.empty()) key += "{" + std::string(info.labels) + "}";
      metrics[key] = v;
    }
    j["metrics"] = metrics;
    j["throttle_reasons"] = collect::ThrottleReasons(g);
    json xids = json::object();
    for (const auto& [xid, count] : g.xid_counts) xids[std::to_string(xid)] = count;
    j["xid_counts"] = xids;
    json procs = json::array();
    for (const auto& p : g.processes) {
      json pj;
      pj["pid"] = p.pid;
      if (!IsAbsent(p.memory_bytes)) pj["memory_bytes"] = p.memory_bytes;
      if (!IsAbsent(p.sm_utilization_ratio)) pj["sm_utilization_ratio"] = p.sm_utilization_ratio;
      procs.push_back(pj);
    }
    j["processes"] = procs;
    json health = json::array();
    for (const auto& p : collect::HealthProblems(g))
      health.push_back({{"severity", collect::SeverityName(p.severity)},
                        {"problem", p.what},
                        {"action", p.action}});
    j["health"] = health;
    gpus.push_back(j);
  }
  root["gpus"] = gpus;
  return root.dump(2) + "\n";
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
