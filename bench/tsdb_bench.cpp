// tsdb_bench: the store alone, without HTTP or PromQL — import an OpenMetrics file, then time
// Selects over it (cold, then warm from the block cache).
//   tsdb_bench FILE DIR [--no-wal] [--no-compact] [--query-hours H] [--block-hours H]
// Prints the import phases (read, parse+append, flush), bytes per sample of DIR, and per metric
// the best-of-5 Select time over the last H hours (default 5) of the data.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unordered_map>

#include "tsdb/db.h"
#include "tsdb/openmetrics.h"

namespace {

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

uint64_t DirBytes(const std::string& dir) {
  uint64_t n = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file()) n += e.file_size();
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gw;
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: tsdb_bench FILE DIR [--no-wal] [--no-compact] [--query-hours H] "
                 "[--block-hours H]\n");
    return 2;
  }
  tsdb::DBOptions o;
  o.dir = argv[2];
  o.retention_ms = o.rollup_retention_ms = 100LL * 365 * 24 * 3600 * 1000;
  double query_hours = 5;
  for (int i = 3; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--no-wal")) o.write_wal = false;
    if (!std::strcmp(argv[i], "--no-compact")) o.compact_on_flush = false;
    if (!std::strcmp(argv[i], "--query-hours") && i + 1 < argc) query_hours = std::atof(argv[++i]);
    if (!std::strcmp(argv[i], "--block-hours") && i + 1 < argc)
      o.block_range_ms = static_cast<int64_t>(std::atof(argv[++i]) * 3600e3);
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::ifstream in(argv[1], std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string text = buf.str();
  const double read_s = Since(t0);
  auto db = tsdb::DB::Open(o);
  if (!db.ok()) {
    std::fprintf(stderr, "%s\n", db.error().message.c_str());
    return 1;
  }
  const auto t1 = std::chrono::steady_clock::now();
  std::unordered_map<std::string, tsdb::SeriesRef> refs;
  tsdb::Labels labels;
  uint64_t samples = 0;
  int64_t last_t = 0;
  Status st = tsdb::ParseText(text, argv[1], {}, [&](std::string_view series, int64_t t, double v) {
    auto it = refs.find(std::string(series));
    if (it == refs.end()) {
      if (Status s = tsdb::ParseSeries(series, &labels); !s.ok()) return s;
      it = refs.emplace(std::string(series), *(*db)->GetRef(labels)).first;
    }
    if ((*db)->Append(it->second, t, v).ok()) ++samples;
    last_t = std::max(last_t, t);
    if (samples % 1000000 == 0) return (*db)->Commit();
    return Status::Ok();
  });
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.message().c_str());
    return 1;
  }
  const double append_s = Since(t1);
  const auto t2 = std::chrono::steady_clock::now();
  if (Status f = (*db)->Flush(); !f.ok()) {
    std::fprintf(stderr, "flush: %s\n", f.message().c_str());
    return 1;
  }
  const double flush_s = Since(t2);
  const uint64_t bytes = DirBytes(o.dir);
  std::printf(
      "samples %llu series %zu | read %.2f s, parse+append %.2f s (%.2f M/s), flush %.2f s "
      "(compaction %.2f s) | store total %.2f s = %.2f M samples/s | %.3f B/sample\n",
      static_cast<unsigned long long>(samples), refs.size(), read_s, append_s,
      samples / append_s / 1e6, flush_s, (*db)->stats().last_compaction_seconds, append_s + flush_s,
      samples / (append_s + flush_s) / 1e6,
      static_cast<double>(bytes) / static_cast<double>(samples));
  db->reset();
  // Queries on a fresh open (as `serve` would see them).
  auto qdb = std::move(tsdb::DB::Open(o)).value();
  const char* metrics[] = {"gpu_temperature_celsius", "gpu_energy_joules_total",
                           "gpu_utilization_ratio", "gpu_power_watts", "gpu_memory_used_bytes"};
  const int64_t maxt = last_t, mint = last_t - static_cast<int64_t>(query_hours * 3600e3);
  for (const char* m : metrics) {
    auto q = qdb->NewQuerier();
    std::vector<tsdb::Matcher> ms = {
        tsdb::Matcher::Make(tsdb::MatchType::kEqual, "__name__", m).value()};
    double best = 1e9, first = 0;
    size_t n = 0;
    for (int i = 0; i < 5; ++i) {
      std::vector<tsdb::SeriesData> out;
      const auto q0 = std::chrono::steady_clock::now();
      (void)q->Select(ms, mint, maxt, &out);
      const double s = Since(q0);
      if (i == 0) first = s;
      best = std::min(best, s);
      n = 0;
      for (const auto& sd : out) n += sd.samples.size();
    }
    std::printf("select %-26s %zu samples: first %.2f ms, best of 5 %.2f ms\n", m, n, first * 1e3,
                best * 1e3);
  }
  return 0;
}
