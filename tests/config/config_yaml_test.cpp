// config/config_yaml.h: the effective configuration, printed for /api/v1/status/config, loads
// back to the same configuration.
#include "config/config_yaml.h"

#include <gtest/gtest.h>

#include "support/process.h"

namespace gw::config {
namespace {

using gw::testing::TempDir;
using gw::testing::WriteFile;

// Loads `yaml` over the defaults; fails the test if refused.
Config Load(const TempDir& dir, const std::string& yaml) {
  WriteFile(dir / "c.yaml", yaml);
  Config c;
  Status s = LoadConfigFile(dir / "c.yaml", &c);
  EXPECT_TRUE(s.ok()) << s.message() << "\n" << yaml;
  return c;
}

TEST(EffectiveYaml, TheDefaultsLoadBackUnchanged) {
  TempDir dir;
  const Config defaults;
  const std::string yaml = EffectiveYaml(defaults);
  const Config back = Load(dir, yaml);
  EXPECT_EQ(EffectiveYaml(back), yaml);
  EXPECT_TRUE(Validate(back).ok());
}

TEST(EffectiveYaml, EverySectionItPrintsSurvivesARoundTrip) {
  TempDir dir;
  const Config c = Load(
      dir,
      "listen: 127.0.0.1:9100\n"
      "log_level: debug\n"
      "storage:\n  path: /var/lib/gw\n  retention: 48h\n  flush_interval: 1m\n  block_range: 1d\n"
      "collect:\n  interval: 500ms\n  per_process_metrics: true\n  gpm: false\n"
      "query:\n  timeout: 30s\n  max_samples: 1000\n  max_concurrency: 3\n"
      "rules:\n  files: [a.yml, 'b c.yml']\n  external_labels: {dc: \"x: y\"}\n"
      "alerting:\n  alertmanagers:\n    - url: http://am:9093\n      timeout: 3s\n"
      "      basic_auth: {username: u, password_file: /p}\n"
      "  webhooks: [https://hook/x]\n"
      "jobs:\n  scheduler: slurm\n  idle_threshold: 0.05\n"
      "  squeue_command: [squeue, --json, -p, gpu]\n"
      "teams:\n  accounts: {acct1: research}\n  namespaces: {/ml-.*/: ml}\n"
      "scrape:\n  targets:\n    - name: svc\n      url: http://svc:8000/metrics\n"
      "      interval: 5s\n      gpus: [0, 3]\n"
      "      outputs: 'requests_total{code=\"200\"}'\n"
      "      output_unit: request\n");
  const std::string yaml = EffectiveYaml(c);
  // A few values as written, so a printer that printed nothing could not pass.
  for (const char* expected :
       {"listen: 127.0.0.1:9100", "retention: 48h", "interval: 500ms", "max_samples: 1000",
        "block_range: 24h", "idle_threshold: 0.05", "scheduler: slurm", "password_file: /p",
        "name: svc", "output_unit: request"})
    EXPECT_NE(yaml.find(expected), std::string::npos) << expected << "\n" << yaml;
  const Config back = Load(dir, yaml);
  EXPECT_EQ(EffectiveYaml(back), yaml);
  EXPECT_EQ(back.rules.files, c.rules.files);
  EXPECT_EQ(back.rules.external_labels, c.rules.external_labels);
  ASSERT_EQ(back.scrape.targets.size(), 1u);
  EXPECT_EQ(back.scrape.targets[0].gpus, (std::vector<unsigned>{0, 3}));
  EXPECT_EQ(back.scrape.targets[0].outputs, c.scrape.targets[0].outputs);
  EXPECT_EQ(back.alerting.alertmanagers[0].basic_auth_password_file, "/p");
  EXPECT_EQ(back.teams.namespaces, c.teams.namespaces);
}

// remote_write, governance and diagnose are printed too: every setting as given, file paths as
// they are, and each secret written in the file itself as <secret> (as Prometheus 2.42 prints
// them), so none of them is ever in the answer of /api/v1/status/config.
TEST(EffectiveYaml, RemoteWriteGovernanceAndDiagnoseWithSecretsMasked) {
  TempDir dir;
  const char* secrets[] = {"hunter2-basic",   "tok-credentials-9", "bearer-inline-7",
                           "api-key-value-5", "session-cookie-3",  "url-pass-1"};
  const Config c = Load(
      dir,
      "rules:\n  external_labels: {node: n7}\n"
      "remote_write:\n"
      "  - url: http://vm:8428/api/v1/write\n"
      "    name: central\n"
      "    headers: {X-Scope-OrgID: site-a, X-Api-Key: api-key-value-5, "
      "Cookie: session-cookie-3}\n"
      "    basic_auth: {username: gw, password: hunter2-basic}\n"
      "    tls_config: {ca_file: /etc/gw/ca.pem}\n"
      "    remote_timeout: 10s\n"
      "    queue_config: {capacity: 5000, max_samples_per_send: 500, batch_send_deadline: 1s}\n"
      "    write_relabel_configs:\n"
      "      - {source_labels: [__name__], regex: 'gpu_process_.*', action: drop}\n"
      "      - {source_labels: [__name__, gpu], separator: '/', regex: 'gpu_.*/[0-3]', "
      "action: keep}\n"
      "    downsample: {interval: 15s, aggregate: [max, avg]}\n"
      "  - url: https://mimir:9009/api/v1/push\n"
      "    authorization: {type: Bearer, credentials: tok-credentials-9}\n"
      "  - url: https://other/push\n"
      "    bearer_token: bearer-inline-7\n"
      "  - url: https://gw:url-pass-1@third/push\n"
      "    authorization: {credentials_file: /etc/gw/token}\n"
      "  - url: https://fourth/push\n"
      "    basic_auth: {username: u4, password_file: /etc/gw/rw-password}\n"
      "governance:\n"
      "  reclaim:\n"
      "    - partition: gpu\n"
      "      idle_for: 2h\n"
      "      grace: 30m\n"
      "      memory: held\n"
      "      action: command\n"
      "      command: [/usr/local/bin/reclaim, --now]\n"
      "      exempt: {users: [alice], names: ['notebook-*'], comment_tag: keep}\n"
      "    - {team: ml}\n"
      "  decisions_log: /var/log/gw/decisions.jsonl\n"
      "  command_timeout: 45s\n"
      "  pools: {capacity: {gpu: 64}, windows: [30m, 1d], scale_out_ratio: 1.5}\n"
      "  quotas: {ml: {gpus: 8}, research: {gpu_hours: 500, period: 30d}}\n"
      "  memory_held_ratio: 0.1\n"
      "  prices: {gpu_hour: {default: 2, H100: 4.5}, energy_kwh: 0.2, currency: EUR}\n"
      "diagnose:\n"
      "  window: 2h\n"
      "  interval: 30s\n"
      "  thresholds: {memory_spike: 0.97, queue_wait_p90: 45m, thermal_margin_c: 7}\n");
  const std::string yaml = EffectiveYaml(c);
  for (const char* secret : secrets)
    EXPECT_EQ(yaml.find(secret), std::string::npos) << secret << "\n" << yaml;
  for (const char* expected : {"url: http://vm:8428/api/v1/write",
                               "name: central",
                               "X-Scope-OrgID: site-a",
                               "X-Api-Key: <secret>",
                               "Cookie: <secret>",
                               "password: <secret>",
                               "credentials: <secret>",
                               "url: https://gw:<secret>@third/push",
                               "credentials_file: /etc/gw/token",
                               "password_file: /etc/gw/rw-password",
                               "ca_file: /etc/gw/ca.pem",
                               "remote_timeout: 10s",
                               "max_samples_per_send: 500",
                               "batch_send_deadline: 1s",
                               "regex: gpu_process_.*",
                               "action: drop",
                               "separator: /",
                               "interval: 15s",
                               "aggregate: [max, avg]",
                               "idle_for: 2h",
                               "memory: held",
                               "action: command",
                               "comment_tag: keep",
                               "decisions_log: /var/log/gw/decisions.jsonl",
                               "command_timeout: 45s",
                               "windows: [30m, 24h]",
                               "scale_out_ratio: 1.5",
                               "gpu_hours: 500",
                               "period: 720h",
                               "memory_held_ratio: 0.1",
                               "H100: 4.5",
                               "currency: EUR",
                               "window: 2h",
                               "memory_spike: 0.97",
                               "queue_wait_p90: 45m",
                               "thermal_margin_c: 7"})
    EXPECT_NE(yaml.find(expected), std::string::npos) << expected << "\n" << yaml;
  // The shape is the file's: it loads back to the same settings, secrets aside.
  const Config back = Load(dir, yaml);
  EXPECT_EQ(EffectiveYaml(back), yaml);
  ASSERT_EQ(back.remote_write.size(), 5u);
  const RemoteWriteConfig& rw = back.remote_write[0];
  EXPECT_EQ(rw.headers.at("X-Scope-OrgID"), "site-a");
  EXPECT_EQ(rw.basic_auth_username, "gw");
  EXPECT_EQ(rw.capacity, 5000);
  EXPECT_EQ(rw.remote_timeout_s, 10);
  ASSERT_EQ(rw.write_relabel_configs.size(), 2u);
  EXPECT_FALSE(rw.write_relabel_configs[0].keep);
  EXPECT_TRUE(rw.write_relabel_configs[1].keep);
  EXPECT_EQ(rw.write_relabel_configs[1].separator, "/");
  EXPECT_EQ(rw.write_relabel_configs[1].source_labels,
            (std::vector<std::string>{"__name__", "gpu"}));
  EXPECT_EQ(rw.downsample_interval_s, 15);
  EXPECT_EQ(rw.downsample_aggregate, (std::vector<std::string>{"max", "avg"}));
  EXPECT_EQ(back.remote_write[1].authorization_type, "Bearer");
  EXPECT_EQ(back.remote_write[2].authorization_type, "Bearer");  // bearer_token: its older name
  EXPECT_EQ(back.remote_write[3].authorization_credentials_file, "/etc/gw/token");
  EXPECT_EQ(back.remote_write[4].basic_auth_password_file, "/etc/gw/rw-password");
  const governance::Settings& g = back.governance.settings;
  ASSERT_EQ(g.reclaim.size(), 2u);
  EXPECT_EQ(g.reclaim[0].partition, "gpu");
  EXPECT_EQ(g.reclaim[0].idle_for_s, 7200);
  EXPECT_EQ(g.reclaim[0].grace_s, 1800);
  EXPECT_EQ(g.reclaim[0].memory, governance::MemoryFilter::kHeld);
  EXPECT_EQ(g.reclaim[0].action, governance::ReclaimAction::kCommand);
  EXPECT_EQ(g.reclaim[0].command, (std::vector<std::string>{"/usr/local/bin/reclaim", "--now"}));
  EXPECT_EQ(g.reclaim[0].exempt.names, (std::vector<std::string>{"notebook-*"}));
  EXPECT_EQ(g.reclaim[1].team, "ml");
  EXPECT_EQ(g.reclaim[1].action, governance::ReclaimAction::kDryRun);
  EXPECT_EQ(back.governance.decisions_log, "/var/log/gw/decisions.jsonl");
  EXPECT_EQ(back.governance.command_timeout_s, 45);
  EXPECT_EQ(g.pool.capacity_gpus.at("gpu"), 64);
  EXPECT_EQ(g.pool.windows_s, (std::vector<double>{1800, 86400}));
  EXPECT_EQ(g.quotas.teams.at("ml").gpus, 8);
  EXPECT_EQ(g.quotas.teams.at("research").period_s, 30 * 86400);
  EXPECT_EQ(g.prices.default_gpu_hour, 2);
  EXPECT_EQ(g.prices.gpu_hour_by_model.at("H100"), 4.5);
  EXPECT_EQ(g.prices.currency, "EUR");
  EXPECT_EQ(back.diagnose.window_s, 7200);
  EXPECT_EQ(back.diagnose.interval_s, 30);
  EXPECT_EQ(back.diagnose.thresholds.memory_spike, 0.97);
  EXPECT_EQ(back.diagnose.thresholds.queue_wait_p90_s, 45 * 60);
  EXPECT_TRUE(Validate(back).ok());
}

}  // namespace
}  // namespace gw::config
