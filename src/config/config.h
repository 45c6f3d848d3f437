// config/config.h — gpuwarden's configuration: defaults, the YAML file, and flags on top.
//
// Precedence: built-in defaults < the file given by --config < command-line flags. Every key is
// documented in docs/configuration.md (tests/cli/config_test.cpp checks that each key below is
// there). A bad file is refused with "FILE:LINE: what is wrong"; unknown keys are errors, so a
// typo never silently falls back to a default.
#ifndef GPUWARDEN_CONFIG_CONFIG_H_
#define GPUWARDEN_CONFIG_CONFIG_H_

#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "collect/collector.h"
#include "collect/dcgm_exposition.h"
#include "config/diagnose_config.h"
#include "config/governance_config.h"
#include "config/remote_config.h"
#include "scrape/target.h"

namespace gw::config {

inline constexpr int kDefaultPort =
    9966;  // clear of dcgm-exporter (9400), nvidia_gpu_exporter (9835)

struct SimulateConfig {
  std::string scenario;            // "" = not simulating; a built-in name or a .yaml path
  std::string clock = "realtime";  // realtime | stepped (time moves only via /-/sim/advance)
  double speed = 0;                // <= 0: as the scenario says
  // Stepped clock: the Unix time (seconds) of virtual t = 0, so a restarted run can continue a
  // simulated timeline where the last one stopped; 0 = the wall clock when collection starts.
  double start_unix = 0;
};

struct StorageConfig {
  std::string path = "data";                  // the data directory (created if missing)
  double retention_s = 15 * 86400.0;          // raw samples
  double rollup_retention_s = 365 * 86400.0;  // 5-minute rollups
  double flush_interval_s = 600;              // in-memory chunks to SQLite
  // The time window of one block for a new data directory (0: automatic — 6 h, or for
  // `tsdb import` into a new directory 24 h when the data's samples are 10 s or more apart).
  // An existing directory keeps the range it was created with.
  double block_range_s = 0;
};

// An Alertmanager (v2 API) or webhook receiver that alerts are sent to.
struct ReceiverConfig {
  std::string
      url;  // http(s)://host:port[/path]; Alertmanager: the base URL (/api/v2/alerts is added)
  double timeout_s = 10;
  std::string basic_auth_username, basic_auth_password_file, bearer_token_file;
  bool tls_insecure_skip_verify = false;
  std::string tls_ca_file;
};

// Rule evaluation (Prometheus rule files) and where alerts go.
struct RulesConfig {
  bool builtin = true;                // load the built-in pack (deploy/rules/, in the binary)
  std::vector<std::string> files;     // more rule files, globs allowed
  double evaluation_interval_s = 15;  // groups without their own `interval`
  std::string external_url;           // "" = http://HOSTNAME:PORT
  std::vector<std::pair<std::string, std::string>> external_labels;
};

struct AlertingConfig {
  std::vector<ReceiverConfig> alertmanagers;
  std::vector<ReceiverConfig> webhooks;
  double resend_delay_s = 60;
  std::string queue_dir;  // "" = STORAGE_PATH/notify
};

// The task layer: which scheduler says what about jobs, and where job records go.
// Kubernetes as the scheduler (jobs.scheduler: kubernetes; k8s/poller.h, docs/kubernetes.md).
struct KubernetesConfig {
  std::string socket = "/var/lib/kubelet/pod-resources/kubelet.sock";  // the pod-resources API
  double poll_interval_s = 0;                                          // 0 = jobs.poll_interval
  double timeout_s = 5;  // each call's deadline (and the pod-list command's)
  // Device resources that are GPUs: exact names, or patterns with one trailing '*'.
  std::vector<std::string> resources = {"nvidia.com/gpu", "nvidia.com/mig-*"};
  std::vector<std::string> pod_list_command;  // argv; empty: no pod list. "{node}" = node_name
  std::string user_label, user_annotation;    // the pod label / annotation naming its user
};

struct JobsConfig {
  std::string scheduler = "none";                                  // none | slurm | kubernetes
  std::vector<std::string> squeue_command = {"squeue", "--json"};  // argv, no shell
  double poll_interval_s = 10;
  std::string records_dir;           // "" = STORAGE_PATH/jobs
  double idle_threshold = 0.05;      // utilization ratio at or below which an allocated GPU is idle
  double idle_window_s = 30 * 60.0;  // idle this long: a job holding GPUs idle
  double outcome_window_s = 300;     // device evidence this long before a job's end (outcomes)
  std::string node_name;             // this node in Slurm's node lists; "" = the short host name
  KubernetesConfig kubernetes;
};

// Teams (jobs/teams.h): Slurm account -> team, user -> team, Kubernetes namespace -> team.
struct TeamsConfig {
  std::map<std::string, std::string> accounts;
  std::map<std::string, std::string> users;
  // In the file's order: exact namespace names, or "/regex/" (RE2, fully anchored).
  std::vector<std::pair<std::string, std::string>> namespaces;
};

// Application targets scraped into the store (business metrics; config/scrape_config.h).
struct ScrapeConfig {
  std::vector<scrape::TargetConfig> targets;
};

// Limits on PromQL evaluation (Prometheus' --query.* flags; docs/configuration.md). Timeout and
// max_samples apply to the query API, rule evaluation and `gpuwarden query`; the concurrency and
// the queue to the query API of `serve`.
struct QueryConfig {
  double timeout_s = 120;
  long long max_samples = 50000000;
  int max_concurrency = 2;
  int max_queued = 4;
};

// What /metrics calls the device families: gpuwarden's names, dcgm-exporter's, or both
// (collect/dcgm_exposition.h, docs/dcgm-exporter.md).
struct ExpositionConfig {
  collect::ExpositionNames names = collect::ExpositionNames::kGpuwarden;
};

struct Config {
  std::string listen = ":" + std::to_string(kDefaultPort);
  std::string web_config_file;
  // --web.enable-lifecycle: POST /-/reload (as in Prometheus). Off: 403, SIGHUP still reloads.
  bool web_enable_lifecycle = false;
  std::string log_level = "info";
  std::string nvml_library;  // "" = libnvidia-ml.so.1, or the simulator when simulating
  SimulateConfig simulate;
  StorageConfig storage;
  collect::CollectorOptions collect;
  ExpositionConfig exposition;
  RulesConfig rules;
  AlertingConfig alerting;
  JobsConfig jobs;
  TeamsConfig teams;
  ScrapeConfig scrape;
  GovernanceConfig governance;  // config/governance_config.h
  DiagnoseConfig diagnose;      // config/diagnose_config.h: findings thresholds, window, interval
  QueryConfig query;
  std::vector<RemoteWriteConfig> remote_write;  // config/remote_config.h
};

inline constexpr long long kMaxQuerySamples = 1000000000000LL;
inline constexpr long long kMaxQueryConcurrency = 1024;
inline constexpr long long kMaxQueryQueued = 1024;

// A decimal whole number without sign in [min, max] (flags and YAML share it).
bool ParseInteger(const std::string& text, long long min, long long max, long long* out);

// Every configuration key, dotted ("collect.interval"), for docs and tests.
const std::vector<std::string>& ConfigKeys();

// Reads `path` over `config`. Errors name the file and line.
Status LoadConfigFile(const std::string& path, Config* config);

// Checks cross-field rules (intervals positive, slow >= fast, clock value, …).
Status Validate(const Config& config);

}  // namespace gw::config

#endif  // GPUWARDEN_CONFIG_CONFIG_H_
