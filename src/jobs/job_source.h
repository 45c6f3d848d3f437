// jobs/job_source.h — a scheduler as the task layer sees it: a table of jobs polled on its own
// thread, lifecycle events, and the health of the polling. Two implement it: Slurm
// (jobs/slurm.h, SlurmPoller: squeue --json) and Kubernetes (k8s/poller.h, KubernetesPoller: the
// kubelet's pod-resources API, a pod holding GPUs being a job).
//
//   std::unique_ptr<JobSource> source = ...;   // serve/jobs_service.cpp picks by jobs.scheduler
//   source->Start();                           // polls on its own thread from now on
//   for (JobEvent& e : source->TakeEvents()) ...         // the recorder's thread, each snapshot
//   if (source->JobsVersion() != seen) jobs = source->Jobs();
//
// Jobs are `SlurmJob` values whatever the scheduler (the name is historical): a Kubernetes pod
// has id "namespace/pod", source "kubernetes", account = its namespace, and its devices by id
// (SlurmJob::devices) for the serve layer to resolve into GPU units against the snapshot.
//
// Threading: every method may be called from any thread; none blocks on the scheduler (a poll
// in flight holds no lock the readers need). Errors: a failed poll keeps the last known jobs and
// moves only Health().
#ifndef GPUWARDEN_JOBS_JOB_SOURCE_H_
#define GPUWARDEN_JOBS_JOB_SOURCE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "jobs/job.h"

namespace gw::jobs {

class JobSource {
 public:
  virtual ~JobSource() = default;
  // "slurm" or "kubernetes": the prefix of the source's self-metrics (gpuwarden_<name>_up, ...)
  // and of its log lines.
  virtual std::string Name() const = 0;
  virtual void Start() = 0;  // first poll right away, then every interval
  virtual void Stop() = 0;   // joins the thread; idempotent
  // The jobs as last known (SlurmJob::id -> job).
  virtual std::map<std::string, SlurmJob> Jobs() const = 0;
  // Moves with a successful poll that may have changed Jobs() (Kubernetes: only one that did),
  // never otherwise.
  virtual std::uint64_t JobsVersion() const = 0;
  virtual SlurmHealth Health() const = 0;
  // Pending jobs of the last successful poll and the health as of then (Kubernetes: none; the
  // kubelet lists admitted pods only).
  virtual std::vector<SlurmJob> PendingJobs(SlurmHealth* health) const = 0;
  // Events since the last call, oldest first (bounded: the oldest are dropped).
  virtual std::vector<JobEvent> TakeEvents() = 0;
};

}  // namespace gw::jobs

#endif  // GPUWARDEN_JOBS_JOB_SOURCE_H_
