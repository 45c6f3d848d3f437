// The task layer's Kubernetes part (serve/jobs_service.h, "Kubernetes"): the kubelet's device ids
// resolved into this node's GPU units, and the device -> pod map of dcgm-exporter mode.
#include <functional>

#include "jobs/gpu_unit.h"
#include "k8s/pod_resources.h"
#include "serve/jobs_service.h"

namespace gw::serve {

namespace {

// Device ids remembered as logged: beyond this many distinct ones, further ones are not logged.
constexpr std::size_t kUnknownLogged = 1000;

}  // namespace

bool JobsService::NoteLayout(const collect::Snapshot& snapshot) {
  // A hash of every GPU's index and UUID and every MIG instance's id and UUID: no allocation, so
  // it runs every snapshot; the table is rebuilt only when it moves.
  std::size_t h = snapshot.gpus.size();
  auto mix = [&h](std::size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  const std::hash<std::string_view> text;
  for (const collect::GpuSnapshot& gpu : snapshot.gpus) {
    mix(gpu.identity.index);
    mix(text(gpu.identity.uuid));
    for (const collect::MigInstanceSnapshot& m : gpu.mig) {
      mix(m.gpu_instance_id);
      mix(text(m.uuid));
    }
  }
  h |= 1;  // never 0, the value before the first snapshot
  if (h == layout_hash_) return false;
  layout_hash_ = h;
  device_units_.clear();
  for (const collect::GpuSnapshot& gpu : snapshot.gpus) {
    const unsigned index = gpu.identity.index;
    if (!gpu.identity.uuid.empty()) device_units_[gpu.identity.uuid] = index;
    device_units_[std::to_string(index)] = index;
    for (const collect::MigInstanceSnapshot& m : gpu.mig)
      if (!m.uuid.empty()) device_units_[m.uuid] = jobs::MigUnit(index, m.gpu_instance_id);
  }
  return true;
}

std::map<std::string, unsigned, std::less<>>::const_iterator JobsService::FindDeviceUnit(
    std::string_view id) const {
  auto it = device_units_.find(id);
  // A replica of a time-sliced GPU ("GPU-…::3") is that GPU (k8s::DeviceBaseId).
  if (it == device_units_.end()) it = device_units_.find(k8s::DeviceBaseId(id));
  return it;
}

std::vector<unsigned> JobsService::ResolveDevices(
    const jobs::SlurmJob& job, std::vector<const jobs::SlurmJob::Device*>* unknown) const {
  std::vector<unsigned> units;
  for (const jobs::SlurmJob::Device& d : job.devices) {
    auto it = FindDeviceUnit(d.id);
    if (it == device_units_.end()) {
      if (unknown) unknown->push_back(&d);
      continue;
    }
    if (std::find(units.begin(), units.end(), it->second) == units.end())
      units.push_back(it->second);
  }
  return units;
}

void JobsService::ResolveKubernetesJobs() {
  slurm_allocations_.clear();
  containers_.clear();
  unknown_devices_.clear();
  std::vector<const jobs::SlurmJob::Device*> unknown;
  for (const auto& [id, job] : kubernetes_jobs_) {
    // A pod that held nothing resolvable had its meta dropped with its last unit (NoteEndedJobs).
    if (!meta_.count(id)) NoteMeta(id, job);
    unknown.clear();
    for (const jobs::SlurmJob::Device& d : job.devices) {
      auto it = FindDeviceUnit(d.id);
      if (it == device_units_.end()) {
        unknown.push_back(&d);
        continue;
      }
      slurm_allocations_[it->second].insert(id);
      if (!d.container.empty()) containers_[it->second][id] = d.container;
    }
    for (const jobs::SlurmJob::Device* d : unknown) {
      unknown_devices_.insert(d->id);
      if (unknown_logged_.size() >= kUnknownLogged || !unknown_logged_.insert(d->id).second)
        continue;
      log_->Warn("kubernetes: device '" + d->id + "' (" + d->resource + ") of pod " + id +
                 " matches no GPU UUID, MIG UUID or GPU index of this node; the pod's figures "
                 "leave it out (counted in gpuwarden_kubernetes_unknown_devices)");
    }
  }
}

void JobsService::StartResolvedPods() {
  for (const auto& [id, job] : kubernetes_jobs_) {
    jobs::JobEvent e{jobs::JobEventKind::kStarted, id, job.start_time, job.state, job};
    e.job.gpu_indices = ResolveDevices(job, nullptr);
    // JobLedger::OnEvent begins statistics once per job: a pod already counted stays as it is.
    if (!e.job.gpu_indices.empty()) (void)ledger_->OnEvent(e);
  }
}

void JobsService::RebuildDevicePods() {
  auto pods = std::make_shared<DevicePods>();
  for (const auto& [unit, keys] : allocations_) {
    auto ids = gpu_ids_.find(unit);
    if (ids == gpu_ids_.end()) continue;
    const std::string& uuid = jobs::IsMigUnit(unit) ? ids->second.mig_uuid : ids->second.uuid;
    if (uuid.empty()) continue;
    for (const std::string& key : keys) {
      auto m = meta_.find(key);
      if (m == meta_.end() || m->second.source != "kubernetes") continue;
      DevicePod pod{m->second.pod_name, m->second.pod_namespace, ""};
      if (auto c = containers_.find(unit); c != containers_.end())
        if (auto k = c->second.find(key); k != c->second.end()) pod.container = k->second;
      pods->emplace(uuid, std::move(pod));  // a unit shared by pods: the first
      break;
    }
  }
  std::lock_guard<std::mutex> lock(device_pods_mu_);
  device_pods_ = std::move(pods);
}

bool JobsService::PodOfDevice(std::string_view uuid, collect::DcgmPodLabels* out) const {
  // Kept per thread until its next call, so the views handed out outlive a concurrent rebuild.
  thread_local std::shared_ptr<const DevicePods> keep;
  {
    std::lock_guard<std::mutex> lock(device_pods_mu_);
    keep = device_pods_;
  }
  if (!keep) return false;
  auto it = keep->find(uuid);
  if (it == keep->end()) return false;
  out->pod = it->second.pod;
  out->pod_namespace = it->second.pod_namespace;
  out->container = it->second.container;
  return true;
}

}  // namespace gw::serve
