// serve/queue_api.h — GET /api/gw/v1/queue: the jobs waiting in the scheduler's queue, from the
// job source's last successful poll (jobs/job_source.h, jobs/queue.h; Slurm's squeue — the
// kubelet lists admitted pods only, so with Kubernetes the queue is known and empty). No Slurm call
// and no disk read on the request path: each poll's list is rendered once, on the first request
// after it, and kept.
//
//   QueueApi queue(source, &teams);        // source: nullptr when jobs.scheduler is none
//   std::string body = queue.Json(team, unix_now_s);
//
// The document (docs/configuration.md, "GET /api/gw/v1/queue"):
//   {"status":"success","data":{"scheduler":"slurm","up":true,"known":true,
//     "polled_at":1764470000.2,"staleness_s":0,"error":"","jobs":[{...},...]}}
// ("scheduler" is the source's Name(): "slurm" or "kubernetes".)
// `known` says whether `jobs` is a queue at all: false without a scheduler ("scheduler":"none")
// and before the first successful poll, so an empty list is never mistaken for an empty queue.
// When squeue fails, `up` is false, `error` says why, `staleness_s` grows, and `jobs` is the last
// known queue. Jobs are sorted by wait, longest first; fields in jobs/queue.h and the doc.
//
// Threading: Json may be called from any thread (one mutex guards the rendered list).
#ifndef GPUWARDEN_SERVE_QUEUE_API_H_
#define GPUWARDEN_SERVE_QUEUE_API_H_

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "jobs/job_source.h"
#include "jobs/queue.h"
#include "jobs/teams.h"

namespace gw::serve {

class QueueApi {
 public:
  // `poller` and `teams` must outlive this object; `poller` may be null (no scheduler).
  QueueApi(const jobs::JobSource* poller, const jobs::TeamMap* teams);

  // The document, listing one team's jobs when `team` is not empty. `now_s`: unix seconds (the
  // poller's clock), for the staleness.
  std::string Json(std::string_view team, double now_s) const;

  // One queued job as the API writes it (team as resolved from its account and user).
  static std::string JobJson(const jobs::QueuedJob& q, const std::string& team);

 private:
  struct Rendered {
    std::string team;
    std::string json;
  };
  void Refresh() const;  // mu_ held

  const jobs::JobSource* poller_;
  const jobs::TeamMap* teams_;
  mutable std::mutex mu_;
  mutable bool rendered_any_ = false;
  mutable std::uint64_t revision_ = 0;  // successful polls the rendered list is of
  mutable jobs::SlurmHealth health_;
  mutable std::vector<Rendered> rendered_;
};

}  // namespace gw::serve

#endif  // GPUWARDEN_SERVE_QUEUE_API_H_
