// Evaluates PromQL over a small in-memory store: an instant query and a short range query at a
// time taken from the input, with a low sample limit and timeout so costly inputs end as errors.
#include <cmath>
#include <cstring>

#include "fuzz_util.h"
#include "promql/engine.h"
#include "tsdb/storage.h"

namespace {

constexpr int64_t kStartMs = 1'700'000'000'000;
constexpr int64_t kStepMs = 15'000;
constexpr int kPoints = 80;  // 20 minutes of history

// A few series of each kind the agent stores: gauges, counters with a reset, a stale marker,
// NaN and infinities, label values that need escaping.
gw::tsdb::MemoryQuerier* Store() {
  static gw::tsdb::MemoryQuerier* store = [] {
    auto* q = new gw::tsdb::MemoryQuerier;
    auto add = [&](gw::tsdb::Labels labels, auto value_at) {
      for (int i = 0; i < kPoints; ++i) {
        if (!q->Append(labels, kStartMs + i * kStepMs, value_at(i)).ok()) std::abort();
      }
    };
    for (int gpu = 0; gpu < 3; ++gpu) {
      const std::string g = std::to_string(gpu);
      add({{"__name__", "gpu_temperature_celsius"}, {"gpu", g}, {"uuid", "GPU-" + g}},
          [&](int i) { return 40.0 + gpu * 5 + (i % 7); });
      add({{"__name__", "gpu_energy_joules_total"}, {"gpu", g}},
          [&](int i) { return i == 40 ? 3.0 : 1000.0 * gpu + 250.0 * i; });
      add({{"__name__", "gpu_up"}, {"gpu", g}, {"job", "gpuwarden"}},
          [&](int i) { return gpu == 2 && i == kPoints - 1 ? gw::tsdb::StaleNaN() : 1.0; });
    }
    add({{"__name__", "odd_values"}, {"kind", "a\"b\\c\n"}}, [](int i) {
      const double v[] = {NAN, INFINITY, -INFINITY, -0.0, 1e308, 5e-324, 0, -1};
      return v[i % 8];
    });
    add({{"__name__", "http_request_duration_seconds_bucket"}, {"le", "0.1"}},
        [](int i) { return 1.0 * i; });
    add({{"__name__", "http_request_duration_seconds_bucket"}, {"le", "+Inf"}},
        [](int i) { return 2.0 * i; });
    return q;
  }();
  return store;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // First byte: where in (or around) the stored history the query runs.
  if (size < 1) return 0;
  const int64_t t = kStartMs + (static_cast<int64_t>(data[0]) - 32) * kStepMs;
  const std::string_view query = gw::fuzz::AsText(data + 1, size - 1);
  gw::promql::EngineOptions options;
  options.timeout_s = 2;
  options.max_samples = 200'000;
  const gw::promql::Engine engine(options);
  auto check = [](const gw::promql::QueryResult& r) {
    if (!r.ok() && r.error().message.empty()) gw::fuzz::Fail("query error without a message");
  };
  check(engine.Instant(*Store(), query, t));
  check(engine.Range(*Store(), query, t - 10 * kStepMs, t, kStepMs));
  return 0;
}
