#include "jobs/slurm_hostlist.h"

#include <algorithm>
#include <string>

namespace gw::jobs {

namespace {

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Whether `number` (digits) falls in one bracket item: "3", "01-04".
bool InRange(std::string_view item, std::string_view number) {
  size_t dash = item.find('-');
  std::string_view lo = item.substr(0, dash);
  std::string_view hi = dash == std::string_view::npos ? lo : item.substr(dash + 1);
  if (!AllDigits(lo) || !AllDigits(hi) || !AllDigits(number) || lo.size() > 18 || hi.size() > 18 ||
      number.size() > 18)
    return false;
  if (lo.size() > 1 && lo[0] == '0' && number.size() != lo.size()) return false;  // zero-padded
  auto value = [](std::string_view d) { return std::stoull(std::string(d)); };
  unsigned long long n = value(number);
  return n >= value(lo) && n <= value(hi);
}

}  // namespace

bool HostListContains(std::string_view list, std::string_view host) {
  if (host.empty()) return false;
  size_t begin = 0;
  while (begin <= list.size()) {
    // Items are separated by commas outside brackets.
    size_t end = begin;
    int depth = 0;
    while (end < list.size() && (list[end] != ',' || depth > 0)) {
      if (list[end] == '[') ++depth;
      if (list[end] == ']') --depth;
      ++end;
    }
    std::string_view item = list.substr(begin, end - begin);
    size_t open = item.find('[');
    size_t close = item.find(']');
    if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
      if (item == host) return true;
    } else {
      std::string_view prefix = item.substr(0, open), suffix = item.substr(close + 1);
      std::string_view inside = item.substr(open + 1, close - open - 1);
      if (host.size() > prefix.size() + suffix.size() && host.substr(0, prefix.size()) == prefix &&
          host.substr(host.size() - suffix.size()) == suffix) {
        std::string_view number =
            host.substr(prefix.size(), host.size() - prefix.size() - suffix.size());
        size_t r = 0;
        while (r <= inside.size()) {
          size_t comma = inside.find(',', r);
          if (comma == std::string_view::npos) comma = inside.size();
          if (InRange(inside.substr(r, comma - r), number)) return true;
          r = comma + 1;
        }
      }
    }
    begin = end + 1;
  }
  return false;
}

}  // namespace gw::jobs
