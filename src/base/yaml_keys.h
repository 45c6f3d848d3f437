// base/yaml_keys.h — finding a key that appears twice in one YAML mapping.
//
// yaml-cpp's Node API keeps both pairs of a repeated key, and code that walks a mapping sees the
// second one overwrite the first without a word. This reads the text again with yaml-cpp's event
// parser, which reports every key with its line, so one linear pass (aliases are not expanded)
// finds the first repetition in document order. Header-only, for every module that reads YAML
// (each already links yaml-cpp, the simulator library included).
#ifndef GPUWARDEN_BASE_YAML_KEYS_H_
#define GPUWARDEN_BASE_YAML_KEYS_H_

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace gw {

struct DuplicateYamlKey {
  std::string key;
  int line = 0;        // 1-based: the repetition
  int column = 0;      // 1-based
  int first_line = 0;  // 1-based: where the key was first given in the same mapping
};

namespace yaml_keys_detail {

class DuplicateFinder : public YAML::EventHandler {
 public:
  std::vector<DuplicateYamlKey> found;
  size_t limit = 1;
  // Every mapping in document order (pre-order), with its keys and the nearest mapping around it.
  struct Mapping {
    int parent = -1;
    std::vector<std::pair<std::string, int>> keys;  // scalar keys with their 1-based lines
  };
  std::vector<Mapping> mappings;

  void OnDocumentStart(const YAML::Mark&) override { frames_.clear(); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { Node(mark, nullptr); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { Node(mark, nullptr); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string& value) override {
    Node(mark, &value);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    Node(mark, nullptr);
    const int around = frames_.empty() ? -1 : frames_.back().mapping;
    frames_.emplace_back();
    frames_.back().mapping = around;
  }
  void OnSequenceEnd() override { Pop(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    Node(mark, nullptr);
    Mapping m;
    m.parent = frames_.empty() ? -1 : frames_.back().mapping;
    mappings.push_back(std::move(m));
    frames_.emplace_back();
    frames_.back().is_map = true;
    frames_.back().mapping = static_cast<int>(mappings.size()) - 1;
  }
  void OnMapEnd() override { Pop(); }

 private:
  struct Frame {
    bool is_map = false;
    bool next_is_key = true;
    int mapping = -1;                              // this mapping's index, or the one around
    std::map<std::string, int, std::less<>> keys;  // key -> 1-based line
  };

  // A node begins inside the innermost collection: in a mapping, nodes alternate key, value.
  void Node(const YAML::Mark& mark, const std::string* scalar) {
    if (frames_.empty() || !frames_.back().is_map) return;
    Frame& f = frames_.back();
    const bool is_key = f.next_is_key;
    f.next_is_key = !f.next_is_key;
    if (!is_key || scalar == nullptr) return;  // complex keys are not compared
    const int line = mark.line + 1;
    mappings[static_cast<size_t>(f.mapping)].keys.emplace_back(*scalar, line);
    if (found.size() >= limit) return;
    auto [it, inserted] = f.keys.emplace(*scalar, line);
    if (!inserted) found.push_back(DuplicateYamlKey{*scalar, line, mark.column + 1, it->second});
  }
  void Pop() {
    if (!frames_.empty()) frames_.pop_back();
  }

  std::vector<Frame> frames_;
};

}  // namespace yaml_keys_detail

// The keys given again in the same mapping, in document order (at most `limit`), in the first
// document of `text` (the one YAML::Load reads). Text that is not YAML gives what was found
// before the error (the caller's own load reports the error).
inline std::vector<DuplicateYamlKey> FindDuplicateYamlKeys(std::string_view text,
                                                           size_t limit = 100) {
  std::istringstream in{std::string(text)};
  yaml_keys_detail::DuplicateFinder finder;
  finder.limit = limit;
  try {
    // The first document only, as YAML::Load reads (after a document that loads, asking the
    // parser for more can spin on some malformed tails).
    YAML::Parser parser(in);
    parser.HandleNextDocument(finder);
  } catch (const YAML::Exception&) {
  }
  return std::move(finder.found);
}

// go-yaml's strict decoding (what promtool uses), in its words and order: for each mapping in
// document order, each pair of equal keys as "line J: mapping key \"k\" already defined at line
// I" (I before J, ordered by I then J); a mapping with duplicates is not decoded further, so
// nothing inside it is reported. At most `limit` lines.
inline std::vector<std::string> GoYamlDuplicateKeyErrors(std::string_view text,
                                                         size_t limit = 100) {
  std::istringstream in{std::string(text)};
  yaml_keys_detail::DuplicateFinder finder;
  finder.limit = 0;
  try {
    YAML::Parser parser(in);
    parser.HandleNextDocument(finder);  // the first document, as YAML::Load
  } catch (const YAML::Exception&) {
    return {};  // not YAML: the caller's load reports it
  }
  std::vector<std::string> out;
  std::vector<char> pruned(finder.mappings.size(), 0);  // inside a mapping with duplicates
  for (size_t m = 0; m < finder.mappings.size() && out.size() < limit; ++m) {
    const auto& mapping = finder.mappings[m];
    if (mapping.parent >= 0 && pruned[static_cast<size_t>(mapping.parent)]) {
      pruned[m] = 1;
      continue;
    }
    std::map<std::string_view, std::vector<size_t>> positions;
    for (size_t i = 0; i < mapping.keys.size(); ++i) positions[mapping.keys[i].first].push_back(i);
    for (size_t i = 0; i < mapping.keys.size() && out.size() < limit; ++i) {
      const std::vector<size_t>& same = positions[mapping.keys[i].first];
      for (size_t j : same) {
        if (j <= i) continue;
        pruned[m] = 1;
        out.push_back("line " + std::to_string(mapping.keys[j].second) + ": mapping key \"" +
                      mapping.keys[i].first + "\" already defined at line " +
                      std::to_string(mapping.keys[i].second));
        if (out.size() >= limit) break;
      }
    }
  }
  return out;
}

// The first key given twice in one mapping; nullopt if none.
inline std::optional<DuplicateYamlKey> FindDuplicateYamlKey(std::string_view text) {
  std::vector<DuplicateYamlKey> found = FindDuplicateYamlKeys(text, 1);
  if (found.empty()) return std::nullopt;
  return found.front();
}

// "FILE:LINE: duplicate key \"x\" (first at line N)", the wording of gpuwarden's own files.
// The key is shown on one line: quotes, backslashes and control bytes are escaped.
inline std::string DescribeDuplicateYamlKey(const std::string& file, const DuplicateYamlKey& d) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string key;
  for (unsigned char c : d.key) {
    if (c == '"' || c == '\\') {
      key += '\\';
      key += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      key += "\\x";
      key += kHex[c >> 4];
      key += kHex[c & 0xf];
    } else {
      key += static_cast<char>(c);
    }
  }
  return file + ":" + std::to_string(d.line) + ": duplicate key \"" + key + "\" (first at line " +
         std::to_string(d.first_line) + ")";
}

}  // namespace gw

#endif  // GPUWARDEN_BASE_YAML_KEYS_H_
