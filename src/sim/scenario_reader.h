// Internal to the scenario parser (scenario_parse*.cpp): a YAML map reader whose every rejection
// names the line and the path ("gpus[0].mig: ..."), thrown as ParseFailure and turned into
// "FILE:LINE: what is wrong" by ParseScenario.
#ifndef GPUWARDEN_SIM_SCENARIO_READER_H_
#define GPUWARDEN_SIM_SCENARIO_READER_H_

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "sim/scenario.h"

namespace gw::sim::parse {

// Thrown inside the parser only; ParseScenario turns it into an Error value.
struct ParseFailure {
  int line;
  std::string message;
};

inline int LineOf(const YAML::Node& node, int fallback) {
  if (!node.IsDefined()) return fallback;  // a missing key: Mark() would throw
  const YAML::Mark mark = node.Mark();
  return mark.line >= 0 ? mark.line + 1 : fallback;
}

// A map node being read: remembers its line and path for messages, and rejects unknown keys.
class MapReader {
 public:
  MapReader(const YAML::Node& node, std::string path, int line,
            std::initializer_list<std::string_view> allowed)
      : node_(node), path_(std::move(path)), line_(LineOf(node, line)) {
    if (!node.IsMap()) Fail(line_, "expected a mapping");
    for (auto it = node.begin(); it != node.end(); ++it) {
      const std::string key = it->first.as<std::string>();
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        std::string expected;
        for (std::string_view a : allowed)
          expected += (expected.empty() ? "" : ", ") + std::string(a);
        Fail(LineOf(it->first, line_),
             "unknown key '" + key + "' (expected one of: " + expected + ")");
      }
    }
  }

  [[noreturn]] void Fail(int line, const std::string& what) const {
    throw ParseFailure{line, (path_.empty() ? "" : path_ + ": ") + what};
  }
  [[noreturn]] void Fail(const std::string& key, const std::string& what) const {
    Fail(LineOf(node_[key], line_), key + ": " + what);
  }

  bool Has(const std::string& key) const { return static_cast<bool>(node_[key]); }
  YAML::Node Get(const std::string& key) const { return node_[key]; }
  int LineOfKey(const std::string& key) const { return LineOf(node_[key], line_); }
  int line() const { return line_; }
  const std::string& path() const { return path_; }

  std::string String(const std::string& key, std::string fallback) const {
    if (!Has(key)) return fallback;
    const YAML::Node value = node_[key];
    if (!value.IsScalar()) Fail(key, "expected a string");
    return value.Scalar();
  }

  double Number(const std::string& key, double fallback, double min, double max) const {
    if (!Has(key)) return fallback;
    const YAML::Node value = node_[key];
    double number = 0;
    if (!value.IsScalar() || !YAML::convert<double>::decode(value, number) ||
        !std::isfinite(number))
      Fail(key, "expected a number, got '" + (value.IsScalar() ? value.Scalar() : "?") + "'");
    if (number < min || number > max) {
      std::ostringstream range;
      range << "must be between " << min << " and " << max << ", got " << value.Scalar();
      Fail(key, range.str());
    }
    return number;
  }

  std::uint64_t Unsigned(const std::string& key, std::uint64_t fallback, std::uint64_t max) const {
    if (!Has(key)) return fallback;
    const YAML::Node value = node_[key];
    std::uint64_t number = 0;
    const std::string text = value.IsScalar() ? value.Scalar() : "";
    if (text.empty() || text[0] == '-' || !YAML::convert<std::uint64_t>::decode(value, number))
      Fail(key, "expected a non-negative integer, got '" + text + "'");
    if (number > max) Fail(key, "must be at most " + std::to_string(max) + ", got " + text);
    return number;
  }

  VirtualUs Duration(const std::string& key, VirtualUs fallback) const {
    if (!Has(key)) return fallback;
    const YAML::Node value = node_[key];
    VirtualUs us = 0;
    if (!value.IsScalar() || !ParseDurationUs(value.Scalar(), &us))
      Fail(key, "expected a duration such as 30s, 500ms, 2m or 1h30m, got '" +
                    (value.IsScalar() ? value.Scalar() : "?") + "'");
    return us;
  }

 private:
  YAML::Node node_;
  std::string path_;
  int line_;
};

// `mig:` of a GPU (scenario_parse_mig.cpp): its layouts, instances placed and sorted by GPU
// instance id, explicit UUIDs kept, the others left empty for AssignMigUuids.
std::vector<MigLayout> ParseMig(const YAML::Node& node, const std::string& path, int line,
                                const GpuModel& model);
// Gives every instance without a UUID one derived from (seed, GPU index, layout, instance id);
// an instance that a re-partition keeps (same id and profile) keeps its UUID.
void AssignMigUuids(std::uint64_t seed, GpuSpec* gpu);
// The same shape as a GPU UUID with another prefix ("GPU-", "MIG-").
std::string MakeUuid(std::string_view prefix, std::uint64_t a, std::uint64_t b);

}  // namespace gw::sim::parse

#endif  // GPUWARDEN_SIM_SCENARIO_READER_H_
