// governance/service_cost.h — cost per output: what the GPUs serving an application target cost,
// what the target produced (its "outputs": requests served, tokens, ...), and the ratio over a
// sliding window.
//
//   ServiceCostLedger ledger({{"llm", {0}, "request"}}, settings.prices);
//   each cycle: ledger.Observe(cycle, outputs);   // outputs[i]: target i's outputs so far, or
//                                                 // nullopt while it has none (not scraped yet)
//   then read services()
//
// Cost is governance's (governance/usage.h): each interval between two cycles (dt, at most
// max_gap_s) is charged to the state at its end; a target's cost is the allocation cost of its
// GPUs (GPU-hours x the price of their model) plus their energy cost (energy-counter deltas, else
// power x dt, x energy_per_kwh). A GPU named by n targets is shared 1/n to each. A GPU the cycle
// does not list (lost, or not on this node) costs nothing.
//
// Cost per output over the window: (cost now - cost at the window's start) / (outputs now -
// outputs then). Checkpoints are kept every window/60 (a minute for an hour), so the window
// reaches back between window and window + window/60; until the agent has run that long it
// reaches back to the first cycle. No outputs in the window: no figure (has_cost_per_output
// false), as 0 or infinity would mislead. A fixed ring of checkpoints: no allocation per cycle.
//
// Threading: none (one owner).
#ifndef GPUWARDEN_GOVERNANCE_SERVICE_COST_H_
#define GPUWARDEN_GOVERNANCE_SERVICE_COST_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "governance/cycle.h"
#include "governance/settings.h"

namespace gw::governance {

struct ServiceSpec {
  std::string target;          // the `target` label
  std::vector<unsigned> gpus;  // GPU indices serving it
  std::string output_unit;     // "request", "token", ... ("" = no outputs configured)
};

struct ServiceCost {
  ServiceSpec spec;
  double gpu_s = 0;  // GPU-seconds charged (shares)
  double energy_j = 0;
  double allocation_cost = 0;
  double energy_cost = 0;
  bool outputs_known = false;  // the target's outputs have been counted at least once
  double outputs = 0;          // outputs so far (reset-aware, from the scraper)
  // Over the window (see the header comment).
  double window_s = 0;  // how far back the window reaches now
  double window_cost = 0;
  double window_outputs = 0;
  bool has_cost_per_output = false;
  double cost_per_output = 0;

  double Total() const { return allocation_cost + energy_cost; }
};

class ServiceCostLedger {
 public:
  ServiceCostLedger(std::vector<ServiceSpec> services, PriceSettings prices, double window_s = 3600,
                    double max_gap_s = 120);

  // `outputs` parallel to the services (shorter: the rest unknown).
  void Observe(const Cycle& cycle, const std::vector<std::optional<double>>& outputs);

  const std::vector<ServiceCost>& services() const { return services_; }
  const PriceSettings& prices() const { return prices_; }
  double window_s() const { return window_s_; }

  // Restarts. Checkpoint(): every service's totals (by target), its outputs so far, the window's
  // checkpoints, the last cycle's time and the GPUs' energy readings, as JSON text. Restore(),
  // before the first Observe: the totals continue; outputs continue from the restored count (the
  // scraper counts from 0 again after a restart: Observe adds its count to it; outputs made while
  // the agent was down are not counted); the window keeps its checkpoints when the configured
  // targets are the same, in the same order, else it starts afresh. A target of the checkpoint no
  // longer configured is dropped; a new one starts from zero. Error (not a version-1 checkpoint;
  // which field): nothing changes.
  std::string Checkpoint() const;
  Status Restore(std::string_view text);

 private:
  struct Mark {
    double t_s = 0, cost = 0, outputs = 0;
  };
  static constexpr std::size_t kCheckpoints = 62;  // window/60 apart: one more than the window

  PriceSettings prices_;
  double window_s_, max_gap_s_;
  double last_s_ = 0;
  std::map<unsigned, double> last_energy_j_;
  std::vector<ServiceCost> services_;
  // Per service a ring of checkpoints (kCheckpoints each, oldest at ring_head_), all services
  // checkpointed at the same cycles.
  std::vector<Mark> rings_;
  std::size_t ring_head_ = 0, ring_size_ = 0;
  std::map<unsigned, unsigned> holders_;  // GPU -> number of services naming it
  std::vector<double> outputs_base_;      // per service: outputs restored from a checkpoint
};

}  // namespace gw::governance

#endif  // GPUWARDEN_GOVERNANCE_SERVICE_COST_H_
