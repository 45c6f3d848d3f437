// The web configuration file (`--web.config.file`): TLS, extra response headers and basic-auth
// users, in the format of Prometheus' exporter-toolkit as shipped with Prometheus 2.42
// (exporter-toolkit v0.8.2). docs/web-config.md is the user-facing description.
//
// Parsing is strict: an unknown or duplicated key, a value of the wrong type or outside its
// enumeration is an error that names the file and line ("web.yml:7: tls_server_config:
// client_auth_type: unknown value \"Sometimes\" (expected one of ...)"). Parsing only reads the
// YAML; the certificate and key files are opened later, by the server, when it builds its TLS
// context. Nothing here throws.
#ifndef GPUWARDEN_HTTP_WEB_CONFIG_H_
#define GPUWARDEN_HTTP_WEB_CONFIG_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/error.h"

namespace gw::http {

// Go's tls.ClientAuthType, under the names exporter-toolkit accepts.
enum class ClientAuth {
  kNoClientCert,                // default
  kRequestClientCert,           // ask for a certificate; accept none or any, unverified
  kRequireAnyClientCert,        // a certificate is required but not verified
  kVerifyClientCertIfGiven,     // none is fine; one that is given must verify
  kRequireAndVerifyClientCert,  // the only mode that actually authenticates clients
};

enum class TlsVersion { kTls10, kTls11, kTls12, kTls13 };

struct TlsServerConfig {
  // Paths as written, joined with the configuration file's directory when relative.
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;  // empty: the system's trust store verifies client certificates
  ClientAuth client_auth = ClientAuth::kNoClientCert;
  TlsVersion min_version = TlsVersion::kTls12;
  TlsVersion max_version = TlsVersion::kTls13;
  // OpenSSL names of the TLS <= 1.2 suites listed in cipher_suites (Go names in the file). Empty:
  // OpenSSL's defaults. TLS 1.3 suites are accepted in the file and, as in Go, not configurable.
  std::vector<std::string> openssl_ciphers;
  bool prefer_server_cipher_suites = true;
  // OpenSSL group names ("P-256", "X25519") from curve_preferences, in preference order.
  std::vector<std::string> openssl_groups;
};

struct HttpServerConfig {
  bool http2 = true;  // accepted for compatibility; gpuwarden serves HTTP/1.1 only
  // Extra headers for every response, in file order. Only the five exporter-toolkit allows.
  std::vector<std::pair<std::string, std::string>> headers;
};

struct WebConfig {
  // Unset: plain HTTP. Set when the file names any of cert_file, key_file, client_auth_type or
  // client_ca_file (exporter-toolkit's rule); then cert_file and key_file are both required.
  std::optional<TlsServerConfig> tls;
  HttpServerConfig http;
  // user -> bcrypt hash ($2a$, $2b$ or $2y$). Empty: no authentication.
  std::map<std::string, std::string> basic_auth_users;
  // Accepted but worth telling the operator about ("FILE:LINE: ..."); the server logs them.
  std::vector<std::string> warnings;
};

// Reads and parses the file at `path`. Errors: unreadable file ("web.yml: cannot read: No such
// file or directory") or any parse error described above.
gw::Expected<WebConfig> LoadWebConfig(const std::string& path);

// Parses `yaml`; `path` is used in error messages and its directory resolves relative file names.
gw::Expected<WebConfig> ParseWebConfig(std::string_view yaml, const std::string& path);

}  // namespace gw::http

#endif  // GPUWARDEN_HTTP_WEB_CONFIG_H_
