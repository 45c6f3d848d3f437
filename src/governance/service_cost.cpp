#include "governance/service_cost.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

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
  outputs_base_.assign(services_.size(), 0);
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
    services_[i].outputs = outputs_base_[i] + *outputs[i];
  }

  // Checkpoints, window/60 apart (the first at the first cycle).
  const std::size_t n = services_.size();
  auto at = [&](std::size_t service, std::size_t k) -> Mark& {  // k-th oldest
    return rings_[service * kCheckpoints + (ring_head_ + k) % kCheckpoints];
  };
  // The clock went back (a restarted simulation, a stepped system clock): the window restarts.
  if (ring_size_ > 0 && n > 0 && now < at(0, ring_size_ - 1).t_s) ring_head_ = ring_size_ = 0;
  if (ring_size_ == 0 || n == 0 || now - at(0, ring_size_ - 1).t_s >= window_s_ / 60) {
    if (ring_size_ == kCheckpoints) {
      ring_head_ = (ring_head_ + 1) % kCheckpoints;
      --ring_size_;
    }
    for (std::size_t i = 0; i < n; ++i)
      at(i, ring_size_) = Mark{now, services_[i].Total(), services_[i].outputs};
    ++ring_size_;
  }
  // The window's start: the newest checkpoint at least window_s old, else the oldest.
  std::size_t base = 0;
  for (std::size_t k = 0; k < ring_size_ && n > 0; ++k)
    if (at(0, k).t_s <= now - window_s_) base = k;
  for (std::size_t i = 0; i < n; ++i) {
    ServiceCost& s = services_[i];
    const Mark& from = at(i, base);
    s.window_s = now - from.t_s;
    s.window_cost = s.Total() - from.cost;
    s.window_outputs = s.outputs - from.outputs;
    s.has_cost_per_output = s.outputs_known && s.window_outputs > 0;
    s.cost_per_output = s.has_cost_per_output ? s.window_cost / s.window_outputs : 0;
  }
}

namespace {

using Json = nlohmann::json;
constexpr const char* kServiceFormat = "gpuwarden-service-cost-checkpoint";

double Finite(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number() || !std::isfinite(it->get<double>()))
    throw std::runtime_error(std::string(key) + ": expected a finite number");
  return it->get<double>();
}

const Json& List(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_array())
    throw std::runtime_error(std::string(key) + ": expected an array");
  return *it;
}

}  // namespace

std::string ServiceCostLedger::Checkpoint() const {
  Json services = Json::array();
  for (std::size_t i = 0; i < services_.size(); ++i) {
    const ServiceCost& s = services_[i];
    Json ring = Json::array();
    for (std::size_t k = 0; k < ring_size_; ++k) {
      const auto& c = rings_[i * kCheckpoints + (ring_head_ + k) % kCheckpoints];
      ring.push_back({c.t_s, c.cost, c.outputs});
    }
    services.push_back({{"target", s.spec.target},
                        {"gpu_s", s.gpu_s},
                        {"energy_j", s.energy_j},
                        {"allocation_cost", s.allocation_cost},
                        {"energy_cost", s.energy_cost},
                        {"outputs_known", s.outputs_known},
                        {"outputs", s.outputs},
                        {"window", std::move(ring)}});
  }
  Json energy = Json::array();
  for (const auto& [index, j] : last_energy_j_) energy.push_back({index, j});
  Json doc = {{"format", kServiceFormat},
              {"version", 1},
              {"last_s", last_s_},
              {"energy", std::move(energy)},
              {"services", std::move(services)}};
  return doc.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Status ServiceCostLedger::Restore(std::string_view text) {
  const Json doc = Json::parse(text.begin(), text.end(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return Error{"not JSON"};
  if (doc.value("format", "") != kServiceFormat)
    return Error{std::string("format: expected ") + kServiceFormat};
  if (doc.value("version", 0) != 1) return Error{"version: expected 1"};
  std::vector<ServiceCost> services = services_;
  std::vector<double> base(services_.size(), 0);
  std::vector<std::vector<Mark>> windows(services_.size());
  std::map<unsigned, double> energy;
  double last_s = 0;
  bool same_targets = true;
  try {
    last_s = Finite(doc, "last_s");
    for (const Json& e : List(doc, "energy")) {
      if (!e.is_array() || e.size() != 2 || !e[0].is_number_unsigned() || !e[1].is_number())
        throw std::runtime_error("energy: expected [gpu, joules] pairs");
      energy[e[0].get<unsigned>()] = e[1].get<double>();
    }
    const Json& saved = List(doc, "services");
    same_targets = saved.size() == services_.size();
    for (std::size_t k = 0; k < saved.size(); ++k) {
      const Json& x = saved[k];
      if (!x.is_object() || !x.value("target", Json()).is_string())
        throw std::runtime_error("services: expected objects with a target");
      const std::string target = x["target"].get<std::string>();
      if (k < services_.size() && services_[k].spec.target != target) same_targets = false;
      std::vector<Mark> window;
      for (const Json& c : List(x, "window")) {
        if (!c.is_array() || c.size() != 3 || !c[0].is_number() || !c[1].is_number() ||
            !c[2].is_number())
          throw std::runtime_error("window: expected [time, cost, outputs] triples");
        window.push_back({c[0].get<double>(), c[1].get<double>(), c[2].get<double>()});
      }
      if (window.size() > kCheckpoints) throw std::runtime_error("window: too many checkpoints");
      for (std::size_t i = 0; i < services.size(); ++i) {
        if (services[i].spec.target != target) continue;
        ServiceCost& s = services[i];
        s.gpu_s = Finite(x, "gpu_s");
        s.energy_j = Finite(x, "energy_j");
        s.allocation_cost = Finite(x, "allocation_cost");
        s.energy_cost = Finite(x, "energy_cost");
        s.outputs_known = x.value("outputs_known", false);
        s.outputs = s.outputs_known ? Finite(x, "outputs") : 0;
        base[i] = s.outputs;
        windows[i] = std::move(window);
        break;
      }
    }
  } catch (const std::exception& e) {
    return Error{e.what()};
  }
  services_ = std::move(services);
  outputs_base_ = std::move(base);
  last_s_ = last_s;
  last_energy_j_ = std::move(energy);
  ring_head_ = ring_size_ = 0;
  if (same_targets && !windows.empty()) {
    ring_size_ = windows[0].size();
    for (std::size_t i = 0; i < windows.size(); ++i) {
      if (windows[i].size() != ring_size_) {
        ring_size_ = 0;
        break;
      }
      for (std::size_t k = 0; k < ring_size_; ++k) rings_[i * kCheckpoints + k] = windows[i][k];
    }
  }
  return Status::Ok();
}

}  // namespace gw::governance
