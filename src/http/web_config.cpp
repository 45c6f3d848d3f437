#include "http/web_config.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "base/yaml_error.h"

namespace gw::http {
namespace {

// Go's tls.CipherSuites() as of Go 1.19 (what Prometheus 2.42 was built with), by Go name. The
// TLS 1.3 suites map to "" because Go does not let them be configured; we accept and ignore them.
struct CipherName {
  const char* go;
  const char* openssl;
};
constexpr CipherName kCiphers[] = {
    {"TLS_RSA_WITH_AES_128_CBC_SHA", "AES128-SHA"},
    {"TLS_RSA_WITH_AES_256_CBC_SHA", "AES256-SHA"},
    {"TLS_RSA_WITH_AES_128_GCM_SHA256", "AES128-GCM-SHA256"},
    {"TLS_RSA_WITH_AES_256_GCM_SHA384", "AES256-GCM-SHA384"},
    {"TLS_AES_128_GCM_SHA256", ""},
    {"TLS_AES_256_GCM_SHA384", ""},
    {"TLS_CHACHA20_POLY1305_SHA256", ""},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "ECDHE-ECDSA-AES128-SHA"},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "ECDHE-ECDSA-AES256-SHA"},
    {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA-AES128-SHA"},
    {"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "ECDHE-RSA-AES256-SHA"},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA-AES128-GCM-SHA256"},
    {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA-AES128-GCM-SHA256"},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "ECDHE-ECDSA-AES256-GCM-SHA384"},
    {"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA-AES256-GCM-SHA384"},
    {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA-CHACHA20-POLY1305"},
    {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305"},
};

constexpr std::pair<const char*, const char*> kCurves[] = {
    {"CurveP256", "P-256"}, {"CurveP384", "P-384"}, {"CurveP521", "P-521"}, {"X25519", "X25519"}};

constexpr std::pair<const char*, TlsVersion> kVersions[] = {{"TLS10", TlsVersion::kTls10},
                                                            {"TLS11", TlsVersion::kTls11},
                                                            {"TLS12", TlsVersion::kTls12},
                                                            {"TLS13", TlsVersion::kTls13}};

constexpr std::pair<const char*, ClientAuth> kClientAuths[] = {
    {"NoClientCert", ClientAuth::kNoClientCert},
    {"RequestClientCert", ClientAuth::kRequestClientCert},
    {"RequireAnyClientCert", ClientAuth::kRequireAnyClientCert},
    {"RequireClientCert", ClientAuth::kRequireAnyClientCert},  // exporter-toolkit's old alias
    {"VerifyClientCertIfGiven", ClientAuth::kVerifyClientCertIfGiven},
    {"RequireAndVerifyClientCert", ClientAuth::kRequireAndVerifyClientCert},
};

// exporter-toolkit v0.8.2 lets exactly these headers be set; an empty list means any value.
struct AllowedHeader {
  const char* name;
  std::vector<std::string> values;
};
const AllowedHeader kAllowedHeaders[] = {
    {"Strict-Transport-Security", {}},
    {"X-Content-Type-Options", {"nosniff"}},
    {"X-Frame-Options", {"deny", "sameorigin"}},
    {"X-XSS-Protection", {}},
    {"Content-Security-Policy", {}},
};

template <class Table>
std::string JoinNames(const Table& table) {
  std::string out;
  for (const auto& entry : table) {
    if (!out.empty()) out += ", ";
    out += entry.first;
  }
  return out;
}

bool IsBcryptHash(const std::string& h) {
  // "$2b$10$" + 22 characters of salt + 31 of hash, in bcrypt's base64 alphabet.
  if (h.size() != 60 || h[0] != '$' || h[1] != '2' || h[3] != '$' || h[6] != '$') return false;
  if (h[2] != 'a' && h[2] != 'b' && h[2] != 'y') return false;
  if (!std::isdigit(static_cast<unsigned char>(h[4])) ||
      !std::isdigit(static_cast<unsigned char>(h[5])))
    return false;
  int cost = (h[4] - '0') * 10 + (h[5] - '0');
  if (cost < 4 || cost > 31) return false;
  for (size_t i = 7; i < h.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(h[i]);
    if (!std::isalnum(c) && c != '.' && c != '/') return false;
  }
  return true;
}

// Walks the YAML tree; every check that fails throws ConfigError with the node it is about, and
// Parse() turns that into the one gw::Error the API returns.
class Parser {
 public:
  explicit Parser(std::string path) : path_(std::move(path)) {}

  gw::Expected<WebConfig> Parse(std::string_view text) {
    try {
      YAML::Node root = YAML::Load(std::string(text));
      ParseRoot(root);
    } catch (const ConfigError& e) {
      return gw::Error{e.message};
    } catch (const YAML::Exception& e) {
      return gw::Error{At(e.mark) + gw::YamlErrorMessage(e)};
    }
    return std::move(config_);
  }

 private:
  struct ConfigError {
    std::string message;
  };

  std::string At(const YAML::Mark& mark) const {
    if (mark.is_null()) return path_ + ": ";
    return path_ + ":" + std::to_string(mark.line + 1) + ": ";
  }

  [[noreturn]] void Fail(const YAML::Mark& mark, const std::string& what) const {
    throw ConfigError{At(mark) + what};
  }

  // Calls `visit(key, key_node, value_node)` for each entry of a mapping; rejects anything but a
  // mapping (null counts as empty) and duplicated keys, as Go's yaml.UnmarshalStrict does.
  template <class Visit>
  void ForEachEntry(const YAML::Node& node, const YAML::Mark& mark, const std::string& context,
                    Visit visit) {
    if (!node || node.IsNull()) return;
    if (!node.IsMap()) Fail(mark, context + "expected a mapping");
    std::set<std::string> seen;
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (!it->first.IsScalar()) Fail(it->first.Mark(), context + "keys must be strings");
      const std::string key = it->first.Scalar();
      if (!seen.insert(key).second)
        Fail(it->first.Mark(), context + "duplicate key \"" + key + "\"");
      visit(key, it->first, it->second);
    }
  }

  std::string Scalar(const YAML::Node& key, const YAML::Node& value, const std::string& context) {
    if (!value || value.IsNull()) return "";
    if (!value.IsScalar()) Fail(key.Mark(), context + key.Scalar() + ": expected a string");
    return value.Scalar();
  }

  bool Bool(const YAML::Node& key, const YAML::Node& value, const std::string& context) {
    bool b = false;
    if (!value.IsScalar() || !YAML::convert<bool>::decode(value, b)) {
      Fail(key.Mark(), context + key.Scalar() + ": expected true or false");
    }
    return b;
  }

  std::vector<std::pair<std::string, YAML::Mark>> StringList(const YAML::Node& key,
                                                             const YAML::Node& value,
                                                             const std::string& context) {
    std::vector<std::pair<std::string, YAML::Mark>> out;
    if (!value || value.IsNull()) return out;
    if (!value.IsSequence()) Fail(key.Mark(), context + key.Scalar() + ": expected a list");
    for (const auto& item : value) {
      if (!item.IsScalar()) Fail(item.Mark(), context + key.Scalar() + ": expected strings");
      out.emplace_back(item.Scalar(), item.Mark());
    }
    return out;
  }

  template <class Table, class Value>
  void Enum(const Table& table, const YAML::Node& key, const YAML::Node& value,
            const std::string& context, Value* out) {
    std::string text = Scalar(key, value, context);
    if (text.empty()) return;  // blank keeps the default, as Go leaves a null field unset
    for (const auto& [name, v] : table) {
      if (text == name) {
        *out = v;
        return;
      }
    }
    Fail(value && !value.Mark().is_null() ? value.Mark() : key.Mark(),
         context + key.Scalar() + ": unknown value \"" + text + "\" (expected one of " +
             JoinNames(table) + ")");
  }

  std::string Resolve(const std::string& file) const {
    if (file.empty()) return file;
    std::filesystem::path p(file);
    if (p.is_absolute()) return file;
    std::filesystem::path dir = std::filesystem::path(path_).parent_path();
    return dir.empty() ? file : (dir / p).string();
  }

  void ParseRoot(const YAML::Node& root) {
    ForEachEntry(root, root.Mark(), "",
                 [&](const std::string& key, const YAML::Node& k, const YAML::Node& v) {
                   if (key == "tls_server_config") {
                     ParseTls(k, v);
                   } else if (key == "http_server_config") {
                     ParseHttp(k, v);
                   } else if (key == "basic_auth_users") {
                     ParseUsers(k, v);
                   } else {
                     Fail(k.Mark(), "unknown key \"" + key +
                                        "\" (expected tls_server_config, http_server_config or "
                                        "basic_auth_users)");
                   }
                 });
  }

  void ParseTls(const YAML::Node& block_key, const YAML::Node& block) {
    const std::string ctx = "tls_server_config: ";
    TlsServerConfig tls;
    bool client_auth_given = false;
    ForEachEntry(block, block_key.Mark(), ctx,
                 [&](const std::string& key, const YAML::Node& k, const YAML::Node& v) {
                   if (key == "cert_file") {
                     tls.cert_file = Resolve(Scalar(k, v, ctx));
                   } else if (key == "key_file") {
                     tls.key_file = Resolve(Scalar(k, v, ctx));
                   } else if (key == "client_ca_file") {
                     tls.client_ca_file = Resolve(Scalar(k, v, ctx));
                   } else if (key == "client_auth_type") {
                     client_auth_given = !Scalar(k, v, ctx).empty();
                     if (client_auth_given) Enum(kClientAuths, k, v, ctx, &tls.client_auth);
                   } else if (key == "min_version") {
                     Enum(kVersions, k, v, ctx, &tls.min_version);
                   } else if (key == "max_version") {
                     Enum(kVersions, k, v, ctx, &tls.max_version);
                   } else if (key == "prefer_server_cipher_suites") {
                     tls.prefer_server_cipher_suites = Bool(k, v, ctx);
                   } else if (key == "cipher_suites") {
                     for (const auto& [name, mark] : StringList(k, v, ctx)) {
                       tls.openssl_ciphers.push_back(CipherFor(name, mark));
                       if (tls.openssl_ciphers.back().empty()) tls.openssl_ciphers.pop_back();
                     }
                   } else if (key == "curve_preferences") {
                     for (const auto& [name, mark] : StringList(k, v, ctx)) {
                       tls.openssl_groups.push_back(GroupFor(name, mark));
                     }
                   } else {
                     Fail(k.Mark(), ctx + "unknown key \"" + key + "\"");
                   }
                 });

    // exporter-toolkit's rule: TLS is on when any of these four is given.
    if (tls.cert_file.empty() && tls.key_file.empty() && tls.client_ca_file.empty() &&
        !client_auth_given) {
      if (block && block.IsMap() && block.size() > 0) {
        config_.warnings.push_back(At(block_key.Mark()) + ctx +
                                   "no cert_file or key_file, so TLS stays off (as in "
                                   "Prometheus); the other settings here have no effect");
      }
      return;
    }
    if (tls.cert_file.empty()) Fail(block_key.Mark(), ctx + "missing cert_file");
    if (tls.key_file.empty()) Fail(block_key.Mark(), ctx + "missing key_file");
    if (!tls.client_ca_file.empty() && tls.client_auth == ClientAuth::kNoClientCert) {
      Fail(block_key.Mark(), ctx +
                                 "client_ca_file is set but client_auth_type is NoClientCert; use "
                                 "RequireAndVerifyClientCert to authenticate clients");
    }
    if (tls.min_version > tls.max_version) {
      Fail(block_key.Mark(), ctx + "min_version is above max_version");
    }
    config_.tls = std::move(tls);
  }

  std::string CipherFor(const std::string& name, const YAML::Mark& mark) const {
    for (const auto& c : kCiphers) {
      if (name == c.go) return c.openssl;
    }
    Fail(mark, "tls_server_config: cipher_suites: unknown cipher \"" + name +
                   "\" (Go names such as TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256; see "
                   "docs/web-config.md)");
  }

  std::string GroupFor(const std::string& name, const YAML::Mark& mark) const {
    for (const auto& [go, openssl] : kCurves) {
      if (name == go) return openssl;
    }
    Fail(mark, "tls_server_config: curve_preferences: unknown curve \"" + name +
                   "\" (expected one of " + JoinNames(kCurves) + ")");
  }

  void ParseHttp(const YAML::Node& block_key, const YAML::Node& block) {
    const std::string ctx = "http_server_config: ";
    ForEachEntry(
        block, block_key.Mark(), ctx,
        [&](const std::string& key, const YAML::Node& k, const YAML::Node& v) {
          if (key == "http2") {
            config_.http.http2 = Bool(k, v, ctx);
            if (config_.http.http2) {
              config_.warnings.push_back(
                  At(k.Mark()) + ctx + "http2: gpuwarden serves HTTP/1.1 only; clients fall back");
            }
          } else if (key == "headers") {
            ParseHeaders(k, v);
          } else {
            Fail(k.Mark(), ctx + "unknown key \"" + key + "\"");
          }
        });
  }

  void ParseHeaders(const YAML::Node& block_key, const YAML::Node& block) {
    const std::string ctx = "http_server_config: headers: ";
    ForEachEntry(block, block_key.Mark(), ctx,
                 [&](const std::string& name, const YAML::Node& k, const YAML::Node& v) {
                   const AllowedHeader* allowed = nullptr;
                   for (const auto& a : kAllowedHeaders) {
                     if (name == a.name) allowed = &a;
                   }
                   if (!allowed) {
                     std::string names;
                     for (const auto& a : kAllowedHeaders)
                       names += std::string(names.empty() ? "" : ", ") + a.name;
                     Fail(k.Mark(), ctx + "header \"" + name +
                                        "\" can not be configured (allowed: " + names + ")");
                   }
                   std::string value = Scalar(k, v, ctx);
                   if (!allowed->values.empty()) {
                     bool ok = false;
                     for (const auto& a : allowed->values) ok = ok || value == a;
                     if (!ok) {
                       std::string list;
                       for (const auto& a : allowed->values)
                         list += std::string(list.empty() ? "" : ", ") + a;
                       Fail(k.Mark(), ctx + name + ": invalid value \"" + value +
                                          "\" (expected one of " + list + ")");
                     }
                   }
                   if (value.find_first_of("\r\n") != std::string::npos) {
                     Fail(k.Mark(), ctx + name + ": value contains a line break");
                   }
                   if (!value.empty())
                     config_.http.headers.emplace_back(name, value);  // blank means unset
                 });
  }

  void ParseUsers(const YAML::Node& block_key, const YAML::Node& block) {
    const std::string ctx = "basic_auth_users: ";
    ForEachEntry(block, block_key.Mark(), ctx,
                 [&](const std::string& user, const YAML::Node& k, const YAML::Node& v) {
                   std::string hash = Scalar(k, v, ctx);
                   if (!IsBcryptHash(hash)) {
                     Fail(k.Mark(),
                          ctx + user +
                              ": not a bcrypt hash (expected $2a$, $2b$ or $2y$ with a cost of "
                              "04-31, e.g. from `htpasswd -nBC 10 \"\"`)");
                   }
                   config_.basic_auth_users.emplace(user, std::move(hash));
                 });
  }

  std::string path_;
  WebConfig config_;
};

}  // namespace

gw::Expected<WebConfig> ParseWebConfig(std::string_view yaml, const std::string& path) {
  return Parser(path).Parse(yaml);
}

gw::Expected<WebConfig> LoadWebConfig(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return gw::Error{path + ": cannot read: is a directory"};
  std::ifstream in(path, std::ios::binary);
  if (!in) return gw::Error{path + ": cannot read: " + std::strerror(errno)};
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return gw::Error{path + ": cannot read: " + std::strerror(errno)};
  return ParseWebConfig(text.str(), path);
}

}  // namespace gw::http
