// Engine entry points and the core of the evaluator: data loading, selectors, subqueries.
#include "promql/engine.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <string>

#include "promql/eval.h"
#include "promql/parser.h"

namespace gw::promql {

// ----- label helpers -----

tsdb::Labels DropName(const tsdb::Labels& l) {
  tsdb::Labels out;
  out.reserve(l.size());
  for (const tsdb::Label& x : l)
    if (x.name != "__name__") out.push_back(x);
  return out;
}

void SetLabel(tsdb::Labels* l, const std::string& name, const std::string& value) {
  auto it = std::lower_bound(l->begin(), l->end(), name,
                             [](const tsdb::Label& a, const std::string& n) { return a.name < n; });
  if (it != l->end() && it->name == name) {
    if (value.empty()) {
      l->erase(it);
    } else {
      it->value = value;
    }
  } else if (!value.empty()) {
    l->insert(it, tsdb::Label{name, value});
  }
}

std::string LabelsKey(const tsdb::Labels& l) {
  std::string key;
  for (const tsdb::Label& x : l) {
    key += x.name;
    key.push_back('\xff');
    key += x.value;
    key.push_back('\xff');
  }
  return key;
}

void CheckNoDuplicateLabelsets(const Vector& v) {
  if (v.size() < 2) return;
  std::vector<const tsdb::Labels*> ls;
  ls.reserve(v.size());
  for (const Element& e : v) ls.push_back(&e.labels);
  std::sort(ls.begin(), ls.end(), [](auto* a, auto* b) { return *a < *b; });
  for (size_t i = 1; i < ls.size(); ++i) {
    if (*ls[i] == *ls[i - 1])
      throw EvalError{QueryError::Kind::kExecution,
                      "vector cannot contain metrics with the same labelset"};
  }
}

// ----- evaluator core -----

Evaluator::Evaluator(tsdb::Querier& querier, const EngineOptions& options, int64_t start_ms,
                     int64_t end_ms, std::chrono::steady_clock::time_point deadline,
                     int64_t step_ms)
    : querier_(querier),
      options_(options),
      start_ms_(start_ms),
      end_ms_(end_ms),
      deadline_(deadline),
      step_ms_(step_ms) {}

void Evaluator::CheckDeadline() const {
  if (options_.gate && options_.gate->canceled())
    throw EvalError{QueryError::Kind::kCanceled, "query was canceled in expression evaluation"};
  if (std::chrono::steady_clock::now() > deadline_)
    throw EvalError{QueryError::Kind::kTimeout, "query timed out in expression evaluation"};
}

void Evaluator::CheckHeld(size_t extra) {
  Tick();
  if (step_samples_ + extra > options_.max_samples) {
    throw EvalError{QueryError::Kind::kExecution,
                    "query processing would load too many samples into memory in query execution"};
  }
}

void Evaluator::AddSamples(size_t n) {
  Tick();
  step_samples_ += n;
  if (step_samples_ > options_.max_samples) {
    throw EvalError{QueryError::Kind::kExecution,
                    "query processing would load too many samples into memory in query execution"};
  }
}

int64_t Evaluator::RefTime(const TimeModifiers& m, int64_t t) const {
  switch (m.at) {
    case AtKind::kTimestamp:
      t = m.at_ms;
      break;
    case AtKind::kStart:
      t = start_ms_;
      break;
    case AtKind::kEnd:
      t = end_ms_;
      break;
    case AtKind::kNone:
      break;
  }
  return t - m.offset_ms;
}

void Evaluator::Need(const VectorSelector& vs, int64_t mint, int64_t maxt) {
  auto [it, inserted] = data_.try_emplace(&vs);
  if (inserted) {
    it->second.mint = mint;
    it->second.maxt = maxt;
  } else {
    it->second.mint = std::min(it->second.mint, mint);
    it->second.maxt = std::max(it->second.maxt, maxt);
  }
}

// Records for every selector the time span its samples must cover when `e` is evaluated at
// times in [lo, hi].
void Evaluator::Walk(const Expr& e, int64_t lo, int64_t hi) {
  switch (e.kind) {
    case ExprKind::kVectorSelector: {
      const auto& vs = static_cast<const VectorSelector&>(e);
      // Evaluated at exactly the query's steps, on rollup window starts: PlanSelector reads it.
      if (lo == start_ms_ && hi == end_ms_ && WantsSelectorRollups(vs)) {
        selector_plans_.try_emplace(&vs);
        return;
      }
      Need(vs, RefTime(vs.mods, lo) - options_.lookback_delta_ms, RefTime(vs.mods, hi));
      return;
    }
    case ExprKind::kMatrixSelector: {
      const auto& ms = static_cast<const MatrixSelector&>(e);
      const TimeModifiers& m = ms.selector->mods;
      Need(*ms.selector, RefTime(m, lo) - ms.range_ms, RefTime(m, hi));
      return;
    }
    case ExprKind::kSubquery: {
      const auto& sq = static_cast<const Subquery&>(e);
      return Walk(*sq.expr, RefTime(sq.mods, lo) - sq.range_ms, RefTime(sq.mods, hi));
    }
    case ExprKind::kParen:
      return Walk(*static_cast<const ParenExpr&>(e).expr, lo, hi);
    case ExprKind::kUnary:
      return Walk(*static_cast<const UnaryExpr&>(e).expr, lo, hi);
    case ExprKind::kBinary: {
      const auto& b = static_cast<const BinaryExpr&>(e);
      Walk(*b.lhs, lo, hi);
      return Walk(*b.rhs, lo, hi);
    }
    case ExprKind::kAggregate: {
      const auto& a = static_cast<const AggregateExpr&>(e);
      if (a.param) Walk(*a.param, lo, hi);
      return Walk(*a.expr, lo, hi);
    }
    case ExprKind::kCall: {
      const auto& c = static_cast<const Call&>(e);
      // A call evaluated at exactly the query's steps may read its window from rollups; its
      // selector is then fetched by PlanRollups (only the raw samples the rollups leave out).
      if (lo == start_ms_ && hi == end_ms_ && WantsRollups(c)) {
        rollup_plans_.try_emplace(&c);
        return;
      }
      for (const auto& arg : c.args) Walk(*arg, lo, hi);
      return;
    }
    case ExprKind::kNumber:
    case ExprKind::kString:
      return;
  }
}

void Evaluator::Prepare(const Expr& root) {
  Walk(root, start_ms_, end_ms_);
  for (auto& [call, plan] : rollup_plans_) PlanRollups(*call);
  for (auto& [vs, plan] : selector_plans_) PlanSelector(*vs, &plan);
  for (auto& [vs, f] : data_) {
    CheckDeadline();
    Status s = querier_.SelectRuns(vs->matchers, f.mint, f.maxt, &f.series);
    if (!s.ok()) throw EvalError{QueryError::Kind::kInternal, s.message()};
  }
}

void Evaluator::Seek(const std::vector<tsdb::SeriesRuns>& series, int64_t t, bool strict,
                     Cursor* c) {
  // Positions found for an earlier time are at or before the answer for t; otherwise restart.
  if (c->pos.size() != series.size() || t < c->t) c->pos.assign(series.size(), RunPos{});
  c->t = t;
  auto before = [t, strict](const tsdb::Sample& x) { return strict ? x.t_ms <= t : x.t_ms < t; };
  for (size_t i = 0; i < series.size(); ++i) {
    const auto& runs = series[i].runs;
    RunPos p = c->pos[i];
    if (runs.empty()) continue;
    // Whole runs before t are skipped; the answer is in the first run whose last sample is not.
    while (p.run + 1 < runs.size() && before(runs[p.run].back())) p = RunPos{p.run + 1, 0};
    const std::span<const tsdb::Sample> samples = runs[p.run];
    const size_t n = samples.size();
    size_t off = p.off;
    if (off < n && before(samples[off])) {
      // Gallop forward from the old position (steps usually advance it a little), then binary
      // search the last gap: the answer lies in (lo, hi].
      size_t lo = off, hi = off + 1, gap = 1;
      while (hi < n && before(samples[hi])) {
        lo = hi;
        gap *= 2;
        hi = lo + gap;
      }
      if (hi > n) hi = n;
      off = static_cast<size_t>(
          std::partition_point(samples.begin() + static_cast<std::ptrdiff_t>(lo + 1),
                               samples.begin() + static_cast<std::ptrdiff_t>(hi), before) -
          samples.begin());
    }
    c->pos[i] = RunPos{p.run, off};
  }
}

Vector Evaluator::EvalSelectorAt(const VectorSelector& vs, int64_t t_ms) {
  if (auto plan = selector_plans_.find(&vs); plan != selector_plans_.end() && plan->second.active) {
    if (t_ms < start_ms_ || t_ms > end_ms_ || (t_ms - start_ms_) % step_ms_ != 0)
      throw EvalError{QueryError::Kind::kInternal, "selector plan evaluated off the query's steps"};
    Vector out = plan->second.table.At(static_cast<size_t>((t_ms - start_ms_) / step_ms_));
    AddSamples(out.size());
    return out;
  }
  Fetched& f = data_.at(&vs);
  int64_t ref = RefTime(vs.mods, t_ms);
  Seek(f.series, ref, /*strict=*/true, &f.at);
  Vector out;
  out.reserve(f.series.size());
  for (size_t i = 0; i < f.series.size(); ++i) {
    Tick();
    const tsdb::SeriesRuns& s = f.series[i];
    const RunPos p = f.at.pos[i];
    // The newest sample at or before ref: the one before p.
    const tsdb::Sample* last = nullptr;
    if (p.off > 0) {
      last = &s.runs[p.run][p.off - 1];
    } else if (p.run > 0) {
      last = &s.runs[p.run - 1].back();
    }
    if (!last || last->t_ms < ref - options_.lookback_delta_ms || tsdb::IsStaleNaN(last->v))
      continue;
    out.push_back(Element{s.labels, last->v, last->t_ms});
  }
  AddSamples(out.size());
  return out;
}

void Evaluator::CopyPoints(const tsdb::SeriesRuns& s, RunPos lo, RunPos hi,
                           std::vector<Point>* points) {
  points->clear();
  if (s.runs.empty() || lo.run > hi.run || (lo.run == hi.run && lo.off >= hi.off)) return;
  size_t count = 0;
  for (size_t r = lo.run; r <= hi.run; ++r)
    count += (r == hi.run ? hi.off : s.runs[r].size()) - (r == lo.run ? lo.off : 0);
  points->reserve(count);
  for (size_t r = lo.run; r <= hi.run; ++r) {
    const std::span<const tsdb::Sample> run = s.runs[r];
    const size_t end = r == hi.run ? hi.off : run.size();
    for (size_t k = r == lo.run ? lo.off : 0; k < end; ++k) {
      if (!tsdb::IsStaleNaN(run[k].v)) points->push_back(Point{run[k].t_ms, run[k].v});
    }
  }
}

std::vector<Series> Evaluator::MatrixAt(const MatrixSelector& ms, int64_t t_ms) {
  Fetched& f = data_.at(ms.selector.get());
  int64_t maxt = RefTime(ms.selector->mods, t_ms);
  int64_t mint = maxt - ms.range_ms;
  Seek(f.series, mint, /*strict=*/false, &f.lo);
  Seek(f.series, maxt, /*strict=*/true, &f.hi);
  std::vector<Series> out;
  size_t n = 0;
  for (size_t i = 0; i < f.series.size(); ++i) {
    Tick();
    Series series;
    CopyPoints(f.series[i], f.lo.pos[i], f.hi.pos[i], &series.points);
    if (series.points.empty()) continue;
    n += series.points.size();
    series.labels = f.series[i].labels;
    out.push_back(std::move(series));
  }
  AddSamples(n);
  return out;
}

std::vector<Series> Evaluator::SubqueryAt(const Subquery& sq, int64_t t_ms) {
  int64_t ref = RefTime(sq.mods, t_ms);
  int64_t step = sq.step_ms > 0 ? sq.step_ms : options_.default_subquery_step_ms;
  int64_t lo = ref - sq.range_ms;
  // The first multiple of the step at or after lo (epoch-aligned, as Prometheus).
  int64_t first = (lo / step) * step;
  if (first < lo) first += step;
  std::map<tsdb::Labels, Series> by_labels;
  for (int64_t ts = first; ts <= ref; ts += step) {
    CheckDeadline();
    EvalValue v = Eval(*sq.expr, ts);
    for (Element& e : v.vector) {
      Series& s = by_labels[e.labels];
      s.points.push_back(Point{ts, e.v});
    }
    // The points gathered so far are held in memory too.
    AddSamples(v.vector.size());
  }
  std::vector<Series> out;
  out.reserve(by_labels.size());
  for (auto& [labels, s] : by_labels) {
    s.labels = labels;
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<Series> Evaluator::EvalRange(const Expr& e, int64_t t_ms, int64_t* range_ms,
                                         int64_t* ref_ms) {
  const Expr* x = &e;
  while (x->kind == ExprKind::kParen) x = static_cast<const ParenExpr*>(x)->expr.get();
  if (x->kind == ExprKind::kMatrixSelector) {
    const auto* ms = static_cast<const MatrixSelector*>(x);
    *range_ms = ms->range_ms;
    *ref_ms = RefTime(ms->selector->mods, t_ms);
    return MatrixAt(*ms, t_ms);
  }
  if (x->kind == ExprKind::kSubquery) {
    const auto* sq = static_cast<const Subquery*>(x);
    *range_ms = sq->range_ms;
    *ref_ms = RefTime(sq->mods, t_ms);
    return SubqueryAt(*sq, t_ms);
  }
  throw EvalError{QueryError::Kind::kInternal, "expected a range vector"};
}

void Evaluator::ForEachRangeSeries(const Expr& e, int64_t t_ms, int64_t* range_ms, int64_t* ref_ms,
                                   const RangeSeriesFn& fn) {
  const Expr* x = &e;
  while (x->kind == ExprKind::kParen) x = static_cast<const ParenExpr*>(x)->expr.get();
  if (x->kind != ExprKind::kMatrixSelector) {
    for (const Series& s : EvalRange(e, t_ms, range_ms, ref_ms)) fn(s.labels, s.points);
    return;
  }
  const auto* ms = static_cast<const MatrixSelector*>(x);
  *range_ms = ms->range_ms;
  *ref_ms = RefTime(ms->selector->mods, t_ms);
  Fetched& f = data_.at(ms->selector.get());
  const int64_t maxt = *ref_ms, mint = maxt - ms->range_ms;
  Seek(f.series, mint, /*strict=*/false, &f.lo);
  Seek(f.series, maxt, /*strict=*/true, &f.hi);
  for (size_t i = 0; i < f.series.size(); ++i) {
    CopyPoints(f.series[i], f.lo.pos[i], f.hi.pos[i], &points_buffer_);
    if (points_buffer_.empty()) continue;
    AddSamples(points_buffer_.size());
    fn(f.series[i].labels, points_buffer_);
  }
}

EvalValue Evaluator::Eval(const Expr& e, int64_t t_ms) {
  EvalValue out;
  switch (e.kind) {
    case ExprKind::kNumber:
      out.type = ValueType::kScalar;
      out.scalar = static_cast<const NumberLiteral&>(e).value;
      return out;
    case ExprKind::kString:
      out.type = ValueType::kString;
      out.str = static_cast<const StringLiteral&>(e).value;
      return out;
    case ExprKind::kParen:
      return Eval(*static_cast<const ParenExpr&>(e).expr, t_ms);
    case ExprKind::kVectorSelector:
      out.vector = EvalSelectorAt(static_cast<const VectorSelector&>(e), t_ms);
      return out;
    case ExprKind::kMatrixSelector:
      out.type = ValueType::kMatrix;
      out.matrix = MatrixAt(static_cast<const MatrixSelector&>(e), t_ms);
      return out;
    case ExprKind::kSubquery:
      out.type = ValueType::kMatrix;
      out.matrix = SubqueryAt(static_cast<const Subquery&>(e), t_ms);
      return out;
    case ExprKind::kUnary: {
      const auto& u = static_cast<const UnaryExpr&>(e);
      out = Eval(*u.expr, t_ms);
      if (!u.negate) return out;
      out.scalar = -out.scalar;
      for (Element& el : out.vector) {
        el.v = -el.v;
        el.labels = DropName(el.labels);
      }
      CheckNoDuplicateLabelsets(out.vector);
      return out;
    }
    case ExprKind::kBinary: {
      const auto& b = static_cast<const BinaryExpr&>(e);
      EvalValue lhs = Eval(*b.lhs, t_ms);
      EvalValue rhs = Eval(*b.rhs, t_ms);
      out.vector = EvalBinary(b, lhs, rhs, &out);
      if (out.type == ValueType::kVector) CheckNoDuplicateLabelsets(out.vector);
      return out;
    }
    case ExprKind::kAggregate:
      out.vector = EvalAggregate(static_cast<const AggregateExpr&>(e), t_ms);
      return out;
    case ExprKind::kCall: {
      out = EvalCall(static_cast<const Call&>(e), t_ms);
      if (out.type == ValueType::kVector) CheckNoDuplicateLabelsets(out.vector);
      return out;
    }
  }
  return out;
}

// ----- Engine -----

namespace {

QueryError BadData(std::string message) {
  return QueryError{QueryError::Kind::kBadData, std::move(message)};
}

std::chrono::steady_clock::time_point DeadlineAfter(double timeout_s) {
  // A timeout beyond a year is as good as none (and must not overflow the clock).
  const double s = std::clamp(timeout_s, 0.0, 365 * 86400.0);
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(
             std::chrono::duration<double>(s));
}

// Takes a slot of options.gate (if any) before `deadline`. Admitted: *ticket holds the slot and
// nothing is returned; otherwise the error to answer with, in Prometheus' wording where it has one.
std::optional<QueryError> Admit(const EngineOptions& options,
                                std::chrono::steady_clock::time_point deadline,
                                QueryGate::Ticket* ticket) {
  if (!options.gate) return std::nullopt;
  *ticket = options.gate->Enter(deadline);
  switch (ticket->outcome()) {
    case QueryGate::Outcome::kAdmitted:
      return std::nullopt;
    case QueryGate::Outcome::kTimeout:
      return QueryError{QueryError::Kind::kTimeout, "query timed out in query queue"};
    case QueryGate::Outcome::kCanceled:
      return QueryError{QueryError::Kind::kCanceled, "query was canceled in query queue"};
    case QueryGate::Outcome::kQueueFull: {
      const GateOptions& g = options.gate->options();
      return QueryError{QueryError::Kind::kUnavailable,
                        "query queue is full: " + std::to_string(g.max_queued) +
                            " queries are already waiting for one of " +
                            std::to_string(g.max_concurrency) +
                            " evaluation slots (--query.max-concurrency); try again later"};
    }
  }
  return std::nullopt;
}

// One evaluation of a parsed query under `options` (Engine::Instant and Range retry without
// rollups on RollupsInexact).
QueryResult InstantWith(const EngineOptions& options, tsdb::Querier& querier, const Expr& expr,
                        int64_t t_ms, std::chrono::steady_clock::time_point deadline) {
  Evaluator ev(querier, options, t_ms, t_ms, deadline);
  ev.Prepare(expr);
  EvalValue v = ev.Eval(expr, t_ms);
  Value out;
  out.type = v.type;
  out.t_ms = t_ms;
  out.scalar = v.scalar;
  out.string = std::move(v.str);
  if (v.type == ValueType::kVector) {
    for (Element& el : v.vector)
      out.series.push_back(Series{std::move(el.labels), {Point{t_ms, el.v}}});
  } else if (v.type == ValueType::kMatrix) {
    out.series = std::move(v.matrix);
  }
  return out;
}

QueryResult RangeWith(const EngineOptions& options, tsdb::Querier& querier, const Expr& expr,
                      int64_t start_ms, int64_t end_ms, int64_t step_ms,
                      std::chrono::steady_clock::time_point deadline) {
  Evaluator ev(querier, options, start_ms, end_ms, deadline, step_ms);
  ev.Prepare(expr);
  if (Value direct; ev.MatrixFromTable(expr, &direct)) return direct;
  using ByLabels = std::map<tsdb::Labels, std::vector<Point>>;
  ByLabels by_labels;
  // The output series of the previous step's elements, by position: steps usually yield the
  // same label sets in the same order, so one comparison finds the series without a map search.
  std::vector<ByLabels::iterator> prev, cur;
  size_t total = 0;
  for (int64_t t = start_ms; t <= end_ms; t += step_ms) {
    ev.CheckDeadline();
    ev.ResetStepSamples();
    ev.AddSamples(total);
    EvalValue v = ev.Eval(expr, t);
    if (v.type == ValueType::kScalar) {
      by_labels[{}].push_back(Point{t, v.scalar});
      ++total;
      continue;
    }
    cur.clear();
    for (size_t i = 0; i < v.vector.size(); ++i) {
      Element& el = v.vector[i];
      ByLabels::iterator it;
      if (i < prev.size() && prev[i]->first == el.labels) {
        it = prev[i];
      } else {
        it = by_labels.try_emplace(std::move(el.labels)).first;
      }
      it->second.push_back(Point{t, el.v});
      cur.push_back(it);
    }
    std::swap(prev, cur);
    total += v.vector.size();
  }
  Value out;
  out.type = ValueType::kMatrix;
  out.t_ms = end_ms;
  for (auto& [labels, points] : by_labels) out.series.push_back(Series{labels, std::move(points)});
  return out;
}

// Without rollups: what Engine::Instant and Range answer when a rollup plan throws RollupsInexact.
EngineOptions RawOnly(EngineOptions options) {
  options.rollups = false;
  return options;
}

}  // namespace

Engine::Engine(EngineOptions options) : options_(options) {}

QueryResult Engine::Instant(tsdb::Querier& querier, std::string_view expr, int64_t t_ms) const {
  Expected<ExprPtr> parsed = Parse(expr);
  if (!parsed) return BadData(parsed.error().message);
  const auto deadline = DeadlineAfter(options_.timeout_s);
  QueryGate::Ticket ticket;
  if (auto refused = Admit(options_, deadline, &ticket)) return std::move(*refused);
  try {
    return InstantWith(options_, querier, **parsed, t_ms, deadline);
  } catch (const RollupsInexact&) {  // answered from raw samples below
  } catch (const EvalError& e) {
    return QueryError{e.kind, e.message};
  }
  try {
    return InstantWith(RawOnly(options_), querier, **parsed, t_ms, deadline);
  } catch (const EvalError& e) {
    return QueryError{e.kind, e.message};
  }
}

QueryResult Engine::Range(tsdb::Querier& querier, std::string_view expr, int64_t start_ms,
                          int64_t end_ms, int64_t step_ms) const {
  if (step_ms <= 0)
    return BadData(
        "zero or negative query resolution step widths are not accepted. Try a positive integer");
  if (end_ms < start_ms) return BadData("end timestamp must not be before start time");
  Expected<ExprPtr> parsed = Parse(expr);
  if (!parsed) return BadData(parsed.error().message);
  ValueType type = TypeOf(**parsed);
  if (type != ValueType::kScalar && type != ValueType::kVector) {
    return BadData(std::string("invalid expression type \"") + ValueTypeName(type) +
                   "\" for range query, must be Scalar or instant Vector");
  }
  const auto deadline = DeadlineAfter(options_.timeout_s);
  QueryGate::Ticket ticket;
  if (auto refused = Admit(options_, deadline, &ticket)) return std::move(*refused);
  try {
    return RangeWith(options_, querier, **parsed, start_ms, end_ms, step_ms, deadline);
  } catch (const RollupsInexact&) {  // answered from raw samples below
  } catch (const EvalError& e) {
    return QueryError{e.kind, e.message};
  }
  try {
    return RangeWith(RawOnly(options_), querier, **parsed, start_ms, end_ms, step_ms, deadline);
  } catch (const EvalError& e) {
    return QueryError{e.kind, e.message};
  }
}

}  // namespace gw::promql
