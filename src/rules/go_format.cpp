// Go's fmt formatting of numbers and strings, as far as templates and promtool output need it.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>

#include "rules/template.h"

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

}  // namespace gw::rules
