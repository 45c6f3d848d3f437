#include "serve/agent.h"

#include <unistd.h>

#include <filesystem>

namespace gw::serve {

namespace fs = std::filesystem;

std::string FindSimulatorLibrary() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  fs::path dir = exe.parent_path();
  for (const fs::path& candidate :
       {dir / "libnvml-sim.so", dir / ".." / "lib" / "gpuwarden" / "libnvml-sim.so"}) {
    if (fs::exists(candidate, ec)) return fs::weakly_canonical(candidate, ec).string();
  }
  return "";
}

namespace {

// A scenario given as a path is passed on as an absolute path; a bare name is a built-in.
std::string ScenarioArgument(const std::string& scenario) {
  bool is_path = scenario.find('/') != std::string::npos ||
                 (scenario.size() > 5 && scenario.substr(scenario.size() - 5) == ".yaml");
  if (!is_path) return scenario;
  std::error_code ec;
  fs::path p = fs::absolute(scenario, ec);
  return ec ? scenario : p.string();
}

}  // namespace

Agent::Agent(const config::Config& config, Logger* logger) : config_(config), log_(logger) {}

Agent::~Agent() {
  (void)Stop();
}

void Agent::Start(collect::Collector::PublishListener on_publish) {
  const bool simulate = !config_.simulate.scenario.empty();
  simulated_ = simulate;
  std::string path = config_.nvml_library;
  if (path.empty()) path = simulate ? FindSimulatorLibrary() : nvml::kDefaultLibrary;
  if (path.empty())
    nvml_error_ =
        "--simulate needs libnvml-sim.so beside the gpuwarden binary (or --nvml-lib PATH)";

  collect::CollectorOptions options = config_.collect;
  if (nvml_error_.empty()) {
    auto opened = nvml::Library::Open(path);
    if (!opened.ok()) {
      nvml_error_ = opened.error().message;
    } else {
      library_ = std::move(opened.value());
      if (simulate) {
        // The agent always says which clock it drives: stepped only when asked for.
        int clock_mode = config_.simulate.clock == "stepped" ? 1 : 0;
        Status s = library_->ConfigureSimulator(ScenarioArgument(config_.simulate.scenario),
                                                clock_mode, config_.simulate.speed);
        if (!s.ok()) nvml_error_ = s.message();
        options.stepped = clock_mode == 1;
        options.sim_start_unix = config_.simulate.start_unix;
      }
      if (nvml_error_.empty()) {
        Status s = library_->Init();
        if (!s.ok()) nvml_error_ = s.message();
      }
      if (!nvml_error_.empty()) library_.reset();
    }
  }
  collector_ = std::make_unique<collect::Collector>(library_.get(), nvml_error_, options, log_);
  if (on_publish) collector_->OnPublish(std::move(on_publish));
  collector_->Start();
}

collect::Collector::StopOutcome Agent::Stop() {
  if (collector_) stop_outcome_ = collector_->Stop();
  collector_.reset();
  if (!stop_outcome_.clean()) {
    // A thread left inside NVML may still read the library's function table when its call
    // returns: the table stays (and the library stays loaded) until the process exits.
    (void)library_.release();
  }
  library_.reset();
  return stop_outcome_;
}

}  // namespace gw::serve
