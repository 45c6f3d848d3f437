#include "cli/top_command.h"

#include <memory>

#include "serve/agent.h"

namespace gw::cli {

namespace {

// top's local collector: the agent's NVML loading and collector, started and stopped by top.
class AgentCollection : public top::Collection {
 public:
  AgentCollection(const config::Config& config, Logger* logger) : agent_(config, logger) {}
  ~AgentCollection() override { agent_.Stop(); }

  Status Start() override {
    agent_.Start();
    if (!agent_.nvml_error().empty()) return Status(Error{agent_.nvml_error()});
    return Status();
  }
  bool WaitForFirstCycle(double timeout_s) override {
    return agent_.collector().WaitForFirstCycle(timeout_s);
  }
  Status Advance(double seconds, double timeout_s) override {
    return agent_.collector().Advance(seconds, timeout_s);
  }
  std::shared_ptr<const collect::Snapshot> Latest() override { return agent_.collector().Latest(); }

 private:
  serve::Agent agent_;
};

}  // namespace

int RunTop(const config::Config& config, top::Options flags, Logger* logger) {
  flags.simulate = config.simulate.scenario;
  flags.stepped_clock = config.simulate.clock == "stepped";
  flags.teams.accounts = config.teams.accounts;
  flags.teams.users = config.teams.users;
  auto local = [&config](bool stepped_clock, Logger* log) -> std::unique_ptr<top::Collection> {
    config::Config local_config = config;
    if (stepped_clock) local_config.simulate.clock = "stepped";
    local_config.collect.memory_peak_interval_s = 0;  // a viewer needs no sub-sampled peaks
    return std::make_unique<AgentCollection>(local_config, log);
  };
  return top::RunTop(flags, local, logger);
}

}  // namespace gw::cli
