// Test support: a scenario's telemetry recorded into memory exactly as `serve` records it (the
// collector over libnvml-sim.so in stepped time, collect::Recorder appending every snapshot),
// plus OpenMetrics text imported beside it — for tests that read history (diagnose, report).
#ifndef GPUWARDEN_TESTS_SUPPORT_SIM_STORE_H_
#define GPUWARDEN_TESTS_SUPPORT_SIM_STORE_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "collect/recorder.h"
#include "support/sim_fixture.h"
#include "tsdb/openmetrics.h"
#include "tsdb/storage.h"

namespace gw::testing {

// A tsdb::Appender over a MemoryQuerier: what Recorder writes becomes queryable.
class MemoryStore : public tsdb::MemoryAppender {
 public:
  MemoryStore() : tsdb::MemoryAppender(&querier_) {}
  Status Append(Ref ref, int64_t t_ms, double v) override {
    last_ms_ = std::max(last_ms_, t_ms);
    if (first_ms_ == 0 || t_ms < first_ms_) first_ms_ = t_ms;
    return tsdb::MemoryAppender::Append(ref, t_ms, v);
  }

  // Adds OpenMetrics text (float-second timestamps) to the same store.
  Status Import(const std::string& text) {
    return tsdb::ParseText(text, "test", {}, [this](std::string_view series, int64_t t, double v) {
      tsdb::Labels labels;
      if (Status s = tsdb::ParseSeries(series, &labels); !s.ok()) return s;
      return querier_.Append(labels, t, v);
    });
  }

  tsdb::MemoryQuerier& querier() { return querier_; }
  int64_t first_ms() const { return first_ms_; }
  int64_t last_ms() const { return last_ms_; }
  // The uuid label of GPU `gpu` (from gpu_up), "" if unknown.
  std::string Uuid(const std::string& gpu) {
    std::vector<tsdb::SeriesData> out;
    auto name = tsdb::Matcher::Make(tsdb::MatchType::kEqual, "__name__", "gpu_up");
    auto index = tsdb::Matcher::Make(tsdb::MatchType::kEqual, "gpu", gpu);
    if (!querier_.Select({*name, *index}, 0, INT64_MAX / 2, &out).ok() || out.empty()) return "";
    return std::string(tsdb::LabelValue(out.front().labels, "uuid"));
  }

 private:
  tsdb::MemoryQuerier querier_;
  int64_t first_ms_ = 0, last_ms_ = 0;
};

// Runs `scenario` for `duration_s` of simulated time, one collection cycle (and one recorded
// snapshot) every `step_s`, memory peaks sub-sampled every 250 ms as in `serve`.
inline void RecordScenario(const std::string& scenario, double duration_s, double step_s,
                           MemoryStore* store) {
  collect::CollectorOptions options;
  options.fast_interval_s = step_s;
  options.slow_interval_s = step_s;
  options.memory_peak_interval_s = 0.25;
  SimCollector sim(scenario, options);
  ASSERT_TRUE(sim.ok());
  Logger logger(LogLevel::kError);
  collect::Recorder recorder(store, &logger);
  recorder.RecordNow(*sim.Latest());
  for (double t = step_s; t <= duration_s + 1e-9; t += step_s) {
    sim.Advance(step_s);
    recorder.RecordNow(*sim.Latest());
  }
}

}  // namespace gw::testing

#endif  // GPUWARDEN_TESTS_SUPPORT_SIM_STORE_H_
