// Functions over range vectors: rate & co. (Prometheus 2.42's extrapolatedRate, instantValue,
// linearRegression with Kahan sums) and the *_over_time family.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>

#include "promql/eval.h"
#include "promql/functions.h"

namespace gw::promql {
namespace {

bool ExtrapolatedRate(std::span<const Point> p, int64_t range_start, int64_t range_end,
                      int64_t range_ms, bool counter, bool rate, double* out) {
  if (p.size() < 2) return false;
  double result = p.back().v - p.front().v;
  if (counter) {
    double prev = p.front().v;
    for (size_t i = 1; i < p.size(); ++i) {
      if (p[i].v < prev) result += prev;
      prev = p[i].v;
    }
  }
  *out = ExtrapolateRate(result, p.front(), p.back(), p.size(), range_start, range_end, range_ms,
                         counter, rate);
  return true;
}

bool InstantValue(std::span<const Point> p, bool rate, double* out) {
  if (p.size() < 2) return false;
  const Point& last = p[p.size() - 1];
  const Point& prev = p[p.size() - 2];
  double result = rate && last.v < prev.v ? last.v : last.v - prev.v;
  int64_t interval = last.t_ms - prev.t_ms;
  if (interval == 0) return false;
  if (rate) result /= static_cast<double>(interval) / 1000;
  *out = result;
  return true;
}

// Least squares of the points with x in seconds relative to intercept_ms.
void LinearRegression(std::span<const Point> p, int64_t intercept_ms, double* slope,
                      double* intercept) {
  double n = 0, sum_x = 0, c_x = 0, sum_y = 0, c_y = 0, sum_xy = 0, c_xy = 0, sum_x2 = 0, c_x2 = 0;
  double init_y = p[0].v;
  bool const_y = true;
  for (size_t i = 0; i < p.size(); ++i) {
    if (const_y && i > 0 && p[i].v != init_y) const_y = false;
    n += 1;
    double x = static_cast<double>(p[i].t_ms - intercept_ms) / 1e3;
    KahanAdd(x, &sum_x, &c_x);
    KahanAdd(p[i].v, &sum_y, &c_y);
    KahanAdd(x * p[i].v, &sum_xy, &c_xy);
    KahanAdd(x * x, &sum_x2, &c_x2);
  }
  if (const_y) {
    if (std::isinf(init_y)) {
      *slope = *intercept = std::nan("");
    } else {
      *slope = 0;
      *intercept = init_y;
    }
    return;
  }
  sum_x += c_x;
  sum_y += c_y;
  sum_xy += c_xy;
  sum_x2 += c_x2;
  double cov_xy = sum_xy - sum_x * sum_y / n;
  double var_x = sum_x2 - sum_x * sum_x / n;
  *slope = cov_xy / var_x;
  *intercept = sum_y / n - *slope * sum_x / n;
}

double AvgOverTime(std::span<const Point> p) {
  double mean = 0, count = 0, c = 0;
  for (const Point& x : p) {
    count += 1;
    if (std::isinf(mean)) {
      if (std::isinf(x.v) && (mean > 0) == (x.v > 0)) continue;
      if (!std::isinf(x.v) && !std::isnan(x.v)) continue;
    }
    KahanAdd(x.v / count - mean / count, &mean, &c);
  }
  return std::isinf(mean) ? mean : mean + c;
}

double SumOverTime(std::span<const Point> p) {
  double sum = 0, c = 0;
  for (const Point& x : p) KahanAdd(x.v, &sum, &c);
  return std::isinf(sum) ? sum : sum + c;
}

double StdvarOverTime(std::span<const Point> p) {
  double count = 0, mean = 0, c_mean = 0, aux = 0, c_aux = 0;
  for (const Point& x : p) {
    count += 1;
    double delta = x.v - (mean + c_mean);
    KahanAdd(delta / count, &mean, &c_mean);
    KahanAdd(delta * (x.v - (mean + c_mean)), &aux, &c_aux);
  }
  return (aux + c_aux) / count;
}

// Go's fmt "%f" of a factor for holt_winters' error text: six decimals, infinities as
// "+Inf"/"-Inf".
std::string GoFormatF(double x) {
  if (std::isinf(x)) return x > 0 ? "+Inf" : "-Inf";
  if (std::isnan(x)) return "NaN";
  char buf[400];
  std::snprintf(buf, sizeof buf, "%f", x);
  return buf;
}

// 2.42's holt_winters: double exponential smoothing with smoothing factor sf and trend factor tf.
// Both are checked before the sample count, so a series with one point still reports a bad factor;
// NaN factors pass the check (Go compares with <= and >=). Fewer than two points give no result.
bool HoltWinters(std::span<const Point> p, double sf, double tf, double* out) {
  if (sf <= 0 || sf >= 1)
    throw EvalError{QueryError::Kind::kExecution,
                    "invalid smoothing factor. Expected: 0 < sf < 1, got: " + GoFormatF(sf)};
  if (tf <= 0 || tf >= 1)
    throw EvalError{QueryError::Kind::kExecution,
                    "invalid trend factor. Expected: 0 < tf < 1, got: " + GoFormatF(tf)};
  if (p.size() < 2) return false;
  double s0 = 0, s1 = p[0].v, trend = p[1].v - p[0].v;
  for (size_t i = 1; i < p.size(); ++i) {
    double x = sf * p[i].v;
    // The trend is the first difference on the first step, then smoothed.
    if (i > 1) trend = tf * (s1 - s0) + (1 - tf) * trend;
    double y = (1 - sf) * (s1 + trend);
    s0 = s1;
    s1 = x + y;
  }
  *out = s1;
  return true;
}

// The labels absent()/absent_over_time() report: those of `=` matchers, except labels that also
// have another matcher (Prometheus' createLabelsForAbsentFunction).
tsdb::Labels AbsentLabels(const Expr& arg) {
  const Expr* e = &arg;
  while (e->kind == ExprKind::kParen) e = static_cast<const ParenExpr*>(e)->expr.get();
  const VectorSelector* vs = nullptr;
  if (e->kind == ExprKind::kVectorSelector) vs = static_cast<const VectorSelector*>(e);
  if (e->kind == ExprKind::kMatrixSelector)
    vs = static_cast<const MatrixSelector*>(e)->selector.get();
  tsdb::Labels out;
  if (!vs) return out;
  std::vector<std::string> has;
  for (const tsdb::Matcher& m : vs->matchers) {
    if (m.name() == "__name__") continue;
    bool seen = std::find(has.begin(), has.end(), m.name()) != has.end();
    if (m.type() == tsdb::MatchType::kEqual && !seen) {
      SetLabel(&out, m.name(), m.value());
      has.push_back(m.name());
    } else {
      SetLabel(&out, m.name(), "");
    }
  }
  return out;
}

}  // namespace

double ExtrapolateRate(double result, Point first, Point last, size_t n, int64_t range_start,
                       int64_t range_end, int64_t range_ms, bool counter, bool rate) {
  double to_start = static_cast<double>(first.t_ms - range_start) / 1000;
  double to_end = static_cast<double>(range_end - last.t_ms) / 1000;
  double sampled = static_cast<double>(last.t_ms - first.t_ms) / 1000;
  double avg = sampled / static_cast<double>(n - 1);
  if (counter && result > 0 && first.v >= 0) {
    // A counter cannot be negative: do not extrapolate below its zero point.
    double to_zero = sampled * (first.v / result);
    if (to_zero < to_start) to_start = to_zero;
  }
  double threshold = avg * 1.1;
  double interval = sampled;
  interval += to_start < threshold ? to_start : avg / 2;
  interval += to_end < threshold ? to_end : avg / 2;
  double factor = interval / sampled;
  if (rate) factor /= static_cast<double>(range_ms) / 1000;
  return result * factor;
}

tsdb::Labels LabelsForAbsent(const Expr& arg) {
  return AbsentLabels(arg);
}

bool RangeFunctionValue(std::string_view name, std::span<const Point> p, int64_t range_start,
                        int64_t range_end, int64_t range_ms, int64_t t_ms, double scalar,
                        double* out) {
  double v = 0;
  bool ok = true;
  if (name == "rate" || name == "increase" || name == "delta") {
    ok = ExtrapolatedRate(p, range_start, range_end, range_ms, name != "delta", name == "rate", &v);
  } else if (name == "irate" || name == "idelta") {
    ok = InstantValue(p, name == "irate", &v);
  } else if (name == "deriv" || name == "predict_linear") {
    ok = p.size() >= 2;
    if (ok) {
      double slope = 0, intercept = 0;
      if (name == "deriv") {
        LinearRegression(p, p[0].t_ms, &slope, &intercept);
        v = slope;
      } else {
        LinearRegression(p, t_ms, &slope, &intercept);
        v = slope * scalar + intercept;
      }
    }
  } else if (name == "changes" || name == "resets") {
    int n = 0;
    for (size_t i = 1; i < p.size(); ++i) {
      double cur = p[i].v, prev = p[i - 1].v;
      if (name == "changes" ? (cur != prev && !(std::isnan(cur) && std::isnan(prev))) : cur < prev)
        ++n;
    }
    v = n;
  } else if (name == "avg_over_time") {
    v = AvgOverTime(p);
  } else if (name == "sum_over_time") {
    v = SumOverTime(p);
  } else if (name == "count_over_time") {
    v = static_cast<double>(p.size());
  } else if (name == "min_over_time" || name == "max_over_time") {
    bool max = name == "max_over_time";
    v = p[0].v;
    for (const Point& x : p)
      if ((max ? x.v > v : x.v < v) || std::isnan(v)) v = x.v;
  } else if (name == "last_over_time") {
    v = p.back().v;
  } else if (name == "quantile_over_time") {
    std::vector<double> values;
    values.reserve(p.size());
    for (const Point& x : p) values.push_back(x.v);
    v = Quantile(scalar, std::move(values));
  } else if (name == "stdvar_over_time") {
    v = StdvarOverTime(p);
  } else if (name == "stddev_over_time") {
    v = std::sqrt(StdvarOverTime(p));
  } else if (name == "present_over_time") {
    v = 1;
  } else {
    ok = false;
  }
  *out = v;
  return ok;
}

EvalValue EvalRangeFunction(Evaluator& ev, const Call& call, int64_t t_ms) {
  std::string_view name = call.func->name;
  EvalValue out;
  size_t step = 0;
  if (const StepTable* table = ev.TableFor(call, t_ms, &step)) {
    out.vector = table->At(step);
    return out;
  }
  // The range-vector argument is the first one of type matrix; others are scalars.
  size_t matrix_arg = 0;
  for (size_t i = 0; i < call.args.size(); ++i)
    if (TypeOf(*call.args[i]) == ValueType::kMatrix) matrix_arg = i;
  // The scalar arguments in order (predict_linear's t, quantile_over_time's q, holt_winters' sf
  // and tf), evaluated at this step.
  std::vector<double> scalars;
  for (size_t i = 0; i < call.args.size(); ++i)
    if (i != matrix_arg) scalars.push_back(ev.Eval(*call.args[i], t_ms).scalar);
  const double scalar_arg = scalars.empty() ? 0 : scalars[0];
  int64_t range_ms = 0, ref_ms = 0;
  if (name == "absent_over_time") {
    bool any = false;
    ev.ForEachRangeSeries(*call.args[matrix_arg], t_ms, &range_ms, &ref_ms,
                          [&any](const tsdb::Labels&, const std::vector<Point>&) { any = true; });
    if (!any) out.vector.push_back(Element{AbsentLabels(*call.args[0]), 1, 0});
    return out;
  }
  auto one_series = [&](const tsdb::Labels& labels, const std::vector<Point>& p) {
    double v = 0;
    if (name == "last_over_time") {
      out.vector.push_back(Element{labels, p.back().v, 0});
    } else if (name == "holt_winters") {
      if (HoltWinters(p, scalars[0], scalars[1], &v))
        out.vector.push_back(Element{DropName(labels), v, 0});
    } else if (RangeFunctionValue(name, p, ref_ms - range_ms, ref_ms, range_ms, t_ms, scalar_arg,
                                  &v)) {
      out.vector.push_back(Element{DropName(labels), v, 0});
    }
  };
  ev.ForEachRangeSeries(*call.args[matrix_arg], t_ms, &range_ms, &ref_ms, one_series);
  return out;
}

}  // namespace gw::promql
