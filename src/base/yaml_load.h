// base/yaml_load.h — reading a YAML document the strict way every gpuwarden file is read: a syntax
// error or a key given twice in one mapping is refused with "FILE:LINE: what is wrong" (yaml-cpp
// keeps both pairs of a repeated key, and a walk over the tree would silently let one win).
// Header-only, for every module that reads YAML (config, rule unit tests, scenarios).
//
//   Expected<YAML::Node> root = LoadYamlStrict(text, path);
//   if (!root.ok()) return root.error();
#ifndef GPUWARDEN_BASE_YAML_LOAD_H_
#define GPUWARDEN_BASE_YAML_LOAD_H_

#include <yaml-cpp/yaml.h>

#include <string>

#include "base/error.h"
#include "base/yaml_error.h"
#include "base/yaml_keys.h"

namespace gw {

inline Expected<YAML::Node> LoadYamlStrict(const std::string& text, const std::string& file) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Error{file + ":" + std::to_string(e.mark.line + 1) + ": " + YamlErrorMessage(e)};
  }
  if (auto dup = FindDuplicateYamlKey(text)) return Error{DescribeDuplicateYamlKey(file, *dup)};
  return root;
}

}  // namespace gw

#endif  // GPUWARDEN_BASE_YAML_LOAD_H_
