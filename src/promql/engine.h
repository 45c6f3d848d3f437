// promql/engine.h — evaluates PromQL over a tsdb::Querier with Prometheus 2.42 semantics.
//
// Usage:
//   promql::Engine engine;                       // default options as Prometheus' defaults
//   auto r = engine.Instant(querier, "rate(x[5m])", now_ms);
//   if (!r.ok()) log(r.error().message);         // e.g. kBadData "1:6: parse error: ..."
//
// Semantics follow Prometheus 2.42 (docs/prometheus-notes.md, "PromQL semantics"): instant
// selectors take the newest sample in [t - lookback, t] unless it is a stale marker; range
// selectors take [t - range, t] without stale markers; subqueries without a step use a 1m
// evaluation interval, epoch-aligned. Results are ordered as Prometheus orders them where that is
// defined (range results by label set; sort/sort_desc).
//
// Threading: an Engine holds only its options and may be shared by threads; each call reads the
// querier through Select() only, so it is as thread-safe as the querier.
#ifndef GPUWARDEN_PROMQL_ENGINE_H_
#define GPUWARDEN_PROMQL_ENGINE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "promql/ast.h"
#include "promql/gate.h"
#include "tsdb/storage.h"

namespace gw::promql {

struct Point {
  int64_t t_ms = 0;
  double v = 0;
};

struct Series {
  tsdb::Labels labels;
  std::vector<Point> points;  // time-ordered
};

// A query result. kScalar: `scalar` at `t_ms`; kString: `string` at `t_ms`; kVector: `series`,
// each with exactly one point at `t_ms`; kMatrix: `series` with their points.
struct Value {
  ValueType type = ValueType::kVector;
  double scalar = 0;
  std::string string;
  int64_t t_ms = 0;
  std::vector<Series> series;
};

struct QueryError {
  // kBadData: the query text is wrong (HTTP 400 bad_data); kExecution: evaluation failed
  // (e.g. duplicate series in a match group, too many samples); kTimeout, kCanceled;
  // kUnavailable: the query queue is full (EngineOptions::gate); kInternal: the store failed.
  enum class Kind { kBadData, kExecution, kTimeout, kCanceled, kUnavailable, kInternal };
  Kind kind = Kind::kInternal;
  std::string message;  // Prometheus' wording
};

// Either a Value or a QueryError.
class [[nodiscard]] QueryResult {
 public:
  QueryResult(Value v) : v_(std::move(v)) {}       // NOLINT: implicit by design
  QueryResult(QueryError e) : v_(std::move(e)) {}  // NOLINT: implicit by design
  bool ok() const { return v_.index() == 0; }
  Value& value() { return std::get<0>(v_); }
  const Value& value() const { return std::get<0>(v_); }
  const QueryError& error() const { return std::get<1>(v_); }

 private:
  std::variant<Value, QueryError> v_;
};

struct EngineOptions {
  int64_t lookback_delta_ms = 5 * 60 * 1000;
  // Wall-clock limit of one query, queue wait included (Prometheus' --query.timeout). Evaluation
  // checks it between steps, between the series of a step and inside subqueries, and stops with
  // kTimeout "query timed out in expression evaluation".
  double timeout_s = 120;
  // Most samples held at once during one evaluation (Prometheus' --query.max-samples): the
  // samples selected by the current step, the points of subqueries and range vectors, and, for
  // range queries, the points of the result so far. Past it: kExecution "query processing would
  // load too many samples into memory in query execution".
  size_t max_samples = 50000000;
  // Optional: a slot of this gate is taken before evaluation (serve's query API and console), and
  // its Shutdown() cancels the evaluation. Null: no limit (rules, the CLI, tests).
  std::shared_ptr<QueryGate> gate;
  // The interval of subqueries written without a step (Prometheus' global evaluation_interval).
  int64_t default_subquery_step_ms = 60 * 1000;
  // Range queries compute a range function over a plain range selector (rate(x[5m]),
  // max_over_time(x[1h]), ...) for all steps in one pass per series: running sums and monotonic
  // deques for the *_over_time aggregates, moving window bounds for the others. False: step by
  // step (tests compare the two).
  bool sliding_windows = true;
  // min/max/sum/count/avg/last/present_over_time, rate, increase and delta over a plain range
  // selector of at least rollup_min_range_ms read the querier's 5-minute rollups
  // (tsdb/rollup.h) for the complete windows inside each step's window where they stand exactly
  // for the raw samples, and raw samples for the rest; so do plain instant selectors in range
  // queries of at least rollup_min_range_ms whose steps all fall on 5-minute window starts (the
  // value at or before each step within the lookback). The answer equals the raw evaluation
  // (sums, and rate/increase across several resets in one window, to float rounding).
  bool rollups = true;
  int64_t rollup_min_range_ms = 60 * 60 * 1000;
};

class Engine {
 public:
  explicit Engine(EngineOptions options = {});

  // Evaluates `expr` at `t_ms`. Any value type may result (a range selector gives a matrix).
  QueryResult Instant(tsdb::Querier& querier, std::string_view expr, int64_t t_ms) const;

  // Evaluates `expr` at start, start+step, ... <= end; the result is a matrix (one series per
  // label set, one point per step where it has a value). `expr` must be a scalar or an instant
  // vector. step_ms must be > 0 and end >= start (kBadData otherwise).
  QueryResult Range(tsdb::Querier& querier, std::string_view expr, int64_t start_ms, int64_t end_ms,
                    int64_t step_ms) const;

 private:
  EngineOptions options_;
};

}  // namespace gw::promql

#endif  // GPUWARDEN_PROMQL_ENGINE_H_
