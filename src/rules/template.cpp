// Template execution (Go text/template semantics) and the Prometheus entry points.
#include "rules/template.h"

#include "rules/template_funcs.h"
#include "rules/template_internal.h"

namespace gw::rules {
namespace tmpl {
namespace {

constexpr std::string_view kAlertDefs =
    "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := "
    ".ExternalURL}}{{$value := .Value}}";

enum class Kind { kBool, kInt, kFloat, kString, kOther };
Kind BasicKind(const Value& v) {
  switch (v.kind) {
    case Value::kBool:
      return Kind::kBool;
    case Value::kInt:
      return Kind::kInt;
    case Value::kFloat:
      return Kind::kFloat;
    case Value::kString:
      return Kind::kString;
    default:
      return Kind::kOther;
  }
}

class Executor {
 public:
  Executor(const Parsed& p, const TemplateContext& ctx) : p_(p), ctx_(ctx) {}

  Expected<std::string> Run(const Value& dot) {
    vars_.push_back({"$", dot});
    if (!Walk(p_.root, dot)) return Error{err_};
    return out_;
  }

 private:
  bool Fail(size_t pos, const std::string& context, const std::string& msg) {
    std::string_view before = std::string_view(p_.text).substr(0, pos);
    int line = 1;
    for (char c : before) line += c == '\n';
    size_t nl = before.rfind('\n');
    size_t col = nl == std::string_view::npos ? pos : pos - nl - 1;
    err_ = "template: " + p_.name + ":" + std::to_string(line) + ":" + std::to_string(col) +
           ": executing \"" + p_.name + "\" at <" + context + ">: " + msg;
    return false;
  }

  bool Walk(const List& list, const Value& dot) {
    for (const Node& n : list)
      if (!WalkNode(n, dot)) return false;
    return true;
  }

  bool WalkNode(const Node& n, const Value& dot) {
    switch (n.kind) {
      case Node::kText:
        out_ += n.text;
        return true;
      case Node::kAction: {
        Value v;
        if (!EvalPipe(*n.pipe, dot, &v)) return false;
        if (n.pipe->decl.empty()) out_ += Print(v);
        return true;
      }
      case Node::kIf:
      case Node::kWith: {
        size_t mark = vars_.size();
        Value v;
        if (!EvalPipe(*n.pipe, dot, &v)) return false;
        bool ok = true;
        if (Truth(v)) {
          ok = Walk(*n.list, n.kind == Node::kWith ? v : dot);
        } else if (n.else_list) {
          ok = Walk(*n.else_list, dot);
        }
        vars_.resize(mark);
        return ok;
      }
      case Node::kRange:
        return WalkRange(n, dot);
    }
    return true;
  }

  bool WalkRange(const Node& n, const Value& dot) {
    size_t mark = vars_.size();
    Value v;
    Pipe pipe = *n.pipe;
    std::vector<std::string> decl = pipe.decl;
    pipe.decl.clear();
    if (!EvalPipe(pipe, dot, &v)) return false;
    std::vector<std::pair<Value, Value>> items;  // (key/index, element)
    switch (v.kind) {
      case Value::kSamples:
        for (size_t i = 0; i < v.samples->size(); ++i) {
          Value e;
          e.kind = Value::kSample;
          e.sample = std::shared_ptr<const QuerySample>(v.samples, &(*v.samples)[i]);
          items.push_back({MakeInt(static_cast<int64_t>(i)), e});
        }
        break;
      case Value::kMap:
        for (const auto& [k, e] : *v.map) items.push_back({MakeString(k), e});
        break;
      case Value::kNil:
        break;
      default:
        return Fail(n.pipe->pos, PipeString(*n.pipe), "range can't iterate over " + Sprint(v));
    }
    if (items.empty()) {
      bool ok = !n.else_list || Walk(*n.else_list, dot);
      vars_.resize(mark);
      return ok;
    }
    for (const auto& [k, e] : items) {
      size_t inner = vars_.size();
      if (decl.size() == 1) vars_.push_back({decl[0], e});
      if (decl.size() == 2) {
        vars_.push_back({decl[0], k});
        vars_.push_back({decl[1], e});
      }
      if (!Walk(*n.list, e)) return false;
      vars_.resize(inner);
    }
    vars_.resize(mark);
    return true;
  }

  static std::string Print(const Value& v) {
    if (v.kind == Value::kNil) return "<no value>";
    return Sprint(v);
  }

  bool EvalPipe(const Pipe& pipe, const Value& dot, Value* out) {
    Value v;
    bool have = false;
    for (const Command& c : pipe.cmds) {
      if (!EvalCommand(c, dot, have ? &v : nullptr, &v)) return false;
      have = true;
    }
    for (const std::string& name : pipe.decl) {
      if (pipe.assign) {
        for (auto it = vars_.rbegin(); it != vars_.rend(); ++it)
          if (it->first == name) {
            it->second = v;
            break;
          }
      } else {
        vars_.push_back({name, v});
      }
    }
    *out = v;
    return true;
  }

  const Value* Var(const std::string& name) {
    for (auto it = vars_.rbegin(); it != vars_.rend(); ++it)
      if (it->first == name) return &it->second;
    return nullptr;
  }

  bool Field(const Value& base, const std::string& field, size_t pos, const std::string& ctx,
             Value* out) {
    switch (base.kind) {
      case Value::kData: {
        const TemplateData& d = *base.data;
        if (field == "Labels")
          *out = MakeLabelsMap(d.labels);
        else if (field == "ExternalLabels")
          *out = MakeLabelsMap(d.external_labels);
        else if (field == "ExternalURL")
          *out = MakeString(d.external_url);
        else if (field == "Value")
          *out = MakeFloat(d.value);
        else
          return Fail(pos, ctx, "can't evaluate field " + field + " in type " + TypeName(base));
        return true;
      }
      case Value::kSample:
        if (field == "Labels")
          *out = MakeLabelsMap(base.sample->labels);
        else if (field == "Value")
          *out = MakeFloat(base.sample->value);
        else
          return Fail(pos, ctx, "can't evaluate field " + field + " in type " + TypeName(base));
        return true;
      case Value::kMap: {
        auto it = base.map->find(field);
        if (it != base.map->end())
          *out = it->second;
        else
          *out = base.string_map ? MakeString("") : Value{};
        return true;
      }
      case Value::kNil:
        return Fail(pos, ctx, "nil pointer evaluating interface {}." + field);
      default:
        return Fail(pos, ctx, "can't evaluate field " + field + " in type " + TypeName(base));
    }
  }

  bool EvalArg(const Arg& a, const Value& dot, Value* out) {
    Value v;
    size_t chain_from = 0;
    std::string ctx = a.kind == Arg::kField ? "" : a.text;
    switch (a.kind) {
      case Arg::kDot:
      case Arg::kField:
        v = dot;
        break;
      case Arg::kVariable: {
        const Value* var = Var(a.name);
        if (!var) return Fail(a.pos, a.text, "undefined variable: " + a.name);
        v = *var;
        break;
      }
      case Arg::kString:
        v = MakeString(a.name);
        break;
      case Arg::kNumber:
        v = a.is_int ? MakeInt(a.i) : MakeFloat(a.f);
        break;
      case Arg::kBool:
        v = MakeBool(a.b);
        break;
      case Arg::kNil:
        v = Value{};
        break;
      case Arg::kPipe:
        if (!EvalPipe(*a.pipe, dot, &v)) return false;
        ctx = "(" + PipeString(*a.pipe) + ")";
        break;
      case Arg::kIdent: {
        Command c;
        c.pos = a.pos;
        c.args.push_back(a);
        return EvalCommand(c, dot, nullptr, out);
      }
    }
    for (size_t i = chain_from; i < a.chain.size(); ++i) {
      ctx += "." + a.chain[i];
      Value next;
      if (!Field(v, a.chain[i], a.pos, ctx, &next)) return false;
      v = std::move(next);
    }
    *out = std::move(v);
    return true;
  }

  bool EvalCommand(const Command& c, const Value& dot, const Value* final, Value* out) {
    const Arg& first = c.args[0];
    std::string ctx = CommandString(c);
    if (first.kind != Arg::kIdent) {
      if (c.args.size() > 1 || final)
        return Fail(c.pos, ctx, "can't give argument to non-function " + ctx);
      return EvalArg(first, dot, out);
    }
    std::vector<Value> args;
    for (size_t i = 1; i < c.args.size(); ++i) {
      Value v;
      if (!EvalArg(c.args[i], dot, &v)) return false;
      args.push_back(std::move(v));
    }
    if (final) args.push_back(*final);
    auto r = Call(first.name, args);
    if (!r.ok()) return Fail(c.pos, ctx, r.error().message);
    *out = std::move(*r);
    return true;
  }

  static Expected<bool> Less(const Value& a, const Value& b) {
    Kind ka = BasicKind(a), kb = BasicKind(b);
    if (ka == Kind::kOther || ka == Kind::kBool || kb == Kind::kOther || kb == Kind::kBool)
      return Error{"invalid type for comparison"};
    if (ka != kb) return Error{"incompatible types for comparison"};
    if (ka == Kind::kInt) return a.i < b.i;
    if (ka == Kind::kFloat) return a.f < b.f;
    return a.s < b.s;
  }

  static Expected<bool> Equal(const Value& a, const Value& b) {
    Kind ka = BasicKind(a), kb = BasicKind(b);
    if (ka == Kind::kOther || kb == Kind::kOther) {
      if (a.kind == Value::kNil || b.kind == Value::kNil)
        return Error{"invalid type for comparison"};
      return Error{"non-comparable types " + TypeName(a) + ": " + TypeName(b)};
    }
    if (ka != kb) return Error{"incompatible types for comparison"};
    switch (ka) {
      case Kind::kBool:
        return a.b == b.b;
      case Kind::kInt:
        return a.i == b.i;
      case Kind::kFloat:
        return a.f == b.f;
      default:
        return a.s == b.s;
    }
  }

  Expected<Value> Call(const std::string& name, const std::vector<Value>& a) {
    auto want = [&](size_t n) -> Status {
      if (a.size() != n)
        return Error{"wrong number of args for " + name + ": want " + std::to_string(n) + " got " +
                     std::to_string(a.size())};
      return Status::Ok();
    };
    auto at_least = [&](size_t n) -> Status {
      if (a.size() < n)
        return Error{"wrong number of args for " + name + ": want at least " + std::to_string(n) +
                     " got " + std::to_string(a.size())};
      return Status::Ok();
    };
    auto wrap = [&](const Expected<bool>& r) -> Expected<Value> {
      if (!r.ok()) return Error{"error calling " + name + ": " + r.error().message};
      return MakeBool(*r);
    };
    if (name == "and" || name == "or") {
      if (Status s = at_least(1); !s.ok()) return Error{s.message()};
      for (size_t i = 0; i + 1 < a.size(); ++i)
        if (Truth(a[i]) == (name == "or")) return a[i];
      return a.back();
    }
    if (name == "not") {
      if (Status s = want(1); !s.ok()) return Error{s.message()};
      return MakeBool(!Truth(a[0]));
    }
    if (name == "len") {
      if (Status s = want(1); !s.ok()) return Error{s.message()};
      const Value& v = a[0];
      if (v.kind == Value::kString) return MakeInt(static_cast<int64_t>(v.s.size()));
      if (v.kind == Value::kMap) return MakeInt(static_cast<int64_t>(v.map->size()));
      if (v.kind == Value::kSamples) return MakeInt(static_cast<int64_t>(v.samples->size()));
      return Error{"error calling len: len of type " + TypeName(v)};
    }
    if (name == "index") {
      if (Status s = at_least(1); !s.ok()) return Error{s.message()};
      Value v = a[0];
      for (size_t i = 1; i < a.size(); ++i) {
        if (v.kind == Value::kMap) {
          if (a[i].kind != Value::kString)
            return Error{"error calling index: value has type " + TypeName(a[i]) +
                         "; should be string"};
          auto it = v.map->find(a[i].s);
          Value next = it != v.map->end() ? it->second : (v.string_map ? MakeString("") : Value{});
          v = next;
        } else if (v.kind == Value::kSamples) {
          if (a[i].kind != Value::kInt)
            return Error{"error calling index: cannot index slice/array with type " +
                         TypeName(a[i])};
          if (a[i].i < 0 || a[i].i >= static_cast<int64_t>(v.samples->size()))
            return Error{"error calling index: index out of range: " + std::to_string(a[i].i)};
          Value e;
          e.kind = Value::kSample;
          e.sample = std::shared_ptr<const QuerySample>(v.samples, &(*v.samples)[a[i].i]);
          v = e;
        } else if (v.kind == Value::kNil) {
          return Error{"error calling index: index of untyped nil"};
        } else {
          return Error{"error calling index: can't index item of type " + TypeName(v)};
        }
      }
      return v;
    }
    if (name == "print" || name == "println") {
      std::string s;
      for (size_t i = 0; i < a.size(); ++i) {
        bool space = name == "println" ||
                     (i > 0 && a[i].kind != Value::kString && a[i - 1].kind != Value::kString);
        if (i > 0 && space) s += " ";
        s += Sprint(a[i]);
      }
      if (name == "println") s += "\n";
      return MakeString(s);
    }
    if (name == "printf") {
      if (Status s = at_least(1); !s.ok()) return Error{s.message()};
      if (a[0].kind != Value::kString)
        return Error{"wrong type for value; expected string; got " + TypeName(a[0])};
      return MakeString(GoSprintf(a[0].s, std::vector<Value>(a.begin() + 1, a.end())));
    }
    if (name == "eq") {
      if (Status s = at_least(1); !s.ok()) return Error{s.message()};
      if (a.size() < 2) return Error{"error calling eq: missing argument for comparison"};
      for (size_t i = 1; i < a.size(); ++i) {
        auto r = Equal(a[0], a[i]);
        if (!r.ok() || *r) return wrap(r);
      }
      return MakeBool(false);
    }
    if (name == "ne") {
      if (Status s = want(2); !s.ok()) return Error{s.message()};
      auto r = Equal(a[0], a[1]);
      if (!r.ok()) return wrap(r);
      return MakeBool(!*r);
    }
    if (name == "lt" || name == "le" || name == "gt" || name == "ge") {
      if (Status s = want(2); !s.ok()) return Error{s.message()};
      bool swap = name == "gt" || name == "le";
      auto r = swap ? Less(a[1], a[0]) : Less(a[0], a[1]);
      if (!r.ok()) return wrap(r);
      bool v = *r;
      if (name == "le" || name == "ge") v = !v;
      return MakeBool(v);
    }
    return CallFunction(name, a, ctx_);
  }

  const Parsed& p_;
  const TemplateContext& ctx_;
  std::vector<std::pair<std::string, Value>> vars_;
  std::string out_, err_;
};

Expected<std::string> Expand(const std::string& name, const std::string& text,
                             const TemplateData& data, const TemplateContext& ctx) {
  auto parsed = Parse(name, text);
  if (!parsed.ok()) return Error{"error parsing template " + name + ": " + parsed.error().message};
  Value dot;
  dot.kind = Value::kData;
  dot.data = std::make_shared<TemplateData>(data);
  Executor ex(**parsed, ctx);
  auto r = ex.Run(dot);
  if (!r.ok()) return Error{"error executing template " + name + ": " + r.error().message};
  return r;
}

}  // namespace
}  // namespace tmpl

std::string Humanize(double v) {
  return tmpl::Humanize(v);
}
std::string Humanize1024(double v) {
  return tmpl::Humanize1024(v);
}
std::string HumanizeDuration(double v) {
  return tmpl::HumanizeDuration(v);
}
std::string HumanizeTimestamp(double v) {
  return tmpl::HumanizeTimestamp(v);
}

Status CheckTemplate(const std::string& name, std::string_view text) {
  auto parsed = tmpl::Parse(name, std::string(tmpl::kAlertDefs) + std::string(text));
  if (!parsed.ok()) return parsed.error();
  return Status::Ok();
}

Expected<std::string> ExpandAlertTemplate(const std::string& name, std::string_view text,
                                          const TemplateData& data, const TemplateContext& ctx) {
  return tmpl::Expand(name, std::string(tmpl::kAlertDefs) + std::string(text), data, ctx);
}

}  // namespace gw::rules
