// Rule file parsing and the checks of `promtool check rules` (wording from promtool 2.42).
#include <gtest/gtest.h>

#include "rules/rule_file.h"

namespace gw::rules {
namespace {

std::string Errors(const std::string& text) {
  auto r = ParseRuleText(text, "r.yml");
  return r.ok() ? "" : r.error().message;
}

TEST(RuleFile, ParsesGroupsAndRules) {
  auto r = ParseRuleText(R"(groups:
- name: g
  interval: 30s
  limit: 5
  rules:
  - record: job:up:sum
    expr: sum by (job) (up)
    labels: {b: "2", a: "1"}
  - alert: Down
    expr: up == 0
    for: 5m
    keep_firing_for: 1m
    annotations: {summary: "{{ $labels.job }} down"}
)",
                         "r.yml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->groups.size(), 1u);
  const GroupSpec& g = r->groups[0];
  EXPECT_EQ(g.name, "g");
  EXPECT_EQ(g.interval_ms, 30000);
  EXPECT_EQ(g.limit, 5);
  ASSERT_EQ(g.rules.size(), 2u);
  EXPECT_EQ(g.rules[0].record, "job:up:sum");
  EXPECT_EQ(g.rules[0].labels, (tsdb::Labels{{"a", "1"}, {"b", "2"}}));
  EXPECT_EQ(g.rules[0].line, 6);
  EXPECT_TRUE(g.rules[1].is_alert());
  EXPECT_EQ(g.rules[1].for_ms, 300000);
  EXPECT_EQ(g.rules[1].keep_firing_for_ms, 60000);
  EXPECT_EQ(g.rules[1].line, 9);
}

TEST(RuleFile, ErrorsCarryFileLineAndPromtoolWording) {
  EXPECT_EQ(Errors("groups:\n- name: g\n  rules:\n  - record: x\n    expr: sum(up\n"),
            "r.yml:5:11: group \"g\", rule 1, \"x\": could not parse expression: 1:7: parse "
            "error: unclosed left parenthesis");
  EXPECT_EQ(Errors("groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up\n    foo: 1\n"),
            "r.yml:6:5: field foo not found in type rulefmt.RuleNode");
  EXPECT_EQ(Errors("groups:\n- name: g\n  rules:\n  - alert: B\n    record: x\n    expr: up\n"),
            "r.yml:5:13: group \"g\", rule 1, \"B\": only one of 'record' and 'alert' must be set");
  EXPECT_EQ(Errors("groups:\n- name: g\n  rules:\n  - expr: up\n"),
            "r.yml:4:5: group \"g\", rule 1, \"\": one of 'record' or 'alert' must be set");
  EXPECT_EQ(Errors("groups:\n- name: g\n  rules:\n  - record: \"bad name\"\n    expr: up\n"),
            "r.yml:4:13: group \"g\", rule 1, \"bad name\": invalid recording rule name: bad name");
  EXPECT_EQ(Errors("groups:\n- name: g\n  rules:\n  - alert: C\n    expr: up\n    labels:\n      "
                   "\"0bad\": x\n"),
            "r.yml:7:15: group \"g\", rule 1, \"C\": invalid label name: 0bad");
  EXPECT_EQ(Errors("groups:\n- name: g\n  rules:\n  - alert: C\n    expr: up\n    annotations:\n"
                   "      s: \"{{ .Foo\"\n"),
            "r.yml:7:10: group \"g\", rule 1, \"C\": annotation \"s\": template: __alert_C:1: "
            "unclosed action");
  EXPECT_EQ(Errors("groups:\n- name: g\n  rules: []\n- name: g\n  rules: []\n"),
            "r.yml:4:9: groupname: \"g\" is repeated in the same file");
  EXPECT_EQ(
      Errors("groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up\n    for: 5 minutes\n"),
      "r.yml:6:10: not a valid duration string: \"5 minutes\"");
  EXPECT_EQ(Errors("groups:\n- name: g\n  rules:\n  - record: r\n    expr: up\n    for: 5m\n"),
            "r.yml:6:10: group \"g\", rule 1, \"r\": invalid field 'for' in recording rule");
}

TEST(RuleFile, ReportsEveryProblem) {
  std::string e = Errors(
      "groups:\n- name: g\n  rules:\n  - record: x\n    expr: sum(up\n  - alert: A\n    "
      "expr: ''\n");
  EXPECT_NE(e.find("r.yml:5:11:"), std::string::npos) << e;
  EXPECT_NE(e.find("field 'expr' must be set in rule"), std::string::npos) << e;
}

TEST(RuleFile, MissingFile) {
  auto r = ParseRuleFile("/nonexistent/rules.yml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("/nonexistent/rules.yml"), std::string::npos);
}

// Found by tests/fuzz (rule_file): a key that is a mapping or a list made yaml-cpp throw out of
// ParseRuleText, so `rules check` and `serve` (at start and on reload) died in std::terminate.
// testdata/fuzz/nonstring_key.yml is the fuzzer's input as it found it.
TEST(RuleFile, NonStringKeysAreErrorsNotCrashes) {
  for (const char* text : {"? {a: b}\n: c\n", "groups:\n  - ? [a]\n    : b\n",
                           "groups:\n  - name: g\n    rules:\n      - ? {x: 1}\n        : y\n"}) {
    auto r = ParseRuleText(text, "k.yml");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.error().message.rfind("k.yml:", 0), 0u) << r.error().message;
  }
  const std::string path =
      std::string(GW_SOURCE_DIR) + "/tests/rules/testdata/fuzz/nonstring_key.yml";
  auto r = ParseRuleFile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind(path + ":", 0), 0u) << r.error().message;
}

}  // namespace
}  // namespace gw::rules
