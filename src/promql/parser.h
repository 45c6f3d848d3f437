// promql/parser.h — PromQL text to syntax tree and back.
//
// Parse() accepts the Prometheus 2.42 grammar (see ast.h for the node types) and type-checks the
// tree as Prometheus does; errors read like Prometheus' own, with a 1-based "line:column:" prefix,
// e.g. `1:5: parse error: unexpected "}"`. Format() prints a tree the way Prometheus' String()
// does, so Format(*Parse(Format(e))) == Format(e). Both are pure functions, safe from any thread.
#ifndef GPUWARDEN_PROMQL_PARSER_H_
#define GPUWARDEN_PROMQL_PARSER_H_

#include <memory>
#include <string>
#include <string_view>

#include "base/error.h"
#include "promql/ast.h"

namespace gw::promql {

// The deepest tree Parse() builds: levels of binary operators, unary operators, parentheses,
// function calls, aggregations and subqueries on the longest path from the root to a leaf (a
// chain "a + b + c" of N terms is N levels). Deeper input, however it is nested, fails with
// "expression nested too deeply: more than 512 levels ..." instead of exhausting the stack of the
// parser, the type checks, Format() or the evaluator, which all recurse over the tree. Prometheus
// has no such limit (Go's stacks grow); real queries stay far below it (docs/limits.md).
inline constexpr int kMaxExprDepth = 512;

// Parses and type-checks `query`; the error is Prometheus' wording with a "line:col:" prefix.
Expected<ExprPtr> Parse(std::string_view query);

std::string Format(const Expr& e);

// Go's strconv.Quote as PromQL prints strings (\a \b \f \n \r \t \v, other control bytes as
// \xNN); bytes >= 0x80 pass through.
std::string GoQuote(std::string_view s);

// Prometheus' duration syntax ("1h30m", "5m", "250ms"): milliseconds, or false if malformed.
bool ParsePromDuration(std::string_view text, int64_t* ms);
// The shortest Prometheus spelling of a duration, e.g. 5400000 → "1h30m".
std::string FormatPromDuration(int64_t ms);

}  // namespace gw::promql

#endif  // GPUWARDEN_PROMQL_PARSER_H_
