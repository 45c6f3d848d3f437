// The console's chart API on a day of 1 s history: 8 GPUs x 86,400 samples of one metric in a
// real store (flushed and compacted, as after a day of `serve`), read and downsampled by
// web::ChartJson exactly as GET /api/gw/v1/chart does.
//
//   build/bin/chart_bench [--points 600] [--repeat 20]
//
// Prints, for the all-GPU chart and a one-GPU chart: samples read, response bytes, and the best
// and median time of `repeat` calls (the first call, which fills the store's block cache, apart).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "http/codec.h"
#include "tsdb/db.h"
#include "web/chart.h"

namespace {

using namespace gw;
constexpr int64_t kStartMs = 1700000000000;
constexpr int kGpus = 8;
constexpr int kSeconds = 86400;

double Ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "chart_bench: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  int points = 600, repeat = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--points") points = std::atoi(argv[i + 1]);
    if (k == "--repeat") repeat = std::atoi(argv[i + 1]);
  }
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("gw-chart-bench-" + std::to_string(getpid())))
          .string();
  tsdb::DBOptions options;
  options.dir = dir;
  options.write_wal = false;
  options.retention_ms = 100LL * 365 * 86400 * 1000;
  auto db = tsdb::DB::Open(options);
  if (!db.ok()) return Fail(db.error().message);
  std::vector<tsdb::SeriesRef> refs;
  for (int g = 0; g < kGpus; ++g) {
    auto ref = (*db)->GetRef({{"__name__", "gpu_temperature_celsius"},
                              {"gpu", std::to_string(g)},
                              {"uuid", "GPU-" + std::to_string(g)}});
    if (!ref.ok()) return Fail(ref.error().message);
    refs.push_back(*ref);
  }
  const auto t_fill = std::chrono::steady_clock::now();
  for (int s = 0; s < kSeconds; ++s) {
    for (int g = 0; g < kGpus; ++g) {
      // A training day: warm plateaus, a slow daily swing, a spike now and then.
      const double v = std::round(55 + 10 * std::sin(s / 7200.0 + g) + (s % 997 == g ? 20 : 0) +
                                  (s * 7 + g * 13) % 3);
      if (Status st = (*db)->Append(refs[g], kStartMs + s * 1000LL, v); !st.ok())
        return Fail(st.message());
    }
  }
  if (Status st = (*db)->Flush(); !st.ok()) return Fail(st.message());
  std::printf("store: %d GPUs x %d s at 1 s = %d samples, written and flushed in %.1f s\n", kGpus,
              kSeconds, kGpus * kSeconds, Ms(std::chrono::steady_clock::now() - t_fill) / 1000);

  for (const char* gpu_name : {"", "3"}) {
    const std::string gpu = gpu_name;
    web::ChartQuery q;
    q.metric = "gpu_temperature_celsius";
    q.gpu = gpu;
    q.start_ms = kStartMs;
    q.end_ms = kStartMs + kSeconds * 1000LL;
    q.points = points;
    std::string body;
    std::vector<double> times;
    for (int r = 0; r <= repeat; ++r) {
      auto querier = (*db)->NewQuerier();
      const auto t0 = std::chrono::steady_clock::now();
      if (Status st = web::ChartJson(querier.get(), q, &body); !st.ok()) return Fail(st.message());
      const double ms = Ms(std::chrono::steady_clock::now() - t0);
      if (r > 0) times.push_back(ms);  // the first call fills the block cache
      if (r == 0)
        std::printf("%s: first call (cold block cache) %.1f ms\n",
                    gpu.empty() ? "all GPUs" : "GPU 3", ms);
    }
    std::sort(times.begin(), times.end());
    const int series = gpu.empty() ? kGpus : 1;
    std::string gzipped;
    if (!http::GzipCompress(body, &gzipped)) return Fail("gzip failed");
    std::printf(
        "%s: %d samples -> %d points x %d series, %zu bytes of JSON (%zu gzipped); best "
        "%.1f ms, median %.1f ms\n",
        gpu.empty() ? "all GPUs" : "GPU 3", series * kSeconds, points, series, body.size(),
        gzipped.size(), times.front(), times[times.size() / 2]);
  }
  db->reset();
  std::filesystem::remove_all(dir);
  return 0;
}
