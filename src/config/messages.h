// config/messages.h — how every configuration error names its place and quotes the file's text,
// shared by the sections' parsers (config.cpp, governance_config.cpp, diagnose_config.cpp,
// scrape_config.cpp): "FILE:LINE: key: what is wrong, got 'TEXT'".
#ifndef GPUWARDEN_CONFIG_MESSAGES_H_
#define GPUWARDEN_CONFIG_MESSAGES_H_

#include <yaml-cpp/yaml.h>

#include <string>

namespace gw::config {

// "FILE:LINE" of a node (lines counted from 1).
std::string Where(const std::string& file, const YAML::Node& node);

// Text from the file made safe for a one-line message: control bytes become \xNN.
std::string Printable(const std::string& text);

}  // namespace gw::config

#endif  // GPUWARDEN_CONFIG_MESSAGES_H_
