#include "serve/snapshot_json.h"

#include <nlohmann/json.hpp>

#include "collect/health.h"

namespace gw::serve {

using collect::Gpm;
using collect::GpuSnapshot;
using collect::IsAbsent;
using collect::Slot;
using nlohmann::json;

namespace {

// "gpu_clock_event_active{reason=\"sw_power_cap\"}": a slot's family name and extra labels, the
// key of "metrics" (and, with gpu_mig_ for gpu_, of a MIG instance's "metrics").
std::string SlotKey(Slot slot) {
  const auto& info = collect::kSlots[static_cast<size_t>(slot)];
  std::string key(collect::kFamilies[static_cast<size_t>(info.family)].name);
  if (!info.labels.empty()) key += "{" + std::string(info.labels) + "}";
  return key;
}

// The GPM signals a MIG instance has families for (gpu_mig_*, docs/metrics.md): every one but the
// PCIe and NVLink rates, which are the whole GPU's.
bool MigHasFamily(Gpm g) {
  return g != Gpm::kPcieTxPerSecond && g != Gpm::kPcieRxPerSecond && g != Gpm::kNvlinkTxPerSecond &&
         g != Gpm::kNvlinkRxPerSecond;
}

// `value` under `key`, unless it is absent (absent values are left out, never 0).
void PutPresent(json& j, const char* key, double value) {
  if (!IsAbsent(value)) j[key] = value;
}

json Processes(const std::vector<collect::ProcessSample>& processes,
               const std::map<unsigned, std::string>* job_of_pid) {
  json procs = json::array();
  for (const auto& p : processes) {
    json pj;
    pj["pid"] = p.pid;
    PutPresent(pj, "memory_bytes", p.memory_bytes);
    PutPresent(pj, "sm_utilization_ratio", p.sm_utilization_ratio);
    if (p.gpu_instance_id != collect::kNoMigInstance) pj["gpu_instance_id"] = p.gpu_instance_id;
    if (p.details) {
      if (!p.details->name.empty()) pj["name"] = p.details->name;
      if (!p.details->user.empty()) pj["user"] = p.details->user;
      if (!p.details->command.empty()) pj["command"] = p.details->command;
    }
    PutPresent(pj, "host_cpu_ratio", p.host_cpu_ratio);
    PutPresent(pj, "host_memory_bytes", p.host_memory_bytes);
    std::string_view job = p.details ? std::string_view(p.details->job_id) : std::string_view();
    if (job_of_pid != nullptr)
      if (auto it = job_of_pid->find(p.pid); it != job_of_pid->end()) job = it->second;
    if (!job.empty()) pj["job_id"] = job;
    procs.push_back(std::move(pj));
  }
  return procs;
}

json MigInstance(const collect::MigInstanceSnapshot& m,
                 const std::map<unsigned, std::string>* job_of_pid) {
  json j;
  j["gpu_instance_id"] = m.gpu_instance_id;
  j["compute_instance_id"] = m.compute_instance_id;
  j["uuid"] = m.uuid;
  j["profile"] = m.profile;
  PutPresent(j, "slice_ratio", m.slice_ratio);
  PutPresent(j, "memory_total_bytes", m.memory_total_bytes);
  PutPresent(j, "memory_used_bytes", m.memory_used_bytes);
  PutPresent(j, "memory_free_bytes", m.memory_free_bytes);
  json metrics = json::object();
  for (size_t i = 0; i < collect::kGpmCount; ++i) {
    const Gpm signal = static_cast<Gpm>(i);
    const double v = m.value(signal);
    if (MigHasFamily(signal) && !IsAbsent(v))
      metrics["gpu_mig_" + SlotKey(collect::GpmSlot(signal)).substr(4)] = v;
  }
  j["metrics"] = std::move(metrics);
  j["processes"] = Processes(m.processes, job_of_pid);
  return j;
}

json NvLink(const collect::NvLinkSnapshot& l) {
  json j;
  j["link"] = l.link;
  if (!IsAbsent(l.up)) j["up"] = l.up == 1;
  PutPresent(j, "replay_errors", l.replay_errors);
  PutPresent(j, "recovery_errors", l.recovery_errors);
  PutPresent(j, "crc_errors", l.crc_errors);
  PutPresent(j, "tx_bytes_per_second", l.tx_bytes_per_second);
  PutPresent(j, "rx_bytes_per_second", l.rx_bytes_per_second);
  return j;
}

}  // namespace

std::string SnapshotJson(const collect::Snapshot& snap,
                         const std::map<unsigned, std::string>* job_of_pid) {
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
    j["gpm_supported"] = g.gpm_supported;
    // Every present slot under its metric name (plus its extra labels, if any).
    json metrics = json::object();
    for (size_t s = 0; s < collect::kSlotCount; ++s) {
      double v = g.values[s];
      if (IsAbsent(v)) continue;
      metrics[SlotKey(static_cast<Slot>(s))] = v;
    }
    j["metrics"] = metrics;
    j["throttle_reasons"] = collect::ThrottleReasons(g);
    json xids = json::object();
    for (const auto& [xid, count] : g.xid_counts) xids[std::to_string(xid)] = count;
    j["xid_counts"] = xids;
    j["processes"] = Processes(g.processes, job_of_pid);
    json mig = json::array();
    for (const auto& m : g.mig) mig.push_back(MigInstance(m, job_of_pid));
    j["mig"] = std::move(mig);
    json links = json::array();
    for (const auto& l : g.nvlinks) links.push_back(NvLink(l));
    j["nvlinks"] = std::move(links);
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
