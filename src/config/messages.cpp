#include "config/messages.h"

#include <cstdio>

namespace gw::config {

std::string Where(const std::string& file, const YAML::Node& node) {
  return file + ":" + std::to_string(node.Mark().line + 1);
}

std::string At(const std::string& file, const YAML::Node& node) {
  return Where(file, node) + ": ";
}

Status ScalarText(const std::string& file, const YAML::Node& node, const std::string& key,
                  std::string* out) {
  if (!node.IsScalar()) return Error{At(file, node) + key + ": expected a single value"};
  *out = node.Scalar();
  return Status::Ok();
}

Status PositiveSeconds(const std::string& file, const YAML::Node& node, const std::string& key,
                       double* out) {
  std::string text;
  if (Status s = ScalarText(file, node, key, &text); !s.ok()) return s;
  if (!ParseDurationSeconds(text, out) || !(*out > 0))
    return Error{At(file, node) + key + ": expected a positive duration such as 15s, got '" +
                 Printable(text) + "'"};
  return Status::Ok();
}

std::string Printable(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace gw::config
