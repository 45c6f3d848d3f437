// k8s/pod_table.h — successive pod-resources answers turned into a job table with lifecycle
// events, the way jobs::SlurmJobTable does it for squeue: a pod holding GPUs is a job.
//
//   PodTable table({.resources = {"nvidia.com/gpu", "nvidia.com/mig-*"}, .node_name = "gpu-07"});
//   std::vector<jobs::JobEvent> events = table.Apply(pods, /*infos=*/nullptr, now_s, &warnings);
//   table.Failed("kubelet down", now_s);        // keeps the jobs, moves health only
//
// A job (jobs::SlurmJob) per pod holding at least one device of a GPU resource (`resources`:
// exact names, or globs with '*'):
//   id "namespace/pod"; source "kubernetes"; name = pod_name = the pod's name; account =
//   pod_namespace = its namespace; nodes = node_name; state RUNNING; devices = every GPU device
//   id of every container (with resource and container); gpu_indices left empty (the serve layer
//   resolves devices against the snapshot); start_time = the pod list's startTime, else the time
//   the pod was first seen holding GPUs; submit_time = creationTimestamp when known.
//   With a pod list (`infos`, PodInfo below): pod_uid, user (from options.user_label, else
//   options.user_annotation; else ""), and on the pod's end its final state.
// Events: kStarted when a pod first appears with GPUs (time = start_time); kFinished when it
// leaves the answer (time = now_s; state from the last pod list seen: Succeeded -> COMPLETED,
// Failed -> FAILED, a container terminated OOMKilled -> OUT_OF_MEMORY, Evicted/Preempting ->
// PREEMPTED, being deleted while running -> CANCELLED; without one: kOther, state_text "ENDED");
// its exit code is the first non-zero container exit code, else 0 when all exited. A pod whose
// device set changes is a new pod instance (devices are fixed for a pod's life): kFinished for
// the old, kStarted for the new; so is a pod the pod list shows with a new UID. A pod with no GPU
// devices is not a job (a pod that loses them all has ended as a job), nor is one the pod list
// calls Succeeded or Failed while the kubelet still lists its devices.
//
// Bad answers never throw and never abort: duplicate pods (same namespace/name) are merged, empty
// names skipped, devices with empty ids skipped, more than options.max_pods pods or
// options.max_devices devices -> the rest ignored; each kind of oddity adds one line to
// `warnings` per Apply (the poller logs each distinct line once).
//
// Threading: none; one owner (the poller).
#ifndef GPUWARDEN_K8S_POD_TABLE_H_
#define GPUWARDEN_K8S_POD_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "jobs/job.h"
#include "k8s/pod_resources.h"

namespace gw::k8s {

// One pod as the pod list (kubectl get pods -o json: a v1 PodList) describes it.
struct PodInfo {
  std::string ns, name, uid;
  std::map<std::string, std::string> labels, annotations;
  std::int64_t creation_time = 0;  // metadata.creationTimestamp, epoch seconds; 0 unknown
  std::int64_t start_time = 0;     // status.startTime
  std::string phase;               // Pending | Running | Succeeded | Failed | Unknown
  std::string reason;              // status.reason ("Evicted") or the first terminated
                                   // container's reason ("OOMKilled", "Error", "Completed")
  std::optional<int> exit_code;    // first non-zero terminated container exit code, else 0
  bool deleting = false;           // metadata.deletionTimestamp set
  std::string node_name;           // spec.nodeName
};

// Parses a v1 PodList (or a single v1 Pod) as JSON. Errors: not JSON, no "items" list (nor a
// Pod). Items without namespace or name are skipped. Times are RFC 3339 ("2026-12-02T03:04:05Z").
Expected<std::vector<PodInfo>> ParsePodListJson(std::string_view text);

struct PodTableOptions {
  std::vector<std::string> resources = {"nvidia.com/gpu", "nvidia.com/mig-*"};
  std::string node_name;        // SlurmJob::nodes of every pod
  std::string user_label;       // pod label naming the user ("" = none)
  std::string user_annotation;  // pod annotation naming the user, when the label is absent
  std::size_t max_pods = 10000;
  std::size_t max_devices = 100000;
};

// Whether `resource` is one of `patterns` (exact, or a glob where '*' matches any run).
bool ResourceMatches(const std::vector<std::string>& patterns, std::string_view resource);

class PodTable {
 public:
  explicit PodTable(PodTableOptions options = {});

  // One successful poll at `now_s`: the pod-resources answer and, when a pod list was read in the
  // same poll, its pods (nullptr: none). Returns the events, oldest first; `warnings` (may be
  // null) gets one line per kind of oddity in the answer.
  std::vector<jobs::JobEvent> Apply(const std::vector<PodResources>& pods,
                                    const std::vector<PodInfo>* infos, double now_s,
                                    std::vector<std::string>* warnings);
  // A failed poll: the jobs stay; only health moves.
  void Failed(const std::string& error, double now_s);

  // Running pods holding GPUs, by id "namespace/pod".
  const std::map<std::string, jobs::SlurmJob>& jobs() const { return jobs_; }
  const jobs::SlurmHealth& health() const { return health_; }
  // Moves whenever jobs() changed (a pod started or ended, or the pod list changed a running
  // pod's UID, user or creation time), never otherwise: a poll that found the node as it was
  // leaves it, so nothing downstream is rebuilt.
  std::uint64_t changes() const { return changes_; }

 private:
  PodTableOptions options_;
  std::uint64_t changes_ = 0;
  std::map<std::string, jobs::SlurmJob> jobs_;
  std::map<std::string, PodInfo> infos_;  // the last pod list's entries, by "namespace/pod"
  jobs::SlurmHealth health_;
};

}  // namespace gw::k8s

#endif  // GPUWARDEN_K8S_POD_TABLE_H_
