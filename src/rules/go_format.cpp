// Go's fmt as far as templates and promtool output need it: floats in every verb
// (FormatGoFloat) and the template function printf (GoSprintf: flags, width, precision, verbs,
// and Go's %!verb(type=value) / MISSING / EXTRA / NOVERB reports).
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>

#include "rules/template.h"
#include "rules/template_funcs.h"

namespace gw::rules {
namespace {

// Shortest round-trip digits of |v| (v finite, non-zero) and the decimal exponent of the first.
void ShortestDigits(double v, std::string* digits, int* exp10) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, std::fabs(v), std::chars_format::scientific);
  std::string s(buf, r.ptr);
  size_t e = s.find('e');
  std::string mant = s.substr(0, e);
  *exp10 = std::stoi(s.substr(e + 1));
  digits->clear();
  for (char c : mant)
    if (c != '.') digits->push_back(c);
}

std::string ExpSuffix(int exp, char e) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%c%c%02d", e, exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  return buf;
}

// Go's %e/%E with shortest digits.
std::string ShortestE(double v, char e) {
  std::string digits;
  int exp = 0;
  ShortestDigits(v, &digits, &exp);
  std::string out = v < 0 ? "-" : "";
  out += digits[0];
  if (digits.size() > 1) out += "." + digits.substr(1);
  return out + ExpSuffix(exp, e);
}

// Go's %g with a precision (printf "%.4g"): C's %g, but Go writes at least two exponent digits,
// which C does too; Go drops the '+' never. C and Go agree here except for the shortest case.
std::string PrecisionG(double v, int prec, char g) {
  char fmt[16], buf[512];
  std::snprintf(fmt, sizeof fmt, "%%.%d%c", prec == 0 ? 1 : prec, g);
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

}  // namespace

std::string FormatGoFloat(double v, char verb, int precision) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[512];
  switch (verb) {
    case 'f':
    case 'F':
      if (precision < 0) {
        // Shortest digits in %f form.
        if (v == 0) return std::signbit(v) ? "-0" : "0";
        auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
        return std::string(buf, r.ptr);
      }
      std::snprintf(buf, sizeof buf, "%.*f", precision, v);
      return buf;
    case 'e':
    case 'E':
      if (precision < 0) {
        if (v == 0) return std::string(std::signbit(v) ? "-" : "") + "0" + ExpSuffix(0, verb);
        return ShortestE(v, verb);
      }
      std::snprintf(buf, sizeof buf, verb == 'e' ? "%.*e" : "%.*E", precision, v);
      return buf;
    default: {  // 'v', 'g', 'G'
      char e = verb == 'G' ? 'E' : 'e';
      if (precision >= 0) return PrecisionG(v, precision, verb == 'G' ? 'G' : 'g');
      if (v == 0) return std::signbit(v) ? "-0" : "0";
      std::string digits;
      int exp = 0;
      ShortestDigits(v, &digits, &exp);
      // Go's shortest %g/%v switch to %e when exp < -4 || exp >= 6 (fmt: "if precision was the
      // shortest possible, use precision 6 for this decision"), so `{{ 1e6 }}` prints 1e+06.
      const int eprec = 6;
      if (exp < -4 || exp >= eprec) return ShortestE(v, e);
      std::string out = v < 0 ? "-" : "";
      if (exp < 0) {
        out += "0." + std::string(-exp - 1, '0') + digits;
      } else if (exp + 1 >= static_cast<int>(digits.size())) {
        out += digits + std::string(exp + 1 - digits.size(), '0');
      } else {
        out += digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
      }
      return out;
    }
  }
}

namespace tmpl {
namespace {

// One printf verb applied to one value, Go style.
std::string BadVerb(char verb, const Value& v) {
  if (v.kind == Value::kNil) return std::string("%!") + verb + "(<nil>)";
  return std::string("%!") + verb + "(" + TypeName(v) + "=" + Sprint(v) + ")";
}

std::string Pad(std::string s, int width, bool minus, bool zero) {
  if (width <= 0 || static_cast<int>(s.size()) >= width) return s;
  size_t n = static_cast<size_t>(width) - s.size();
  if (minus) return s + std::string(n, ' ');
  if (zero) {
    size_t sign = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
    return s.substr(0, sign) + std::string(n, '0') + s.substr(sign);
  }
  return std::string(n, ' ') + s;
}

std::string FormatOne(char verb, const Value& v, bool plus, bool sharp, int prec) {
  switch (verb) {
    case 'v':
      if (v.kind == Value::kFloat) {
        std::string s = FormatGoFloat(v.f, 'g', prec);
        return plus && v.f >= 0 ? "+" + s : s;
      }
      return v.kind == Value::kNil ? "<nil>" : Sprint(v);
    case 's':
      if (v.kind == Value::kString) return prec >= 0 ? v.s.substr(0, prec) : v.s;
      if (v.kind == Value::kMap || v.kind == Value::kSample || v.kind == Value::kSamples)
        return Sprint(v);
      return BadVerb(verb, v);
    case 'q':
      if (v.kind == Value::kString) return GoQuote(v.s);
      if (v.kind == Value::kInt) return "'" + std::string(1, static_cast<char>(v.i)) + "'";
      return BadVerb(verb, v);
    case 'd':
      if (v.kind == Value::kInt) return (plus && v.i >= 0 ? "+" : "") + std::to_string(v.i);
      return BadVerb(verb, v);
    case 'c':
      if (v.kind == Value::kInt) return std::string(1, static_cast<char>(v.i));
      return BadVerb(verb, v);
    case 't':
      if (v.kind == Value::kBool) return v.b ? "true" : "false";
      return BadVerb(verb, v);
    case 'x':
    case 'X': {
      const char* digits = verb == 'x' ? "0123456789abcdef" : "0123456789ABCDEF";
      if (v.kind == Value::kString) {
        std::string out;
        for (unsigned char c : v.s) {
          out += digits[c >> 4];
          out += digits[c & 15];
        }
        return out;
      }
      if (v.kind == Value::kInt) {
        char buf[32];
        std::snprintf(buf, sizeof buf, verb == 'x' ? "%llx" : "%llX",
                      static_cast<unsigned long long>(v.i < 0 ? -v.i : v.i));
        return (v.i < 0 ? "-" : "") + std::string(sharp ? (verb == 'x' ? "0x" : "0X") : "") + buf;
      }
      return BadVerb(verb, v);
    }
    case 'f':
    case 'F':
    case 'e':
    case 'E':
    case 'g':
    case 'G': {
      if (v.kind != Value::kFloat) return BadVerb(verb, v);
      int p = prec;
      if (p < 0 && verb != 'g' && verb != 'G') p = 6;
      std::string s = FormatGoFloat(v.f, verb, p);
      return plus && v.f >= 0 && !std::isnan(v.f) && s[0] != '+' ? "+" + s : s;
    }
    default:
      return BadVerb(verb, v);
  }
}

}  // namespace

std::string GoSprintf(const std::string& format, const std::vector<Value>& args) {
  std::string out;
  size_t argi = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    char c = format[i];
    if (c != '%') {
      out += c;
      continue;
    }
    if (++i >= format.size()) {
      out += "%!(NOVERB)";
      break;
    }
    bool minus = false, plus = false, zero = false, sharp = false, space = false;
    for (; i < format.size(); ++i) {
      char f = format[i];
      if (f == '-')
        minus = true;
      else if (f == '+')
        plus = true;
      else if (f == '0')
        zero = true;
      else if (f == '#')
        sharp = true;
      else if (f == ' ')
        space = true;
      else
        break;
    }
    (void)space;
    int width = -1, prec = -1;
    // Go's fmt refuses widths and precisions beyond 1e6 (tooLarge): from an argument they are
    // ignored; written in the format, the rest of the format is dropped (then "%!(NOVERB)").
    constexpr int kTooLarge = 1000000;
    auto number = [&](int* out_n) {
      if (i < format.size() && format[i] == '*') {
        ++i;
        if (argi < args.size() && args[argi].kind == Value::kInt && args[argi].i <= kTooLarge &&
            args[argi].i >= -kTooLarge)
          *out_n = static_cast<int>(args[argi].i);
        ++argi;
        return;
      }
      if (i < format.size() && std::isdigit(static_cast<unsigned char>(format[i]))) {
        *out_n = 0;
        while (i < format.size() && std::isdigit(static_cast<unsigned char>(format[i]))) {
          if (*out_n > kTooLarge) {
            *out_n = -1;
            i = format.size();
            return;
          }
          *out_n = *out_n * 10 + (format[i++] - '0');
        }
      }
    };
    number(&width);
    if (i < format.size() && format[i] == '.') {
      ++i;
      prec = 0;
      number(&prec);
    }
    if (i >= format.size()) {
      out += "%!(NOVERB)";
      break;
    }
    char verb = format[i];
    if (verb == '%') {
      out += '%';
      continue;
    }
    if (argi >= args.size()) {
      out += std::string("%!") + verb + "(MISSING)";
      continue;
    }
    const Value& v = args[argi++];
    bool numeric = v.kind == Value::kInt || v.kind == Value::kFloat;
    out += Pad(FormatOne(verb, v, plus, sharp, prec), width, minus, zero && numeric);
  }
  if (argi < args.size()) {
    out += "%!(EXTRA ";
    for (size_t k = argi; k < args.size(); ++k)
      out += (k > argi ? ", " : "") + TypeName(args[k]) + "=" + Sprint(args[k]);
    out += ")";
  }
  return out;
}

}  // namespace tmpl
}  // namespace gw::rules
