#include "base/error.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>

namespace gw {

bool ParseDurationSeconds(const std::string& text, double* seconds) {
  if (text.empty()) return false;
  // A bare number means seconds (as Prometheus' API accepts).
  char* end = nullptr;
  double bare = std::strtod(text.c_str(), &end);
  if (end && *end == '\0') {
    if (!std::isfinite(bare) || bare < 0) return false;
    *seconds = bare;
    return true;
  }
  struct Unit {
    const char* name;
    double seconds;
  };
  static constexpr Unit kUnits[] = {{"y", 365 * 86400.0}, {"w", 7 * 86400.0}, {"d", 86400.0},
                                    {"h", 3600.0},        {"m", 60.0},        {"s", 1.0},
                                    {"ms", 0.001}};
  double total = 0;
  size_t i = 0;
  int last_unit = -1;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
      ++i;
    if (i == start) return false;
    double number = std::strtod(text.substr(start, i - start).c_str(), nullptr);
    size_t ustart = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string unit = text.substr(ustart, i - ustart);
    int found = -1;
    for (int u = 0; u < static_cast<int>(std::size(kUnits)); ++u)
      if (unit == kUnits[u].name) found = u;
    if (found < 0 || found <= last_unit) return false;  // unknown, repeated or out of order
    last_unit = found;
    total += number * kUnits[found].seconds;
  }
  *seconds = total;
  return true;
}

std::string FormatDuration(double seconds) {
  long long ms = std::llround(seconds * 1000.0);
  if (ms == 0) return "0s";
  std::string out;
  struct Unit {
    const char* name;
    long long ms;
  };
  static constexpr Unit kUnits[] = {{"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1}};
  for (const Unit& u : kUnits) {
    if (ms >= u.ms) {
      out += std::to_string(ms / u.ms) + u.name;
      ms %= u.ms;
    }
  }
  return out;
}

}  // namespace gw
