// The function table and the functions over instant vectors and scalars (Prometheus 2.42's
// promql/functions.go). Range-vector functions live in functions_range.cpp.
#include "promql/functions.h"

#include <re2/re2.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "promql/eval.h"

namespace gw::promql {

EvalValue EvalRangeFunction(Evaluator& ev, const Call& call, int64_t t_ms);
tsdb::Labels LabelsForAbsent(const Expr& arg);

namespace {

constexpr ValueType S = ValueType::kScalar;
constexpr ValueType V = ValueType::kVector;
constexpr ValueType M = ValueType::kMatrix;
constexpr ValueType Str = ValueType::kString;

EvalError ExecError(std::string message) {
  return EvalError{QueryError::Kind::kExecution, std::move(message)};
}

// Go's math.Max / math.Min: NaN wins, and +0 beats -0 (Max) / -0 beats +0 (Min).
double GoMax(double a, double b) {
  if (std::isinf(a) && a > 0) return a;
  if (std::isinf(b) && b > 0) return b;
  if (std::isnan(a) || std::isnan(b)) return std::nan("");
  if (a == 0 && b == 0) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}
double GoMin(double a, double b) {
  if (std::isinf(a) && a < 0) return a;
  if (std::isinf(b) && b < 0) return b;
  if (std::isnan(a) || std::isnan(b)) return std::nan("");
  if (a == 0 && b == 0) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

Vector ArgVector(Evaluator& ev, const Call& c, size_t i, int64_t t) {
  return ev.Eval(*c.args[i], t).vector;
}
double ArgScalar(Evaluator& ev, const Call& c, size_t i, int64_t t) {
  return ev.Eval(*c.args[i], t).scalar;
}
std::string ArgString(Evaluator& ev, const Call& c, size_t i, int64_t t) {
  return ev.Eval(*c.args[i], t).str;
}

EvalValue FromVector(Vector v) {
  EvalValue out;
  out.vector = std::move(v);
  return out;
}

// Applies f to every element's value and drops the metric name.
template <class F>
EvalValue Simple(Evaluator& ev, const Call& c, int64_t t, F f) {
  Vector v = ArgVector(ev, c, 0, t);
  for (Element& el : v) {
    el.v = f(el.v);
    el.labels = DropName(el.labels);
  }
  return FromVector(std::move(v));
}

EvalValue Time(Evaluator&, const Call&, int64_t t) {
  EvalValue out;
  out.type = S;
  out.scalar = static_cast<double>(t) / 1000;
  return out;
}

constexpr double kPi = 3.14159265358979323846264338327950288;

EvalValue Pi(Evaluator&, const Call&, int64_t) {
  EvalValue out;
  out.type = S;
  out.scalar = kPi;
  return out;
}

EvalValue Clamp(Evaluator& ev, const Call& c, int64_t t) {
  Vector v = ArgVector(ev, c, 0, t);
  double lo = ArgScalar(ev, c, 1, t), hi = ArgScalar(ev, c, 2, t);
  if (hi < lo) return FromVector({});
  for (Element& el : v) {
    el.v = GoMax(lo, GoMin(hi, el.v));
    el.labels = DropName(el.labels);
  }
  return FromVector(std::move(v));
}

EvalValue ClampMin(Evaluator& ev, const Call& c, int64_t t) {
  double lo = ArgScalar(ev, c, 1, t);
  return Simple(ev, c, t, [lo](double x) { return GoMax(lo, x); });
}
EvalValue ClampMax(Evaluator& ev, const Call& c, int64_t t) {
  double hi = ArgScalar(ev, c, 1, t);
  return Simple(ev, c, t, [hi](double x) { return GoMin(hi, x); });
}

EvalValue Round(Evaluator& ev, const Call& c, int64_t t) {
  double to_nearest = c.args.size() >= 2 ? ArgScalar(ev, c, 1, t) : 1;
  double inverse = 1.0 / to_nearest;
  return Simple(ev, c, t, [inverse](double x) { return std::floor(x * inverse + 0.5) / inverse; });
}

EvalValue Timestamp(Evaluator& ev, const Call& c, int64_t t) {
  const Expr* arg = c.args[0].get();
  while (arg->kind == ExprKind::kParen) arg = static_cast<const ParenExpr*>(arg)->expr.get();
  // Of a plain selector, the sample's own time; of anything else, the evaluation time.
  Vector v = arg->kind == ExprKind::kVectorSelector
                 ? ev.EvalSelectorAt(*static_cast<const VectorSelector*>(arg), t)
                 : ArgVector(ev, c, 0, t);
  bool selector = arg->kind == ExprKind::kVectorSelector;
  for (Element& el : v) {
    el.v = static_cast<double>(selector ? el.t_ms : t) / 1000;
    el.labels = DropName(el.labels);
  }
  return FromVector(std::move(v));
}

EvalValue VectorFn(Evaluator& ev, const Call& c, int64_t t) {
  return FromVector({Element{{}, ArgScalar(ev, c, 0, t), 0}});
}

EvalValue ScalarFn(Evaluator& ev, const Call& c, int64_t t) {
  Vector v = ArgVector(ev, c, 0, t);
  EvalValue out;
  out.type = S;
  out.scalar = v.size() == 1 ? v[0].v : std::nan("");
  return out;
}

EvalValue Sort(Evaluator& ev, const Call& c, int64_t t, bool descending) {
  Vector v = ArgVector(ev, c, 0, t);
  // Stable, NaN last either way (as Go's insertion sort in Prometheus for small vectors).
  std::stable_sort(v.begin(), v.end(), [descending](const Element& a, const Element& b) {
    if (std::isnan(a.v)) return false;
    if (std::isnan(b.v)) return true;
    return descending ? a.v > b.v : a.v < b.v;
  });
  return FromVector(std::move(v));
}

EvalValue Absent(Evaluator& ev, const Call& c, int64_t t) {
  Vector v = ArgVector(ev, c, 0, t);
  if (!v.empty()) return FromVector({});
  return FromVector({Element{LabelsForAbsent(*c.args[0]), 1, 0}});
}

// Go's Regexp.Expand: $1, ${1}, $name, ${name}, $$.
std::string Expand(const std::string& tmpl, const RE2& re, const std::vector<re2::StringPiece>& g) {
  std::string out;
  const auto& named = re.NamedCapturingGroups();
  for (size_t i = 0; i < tmpl.size(); ++i) {
    if (tmpl[i] != '$' || i + 1 >= tmpl.size()) {
      out.push_back(tmpl[i]);
      continue;
    }
    if (tmpl[i + 1] == '$') {
      out.push_back('$');
      ++i;
      continue;
    }
    std::string name;
    size_t j = i + 1;
    bool brace = tmpl[j] == '{';
    if (brace) ++j;
    size_t start = j;
    while (j < tmpl.size() && (std::isalnum(static_cast<unsigned char>(tmpl[j])) || tmpl[j] == '_'))
      ++j;
    name = tmpl.substr(start, j - start);
    if (name.empty() || (brace && (j >= tmpl.size() || tmpl[j] != '}'))) {
      out.push_back('$');  // malformed: Go copies the '$' literally
      continue;
    }
    if (brace) ++j;
    i = j - 1;
    int index = -1;
    if (std::all_of(name.begin(), name.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
      index = name.size() < 9 ? std::stoi(name) : -1;
    } else if (auto it = named.find(name); it != named.end()) {
      index = it->second;
    }
    if (index >= 0 && static_cast<size_t>(index) < g.size() && g[index].data() != nullptr)
      out.append(g[index].data(), g[index].size());
  }
  return out;
}

EvalValue LabelReplace(Evaluator& ev, const Call& c, int64_t t) {
  Vector v = ArgVector(ev, c, 0, t);
  std::string dst = ArgString(ev, c, 1, t), repl = ArgString(ev, c, 2, t),
              src = ArgString(ev, c, 3, t), regex = ArgString(ev, c, 4, t);
  RE2::Options opts;
  opts.set_log_errors(false);
  RE2 re("^(?:" + regex + ")$", opts);
  if (!re.ok()) throw ExecError("invalid regular expression in label_replace(): " + regex);
  if (!tsdb::IsValidLabelName(dst))
    throw ExecError("invalid destination label name in label_replace(): " + dst);
  std::vector<re2::StringPiece> groups(static_cast<size_t>(re.NumberOfCapturingGroups()) + 1);
  for (Element& el : v) {
    std::string value(LabelValue(el.labels, src));
    if (!re.Match(value, 0, value.size(), RE2::UNANCHORED, groups.data(),
                  static_cast<int>(groups.size())))
      continue;
    SetLabel(&el.labels, dst, Expand(repl, re, groups));
  }
  return FromVector(std::move(v));
}

EvalValue LabelJoin(Evaluator& ev, const Call& c, int64_t t) {
  Vector v = ArgVector(ev, c, 0, t);
  std::string dst = ArgString(ev, c, 1, t), sep = ArgString(ev, c, 2, t);
  std::vector<std::string> srcs;
  for (size_t i = 3; i < c.args.size(); ++i) {
    srcs.push_back(ArgString(ev, c, i, t));
    if (!tsdb::IsValidLabelName(srcs.back()))
      throw ExecError("invalid source label name in label_join(): " + srcs.back());
  }
  if (!tsdb::IsValidLabelName(dst))
    throw ExecError("invalid destination label name in label_join(): " + dst);
  for (Element& el : v) {
    std::string joined;
    for (size_t i = 0; i < srcs.size(); ++i) {
      if (i) joined += sep;
      joined += LabelValue(el.labels, srcs[i]);
    }
    SetLabel(&el.labels, dst, joined);
  }
  return FromVector(std::move(v));
}

struct Bucket {
  double upper;
  double count;
};

double BucketQuantile(double q, std::vector<Bucket> b) {
  if (std::isnan(q)) return std::nan("");
  if (q < 0) return -HUGE_VAL;
  if (q > 1) return HUGE_VAL;
  std::stable_sort(b.begin(), b.end(),
                   [](const Bucket& x, const Bucket& y) { return x.upper < y.upper; });
  if (!(std::isinf(b.back().upper) && b.back().upper > 0)) return std::nan("");
  // Merge buckets with the same bound, then force cumulative counts to be monotonic.
  std::vector<Bucket> merged;
  for (const Bucket& x : b) {
    if (!merged.empty() && merged.back().upper == x.upper) {
      merged.back().count += x.count;
    } else {
      merged.push_back(x);
    }
  }
  double max = merged[0].count;
  for (size_t i = 1; i < merged.size(); ++i) {
    if (merged[i].count > max) {
      max = merged[i].count;
    } else if (merged[i].count < max) {
      merged[i].count = max;
    }
  }
  if (merged.size() < 2) return std::nan("");
  double observations = merged.back().count;
  if (observations == 0) return std::nan("");
  double rank = q * observations;
  size_t i = 0;
  while (i < merged.size() - 1 && !(merged[i].count >= rank)) ++i;
  if (i == merged.size() - 1) return merged[merged.size() - 2].upper;
  if (i == 0 && merged[0].upper <= 0) return merged[0].upper;
  double start = 0, end = merged[i].upper, count = merged[i].count;
  if (i > 0) {
    start = merged[i - 1].upper;
    count -= merged[i - 1].count;
    rank -= merged[i - 1].count;
  }
  return start + (end - start) * (rank / count);
}

bool ParseGoFloat(const std::string& s, double* out) {
  if (s.empty()) return false;
  std::string lower;
  for (char ch : s)
    lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
  std::string body = lower[0] == '+' || lower[0] == '-' ? lower.substr(1) : lower;
  if (body == "inf" || body == "infinity") {
    *out = lower[0] == '-' ? -HUGE_VAL : HUGE_VAL;
    return true;
  }
  if (body == "nan") {
    *out = std::nan("");
    return true;
  }
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

EvalValue HistogramQuantile(Evaluator& ev, const Call& c, int64_t t) {
  double q = ArgScalar(ev, c, 0, t);
  Vector v = ArgVector(ev, c, 1, t);
  std::map<std::string, size_t> index;
  std::vector<std::pair<tsdb::Labels, std::vector<Bucket>>> groups;
  for (const Element& el : v) {
    double upper = 0;
    if (!ParseGoFloat(std::string(LabelValue(el.labels, "le")), &upper)) continue;
    tsdb::Labels key;
    for (const tsdb::Label& l : el.labels)
      if (l.name != "le") key.push_back(l);
    auto [it, inserted] = index.emplace(LabelsKey(key), groups.size());
    if (inserted) groups.push_back({DropName(key), {}});
    groups[it->second].second.push_back(Bucket{upper, el.v});
  }
  Vector out;
  for (auto& [labels, buckets] : groups)
    out.push_back(Element{labels, BucketQuantile(q, std::move(buckets)), 0});
  return FromVector(std::move(out));
}

// histogram_count / histogram_sum / histogram_fraction read native histogram samples only and skip
// float samples (2.42). The store holds floats only, so after evaluating the arguments (whose
// errors still surface) the result is always empty — what 2.42 answers on float-only data.
EvalValue NativeHistogramFn(Evaluator& ev, const Call& c, int64_t t) {
  for (size_t i = 0; i < c.args.size(); ++i) ev.Eval(*c.args[i], t);
  return FromVector({});
}

// Civil date of a Unix time in seconds (UTC), computed as Go's time package does (what 2.42's
// date functions use): the seconds are shifted to an "absolute" epoch (January 1 of year
// -292277022399) in wrapping 64-bit arithmetic and split into 400/100/4/1-year cycles. For every
// representable date this is the proleptic Gregorian calendar; for math.MinInt64 (what NaN, ±Inf
// and out-of-range values become) the shift wraps, and Go reports a date in year 292277026596 —
// reproduced here because the real Prometheus answers it (docs/prometheus-notes.md).
struct Civil {
  int64_t year;
  int month, day, hour, minute, weekday;
  int yday;  // 1..366, Go's Time.YearDay
};
Civil ToCivil(int64_t secs) {
  constexpr uint64_t kDay = 86400, kPer400 = 365 * 400 + 97, kPer100 = 365 * 100 + 24,
                     kPer4 = 365 * 4 + 1;
  constexpr int64_t kAbsoluteZeroYear = -292277022399;
  // Go's unixToInternal + internalToAbsolute.
  constexpr uint64_t kUnixToAbsolute = 9223372028715321600u;
  const uint64_t abs = static_cast<uint64_t>(secs) + kUnixToAbsolute;
  Civil c{};
  c.hour = static_cast<int>(abs % kDay / 3600);
  c.minute = static_cast<int>(abs % 3600 / 60);
  // January 1 of the absolute year was a Monday (1).
  c.weekday = static_cast<int>((abs + kDay) % (7 * kDay) / kDay);
  uint64_t d = abs / kDay;
  uint64_t n = d / kPer400;
  uint64_t y = 400 * n;
  d -= kPer400 * n;
  n = d / kPer100;
  n -= n >> 2;  // the fourth century of a cycle holds the leap day the first three lack
  y += 100 * n;
  d -= kPer100 * n;
  n = d / kPer4;
  y += 4 * n;
  d -= kPer4 * n;
  n = d / 365;
  n -= n >> 2;
  y += n;
  d -= 365 * n;
  c.year = static_cast<int64_t>(y) + kAbsoluteZeroYear;
  c.yday = static_cast<int>(d) + 1;
  int day = static_cast<int>(d);  // 0-based day of the year
  const bool leap = (c.year % 4 == 0 && c.year % 100 != 0) || c.year % 400 == 0;
  if (leap && day == 31 + 28) {
    c.month = 2;
    c.day = 29;
    return c;
  }
  if (leap && day > 31 + 28) --day;  // after the leap day: count as in a common year
  static const int kDaysBefore[] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365};
  int month = day / 31;  // 0-based; at most one too low
  if (day >= kDaysBefore[month + 1]) ++month;
  c.month = month + 1;
  c.day = day - kDaysBefore[month] + 1;
  return c;
}

int DaysInMonth(int64_t year, int month) {
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return month == 2 && leap ? 29 : kDays[month - 1];
}

template <class F>
EvalValue DateFn(Evaluator& ev, const Call& c, int64_t t, F f) {
  if (c.args.empty()) return FromVector({Element{{}, f(ToCivil(t / 1000)), 0}});
  return Simple(ev, c, t, [&f](double x) { return f(ToCivil(GoInt64(x))); });
}

#define GW_MATH(name, expr)                                                            \
  {                                                                                    \
    name, {V}, 0, V,                                                                   \
        [](Evaluator& ev, const Call& c, int64_t t) { return Simple(ev, c, t, expr); } \
  }
#define GW_DATE(name, expr)                                                              \
  {                                                                                      \
    name, {V}, 1, V, [](Evaluator& ev, const Call& c, int64_t t) {                       \
      return DateFn(ev, c, t, [](const Civil& d) { return static_cast<double>(expr); }); \
    }                                                                                    \
  }

const std::vector<FunctionInfo>& Table() {
  static const std::vector<FunctionInfo> kTable = {
      GW_MATH("abs", [](double x) { return std::fabs(x); }),
      GW_MATH("ceil", [](double x) { return std::ceil(x); }),
      GW_MATH("floor", [](double x) { return std::floor(x); }),
      GW_MATH("exp", [](double x) { return std::exp(x); }),
      GW_MATH("ln", [](double x) { return std::log(x); }),
      GW_MATH("log2", [](double x) { return std::log2(x); }),
      GW_MATH("log10", [](double x) { return std::log10(x); }),
      GW_MATH("sqrt", [](double x) { return std::sqrt(x); }),
      GW_MATH("sgn", [](double x) { return x < 0   ? -1.0
                                           : x > 0 ? 1.0
                                                   : x; }),
      // Trigonometry: plain libm; out-of-domain inputs give NaN, atanh(±1) = ±Inf, as Go's math.
      GW_MATH("acos", [](double x) { return std::acos(x); }),
      GW_MATH("acosh", [](double x) { return std::acosh(x); }),
      GW_MATH("asin", [](double x) { return std::asin(x); }),
      GW_MATH("asinh", [](double x) { return std::asinh(x); }),
      GW_MATH("atan", [](double x) { return std::atan(x); }),
      GW_MATH("atanh", [](double x) { return std::atanh(x); }),
      GW_MATH("cos", [](double x) { return std::cos(x); }),
      GW_MATH("cosh", [](double x) { return std::cosh(x); }),
      GW_MATH("sin", [](double x) { return std::sin(x); }),
      GW_MATH("sinh", [](double x) { return std::sinh(x); }),
      GW_MATH("tan", [](double x) { return std::tan(x); }),
      GW_MATH("tanh", [](double x) { return std::tanh(x); }),
      // Same operation order as 2.42 (multiply first), so results round identically.
      GW_MATH("deg", [](double x) { return x * 180 / kPi; }),
      GW_MATH("rad", [](double x) { return x * kPi / 180; }),
      {"pi", {}, 0, S, Pi},
      {"clamp", {V, S, S}, 0, V, Clamp},
      {"clamp_min", {V, S}, 0, V, ClampMin},
      {"clamp_max", {V, S}, 0, V, ClampMax},
      {"round", {V, S}, 1, V, Round},
      {"timestamp", {V}, 0, V, Timestamp},
      {"time", {}, 0, S, Time},
      {"vector", {S}, 0, V, VectorFn},
      {"scalar", {V}, 0, S, ScalarFn},
      {"sort",
       {V},
       0,
       V,
       [](Evaluator& ev, const Call& c, int64_t t) { return Sort(ev, c, t, false); }},
      {"sort_desc",
       {V},
       0,
       V,
       [](Evaluator& ev, const Call& c, int64_t t) { return Sort(ev, c, t, true); }},
      {"absent", {V}, 0, V, Absent},
      {"label_replace", {V, Str, Str, Str, Str}, 0, V, LabelReplace},
      {"label_join", {V, Str, Str, Str}, -1, V, LabelJoin},
      {"histogram_quantile", {S, V}, 0, V, HistogramQuantile},
      {"histogram_count", {V}, 0, V, NativeHistogramFn},
      {"histogram_sum", {V}, 0, V, NativeHistogramFn},
      {"histogram_fraction", {S, S, V}, 0, V, NativeHistogramFn},
      GW_DATE("minute", d.minute),
      GW_DATE("hour", d.hour),
      GW_DATE("day_of_week", d.weekday),
      GW_DATE("day_of_month", d.day),
      GW_DATE("day_of_year", d.yday),
      GW_DATE("days_in_month", DaysInMonth(d.year, d.month)),
      GW_DATE("month", d.month),
      GW_DATE("year", d.year),
      {"rate", {M}, 0, V, EvalRangeFunction},
      {"irate", {M}, 0, V, EvalRangeFunction},
      {"increase", {M}, 0, V, EvalRangeFunction},
      {"delta", {M}, 0, V, EvalRangeFunction},
      {"idelta", {M}, 0, V, EvalRangeFunction},
      {"deriv", {M}, 0, V, EvalRangeFunction},
      {"predict_linear", {M, S}, 0, V, EvalRangeFunction},
      {"changes", {M}, 0, V, EvalRangeFunction},
      {"resets", {M}, 0, V, EvalRangeFunction},
      {"avg_over_time", {M}, 0, V, EvalRangeFunction},
      {"min_over_time", {M}, 0, V, EvalRangeFunction},
      {"max_over_time", {M}, 0, V, EvalRangeFunction},
      {"sum_over_time", {M}, 0, V, EvalRangeFunction},
      {"count_over_time", {M}, 0, V, EvalRangeFunction},
      {"last_over_time", {M}, 0, V, EvalRangeFunction},
      {"quantile_over_time", {S, M}, 0, V, EvalRangeFunction},
      {"stddev_over_time", {M}, 0, V, EvalRangeFunction},
      {"stdvar_over_time", {M}, 0, V, EvalRangeFunction},
      {"present_over_time", {M}, 0, V, EvalRangeFunction},
      {"absent_over_time", {M}, 0, V, EvalRangeFunction},
      {"holt_winters", {M, S, S}, 0, V, EvalRangeFunction},
  };
  return kTable;
}

#undef GW_MATH
#undef GW_DATE

}  // namespace

const FunctionInfo* LookupFunction(std::string_view name) {
  for (const FunctionInfo& f : Table())
    if (name == f.name) return &f;
  return nullptr;
}

EvalValue Evaluator::EvalCall(const Call& c, int64_t t_ms) {
  return c.func->eval(*this, c, t_ms);
}

}  // namespace gw::promql
