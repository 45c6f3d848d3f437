#include "http/prom_format.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <ctime>

#include "promql/parser.h"

namespace gw::http {

void AppendPromValue(std::string* out, double v) {
  if (std::isnan(v)) {
    *out += "NaN";
    return;
  }
  if (std::isinf(v)) {
    *out += v > 0 ? "+Inf" : "-Inf";
    return;
  }
  double abs = std::fabs(v);
  char buffer[400];  // fixed notation of 1e21 needs 22 digits; of 1e-6 shortest needs < 30
  auto format = (abs != 0 && (abs < 1e-6 || abs >= 1e21)) ? std::chars_format::scientific
                                                          : std::chars_format::fixed;
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v, format);
  if (ec != std::errc()) {
    *out += "NaN";
    return;
  }
  out->append(buffer, end);
}

void AppendPromTimestamp(std::string* out, int64_t t_ms) {
  // Seconds, then ".mmm" when the milliseconds are not zero; no allocation (once per point).
  char buffer[32];
  char* p = buffer;
  uint64_t ms = static_cast<uint64_t>(t_ms);
  if (t_ms < 0) {
    *p++ = '-';
    ms = 0 - ms;
  }
  p = std::to_chars(p, buffer + sizeof buffer, ms / 1000).ptr;
  if (const auto fraction = static_cast<unsigned>(ms % 1000); fraction != 0) {
    p[0] = '.';
    p[1] = static_cast<char>('0' + fraction / 100);
    p[2] = static_cast<char>('0' + fraction / 10 % 10);
    p[3] = static_cast<char>('0' + fraction % 10);
    p += 4;
  }
  out->append(buffer, p);
}

namespace {

bool ParseFloatSeconds(std::string_view text, double* seconds) {
  if (text.empty()) return false;
  std::string s(text);
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return false;
  if (!std::isfinite(v)) return false;
  *seconds = v;
  return true;
}

int Digits(std::string_view s, size_t pos, size_t n, bool* ok) {
  int v = 0;
  if (pos + n > s.size()) {
    *ok = false;
    return 0;
  }
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') {
      *ok = false;
      return 0;
    }
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

// RFC 3339: 2006-01-02T15:04:05[.fraction](Z|+hh:mm|-hh:mm)
bool ParseRfc3339(std::string_view s, int64_t* t_ms) {
  bool ok = true;
  if (s.size() < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') ||
      s[13] != ':' || s[16] != ':')
    return false;
  std::tm tm{};
  tm.tm_year = Digits(s, 0, 4, &ok) - 1900;
  tm.tm_mon = Digits(s, 5, 2, &ok) - 1;
  tm.tm_mday = Digits(s, 8, 2, &ok);
  tm.tm_hour = Digits(s, 11, 2, &ok);
  tm.tm_min = Digits(s, 14, 2, &ok);
  tm.tm_sec = Digits(s, 17, 2, &ok);
  if (!ok || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
      tm.tm_min > 59 || tm.tm_sec > 60)
    return false;
  size_t pos = 19;
  int64_t ms = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    size_t start = pos;
    int64_t scale = 100;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      ms += (s[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == start) return false;
  }
  int64_t offset_s = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int sign = s[pos] == '-' ? -1 : 1;
    if (pos + 6 > s.size() || s[pos + 3] != ':') return false;
    offset_s = sign * (Digits(s, pos + 1, 2, &ok) * 3600 + Digits(s, pos + 4, 2, &ok) * 60);
    pos += 6;
  } else {
    return false;
  }
  if (!ok || pos != s.size()) return false;
  time_t secs = timegm(&tm);
  *t_ms = (static_cast<int64_t>(secs) - offset_s) * 1000 + ms;
  return true;
}

}  // namespace

bool ParsePromTime(std::string_view text, int64_t* t_ms) {
  double seconds = 0;
  if (ParseFloatSeconds(text, &seconds)) {
    // Prometheus splits integer and fractional seconds and rounds the fraction to ms.
    double whole = std::trunc(seconds);
    if (std::fabs(whole) > 9.2e15) return false;
    *t_ms = static_cast<int64_t>(whole) * 1000 +
            static_cast<int64_t>(std::llround((seconds - whole) * 1000));
    return true;
  }
  return ParseRfc3339(text, t_ms);
}

bool ParsePromDuration(std::string_view text, int64_t* ms) {
  double seconds = 0;
  if (ParseFloatSeconds(text, &seconds)) {
    double v = seconds * 1000;
    if (v < 0 || v > 9.2e18) return false;
    *ms = static_cast<int64_t>(std::llround(v));
    return true;
  }
  // Units (ms s m h d w y): the PromQL lexer's own parser, so the API and the language agree.
  return promql::ParsePromDuration(text, ms) && *ms >= 0;
}

}  // namespace gw::http
