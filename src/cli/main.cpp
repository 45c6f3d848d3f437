// gpuwarden — GPU fleet observability and governance.
//
//   gpuwarden serve     [flags]   collect and serve /metrics, /healthz, /readyz
//   gpuwarden snapshot  [flags]   print every GPU's state now (table or --json)
//   gpuwarden top       [flags]   a terminal view of the GPUs (--url: of an agent; --once)
//   gpuwarden version
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "base/build_info.h"
#include "base/heap.h"
#include "base/log.h"
#include "cli/agent.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/diagnose_commands.h"
#include "cli/hub_command.h"
#include "cli/jobs_commands.h"
#include "cli/rules_commands.h"
#include "cli/top_command.h"
#include "config/config.h"
#include "serve/serve.h"

namespace {

// `gpuwarden version` and `--version`: the version, then what it was built from
// (base/build_info.h), laid out as `prometheus --version` does.
std::string VersionText() {
  const gw::BuildInfo& b = gw::GetBuildInfo();
  std::string out = "gpuwarden, version " + std::string(b.version) +
                    " (branch: " + std::string(b.branch) +
                    ", revision: " + std::string(b.revision) + ")\n";
  out += "  build user:       " + std::string(b.build_user) + "\n";
  out += "  build date:       " + std::string(b.build_date) + "\n";
  out += "  compiler:         " + std::string(b.compiler) + "\n";
  return out;
}

struct Flags {
  std::string config_file;
  std::string listen, web_config, nvml_lib, simulate, sim_clock, log_level;
  double sim_speed = 0;
  double sim_start = -1;
  std::string interval, slow_interval, memory_peak_interval, call_timeout;
  bool per_process = false;
  bool enable_lifecycle = false;  // serve only
  // snapshot only
  bool json = false;
  std::string sim_time;
  // history
  std::string data_dir;
  gw::cli::QueryArgs query;
  std::string import_file, export_match;
  std::vector<std::string> rule_files;  // rules check|test
  gw::cli::JobsArgs jobs;               // jobs, jobs show

  gw::top::Options top;            // top (its flags; cli/top_command.h adds the rest)
  gw::cli::DiagnoseArgs diagnose;  // diagnose
  gw::cli::ReportArgs report;      // report
  gw::cli::HubArgs hub;            // hub
  // query limits (serve: all four; query: timeout and max samples)
  std::string query_timeout, query_max_samples, query_max_concurrency, query_max_queued;
};

void AddQueryLimitFlags(CLI::App* cmd, Flags* f, const gw::config::Config& defaults, bool serving) {
  cmd->add_option("--query.timeout", f->query_timeout,
                  "longest a query may take, queue wait included (default " +
                      gw::FormatDuration(defaults.query.timeout_s) + ")");
  cmd->add_option("--query.max-samples", f->query_max_samples,
                  "most samples a query may hold in memory at once (default " +
                      std::to_string(defaults.query.max_samples) + ")");
  if (!serving) return;
  cmd->add_option("--query.max-concurrency", f->query_max_concurrency,
                  "queries evaluated at once by the HTTP API (default " +
                      std::to_string(defaults.query.max_concurrency) + ")");
  cmd->add_option("--query.max-queued", f->query_max_queued,
                  "queries that may wait for a turn on a query worker; more wait in the server's "
                  "queue (default " +
                      std::to_string(defaults.query.max_queued) + ")");
}

void AddCommonFlags(CLI::App* cmd, Flags* f, const gw::config::Config& defaults) {
  cmd->add_option("--config", f->config_file, "YAML configuration file (docs/configuration.md)");
  cmd->add_option("--nvml-lib", f->nvml_lib,
                  "NVML library to load (default libnvidia-ml.so.1; with --simulate, the "
                  "libnvml-sim.so beside this binary)");
  cmd->add_option("--simulate", f->simulate,
                  "run on a simulated fleet: a built-in scenario name (demo, power-cap, …) or a "
                  "scenario .yaml file");
  cmd->add_option("--sim-clock", f->sim_clock, "simulated clock: realtime (default) or stepped");
  cmd->add_option("--sim-speed", f->sim_speed,
                  "simulated seconds per real second (default: the scenario's)");
  cmd->add_option("--sim-start", f->sim_start,
                  "stepped clock: Unix seconds of simulated t = 0 (default: now)");
  cmd->add_option("--interval", f->interval,
                  "fast collection interval (default " +
                      gw::FormatDuration(defaults.collect.fast_interval_s) + ")");
  cmd->add_option("--slow-interval", f->slow_interval,
                  "slow fields: ECC, remap, PCIe, processes (default " +
                      gw::FormatDuration(defaults.collect.slow_interval_s) + ")");
  cmd->add_option("--memory-peak-interval", f->memory_peak_interval,
                  "memory sub-sampling for peaks, 0 disables (default " +
                      gw::FormatDuration(defaults.collect.memory_peak_interval_s) + ")");
  cmd->add_option("--call-timeout", f->call_timeout,
                  "an NVML call slower than this is marked hung (default " +
                      gw::FormatDuration(defaults.collect.call_timeout_s) + ")");
  cmd->add_flag("--per-process-metrics", f->per_process,
                "export per-pid GPU memory and utilization (cardinality: opt-in)");
  cmd->add_option("--log-level", f->log_level, "debug, info, warn or error (default info)");
}

// Applies config file then flags over the defaults; prints the error and returns false if bad.
bool BuildConfig(const Flags& f, gw::config::Config* c) {
  if (!f.config_file.empty()) {
    if (gw::Status s = gw::config::LoadConfigFile(f.config_file, c); !s.ok()) {
      std::fprintf(stderr, "gpuwarden: %s\n", s.message().c_str());
      return false;
    }
  }
  if (!f.listen.empty()) c->listen = f.listen;
  if (!f.web_config.empty()) c->web_config_file = f.web_config;
  if (f.enable_lifecycle) c->web_enable_lifecycle = true;
  if (!f.nvml_lib.empty()) c->nvml_library = f.nvml_lib;
  if (!f.simulate.empty()) c->simulate.scenario = f.simulate;
  if (!f.sim_clock.empty()) c->simulate.clock = f.sim_clock;
  if (f.sim_speed > 0) c->simulate.speed = f.sim_speed;
  if (f.sim_start >= 0) c->simulate.start_unix = f.sim_start;
  if (!f.log_level.empty()) c->log_level = f.log_level;
  if (!f.data_dir.empty()) c->storage.path = f.data_dir;
  if (f.per_process) c->collect.per_process_metrics = true;
  struct DurationFlag {
    const std::string& text;
    const char* name;
    double* out;
  } durations[] = {
      {f.interval, "--interval", &c->collect.fast_interval_s},
      {f.slow_interval, "--slow-interval", &c->collect.slow_interval_s},
      {f.memory_peak_interval, "--memory-peak-interval", &c->collect.memory_peak_interval_s},
      {f.call_timeout, "--call-timeout", &c->collect.call_timeout_s},
  };
  for (const DurationFlag& d : durations) {
    if (d.text.empty()) continue;
    if (!gw::ParseDurationSeconds(d.text, d.out)) {
      std::fprintf(stderr, "gpuwarden: %s: expected a duration such as 1s or 500ms, got '%s'\n",
                   d.name, d.text.c_str());
      return false;
    }
  }
  if (!f.query_timeout.empty() && !gw::ParseDurationSeconds(f.query_timeout, &c->query.timeout_s)) {
    std::fprintf(stderr,
                 "gpuwarden: --query.timeout: expected a duration such as 30s or 2m, got '%s'\n",
                 f.query_timeout.c_str());
    return false;
  }
  struct IntegerFlag {
    const std::string& text;
    const char* name;
    long long min, max;
    long long value = 0;
  } integers[] = {
      {f.query_max_samples, "--query.max-samples", 1, gw::config::kMaxQuerySamples},
      {f.query_max_concurrency, "--query.max-concurrency", 1, gw::config::kMaxQueryConcurrency},
      {f.query_max_queued, "--query.max-queued", 0, gw::config::kMaxQueryQueued},
  };
  for (IntegerFlag& i : integers) {
    if (i.text.empty()) continue;
    if (!gw::config::ParseInteger(i.text, i.min, i.max, &i.value)) {
      std::fprintf(stderr, "gpuwarden: %s: expected a whole number from %lld to %lld, got '%s'\n",
                   i.name, i.min, i.max, i.text.c_str());
      return false;
    }
  }
  if (!f.query_max_samples.empty()) c->query.max_samples = integers[0].value;
  if (!f.query_max_concurrency.empty())
    c->query.max_concurrency = static_cast<int>(integers[1].value);
  if (!f.query_max_queued.empty()) c->query.max_queued = static_cast<int>(integers[2].value);
  if (gw::Status s = gw::config::Validate(*c); !s.ok()) {
    std::fprintf(stderr, "gpuwarden: %s\n", s.message().c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  // The agent's heap in transparent huge pages: a cold query's decoded blocks fault in 2 MiB at a
  // time (docs/operations.md, "Memory"). Runs the agent again once, so before anything else.
  if (argc > 1 && std::strcmp(argv[1], "serve") == 0) gw::ExecWithHugePageHeap(argv);
  gw::PadHeapsForHugePages();
  // Two malloc arenas instead of up to 8 per core: a thread that once ran a large query keeps
  // little memory afterwards (docs/operations.md, "Memory"). Before any thread starts.
  gw::LimitMallocArenas(2);
  // Freed query memory stays for the next query (up to 64 MiB, bounded by the query API's trims);
  // blocks under 4 MiB come from the heap, not from mmap. docs/operations.md, "Memory".
  gw::KeepFreedHeap(size_t{64} << 20, size_t{4} << 20);
  // A scraper that disconnects mid-response must not kill the agent (see http/server.h).
  std::signal(SIGPIPE, SIG_IGN);
  const gw::config::Config defaults;
  CLI::App app{"gpuwarden: GPU fleet observability and governance"};
  app.require_subcommand(1);
  Flags flags;

  CLI::App* serve = app.add_subcommand("serve", "collect GPU metrics and serve them over HTTP");
  AddCommonFlags(serve, &flags, defaults);
  serve->add_option("--listen", flags.listen,
                    "address to listen on, host:port (default " + defaults.listen + ")");
  serve->add_option("--web.config.file", flags.web_config,
                    "Prometheus web configuration file: TLS and basic auth (default: plain HTTP)");
  serve->add_flag("--web.enable-lifecycle", flags.enable_lifecycle,
                  "enable POST /-/reload over HTTP (default off: 403; SIGHUP always reloads)");
  serve->add_option("--data-dir", flags.data_dir,
                    "history store directory (default " + defaults.storage.path + ")");
  AddQueryLimitFlags(serve, &flags, defaults, /*serving=*/true);

  CLI::App* snapshot = app.add_subcommand("snapshot", "print every GPU's state now");
  AddCommonFlags(snapshot, &flags, defaults);
  snapshot->add_flag("--json", flags.json, "JSON instead of a table");
  snapshot->add_option("--sim-time", flags.sim_time,
                       "with --simulate: step the simulated clock this far first (e.g. 90s)");

  CLI::App* query = app.add_subcommand("query", "evaluate a PromQL expression over the history");
  query->add_option("expr", flags.query.expr, "the PromQL expression")->required();
  query->add_option("--time", flags.query.time,
                    "instant query time: Unix seconds, RFC 3339, now, -5m, now-1h (default now)");
  query->add_option("--start", flags.query.start,
                    "range query start: Unix seconds, RFC 3339, now, or relative (-1h, now-30m)");
  query->add_option("--end", flags.query.end, "range query end (same forms; e.g. now)");
  query->add_option("--step", flags.query.step, "range query step (e.g. 60 or 1m)");
  query->add_flag("--json", flags.query.json, "print Prometheus' API JSON");
  query->add_option("--url", flags.query.url,
                    "ask a running gpuwarden (or Prometheus) at this URL instead of the data dir "
                    "(default $GPUWARDEN_URL)");
  query->add_option("--data-dir", flags.data_dir,
                    "history store directory (default " + defaults.storage.path + ")");
  query->add_option("--config", flags.config_file, "YAML configuration file");
  AddQueryLimitFlags(query, &flags, defaults, /*serving=*/false);

  CLI::App* tsdb = app.add_subcommand("tsdb", "manage the history store");
  tsdb->require_subcommand(1);
  CLI::App* import = tsdb->add_subcommand("import", "load OpenMetrics text (with timestamps)");
  import->add_option("file", flags.import_file, "the OpenMetrics file")->required();
  import->add_option("--data-dir", flags.data_dir, "history store directory");
  import->add_option("--config", flags.config_file, "YAML configuration file");
  CLI::App* export_cmd = tsdb->add_subcommand("export", "write the history as OpenMetrics text");
  export_cmd->add_option("--match", flags.export_match, "only series matching this selector");
  export_cmd->add_option("--data-dir", flags.data_dir, "history store directory");
  export_cmd->add_option("--config", flags.config_file, "YAML configuration file");

  CLI::App* rules =
      app.add_subcommand("rules", "check rule files and run their unit tests (as promtool)");
  rules->require_subcommand(1);
  CLI::App* rules_check = rules->add_subcommand("check", "check Prometheus rule files");
  rules_check->add_option("files", flags.rule_files, "rule files")->required();
  CLI::App* rules_test = rules->add_subcommand("test", "run promtool-format rule unit tests");
  rules_test->add_option("files", flags.rule_files, "unit-test files")->required();

  CLI::App* jobs = app.add_subcommand("jobs",
                                      "list jobs: finished ones from the records, running "
                                      "ones from an agent (--url)");
  jobs->add_flag("--running", flags.jobs.running, "only jobs running now (needs --url)");
  jobs->add_option("--since", flags.jobs.since, "jobs that ended within this long (e.g. 24h)");
  jobs->add_option("--team", flags.jobs.team, "only this team's jobs");
  jobs->add_flag("--json", flags.jobs.json, "JSON instead of a table");
  jobs->add_option("--url", flags.jobs.url,
                   "ask a running gpuwarden at this URL (default $GPUWARDEN_URL)");
  jobs->add_option("--data-dir", flags.data_dir,
                   "storage directory; records in DIR/jobs unless jobs.records_dir says");
  jobs->add_option("--config", flags.config_file, "YAML configuration file");
  CLI::App* jobs_show = jobs->add_subcommand("show", "one job in detail");
  jobs_show->add_option("id", flags.jobs.id, "the job id")->required();
  jobs_show->add_flag("--json", flags.jobs.json, "JSON instead of text");
  jobs_show->add_option("--url", flags.jobs.url, "ask a running gpuwarden at this URL");
  jobs_show->add_option("--data-dir", flags.data_dir, "storage directory");
  jobs_show->add_option("--config", flags.config_file, "YAML configuration file");

  CLI::App* top = app.add_subcommand("top", "a terminal view of the GPUs, their jobs and alerts");
  AddCommonFlags(top, &flags, defaults);
  top->add_option("--url", flags.top.url, "watch a running gpuwarden at this URL");
  top->add_flag("--once", flags.top.once, "print one plain frame and exit (for scripts)");
  top->add_option("--refresh", flags.top.refresh, "time between readings (default 1s)");
  top->add_option("--sim-time", flags.top.sim_time,
                  "with --simulate: stepped clock, moved this far first (e.g. 90s)");
  top->add_option("--width", flags.top.width, "--once: columns (default: the terminal's or 120)");
  CLI::App* diagnose = app.add_subcommand(
      "diagnose", "findings: what is wrong, in which layer, with the evidence (docs/diagnose.md)");
  diagnose->add_option("--gpu", flags.diagnose.gpu, "only this GPU (index or UUID)");
  diagnose->add_option("--job", flags.diagnose.job, "only this job and the GPUs it held");
  diagnose->add_option("--team", flags.diagnose.team, "only this team, its jobs and their GPUs");
  diagnose->add_option("--since", flags.diagnose.since,
                       "how far back to look (default diagnose.window: 1h)");
  diagnose->add_option("--time", flags.diagnose.time,
                       "evaluate at this time (Unix seconds, RFC 3339, or relative: -1h; "
                       "default now)");
  diagnose->add_flag("--json", flags.diagnose.json, "the API's JSON instead of text");
  diagnose->add_option("--url", flags.diagnose.url,
                       "ask a running gpuwarden at this URL (default $GPUWARDEN_URL)");
  diagnose->add_option("--store", flags.diagnose.store,
                       "diagnose the fleet in a central store (Prometheus API base URL)");
  diagnose->add_option("--node-label", flags.diagnose.node_label,
                       "with --store: the label naming a node (default instance)");
  diagnose->add_option("--data-dir", flags.data_dir, "history store directory");
  diagnose->add_option("--config", flags.config_file, "YAML configuration file");
  CLI::App* report = app.add_subcommand(
      "report", "a self-contained HTML report (or --json) of a period from the history");
  report->add_option("--period", flags.report.period, "the period (default 7d)");
  report->add_option("--time", flags.report.time,
                     "the end of the period (Unix seconds, RFC 3339, or relative: -1d; default "
                     "now)");
  report->add_option("--out", flags.report.out, "file to write (default stdout)");
  report->add_flag("--json", flags.report.json, "the report's data as JSON instead of HTML");
  report->add_option("--url", flags.report.url,
                     "have a running gpuwarden at this URL build it (while it holds the data dir; "
                     "default $GPUWARDEN_URL)");
  report->add_option("--store", flags.report.store,
                     "report on the fleet in a central store (Prometheus API base URL)");
  report->add_option("--node-label", flags.report.node_label,
                     "with --store: the label naming a node (default instance)");
  report->add_option("--data-dir", flags.data_dir, "history store directory");
  report->add_option("--config", flags.config_file, "YAML configuration file");

  CLI::App* hub = app.add_subcommand(
      "hub", "the web console, findings and reports of a fleet over a central store (docs/hub.md)");
  hub->add_option("--store", flags.hub.store,
                  "the store's Prometheus API base URL (VictoriaMetrics, Prometheus)")
      ->required();
  hub->add_option("--agents", flags.hub.agents,
                  "the nodes' agents, a Prometheus file_sd file (processes, reclaim)");
  hub->add_option("--listen", flags.hub.listen, "address to serve on (default :9967)");
  hub->add_option("--node-label", flags.hub.node_label,
                  "the label naming a node in the store (default instance)");
  hub->add_option("--findings-window", flags.hub.findings_window,
                  "how far back fleet findings look (default 1h)");
  hub->add_option("--findings-interval", flags.hub.findings_interval,
                  "how often fleet findings are evaluated (default 30s)");
  hub->add_option("--cache-ttl", flags.hub.cache_ttl,
                  "how long a store answer is reused (default 1.5s)");
  hub->add_option("--store-timeout", flags.hub.store_timeout,
                  "how long a request waits for the store (default 5s)");
  hub->add_option("--web.config.file", flags.hub.web_config_file,
                  "TLS and basic auth (Prometheus web config)");
  hub->add_option("--rules", flags.hub.rules,
                  "alert rule files the hub evaluates over the store, globs allowed (repeatable; "
                  "its alerts then answer /api/v1/alerts and /api/v1/rules)");
  hub->add_option("--alertmanager", flags.hub.alertmanagers,
                  "with --rules: an Alertmanager's base URL to send the hub's alerts to "
                  "(repeatable)");
  hub->add_option("--rules-interval", flags.hub.rules_interval,
                  "evaluation interval of rule groups without their own (default 15s)");
  hub->add_option("--config", flags.config_file, "YAML configuration file (diagnose thresholds)");

  app.add_subcommand("version", "print the version and what it was built from");
  // CLI11 prints the text and a newline of its own.
  app.set_version_flag("--version", [] {
    std::string text = VersionText();
    text.pop_back();
    return text;
  });

  // Unknown commands and flags are named (with the closest known one) before CLI11 sees them;
  // "--start -5m" is passed on as "--start=-5m".
  std::vector<std::string> args(argv + 1, argv + argc);
  if (const std::string problem = gw::cli::CheckArguments(app, &args); !problem.empty()) {
    std::fprintf(stderr, "gpuwarden: %s\n", problem.c_str());
    return 2;
  }
  std::vector<const char*> checked_argv = {argv[0]};
  for (const std::string& a : args) checked_argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(checked_argv.size()), checked_argv.data());
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  if (app.got_subcommand("version")) {
    std::fputs(VersionText().c_str(), stdout);
    return 0;
  }
  if (rules_check->parsed()) return gw::cli::RunRulesCheck(flags.rule_files);
  if (rules_test->parsed()) return gw::cli::RunRulesTest(flags.rule_files);
  gw::config::Config config;
  if (!BuildConfig(flags, &config)) return 2;
  // Read commands without --url ask $GPUWARDEN_URL's agent unless a data directory or a
  // configuration file was named (cli/agent.h).
  const bool local_given = !flags.data_dir.empty() || !flags.config_file.empty();
  for (std::string* url :
       {&flags.query.url, &flags.jobs.url, &flags.diagnose.url, &flags.report.url})
    *url = gw::cli::AgentUrl(*url, local_given);
  gw::LogLevel level = gw::LogLevel::kInfo;
  gw::ParseLogLevel(config.log_level, &level);
  // snapshot prints its own result; its log shows only warnings unless asked for more.
  if (!app.got_subcommand("serve") && flags.log_level.empty()) level = gw::LogLevel::kWarn;
  gw::Logger logger(level);

  if (app.got_subcommand("serve"))
    return gw::serve::Run(config, std::string(gw::GetBuildInfo().version), &logger);
  if (app.got_subcommand("query")) return gw::cli::RunQuery(config, flags.query, &logger);
  if (top->parsed()) return gw::cli::RunTop(config, flags.top, &logger);
  if (hub->parsed()) return gw::cli::RunHub(config, flags.hub, &logger);
  if (diagnose->parsed()) return gw::cli::RunDiagnose(config, flags.diagnose, &logger);
  if (report->parsed()) return gw::cli::RunReport(config, flags.report, &logger);
  if (jobs_show->parsed()) return gw::cli::RunJobsShow(config, flags.jobs, &logger);
  if (jobs->parsed()) return gw::cli::RunJobs(config, flags.jobs, &logger);
  if (app.got_subcommand("tsdb")) {
    if (import->parsed()) return gw::cli::RunTsdbImport(config, flags.import_file, &logger);
    return gw::cli::RunTsdbExport(config, flags.export_match, &logger);
  }
  return gw::cli::RunSnapshot(config, flags.json, flags.sim_time, &logger);
}
