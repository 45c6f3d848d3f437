// diagnose/business.h — internal: the state of one Diagnose() run, and the business checks that
// run after the generic ones (they read the device findings already made).
#ifndef GPUWARDEN_DIAGNOSE_BUSINESS_H_
#define GPUWARDEN_DIAGNOSE_BUSINESS_H_

#include <map>
#include <string>

#include "diagnose/diagnose.h"

namespace gw::diagnose {

struct RunContext {
  tsdb::Querier* querier = nullptr;
  const promql::Engine* engine = nullptr;
  const Options* options = nullptr;
  int64_t start_ms = 0, end_ms = 0, step_ms = 0;  // the data present in the window
  bool current = true;  // the data reaches the evaluation time (findings may be "active")
  std::map<std::string, std::string> vars;  // ${w}, ${long}, ${window} and the thresholds
  Diagnosis* out = nullptr;
};

// Business latency: a target whose p95 latency rose above latency_factor × its best in the
// window, linked to device findings on the GPUs serving it (gpu_service_info) in the same time.
void RunBusinessChecks(RunContext& ctx);

}  // namespace gw::diagnose

#endif  // GPUWARDEN_DIAGNOSE_BUSINESS_H_
