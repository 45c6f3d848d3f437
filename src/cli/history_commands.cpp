// `gpuwarden query`, `gpuwarden tsdb import` and `gpuwarden tsdb export`.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "base/clock.h"
#include "cli/agent.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "http/client.h"
#include "http/prom_api.h"
#include "http/prom_format.h"
#include "promql/engine.h"
#include "promql/parser.h"
#include "serve/query_metrics.h"
#include "serve/store.h"
#include "tsdb/openmetrics.h"

namespace gw::cli {

namespace {

int64_t NowMs() {
  return SystemClock().NowMs();
}

std::string LabelsText(const nlohmann::json& metric) {
  std::string name, rest;
  for (auto it = metric.begin(); it != metric.end(); ++it) {
    if (it.key() == "__name__") {
      name = it.value();
      continue;
    }
    rest += (rest.empty() ? "" : ", ") + it.key() + "=\"" + it.value().get<std::string>() + "\"";
  }
  return name + "{" + rest + "}";
}

// Prints an API reply ({"status":…,"data":…}) for people.
void PrintReadable(const nlohmann::json& data) {
  const std::string type = data["resultType"];
  const auto& result = data["result"];
  if (type == "scalar" || type == "string") {
    std::printf("%s\n", result[1].get<std::string>().c_str());
    return;
  }
  if (result.empty()) {
    std::printf("(no data)\n");
    return;
  }
  for (const auto& s : result) {
    if (type == "vector") {
      std::printf("%s => %s @%s\n", LabelsText(s["metric"]).c_str(),
                  s["value"][1].get<std::string>().c_str(), s["value"][0].dump().c_str());
      continue;
    }
    std::printf("%s =>\n", LabelsText(s["metric"]).c_str());
    for (const auto& p : s["values"])
      std::printf("  %s @%s\n", p[1].get<std::string>().c_str(), p[0].dump().c_str());
  }
}

int Print(int http_status, const std::string& body, bool json) {
  nlohmann::json reply;
  try {
    reply = nlohmann::json::parse(body);
  } catch (...) {
    std::fprintf(stderr, "gpuwarden: unexpected reply (HTTP %d): %.200s\n", http_status,
                 body.c_str());
    return 1;
  }
  if (reply.value("status", "") != "success") {
    std::fprintf(stderr, "gpuwarden: %s: %s\n", reply.value("errorType", "error").c_str(),
                 reply.value("error", "").c_str());
    return 1;
  }
  if (json) {
    std::printf("%s\n", body.c_str());
  } else {
    PrintReadable(reply["data"]);
  }
  return 0;
}

}  // namespace

int RunQuery(const config::Config& config, const QueryArgs& args, Logger* logger) {
  const bool range = !args.start.empty() || !args.end.empty() || !args.step.empty();
  if (range && (args.start.empty() || args.end.empty() || args.step.empty())) {
    std::fprintf(stderr, "gpuwarden: a range query needs --start, --end and --step\n");
    return 2;
  }
  // Times are read here, relative ones ("-5m", "now-1h") against this machine's clock, and sent
  // to an agent as Unix seconds.
  const int64_t now = NowMs();
  int64_t t = now, start = 0, end = 0, step = 0;
  struct TimeFlag {
    const char* name;
    const std::string& text;
    int64_t* out;
  } times[] = {
      {"--time", args.time, &t}, {"--start", args.start, &start}, {"--end", args.end, &end}};
  for (const TimeFlag& f : times) {
    if (!f.text.empty() && !ParseTimeArg(f.text, now, f.out)) {
      std::fprintf(stderr, "gpuwarden: %s\n", TimeArgError(f.name, f.text).c_str());
      return 2;
    }
  }
  if (range) {
    if (!http::ParsePromDuration(args.step, &step) || step <= 0) {
      std::fprintf(stderr,
                   "gpuwarden: --step: cannot read '%s' as a step; use a positive duration such "
                   "as 60, 15s or 1m\n",
                   args.step.c_str());
      return 2;
    }
    if (end < start) {
      std::fprintf(stderr, "gpuwarden: --end (%s) is before --start (%s)\n", args.end.c_str(),
                   args.start.c_str());
      return 2;
    }
  }
  auto seconds = [](int64_t ms) {
    std::string out;
    http::AppendPromTimestamp(&out, ms);
    return out;
  };
  if (!args.url.empty()) {
    std::string path = range ? "/api/v1/query_range?query=" : "/api/v1/query?query=";
    path += http::UrlEncode(args.expr);
    if (range) {
      path += "&start=" + seconds(start) + "&end=" + seconds(end) +
              "&step=" + http::UrlEncode(args.step);
    } else if (!args.time.empty()) {
      path += "&time=" + seconds(t);
    }
    std::string base = args.url;
    while (!base.empty() && base.back() == '/') base.pop_back();
    auto reply = GetFromAgent(base + path, 60);
    if (!reply.ok()) {
      std::fprintf(stderr, "gpuwarden: %s\n", reply.error().message.c_str());
      return 1;
    }
    return Print(reply->status, reply->body, args.json);
  }

  if (!DataDirPresent(config.storage.path, "query")) return 1;
  auto db = serve::OpenStoreForCommand(config.storage, logger, serve::StoreMode::kReadOnly);
  if (!db) return 1;
  auto querier = db->NewQuerier();
  promql::Engine engine(serve::QueryEngineOptions(config));
  promql::QueryResult result = range ? engine.Range(*querier, args.expr, start, end, step)
                                     : engine.Instant(*querier, args.expr, t);
  if (!result.ok()) {
    std::fprintf(stderr, "gpuwarden: %s\n", result.error().message.c_str());
    return 1;
  }
  return Print(200,
               "{\"status\":\"success\",\"data\":" + http::QueryResultJson(result.value()) + "}",
               args.json);
}

namespace {

// Parsing runs on its own thread, a few batches ahead of the appends: the two halves of an import
// take similar time, so on two cores the whole runs in about the time of the slower one.
class ParsePipeline {
 public:
  struct Record {
    std::string_view series;  // into the mapped file
    int64_t t_ms;
    double v;
  };
  using Batch = std::vector<Record>;

  ParsePipeline(std::string_view text, std::string file)
      : thread_([this, text, file = std::move(file)] { Run(text, file); }) {}
  ~ParsePipeline() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      abandoned_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  // The next batch in file order; false at the end (then status() says how it ended).
  bool Next(Batch* batch) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !ready_.empty() || done_; });
    if (ready_.empty()) return false;
    if (!batch->empty()) spare_.push_back(std::move(*batch));
    *batch = std::move(ready_.front());
    ready_.erase(ready_.begin());
    cv_.notify_all();
    return true;
  }
  Status status() {
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }

 private:
  static constexpr size_t kBatch = 1 << 16, kAhead = 4;

  void Run(std::string_view text, const std::string& file) {
    Batch batch;
    batch.reserve(kBatch);
    auto hand_over = [&]() -> bool {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return ready_.size() < kAhead || abandoned_; });
      if (abandoned_) return false;
      ready_.push_back(std::move(batch));
      if (!spare_.empty()) {
        batch = std::move(spare_.back());
        spare_.pop_back();
      } else {
        batch = Batch();
      }
      batch.clear();
      batch.reserve(kBatch);
      cv_.notify_all();
      return true;
    };
    std::string_view last;  // series text is checked once per run, so errors carry the line
    tsdb::Labels scratch;
    Status parsed = tsdb::ParseText(text, file, {},
                                    [&](std::string_view series, int64_t t_ms, double v) -> Status {
                                      if (series != last) {
                                        if (Status s = tsdb::ParseSeries(series, &scratch); !s.ok())
                                          return s;
                                        last = series;
                                      }
                                      batch.push_back({series, t_ms, v});
                                      if (batch.size() == kBatch && !hand_over())
                                        return Error{"import abandoned"};
                                      return Status::Ok();
                                    });
    if (parsed.ok() && !batch.empty()) hand_over();
    std::lock_guard<std::mutex> lock(mu_);
    status_ = parsed;
    done_ = true;
    cv_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Batch> ready_, spare_;
  bool done_ = false, abandoned_ = false;
  Status status_;
  std::thread thread_;  // last: starts after the members above exist
};

// The typical spacing of the data's samples: the median gap between consecutive samples of the
// same series among the file's first 50,000 samples (0 when no series has two).
double TypicalSpacingSeconds(std::string_view text) {
  std::unordered_map<std::string, int64_t> last;  // series text → its previous timestamp
  std::vector<int64_t> gaps;
  size_t seen = 0;
  // Stopped after 50,000 samples; a malformed line is the import's to report.
  (void)tsdb::ParseText(text, "", {}, [&](std::string_view series, int64_t t_ms, double) -> Status {
    auto [it, fresh] = last.try_emplace(std::string(series), t_ms);
    if (!fresh) {
      if (t_ms > it->second) gaps.push_back(t_ms - it->second);
      it->second = t_ms;
    }
    return ++seen < 50'000 ? Status::Ok() : Status(Error{"enough samples"});
  });
  if (gaps.empty()) return 0;
  auto mid = gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2);
  std::nth_element(gaps.begin(), mid, gaps.end());
  return static_cast<double>(*mid) / 1000;
}

}  // namespace

int RunTsdbImport(const config::Config& config, const std::string& file, Logger* logger) {
  // One writer per data directory: refused, touching nothing, while an agent or another import
  // holds it (its checkpoint would delete the agent's live WAL segments).
  auto lock = serve::LockDataDir(config.storage, "tsdb import");
  if (!lock.ok()) {
    std::fprintf(stderr, "gpuwarden: %s\n", lock.error().message.c_str());
    return 1;
  }
  // The file is mapped, not copied: parsing reads it in place.
  int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0) {
    std::fprintf(stderr, "gpuwarden: %s: cannot read the file\n", file.c_str());
    if (fd >= 0) close(fd);
    return 1;
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* mapped = size > 0 ? mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0) : nullptr;
  close(fd);
  if (size > 0 && mapped == MAP_FAILED) {
    std::fprintf(stderr, "gpuwarden: %s: cannot map the file\n", file.c_str());
    return 1;
  }
  if (mapped != nullptr) madvise(mapped, size, MADV_SEQUENTIAL);
  struct Unmap {
    void* p;
    size_t n;
    ~Unmap() {
      if (p != nullptr) munmap(p, n);
    }
  } unmap{mapped, size};
  const std::string_view text(static_cast<const char*>(mapped), size);
  // No WAL for an import: Flush makes it durable at the end, and a crashed import is re-run.
  // A new directory for data 10 s or more apart gets 24 h blocks: a quarter of the rows, larger
  // compression frames, and below the rollups column's threshold per 5-minute window
  // (docs/tsdb-format.md §1b, "Block range").
  config::StorageConfig storage = config.storage;
  if (storage.block_range_s == 0 &&
      !std::filesystem::exists(std::filesystem::path(storage.path) / "tsdb.sqlite")) {
    const double spacing = TypicalSpacingSeconds(text);
    if (spacing >= 10) {
      storage.block_range_s = 86400;
      std::fprintf(stderr, "new data directory: 24h blocks (samples ~%s apart)\n",
                   FormatDuration(spacing).c_str());
    }
  }
  auto db = serve::OpenStoreForCommand(storage, logger, serve::StoreMode::kBulkImport);
  if (!db) return 1;
  std::unordered_map<std::string, tsdb::SeriesRef> refs;
  tsdb::Labels labels;
  std::string last_series;  // samples of one series come in a run: look up once per run
  tsdb::SeriesRef last_ref{};
  uint64_t samples = 0, refused = 0;
  auto start = std::chrono::steady_clock::now();
  Status parsed;
  {
    ParsePipeline pipeline(text, file);
    ParsePipeline::Batch batch;
    while (parsed.ok() && pipeline.Next(&batch)) {
      for (const ParsePipeline::Record& r : batch) {
        if (r.series != last_series || last_series.empty()) {
          last_series.assign(r.series);
          auto it = refs.find(last_series);
          if (it == refs.end()) {
            if (Status s = tsdb::ParseSeries(r.series, &labels); !s.ok()) {
              parsed =
                  Error{file + ": " + std::string(r.series.substr(0, 80)) + ": " + s.message()};
              break;
            }
            auto ref = db->GetRef(labels);
            if (!ref.ok()) {
              parsed = Status(ref.error());
              break;
            }
            it = refs.emplace(last_series, *ref).first;
          }
          last_ref = it->second;
        }
        if (db->Append(last_ref, r.t_ms, r.v).ok()) {
          ++samples;
        } else {
          ++refused;
        }
      }
    }
    if (parsed.ok()) parsed = pipeline.status();
  }
  if (!parsed.ok()) {
    std::fprintf(stderr, "gpuwarden: %s\n", parsed.message().c_str());
    return 1;
  }
  if (Status s = db->Flush(); !s.ok()) {
    std::fprintf(stderr, "gpuwarden: flush: %s\n", s.message().c_str());
    return 1;
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr,
               "imported %llu samples of %zu series in %.2f s (%.0f samples/s); %llu refused as "
               "out of order\n",
               static_cast<unsigned long long>(samples), refs.size(), seconds,
               static_cast<double>(samples) / std::max(seconds, 1e-9),
               static_cast<unsigned long long>(refused));
  return 0;
}

int RunTsdbExport(const config::Config& config, const std::string& match, Logger* logger) {
  if (!DataDirPresent(config.storage.path, "tsdb export")) return 1;
  auto db = serve::OpenStoreForCommand(config.storage, logger, serve::StoreMode::kReadOnly);
  if (!db) return 1;
  std::vector<tsdb::Matcher> matchers;
  if (match.empty()) {
    matchers.push_back(*tsdb::Matcher::Make(tsdb::MatchType::kRegexMatch, "__name__", ".+"));
  } else {
    auto expr = promql::Parse(match);
    if (!expr.ok() || (*expr)->kind != promql::ExprKind::kVectorSelector) {
      std::fprintf(stderr,
                   "gpuwarden: --match: expected a series selector such as "
                   "gpu_power_watts{gpu=\"0\"}\n");
      return 2;
    }
    matchers = static_cast<promql::VectorSelector&>(**expr).matchers;
  }
  std::vector<tsdb::SeriesData> series;
  auto querier = db->NewQuerier();
  if (Status s = querier->Select(matchers, INT64_MIN / 2, INT64_MAX / 2, &series); !s.ok()) {
    std::fprintf(stderr, "gpuwarden: %s\n", s.message().c_str());
    return 1;
  }
  std::string out;
  for (const tsdb::SeriesData& s : series) {
    out.clear();
    tsdb::AppendOpenMetricsSeries(s, &out);
    std::fwrite(out.data(), 1, out.size(), stdout);
  }
  std::fputs("# EOF\n", stdout);
  return 0;
}

}  // namespace gw::cli
