// The template functions of Prometheus 2.42 (template/template.go): the function table
// (CallFunction) and the value helpers the executor shares. Go's fmt (printf) is go_format.cpp.
#include <re2/re2.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "base/html.h"
#include "base/utc_time.h"
#include "promql/parser.h"
#include "rules/template_funcs.h"

namespace gw::rules::tmpl {

std::string TypeName(const Value& v) {
  switch (v.kind) {
    case Value::kNil:
      return "<nil>";
    case Value::kBool:
      return "bool";
    case Value::kInt:
      return "int";
    case Value::kFloat:
      return "float64";
    case Value::kString:
      return v.html ? "template.HTML" : "string";
    case Value::kMap:
      return v.string_map ? "map[string]string" : "map[string]interface {}";
    case Value::kSamples:
      return "template.queryResult";
    case Value::kSample:
      return "*template.sample";
    case Value::kData:
      return "struct { Labels map[string]string; ExternalLabels map[string]string; ExternalURL "
             "string; Value float64 }";
  }
  return "?";
}

namespace {

std::string LabelsMapString(const tsdb::Labels& ls) {
  std::string s = "map[";
  for (size_t i = 0; i < ls.size(); ++i) s += (i ? " " : "") + ls[i].name + ":" + ls[i].value;
  return s + "]";
}

}  // namespace

std::string Sprint(const Value& v) {
  switch (v.kind) {
    case Value::kNil:
      return "<nil>";
    case Value::kBool:
      return v.b ? "true" : "false";
    case Value::kInt:
      return std::to_string(v.i);
    case Value::kFloat:
      return FormatGoFloat(v.f, 'v');
    case Value::kString:
      return v.s;
    case Value::kMap: {
      std::string s = "map[";
      bool first = true;
      for (const auto& [k, e] : *v.map) {
        s += (first ? "" : " ") + k + ":" + Sprint(e);
        first = false;
      }
      return s + "]";
    }
    case Value::kSamples: {
      std::string s = "[";
      for (size_t i = 0; i < v.samples->size(); ++i)
        s += (i ? " " : "") + std::string("&{") + LabelsMapString((*v.samples)[i].labels) + " " +
             FormatGoFloat((*v.samples)[i].value, 'v') + "}";
      return s + "]";
    }
    case Value::kSample:
      return "{" + LabelsMapString(v.sample->labels) + " " + FormatGoFloat(v.sample->value, 'v') +
             "}";
    case Value::kData:
      return "{" + LabelsMapString(v.data->labels) + " " +
             LabelsMapString(v.data->external_labels) + " " + v.data->external_url + " " +
             FormatGoFloat(v.data->value, 'v') + "}";
  }
  return "";
}

bool Truth(const Value& v) {
  switch (v.kind) {
    case Value::kNil:
      return false;
    case Value::kBool:
      return v.b;
    case Value::kInt:
      return v.i != 0;
    case Value::kFloat:
      return v.f != 0;
    case Value::kString:
      return !v.s.empty();
    case Value::kMap:
      return !v.map->empty();
    case Value::kSamples:
      return !v.samples->empty();
    case Value::kSample:
    case Value::kData:
      return true;
  }
  return false;
}

Value MakeString(std::string s) {
  Value v;
  v.kind = Value::kString;
  v.s = std::move(s);
  return v;
}
Value MakeFloat(double f) {
  Value v;
  v.kind = Value::kFloat;
  v.f = f;
  return v;
}
Value MakeBool(bool b) {
  Value v;
  v.kind = Value::kBool;
  v.b = b;
  return v;
}
Value MakeInt(int64_t i) {
  Value v;
  v.kind = Value::kInt;
  v.i = i;
  return v;
}
Value MakeLabelsMap(const tsdb::Labels& ls) {
  auto m = std::make_shared<ValueMap>();
  for (const auto& l : ls) (*m)[l.name] = MakeString(l.value);
  Value v;
  v.kind = Value::kMap;
  v.string_map = true;
  v.map = std::move(m);
  return v;
}

std::string QueryEscape(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else if (c == ' ') {
      out += '+';
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

namespace {

using Args = std::vector<Value>;

// A float to int64 that saturates instead of overflowing (undefined behaviour in C++): a
// template may humanize any sample value, 1e300 included.
int64_t ClampToInt64(double v) {
  if (v >= 9.2233720368547758e18) return INT64_MAX;
  if (v <= -9.2233720368547758e18) return INT64_MIN;
  return static_cast<int64_t>(v);
}

Status WantArgs(const std::string& name, const Args& a, size_t n) {
  if (a.size() != n)
    return Error{"wrong number of args for " + name + ": want " + std::to_string(n) + " got " +
                 std::to_string(a.size())};
  return Status::Ok();
}

Expected<std::string> AsString(const Value& v) {
  if (v.kind != Value::kString)
    return Error{"wrong type for value; expected string; got " + TypeName(v)};
  return v.s;
}

// Prometheus' convertToFloat.
Expected<double> ToFloat(const Value& v) {
  switch (v.kind) {
    case Value::kFloat:
      return v.f;
    case Value::kInt:
      return static_cast<double>(v.i);
    case Value::kString: {
      char* end = nullptr;
      double d = std::strtod(v.s.c_str(), &end);
      std::string lower = v.s;
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (lower == "inf" || lower == "+inf" || lower == "infinity") return HUGE_VAL;
      if (lower == "-inf" || lower == "-infinity") return -HUGE_VAL;
      if (lower == "nan") return NAN;
      if (v.s.empty() || *end != 0 || lower.find_first_of("xp") != std::string::npos)
        return Error{"strconv.ParseFloat: parsing " + GoQuote(v.s) + ": invalid syntax"};
      return d;
    }
    default:
      return Error{"can't convert " + TypeName(v) + " to float"};
  }
}

std::string G4(double v) {
  return FormatGoFloat(v, 'g', 4);
}

Expected<const QuerySample*> AsSample(const Value& v) {
  if (v.kind != Value::kSample)
    return Error{"wrong type for value; expected *template.sample; got " + TypeName(v)};
  return v.sample.get();
}

Expected<std::shared_ptr<const std::vector<QuerySample>>> AsSamples(const Value& v) {
  if (v.kind != Value::kSamples)
    return Error{"wrong type for value; expected template.queryResult; got " + TypeName(v)};
  return v.samples;
}

// Go's regexp ReplaceAllString template ($1, ${1}, $name, $$) as an RE2 rewrite string.
std::string GoReplacementToRe2(const RE2& re, const std::string& repl) {
  const auto& named = re.NamedCapturingGroups();
  std::string out;
  for (size_t i = 0; i < repl.size(); ++i) {
    char c = repl[i];
    if (c == '\\') {
      out += "\\\\";
      continue;
    }
    if (c != '$') {
      out += c;
      continue;
    }
    if (i + 1 < repl.size() && repl[i + 1] == '$') {
      out += '$';
      ++i;
      continue;
    }
    std::string name;
    size_t j = i + 1;
    if (j < repl.size() && repl[j] == '{') {
      size_t close = repl.find('}', j);
      if (close == std::string::npos) {
        out += c;
        continue;
      }
      name = repl.substr(j + 1, close - j - 1);
      j = close + 1;
    } else {
      while (j < repl.size() &&
             (std::isalnum(static_cast<unsigned char>(repl[j])) || repl[j] == '_'))
        name += repl[j++];
    }
    if (name.empty()) {
      out += c;
      continue;
    }
    i = j - 1;
    int idx = -1;
    if (std::all_of(name.begin(), name.end(),
                    [](char d) { return std::isdigit(static_cast<unsigned char>(d)); })) {
      idx = std::atoi(name.c_str());
    } else if (auto it = named.find(name); it != named.end()) {
      idx = it->second;
    }
    if (idx >= 0 && idx <= re.NumberOfCapturingGroups() && idx <= 9)
      out += "\\" + std::to_string(idx);
  }
  return out;
}

std::string StripPort(const std::string& hp) {
  // net.SplitHostPort; on error the input comes back unchanged.
  if (!hp.empty() && hp[0] == '[') {
    size_t close = hp.find(']');
    if (close == std::string::npos || close + 1 >= hp.size() || hp[close + 1] != ':') return hp;
    return hp.substr(1, close - 1);
  }
  size_t colon = hp.rfind(':');
  if (colon == std::string::npos) return hp;
  if (hp.find(':') != colon) return hp;  // too many colons
  return hp.substr(0, colon);
}

std::string Title(const std::string& s) {
  std::string out = s;
  bool prev_sep = true;
  for (char& c : out) {
    unsigned char u = static_cast<unsigned char>(c);
    if (prev_sep && std::islower(u)) c = static_cast<char>(std::toupper(u));
    prev_sep = !(std::isalnum(u) || c == '_' || u >= 0x80);
  }
  return out;
}

}  // namespace

std::string Humanize(double v) {
  if (v == 0 || std::isnan(v) || std::isinf(v)) return G4(v);
  if (std::fabs(v) >= 1) {
    std::string prefix;
    for (const char* p : {"k", "M", "G", "T", "P", "E", "Z", "Y"}) {
      if (std::fabs(v) < 1000) break;
      prefix = p;
      v /= 1000;
    }
    return G4(v) + prefix;
  }
  std::string prefix;
  for (const char* p : {"m", "u", "n", "p", "f", "a", "z", "y"}) {
    if (std::fabs(v) >= 1) break;
    prefix = p;
    v *= 1000;
  }
  return G4(v) + prefix;
}

std::string Humanize1024(double v) {
  if (std::fabs(v) <= 1 || std::isnan(v) || std::isinf(v)) return G4(v);
  std::string prefix;
  for (const char* p : {"ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi"}) {
    if (std::fabs(v) < 1024) break;
    prefix = p;
    v /= 1024;
  }
  return G4(v) + prefix;
}

std::string HumanizeDuration(double v) {
  if (std::isnan(v) || std::isinf(v)) return G4(v);
  if (v == 0) return G4(v) + "s";
  if (std::fabs(v) >= 1) {
    std::string sign;
    if (v < 0) {
      sign = "-";
      v = -v;
    }
    int64_t d = ClampToInt64(v);
    int64_t seconds = d % 60, minutes = (d / 60) % 60, hours = (d / 3600) % 24, days = d / 86400;
    auto s = [](int64_t n) { return std::to_string(n); };
    if (days != 0)
      return sign + s(days) + "d " + s(hours) + "h " + s(minutes) + "m " + s(seconds) + "s";
    if (hours != 0) return sign + s(hours) + "h " + s(minutes) + "m " + s(seconds) + "s";
    if (minutes != 0) return sign + s(minutes) + "m " + s(seconds) + "s";
    return sign + G4(v) + "s";
  }
  std::string prefix;
  for (const char* p : {"m", "u", "n", "p", "f", "a", "z", "y"}) {
    if (std::fabs(v) >= 1) break;
    prefix = p;
    v *= 1000;
  }
  return G4(v) + prefix + "s";
}

std::string HumanizeTimestamp(double v) {
  if (std::isnan(v) || std::isinf(v)) return G4(v);
  // Prometheus goes through model.Time: millisecond precision, printed as Go's time.Time.
  const UtcTime u = ToUtc(ClampToInt64(v * 1e3));
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &u.tm);
  return buf + GoFraction(u.millis) + " +0000 UTC";
}

Expected<Value> CallFunction(const std::string& name, const std::vector<Value>& a,
                             const TemplateContext& ctx) {
  auto str_fn = [&](auto fn) -> Expected<Value> {
    if (Status s = WantArgs(name, a, 1); !s.ok()) return Error{s.message()};
    auto s = AsString(a[0]);
    if (!s.ok()) return s.error();
    return MakeString(fn(*s));
  };
  auto float_fn = [&](auto fn) -> Expected<Value> {
    if (Status s = WantArgs(name, a, 1); !s.ok()) return Error{s.message()};
    auto f = ToFloat(a[0]);
    if (!f.ok()) return Error{"error calling " + name + ": " + f.error().message};
    return MakeString(fn(*f));
  };
  if (name == "humanize") return float_fn(Humanize);
  if (name == "humanize1024") return float_fn(Humanize1024);
  if (name == "humanizeDuration") return float_fn(HumanizeDuration);
  if (name == "humanizePercentage") return float_fn([](double v) { return G4(v * 100) + "%"; });
  if (name == "humanizeTimestamp") return float_fn(HumanizeTimestamp);
  if (name == "toUpper")
    return str_fn([](std::string s) {
      for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      return s;
    });
  if (name == "toLower")
    return str_fn([](std::string s) {
      for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return s;
    });
  if (name == "title") return str_fn(Title);
  if (name == "stripPort") return str_fn(StripPort);
  if (name == "safeHtml") {
    auto v = str_fn([](std::string s) { return s; });
    if (v.ok()) v->html = true;
    return v;
  }
  if (name == "graphLink")
    return str_fn(
        [](const std::string& e) { return "/graph?g0.expr=" + QueryEscape(e) + "&g0.tab=0"; });
  if (name == "tableLink")
    return str_fn(
        [](const std::string& e) { return "/graph?g0.expr=" + QueryEscape(e) + "&g0.tab=1"; });
  if (name == "html" || name == "urlquery") {
    std::vector<Value> copy = a;
    std::string s;
    for (size_t i = 0; i < copy.size(); ++i) s += Sprint(copy[i]);
    return MakeString(name == "html" ? gw::HtmlEscape(s) : QueryEscape(s));
  }
  if (name == "externalURL" || name == "pathPrefix") {
    if (Status s = WantArgs(name, a, 0); !s.ok()) return Error{s.message()};
    if (name == "externalURL") return MakeString(ctx.external_url);
    size_t scheme = ctx.external_url.find("://");
    size_t slash = ctx.external_url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
    return MakeString(slash == std::string::npos ? "" : ctx.external_url.substr(slash));
  }
  if (name == "parseDuration") {
    if (Status s = WantArgs(name, a, 1); !s.ok()) return Error{s.message()};
    auto s = AsString(a[0]);
    if (!s.ok()) return s.error();
    int64_t ms = 0;
    if (!promql::ParsePromDuration(*s, &ms))
      return Error{"error calling parseDuration: not a valid duration string: " + GoQuote(*s)};
    return MakeFloat(static_cast<double>(ms) / 1000.0);
  }
  if (name == "match" || name == "reReplaceAll") {
    if (Status s = WantArgs(name, a, name == "match" ? 2 : 3); !s.ok()) return Error{s.message()};
    std::vector<std::string> s;
    for (const auto& v : a) {
      auto x = AsString(v);
      if (!x.ok()) return x.error();
      s.push_back(*x);
    }
    RE2 re(s[0], RE2::Quiet);
    if (!re.ok()) return Error{"error calling " + name + ": error parsing regexp: " + re.error()};
    if (name == "match") return MakeBool(RE2::PartialMatch(s[1], re));
    std::string text = s[2];
    RE2::GlobalReplace(&text, re, GoReplacementToRe2(re, s[1]));
    return MakeString(text);
  }
  if (name == "args") {
    auto m = std::make_shared<ValueMap>();
    for (size_t i = 0; i < a.size(); ++i) (*m)["arg" + std::to_string(i)] = a[i];
    Value v;
    v.kind = Value::kMap;
    v.map = std::move(m);
    return v;
  }
  if (name == "query") {
    if (Status s = WantArgs(name, a, 1); !s.ok()) return Error{s.message()};
    auto q = AsString(a[0]);
    if (!q.ok()) return q.error();
    if (!ctx.query) return Error{"error calling query: no query engine"};
    auto r = ctx.query(*q);
    if (!r.ok()) return Error{"error calling query: " + r.error().message};
    Value v;
    v.kind = Value::kSamples;
    v.samples = std::make_shared<const std::vector<QuerySample>>(std::move(*r));
    return v;
  }
  if (name == "first") {
    if (Status s = WantArgs(name, a, 1); !s.ok()) return Error{s.message()};
    auto q = AsSamples(a[0]);
    if (!q.ok()) return q.error();
    if ((*q)->empty())
      return Error{"error calling first: first() called on vector with no elements"};
    Value v;
    v.kind = Value::kSample;
    v.sample = std::shared_ptr<const QuerySample>(*q, &(**q)[0]);
    return v;
  }
  if (name == "value" || name == "strvalue") {
    if (Status s = WantArgs(name, a, 1); !s.ok()) return Error{s.message()};
    auto smp = AsSample(a[0]);
    if (!smp.ok()) return smp.error();
    if (name == "value") return MakeFloat((*smp)->value);
    return MakeString(std::string(tsdb::LabelValue((*smp)->labels, "__value__")));
  }
  if (name == "label") {
    if (Status s = WantArgs(name, a, 2); !s.ok()) return Error{s.message()};
    auto l = AsString(a[0]);
    if (!l.ok()) return l.error();
    auto smp = AsSample(a[1]);
    if (!smp.ok()) return smp.error();
    return MakeString(std::string(tsdb::LabelValue((*smp)->labels, *l)));
  }
  if (name == "sortByLabel") {
    if (Status s = WantArgs(name, a, 2); !s.ok()) return Error{s.message()};
    auto l = AsString(a[0]);
    if (!l.ok()) return l.error();
    auto q = AsSamples(a[1]);
    if (!q.ok()) return q.error();
    auto sorted = std::make_shared<std::vector<QuerySample>>(**q);
    std::stable_sort(sorted->begin(), sorted->end(),
                     [&](const QuerySample& x, const QuerySample& y) {
                       return tsdb::LabelValue(x.labels, *l) < tsdb::LabelValue(y.labels, *l);
                     });
    Value v;
    v.kind = Value::kSamples;
    v.samples = std::move(sorted);
    return v;
  }
  return Error{"function \"" + name + "\" not defined"};
}

}  // namespace gw::rules::tmpl
