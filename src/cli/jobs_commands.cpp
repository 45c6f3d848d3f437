#include "cli/jobs_commands.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "cli/agent.h"
#include "cli/snapshot_view.h"
#include "cli/table.h"
#include "http/client.h"
#include "jobs/gpu_unit.h"
#include "serve/jobs_service.h"

namespace gw::cli {

namespace {

std::string Fmt(const char* format, double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, v);
  return buffer;
}

std::string Timestamp(std::int64_t unix_seconds) {
  return unix_seconds <= 0 ? "-" : UtcTimestamp(static_cast<double>(unix_seconds));
}

std::string OrDash(const std::string& s) {
  return s.empty() ? "-" : s;
}

std::string Elapsed(const jobs::JobRecord& r) {
  if (r.start_time <= 0) return "-";
  if (r.end_time > 0) return FormatDuration(double(r.end_time - r.start_time));
  if (r.gpu && r.gpu->gpu_seconds > 0 && jobs::GpuEquivalents(*r.gpu) > 0)
    return FormatDuration(r.gpu->gpu_seconds / jobs::GpuEquivalents(*r.gpu));
  return "-";
}

// "0,1"; a MIG instance as GPU/instance with its share: "0/3 0.43 GPU (3g.40gb)".
std::string GpuList(const jobs::JobRecord& r) {
  if (!r.gpu || r.gpu->gpus.empty()) return "-";
  return jobs::GpuUnitsText(*r.gpu);
}

// A GPM ratio as a percentage; "-" when the job's GPUs did not report it (absent, never 0).
std::string Ratio(const std::optional<double>& v) {
  return v ? Fmt("%.0f%%", *v * 100) : std::string("-");
}

// Energy as everywhere in gpuwarden (CLI, report, console): kWh with two decimals.
std::string EnergyText(double joules) {
  return Fmt("%.2f kWh", joules / 3.6e6);
}

// A rate or count for people: whole numbers from 100 up, else three significant digits.
std::string Amount(double v) {
  if (std::fabs(v) >= 100) return Fmt("%.0f", v);
  if (std::fabs(v) >= 10) return Fmt("%.1f", v);
  return Fmt("%.2f", v);
}

// The outcome and throughput block of `jobs show` (docs/jobs.md): "Outcome    failed (cause:
// gpu_fault)", the summary, one line per evidence item; "Throughput 1520 samples/s, …".
std::string OutcomeBlock(const jobs::JobRecord& r) {
  std::string out;
  const std::string indent(11, ' ');
  if (r.outcome) {
    const jobs::JobOutcomeRecord& o = *r.outcome;
    out += "Outcome    " + OrDash(o.outcome) + " (cause: " + OrDash(o.cause) + ")\n";
    if (!o.summary.empty()) out += indent + o.summary + "\n";
    for (const jobs::JobOutcomeEvidence& e : o.evidence) {
      out += indent + Timestamp(e.time) + "  " +
             PadRight(e.gpu ? "GPU " + std::to_string(*e.gpu) : std::string("-"), 7) + "  " +
             (e.detail.empty() ? e.kind + " " + Amount(e.value) : e.detail) + "\n";
    }
  }
  if (r.throughput) {
    const jobs::JobThroughputRecord& t = *r.throughput;
    const std::string unit = t.unit.empty() ? "units" : t.unit;
    out += "Throughput " + Amount(t.avg_per_s) + " " + unit + "/s";
    if (t.per_gpu_hour) out += ", " + Amount(*t.per_gpu_hour) + " " + unit + "/GPU-h";
    if (t.per_kwh) out += ", " + Amount(*t.per_kwh) + " " + unit + "/kWh";
    if (t.per_cost)
      out += ", " + Amount(*t.per_cost) + " " + unit + " per " +
             (r.cost && !r.cost->currency.empty() ? r.cost->currency : std::string("cost unit"));
    out += ", " + Amount(t.total) + " " + unit + " in all" +
           (t.metric.empty() ? "" : " (" + t.metric + ")") + "\n";
  }
  return out;
}

// The records of an API reply ({"data":{"jobs":[...]}}, or one job under "data").
Expected<std::vector<jobs::JobRecord>> RecordsOf(const nlohmann::json& data) {
  std::vector<jobs::JobRecord> out;
  const nlohmann::json* list = &data;
  nlohmann::json one = nlohmann::json::array();
  if (data.is_object() && data.contains("jobs")) {
    list = &data["jobs"];
  } else {
    one.push_back(data);
    list = &one;
  }
  if (!list->is_array()) return Error{"unexpected reply: no job list"};
  for (const nlohmann::json& j : *list) {
    auto r = jobs::JobRecordFromJson(j.dump());
    if (!r.ok()) return Error{"unexpected reply: " + r.error().message};
    out.push_back(std::move(*r));
  }
  return out;
}

// GET base + path; the reply's "data", or the API's error.
Expected<nlohmann::json> AskAgent(const std::string& url, const std::string& path) {
  std::string base = url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  auto reply = GetFromAgent(base + path, 30);
  if (!reply.ok()) return Error{reply.error().message};
  nlohmann::json body = nlohmann::json::parse(reply->body, nullptr, false);
  if (body.is_discarded() || !body.is_object())
    return Error{base + path + ": HTTP " + std::to_string(reply->status) + ": not a JSON reply"};
  if (reply->status != 200 || body.value("status", "") != "success")
    return Error{body.value("error", "HTTP " + std::to_string(reply->status))};
  return body["data"];
}

// The records `serve` wrote; nullopt (said on stderr) when neither the records directory nor the
// data directory is there — nothing is created.
std::optional<Expected<std::vector<jobs::JobRecord>>> ReadRecords(const config::Config& config,
                                                                  const std::string& command) {
  const std::string dir = serve::JobRecordsDir(config);
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec) && !DataDirPresent(config.storage.path, command))
    return std::nullopt;
  if (!std::filesystem::exists(dir + "/jobs.jsonl")) {
    std::fprintf(stderr, "gpuwarden: %s: no job records in %s/jobs.jsonl yet\n", command.c_str(),
                 dir.c_str());
    return std::vector<jobs::JobRecord>{};
  }
  auto store = jobs::JobRecordStore::Open(dir);
  if (!store.ok()) return store.error();
  return (*store)->ReadAll();
}

double NowS() {
  return SystemClock().NowSeconds();
}

void PrintJson(const std::vector<jobs::JobRecord>& records) {
  nlohmann::json list = nlohmann::json::array();
  for (const jobs::JobRecord& r : records)
    list.push_back(nlohmann::json::parse(jobs::JobRecordToJson(r)));
  std::string text = nlohmann::json{{"jobs", list}}.dump(2) + "\n";
  std::fwrite(text.data(), 1, text.size(), stdout);
}

}  // namespace

std::string JobsTable(const std::vector<jobs::JobRecord>& records) {
  if (records.empty()) return "no jobs\n";
  // Every column as wide as its content (ids, names and GPU lists vary a lot: a Kubernetes pod is
  // "namespace/pod"), up to a cap past which a cell is cut with "…".
  bool outcomes = false;
  for (const jobs::JobRecord& r : records) outcomes = outcomes || r.outcome.has_value();
  std::vector<TableColumn> columns = {{"JOB", 40},
                                      {"USER", 16},
                                      {"TEAM", 20},
                                      {"PARTITION", 16},
                                      {"STATE", 12},
                                      {"START", 20},
                                      {"ELAPSED", 10, true},
                                      {"GPUS", 24},
                                      {"GPU-H", 9, true},
                                      {"ENERGY", 12, true},
                                      {"UTIL AVG/MAX", 12, true},
                                      {"SM ACT", 6, true},
                                      {"TENSOR", 6, true},
                                      {"MEM PEAK", 10, true},
                                      {"COST", 16, true}};
  if (outcomes) columns.push_back({"OUTCOME", 28});
  std::vector<std::vector<std::string>> rows;
  for (const jobs::JobRecord& r : records) {
    std::vector<std::string> row = {
        r.job_id, OrDash(r.user),          OrDash(r.team), OrDash(r.partition),
        r.state,  Timestamp(r.start_time), Elapsed(r),     GpuList(r)};
    if (r.gpu) {
      const jobs::JobGpuStats& g = *r.gpu;
      row.insert(row.end(),
                 {Fmt("%.2f", g.gpu_seconds / 3600), EnergyText(g.energy_j),
                  Fmt("%.0f%%", 100 * g.util_avg) + "/" + Fmt("%.0f%%", 100 * g.util_max),
                  Ratio(g.sm_active_avg), Ratio(g.tensor_active_avg),
                  Fmt("%.1f GiB", double(g.memory_peak_bytes) / (1 << 30))});
    } else {
      row.insert(row.end(), {"-", "-", "-", "-", "-", "-"});
    }
    row.push_back(r.cost ? Fmt("%.2f ", r.cost->Total()) + r.cost->currency : std::string("-"));
    if (outcomes)
      row.push_back(r.outcome ? r.outcome->outcome +
                                    (r.outcome->cause.empty() || r.outcome->cause == "none"
                                         ? ""
                                         : " (" + r.outcome->cause + ")")
                              : "-");
    rows.push_back(std::move(row));
  }
  return RenderTable(columns, rows);
}

std::string JobDetail(const jobs::JobRecord& r) {
  std::string out;
  auto line = [&out](const char* key, const std::string& value) {
    out += PadRight(std::string(key) + ":", 20) + value + "\n";
  };
  line("job", r.job_id + (r.name.empty() ? "" : " (" + r.name + ")"));
  line("source", r.source);
  line("user", OrDash(r.user));
  // A pod's account is its namespace, and pods have no partition: say it the Kubernetes way.
  const bool pod = r.source == "kubernetes";
  line(pod ? "namespace" : "account", OrDash(r.account));
  line("team", OrDash(r.team));
  if (!pod) line("partition", OrDash(r.partition));
  line("state",
       r.state +
           (r.state_reason.empty() || r.state_reason == "None" ? "" : " (" + r.state_reason + ")"));
  if (r.exit_code) line("exit code", std::to_string(*r.exit_code));
  line("submitted", Timestamp(r.submit_time));
  line("eligible", Timestamp(r.eligible_time));
  line("started", Timestamp(r.start_time));
  line("ended", Timestamp(r.end_time));
  if (r.queue_wait_s) line("queue wait", FormatDuration(double(*r.queue_wait_s)));
  if (r.submit_wait_s) line("since submit", FormatDuration(double(*r.submit_wait_s)));
  line("elapsed", Elapsed(r));
  if (r.cost)
    line("cost", Fmt("%.4f ", r.cost->Total()) + r.cost->currency +
                     Fmt(" (allocation %.4f", r.cost->allocation_cost) +
                     Fmt(" for %.3f GPU-hours", r.cost->allocated_gpu_hours) +
                     Fmt(", energy %.4f", r.cost->energy_cost) +
                     Fmt(" for %.3f kWh", r.cost->energy_kwh) +
                     Fmt("; idle %.4f)", r.cost->idle_allocated_cost));
  if (!r.gpu) {
    line("GPUs", "none recorded");
    const std::string block = OutcomeBlock(r);
    return block.empty() ? out : out + "\n" + block;
  }
  const jobs::JobGpuStats& g = *r.gpu;
  const double equivalents = jobs::GpuEquivalents(g);
  line("GPUs", GpuList(r) + (g.mig.empty() ? "" : Fmt(" (%.2f GPU in all)", equivalents)));
  line("GPU-hours", Fmt("%.3f", g.gpu_seconds / 3600));
  line("energy",
       EnergyText(g.energy_j) + " (power integral " + EnergyText(g.power_integral_j) + ")");
  line("SM utilization",
       Fmt("avg %.1f%%", 100 * g.util_avg) + Fmt(", max %.1f%%", 100 * g.util_max));
  // GPM (Hopper and newer): how much of the SMs and tensor cores the work used — a job can keep
  // utilization near 100% with a tiny share of either.
  auto avg_max = [](const std::optional<double>& avg, const std::optional<double>& max) {
    if (!avg && !max) return std::string("-");
    return "avg " + (avg ? Fmt("%.1f%%", *avg * 100) : std::string("-")) + ", max " +
           (max ? Fmt("%.1f%%", *max * 100) : std::string("-"));
  };
  line("SM activity", avg_max(g.sm_active_avg, g.sm_active_max));
  line("tensor activity", avg_max(g.tensor_active_avg, g.tensor_active_max));
  line("memory peak", Fmt("%.2f GiB", double(g.memory_peak_bytes) / (1 << 30)));
  line("start latency", g.start_latency_s ? FormatDuration(*g.start_latency_s) : "-");
  line("idle GPU-seconds",
       Fmt("%.0f", g.idle_gpu_seconds) + (g.idle_while_allocated ? " (never active)" : ""));
  std::string throttle;
  for (const auto& [reason, seconds] : g.throttle_s)
    throttle += (throttle.empty() ? "" : ", ") + reason + " " + FormatDuration(seconds);
  line("throttled", throttle.empty() ? "none" : throttle);
  line("ECC errors", std::to_string(g.ecc_corrected) + " corrected, " +
                         std::to_string(g.ecc_uncorrected) + " uncorrected");
  line("XID events", std::to_string(g.xid_count));
  const std::string block = OutcomeBlock(r);
  return block.empty() ? out : out + "\n" + block;
}

int RunJobs(const config::Config& config, const JobsArgs& args, Logger* logger) {
  (void)logger;
  double since_s = 0;
  if (!args.since.empty() && (!ParseDurationSeconds(args.since, &since_s) || since_s <= 0)) {
    std::fprintf(stderr, "gpuwarden: --since: expected a duration such as 1h or 30m, got '%s'\n",
                 args.since.c_str());
    return 2;
  }
  if (args.running && !args.since.empty()) {
    std::fprintf(stderr, "gpuwarden: --running and --since exclude each other\n");
    return 2;
  }
  std::vector<jobs::JobRecord> records;
  if (!args.url.empty()) {
    std::string path = "/api/gw/v1/jobs?";
    if (args.running) path += "running=1&";
    if (!args.since.empty()) path += "since=" + http::UrlEncode(args.since) + "&";
    if (!args.team.empty()) path += "team=" + http::UrlEncode(args.team) + "&";
    path.pop_back();
    auto data = AskAgent(args.url, path);
    if (!data.ok()) {
      std::fprintf(stderr, "gpuwarden: %s\n", data.error().message.c_str());
      return 1;
    }
    auto parsed = RecordsOf(*data);
    if (!parsed.ok()) {
      std::fprintf(stderr, "gpuwarden: %s\n", parsed.error().message.c_str());
      return 1;
    }
    records = std::move(*parsed);
  } else {
    if (args.running) {
      std::fprintf(stderr,
                   "gpuwarden: --running needs --url: the records hold finished jobs; running "
                   "ones are known to the agent\n");
      return 2;
    }
    auto read = ReadRecords(config, "jobs");
    if (!read) return 1;
    auto& all = *read;
    if (!all.ok()) {
      std::fprintf(stderr, "gpuwarden: %s\n", all.error().message.c_str());
      return 1;
    }
    const double now = NowS();
    for (auto it = all->rbegin(); it != all->rend(); ++it) {
      if (!args.team.empty() && it->team != args.team) continue;
      if (since_s > 0 && double(it->end_time) < now - since_s) continue;
      records.push_back(std::move(*it));
    }
  }
  if (args.json) {
    PrintJson(records);
  } else {
    std::string text = JobsTable(records);
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
  return 0;
}

int RunJobsShow(const config::Config& config, const JobsArgs& args, Logger* logger) {
  (void)logger;
  std::optional<jobs::JobRecord> record;
  if (!args.url.empty()) {
    auto data = AskAgent(args.url, "/api/gw/v1/jobs/" + http::UrlEncode(args.id));
    if (!data.ok()) {
      std::fprintf(stderr, "gpuwarden: %s\n", data.error().message.c_str());
      return 1;
    }
    auto parsed = RecordsOf(*data);
    if (!parsed.ok() || parsed->empty()) {
      std::fprintf(stderr, "gpuwarden: %s\n",
                   parsed.ok() ? "empty reply" : parsed.error().message.c_str());
      return 1;
    }
    record = std::move(parsed->front());
  } else {
    auto read = ReadRecords(config, "jobs show");
    if (!read) return 1;
    auto& all = *read;
    if (!all.ok()) {
      std::fprintf(stderr, "gpuwarden: %s\n", all.error().message.c_str());
      return 1;
    }
    for (auto it = all->rbegin(); it != all->rend() && !record; ++it)
      if (it->job_id == args.id) record = *it;
  }
  if (!record) {
    std::fprintf(stderr, "gpuwarden: no such job: %s\n", args.id.c_str());
    return 1;
  }
  if (args.json) {
    std::string text = nlohmann::json::parse(jobs::JobRecordToJson(*record)).dump(2) + "\n";
    std::fwrite(text.data(), 1, text.size(), stdout);
  } else {
    std::string text = JobDetail(*record);
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
  return 0;
}

}  // namespace gw::cli
