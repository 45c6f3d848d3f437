// promql/functions.h — the table of PromQL functions (internal to promql/).
#ifndef GPUWARDEN_PROMQL_FUNCTIONS_H_
#define GPUWARDEN_PROMQL_FUNCTIONS_H_

#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

#include "promql/ast.h"

namespace gw::promql {

class Evaluator;
struct EvalValue;

struct FunctionInfo {
  const char* name;
  std::vector<ValueType> arg_types;
  // As in Prometheus: 0 fixed arity; n > 0 the last argument is optional and up to n may be given
  // there; -1 the last argument repeats without limit.
  int variadic;
  ValueType return_type;
  EvalValue (*eval)(Evaluator& ev, const Call& call, int64_t t_ms);
};

// nullptr if there is no such function.
const FunctionInfo* LookupFunction(std::string_view name);

// Go's int64(x) as Prometheus gets it on amd64: NaN and values outside int64's range become
// math.MinInt64 (in C++ that conversion is undefined behaviour).
inline int64_t GoInt64(double x) {
  if (x >= -9.223372036854775808e18 && x < 9.223372036854775808e18) return static_cast<int64_t>(x);
  return std::numeric_limits<int64_t>::min();
}

}  // namespace gw::promql

#endif  // GPUWARDEN_PROMQL_FUNCTIONS_H_
