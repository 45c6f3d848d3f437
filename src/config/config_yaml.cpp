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

  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace gw::config
