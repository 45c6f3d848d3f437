// Recursive-descent parser for PromQL with the operator precedence and the type checks of
// Prometheus 2.42 (promql/parser/generated_parser.y and parse.go's checkAST).
//
// Why one file of ~800 lines: it is one class, Parser, whose methods call each other
// recursively (expression → binary operator → unary → aggregation / function call / selector →
// expression); the type checks run inside the same methods, where Prometheus reports them, so
// that error positions and wording match. The lexer (lexer.h) and the printer (printer.cpp) are
// separate files.
#include "promql/parser.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "promql/functions.h"
#include "promql/lexer.h"

namespace gw::promql {
namespace {

std::optional<AggregateOp> AggregateFromName(const std::string& lower) {
  static const std::pair<const char*, AggregateOp> kOps[] = {
      {"sum", AggregateOp::kSum},
      {"min", AggregateOp::kMin},
      {"max", AggregateOp::kMax},
      {"avg", AggregateOp::kAvg},
      {"group", AggregateOp::kGroup},
      {"count", AggregateOp::kCount},
      {"count_values", AggregateOp::kCountValues},
      {"stddev", AggregateOp::kStddev},
      {"stdvar", AggregateOp::kStdvar},
      {"topk", AggregateOp::kTopk},
      {"bottomk", AggregateOp::kBottomk},
      {"quantile", AggregateOp::kQuantile},
  };
  for (const auto& [name, op] : kOps)
    if (lower == name) return op;
  return std::nullopt;
}

std::string Lower(const std::string& s) {
  std::string out;
  for (char c : s) out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return out;
}

// Binding power of binary operators; 0 = not a binary operator.
int Precedence(BinaryOp op) {
  switch (op) {
    case BinaryOp::kOr:
      return 1;
    case BinaryOp::kAnd:
    case BinaryOp::kUnless:
      return 2;
    case BinaryOp::kEq:
    case BinaryOp::kNe:
    case BinaryOp::kGt:
    case BinaryOp::kLt:
    case BinaryOp::kGe:
    case BinaryOp::kLe:
      return 3;
    case BinaryOp::kAdd:
    case BinaryOp::kSub:
      return 4;
    case BinaryOp::kMul:
    case BinaryOp::kDiv:
    case BinaryOp::kMod:
    case BinaryOp::kAtan2:
      return 5;
    case BinaryOp::kPow:
      return 6;
  }
  return 0;
}
constexpr int kUnaryPrecedence = 5;  // unary minus binds like '*' (Prometheus: %prec MUL)

class Parser {
 public:
  explicit Parser(std::string_view q) : query_(q), toks_(Lex(q)) {}

  Expected<ExprPtr> Run() {
    // A lexer error is reported when parsing reaches its token, as in Prometheus, where the
    // parser pulls tokens one at a time.
    ExprPtr e = ParseExpr(0);
    if (!failed_ && Peek().type != Tok::kEof) Unexpected(Peek(), "");
    if (!failed_) Check(*e);
    if (failed_) return Error{error_};
    return e;
  }

 private:
  const Token& Peek(size_t ahead = 0) const {
    size_t i = std::min(idx_ + ahead, toks_.size() - 1);
    return toks_[i];
  }
  const Token& Advance() {
    const Token& t = toks_[idx_];
    if (idx_ + 1 < toks_.size()) ++idx_;
    return t;
  }
  bool IsIdent(const Token& t, const char* word) const {
    return t.type == Tok::kIdentifier && Lower(t.text) == word;
  }

  void Fail(int pos, const std::string& message) {
    if (failed_) return;
    failed_ = true;
    int line = 1, last_break = -1;
    for (int i = 0; i < pos && i < static_cast<int>(query_.size()); ++i) {
      if (query_[i] == '\n') {
        last_break = i;
        ++line;
      }
    }
    error_ =
        std::to_string(line) + ":" + std::to_string(pos - last_break) + ": parse error: " + message;
  }
  void Unexpected(const Token& t, const std::string& context) {
    if (t.type == Tok::kError) return Fail(t.pos, t.text);
    std::string msg = "unexpected " + DescribeToken(t);
    if (!context.empty()) msg += " " + context;
    Fail(t.pos, msg);
  }
  bool Expect(Tok type, const std::string& context) {
    if (Peek().type == type) {
      Advance();
      return true;
    }
    Unexpected(Peek(), context);
    return false;
  }

  // The height of a finished node (1 for a leaf). Only composite nodes are recorded.
  int Height(const Expr* e) const {
    if (!e) return 0;
    auto it = heights_.find(e);
    return it == heights_.end() ? 1 : it->second;
  }
  // Records the height of a composite node whose children are finished, and fails once a tree
  // grows higher than kMaxExprDepth: the printer, the type checks and the evaluator walk it
  // recursively, and a chain such as "1+1+1+..." is built by a loop, not by recursion.
  void Built(const Expr& e) {
    int h = 0;
    switch (e.kind) {
      case ExprKind::kParen:
        h = Height(static_cast<const ParenExpr&>(e).expr.get());
        break;
      case ExprKind::kUnary:
        h = Height(static_cast<const UnaryExpr&>(e).expr.get());
        break;
      case ExprKind::kSubquery:
        h = Height(static_cast<const Subquery&>(e).expr.get());
        break;
      case ExprKind::kBinary: {
        const auto& b = static_cast<const BinaryExpr&>(e);
        h = std::max(Height(b.lhs.get()), Height(b.rhs.get()));
        break;
      }
      case ExprKind::kAggregate: {
        const auto& a = static_cast<const AggregateExpr&>(e);
        h = std::max(Height(a.expr.get()), Height(a.param.get()));
        break;
      }
      case ExprKind::kCall:
        for (const auto& a : static_cast<const Call&>(e).args) h = std::max(h, Height(a.get()));
        break;
      default:
        break;
    }
    heights_[&e] = h + 1;
    if (h + 1 > kMaxExprDepth) FailTooDeep(e.pos);
  }
  void FailTooDeep(int pos) {
    Fail(pos, "expression nested too deeply: more than " + std::to_string(kMaxExprDepth) +
                  " levels of operators, parentheses, calls and subqueries (gpuwarden's limit)");
  }

  std::optional<BinaryOp> PeekBinaryOp() const {
    const Token& t = Peek();
    switch (t.type) {
      case Tok::kAdd:
        return BinaryOp::kAdd;
      case Tok::kSub:
        return BinaryOp::kSub;
      case Tok::kMul:
        return BinaryOp::kMul;
      case Tok::kDiv:
        return BinaryOp::kDiv;
      case Tok::kMod:
        return BinaryOp::kMod;
      case Tok::kPow:
        return BinaryOp::kPow;
      case Tok::kEqlc:
        return BinaryOp::kEq;
      case Tok::kNeq:
        return BinaryOp::kNe;
      case Tok::kGtr:
        return BinaryOp::kGt;
      case Tok::kLss:
        return BinaryOp::kLt;
      case Tok::kGte:
        return BinaryOp::kGe;
      case Tok::kLte:
        return BinaryOp::kLe;
      case Tok::kIdentifier: {
        std::string w = Lower(t.text);
        if (w == "and") return BinaryOp::kAnd;
        if (w == "or") return BinaryOp::kOr;
        if (w == "unless") return BinaryOp::kUnless;
        if (w == "atan2") return BinaryOp::kAtan2;
        return std::nullopt;
      }
      default:
        return std::nullopt;
    }
  }

  // Precedence climbing: parses operators binding tighter than `min_prec`.
  ExprPtr ParseExpr(int min_prec) {
    // Every nested construct passes through here, so this bounds the parser's own recursion;
    // the trees it builds are bounded by Built() below.
    if (++nesting_ > kMaxExprDepth) {
      FailTooDeep(Peek().pos);
      --nesting_;
      return std::make_unique<NumberLiteral>();
    }
    ExprPtr lhs = ParseUnary();
    while (!failed_) {
      std::optional<BinaryOp> op = PeekBinaryOp();
      if (!op) break;
      int prec = Precedence(*op);
      if (prec <= min_prec) break;
      int op_pos = Advance().pos;
      auto bin = std::make_unique<BinaryExpr>();
      bin->pos = lhs->pos;
      bin->op = *op;
      ParseBinaryModifiers(bin.get());
      if (failed_) break;
      // '^' is right-associative: its right side may hold another '^'.
      bin->rhs = ParseExpr(*op == BinaryOp::kPow ? prec - 1 : prec);
      bin->lhs = std::move(lhs);
      op_positions_[bin.get()] = op_pos;
      lhs = std::move(bin);
      Built(*lhs);
    }
    --nesting_;
    return lhs;
  }

  void ParseBinaryModifiers(BinaryExpr* bin) {
    if (IsIdent(Peek(), "bool")) {
      Advance();
      bin->return_bool = true;
    }
    VectorMatching vm;
    bool any = false;
    if (IsIdent(Peek(), "on") || IsIdent(Peek(), "ignoring")) {
      vm.on = IsIdent(Advance(), "on");
      any = true;
      if (!ParseLabelList(&vm.labels, "grouping opts")) return;
      if (IsIdent(Peek(), "group_left") || IsIdent(Peek(), "group_right")) {
        vm.card =
            IsIdent(Advance(), "group_left") ? Cardinality::kManyToOne : Cardinality::kOneToMany;
        if (Peek().type == Tok::kLeftParen && !ParseLabelList(&vm.include, "grouping opts")) return;
      }
    } else if (IsIdent(Peek(), "group_left") || IsIdent(Peek(), "group_right")) {
      // Prometheus' grammar needs on/ignoring before group_x.
      Unexpected(Peek(), "");
      return;
    }
    (void)any;
    bin->matching = std::move(vm);
  }

  // "(a, b, c)" — label names (keywords allowed), trailing comma allowed.
  bool ParseLabelList(std::vector<std::string>* out, const char* context) {
    if (!Expect(Tok::kLeftParen, std::string("in ") + context + ", expected \"(\"")) return false;
    while (Peek().type != Tok::kRightParen) {
      const Token& t = Peek();
      if (t.type != Tok::kIdentifier || t.text.find(':') != std::string::npos) {
        Unexpected(t, std::string("in ") + context + ", expected label");
        return false;
      }
      out->push_back(Advance().text);
      if (Peek().type == Tok::kComma) {
        Advance();
      } else if (Peek().type != Tok::kRightParen) {
        Unexpected(Peek(), std::string("in ") + context + ", expected \",\" or \")\"");
        return false;
      }
    }
    Advance();
    return true;
  }

  ExprPtr ParseUnary() {
    if (Peek().type == Tok::kSub || Peek().type == Tok::kAdd) {
      const Token& t = Advance();
      bool negate = t.type == Tok::kSub;
      int pos = t.pos;
      ExprPtr operand = ParseExpr(kUnaryPrecedence);
      if (failed_) return operand;
      if (operand->kind == ExprKind::kNumber) {
        auto* n = static_cast<NumberLiteral*>(operand.get());
        if (negate) n->value = -n->value;
        n->pos = pos;
        return operand;
      }
      auto u = std::make_unique<UnaryExpr>();
      u->pos = pos;
      u->negate = negate;
      u->expr = std::move(operand);
      Built(*u);
      return u;
    }
    ExprPtr e = ParsePrimary();
    while (!failed_) {
      if (Peek().type == Tok::kLeftBracket) {
        e = ParseRangeOrSubquery(std::move(e));
      } else if (IsIdent(Peek(), "offset")) {
        ParseOffset(e.get());
      } else if (Peek().type == Tok::kAt) {
        ParseAt(e.get());
      } else {
        break;
      }
    }
    return e;
  }

  TimeModifiers* ModifiersOf(Expr* e) {
    switch (e->kind) {
      case ExprKind::kVectorSelector:
        return &static_cast<VectorSelector*>(e)->mods;
      case ExprKind::kMatrixSelector:
        return &static_cast<MatrixSelector*>(e)->selector->mods;
      case ExprKind::kSubquery:
        return &static_cast<Subquery*>(e)->mods;
      default:
        return nullptr;
    }
  }

  bool ParseDurationToken(int64_t* ms, const std::string& context, bool allow_zero = false) {
    const Token& t = Peek();
    if (t.type != Tok::kDuration) {
      Unexpected(t, context);
      return false;
    }
    if (!ParsePromDuration(t.text, ms)) {
      Fail(t.pos, "not a valid duration string: \"" + t.text + "\"");
      return false;
    }
    if (*ms == 0 && !allow_zero) {
      Fail(t.pos, "duration must be greater than 0");
      return false;
    }
    Advance();
    return true;
  }

  void ParseOffset(Expr* e) {
    Advance();  // "offset"
    TimeModifiers* mods = ModifiersOf(e);
    if (!mods) {
      return Fail(e->pos,
                  "offset modifier must be preceded by an instant vector selector or range vector "
                  "selector or a subquery");
    }
    if (mods->offset_ms != 0 || offset_set_.count(e))
      return Fail(e->pos, "offset may not be set multiple times");
    offset_set_.insert(e);
    bool negative = false;
    if (Peek().type == Tok::kSub) {
      Advance();
      negative = true;
    }
    int64_t ms = 0;
    if (!ParseDurationToken(&ms, "in offset, expected duration", /*allow_zero=*/true)) return;
    mods->offset_ms = negative ? -ms : ms;
  }

  void ParseAt(Expr* e) {
    Advance();  // "@"
    TimeModifiers* mods = ModifiersOf(e);
    if (!mods) {
      return Fail(e->pos,
                  "@ modifier must be preceded by an instant vector selector or range vector "
                  "selector or a subquery");
    }
    if (mods->at != AtKind::kNone)
      return Fail(e->pos, "@ <timestamp> may not be set multiple times");
    if (IsIdent(Peek(), "start") || IsIdent(Peek(), "end")) {
      bool start = IsIdent(Advance(), "start");
      if (!Expect(Tok::kLeftParen, "in @, expected timestamp") || !Expect(Tok::kRightParen, ""))
        return;
      mods->at = start ? AtKind::kStart : AtKind::kEnd;
      return;
    }
    double sign = 1;
    if (Peek().type == Tok::kSub || Peek().type == Tok::kAdd) {
      if (Advance().type == Tok::kSub) sign = -1;
    }
    const Token& t = Peek();
    double v = 0;
    if (t.type != Tok::kNumber || !ParseNumberLiteral(t.text, &v)) {
      return Unexpected(t, "in @, expected timestamp");
    }
    Advance();
    v *= sign;
    // Prometheus checks int64 seconds; the time is kept in int64 milliseconds, so beyond
    // ±9.2e15 s (292,000 years) it is refused with the same message instead of overflowing.
    if (std::isinf(v) || std::isnan(v) || v >= 9.223372036854775e15 || v <= -9.223372036854775e15) {
      char buf[400];
      std::snprintf(buf, sizeof buf, "%f", v);
      std::string text = std::isnan(v) ? "NaN" : std::isinf(v) ? (v > 0 ? "+Inf" : "-Inf") : buf;
      return Fail(e->pos, "timestamp out of bounds for @ modifier: " + text);
    }
    mods->at = AtKind::kTimestamp;
    mods->at_ms = static_cast<int64_t>(std::round(v * 1000));
  }

  ExprPtr ParseRangeOrSubquery(ExprPtr e) {
    int pos = Advance().pos;  // '['
    int64_t range = 0;
    if (!ParseDurationToken(&range, "in subquery selector, expected duration")) return e;
    if (Peek().type == Tok::kColon) {
      Advance();
      int64_t step = 0;
      if (Peek().type != Tok::kRightBracket &&
          !ParseDurationToken(&step, "in subquery selector, expected duration or \"]\""))
        return e;
      if (!Expect(Tok::kRightBracket, "in subquery selector, expected \"]\"")) return e;
      auto sq = std::make_unique<Subquery>();
      sq->pos = e->pos;
      sq->range_ms = range;
      sq->step_ms = step;
      sq->expr = std::move(e);
      Built(*sq);
      return sq;
    }
    if (!Expect(Tok::kRightBracket, "in subquery or range, expected \":\" or \"]\"")) return e;
    if (e->kind != ExprKind::kVectorSelector) {
      Fail(pos, "ranges only allowed for vector selectors");
      return e;
    }
    auto* vs = static_cast<VectorSelector*>(e.get());
    if (vs->mods.offset_ms != 0) {
      Fail(pos, "no offset modifiers allowed before range");
      return e;
    }
    if (vs->mods.at != AtKind::kNone) {
      Fail(pos, "no @ modifiers allowed before range");
      return e;
    }
    auto ms = std::make_unique<MatrixSelector>();
    ms->pos = e->pos;
    ms->range_ms = range;
    ms->selector.reset(static_cast<VectorSelector*>(e.release()));
    return ms;
  }

  ExprPtr ParsePrimary() {
    const Token& t = Peek();
    switch (t.type) {
      case Tok::kNumber: {
        auto n = std::make_unique<NumberLiteral>();
        n->pos = t.pos;
        if (!ParseNumberLiteral(t.text, &n->value)) {
          Fail(t.pos, "error parsing number: strconv.ParseFloat: parsing \"" + t.text +
                          "\": invalid syntax");
        }
        Advance();
        return n;
      }
      case Tok::kString: {
        auto s = std::make_unique<StringLiteral>();
        s->pos = t.pos;
        s->value = t.text;
        Advance();
        return s;
      }
      case Tok::kLeftParen: {
        auto p = std::make_unique<ParenExpr>();
        p->pos = Advance().pos;
        p->expr = ParseExpr(0);
        if (!failed_) Expect(Tok::kRightParen, "");
        Built(*p);
        return p;
      }
      case Tok::kLeftBrace:
        return ParseSelector("", t.pos);
      case Tok::kIdentifier:
        return ParseIdentifierExpr();
      default:
        Unexpected(t, "");
        return std::make_unique<NumberLiteral>();
    }
  }

  ExprPtr ParseIdentifierExpr() {
    const Token& t = Advance();
    std::string lower = Lower(t.text);
    std::optional<AggregateOp> agg = AggregateFromName(lower);
    bool grouping_next = IsIdent(Peek(), "by") || IsIdent(Peek(), "without");
    if (agg && (Peek().type == Tok::kLeftParen || grouping_next))
      return ParseAggregate(*agg, t.pos);
    if (Peek().type == Tok::kLeftParen) {
      const FunctionInfo* f = LookupFunction(t.text);
      if (!f) {
        Fail(t.pos, "unknown function with name \"" + t.text + "\"");
        return std::make_unique<NumberLiteral>();
      }
      return ParseCall(f, t.pos);
    }
    // Prometheus' metric_identifier admits aggregators, and/or/unless, by, without, offset,
    // start and end as metric names; these keywords it does not.
    static const std::set<std::string> kNotNames = {"atan2",    "bool",       "on",
                                                    "ignoring", "group_left", "group_right"};
    if (kNotNames.count(lower)) {
      Unexpected(t, "");
      return std::make_unique<NumberLiteral>();
    }
    return ParseSelector(t.text, t.pos);
  }

  ExprPtr ParseCall(const FunctionInfo* f, int pos) {
    auto call = std::make_unique<Call>();
    call->pos = pos;
    call->func = f;
    Advance();  // '('
    if (Peek().type != Tok::kRightParen) {
      for (;;) {
        call->args.push_back(ParseExpr(0));
        if (failed_) return call;
        if (Peek().type != Tok::kComma) break;
        const Token& comma = Advance();
        if (Peek().type == Tok::kRightParen) {
          Fail(comma.pos, "trailing commas not allowed in function call args");
          return call;
        }
      }
    }
    Expect(Tok::kRightParen, "");
    Built(*call);
    return call;
  }

  ExprPtr ParseAggregate(AggregateOp op, int pos) {
    auto agg = std::make_unique<AggregateExpr>();
    agg->pos = pos;
    agg->op = op;
    bool grouped = false;
    auto grouping = [&]() {
      agg->without = IsIdent(Advance(), "without");
      grouped = true;
      return ParseLabelList(&agg->grouping, "grouping opts");
    };
    if ((IsIdent(Peek(), "by") || IsIdent(Peek(), "without")) && !grouping()) return agg;
    if (!Expect(Tok::kLeftParen, "in aggregation")) return agg;
    std::vector<ExprPtr> args;
    if (Peek().type != Tok::kRightParen) {
      for (;;) {
        args.push_back(ParseExpr(0));
        if (failed_) return agg;
        if (Peek().type != Tok::kComma) break;
        const Token& comma = Advance();
        if (Peek().type == Tok::kRightParen) {
          Fail(comma.pos, "trailing commas not allowed in function call args");
          return agg;
        }
      }
    }
    if (!Expect(Tok::kRightParen, "")) return agg;
    if (!grouped && (IsIdent(Peek(), "by") || IsIdent(Peek(), "without")) && !grouping())
      return agg;
    bool with_param = op == AggregateOp::kTopk || op == AggregateOp::kBottomk ||
                      op == AggregateOp::kQuantile || op == AggregateOp::kCountValues;
    size_t desired = with_param ? 2 : 1;
    if (args.empty()) {
      Fail(pos, "no arguments for aggregate expression provided");
      return agg;
    }
    if (args.size() != desired) {
      Fail(pos, "wrong number of arguments for aggregate expression provided, expected " +
                    std::to_string(desired) + ", got " + std::to_string(args.size()));
      return agg;
    }
    if (with_param) agg->param = std::move(args[0]);
    agg->expr = std::move(args.back());
    Built(*agg);
    return agg;
  }

  ExprPtr ParseSelector(const std::string& name, int pos) {
    auto vs = std::make_unique<VectorSelector>();
    vs->pos = pos;
    vs->name = name;
    if (Peek().type == Tok::kLeftBrace) {
      Advance();
      while (!failed_ && Peek().type != Tok::kRightBrace) {
        if (!ParseMatcher(vs.get())) break;
        if (Peek().type == Tok::kComma) {
          Advance();
        } else if (Peek().type != Tok::kRightBrace) {
          Unexpected(Peek(), "in label matching, expected \",\" or \"}\"");
        }
      }
      if (failed_) return vs;
      Advance();  // '}'
    }
    if (!name.empty()) {
      for (const tsdb::Matcher& m : vs->matchers) {
        if (m.name() == "__name__") {
          Fail(pos, "metric name must not be set twice: \"" + name + "\" or \"" + m.value() + "\"");
          return vs;
        }
      }
      vs->matchers.push_back(*tsdb::Matcher::Make(tsdb::MatchType::kEqual, "__name__", name));
    }
    bool non_empty = false;
    for (const tsdb::Matcher& m : vs->matchers) non_empty |= !m.Matches("");
    if (!non_empty) Fail(pos, "vector selector must contain at least one non-empty matcher");
    return vs;
  }

  bool ParseMatcher(VectorSelector* vs) {
    const Token& name = Peek();
    if (name.type != Tok::kIdentifier) {
      Unexpected(name, "in label matching, expected identifier or \"}\"");
      return false;
    }
    Advance();
    tsdb::MatchType type;
    switch (Peek().type) {
      case Tok::kAssign:
        type = tsdb::MatchType::kEqual;
        break;
      case Tok::kNeq:
        type = tsdb::MatchType::kNotEqual;
        break;
      case Tok::kEqlRegex:
        type = tsdb::MatchType::kRegexMatch;
        break;
      case Tok::kNeqRegex:
        type = tsdb::MatchType::kRegexNoMatch;
        break;
      default:
        Unexpected(Peek(), "in label matching, expected label matching operator");
        return false;
    }
    Advance();
    const Token& value = Peek();
    if (value.type != Tok::kString) {
      Unexpected(value, "in label matching, expected string");
      return false;
    }
    Advance();
    if (type == tsdb::MatchType::kRegexMatch || type == tsdb::MatchType::kRegexNoMatch) {
      std::string err = RegexError(value.text);
      if (!err.empty()) {
        Fail(name.pos, err);
        return false;
      }
    }
    Expected<tsdb::Matcher> m = tsdb::Matcher::Make(type, name.text, value.text);
    if (!m) {
      Fail(value.pos, m.error().message);
      return false;
    }
    vs->matchers.push_back(std::move(*m));
    return true;
  }

  // ----- type checks (Prometheus' checkAST) -----

  void ExpectType(const Expr& e, ValueType want, const std::string& context) {
    ValueType got = TypeOf(e);
    if (got != want) {
      Fail(e.pos, std::string("expected type ") + ValueTypeName(want) + " in " + context +
                      ", got " + ValueTypeName(got));
    }
  }

  void Check(Expr& e) {
    if (failed_) return;
    switch (e.kind) {
      case ExprKind::kParen:
        return Check(*static_cast<ParenExpr&>(e).expr);
      case ExprKind::kUnary: {
        auto& u = static_cast<UnaryExpr&>(e);
        Check(*u.expr);
        ValueType t = TypeOf(*u.expr);
        if (t != ValueType::kScalar && t != ValueType::kVector) {
          Fail(u.pos, std::string("unary expression only allowed on expressions of type scalar or "
                                  "instant vector, got \"") +
                          ValueTypeName(t) + "\"");
        }
        return;
      }
      case ExprKind::kSubquery: {
        auto& s = static_cast<Subquery&>(e);
        Check(*s.expr);
        ValueType t = TypeOf(*s.expr);
        if (t != ValueType::kVector) {
          static const char* kGoNames[] = {"scalar", "string", "vector", "matrix"};
          Fail(s.pos, std::string("subquery is only allowed on instant vector, got ") +
                          kGoNames[static_cast<int>(t)] + " instead");
        }
        return;
      }
      case ExprKind::kAggregate: {
        auto& a = static_cast<AggregateExpr&>(e);
        Check(*a.expr);
        if (a.param) Check(*a.param);
        ExpectType(*a.expr, ValueType::kVector, "aggregation expression");
        if (a.op == AggregateOp::kTopk || a.op == AggregateOp::kBottomk ||
            a.op == AggregateOp::kQuantile)
          ExpectType(*a.param, ValueType::kScalar, "aggregation parameter");
        if (a.op == AggregateOp::kCountValues)
          ExpectType(*a.param, ValueType::kString, "aggregation parameter");
        return;
      }
      case ExprKind::kCall:
        return CheckCall(static_cast<Call&>(e));
      case ExprKind::kBinary:
        return CheckBinary(static_cast<BinaryExpr&>(e));
      default:
        return;
    }
  }

  void CheckCall(Call& c) {
    for (auto& a : c.args) Check(*a);
    if (failed_) return;
    const FunctionInfo& f = *c.func;
    size_t nargs = f.arg_types.size();
    std::string fname = std::string("\"") + f.name + "\"";
    if (f.variadic == 0) {
      if (nargs != c.args.size()) {
        return Fail(c.pos, "expected " + std::to_string(nargs) + " argument(s) in call to " +
                               fname + ", got " + std::to_string(c.args.size()));
      }
    } else {
      size_t min = nargs - 1;
      if (min > c.args.size()) {
        return Fail(c.pos, "expected at least " + std::to_string(min) + " argument(s) in call to " +
                               fname + ", got " + std::to_string(c.args.size()));
      }
      size_t max = min + static_cast<size_t>(f.variadic);
      if (f.variadic > 0 && max < c.args.size()) {
        return Fail(c.pos, "expected at most " + std::to_string(max) + " argument(s) in call to " +
                               fname + ", got " + std::to_string(c.args.size()));
      }
    }
    for (size_t i = 0; i < c.args.size(); ++i) {
      size_t ti = i;
      if (ti >= nargs) {
        if (f.variadic != -1) break;
        ti = nargs - 1;
      }
      ExpectType(*c.args[i], f.arg_types[ti], "call to function " + fname);
    }
  }

  void CheckBinary(BinaryExpr& b) {
    Check(*b.lhs);
    Check(*b.rhs);
    if (failed_) return;
    int op_pos = op_positions_[&b];
    ValueType lt = TypeOf(*b.lhs), rt = TypeOf(*b.rhs);
    std::string op = std::string("\"") + BinaryOpName(b.op) + "\"";
    if (b.return_bool && !IsComparison(b.op))
      return Fail(op_pos, "bool modifier can only be used on comparison operators");
    if (IsComparison(b.op) && !b.return_bool && lt == ValueType::kScalar &&
        rt == ValueType::kScalar)
      return Fail(op_pos, "comparisons between scalars must use BOOL modifier");
    VectorMatching& vm = *b.matching;
    if (IsSetOperator(b.op) && vm.card == Cardinality::kOneToOne)
      vm.card = Cardinality::kManyToMany;
    for (const std::string& l1 : vm.labels)
      for (const std::string& l2 : vm.include)
        if (l1 == l2 && vm.on)
          return Fail(op_pos, "label \"" + l1 + "\" must not occur in ON and GROUP clause at once");
    if (lt != ValueType::kScalar && lt != ValueType::kVector)
      return Fail(b.lhs->pos,
                  "binary expression must contain only scalar and instant vector types");
    if (rt != ValueType::kScalar && rt != ValueType::kVector)
      return Fail(b.rhs->pos,
                  "binary expression must contain only scalar and instant vector types");
    if (lt != ValueType::kVector || rt != ValueType::kVector) {
      if (!vm.labels.empty())
        return Fail(b.pos, "vector matching only allowed between instant vectors");
      b.matching.reset();
    } else if (IsSetOperator(b.op)) {
      if (vm.card == Cardinality::kOneToMany || vm.card == Cardinality::kManyToOne)
        return Fail(b.pos, "no grouping allowed for " + op + " operation");
    }
    if ((lt == ValueType::kScalar || rt == ValueType::kScalar) && IsSetOperator(b.op))
      return Fail(b.pos, "set operator " + op + " not allowed in binary scalar expression");
  }

  std::string_view query_;
  std::vector<Token> toks_;
  size_t idx_ = 0;
  bool failed_ = false;
  std::string error_;
  std::map<const BinaryExpr*, int> op_positions_;
  std::set<const Expr*> offset_set_;  // nodes with an explicit offset (even "offset 0s")
  int nesting_ = 0;                   // ParseExpr calls in progress
  std::unordered_map<const Expr*, int> heights_;  // see Built()
};

}  // namespace

Expected<ExprPtr> Parse(std::string_view query) {
  // Prometheus answers a query holding no expression at all with this, not an end-of-input error.
  if (query.find_first_not_of(" \t\r\n") == std::string_view::npos)
    return Error{"1:1: parse error: no expression found in input"};
  return Parser(query).Run();
}

}  // namespace gw::promql
