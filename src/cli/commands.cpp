#include "cli/commands.h"

#include <cstdio>

#include "cli/snapshot_view.h"
#include "serve/agent.h"

namespace gw::cli {

int RunSnapshot(const config::Config& config_in, bool json, const std::string& sim_time,
                Logger* logger) {
  config::Config config = config_in;
  double advance_s = 0;
  if (!sim_time.empty()) {
    if (config.simulate.scenario.empty()) {
      std::fprintf(stderr, "gpuwarden: --sim-time needs --simulate\n");
      return 2;
    }
    if (!ParseDurationSeconds(sim_time, &advance_s)) {
      std::fprintf(stderr, "gpuwarden: --sim-time: expected a duration such as 90s, got '%s'\n",
                   sim_time.c_str());
      return 2;
    }
    config.simulate.clock = "stepped";
  }
  config.collect.memory_peak_interval_s = 0;  // one shot: no sub-sampling
  serve::Agent agent(config, logger);
  agent.Start();
  if (!agent.nvml_error().empty()) {
    std::fprintf(stderr, "gpuwarden: %s\n", agent.nvml_error().c_str());
    return 2;
  }
  if (!agent.collector().WaitForFirstCycle(60)) {
    std::fprintf(stderr, "gpuwarden: no collection cycle completed within 60 s\n");
    return 1;
  }
  if (advance_s > 0) {
    if (Status s = agent.collector().Advance(advance_s, 300); !s.ok()) {
      std::fprintf(stderr, "gpuwarden: %s\n", s.message().c_str());
      return 1;
    }
  }
  auto snapshot = agent.collector().Latest();
  std::string text = json ? SnapshotJson(*snapshot) : SnapshotTable(*snapshot);
  std::fwrite(text.data(), 1, text.size(), stdout);
  agent.Stop();
  return 0;
}

}  // namespace gw::cli
