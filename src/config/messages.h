// config/messages.h — how every configuration error names its place and quotes the file's text,
// shared by the sections' parsers (config.cpp, governance_config.cpp, diagnose_config.cpp,
// scrape_config.cpp): "FILE:LINE: key: what is wrong, got 'TEXT'".
#ifndef GPUWARDEN_CONFIG_MESSAGES_H_
#define GPUWARDEN_CONFIG_MESSAGES_H_

#include <yaml-cpp/yaml.h>

#include <string>

#include "base/error.h"

namespace gw::config {

// "FILE:LINE" of a node (lines counted from 1).
std::string Where(const std::string& file, const YAML::Node& node);

// "FILE:LINE: " before a message about `node`.
std::string At(const std::string& file, const YAML::Node& node);

// A scalar's text into *out; "FILE:LINE: key: expected a single value" for a list or mapping.
Status ScalarText(const std::string& file, const YAML::Node& node, const std::string& key,
                  std::string* out);

// A positive duration ("15s", "500ms") in seconds; "FILE:LINE: key: expected a positive duration
// such as 15s, got 'TEXT'" otherwise.
Status PositiveSeconds(const std::string& file, const YAML::Node& node, const std::string& key,
                       double* out);

// Text from the file made safe for a one-line message: control bytes become \xNN.
std::string Printable(const std::string& text);

}  // namespace gw::config

#endif  // GPUWARDEN_CONFIG_MESSAGES_H_
