// Reading docs/metrics.md from tests: the families a section documents, and whether an
// exposition text has a sample of a family. Integration tests check that what `serve` exports and
// what the page lists agree.
#ifndef GPUWARDEN_TESTS_SUPPORT_METRICS_DOC_H_
#define GPUWARDEN_TESTS_SUPPORT_METRICS_DOC_H_

#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace gw::testing {

// The family names in the tables of the docs/metrics.md section whose "## " heading starts with
// `heading` (e.g. "## Task layer"). Needs GW_SOURCE_DIR.
inline std::vector<std::string> DocumentedFamilies(const std::string& heading) {
  std::ifstream in(std::string(GW_SOURCE_DIR) + "/docs/metrics.md");
  std::vector<std::string> names;
  const std::regex row(R"(^\| `([a-z_:]+)` \| ([a-z]+) \|)");
  bool inside = false;
  for (std::string l; std::getline(in, l);) {
    if (l.rfind("## ", 0) == 0) inside = l.rfind(heading, 0) == 0;
    std::smatch m;
    if (inside && std::regex_search(l, m, row)) names.push_back(m[1]);
  }
  return names;
}

// Whether exposition `text` has a sample of `family` (a histogram counts by its _bucket series).
inline bool HasSampleOf(const std::string& text, const std::string& family) {
  for (const std::string& name : {family, family + "_bucket"}) {
    for (char next : {'{', ' '}) {
      const std::string start = name + next;
      if (text.rfind(start, 0) == 0 || text.find("\n" + start) != std::string::npos) return true;
    }
  }
  return false;
}

}  // namespace gw::testing

#endif  // GPUWARDEN_TESTS_SUPPORT_METRICS_DOC_H_
