// top/sources.h — where `gpuwarden top` gets its readings: this machine's GPUs, or an agent.
//
//   LocalSource   reads a collector running in-process (NVML, or the simulator with --simulate),
//                 names the holder of each GPU from /proc like `serve` does (jobs/attribution.h:
//                 Slurm job, GPUWARDEN_JOB / GPUWARDEN_TEAM), and has no alerts (rules run in an
//                 agent). With a stepped simulator clock each Read() after the first moves time by
//                 the refresh interval, so a fault scenario plays out on screen.
//                 top does not load NVML itself: the caller hands it a `Collection` (below), so
//                 this module needs collect/ and nothing of the command line or the agent.
//   RemoteSource  asks a running agent: GET /api/snapshot, /api/gw/v1/jobs?running=1,
//                 /api/gw/v1/queue, /api/gw/v1/services and /api/v1/alerts. An agent without
//                 the jobs, queue, services or alerts API still shows its GPUs.
//
// Threading: Read() is called by the poller's thread only (top/poller.h); never on the UI thread,
// as it may block on NVML or the network. Errors: Read() fails with one line (agent unreachable,
// a reply that is not the agent's JSON); the poller shows it and keeps the last frame.
#ifndef GPUWARDEN_TOP_SOURCES_H_
#define GPUWARDEN_TOP_SOURCES_H_

#include <memory>
#include <string>
#include <string_view>

#include "base/error.h"
#include "base/log.h"
#include "jobs/attribution.h"
#include "jobs/teams.h"
#include "top/frame.h"

namespace gw::top {

class Source {
 public:
  virtual ~Source() = default;
  virtual Expected<Reading> Read() = 0;
  // For the header: "local NVML", "simulated 'demo'", "http://node1:9966".
  virtual std::string Describe() const = 0;
};

// A collector running on this machine, as LocalSource needs it. gpuwarden builds one from its
// configuration (NVML or the simulator); tests hand in snapshots of their own. Destroying it
// stops collecting. Called from one thread at a time.
class Collection {
 public:
  virtual ~Collection() = default;
  // Loads NVML and starts collecting. Fails with the reason NVML cannot be used.
  virtual Status Start() = 0;
  // True once the first cycle is published; false after `timeout_s` without one.
  virtual bool WaitForFirstCycle(double timeout_s) = 0;
  // Stepped simulator clock only: moves simulated time by `seconds` and waits (at most
  // `timeout_s`) for the cycles that fall due.
  virtual Status Advance(double seconds, double timeout_s) = 0;
  // The newest published snapshot (never null after WaitForFirstCycle returned true).
  virtual std::shared_ptr<const collect::Snapshot> Latest() = 0;
};

// How a local view reads its collection.
struct LocalSettings {
  std::string scenario;  // the simulated scenario, "" = this machine's NVML (for the header)
  bool stepped = false;  // the simulator's clock is stepped: each Read after the first advances it
  double step_s = 0;     // with `stepped`: time moved per Read (the refresh interval)
  jobs::TeamConfig teams;
};

class LocalSource : public Source {
 public:
  LocalSource(std::unique_ptr<Collection> collection, LocalSettings settings);

  // Starts the collection and waits for its first cycle (up to 60 s). Fails with the reason NVML
  // is missing. `advance_s` > 0 (stepped simulator): moves simulated time that far first.
  Status Start(double advance_s);
  Expected<Reading> Read() override;
  std::string Describe() const override;

 private:
  std::unique_ptr<Collection> collection_;
  LocalSettings settings_;
  bool first_ = true;
  jobs::Attributor attributor_;
  jobs::TeamMap teams_;
};

class RemoteSource : public Source {
 public:
  // `url` is the agent's base address, e.g. http://node1:9966 (a trailing / is fine).
  explicit RemoteSource(std::string url, double timeout_s = 5);
  Expected<Reading> Read() override;
  std::string Describe() const override { return url_; }

 private:
  std::string url_;
  double timeout_s_;
};

// Parsers of the agent's documents (exposed for tests). Each fails with what is wrong.
// GET /api/snapshot (cli/snapshot_view.h SnapshotJson) back into a snapshot; the agent's health
// verdicts go to `health`.
Expected<std::shared_ptr<collect::Snapshot>> ParseSnapshotJson(
    std::string_view body, std::map<unsigned, std::vector<collect::HealthProblem>>* health);
// GET /api/v1/alerts: firing and pending alerts.
Expected<std::vector<AlertView>> ParseAlertsJson(std::string_view body);
// GET /api/gw/v1/jobs?running=1: the holder of each GPU index.
Expected<std::map<unsigned, GpuHolder>> ParseJobsJson(std::string_view body);
// GET /api/gw/v1/queue: how many jobs wait and the longest wait (shown = false when the agent
// knows no queue: no scheduler, or no successful poll yet).
Expected<QueueSummary> ParseQueueJson(std::string_view body);
// GET /api/gw/v1/services: each target's cost per 1k outputs and outputs per second over the
// agent's window, in the agent's order.
Expected<std::vector<ServiceView>> ParseServicesJson(std::string_view body);

}  // namespace gw::top

#endif  // GPUWARDEN_TOP_SOURCES_H_
