// scrape/target.h — one application target gpuwarden scrapes (config `scrape.targets`).
//
// A target is an HTTP endpoint serving Prometheus text format 0.0.4 or OpenMetrics (an inference
// server's /metrics). Its samples are stored with the extra label target="<name>"; `gpus` names
// the GPU indices that serve it, which the agent publishes as gpu_service_info so that a slow
// service can be tied to the state of its GPUs (docs/metrics.md, "Business metrics"). `outputs`
// names what one output of the service is (a counter selector), for cost per output. `job_id`
// binds the target to a job (a training run's own /metrics): its `outputs` counted per second are
// that job's throughput (docs/jobs.md, "Training throughput").
#ifndef GPUWARDEN_SCRAPE_TARGET_H_
#define GPUWARDEN_SCRAPE_TARGET_H_

#include <string>
#include <vector>

#include "tsdb/storage.h"

namespace gw::scrape {

struct TargetConfig {
  std::string name;  // the value of the `target` label; unique among targets
  std::string url;   // http(s)://host:port/path
  double interval_s = 15;
  double timeout_s = 0;        // <= 0: min(10 s, interval)
  std::vector<unsigned> gpus;  // GPU indices serving the target (may be empty)
  std::string basic_auth_username, basic_auth_password_file;
  std::string bearer_token_file;
  // Cost per output: the series of the target that count its outputs — a PromQL vector selector
  // (`outputs`, as written) whose matchers every scraped series is tested against, the
  // target="<name>" label included; their values are summed, reset-aware (Scraper). Empty: none.
  std::string outputs;
  std::vector<tsdb::Matcher> output_matchers;
  std::string output_unit = "output";  // what one output is ("request", "token")
  // The job whose progress `outputs` counts (as `gpuwarden jobs` lists it: a Slurm job id, a
  // GPUWARDEN_JOB name, namespace/pod); "" = not a job's. Requires `outputs`.
  std::string job_id;

  double effective_timeout_s() const {
    if (timeout_s > 0) return timeout_s;
    return interval_s < 10 ? interval_s : 10;
  }
};

}  // namespace gw::scrape

#endif  // GPUWARDEN_SCRAPE_TARGET_H_
