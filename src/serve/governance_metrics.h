// serve/governance_metrics.h — the governance families (docs/metrics.md, "Governance"): built
// once per snapshot from the service's state as figures (a family, its labels, a value), then
// written to /metrics through expo::Writer and appended to the store by the service.
//
//   std::vector<GovernanceFigure> figures = BuildGovernanceFigures(state, cycle, extras);
//   WriteGovernanceFamilies(figures, &writer);   // every family that has a figure, in table order
//
// Threading: functions over values; the caller holds whatever guards `state`.
#ifndef GPUWARDEN_SERVE_GOVERNANCE_METRICS_H_
#define GPUWARDEN_SERVE_GOVERNANCE_METRICS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "expo/expo.h"
#include "governance/cycle.h"
#include "serve/governance_state.h"
#include "tsdb/storage.h"

namespace gw::serve {

struct GovernanceFigure {
  const char* family;   // a name of the family table (static storage)
  tsdb::Labels labels;  // sorted, with __name__
  double value = 0;
};

// What the figures need beside the state.
struct GovernanceFigureInputs {
  bool capacity_polled = false;  // governance.capacity_command is polled (Slurm)
  std::uint64_t log_errors = 0;  // decisions that could not be appended to the log
};

std::vector<GovernanceFigure> BuildGovernanceFigures(const GovernanceState& state,
                                                     const governance::Cycle& cycle,
                                                     const GovernanceFigureInputs& inputs);

// Writes the families that have figures, in docs/metrics.md's order.
void WriteGovernanceFamilies(const std::vector<GovernanceFigure>& figures, expo::Writer* writer);

// 3600 -> "1h", 86400 -> "1d", 90 -> "90s": the `window` label (and the API's window names).
std::string WindowLabel(double seconds);

}  // namespace gw::serve

#endif  // GPUWARDEN_SERVE_GOVERNANCE_METRICS_H_
