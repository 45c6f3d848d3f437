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
  const Config c =
      Load(dir,
           "listen: 127.0.0.1:9100\n"
           "log_level: debug\n"
           "storage:\n  path: /var/lib/gw\n  retention: 48h\n  flush_interval: 1m\n"
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
  for (const char* expected : {"listen: 127.0.0.1:9100", "retention: 48h", "interval: 500ms",
                               "max_samples: 1000", "idle_threshold: 0.05", "scheduler: slurm",
                               "password_file: /p", "name: svc", "output_unit: request"})
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

}  // namespace
}  // namespace gw::config
