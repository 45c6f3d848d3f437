// A key given twice in one YAML mapping is refused with its line and the first one's, in every
// kind of file gpuwarden reads: the configuration (its governance, diagnose and scrape sections
// included), scenarios, rule files (promtool 2.42's wording), rule unit tests and web configs.
#include <gtest/gtest.h>

#include <string>

#include "base/yaml_keys.h"
#include "config/config.h"
#include "http/web_config.h"
#include "rules/rule_file.h"
#include "rules/unit_test.h"
#include "sim/scenario.h"
#include "support/process.h"

namespace gw {
namespace {

using testing::TempDir;
using testing::WriteFile;

std::string ConfigError(const std::string& text) {
  TempDir dir;
  const std::string path = dir / "gpuwarden.yaml";
  WriteFile(path, text);
  config::Config config;
  Status s = config::LoadConfigFile(path, &config);
  if (s.ok()) return "(accepted)";
  // The message names the file by its full path; tests compare what follows it.
  std::string m = s.message();
  return m.rfind(path, 0) == 0 ? "FILE" + m.substr(path.size()) : m;
}

TEST(DuplicateKeys, FinderReportsEachRepetitionWithBothLines) {
  auto d = FindDuplicateYamlKeys("a: 1\nb:\n  c: 1\n  d: 2\n  c: 3\na: 4\n");
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].key, "c");
  EXPECT_EQ(d[0].line, 5);
  EXPECT_EQ(d[0].column, 3);
  EXPECT_EQ(d[0].first_line, 3);
  EXPECT_EQ(d[1].key, "a");
  EXPECT_EQ(d[1].line, 6);
  EXPECT_EQ(d[1].first_line, 1);
}

TEST(DuplicateKeys, SameKeyInDifferentMappingsAndSequencesIsFine) {
  EXPECT_FALSE(FindDuplicateYamlKey("a: {x: 1}\nb: {x: 2}\nc:\n  - x: 1\n  - x: 2\n"));
  EXPECT_FALSE(FindDuplicateYamlKey("- [a, a]\n- {k: [1, 1]}\n"));
  // Values equal to keys, nested mappings as values, null values, aliases: not keys.
  EXPECT_FALSE(FindDuplicateYamlKey("a: a\nb: &x {a: 1}\nc: *x\nd:\ne: {b: a}\n"));
}

TEST(DuplicateKeys, FlowMappingsAndComplexKeys) {
  auto d = FindDuplicateYamlKey("m: {a: 1, b: 2, a: 3}\n");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->key, "a");
  EXPECT_EQ(d->line, 1);
  // A complex key (a mapping) is not compared, and does not shift the key/value alternation.
  EXPECT_FALSE(FindDuplicateYamlKey("? {x: 1}\n: v\ny: 2\n"));
  d = FindDuplicateYamlKey("? [1, 2]\n: v\ny: 2\ny: 3\n");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->key, "y");
  EXPECT_EQ(d->line, 4);
}

TEST(DuplicateKeys, NotYamlIsLeftToTheLoader) {
  EXPECT_FALSE(FindDuplicateYamlKey("a: [1, 2\n"));
  EXPECT_FALSE(FindDuplicateYamlKey(""));
}

TEST(DuplicateKeys, MessageEscapesTheKey) {
  DuplicateYamlKey d{"a\"b\x01", 4, 1, 2};
  EXPECT_EQ(DescribeDuplicateYamlKey("f.yaml", d),
            "f.yaml:4: duplicate key \"a\\\"b\\x01\" (first at line 2)");
}

TEST(DuplicateKeys, ConfigTopLevelAndEverySection) {
  EXPECT_EQ(ConfigError("listen: \":1\"\nlog_level: info\nlisten: \":2\"\n"),
            "FILE:3: duplicate key \"listen\" (first at line 1)");
  EXPECT_EQ(ConfigError("collect:\n  interval: 1s\n  interval: 2s\n"),
            "FILE:3: duplicate key \"interval\" (first at line 2)");
  // A section given twice is a duplicate too (the second would have been merged key by key).
  EXPECT_EQ(ConfigError("storage:\n  retention: 1d\nstorage:\n  path: x\n"),
            "FILE:3: duplicate key \"storage\" (first at line 1)");
  EXPECT_EQ(ConfigError("governance:\n  reclaim:\n    - partition: gpu\n      action: dry-run\n"
                        "      partition: cpu\n"),
            "FILE:5: duplicate key \"partition\" (first at line 3)");
  EXPECT_EQ(ConfigError("diagnose:\n  thresholds:\n    quota_over: 1.2\n    quota_over: 1.5\n"),
            "FILE:4: duplicate key \"quota_over\" (first at line 3)");
  EXPECT_EQ(ConfigError("scrape:\n  targets:\n    - name: a\n      url: http://127.0.0.1:1/m\n"
                        "      url: http://127.0.0.1:2/m\n"),
            "FILE:5: duplicate key \"url\" (first at line 4)");
  // The same file without the repetitions still loads.
  EXPECT_EQ(ConfigError("listen: \":1\"\ncollect:\n  interval: 1s\n"), "(accepted)");
}

TEST(DuplicateKeys, Scenario) {
  auto s = sim::ParseScenario("name: x\ngpus:\n  - model: H100\n    count: 2\n    count: 3\n",
                              "s.yaml", 0);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "s.yaml:5: duplicate key \"count\" (first at line 4)");
  EXPECT_TRUE(
      sim::ParseScenario("name: x\ngpus:\n  - model: H100\n    count: 2\n", "s.yaml", 0).ok());
}

// Web configs already refused them (their walk checks every mapping, as Go's UnmarshalStrict).
TEST(DuplicateKeys, WebConfig) {
  auto w = http::ParseWebConfig("tls_server_config:\n  cert_file: a\n  cert_file: b\n", "web.yml");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().message.rfind("web.yml:3: ", 0), 0u) << w.error().message;
  EXPECT_NE(w.error().message.find("duplicate key \"cert_file\""), std::string::npos);
}

// promtool 2.42 (`promtool check rules`) refuses these with go-yaml's words, every repetition,
// and so does this (tests/rules/compat_test.cpp runs both on testdata/rules_duplicate_keys.yml).
TEST(DuplicateKeys, RuleFileAsPromtool) {
  // Two repetitions in one mapping: both, in go-yaml's order. The labels' repetition inside that
  // mapping is not reported: go-yaml does not decode a mapping that has duplicates any further.
  auto r = rules::ParseRuleText(
      "groups:\n  - name: a\n    rules:\n      - alert: X\n        expr: up == 0\n"
      "        for: 1m\n        expr: up == 1\n        for: 2m\n        labels:\n"
      "          severity: page\n          severity: info\n",
      "r.yml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "r.yml: yaml: unmarshal errors:\n"
            "  line 7: mapping key \"expr\" already defined at line 5\n"
            "  line 8: mapping key \"for\" already defined at line 6");
  auto labels = rules::ParseRuleText(
      "groups:\n  - name: a\n    rules:\n      - alert: X\n        expr: up == 0\n"
      "        labels:\n          severity: page\n          severity: info\n",
      "r.yml");
  ASSERT_FALSE(labels.ok());
  EXPECT_EQ(labels.error().message,
            "r.yml: yaml: unmarshal errors:\n"
            "  line 8: mapping key \"severity\" already defined at line 7");
  // A key three times: every pair, ordered by the first of each pair.
  EXPECT_EQ(GoYamlDuplicateKeyErrors("a: 1\nb: 1\na: 2\na: 3\n"),
            (std::vector<std::string>{"line 3: mapping key \"a\" already defined at line 1",
                                      "line 4: mapping key \"a\" already defined at line 1",
                                      "line 4: mapping key \"a\" already defined at line 3"}));
  auto top = rules::ParseRuleText("groups: []\ngroups: []\n", "r.yml");
  ASSERT_FALSE(top.ok());
  EXPECT_EQ(top.error().message,
            "r.yml: yaml: unmarshal errors:\n  line 2: mapping key \"groups\" already defined at "
            "line 1");
}

TEST(DuplicateKeys, RuleUnitTestFile) {
  TempDir dir;
  WriteFile(dir / "t.yml",
            "rule_files: []\nevaluation_interval: 1m\nevaluation_interval: 2m\ntests: []\n");
  std::vector<std::string> errors = rules::RunRuleUnitTestFile(dir / "t.yml");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0],
            dir / "t.yml" + ":3: duplicate key \"evaluation_interval\" (first at line 2)");
}

}  // namespace
}  // namespace gw
