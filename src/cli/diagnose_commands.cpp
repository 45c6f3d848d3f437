#include "cli/diagnose_commands.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "cli/agent.h"
#include "cli/args.h"
#include "http/client.h"
#include "http/prom_api.h"
#include "http/prom_format.h"
#include "hub/fleet.h"
#include "report/report.h"
#include "serve/jobs_service.h"
#include "serve/store.h"

namespace gw::cli {

namespace {

int64_t NowMs() {
  return SystemClock().NowMs();
}

// --time (default now) and --since; prints the problem and returns false when malformed.
bool ParseWhen(const std::string& time, const std::string& since, const char* since_flag,
               int64_t* t_ms, double* window_s) {
  *t_ms = NowMs();
  if (!time.empty() && !ParseTimeArg(time, *t_ms, t_ms)) {
    std::fprintf(stderr, "gpuwarden: %s\n", TimeArgError("--time", time).c_str());
    return false;
  }
  if (!ParseDurationSeconds(since, window_s) || *window_s <= 0) {
    std::fprintf(stderr, "gpuwarden: %s: expected a duration such as 1h or 7d, got '%s'\n",
                 since_flag, since.c_str());
    return false;
  }
  return true;
}

// "http://host:9966/" -> "http://host:9966".
std::string BaseUrl(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

// The message of an API error body ({"status":"error","error":"…"}), else the status.
std::string ApiErrorMessage(const http::ClientReply& reply) {
  try {
    auto j = nlohmann::json::parse(reply.body);
    if (j.is_object() && j.contains("error") && j["error"].is_string())
      return j["error"].get<std::string>();
  } catch (const nlohmann::json::exception&) {
  }
  return "HTTP " + std::to_string(reply.status);
}

// Unix seconds for an agent: relative times are read here, against this machine's clock.
std::string SecondsParam(int64_t t_ms) {
  std::string out;
  http::AppendPromTimestamp(&out, t_ms);
  return out;
}

// `report --url`: the agent builds the report (GET /api/gw/v1/report) from its own store.
int FetchReport(const ReportArgs& args, int64_t t_ms, std::string* text) {
  std::string path = "/api/gw/v1/report?period=" + http::UrlEncode(args.period) +
                     "&format=" + (args.json ? "json" : "html");
  if (!args.time.empty()) path += "&time=" + SecondsParam(t_ms);
  const std::string url = BaseUrl(args.url) + path;
  auto reply = GetFromAgent(url, 600);  // a week of a large node takes a while
  if (!reply.ok()) {
    std::fprintf(stderr, "gpuwarden: %s\n", reply.error().message.c_str());
    return 1;
  }
  if (reply->status != 200) {
    std::fprintf(stderr, "gpuwarden: %s: %s\n", url.c_str(), ApiErrorMessage(*reply).c_str());
    return 1;
  }
  *text = std::move(reply->body);
  return 0;
}

// `--gpu G` naming no GPU of the data: said, exit 1, rather than "none".
bool KnownGpu(const diagnose::Diagnosis& d, const std::string& gpu) {
  if (gpu.empty() || d.gpus.empty()) return true;  // an agent too old to list them: no check
  if (std::find(d.gpus.begin(), d.gpus.end(), gpu) != d.gpus.end()) return true;
  std::string indexes;
  for (const std::string& g : d.gpus)
    if (!g.empty() && std::isdigit(static_cast<unsigned char>(g[0])))
      indexes += (indexes.empty() ? "" : ", ") + g;
  std::fprintf(stderr, "gpuwarden: no such GPU: %s (GPUs with data in %s: %s)\n", gpu.c_str(),
               diagnose::CoverageText(d.window_s, d.data_start_ms, d.data_end_ms).c_str(),
               indexes.empty() ? "none" : indexes.c_str());
  return false;
}

// --store: the central store's client (no cache: one command, one pass), or nullptr after
// saying what is wrong with the URL.
std::unique_ptr<hub::Store> OpenCentralStore(const std::string& url, double timeout_s) {
  auto store = hub::Store::Create({url, timeout_s, 0});
  if (store.ok()) return std::move(*store);
  std::fprintf(stderr, "gpuwarden: %s\n", store.error().message.c_str());
  return nullptr;
}

void Print(const diagnose::Diagnosis& d, bool json) {
  std::string text =
      json ? nlohmann::json::parse(diagnose::ToJson(d)).dump(2) + "\n" : diagnose::ToText(d);
  std::fwrite(text.data(), 1, text.size(), stdout);
}

}  // namespace

int RunDiagnose(const config::Config& config, const DiagnoseArgs& args, Logger* logger) {
  if (int(!args.gpu.empty()) + int(!args.job.empty()) + int(!args.team.empty()) > 1) {
    std::fprintf(stderr, "gpuwarden: --gpu, --job and --team exclude each other\n");
    return 2;
  }
  int64_t t_ms = 0;
  double window_s = 0;
  const std::string since =
      args.since.empty() ? FormatDuration(config.diagnose.window_s) : args.since;
  if (!ParseWhen(args.time, since, "--since", &t_ms, &window_s)) return 2;
  const diagnose::FindingFilter filter{args.gpu, args.job, args.team};
  if (!args.store.empty()) {
    auto store = OpenCentralStore(args.store, 60);
    if (!store) return 2;
    const diagnose::Options options{
        .time_ms = t_ms, .window_s = window_s, .thresholds = config.diagnose.thresholds};
    auto f = hub::DiagnoseFleet(store.get(), options, args.node_label);
    if (!f.ok()) {
      std::fprintf(stderr, "gpuwarden: %s\n", f.error().message.c_str());
      return 1;
    }
    if (!KnownGpu(f->diagnosis, args.gpu)) return 1;
    f->diagnosis = diagnose::Filter(f->diagnosis, filter);
    std::string text =
        args.json ? nlohmann::json::parse(hub::FleetFindingsJson(*f, "", {})).dump(2) + "\n"
                  : hub::FleetFindingsText(*f);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  if (!args.url.empty()) {
    // Without --since the agent's own window (diagnose.window): its cached evaluation.
    std::string query;
    auto param = [&query](const char* name, const std::string& value) {
      if (!value.empty())
        query += (query.empty() ? "?" : "&") + std::string(name) + "=" + http::UrlEncode(value);
    };
    param("since", args.since);
    if (!args.time.empty()) param("time", SecondsParam(t_ms));
    param("gpu", args.gpu);
    param("job", args.job);
    param("team", args.team);
    const std::string base = BaseUrl(args.url);
    const std::string path = "/api/gw/v1/findings" + query;
    auto reply = GetFromAgent(base + path, 120);
    if (!reply.ok()) {
      std::fprintf(stderr, "gpuwarden: %s\n", reply.error().message.c_str());
      return 1;
    }
    auto d = diagnose::FromJson(reply->body);
    if (!d.ok()) {
      std::fprintf(stderr, "gpuwarden: %s%s (HTTP %d)\n", base.c_str(), path.c_str(),
                   reply->status);
      std::fprintf(stderr, "gpuwarden: %s\n", d.error().message.c_str());
      return 1;
    }
    if (!KnownGpu(*d, args.gpu)) return 1;
    Print(*d, args.json);
    return 0;
  }
  if (!DataDirPresent(config.storage.path, "diagnose")) return 1;
  auto db = serve::OpenStoreForCommand(config.storage, logger, serve::StoreMode::kReadOnly);
  if (!db) return 1;
  auto querier = db->NewQuerier();
  promql::Engine engine;
  diagnose::Options options;
  options.time_ms = t_ms;
  options.window_s = window_s;
  options.thresholds = config.diagnose.thresholds;
  auto d = diagnose::Diagnose(*querier, engine, options);
  if (!d.ok()) {
    std::fprintf(stderr, "gpuwarden: %s\n", d.error().message.c_str());
    return 2;
  }
  if (!KnownGpu(*d, args.gpu)) return 1;
  Print(diagnose::Filter(*d, filter), args.json);
  return 0;
}

int RunReport(const config::Config& config, const ReportArgs& args, Logger* logger) {
  int64_t t_ms = 0;
  double period_s = 0;
  if (!ParseWhen(args.time, args.period, "--period", &t_ms, &period_s)) return 2;
  if (period_s < 600) {
    std::fprintf(stderr, "gpuwarden: --period: at least 10m, got '%s'\n", args.period.c_str());
    return 2;
  }
  std::string text;
  size_t findings = 0;
  if (!args.store.empty()) {
    auto store = OpenCentralStore(args.store, 120);
    if (!store) return 2;
    const report::Options options{
        .time_ms = t_ms, .period_s = period_s, .thresholds = config.diagnose.thresholds};
    auto r = hub::FleetReport(store.get(), options, args.json, args.node_label);
    if (!r.ok()) {
      std::fprintf(stderr, "gpuwarden: %s\n", r.error().message.c_str());
      return 1;
    }
    text = std::move(*r);
  } else if (!args.url.empty()) {
    if (int rc = FetchReport(args, t_ms, &text); rc != 0) return rc;
  } else {
    if (!DataDirPresent(config.storage.path, "report")) return 1;
    auto db = serve::OpenStoreForCommand(config.storage, logger, serve::StoreMode::kReadOnly);
    if (!db) return 1;
    auto querier = db->NewQuerier();
    promql::Engine engine;
    report::Options options;
    // Outcomes and throughput per team come from the job records, when there are any.
    std::vector<jobs::JobRecord> records;
    const std::string records_dir = serve::JobRecordsDir(config);
    if (std::filesystem::exists(records_dir + "/jobs.jsonl")) {
      auto store = jobs::JobRecordStore::Open(records_dir);
      auto all =
          store.ok() ? (*store)->ReadAll() : Expected<std::vector<jobs::JobRecord>>(store.error());
      if (all.ok()) {
        records = std::move(*all);
        options.records = &records;
      } else {
        std::fprintf(stderr, "gpuwarden: job records: %s\n", all.error().message.c_str());
      }
    }
    options.time_ms = t_ms;
    options.period_s = period_s;
    options.thresholds = config.diagnose.thresholds;
    auto r = report::Build(*querier, engine, options);
    if (!r.ok()) {
      std::fprintf(stderr, "gpuwarden: %s\n", r.error().message.c_str());
      return 2;
    }
    text = args.json ? report::ToJson(*r) : report::ToHtml(*r);
    findings = r->diagnosis.findings.size();
  }
  if (args.out.empty() || args.out == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  // Written beside the target and renamed, so a reader never sees half a report.
  const std::string tmp = args.out + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (!out.good()) {
      std::fprintf(stderr, "gpuwarden: %s: cannot write the report\n", args.out.c_str());
      std::remove(tmp.c_str());
      return 1;
    }
  }
  if (std::rename(tmp.c_str(), args.out.c_str()) != 0) {
    std::fprintf(stderr, "gpuwarden: %s: cannot write the report\n", args.out.c_str());
    std::remove(tmp.c_str());
    return 1;
  }
  if (!args.store.empty()) {
    std::fprintf(stderr, "report for %s from %s written to %s\n", args.period.c_str(),
                 args.store.c_str(), args.out.c_str());
  } else if (args.url.empty()) {
    std::fprintf(stderr, "report for %s written to %s (%zu findings)\n", args.period.c_str(),
                 args.out.c_str(), findings);
  } else {
    std::fprintf(stderr, "report for %s from %s written to %s\n", args.period.c_str(),
                 args.url.c_str(), args.out.c_str());
  }
  return 0;
}

}  // namespace gw::cli
