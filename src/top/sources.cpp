#include "top/sources.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "http/client.h"

namespace gw::top {

using nlohmann::json;

namespace {

// "gpu_clock_event_active{reason=\"sw_power_cap\"}" -> slot, as SnapshotJson names the metrics.
const std::unordered_map<std::string, collect::Slot>& SlotsByKey() {
  static const auto* const kMap = [] {
    auto* map = new std::unordered_map<std::string, collect::Slot>();
    for (size_t s = 0; s < collect::kSlotCount; ++s) {
      const collect::SlotInfo& info = collect::kSlots[s];
      std::string key(collect::kFamilies[static_cast<size_t>(info.family)].name);
      if (!info.labels.empty()) key += "{" + std::string(info.labels) + "}";
      (*map)[key] = static_cast<collect::Slot>(s);
    }
    return map;
  }();
  return *kMap;
}

collect::Severity SeverityOf(const std::string& name) {
  if (name == "critical") return collect::Severity::kCritical;
  if (name == "warning") return collect::Severity::kWarning;
  return collect::Severity::kInfo;
}

std::string JoinItem(const std::string& list, const std::string& item) {
  if (item.empty() || list == item || list.find(item + ",") == 0 ||
      list.find("," + item) != std::string::npos)
    return list;
  return list.empty() ? item : list + "," + item;
}

// The body of a 200 reply; `status` gets the HTTP status (0 when no reply came).
Expected<std::string> AgentBody(const std::string& base, const std::string& path, double timeout_s,
                                int* status) {
  *status = 0;
  auto reply = http::GetUrl(base + path, timeout_s);
  if (!reply.ok()) return Error{base + path + ": " + reply.error().message};
  *status = reply->status;
  if (reply->status != 200) return Error{base + path + ": HTTP " + std::to_string(reply->status)};
  return std::move(reply->body);
}

std::vector<collect::ProcessSample> ParseProcesses(const json& g) {
  std::vector<collect::ProcessSample> out;
  if (!g.contains("processes") || !g["processes"].is_array()) return out;
  for (const json& p : g["processes"]) {
    collect::ProcessSample s;
    s.pid = p.value("pid", 0u);
    s.memory_bytes = p.value("memory_bytes", collect::kAbsent);
    s.sm_utilization_ratio = p.value("sm_utilization_ratio", collect::kAbsent);
    s.gpu_instance_id = p.value("gpu_instance_id", collect::kNoMigInstance);
    s.host_cpu_ratio = p.value("host_cpu_ratio", collect::kAbsent);
    s.host_memory_bytes = p.value("host_memory_bytes", collect::kAbsent);
    collect::ProcessDetails d;
    d.name = p.value("name", std::string());
    d.user = p.value("user", std::string());
    d.command = p.value("command", std::string());
    d.job_id = p.value("job_id", std::string());
    if (!d.name.empty() || !d.user.empty() || !d.command.empty() || !d.job_id.empty())
      s.details = std::make_shared<const collect::ProcessDetails>(std::move(d));
    out.push_back(std::move(s));
  }
  return out;
}

// A MIG instance's profiling values that top shows, by the names SnapshotJson gives them.
constexpr std::pair<const char*, collect::Gpm> kMigShown[] = {
    {"gpu_mig_sm_active_ratio", collect::Gpm::kSmActive},
    {"gpu_mig_sm_occupancy_ratio", collect::Gpm::kSmOccupancy},
};

std::vector<collect::MigInstanceSnapshot> ParseMig(const json& g) {
  std::vector<collect::MigInstanceSnapshot> out;
  if (!g.contains("mig") || !g["mig"].is_array()) return out;
  for (const json& m : g["mig"]) {
    collect::MigInstanceSnapshot s;
    s.gpu_instance_id = m.value("gpu_instance_id", 0u);
    s.compute_instance_id = m.value("compute_instance_id", 0u);
    s.uuid = m.value("uuid", "");
    s.profile = m.value("profile", "");
    s.slice_ratio = m.value("slice_ratio", collect::kAbsent);
    s.memory_total_bytes = m.value("memory_total_bytes", collect::kAbsent);
    s.memory_used_bytes = m.value("memory_used_bytes", collect::kAbsent);
    s.memory_free_bytes = m.value("memory_free_bytes", collect::kAbsent);
    if (m.contains("metrics") && m["metrics"].is_object()) {
      for (const auto& [key, signal] : kMigShown)
        s.gpm[static_cast<size_t>(signal)] = m["metrics"].value(key, collect::kAbsent);
    }
    s.processes = ParseProcesses(m);
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<collect::NvLinkSnapshot> ParseNvLinks(const json& g) {
  std::vector<collect::NvLinkSnapshot> out;
  if (!g.contains("nvlinks") || !g["nvlinks"].is_array()) return out;
  for (const json& l : g["nvlinks"]) {
    collect::NvLinkSnapshot s;
    s.link = l.value("link", 0u);
    if (l.contains("up")) s.up = l["up"].get<bool>() ? 1 : 0;
    s.replay_errors = l.value("replay_errors", collect::kAbsent);
    s.recovery_errors = l.value("recovery_errors", collect::kAbsent);
    s.crc_errors = l.value("crc_errors", collect::kAbsent);
    s.tx_bytes_per_second = l.value("tx_bytes_per_second", collect::kAbsent);
    s.rx_bytes_per_second = l.value("rx_bytes_per_second", collect::kAbsent);
    out.push_back(s);
  }
  return out;
}

}  // namespace

Expected<std::shared_ptr<collect::Snapshot>> ParseSnapshotJson(
    std::string_view body, std::map<unsigned, std::vector<collect::HealthProblem>>* health) {
  json root = json::parse(body, nullptr, false);
  if (root.is_discarded() || !root.is_object() || !root.contains("gpus") ||
      !root["gpus"].is_array())
    return Error{"not a gpuwarden snapshot (expected an object with a \"gpus\" array)"};
  auto snap = std::make_shared<collect::Snapshot>();
  try {
    snap->taken_unix_seconds = root.value("taken_at", 0.0);
    snap->stats.nvml_up = root.value("nvml_up", false);
    snap->stats.nvml_error = root.value("nvml_error", "");
    snap->stats.driver_version = root.value("driver_version", "");
    snap->stats.nvml_version = root.value("nvml_version", "");
    snap->stats.cuda_driver_version = root.value("cuda_driver_version", "");
    const auto& slots = SlotsByKey();
    for (const json& g : root["gpus"]) {
      collect::GpuSnapshot gpu;
      gpu.values.fill(collect::kAbsent);
      gpu.identity.index = g.value("index", 0u);
      gpu.identity.uuid = g.value("uuid", "");
      gpu.identity.name = g.value("name", "");
      gpu.identity.serial = g.value("serial", "");
      gpu.identity.pci_bus_id = g.value("pci_bus_id", "");
      gpu.lost = g.value("lost", false);
      if (g.contains("metrics") && g["metrics"].is_object()) {
        for (const auto& item : g["metrics"].items()) {
          auto slot = slots.find(item.key());
          if (slot != slots.end() && item.value().is_number())
            gpu.values[static_cast<size_t>(slot->second)] = item.value().get<double>();
        }
      }
      if (g.contains("xid_counts") && g["xid_counts"].is_object()) {
        for (const auto& item : g["xid_counts"].items())
          gpu.xid_counts.emplace_back(static_cast<unsigned>(std::stoul(item.key())),
                                      item.value().get<uint64_t>());
        std::sort(gpu.xid_counts.begin(), gpu.xid_counts.end());
      }
      gpu.processes = ParseProcesses(g);
      gpu.gpm_supported = g.value("gpm_supported", false);
      gpu.mig = ParseMig(g);
      gpu.nvlinks = ParseNvLinks(g);
      if (health && g.contains("health") && g["health"].is_array()) {
        auto& problems = (*health)[gpu.identity.index];
        for (const json& h : g["health"])
          problems.push_back(
              {SeverityOf(h.value("severity", "")), h.value("problem", ""), h.value("action", "")});
      }
      snap->gpus.push_back(std::move(gpu));
    }
  } catch (const std::exception& e) {
    return Error{std::string("a snapshot field has the wrong type: ") + e.what()};
  }
  return snap;
}

Expected<std::vector<AlertView>> ParseAlertsJson(std::string_view body) {
  json root = json::parse(body, nullptr, false);
  if (root.is_discarded() || !root.is_object() || !root.contains("data") ||
      !root["data"].contains("alerts") || !root["data"]["alerts"].is_array())
    return Error{"not an alerts reply (expected {\"data\":{\"alerts\":[...]}})"};
  std::vector<AlertView> out;
  for (const json& a : root["data"]["alerts"]) {
    if (!a.is_object()) continue;
    AlertView v;
    v.state = a.value("state", "");
    if (v.state != "firing" && v.state != "pending") continue;
    if (a.contains("labels") && a["labels"].is_object()) {
      v.name = a["labels"].value("alertname", "");
      v.severity = a["labels"].value("severity", "");
      v.gpu = a["labels"].value("gpu", "");
    }
    if (a.contains("annotations") && a["annotations"].is_object())
      v.summary = a["annotations"].value("summary", "");
    out.push_back(std::move(v));
  }
  return out;
}

Expected<std::map<unsigned, GpuHolder>> ParseJobsJson(std::string_view body) {
  json root = json::parse(body, nullptr, false);
  if (root.is_discarded() || !root.is_object() || !root.contains("data") ||
      !root["data"].contains("jobs") || !root["data"]["jobs"].is_array())
    return Error{"not a jobs reply (expected {\"data\":{\"jobs\":[...]}})"};
  std::map<unsigned, GpuHolder> out;
  for (const json& j : root["data"]["jobs"]) {
    if (!j.is_object() || !j.contains("gpu") || !j["gpu"].is_object()) continue;
    const json& gpus = j["gpu"].value("gpus", json::array());
    if (!gpus.is_array()) continue;
    for (const json& index : gpus) {
      if (!index.is_number_unsigned()) continue;
      GpuHolder& h = out[index.get<unsigned>()];
      h.job = JoinItem(h.job, j.value("job_id", ""));
      h.team = JoinItem(h.team, j.value("team", ""));
      h.user = JoinItem(h.user, j.value("user", ""));
    }
  }
  return out;
}

Expected<QueueSummary> ParseQueueJson(std::string_view body) {
  json root = json::parse(body, nullptr, false);
  if (root.is_discarded() || !root.is_object() || !root.contains("data") ||
      !root["data"].is_object() || !root["data"].contains("jobs") ||
      !root["data"]["jobs"].is_array())
    return Error{"not a queue reply (expected {\"data\":{\"jobs\":[...]}})"};
  const json& data = root["data"];
  QueueSummary q;
  q.shown = data.value("known", false);
  q.up = data.value("up", false);
  if (!q.shown) return q;
  for (const json& j : data["jobs"]) {
    if (!j.is_object()) continue;
    ++q.jobs;
    const json wait = j.value("wait_s", json());
    if (wait.is_number()) q.longest_wait_s = std::max(q.longest_wait_s, wait.get<double>());
  }
  return q;
}

Expected<std::vector<ServiceView>> ParseServicesJson(std::string_view body) {
  json root = json::parse(body, nullptr, false);
  if (root.is_discarded() || !root.is_object() || !root.contains("data") ||
      !root["data"].is_object() || !root["data"].contains("services") ||
      !root["data"]["services"].is_array())
    return Error{"not a services reply (expected {\"data\":{\"services\":[...]}})"};
  const json& data = root["data"];
  const json currency = data.value("currency", json());
  std::vector<ServiceView> out;
  for (const json& s : data["services"]) {
    if (!s.is_object()) continue;
    ServiceView v;
    const json target = s.value("target", json());
    const json unit = s.value("output_unit", json());
    if (target.is_string()) v.target = target.get<std::string>();
    if (unit.is_string()) v.unit = unit.get<std::string>();
    if (currency.is_string()) v.currency = currency.get<std::string>();
    const json gpus = s.value("gpus", json());
    v.has_gpus = gpus.is_array() && !gpus.empty();
    v.outputs_known = s.value("outputs", json()).is_number();
    const json per_1k = s.value("cost_per_1k_outputs", json());
    if (per_1k.is_number()) v.cost_per_1k = per_1k.get<double>();
    const json window = s.value("window", json());
    if (window.is_object()) {
      const json seconds = window.value("seconds", json());
      const json outputs = window.value("outputs", json());
      if (seconds.is_number()) v.window_s = seconds.get<double>();
      if (outputs.is_number() && v.window_s > 0)
        v.outputs_per_s = outputs.get<double>() / v.window_s;
    }
    out.push_back(std::move(v));
  }
  return out;
}

LocalSource::LocalSource(std::unique_ptr<Collection> collection, LocalSettings settings)
    : collection_(std::move(collection)), settings_(std::move(settings)), teams_(settings_.teams) {}

Status LocalSource::Start(double advance_s) {
  if (Status s = collection_->Start(); !s.ok()) return s;
  if (!collection_->WaitForFirstCycle(60))
    return Status(Error{"no collection cycle completed within 60 s"});
  if (settings_.stepped && advance_s > 0) return collection_->Advance(advance_s, 300);
  return Status();
}

Expected<Reading> LocalSource::Read() {
  if (settings_.stepped && !first_ && settings_.step_s > 0) {
    if (Status s = collection_->Advance(settings_.step_s, 60); !s.ok()) return Error{s.message()};
  }
  first_ = false;
  Reading r;
  r.snapshot = collection_->Latest();
  r.alerts_note = "alerts are evaluated by a running agent: use --url http://HOST:9966";
  // Who holds each GPU: the processes NVML listed, attributed through /proc.
  std::vector<jobs::GpuProcessRef> refs;
  std::map<std::string, unsigned> index_of;
  for (const collect::GpuSnapshot& g : r.snapshot->gpus) {
    index_of[g.identity.uuid] = g.identity.index;
    for (const collect::ProcessSample& p : g.processes)
      refs.push_back({static_cast<pid_t>(p.pid), g.identity.uuid});
  }
  for (const jobs::GpuProcessRef& ref : refs) {
    auto a = attributor_.Attribute(ref.pid, ref.gpu_uuid);
    if (!a.ok()) continue;  // exited meanwhile, or a simulated pid with no process behind it
    if (!a->job_id.empty()) r.process_jobs[static_cast<unsigned>(ref.pid)] = a->job_id;
    GpuHolder& h = r.holders[index_of[ref.gpu_uuid]];
    h.job = JoinItem(h.job, a->job_id);
    h.user = JoinItem(h.user, a->user);
    if (!a->job_id.empty())
      h.team = JoinItem(h.team, teams_.TeamOf(a->slurm_account, a->user, a->gpuwarden_team));
  }
  return r;
}

std::string LocalSource::Describe() const {
  if (settings_.scenario.empty()) return "local NVML";
  return "simulated '" + settings_.scenario + "'" + (settings_.stepped ? " (stepped clock)" : "");
}

RemoteSource::RemoteSource(std::string url, double timeout_s)
    : url_(std::move(url)), timeout_s_(timeout_s) {
  while (!url_.empty() && url_.back() == '/') url_.pop_back();
}

Expected<Reading> RemoteSource::Read() {
  Reading r;
  int status = 0;
  auto snapshot = AgentBody(url_, "/api/snapshot", timeout_s_, &status);
  if (!snapshot.ok()) return snapshot.error();
  auto parsed = ParseSnapshotJson(*snapshot, &r.health);
  if (!parsed.ok()) return Error{url_ + "/api/snapshot: " + parsed.error().message};
  r.snapshot = std::move(*parsed);
  r.has_health = true;

  if (auto doc = AgentBody(url_, "/api/gw/v1/jobs?running=1", timeout_s_, &status); doc.ok()) {
    auto holders = ParseJobsJson(*doc);
    if (holders.ok())
      r.holders = std::move(*holders);
    else
      r.jobs_note = holders.error().message;
  } else {
    r.jobs_note = status == 404 ? "this agent has no jobs API" : doc.error().message;
  }
  // The queue is a header figure: an agent without it (or without Slurm) shows none.
  if (auto doc = AgentBody(url_, "/api/gw/v1/queue", timeout_s_, &status); doc.ok()) {
    if (auto queue = ParseQueueJson(*doc); queue.ok()) r.queue = *queue;
  }
  // Services are header lines too: an agent without any (or without the API) shows none.
  if (auto doc = AgentBody(url_, "/api/gw/v1/services", timeout_s_, &status); doc.ok()) {
    if (auto services = ParseServicesJson(*doc); services.ok()) r.services = std::move(*services);
  }
  if (auto doc = AgentBody(url_, "/api/v1/alerts", timeout_s_, &status); doc.ok()) {
    auto alerts = ParseAlertsJson(*doc);
    if (alerts.ok())
      r.alerts = std::move(*alerts);
    else
      r.alerts_note = alerts.error().message;
  } else {
    r.alerts_note = status == 404 ? "this agent has no alerts API" : doc.error().message;
  }
  return r;
}

}  // namespace gw::top
