// promql/functions.h — the table of PromQL functions (internal to promql/).
#ifndef GPUWARDEN_PROMQL_FUNCTIONS_H_
#define GPUWARDEN_PROMQL_FUNCTIONS_H_

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

}  // namespace gw::promql

#endif  // GPUWARDEN_PROMQL_FUNCTIONS_H_
