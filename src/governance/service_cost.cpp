#include "governance/service_cost.h"

namespace gw::governance {

ServiceCostLedger::ServiceCostLedger(std::vector<ServiceSpec> services, PriceSettings prices,
                                     double window_s, double max_gap_s)
    : prices_(std::move(prices)), window_s_(window_s), max_gap_s_(max_gap_s) {
  for (ServiceSpec& spec : services) {
    for (unsigned g : spec.gpus) ++holders_[g];
    ServiceCost c;
    c.spec = std::move(spec);
    services_.push_back(std::move(c));
  }
  rings_.resize(services_.size() * kCheckpoints);
}

void ServiceCostLedger::Observe(const Cycle& cycle,
                                const std::vector<std::optional<double>>& outputs) {
  const double now = cycle.now_s;
  double dt = last_s_ > 0 ? now - last_s_ : 0;
  if (!(dt > 0) || dt > max_gap_s_) dt = 0;
  last_s_ = now;
  const double hours = dt / 3600;

  for (const GpuReading& r : cycle.gpus) {
    auto holders = holders_.find(r.index);
    // The energy counter's delta; power x dt without one, or when it went backwards (a reset):
    // the same rule as UsageLedger, so that a service's energy matches its jobs'.
    double energy_j = r.power_w * dt;
    if (r.energy_j) {
      auto last = last_energy_j_.find(r.index);
      if (last != last_energy_j_.end() && *r.energy_j >= last->second)
        energy_j = dt > 0 ? *r.energy_j - last->second : 0;
      last_energy_j_[r.index] = *r.energy_j;
    }
    if (holders == holders_.end()) continue;
    const double share = 1.0 / holders->second;
    const double price = prices_.GpuHourPrice(r.model);
    for (ServiceCost& s : services_) {
      for (unsigned g : s.spec.gpus) {
        if (g != r.index) continue;
        s.gpu_s += share * dt;
        s.allocation_cost += share * price * hours;
        s.energy_j += share * energy_j;
        s.energy_cost += share * energy_j / 3.6e6 * prices_.energy_per_kwh;
      }
    }
  }
  for (std::size_t i = 0; i < services_.size() && i < outputs.size(); ++i) {
    if (!outputs[i]) continue;
    services_[i].outputs_known = true;
    services_[i].outputs = *outputs[i];
  }

  // Checkpoints, window/60 apart (the first at the first cycle).
  const std::size_t n = services_.size();
  auto at = [&](std::size_t service, std::size_t k) -> Checkpoint& {  // k-th oldest
    return rings_[service * kCheckpoints + (ring_head_ + k) % kCheckpoints];
  };
  if (ring_size_ == 0 || n == 0 || now - at(0, ring_size_ - 1).t_s >= window_s_ / 60) {
    if (ring_size_ == kCheckpoints) {
      ring_head_ = (ring_head_ + 1) % kCheckpoints;
      --ring_size_;
    }
    for (std::size_t i = 0; i < n; ++i)
      at(i, ring_size_) = Checkpoint{now, services_[i].Total(), services_[i].outputs};
    ++ring_size_;
  }
  // The window's start: the newest checkpoint at least window_s old, else the oldest.
  std::size_t base = 0;
  for (std::size_t k = 0; k < ring_size_ && n > 0; ++k)
    if (at(0, k).t_s <= now - window_s_) base = k;
  for (std::size_t i = 0; i < n; ++i) {
    ServiceCost& s = services_[i];
    const Checkpoint& from = at(i, base);
    s.window_s = now - from.t_s;
    s.window_cost = s.Total() - from.cost;
    s.window_outputs = s.outputs - from.outputs;
    s.has_cost_per_output = s.outputs_known && s.window_outputs > 0;
    s.cost_per_output = s.has_cost_per_output ? s.window_cost / s.window_outputs : 0;
  }
}

}  // namespace gw::governance
