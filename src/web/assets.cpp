#include "web/assets.h"

#include <cstdint>
#include <cstdio>

namespace gw::web {

namespace {

constexpr uint64_t kFnvOffset = 14695981039346656037ULL;
constexpr uint64_t kFnvPrime = 1099511628211ULL;

uint64_t Fnv1a(uint64_t h, std::string_view bytes) {
  for (char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= kFnvPrime;
  }
  return h;
}

std::string Hex(uint64_t h, int digits) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return std::string(buf, static_cast<size_t>(digits));
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

std::string_view ContentTypeFor(std::string_view name) {
  if (EndsWith(name, ".js")) return "text/javascript; charset=utf-8";
  if (EndsWith(name, ".css")) return "text/css; charset=utf-8";
  if (EndsWith(name, ".html")) return "text/html; charset=utf-8";
  if (EndsWith(name, ".svg")) return "image/svg+xml";
  if (EndsWith(name, ".json")) return "application/json";
  if (EndsWith(name, ".png")) return "image/png";
  return "application/octet-stream";
}

std::string ETagOf(std::string_view body) {
  return "\"" + Hex(Fnv1a(kFnvOffset, body), 16) + "\"";
}

AssetCatalog::AssetCatalog(std::span<const EmbeddedAsset> files) {
  uint64_t h = kFnvOffset;
  for (const EmbeddedAsset& f : files) {
    h = Fnv1a(Fnv1a(h, f.name), f.body);
    assets_.emplace(std::string(f.name),
                    Asset{f.name, f.body, ContentTypeFor(f.name), ETagOf(f.body)});
  }
  version_ = "v-" + Hex(h, 12);
}

const Asset* AssetCatalog::Find(std::string_view name) const {
  auto it = assets_.find(name);
  return it == assets_.end() ? nullptr : &it->second;
}

}  // namespace gw::web
