// Literals of PromQL: numbers as Go's strconv parses them, Prometheus durations, and regex
// validation with Go's error wording.
#include <re2/re2.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

#include "promql/lexer.h"
#include "promql/parser.h"

namespace gw::promql {

bool ParseNumberLiteral(const std::string& text, double* out) {
  std::string lower;
  for (char c : text)
    lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (lower == "inf") {
    *out = HUGE_VAL;
    return true;
  }
  if (lower == "nan") {
    *out = std::nan("");
    return true;
  }
  // Go's strconv.ParseInt(s, 0, 64) first: hex with 0x, octal with a leading 0.
  errno = 0;
  char* end = nullptr;
  long long i = std::strtoll(text.c_str(), &end, 0);
  if (errno == 0 && end == text.c_str() + text.size() && !text.empty()) {
    *out = static_cast<double>(i);
    return true;
  }
  errno = 0;
  double d = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || text.empty()) return false;
  if (errno == ERANGE && std::isinf(d)) return false;
  *out = d;
  return true;
}

// Go's regexp/syntax wording for a regex that does not compile, "" if it compiles. Prometheus
// compiles matchers as ^(?:re)$.
std::string RegexError(const std::string& re) {
  RE2::Options opts;
  opts.set_log_errors(false);
  RE2 compiled("^(?:" + re + ")$", opts);
  if (compiled.ok()) return "";
  const char* what = "invalid regular expression";
  switch (compiled.error_code()) {
    case RE2::ErrorMissingParen:
      what = "missing closing )";
      break;
    case RE2::ErrorMissingBracket:
      what = "missing closing ]";
      break;
    case RE2::ErrorBadEscape:
      what = "invalid escape sequence";
      break;
    case RE2::ErrorBadCharClass:
      what = "invalid character class";
      break;
    case RE2::ErrorBadCharRange:
      what = "invalid character class range";
      break;
    case RE2::ErrorRepeatArgument:
      what = "missing argument to repetition operator";
      break;
    case RE2::ErrorRepeatSize:
      what = "invalid repeat count";
      break;
    case RE2::ErrorRepeatOp:
      what = "invalid nested repetition operator";
      break;
    case RE2::ErrorBadPerlOp:
      what = "invalid or unsupported Perl syntax";
      break;
    case RE2::ErrorBadUTF8:
      what = "invalid UTF-8";
      break;
    case RE2::ErrorBadNamedCapture:
      what = "invalid named capture";
      break;
    case RE2::ErrorUnexpectedParen:
      what = "unexpected )";
      break;
    case RE2::ErrorTrailingBackslash:
      what = "trailing backslash at end of expression";
      break;
    default:
      break;
  }
  return std::string("error parsing regexp: ") + what + ": `" + compiled.error_arg() + "`";
}

bool ParsePromDuration(std::string_view text, int64_t* ms) {
  static const std::pair<const char*, int64_t> kUnits[] = {{"y", 365LL * 24 * 3600 * 1000},
                                                           {"w", 7LL * 24 * 3600 * 1000},
                                                           {"d", 24LL * 3600 * 1000},
                                                           {"h", 3600LL * 1000},
                                                           {"m", 60LL * 1000},
                                                           {"s", 1000},
                                                           {"ms", 1}};
  if (text.empty()) return false;
  // A bare number is seconds (Prometheus accepts "[300]" style only as a float duration).
  bool all_digits = text.find_first_not_of("0123456789.") == std::string_view::npos;
  if (all_digits) {
    const double v = std::strtod(std::string(text).c_str(), nullptr) * 1000;
    if (!(v < 9.2e18)) return false;  // beyond int64 milliseconds (about 292 million years)
    *ms = static_cast<int64_t>(std::llround(v));
    return true;
  }
  size_t i = 0, next_unit = 0;
  int64_t total = 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    if (i == start) return false;
    int64_t n = std::strtoll(std::string(text.substr(start, i - start)).c_str(), nullptr, 10);
    size_t ustart = i;
    while (i < text.size() && !(text[i] >= '0' && text[i] <= '9')) ++i;
    std::string_view unit = text.substr(ustart, i - ustart);
    size_t u = next_unit;
    while (u < std::size(kUnits) && unit != kUnits[u].first) ++u;
    if (u == std::size(kUnits)) return false;  // unknown or out of order
    int64_t part = 0;
    if (__builtin_mul_overflow(n, kUnits[u].second, &part) ||
        __builtin_add_overflow(total, part, &total)) {
      return false;  // beyond int64 milliseconds
    }
    next_unit = u + 1;
  }
  *ms = total;
  return true;
}

}  // namespace gw::promql
