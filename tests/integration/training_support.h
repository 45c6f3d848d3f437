// Helpers of the training-throughput integration tests (training_test.cpp, job_endpoint_test.cpp):
// the agent's configuration and arguments, its simulated now, an instant query's one value, and
// stepping one cycle at a time.
#ifndef GPUWARDEN_TESTS_INTEGRATION_TRAINING_SUPPORT_H_
#define GPUWARDEN_TESTS_INTEGRATION_TRAINING_SUPPORT_H_

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/agent_process.h"
#include "support/process.h"

namespace gw::testing {

// Writes DIR/gpuwarden.yaml — scrape target `target` at 127.0.0.1:`port` every 15 s counting
// training_samples_total as samples for job `job_id`, and prices of 2 USD per GPU-hour and 0.2 per
// kWh — and returns the arguments of an agent on the power-cap scenario, stepped clock, with it.
inline std::vector<std::string> TrainingAgentArgs(const TempDir& dir, const std::string& target,
                                                  const std::string& job_id, int port) {
  WriteFile(dir / "gpuwarden.yaml",
            "scrape:\n  targets:\n    - {name: " + target +
                ", url: 'http://127.0.0.1:" + std::to_string(port) +
                "/metrics', interval: 15s, outputs: training_samples_total, "
                "output_unit: samples, job_id: " +
                job_id +
                "}\n"
                "governance:\n  prices:\n    gpu_hour: {default: 2.0}\n    energy_kwh: 0.2\n    "
                "currency: USD\n");
  return {"--simulate",  std::string(GW_SOURCE_DIR) + "/scenarios/training-power-cap.yaml",
          "--sim-clock", "stepped",
          "--config",    dir / "gpuwarden.yaml"};
}

inline double Now(const AgentProcess& agent) {
  return nlohmann::json::parse(agent.Get("/api/snapshot").body)["taken_at"];
}

// The value of the one series an instant query at the agent's (simulated) now returns; NaN when
// it returns none.
inline double QueryOne(const AgentProcess& agent, const std::string& expr,
                       std::string* body = nullptr) {
  HttpReply r =
      agent.Get("/api/v1/query?query=" + UrlEncode(expr) + "&time=" + std::to_string(Now(agent)));
  if (body) *body = r.body;
  if (r.status != 200) return std::nan("");
  const nlohmann::json result = nlohmann::json::parse(r.body)["data"]["result"];
  if (result.size() != 1) return std::nan("");
  return std::stod(result[0]["value"][1].get<std::string>());
}

// Moves simulated time one collection cycle (1 s) per call, so that each scrape of the run (on
// the recorder's thread) sees the run at the snapshot's own time: a longer advance lets the
// collector run ahead of the recorder, and a 1-minute rate between such scrapes jitters.
inline void Step(AgentProcess& agent, int seconds) {
  for (int i = 0; i < seconds; ++i) agent.Advance(1);
}

}  // namespace gw::testing

#endif  // GPUWARDEN_TESTS_INTEGRATION_TRAINING_SUPPORT_H_
