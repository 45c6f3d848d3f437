// gw-inference-sim (src/sim/inference/) as a test's application target: a host process of the
// simulated fleet on one GPU, following the simulator's state files, on a free loopback port.
//
//   InferenceService llm(dir / "llm.log", 0, dir / "state");   // waits for /healthz
//   ASSERT_TRUE(llm.ready()) << llm.process().Output();
//   WriteFile(dir / "gpuwarden.yaml", llm.ScrapeConfig() + "governance:\n  ...");
//
// The agent must run with GPUWARDEN_SIM_STATE_DIR set to the same state folder. Stopped (SIGTERM)
// when destroyed.
#ifndef GPUWARDEN_TESTS_SUPPORT_INFERENCE_SERVICE_H_
#define GPUWARDEN_TESTS_SUPPORT_INFERENCE_SERVICE_H_

#include <string>

#include "support/http_client.h"
#include "support/process.h"

namespace gw::testing {

class InferenceService {
 public:
  InferenceService(const std::string& log_path, unsigned gpu, const std::string& state_dir)
      : port_(FreePort()),
        gpu_(gpu),
        process_(
            {"env", "GPUWARDEN_SIM_WORKLOAD=inference",
             "CUDA_VISIBLE_DEVICES=" + std::to_string(gpu), "GPUWARDEN_SIM_STATE_DIR=" + state_dir,
             std::string(GW_BINARY_DIR) + "/bin/gw-inference-sim", "--listen",
             "127.0.0.1:" + std::to_string(port_)},
            log_path) {
    ready_ = WaitFor([&] { return HttpGet(port_, "/healthz").status == 200; }, 30);
  }

  bool ready() const { return ready_; }
  int port() const { return port_; }
  Process& process() { return process_; }

  // The `scrape:` section naming it as target `llm` on its GPU, its 2xx requests as outputs.
  std::string ScrapeConfig() const {
    return "scrape:\n  targets:\n    - name: llm\n      url: 'http://127.0.0.1:" +
           std::to_string(port_) + "/metrics'\n      gpus: [" + std::to_string(gpu_) +
           "]\n      outputs: 'inference_requests_total{code=~\"2..\"}'\n"
           "      output_unit: request\n";
  }

 private:
  int port_;
  unsigned gpu_;
  Process process_;
  bool ready_ = false;
};

}  // namespace gw::testing

#endif  // GPUWARDEN_TESTS_SUPPORT_INFERENCE_SERVICE_H_
