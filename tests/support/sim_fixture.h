// Test support: an in-process collector over libnvml-sim.so in stepped virtual time, loaded
// through the same nvml::Library (dlopen) path the agent uses on a real GPU.
#ifndef GPUWARDEN_TESTS_SUPPORT_SIM_FIXTURE_H_
#define GPUWARDEN_TESTS_SUPPORT_SIM_FIXTURE_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "base/log.h"
#include "collect/collector.h"
#include "nvml/library.h"

namespace gw::testing {

class SimCollector {
 public:
  // Loads `library` (default: the simulator), configures `scenario` with a stepped clock.
  explicit SimCollector(const std::string& scenario, collect::CollectorOptions options = {},
                        const std::string& library = GW_SIM_LIBRARY)
      : logger_(LogLevel::kDebug, [this](LogLevel, const std::string& line) {
          std::lock_guard<std::mutex> lock(mu_);
          lines_.push_back(line);
        }) {
    auto lib = nvml::Library::Open(library);
    if (!lib.ok()) {
      ADD_FAILURE() << lib.error().message;
      return;
    }
    library_ = std::move(lib.value());
    Status s = library_->ConfigureSimulator(scenario, /*stepped=*/1, 0);
    if (!s.ok()) {
      ADD_FAILURE() << s.message();
      return;
    }
    s = library_->Init();
    if (!s.ok()) {
      ADD_FAILURE() << s.message();
      return;
    }
    options.stepped = true;
    collector_ = std::make_unique<collect::Collector>(library_.get(), "", options, &logger_);
    collector_->Start();
    EXPECT_TRUE(collector_->WaitForFirstCycle(30));
  }
  ~SimCollector() {
    if (collector_) collector_->Stop();
    collector_.reset();
  }

  bool ok() const { return collector_ != nullptr; }
  void Advance(double seconds) {
    Status s = collector_->Advance(seconds);
    ASSERT_TRUE(s.ok()) << s.message();
  }
  std::shared_ptr<const collect::Snapshot> Latest() const { return collector_->Latest(); }
  collect::Collector& collector() { return *collector_; }
  nvml::Library& library() { return *library_; }

  // Everything logged so far, one string.
  std::string Log() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::string all;
    for (const auto& l : lines_) all += l + "\n";
    return all;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> lines_;
  Logger logger_;
  std::unique_ptr<nvml::Library> library_;
  std::unique_ptr<collect::Collector> collector_;
};

}  // namespace gw::testing

#endif  // GPUWARDEN_TESTS_SUPPORT_SIM_FIXTURE_H_
