// base/yaml_error.h — the words for a YAML parse error.
//
// yaml-cpp refuses a document nested too deeply (its recursion guard, about 500 levels of block
// or flow collections) with the message "bad file", which says nothing of the cause. This names
// it; every other error keeps yaml-cpp's own message. Header-only, for every module that reads
// YAML (docs/limits.md).
#ifndef GPUWARDEN_BASE_YAML_ERROR_H_
#define GPUWARDEN_BASE_YAML_ERROR_H_

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/exceptions.h>

#include <string>

namespace gw {

inline std::string YamlErrorMessage(const YAML::Exception& e) {
  if (dynamic_cast<const YAML::DeepRecursion*>(&e) != nullptr)
    return "nested too deeply: more than " +
           std::to_string(static_cast<const YAML::DeepRecursion&>(e).depth() - 1) +
           " levels of mappings and sequences (the YAML reader's limit)";
  return e.msg;
}

}  // namespace gw

#endif  // GPUWARDEN_BASE_YAML_ERROR_H_
