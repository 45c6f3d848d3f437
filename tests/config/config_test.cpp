#include "config/config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "config/messages.h"
#include "support/process.h"

namespace gw::config {
namespace {

using gw::testing::TempDir;
using gw::testing::WriteFile;

// Loading `text` fails with a message that contains `expected`.
void ExpectRefused(const TempDir& dir, const std::string& text, const std::string& expected) {
  WriteFile(dir / "bad.yaml", text);
  Config b;
  Status e = LoadConfigFile(dir / "bad.yaml", &b);
  ASSERT_FALSE(e.ok()) << text;
  EXPECT_NE(e.message().find(expected), std::string::npos) << e.message();
}

TEST(Config, DefaultsAreValid) {
  Config c;
  EXPECT_TRUE(Validate(c).ok());
  EXPECT_EQ(c.listen, ":9966");
  EXPECT_EQ(c.collect.fast_interval_s, 1.0);
  EXPECT_EQ(c.collect.slow_interval_s, 10.0);
}

TEST(Config, FileOverridesDefaults) {
  TempDir dir;
  WriteFile(dir / "c.yaml",
            "listen: 127.0.0.1:9000\ncollect:\n  interval: 500ms\n  slow_interval: 1m\n"
            "  per_process_metrics: true\n  gpm: false\nnvml:\n  call_timeout: 2s\nsimulate:\n"
            "  scenario: demo\n  clock: stepped\n  speed: 10\n");
  Config c;
  Status s = LoadConfigFile(dir / "c.yaml", &c);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(c.listen, "127.0.0.1:9000");
  EXPECT_EQ(c.collect.fast_interval_s, 0.5);
  EXPECT_EQ(c.collect.slow_interval_s, 60);
  EXPECT_TRUE(c.collect.per_process_metrics);
  EXPECT_FALSE(c.collect.gpm);
  EXPECT_EQ(c.collect.call_timeout_s, 2);
  EXPECT_EQ(c.simulate.scenario, "demo");
  EXPECT_EQ(c.simulate.clock, "stepped");
  EXPECT_EQ(c.simulate.speed, 10);
  EXPECT_TRUE(Validate(c).ok());
}

TEST(Config, RulesAndAlerting) {
  TempDir dir;
  WriteFile(dir / "c.yaml",
            "rules:\n  builtin: false\n  files: [a.yml, 'more/*.yml']\n"
            "  evaluation_interval: 30s\n  external_labels:\n    node: n1\n"
            "alerting:\n  alertmanagers:\n    - http://127.0.0.1:9093\n"
            "    - url: https://am.example:9093\n      timeout: 5s\n"
            "      basic_auth: {username: u, password_file: /p}\n"
            "  webhooks: [http://127.0.0.1:8080/hook]\n  resend_delay: 2m\n");
  Config c;
  Status s = LoadConfigFile(dir / "c.yaml", &c);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_FALSE(c.rules.builtin);
  EXPECT_EQ(c.rules.files, (std::vector<std::string>{"a.yml", "more/*.yml"}));
  EXPECT_EQ(c.rules.evaluation_interval_s, 30);
  ASSERT_EQ(c.rules.external_labels.size(), 1u);
  EXPECT_EQ(c.rules.external_labels[0].second, "n1");
  ASSERT_EQ(c.alerting.alertmanagers.size(), 2u);
  EXPECT_EQ(c.alerting.alertmanagers[0].url, "http://127.0.0.1:9093");
  EXPECT_EQ(c.alerting.alertmanagers[1].timeout_s, 5);
  EXPECT_EQ(c.alerting.alertmanagers[1].basic_auth_username, "u");
  ASSERT_EQ(c.alerting.webhooks.size(), 1u);
  EXPECT_EQ(c.alerting.resend_delay_s, 120);

  struct Case {
    std::string text, expected;
  } bad[] = {
      {"alerting:\n  alertmanagers:\n    - ftp://x\n",
       ":3: alerting.alertmanagers: url must start with http:// or https://"},
      {"alerting:\n  webhooks:\n    - url: http://x\n      colour: red\n",
       ":4: alerting.webhooks: unknown key 'colour'"},
      {"rules:\n  external_labels:\n    9bad: x\n",
       ":3: rules.external_labels: invalid label name '9bad'"},
      {"rules:\n  files: {a: b}\n", ":2: rules.files: expected a list of strings"},
  };
  for (const Case& k : bad) ExpectRefused(dir, k.text, k.expected);
}

TEST(Config, UnknownKeyNamesFileAndLine) {
  TempDir dir;
  WriteFile(dir / "c.yaml", "listen: \":1\"\ncollect:\n  intervall: 1s\n");
  Config c;
  Status s = LoadConfigFile(dir / "c.yaml", &c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            (dir / "c.yaml") + ":3: unknown key 'collect.intervall' (see docs/configuration.md)");
}

TEST(Config, BadValuesNameFileAndLine) {
  TempDir dir;
  struct Case {
    std::string text, expected;
  } cases[] = {
      {"collect:\n  interval: fast\n", ":2: collect.interval: expected a duration"},
      {"collect:\n  per_process_metrics: yes please\n",
       ":2: collect.per_process_metrics: expected true or false"},
      {"simulate:\n  speed: -3\n", ":2: simulate.speed: expected a positive number"},
      {"collect: [1, 2]\n", ":1: collect: expected a mapping"},
      {"listen: [a\n", ":"},  // YAML syntax error, still with a line
      {"query:\n  max_concurrency: 0\n",
       ":2: query.max_concurrency: expected a whole number from 1 to 1024, got '0'"},
      {"query:\n  max_samples: -5\n", ":2: query.max_samples: expected a whole number"},
      {"query:\n  timeout: soon\n", ":2: query.timeout: expected a duration"},
      {"storage:\n  block_range: 7m\n",
       ":2: storage.block_range (7m) must be 0 (automatic) or a whole number of 5-minute windows "
       "from 1h to 7d"},
      {"storage:\n  path: d\n  block_range: 8d\n", ":3: storage.block_range (192h) must be"},
      {"storage:\n  block_range: 61m\n", ":2: storage.block_range (1h1m) must be"},
  };
  for (const Case& c : cases) {
    WriteFile(dir / "c.yaml", c.text);
    Config config;
    Status s = LoadConfigFile(dir / "c.yaml", &config);
    ASSERT_FALSE(s.ok()) << c.text;
    EXPECT_EQ(s.message().rfind(dir / "c.yaml", 0), 0u) << s.message();
    EXPECT_NE(s.message().find(c.expected), std::string::npos) << s.message();
  }
}

TEST(Config, QueryLimits) {
  TempDir dir;
  WriteFile(dir / "c.yaml",
            "query:\n  timeout: 30s\n  max_samples: 5000000\n  max_concurrency: 4\n"
            "  max_queued: 0\n");
  Config c;
  ASSERT_TRUE(LoadConfigFile(dir / "c.yaml", &c).ok());
  EXPECT_EQ(c.query.timeout_s, 30);
  EXPECT_EQ(c.query.max_samples, 5000000);
  EXPECT_EQ(c.query.max_concurrency, 4);
  EXPECT_EQ(c.query.max_queued, 0);
  EXPECT_TRUE(Validate(c).ok());
  Config defaults;  // Prometheus' timeout and sample limit; a node agent's concurrency
  EXPECT_EQ(defaults.query.timeout_s, 120);
  EXPECT_EQ(defaults.query.max_samples, 50000000);
  EXPECT_EQ(defaults.query.max_concurrency, 2);
  EXPECT_EQ(defaults.query.max_queued, 4);
}

TEST(Config, MissingFileIsClear) {
  Config c;
  Status s = LoadConfigFile("/nonexistent/gpuwarden.yaml", &c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "/nonexistent/gpuwarden.yaml: cannot read the configuration file");
}

TEST(Config, ValidationCatchesCrossFieldMistakes) {
  Config c;
  c.collect.slow_interval_s = 0.5;
  EXPECT_FALSE(Validate(c).ok());
  c = Config();
  c.simulate.clock = "fast";
  EXPECT_FALSE(Validate(c).ok());
  c = Config();
  c.log_level = "loud";
  EXPECT_FALSE(Validate(c).ok());
}

TEST(Config, EveryKeyIsDocumented) {
  std::ifstream in(std::string(GW_SOURCE_DIR) + "/docs/configuration.md");
  std::stringstream ss;
  ss << in.rdbuf();
  for (const std::string& key : ConfigKeys())
    EXPECT_NE(ss.str().find("| `" + key + "` |"), std::string::npos)
        << key << " missing from docs/configuration.md";
}

// Every section names the place and quotes the file's text the same way (config/messages.h): a
// control byte in a bad value is shown as \xNN, in the main section and in governance's alike.
TEST(Config, EverySectionQuotesBadTextTheSameWay) {
  EXPECT_EQ(Printable("a\tb\x7f"), "a\\x09b\\x7f");
  TempDir dir;
  const std::string main_file = dir.path() + "/main.yaml";
  WriteFile(main_file, "collect:\n  interval: \"1\\ts\"\n");
  Config c;
  Status s = LoadConfigFile(main_file, &c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(main_file + ":2: "), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("1\\x09s"), std::string::npos) << s.message();
  const std::string gov_file = dir.path() + "/gov.yaml";
  WriteFile(gov_file, "governance:\n  prices:\n    energy_kwh: \"x\\ty\"\n");
  Config g;
  s = LoadConfigFile(gov_file, &g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(gov_file + ":3: "), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("x\\x09y"), std::string::npos) << s.message();
}

TEST(Config, GovernanceMemoryHeldRatio) {
  TempDir dir;
  Config config;
  EXPECT_DOUBLE_EQ(config.governance.settings.memory_held_ratio, 0.05);  // the default
  WriteFile(dir / "c.yaml", "governance:\n  memory_held_ratio: 0.2\n");
  ASSERT_TRUE(LoadConfigFile(dir / "c.yaml", &config).ok());
  EXPECT_DOUBLE_EQ(config.governance.settings.memory_held_ratio, 0.2);
  for (const char* bad : {"1.5", "-0.1", "lots", "[0.1]"}) {
    WriteFile(dir / "c.yaml", std::string("governance:\n  memory_held_ratio: ") + bad + "\n");
    Config c;
    Status s = LoadConfigFile(dir / "c.yaml", &c);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find(dir / "c.yaml" + ":2: governance.memory_held_ratio: expected"),
              std::string::npos)
        << s.message();
  }
}

}  // namespace
}  // namespace gw::config

namespace gw::config {
namespace {

TEST(KubernetesConfig, DefaultsAndFile) {
  Config d;
  EXPECT_EQ(d.jobs.kubernetes.socket, "/var/lib/kubelet/pod-resources/kubelet.sock");
  EXPECT_EQ(d.jobs.kubernetes.poll_interval_s, 0);  // jobs.poll_interval
  EXPECT_EQ(d.jobs.kubernetes.timeout_s, 5);
  EXPECT_EQ(d.jobs.kubernetes.resources,
            (std::vector<std::string>{"nvidia.com/gpu", "nvidia.com/mig-*"}));
  EXPECT_TRUE(d.jobs.kubernetes.pod_list_command.empty());

  TempDir dir;
  WriteFile(dir / "k.yaml",
            "jobs:\n"
            "  scheduler: kubernetes\n"
            "  kubernetes:\n"
            "    socket: /run/k.sock\n"
            "    poll_interval: 3s\n"
            "    timeout: 500ms\n"
            "    resources: [nvidia.com/gpu]\n"
            "    pod_list_command: [kubectl, get, pods, -A, --field-selector, "
            "\"spec.nodeName={node}\", -o, json]\n"
            "    user_label: owner\n"
            "    user_annotation: example.com/user\n"
            "teams:\n"
            "  namespaces: {ml-research: research, \"/vision-.*/\": vision, a-first: x}\n");
  Config c;
  Status s = LoadConfigFile(dir / "k.yaml", &c);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(Validate(c).ok());
  EXPECT_EQ(c.jobs.scheduler, "kubernetes");
  EXPECT_EQ(c.jobs.kubernetes.socket, "/run/k.sock");
  EXPECT_EQ(c.jobs.kubernetes.poll_interval_s, 3);
  EXPECT_EQ(c.jobs.kubernetes.timeout_s, 0.5);
  EXPECT_EQ(c.jobs.kubernetes.resources, std::vector<std::string>{"nvidia.com/gpu"});
  ASSERT_EQ(c.jobs.kubernetes.pod_list_command.size(), 8u);
  EXPECT_EQ(c.jobs.kubernetes.pod_list_command[5], "spec.nodeName={node}");
  EXPECT_EQ(c.jobs.kubernetes.user_label, "owner");
  EXPECT_EQ(c.jobs.kubernetes.user_annotation, "example.com/user");
  // The file's order, not sorted: patterns are tried in it.
  using Rule = std::pair<std::string, std::string>;
  EXPECT_EQ(c.teams.namespaces,
            (std::vector<Rule>{
                {"ml-research", "research"}, {"/vision-.*/", "vision"}, {"a-first", "x"}}));
}

TEST(KubernetesConfig, BadValuesNameFileLineAndWhat) {
  struct Case {
    std::string text, expected;
  } bad[] = {
      {"jobs:\n  scheduler: k8s\n",
       ":2: jobs.scheduler: expected none, slurm or kubernetes, got 'k8s'"},
      {"jobs:\n  kubernetes:\n    timeout: soon\n",
       ":3: jobs.kubernetes.timeout: expected a duration such as 1s, 500ms or 2m, got 'soon'"},
      {"jobs:\n  kubernetes:\n    poll_interval: 0s\n",
       ":3: jobs.kubernetes.poll_interval: expected a duration"},
      {"jobs:\n  kubernetes:\n    sockett: /x\n",
       ":3: unknown key 'jobs.kubernetes.sockett' (see docs/configuration.md)"},
      {"jobs:\n  kubernetes:\n    resources: [\"nvidia.com/*-gpu\"]\n",
       ":3: jobs.kubernetes.resources: expected resource names (a '*' only at the end), got "
       "'nvidia.com/*-gpu'"},
      {"jobs:\n  kubernetes:\n    socket: \"\"\n", ":3: jobs.kubernetes.socket: expected a socket"},
      {"teams:\n  namespaces:\n    ok: a\n    \"/ml-(/\": b\n",
       ":4: teams.namespaces: bad regular expression '/ml-(/': missing ): "},
      {"teams:\n  namespaces: [a, b]\n", ":2: teams.namespaces: expected a mapping"},
      {"teams:\n  namespaces:\n    ml: [a]\n", ":3: teams.namespaces.ml: expected a single value"},
  };
  TempDir dir;
  for (const Case& k : bad) ExpectRefused(dir, k.text, (dir / "bad.yaml") + k.expected);
  Config c;
  c.jobs.kubernetes.timeout_s = 0;
  EXPECT_FALSE(Validate(c).ok());
}

}  // namespace
}  // namespace gw::config
