// rules/template.h — the Go text/template subset that Prometheus rule labels and annotations use.
//
// Usage:
//   rules::TemplateData data{.labels = alert_labels, .external_labels = ext, .value = 0.5};
//   auto out = rules::ExpandAlertTemplate("__alert_HighTemp", "{{ $value }}", data, ctx);
//   // out.ok() ? *out : out.error().message   ("template: __alert_HighTemp:1: unclosed action")
//
// As in Prometheus 2.42 (template/template.go), ExpandAlertTemplate prepends the definitions
// `$labels $externalLabels $externalURL $value`, so error columns match Prometheus' own. The
// language: `{{ }}` actions with `-` trim markers, comments, variables (`:=`, `=`), pipelines,
// if/else if/else/end, range (with else), with, and the functions: Go's builtins (and or not len
// index print printf println eq ne lt le gt ge html urlquery) and Prometheus' (query first value
// label strvalue sortByLabel humanize humanize1024 humanizeDuration humanizePercentage
// humanizeTimestamp toUpper toLower title reReplaceAll match stripPort parseDuration safeHtml
// args graphLink tableLink externalURL pathPrefix). Values print as Go's fmt prints them
// (a float64 0.5 → "0.5", 1e6 → "1e+06"). `query` calls back through TemplateContext.
//
// Errors: a parse error or an execution error is returned as an Error whose message is Go's
// wording ("template: NAME:1:115: executing \"NAME\" at <gt $value 80>: error calling gt:
// incompatible types for comparison"). Pure functions; thread-safe as the query callback is.
#ifndef GPUWARDEN_RULES_TEMPLATE_H_
#define GPUWARDEN_RULES_TEMPLATE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "promql/parser.h"
#include "tsdb/storage.h"

namespace gw::rules {

// Parsing fails with Go's "max expression depth exceeded" past this many nested control
// structures ({{if}}, {{range}}, {{with}}, {{else if}}) and parenthesized pipelines together:
// the parser and the executor recurse once per level. Go allows 10,000 (its stacks grow); rule
// templates use a handful.
inline constexpr int kMaxTemplateDepth = 100;

// One element of a `query` result as templates see it: `.Labels` and `.Value`.
struct QuerySample {
  tsdb::Labels labels;
  double value = 0;
};

struct TemplateContext {
  // Evaluates PromQL at the template's time; an instant vector or a scalar (as one sample with
  // no labels), or an error message. Unset: `query` fails.
  std::function<Expected<std::vector<QuerySample>>(const std::string& expr)> query;
  std::string external_url;  // for the `externalURL`/`pathPrefix` functions
};

struct TemplateData {
  tsdb::Labels labels;
  tsdb::Labels external_labels;
  std::string external_url;
  double value = 0;
};

// Parses only (for `rules check`): the error Prometheus reports for a template that does not
// parse, e.g. "template: __alert_A:1: unclosed action".
Status CheckTemplate(const std::string& name, std::string_view text);

// Expands `text` for one alert (the definitions are prepended as Prometheus does).
Expected<std::string> ExpandAlertTemplate(const std::string& name, std::string_view text,
                                          const TemplateData& data, const TemplateContext& ctx);

// Go's fmt verbs for one float64 (exposed for tests): FormatGoFloat(1e6, 'v') == "1e+06";
// FormatGoFloat(0.5, 'E') == "5E-01" (promtool's sample format is FormatFloat(v,'E',-1)).
std::string FormatGoFloat(double v, char verb, int precision = -1);

// The Prometheus humanizers (exposed for tests).
std::string Humanize(double v);
std::string Humanize1024(double v);
std::string HumanizeDuration(double v);
std::string HumanizeTimestamp(double v);

// Go's strconv.Quote for UTF-8 text (labels print with it).
using promql::GoQuote;  // promql/parser.h

}  // namespace gw::rules

#endif  // GPUWARDEN_RULES_TEMPLATE_H_
