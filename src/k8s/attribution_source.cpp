// GPU processes matched to pods (k8s/attribution_source.h): by the pod UID of their cgroup, through
// the pod list or, failing that, through the one pod that holds their GPU.
#include "k8s/attribution_source.h"

#include <utility>

namespace gw::k8s {

void PodAttributionSource::Set(std::shared_ptr<const PodIndex> index) {
  index_ = std::move(index);
  if (!index_) return;
  // Forget learned UIDs whose pod no longer holds any device (ended, or replaced): a UID names
  // one pod instance, and a pod that is gone cannot claim processes any more.
  for (auto it = learned_uids_.begin(); it != learned_uids_.end();) {
    bool held = false;
    for (const auto& [device, pods] : index_->by_device) {
      for (const PodRef& pod : pods) held = held || pod == it->second;
      if (held) break;
    }
    it = held ? std::next(it) : learned_uids_.erase(it);
  }
}

void PodAttributionSource::Refine(const std::string& gpu_uuid, jobs::ProcessAttribution* process) {
  if (!index_ || process->pod_uid.empty()) return;  // outside any pod: never claimed
  const PodRef* pod = nullptr;
  if (auto it = index_->by_uid.find(process->pod_uid); it != index_->by_uid.end()) {
    pod = &it->second;
  } else if (auto learned = learned_uids_.find(process->pod_uid); learned != learned_uids_.end()) {
    pod = &learned->second;
  } else if (!gpu_uuid.empty()) {
    auto holders = index_->by_device.find(gpu_uuid);
    if (holders == index_->by_device.end() || holders->second.size() != 1) return;
    pod = &learned_uids_.emplace(process->pod_uid, holders->second.front()).first->second;
  }
  if (!pod) return;
  process->pod_namespace = pod->ns;
  process->pod_name = pod->name;
  process->job_id = pod->JobId();
  process->job_source = Name();
}

}  // namespace gw::k8s
