// rules/unit_test.h — promtool-compatible rule unit tests (`promtool test rules`, 2.42).
//
// Usage:
//   std::ostringstream out, err;
//   int code = rules::RunRuleUnitTests({"tests/gpu_test.yml"}, out, err);   // 0 pass, 1 fail
//
// The test file format is promtool's: rule_files (relative to the test file, globs allowed),
// evaluation_interval (default 1m), group_eval_order, tests[{interval, input_series[{series,
// values}], alert_rule_test[{eval_time, alertname, exp_alerts[{exp_labels, exp_annotations}]}],
// promql_expr_test[{expr, eval_time, exp_samples[{labels, value}]}], external_labels,
// external_url}]. Evaluation follows promtool 2.42: the input series are loaded into a memory
// store (sample i at i·interval; promtool 2.42 leaves `interval` at 0 when not given, so every
// sample lands at t=0 and the first wins), every group is evaluated at 0, evaluation_interval,
// … up to the largest eval_time with ALERTS written, recording results are visible to later
// rules, firing alerts are compared at the evaluation at or before each eval_time, and PromQL
// tests run on the final store. Output is promtool's: "Unit Testing:  FILE", then "  SUCCESS"
// or "  FAILED:" with the same exp/got text on `err`.
//
// Thread-compatible: separate calls share nothing.
#ifndef GPUWARDEN_RULES_UNIT_TEST_H_
#define GPUWARDEN_RULES_UNIT_TEST_H_

#include <ostream>
#include <string>
#include <vector>

#include "base/error.h"
#include "tsdb/storage.h"

namespace gw::rules {

// Runs each file; returns the exit code promtool would (0 all passed, 1 otherwise).
int RunRuleUnitTests(const std::vector<std::string>& files, std::ostream& out, std::ostream& err);

// Runs one file; the errors promtool would print after "  FAILED:" (empty = passed).
std::vector<std::string> RunRuleUnitTestFile(const std::string& path);

// Expands promtool's series notation ("1+2x3 _ stale _x2 5") into values; a missing sample
// (`_`) is std::nullopt-like: `present[i]` false. Error text for a malformed item.
struct SeriesValues {
  std::vector<double> values;
  std::vector<bool> present;
};
Expected<SeriesValues> ExpandSeriesValues(const std::string& text);

// Go's time.Duration String for ms ("1m0s", "1h0m0s", "0s", "1.5s").
std::string GoDurationString(int64_t ms);

// Prometheus' labels.Labels String: {a="b", c="d"}.
std::string LabelsString(const tsdb::Labels& ls);

}  // namespace gw::rules

#endif  // GPUWARDEN_RULES_UNIT_TEST_H_
