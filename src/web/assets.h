// web/assets.h — the console's static files, compiled into the binary.
//
// src/web/assets/** is turned into a generated source by cmake/embed_files.cmake at build time
// (EmbeddedAssets()); AssetCatalog indexes it once at start: content type from the extension, a
// strong ETag per file, and a version that changes whenever any file does, so the console's URLs
// (/ui/<version>/app.js) can be cached for good and a new binary is never served stale files.
//
// Threading: an AssetCatalog is immutable after construction; any thread may read it.
#ifndef GPUWARDEN_WEB_ASSETS_H_
#define GPUWARDEN_WEB_ASSETS_H_

#include <map>
#include <span>
#include <string>
#include <string_view>

namespace gw::web {

struct EmbeddedAsset {
  std::string_view name;  // path under src/web/assets/, '/'-separated ("pages/fleet.js")
  std::string_view body;
};

// Every file under src/web/assets/, sorted by name (generated).
std::span<const EmbeddedAsset> EmbeddedAssets();

// "text/javascript; charset=utf-8" for "app.js", ...; application/octet-stream if unknown.
std::string_view ContentTypeFor(std::string_view name);

// A strong entity tag of a body: "\"<16 hex digits>\"" (64-bit FNV-1a).
std::string ETagOf(std::string_view body);

struct Asset {
  std::string_view name, body, content_type;
  std::string etag;
};

class AssetCatalog {
 public:
  explicit AssetCatalog(std::span<const EmbeddedAsset> files);
  // The asset called `name` ("app.js"), nullptr if none.
  const Asset* Find(std::string_view name) const;
  // "v-" and 12 hex digits of a hash over every name and body.
  const std::string& version() const { return version_; }
  size_t size() const { return assets_.size(); }

 private:
  std::map<std::string, Asset, std::less<>> assets_;
  std::string version_;
};

}  // namespace gw::web

#endif  // GPUWARDEN_WEB_ASSETS_H_
