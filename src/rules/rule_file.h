// rules/rule_file.h — Prometheus rule files: parsing and the checks `promtool check rules` makes.
//
// Usage:
//   auto file = rules::ParseRuleFile("deploy/rules/gpu.yml");
//   if (!file.ok()) puts(file.error().message.c_str());   // one "FILE:LINE:COL: reason" per line
//   for (const rules::GroupSpec& g : file->groups) ...
//
// The format is Prometheus 2.42's (model/rulefmt): `groups: [{name, interval, limit, rules:
// [{record|alert, expr, for, keep_firing_for, labels, annotations}]}]`. Checks, with promtool's
// wording: unknown fields, exactly one of record/alert, expr present and parsing (our PromQL
// parser), valid recording rule name, label names and values, annotation names, label and
// annotation templates that parse, durations, group names present and unique in a file.
// Every error names the file and the line (and column) of the offending field, else the rule's
// line: `rules.yml:5:11: group "g", rule 1, "job:x:sum": could not parse expression: ...`.
//
// Pure functions, safe from any thread.
#ifndef GPUWARDEN_RULES_RULE_FILE_H_
#define GPUWARDEN_RULES_RULE_FILE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "tsdb/storage.h"

namespace gw::rules {

struct RuleSpec {
  std::string record;  // set for a recording rule
  std::string alert;   // set for an alerting rule
  std::string expr;
  int64_t for_ms = 0;
  int64_t keep_firing_for_ms = 0;
  tsdb::Labels labels;       // sorted by name
  tsdb::Labels annotations;  // sorted by name
  int line = 0;              // 1-based line of the rule in its file

  bool is_alert() const { return !alert.empty(); }
  const std::string& name() const { return is_alert() ? alert : record; }
  bool operator==(const RuleSpec& o) const {
    return record == o.record && alert == o.alert && expr == o.expr && for_ms == o.for_ms &&
           keep_firing_for_ms == o.keep_firing_for_ms && labels == o.labels &&
           annotations == o.annotations;
  }
};

struct GroupSpec {
  std::string name;
  int64_t interval_ms = 0;  // 0: the global evaluation interval
  int limit = 0;            // 0: no limit
  std::vector<RuleSpec> rules;
  int line = 0;
};

struct RuleFile {
  std::string path;
  std::vector<GroupSpec> groups;
};

// Reads and checks one file. On failure the error holds every problem found, one per line.
Expected<RuleFile> ParseRuleFile(const std::string& path);

// The same for text held in memory; `path` is only used in messages.
Expected<RuleFile> ParseRuleText(std::string_view text, const std::string& path);

// Prometheus' name rules.

}  // namespace gw::rules

#endif  // GPUWARDEN_RULES_RULE_FILE_H_
