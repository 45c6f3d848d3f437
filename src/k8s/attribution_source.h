// k8s/attribution_source.h — GPU processes found in /proc matched to the pods the kubelet says
// hold their GPUs (jobs::AttributionSource).
//
//   auto source = std::make_unique<PodAttributionSource>();
//   PodAttributionSource* pods = source.get();
//   attributor.AddSource(std::move(source));
//   pods->Set(poller.Index());          // whenever the poller's JobsVersion moved (same thread
//                                       // as the attribution passes)
//
// Refine(gpu_uuid, process), for a process whose cgroup names a pod UID (jobs/cgroup.h; a process
// outside any pod is never claimed):
//   1. the pod list knows that UID -> that pod;
//   2. else exactly one pod holds the process' GPU (gpu_uuid among its device ids) -> that pod,
//      and the UID is remembered for that pod (so its other processes, e.g. on a MIG instance
//      the kubelet named by MIG UUID, follow);
//   3. else (no pod, or several pods share that GPU's MIG instances) -> unchanged.
// A claimed process gets pod_namespace, pod_name, job_id "namespace/pod" and job_source
// "kubernetes" — the job id of the pod's job (k8s/pod_table.h), so the task layer joins them.
//
// Threading: Set and Refine on one thread (the attribution pass's); the index is immutable.
#ifndef GPUWARDEN_K8S_ATTRIBUTION_SOURCE_H_
#define GPUWARDEN_K8S_ATTRIBUTION_SOURCE_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "jobs/attribution.h"

namespace gw::k8s {

struct PodRef {
  std::string ns, name;
  std::string JobId() const { return ns + "/" + name; }
  bool operator==(const PodRef&) const = default;
};

// Built by the poller from its table after each successful poll.
struct PodIndex {
  std::map<std::string, std::vector<PodRef>> by_device;  // device id -> pods holding it
  std::map<std::string, PodRef> by_uid;                  // pod UID (pod list) -> pod
};

class PodAttributionSource : public jobs::AttributionSource {
 public:
  std::string Name() const override { return "kubernetes"; }
  void Set(std::shared_ptr<const PodIndex> index);
  void Refine(const std::string& gpu_uuid, jobs::ProcessAttribution* process) override;

 private:
  std::shared_ptr<const PodIndex> index_;
  std::map<std::string, PodRef> learned_uids_;  // UIDs matched through rule 2
};

}  // namespace gw::k8s

#endif  // GPUWARDEN_K8S_ATTRIBUTION_SOURCE_H_
