// serve/agent.h — turning a Config into a running collector: find and load NVML (the real driver
// or the simulator), initialize it, start collecting.
//
// When NVML cannot be loaded or initialized the agent still starts, without GPUs, and
// `nvml_error()` says why in one line: `serve` keeps serving its self-metrics, `snapshot`
// prints the line and exits non-zero.
#ifndef GPUWARDEN_SERVE_AGENT_H_
#define GPUWARDEN_SERVE_AGENT_H_

#include <memory>
#include <string>

#include "base/log.h"
#include "collect/collector.h"
#include "config/config.h"
#include "nvml/library.h"

namespace gw::serve {

// The simulator library that ships beside the gpuwarden binary ("" if not found).
std::string FindSimulatorLibrary();

class Agent {
 public:
  Agent(const config::Config& config, Logger* logger);
  ~Agent();

  // Loads NVML and starts the collector. Never fails: see nvml_error(). `on_publish` (may be
  // null) gets every published snapshot on the collector's thread and must return at once.
  void Start(collect::Collector::PublishListener on_publish = nullptr);
  // Stops the collector (bounded: see Collector::Stop) and says what it had to leave behind.
  // Safe to call again (returns the same outcome).
  collect::Collector::StopOutcome Stop();

  const std::string& nvml_error() const { return nvml_error_; }
  bool simulated() const { return simulated_; }
  collect::Collector& collector() { return *collector_; }

 private:
  config::Config config_;
  Logger* log_;
  std::unique_ptr<nvml::Library> library_;
  std::unique_ptr<collect::Collector> collector_;
  std::string nvml_error_;
  bool simulated_ = false;
  collect::Collector::StopOutcome stop_outcome_;
};

}  // namespace gw::serve

#endif  // GPUWARDEN_SERVE_AGENT_H_
