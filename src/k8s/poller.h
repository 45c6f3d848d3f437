// k8s/poller.h — the Kubernetes job source: polls the kubelet's pod-resources API (and, when
// configured, a pod list) on its own thread and keeps a PodTable (k8s/pod_table.h).
//
//   KubernetesPoller poller(options, MakeGrpcPodResourcesApi(socket), &logger);
//   poller.Start();                       // first poll right away, then every interval_s
//   poller.Jobs(); poller.TakeEvents();   // jobs::JobSource, from any thread
//   std::shared_ptr<const PodIndex> index = poller.Index();   // for attribution
//
// Each poll: List (deadline timeout_s); GetAllocatableResources (same deadline; UNIMPLEMENTED is
// remembered and not asked again); then, if `pod_list_command` is set, that command (argv, no
// shell; "{node}" in an argument is replaced by table.node_name) run with a timeout, its stdout
// parsed by ParsePodListJson. A failed List is a failed poll (PodTable::Failed: jobs kept). A
// failed pod list is not: the poll goes on without it (pod_list_up 0, its error logged once).
//
// Logging: the first failure logs one warning with the error and what happens meanwhile ("the
// agent keeps collecting; jobs as of <time> are kept; retrying every Ns"); further failures log
// nothing until it recovers, which logs one info line with how long it was down. Each distinct
// warning line of PodTable::Apply is logged once (at most 100 distinct lines are remembered).
//
// Threading: Start/Stop from the owner; everything else from any thread (one mutex; the gRPC
// call and the pod-list command run without it).
#ifndef GPUWARDEN_K8S_POLLER_H_
#define GPUWARDEN_K8S_POLLER_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "base/periodic_thread.h"
#include "jobs/job_source.h"
#include "k8s/attribution_source.h"
#include "k8s/pod_resources.h"
#include "k8s/pod_table.h"

namespace gw::k8s {

struct KubernetesPollerOptions {
  PodTableOptions table;
  double interval_s = 10;
  double timeout_s = 5;
  std::vector<std::string> pod_list_command;  // empty: no pod list
  std::vector<std::string> pod_list_env;      // extra environment for it ("KUBECONFIG=...")
  std::size_t max_queued_events = 100000;     // TakeEvents' queue; beyond it the oldest go
};

// What the poller knows beyond jobs: for /metrics (serve/jobs_metrics.cpp).
struct KubernetesStatus {
  std::string endpoint;                       // PodResourcesApi::Endpoint
  bool allocatable_known = false;             // GetAllocatableResources answered at least once
  std::map<std::string, double> allocatable;  // resource -> devices the node offers (GPU ones)
  std::map<std::string, double> allocated;    // resource -> devices held by pods (GPU ones)
  bool pod_list_configured = false;
  bool pod_list_up = false;
  std::uint64_t pod_list_failures_total = 0;
  std::uint64_t answer_warnings_total = 0;  // warning lines PodTable::Apply produced
  std::set<std::string> allocatable_ids;    // GPU device ids the node offers
};

class KubernetesPoller : public jobs::JobSource {
 public:
  // `api`: where pod resources come from (the gRPC client, or a fake in tests). `logger` and
  // `clock` must outlive the poller; `clock` dates polls and events.
  KubernetesPoller(KubernetesPollerOptions options, std::unique_ptr<PodResourcesApi> api,
                   Logger* logger, const Clock* clock = &SystemClock());
  ~KubernetesPoller() override;
  KubernetesPoller(const KubernetesPoller&) = delete;
  KubernetesPoller& operator=(const KubernetesPoller&) = delete;

  std::string Name() const override { return "kubernetes"; }
  void Start() override;
  void Stop() override;
  // One poll on the calling thread (tests; Start's thread).
  void PollOnce();

  std::map<std::string, jobs::SlurmJob> Jobs() const override;
  std::uint64_t JobsVersion() const override;
  jobs::SlurmHealth Health() const override;
  std::vector<jobs::SlurmJob> PendingJobs(jobs::SlurmHealth* health) const override;  // none
  std::vector<jobs::JobEvent> TakeEvents() override;

  KubernetesStatus Status() const;
  // Device id -> pods, pod UID -> pod, as of the last successful poll (never null; immutable, so
  // a reader keeps it as long as it likes). Replaced with each successful poll.
  std::shared_ptr<const PodIndex> Index() const;

 private:
  KubernetesPollerOptions options_;
  std::unique_ptr<PodResourcesApi> api_;
  Logger* log_;
  const Clock* clock_;
  mutable std::mutex mu_;
  PodTable table_;
  std::vector<jobs::JobEvent> events_;
  std::uint64_t version_ = 0;
  KubernetesStatus status_;
  std::shared_ptr<const PodIndex> index_;
  bool allocatable_unimplemented_ = false;
  bool allocatable_failure_logged_ = false;  // until GetAllocatableResources answers again
  bool down_logged_ = false;
  double down_since_s_ = 0;            // clock time of the first failed poll of this outage
  bool pod_list_down_logged_ = false;  // the pod list's failure was logged; recovery not yet
  std::set<std::string> warned_;
  PeriodicThread thread_;  // runs PollOnce every interval_s
};

}  // namespace gw::k8s

#endif  // GPUWARDEN_K8S_POLLER_H_
