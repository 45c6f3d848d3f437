// base/glob.h — shell-style wildcard matching for names in configuration: '*' matches any run of
// characters (the empty one too), '?' exactly one; everything else matches itself,
// case-sensitively. No character classes, no escapes.
//
//   GlobMatch("nvidia.com/mig-*", "nvidia.com/mig-3g.40gb")   // true
//   GlobMatch("notebook-?", "notebook-12")                    // false
//
// Iterative, with one backtrack point (the last '*'): linear in practice, never recursive, so any
// pattern is safe. Pure; any thread.
#ifndef GPUWARDEN_BASE_GLOB_H_
#define GPUWARDEN_BASE_GLOB_H_

#include <cstddef>
#include <string_view>

namespace gw {

inline bool GlobMatch(std::string_view pattern, std::string_view text) {
  std::size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace gw

#endif  // GPUWARDEN_BASE_GLOB_H_
