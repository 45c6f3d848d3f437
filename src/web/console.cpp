#include "web/console.h"

#include <memory>
#include <string_view>

#include "base/html.h"
#include "web/assets.h"
#include "web/json_text.h"

namespace gw::web {

namespace {

constexpr std::string_view kUiPrefix = "/ui/";
constexpr const char* kImmutable = "public, max-age=31536000, immutable";
constexpr const char* kRevalidate = "no-cache";
// The console loads only its own scripts and styles, and talks only to this agent.
constexpr const char* kContentSecurityPolicy =
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src "
    "'self'; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

// What the console's routes share: the catalog and the rendered index page.
struct ConsoleState {
  AssetCatalog assets{EmbeddedAssets()};
  std::string index_html, index_etag, console_json;
};

void ReplaceAll(std::string* text, std::string_view from, std::string_view to) {
  for (size_t at = text->find(from); at != std::string::npos; at = text->find(from, at + to.size()))
    text->replace(at, from.size(), to);
}

// Answers 304 when the client holds the current representation.
bool NotModified(const http::Request& req, const std::string& etag, http::Response& res) {
  const std::string held = req.header("If-None-Match");
  if (held.empty() || (held != etag && held != "W/" + etag)) return false;
  res.status = 304;
  res.body.clear();
  return true;
}

void ServeAsset(const ConsoleState& state, const http::Request& req, http::Response& res) {
  std::string_view rest = std::string_view(req.path).substr(kUiPrefix.size());
  const char* cache = kRevalidate;
  if (rest.starts_with("v-")) {  // /ui/<version>/<file>
    size_t slash = rest.find('/');
    if (slash == std::string_view::npos) slash = rest.size();
    if (rest.substr(0, slash) == state.assets.version()) cache = kImmutable;
    rest = slash < rest.size() ? rest.substr(slash + 1) : std::string_view();
  }
  const Asset* asset = rest == "index.html" ? nullptr : state.assets.Find(rest);
  if (!asset) {
    res.status = 404;
    res.body = "404 page not found\n";
    return;
  }
  res.headers.emplace_back("Cache-Control", cache);
  res.headers.emplace_back("ETag", asset->etag);
  res.headers.emplace_back("X-Content-Type-Options", "nosniff");
  res.content_type = std::string(asset->content_type);
  if (NotModified(req, asset->etag, res)) return;
  res.body.assign(asset->body);
}

}  // namespace

void RegisterConsole(http::Server* server, ConsoleOptions options) {
  auto state = std::make_shared<ConsoleState>();
  const std::string base = std::string(kUiPrefix) + state->assets.version();
  if (const Asset* index = state->assets.Find("index.html")) {
    state->index_html.assign(index->body);
    ReplaceAll(&state->index_html, "{{base}}", base);
    ReplaceAll(&state->index_html, "{{version}}", HtmlEscape(options.version));
  } else {
    state->index_html = "<!doctype html><title>gpuwarden</title><p>console assets missing</p>";
  }
  state->index_etag = ETagOf(state->index_html);
  const bool history = static_cast<bool>(options.queriers);
  state->console_json = R"({"status":"success","data":{"version":)";
  AppendJsonString(&state->console_json, options.version);
  state->console_json += ",\"history\":";
  state->console_json += history ? "true" : "false";
  state->console_json += ",\"ui_version\":";
  AppendJsonString(&state->console_json, state->assets.version());
  state->console_json += ",\"rule_interval_s\":";
  AppendJsonNumber(&state->console_json, options.rule_interval_s);
  state->console_json += "}}";

  server->Get("/", [state](const http::Request& req, http::Response& res) {
    res.content_type = "text/html; charset=utf-8";
    res.headers.emplace_back("Cache-Control", kRevalidate);
    res.headers.emplace_back("ETag", state->index_etag);
    res.headers.emplace_back("Content-Security-Policy", kContentSecurityPolicy);
    res.headers.emplace_back("X-Content-Type-Options", "nosniff");
    if (NotModified(req, state->index_etag, res)) return;
    res.body = state->index_html;
  });
  server->GetPrefix(std::string(kUiPrefix), [state](const http::Request& req, http::Response& res) {
    ServeAsset(*state, req, res);
  });
  server->Get("/api/gw/v1/console", [state](const http::Request&, http::Response& res) {
    res.content_type = "application/json";
    res.headers.emplace_back("Cache-Control", kRevalidate);
    res.body = state->console_json;
  });
  if (history) RegisterChartApi(server, std::move(options.queriers), std::move(options.now_ms));
}

}  // namespace gw::web
