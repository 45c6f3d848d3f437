#include "config/config_yaml.h"

#include <yaml-cpp/yaml.h>

#include "base/error.h"

namespace gw::config {

namespace {

void Duration(YAML::Emitter& out, const char* key, double seconds) {
  out << YAML::Key << key << YAML::Value << FormatDuration(seconds);
}

void Strings(YAML::Emitter& out, const char* key, const std::vector<std::string>& values) {
  out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const std::string& v : values) out << v;
  out << YAML::EndSeq;
}

void Receivers(YAML::Emitter& out, const char* key, const std::vector<ReceiverConfig>& list) {
  out << YAML::Key << key << YAML::Value;
  if (list.empty()) out << YAML::Flow;
  out << YAML::BeginSeq;
  for (const ReceiverConfig& r : list) {
    out << YAML::BeginMap << YAML::Key << "url" << YAML::Value << r.url;
    Duration(out, "timeout", r.timeout_s);
    if (!r.basic_auth_username.empty() || !r.basic_auth_password_file.empty())
      out << YAML::Key << "basic_auth" << YAML::Value << YAML::BeginMap << YAML::Key << "username"
          << YAML::Value << r.basic_auth_username << YAML::Key << "password_file" << YAML::Value
          << r.basic_auth_password_file << YAML::EndMap;
    if (!r.bearer_token_file.empty())
      out << YAML::Key << "bearer_token_file" << YAML::Value << r.bearer_token_file;
    if (!r.tls_ca_file.empty()) out << YAML::Key << "tls_ca_file" << YAML::Value << r.tls_ca_file;
    out << YAML::Key << "tls_insecure_skip_verify" << YAML::Value << r.tls_insecure_skip_verify;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

template <typename Pairs>
void Mapping(YAML::Emitter& out, const char* key, const Pairs& pairs) {
  out << YAML::Key << key << YAML::Value;
  if (pairs.empty()) out << YAML::Flow;
  out << YAML::BeginMap;
  for (const auto& [k, v] : pairs) out << YAML::Key << k << YAML::Value << v;
  out << YAML::EndMap;
}

constexpr char kSecret[] = "<secret>";  // what Prometheus 2.42 prints for a secret

// Whether a header's value is a credential: the standard auth headers and any name that says
// key, token, secret, password, auth, session or cookie (X-Api-Key, X-Auth-Token, ...).
bool SecretHeader(const std::string& name) {
  std::string lower;
  for (char ch : name) lower += static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
  for (const char* word : {"auth", "key", "token", "secret", "password", "session", "cookie",
                           "credential", "signature"})
    if (lower.find(word) != std::string::npos) return true;
  return false;
}

// The url with the password of a user:password@ part replaced.
std::string MaskedUrl(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const size_t host_end = url.find_first_of("/?#", scheme + 3);
  const size_t at = url.rfind('@', host_end == std::string::npos ? url.size() : host_end);
  if (at == std::string::npos || at < scheme + 3) return url;
  const size_t colon = url.find(':', scheme + 3);
  if (colon == std::string::npos || colon > at) return url;
  return url.substr(0, colon + 1) + kSecret + url.substr(at);
}

void RemoteWrite(YAML::Emitter& out, const std::vector<RemoteWriteConfig>& list) {
  out << YAML::Key << "remote_write" << YAML::Value;
  if (list.empty()) out << YAML::Flow;
  out << YAML::BeginSeq;
  for (const RemoteWriteConfig& r : list) {
    out << YAML::BeginMap;
    out << YAML::Key << "url" << YAML::Value << MaskedUrl(r.url);
    if (!r.name.empty()) out << YAML::Key << "name" << YAML::Value << r.name;
    if (!r.headers.empty()) {
      out << YAML::Key << "headers" << YAML::Value << YAML::BeginMap;
      for (const auto& [name, value] : r.headers)
        out << YAML::Key << name << YAML::Value << (SecretHeader(name) ? kSecret : value);
      out << YAML::EndMap;
    }
    if (!r.basic_auth_username.empty() || !r.basic_auth_password.empty() ||
        !r.basic_auth_password_file.empty()) {
      out << YAML::Key << "basic_auth" << YAML::Value << YAML::BeginMap;
      out << YAML::Key << "username" << YAML::Value << r.basic_auth_username;
      if (!r.basic_auth_password.empty()) out << YAML::Key << "password" << YAML::Value << kSecret;
      if (!r.basic_auth_password_file.empty())
        out << YAML::Key << "password_file" << YAML::Value << r.basic_auth_password_file;
      out << YAML::EndMap;
    }
    if (!r.authorization_credentials.empty() || !r.authorization_credentials_file.empty()) {
      out << YAML::Key << "authorization" << YAML::Value << YAML::BeginMap;
      out << YAML::Key << "type" << YAML::Value << r.authorization_type;
      if (!r.authorization_credentials.empty())
        out << YAML::Key << "credentials" << YAML::Value << kSecret;
      if (!r.authorization_credentials_file.empty())
        out << YAML::Key << "credentials_file" << YAML::Value << r.authorization_credentials_file;
      out << YAML::EndMap;
    }
    out << YAML::Key << "tls_config" << YAML::Value << YAML::BeginMap;
    if (!r.tls_ca_file.empty()) out << YAML::Key << "ca_file" << YAML::Value << r.tls_ca_file;
    out << YAML::Key << "insecure_skip_verify" << YAML::Value << r.tls_insecure_skip_verify;
    out << YAML::EndMap;
    Duration(out, "remote_timeout", r.remote_timeout_s);
    out << YAML::Key << "queue_config" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "capacity" << YAML::Value << r.capacity;
    out << YAML::Key << "max_samples_per_send" << YAML::Value << r.max_samples_per_send;
    Duration(out, "batch_send_deadline", r.batch_send_deadline_s);
    Duration(out, "min_backoff", r.min_backoff_s);
    Duration(out, "max_backoff", r.max_backoff_s);
    out << YAML::EndMap;
    out << YAML::Key << "write_relabel_configs" << YAML::Value;
    if (r.write_relabel_configs.empty()) out << YAML::Flow;
    out << YAML::BeginSeq;
    for (const WriteRelabelRule& w : r.write_relabel_configs) {
      out << YAML::BeginMap;
      Strings(out, "source_labels", w.source_labels);
      out << YAML::Key << "separator" << YAML::Value << w.separator;
      out << YAML::Key << "regex" << YAML::Value << w.regex;
      out << YAML::Key << "action" << YAML::Value << (w.keep ? "keep" : "drop");
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
    if (r.downsample_interval_s > 0) {
      out << YAML::Key << "downsample" << YAML::Value << YAML::BeginMap;
      Duration(out, "interval", r.downsample_interval_s);
      Strings(out, "aggregate", r.downsample_aggregate);
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

void Governance(YAML::Emitter& out, const GovernanceConfig& g) {
  const governance::Settings& s = g.settings;
  out << YAML::Key << "governance" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "reclaim" << YAML::Value;
  if (s.reclaim.empty()) out << YAML::Flow;
  out << YAML::BeginSeq;
  for (const governance::ReclaimPolicy& p : s.reclaim) {
    out << YAML::BeginMap;
    if (!p.partition.empty()) out << YAML::Key << "partition" << YAML::Value << p.partition;
    if (!p.team.empty()) out << YAML::Key << "team" << YAML::Value << p.team;
    Duration(out, "idle_for", p.idle_for_s);
    Duration(out, "grace", p.grace_s);
    out << YAML::Key << "memory" << YAML::Value << governance::MemoryFilterName(p.memory);
    out << YAML::Key << "action" << YAML::Value << governance::ReclaimActionName(p.action);
    if (!p.command.empty()) Strings(out, "command", p.command);
    if (!p.notify_command.empty()) Strings(out, "notify_command", p.notify_command);
    out << YAML::Key << "exempt" << YAML::Value << YAML::BeginMap;
    Strings(out, "users", p.exempt.users);
    Strings(out, "accounts", p.exempt.accounts);
    Strings(out, "qos", p.exempt.qos);
    Strings(out, "names", p.exempt.names);
    out << YAML::Key << "comment_tag" << YAML::Value << p.exempt.comment_tag;
    out << YAML::EndMap;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
  out << YAML::Key << "decisions_log" << YAML::Value << g.decisions_log;
  Strings(out, "requeue_command", g.requeue_command);
  Strings(out, "cancel_command", g.cancel_command);
  Strings(out, "capacity_command", g.capacity_command);
  Duration(out, "command_timeout", g.command_timeout_s);
  out << YAML::Key << "pools" << YAML::Value << YAML::BeginMap;
  Mapping(out, "capacity", s.pool.capacity_gpus);
  out << YAML::Key << "windows" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (double w : s.pool.windows_s) out << FormatDuration(w);
  out << YAML::EndSeq;
  out << YAML::Key << "scale_out_ratio" << YAML::Value << s.pool.scale_out_ratio;
  Duration(out, "scale_out_for", s.pool.scale_out_for_s);
  out << YAML::Key << "shrink_free_ratio" << YAML::Value << s.pool.shrink_free_ratio;
  Duration(out, "shrink_for", s.pool.shrink_for_s);
  out << YAML::EndMap;
  out << YAML::Key << "quotas" << YAML::Value;
  if (s.quotas.teams.empty()) out << YAML::Flow;
  out << YAML::BeginMap;
  for (const auto& [team, q] : s.quotas.teams) {
    out << YAML::Key << team << YAML::Value << YAML::BeginMap;
    if (q.gpus > 0) out << YAML::Key << "gpus" << YAML::Value << q.gpus;
    if (q.gpu_hours > 0) out << YAML::Key << "gpu_hours" << YAML::Value << q.gpu_hours;
    Duration(out, "period", q.period_s);
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  out << YAML::Key << "under_use_ratio" << YAML::Value << s.quotas.under_use_ratio;
  Duration(out, "under_use_for", s.quotas.under_use_for_s);
  out << YAML::Key << "memory_held_ratio" << YAML::Value << s.memory_held_ratio;
  out << YAML::Key << "prices" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "gpu_hour" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "default" << YAML::Value << s.prices.default_gpu_hour;
  for (const auto& [model, price] : s.prices.gpu_hour_by_model)
    out << YAML::Key << model << YAML::Value << price;
  out << YAML::EndMap;
  out << YAML::Key << "energy_kwh" << YAML::Value << s.prices.energy_per_kwh;
  out << YAML::Key << "currency" << YAML::Value << s.prices.currency;
  out << YAML::EndMap;
  out << YAML::EndMap;
}

void Diagnose(YAML::Emitter& out, const DiagnoseConfig& d) {
  out << YAML::Key << "diagnose" << YAML::Value << YAML::BeginMap;
  Duration(out, "window", d.window_s);
  Duration(out, "interval", d.interval_s);
  out << YAML::Key << "thresholds" << YAML::Value << YAML::BeginMap;
  for (const ThresholdSetting& t : ThresholdSettings(d.thresholds)) {
    if (t.duration)
      Duration(out, t.key, t.value);
    else
      out << YAML::Key << t.key << YAML::Value << t.value;
  }
  out << YAML::EndMap;
  out << YAML::EndMap;
}

}  // namespace

std::string EffectiveYaml(const Config& c) {
  YAML::Emitter out;
  out.SetDoublePrecision(15);  // 0.05, not 0.050000000000000003
  out << YAML::BeginMap;
  out << YAML::Key << "listen" << YAML::Value << c.listen;
  out << YAML::Key << "web_config_file" << YAML::Value << c.web_config_file;
  out << YAML::Key << "log_level" << YAML::Value << c.log_level;

  out << YAML::Key << "nvml" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "library" << YAML::Value << c.nvml_library;
  Duration(out, "call_timeout", c.collect.call_timeout_s);
  out << YAML::EndMap;

  out << YAML::Key << "simulate" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "scenario" << YAML::Value << c.simulate.scenario;
  out << YAML::Key << "clock" << YAML::Value << c.simulate.clock;
  // 0 stands for "not set" (the scenario's speed, the wall clock), which the file cannot say.
  if (c.simulate.speed > 0) out << YAML::Key << "speed" << YAML::Value << c.simulate.speed;
  if (c.simulate.start_unix > 0)
    out << YAML::Key << "start" << YAML::Value << c.simulate.start_unix;
  out << YAML::EndMap;

  out << YAML::Key << "storage" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "path" << YAML::Value << c.storage.path;
  Duration(out, "retention", c.storage.retention_s);
  Duration(out, "rollup_retention", c.storage.rollup_retention_s);
  Duration(out, "flush_interval", c.storage.flush_interval_s);
  Duration(out, "block_range", c.storage.block_range_s);
  out << YAML::EndMap;

  out << YAML::Key << "collect" << YAML::Value << YAML::BeginMap;
  Duration(out, "interval", c.collect.fast_interval_s);
  Duration(out, "slow_interval", c.collect.slow_interval_s);
  Duration(out, "memory_peak_interval", c.collect.memory_peak_interval_s);
  Duration(out, "peak_window", c.collect.peak_window_s);
  out << YAML::Key << "per_process_metrics" << YAML::Value << c.collect.per_process_metrics;
  out << YAML::Key << "gpm" << YAML::Value << c.collect.gpm;
  out << YAML::Key << "nvlink_link_metrics" << YAML::Value << c.collect.nvlink_link_metrics;
  out << YAML::EndMap;

  out << YAML::Key << "exposition" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "names" << YAML::Value
      << std::string(collect::ExpositionNamesText(c.exposition.names));
  out << YAML::EndMap;

  out << YAML::Key << "query" << YAML::Value << YAML::BeginMap;
  Duration(out, "timeout", c.query.timeout_s);
  out << YAML::Key << "max_samples" << YAML::Value << c.query.max_samples;
  out << YAML::Key << "max_concurrency" << YAML::Value << c.query.max_concurrency;
  out << YAML::Key << "max_queued" << YAML::Value << c.query.max_queued;
  out << YAML::EndMap;

  out << YAML::Key << "rules" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "builtin" << YAML::Value << c.rules.builtin;
  Strings(out, "files", c.rules.files);
  Duration(out, "evaluation_interval", c.rules.evaluation_interval_s);
  out << YAML::Key << "external_url" << YAML::Value << c.rules.external_url;
  Mapping(out, "external_labels", c.rules.external_labels);
  out << YAML::EndMap;

  out << YAML::Key << "alerting" << YAML::Value << YAML::BeginMap;
  Receivers(out, "alertmanagers", c.alerting.alertmanagers);
  Receivers(out, "webhooks", c.alerting.webhooks);
  Duration(out, "resend_delay", c.alerting.resend_delay_s);
  out << YAML::Key << "queue_dir" << YAML::Value << c.alerting.queue_dir;
  out << YAML::EndMap;

  out << YAML::Key << "jobs" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "scheduler" << YAML::Value << c.jobs.scheduler;
  Strings(out, "squeue_command", c.jobs.squeue_command);
  Duration(out, "poll_interval", c.jobs.poll_interval_s);
  out << YAML::Key << "records_dir" << YAML::Value << c.jobs.records_dir;
  out << YAML::Key << "idle_threshold" << YAML::Value << c.jobs.idle_threshold;
  Duration(out, "idle_window", c.jobs.idle_window_s);
  out << YAML::Key << "node_name" << YAML::Value << c.jobs.node_name;
  const KubernetesConfig& k = c.jobs.kubernetes;
  out << YAML::Key << "kubernetes" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "socket" << YAML::Value << k.socket;
  if (k.poll_interval_s > 0) Duration(out, "poll_interval", k.poll_interval_s);  // 0: jobs' own
  Duration(out, "timeout", k.timeout_s);
  Strings(out, "resources", k.resources);
  Strings(out, "pod_list_command", k.pod_list_command);
  out << YAML::Key << "user_label" << YAML::Value << k.user_label;
  out << YAML::Key << "user_annotation" << YAML::Value << k.user_annotation;
  out << YAML::EndMap;
  out << YAML::EndMap;

  out << YAML::Key << "teams" << YAML::Value << YAML::BeginMap;
  Mapping(out, "accounts", c.teams.accounts);
  Mapping(out, "users", c.teams.users);
  Mapping(out, "namespaces", c.teams.namespaces);
  out << YAML::EndMap;

  out << YAML::Key << "scrape" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "targets" << YAML::Value;
  if (c.scrape.targets.empty()) out << YAML::Flow;
  out << YAML::BeginSeq;
  for (const scrape::TargetConfig& t : c.scrape.targets) {
    out << YAML::BeginMap;
    out << YAML::Key << "name" << YAML::Value << t.name;
    out << YAML::Key << "url" << YAML::Value << t.url;
    Duration(out, "interval", t.interval_s);
    Duration(out, "timeout", t.effective_timeout_s());
    out << YAML::Key << "gpus" << YAML::Value << YAML::Flow << t.gpus;
    if (!t.basic_auth_username.empty() || !t.basic_auth_password_file.empty())
      out << YAML::Key << "basic_auth" << YAML::Value << YAML::BeginMap << YAML::Key << "username"
          << YAML::Value << t.basic_auth_username << YAML::Key << "password_file" << YAML::Value
          << t.basic_auth_password_file << YAML::EndMap;
    if (!t.bearer_token_file.empty())
      out << YAML::Key << "bearer_token_file" << YAML::Value << t.bearer_token_file;
    if (!t.outputs.empty()) {
      out << YAML::Key << "outputs" << YAML::Value << t.outputs;
      out << YAML::Key << "output_unit" << YAML::Value << t.output_unit;
    }
    if (!t.job_id.empty()) out << YAML::Key << "job_id" << YAML::Value << t.job_id;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;

  RemoteWrite(out, c.remote_write);
  Governance(out, c.governance);
  Diagnose(out, c.diagnose);

  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace gw::config
