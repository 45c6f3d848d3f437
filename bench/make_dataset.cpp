// Makes a fixed OpenMetrics data set of simulated GPU telemetry, for the PromQL compatibility
// suite and the storage benchmarks: the collector runs over libnvml-sim.so in stepped time and
// every published snapshot becomes one sample per series, timestamped with simulated time.
//
//   make_dataset --scenario demo --duration 1h --step 15s --start 1700000000 --out data.om
//   make_dataset ... --edits     also: a counter reset, a gap, NaN values, a series that starts
//                                late and one that ends early, and extreme_value: values at the
//                                edges of the double range (what a compatibility suite needs)
//
// The output ends with "# EOF" and loads with `promtool tsdb create-blocks-from openmetrics`.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/log.h"
#include "collect/collector.h"
#include "collect/exposition.h"
#include "nvml/library.h"

namespace {

using namespace gw;

struct Args {
  std::string scenario = "demo", out = "data.om";
  double duration_s = 3600, step_s = 15;
  int64_t start_s = 1700000000;
  bool edits = false;
};

bool Parse(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (k == "--scenario") {
      a->scenario = next();
    } else if (k == "--out") {
      a->out = next();
    } else if (k == "--duration") {
      if (!ParseDurationSeconds(next(), &a->duration_s)) return false;
    } else if (k == "--step") {
      if (!ParseDurationSeconds(next(), &a->step_s)) return false;
    } else if (k == "--start") {
      a->start_s = std::atoll(next().c_str());
    } else if (k == "--edits") {
      a->edits = true;
    } else {
      return false;
    }
  }
  return a->step_s > 0 && a->duration_s > 0;
}

// One family's samples, in time order per series, written family by family (OpenMetrics wants
// a family's samples together).
struct FamilyOut {
  collect::MetricType type;
  std::map<std::string, std::string> series;  // series text -> its "value timestamp" lines
};

std::string Labels(const collect::GpuSnapshot& g, std::string_view extra) {
  std::string s = "{" + g.identity.label_text;
  if (!extra.empty()) s += "," + std::string(extra);
  return s + "}";
}

// --edits: a gauge family whose values sit at the edges of the double range, for the
// compatibility suite's overflow and rounding cases: extreme_value{k="huge"} swings between 0
// and 1e308 (sums of two can overflow), {k="mixed"} is ±1.7e308 and ±3e307 with +Inf and -Inf
// stretches, {k="tiny"} is subnormal numbers, zeros of both signs and 1e-300.
void AddExtremes(int64_t k, int64_t steps, const char* ts, FamilyOut* out, uint64_t* samples) {
  out->type = collect::MetricType::kGauge;
  const double x = static_cast<double>(k);
  const double frac = x / static_cast<double>(steps);
  const double huge = 1e308 * (0.5 + 0.5 * std::sin(x / 7));
  double mixed = k % 5 == 0 ? (k % 10 == 0 ? -1.7e308 : 1.7e308) : 3e307 * std::cos(x / 3);
  if (frac > 0.5 && frac < 0.52) mixed = std::numeric_limits<double>::infinity();
  if (frac > 0.6 && frac < 0.61) mixed = -std::numeric_limits<double>::infinity();
  const double tiny_values[] = {5e-324, 0.0, -0.0, 1e-300, -2.5e-320, 3e-310};
  const double tiny = tiny_values[k % 6];
  for (const auto& [labels, v] : {std::pair<const char*, double>{"{k=\"huge\"}", huge},
                                  {"{k=\"mixed\"}", mixed},
                                  {"{k=\"tiny\"}", tiny}}) {
    const std::string series = std::string("extreme_value") + labels;
    std::string& lines = out->series[series];
    lines += series + " ";
    collect::AppendValue(&lines, v);
    lines += ts;
    ++*samples;
  }
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!Parse(argc, argv, &args)) {
    std::fprintf(stderr,
                 "usage: make_dataset [--scenario NAME] [--duration D] [--step D] [--start UNIX]"
                 " [--edits] [--out FILE]\n");
    return 2;
  }
  auto lib = nvml::Library::Open(GW_SIM_LIBRARY);
  if (!lib.ok()) {
    std::fprintf(stderr, "%s\n", lib.error().message.c_str());
    return 1;
  }
  if (Status s = (*lib)->ConfigureSimulator(args.scenario, 1, 0); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return 1;
  }
  if (Status s = (*lib)->Init(); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return 1;
  }
  Logger logger(LogLevel::kError);
  collect::CollectorOptions options;
  options.stepped = true;
  options.fast_interval_s = args.step_s;
  options.slow_interval_s = std::max(args.step_s, 10.0);
  options.memory_peak_interval_s = 0;
  collect::Collector collector(lib->get(), "", options, &logger);
  collector.Start();
  collector.WaitForFirstCycle(60);

  std::map<std::string, FamilyOut> families;  // by name: deterministic order
  const int64_t steps = static_cast<int64_t>(args.duration_s / args.step_s);
  const int64_t step_ms = static_cast<int64_t>(std::llround(args.step_s * 1000));
  uint64_t samples = 0;
  for (int64_t k = 0; k <= steps; ++k) {
    if (k > 0 && !collector.Advance(args.step_s, 600).ok()) return 1;
    auto snap = collector.Latest();
    int64_t t_ms = args.start_s * 1000 + k * step_ms;
    char ts[32];
    std::snprintf(ts, sizeof ts, " %lld.%03lld\n", static_cast<long long>(t_ms / 1000),
                  static_cast<long long>(t_ms % 1000));
    if (args.edits) AddExtremes(k, steps, ts, &families["extreme_value"], &samples);
    for (const collect::GpuSnapshot& g : snap->gpus) {
      const unsigned gpu = g.identity.index;
      {  // gpu_info, for joins
        FamilyOut& info = families["gpu_info"];
        info.type = collect::MetricType::kGauge;
        std::string series = "gpu_info{" + g.identity.label_text + ",name=\"";
        collect::AppendEscapedLabelValue(&series, g.identity.name);
        series += "\"}";
        info.series[series] += series + " 1" + ts;
        ++samples;
      }
      for (size_t s = 0; s < collect::kSlotCount; ++s) {
        double v = g.values[s];
        if (collect::IsAbsent(v)) continue;
        const collect::SlotInfo& slot = collect::kSlots[s];
        const collect::Family& fam = collect::kFamilies[static_cast<size_t>(slot.family)];
        if (args.edits) {
          const double frac = static_cast<double>(k) / static_cast<double>(steps);
          // GPU 2: a gap in everything from 40% to 45% of the window.
          if (gpu == 2 && frac > 0.40 && frac < 0.45) continue;
          // GPU 3: the energy counter resets (driver reload) at 60%.
          if (gpu == 3 && slot.family == collect::FamilyId::kEnergy && frac >= 0.6)
            v -= 0.9 * g.values[s] * 0.6;
          // GPU 4: NaN temperatures for a few samples around 30%.
          if (gpu == 4 && slot.family == collect::FamilyId::kTemperature && frac > 0.30 &&
              frac < 0.32)
            v = std::nan("");
          // GPU 5's series start at 20%; GPU 6's end at 70%.
          if ((gpu == 5 && frac < 0.2) || (gpu == 6 && frac > 0.7)) continue;
        }
        FamilyOut& out = families[std::string(fam.name)];
        out.type = fam.type;
        std::string series = std::string(fam.name) + Labels(g, slot.labels);
        std::string& lines = out.series[series];
        lines += series + " ";
        collect::AppendValue(&lines, v);
        lines += ts;
        ++samples;
      }
    }
  }
  collector.Stop();

  FILE* f = std::fopen(args.out.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "cannot write %s\n", args.out.c_str());
    return 1;
  }
  for (auto& [name, fam] : families) {
    std::string family = name;
    if (fam.type == collect::MetricType::kCounter) family = name.substr(0, name.size() - 6);
    std::fprintf(f, "# TYPE %s %s\n", family.c_str(),
                 fam.type == collect::MetricType::kCounter ? "counter" : "gauge");
    // A series' samples stay together, in time order.
    for (const auto& [series, lines] : fam.series) std::fwrite(lines.data(), 1, lines.size(), f);
  }
  std::fprintf(f, "# EOF\n");
  std::fclose(f);
  std::fprintf(stderr, "%s: %llu samples, %zu families\n", args.out.c_str(),
               static_cast<unsigned long long>(samples), families.size());
  return 0;
}
