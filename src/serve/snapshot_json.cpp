#include "serve/snapshot_json.h"

#include <nlohmann/json.hpp>

#include "collect/health.h"

namespace gw::serve {

using collect::GpuSnapshot;
using collect::IsAbsent;
using collect::Slot;

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

}  // namespace gw::serve
