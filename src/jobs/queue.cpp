// PendingQueue: positions by Slurm's scheduling order, then the list by wait.
#include "jobs/queue.h"

#include <algorithm>
#include <cstdlib>
#include <map>

namespace gw::jobs {

namespace {

// Job ids compare as numbers where they are ("9" before "10"); array ids ("12_[3-5]") by their
// leading number, then as text.
bool IdBefore(const std::string& a, const std::string& b) {
  const unsigned long long na = std::strtoull(a.c_str(), nullptr, 10);
  const unsigned long long nb = std::strtoull(b.c_str(), nullptr, 10);
  if (na != nb) return na < nb;
  return a < b;
}

std::int64_t NonNegative(std::int64_t v) {
  return v < 0 ? 0 : v;
}

}  // namespace

std::string FirstPartition(const std::string& partitions) {
  return partitions.substr(0, partitions.find(','));
}

std::vector<QueuedJob> PendingQueue(std::vector<SlurmJob> jobs, double polled_at_s) {
  const auto now = static_cast<std::int64_t>(polled_at_s);
  std::vector<QueuedJob> queue;
  queue.reserve(jobs.size());
  for (SlurmJob& job : jobs) {
    if (job.state != JobState::kPending) continue;
    QueuedJob q;
    q.eligible = job.eligible_time > 0 && job.eligible_time <= now;
    q.wait_s = q.eligible ? NonNegative(now - job.eligible_time) : 0;
    q.submit_wait_s = job.submit_time > 0 ? NonNegative(now - job.submit_time) : 0;
    q.gpus = job.RequestedGpus();
    q.job = std::move(job);
    queue.push_back(std::move(q));
  }
  // Slurm's order within each partition.
  std::vector<QueuedJob*> order;
  order.reserve(queue.size());
  for (QueuedJob& q : queue) order.push_back(&q);
  std::sort(order.begin(), order.end(), [](const QueuedJob* a, const QueuedJob* b) {
    if (a->job.priority != b->job.priority) return a->job.priority > b->job.priority;
    if (a->job.submit_time != b->job.submit_time) return a->job.submit_time < b->job.submit_time;
    return IdBefore(a->job.id, b->job.id);
  });
  std::map<std::string, unsigned> next_position;
  for (QueuedJob* q : order) q->position = ++next_position[FirstPartition(q->job.partition)];
  std::sort(queue.begin(), queue.end(), [](const QueuedJob& a, const QueuedJob& b) {
    if (a.wait_s != b.wait_s) return a.wait_s > b.wait_s;
    if (a.position != b.position) return a.position < b.position;
    return a.job.partition < b.job.partition;
  });
  return queue;
}

}  // namespace gw::jobs
