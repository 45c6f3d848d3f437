#include "serve/service_cost_service.h"

#include <nlohmann/json.hpp>

#include "http/server.h"
#include "serve/state_file.h"

namespace gw::serve {

namespace {

// The targets that have a cost (gpus) or outputs, in configuration order.
bool Costed(const scrape::TargetConfig& t) {
  return !t.gpus.empty() || !t.outputs.empty();
}

std::vector<std::size_t> CostedTargets(const config::Config& config) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < config.scrape.targets.size(); ++i)
    if (Costed(config.scrape.targets[i])) out.push_back(i);
  return out;
}

std::vector<governance::ServiceSpec> SpecsOf(const config::Config& config) {
  std::vector<governance::ServiceSpec> out;
  for (const scrape::TargetConfig& t : config.scrape.targets)
    if (Costed(t)) out.push_back({t.name, t.gpus, t.outputs.empty() ? "" : t.output_unit});
  return out;
}

std::vector<std::string> SelectorsOf(const config::Config& config) {
  std::vector<std::string> out;
  for (const scrape::TargetConfig& t : config.scrape.targets)
    if (Costed(t)) out.push_back(t.outputs);
  return out;
}

nlohmann::json Num(bool known, double v) {
  return known ? nlohmann::json(v) : nlohmann::json(nullptr);
}

}  // namespace

ServiceCostService::ServiceCostService(const config::Config& config, const scrape::Scraper* scraper,
                                       tsdb::Appender* appender, Logger* logger)
    : scraper_(scraper),
      appender_(appender),
      log_(logger),
      targets_(CostedTargets(config)),
      selectors_(SelectorsOf(config)),
      ledger_(SpecsOf(config), config.governance.settings.prices),
      checkpoint_path_(config.storage.path + "/governance/services.json") {
  outputs_.resize(targets_.size());
  if (!targets_.empty()) LoadCheckpoint();
}

ServiceCostService::~ServiceCostService() {
  Stop();
}

void ServiceCostService::Stop() {
  if (stopped_) return;
  stopped_ = true;
  WriteCheckpoint();
}

void ServiceCostService::LoadCheckpoint() {
  const std::optional<std::string> text = ReadStateFile(checkpoint_path_);
  if (!text) return;  // the first start
  if (const Status s = ledger_.Restore(*text); !s.ok()) {
    SetAsideStateFile(checkpoint_path_, "services", s.message(),
                      "the services' cost and outputs start from zero", log_);
    return;
  }
  log_->Info("services: continuing the cost and outputs of " + checkpoint_path_);
}

void ServiceCostService::WriteCheckpoint() {
  std::string text;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!observed_) return;  // nothing new: keep what is there
    text = ledger_.Checkpoint() + "\n";
  }
  WriteStateFile(checkpoint_path_, text, "services", &checkpoint_failed_, log_);
}

void ServiceCostService::OnSnapshot(const collect::Snapshot& snapshot, int64_t t_ms) {
  if (targets_.empty()) return;
  using collect::Slot;
  cycle_.now_s = snapshot.taken_unix_seconds;
  cycle_.gpus.resize(snapshot.gpus.size());
  for (std::size_t i = 0; i < snapshot.gpus.size(); ++i) {
    const collect::GpuSnapshot& gpu = snapshot.gpus[i];
    governance::GpuReading& r = cycle_.gpus[i];
    r.index = gpu.identity.index;
    r.model = gpu.identity.name;
    r.energy_j.reset();
    if (const double e = gpu.value(Slot::kEnergy); !collect::IsAbsent(e)) r.energy_j = e;
    const double p = gpu.value(Slot::kPower);
    r.power_w = collect::IsAbsent(p) ? 0 : p;
  }
  for (std::size_t i = 0; i < targets_.size(); ++i) {
    double total = 0;
    if (scraper_->Outputs(targets_[i], &total)) {
      outputs_[i] = total;
    } else {
      outputs_[i].reset();
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ledger_.Observe(cycle_, outputs_);
    observed_ = true;
  }
  if (checkpoint_s_ <= 0 || cycle_.now_s - checkpoint_s_ >= 60 || cycle_.now_s < checkpoint_s_) {
    checkpoint_s_ = cycle_.now_s;
    WriteCheckpoint();
  }
  if (!appender_) return;
  if (!series_) series_ = std::make_unique<TaskSeriesRecorder>(appender_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    series_->BeginCycle(t_ms);
    Walk(series_.get());
    series_->EndCycle();
  }
  (void)series_->Commit();  // the WAL write, outside the lock /metrics waits on
  if (series_->stats().errors > store_errors_seen_) {
    store_errors_seen_ = series_->stats().errors;
    log_->Warn("services: some cost-per-output figures could not be appended to the store");
  }
}

void ServiceCostService::Walk(TaskFamilySink* sink) const {
  if (!observed_) return;
  const auto& services = ledger_.services();
  TaskLabel label[2];
  label[0].name = "target";
  sink->Family("gpu_service_cost_total", "counter", "",
               "Allocation + energy cost of the GPUs serving the target (scrape.targets[].gpus).");
  for (const governance::ServiceCost& s : services) {
    if (s.spec.gpus.empty()) continue;
    label[0].value = s.spec.target;
    sink->Sample("gpu_service_cost_total", std::span(label, 1), s.Total());
  }
  sink->Family("gpu_service_outputs_total", "counter", "",
               "The target's outputs (scrape.targets[].outputs), reset-aware, kept across "
               "restarts.");
  for (const governance::ServiceCost& s : services) {
    if (!s.outputs_known) continue;
    label[0].value = s.spec.target;
    sink->Sample("gpu_service_outputs_total", std::span(label, 1), s.outputs);
  }
  sink->Family("gpu_service_cost_per_output", "gauge", "",
               "Cost / outputs of the target over the last hour (to the minute).");
  for (const governance::ServiceCost& s : services) {
    if (!s.has_cost_per_output || s.spec.gpus.empty()) continue;
    label[0].value = s.spec.target;
    sink->Sample("gpu_service_cost_per_output", std::span(label, 1), s.cost_per_output);
  }
  sink->Family("gpu_service_output_info", "gauge", "",
               "1 for each target with outputs, naming what one output is (unit).");
  label[1].name = "unit";
  for (const governance::ServiceCost& s : services) {
    if (s.spec.output_unit.empty()) continue;
    label[0].value = s.spec.target;
    label[1].value = s.spec.output_unit;
    sink->Sample("gpu_service_output_info", std::span(label, 2), 1);
  }
}

void ServiceCostService::RenderMetrics(collect::Format format, std::string* out) const {
  if (targets_.empty()) return;
  ExpositionSink sink(format, out);
  std::lock_guard<std::mutex> lock(mu_);
  Walk(&sink);
}

std::string ServiceCostService::ServicesJson() const {
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json services = nlohmann::json::array();
  const auto& all = ledger_.services();
  for (std::size_t i = 0; i < all.size(); ++i) {
    const governance::ServiceCost& s = all[i];
    const bool per_output = s.has_cost_per_output && !s.spec.gpus.empty();
    services.push_back({{"target", s.spec.target},
                        {"gpus", s.spec.gpus},
                        {"outputs_selector", selectors_[i]},
                        {"output_unit", s.spec.output_unit},
                        {"gpu_hours", s.gpu_s / 3600},
                        {"energy_kwh", s.energy_j / 3.6e6},
                        {"allocation_cost", s.allocation_cost},
                        {"energy_cost", s.energy_cost},
                        {"cost", s.Total()},
                        {"outputs", Num(s.outputs_known, s.outputs)},
                        {"window",
                         {{"seconds", s.window_s},
                          {"cost", s.window_cost},
                          {"outputs", Num(s.outputs_known, s.window_outputs)}}},
                        {"cost_per_output", Num(per_output, s.cost_per_output)},
                        {"cost_per_1k_outputs", Num(per_output, s.cost_per_output * 1000)}});
  }
  nlohmann::json data = {{"currency", ledger_.prices().currency},
                         {"window_seconds", ledger_.window_s()},
                         {"services", services}};
  return nlohmann::json{{"status", "success"}, {"data", data}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void ServiceCostService::RegisterRoutes(http::Server* server) {
  server->Get("/api/gw/v1/services", [this](const http::Request&, http::Response& res) {
    res.body = ServicesJson();
    res.content_type = "application/json";
  });
}

}  // namespace gw::serve
