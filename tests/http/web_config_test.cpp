#include "http/web_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "test_util.h"

namespace gw::http {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::StartsWith;

const char kHash[] = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi";

// The error message for `yaml` parsed as /etc/gw/web.yml; fails the test if it parsed.
std::string ErrorOf(const std::string& yaml) {
  auto config = ParseWebConfig(yaml, "/etc/gw/web.yml");
  if (config.ok()) {
    ADD_FAILURE() << "parsed without error:\n" << yaml;
    return "";
  }
  return config.error().message;
}

TEST(WebConfigTest, EmptyFileMeansPlainHttpWithoutAuth) {
  auto config = ParseWebConfig("", "web.yml");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_FALSE(config->tls.has_value());
  EXPECT_TRUE(config->basic_auth_users.empty());
  EXPECT_TRUE(config->http.headers.empty());
}

TEST(WebConfigTest, FullConfigParses) {
  auto config = ParseWebConfig(std::string(R"(# comment
tls_server_config:
  cert_file: server.crt
  key_file: /abs/server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca/ca.crt
  min_version: TLS13
  max_version: TLS13
  cipher_suites:
    - TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
    - TLS_AES_128_GCM_SHA256
    - TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256
  prefer_server_cipher_suites: false
  curve_preferences: [X25519, CurveP256]
http_server_config:
  http2: false
  headers:
    X-Frame-Options: deny
    Strict-Transport-Security: max-age=31536000
    X-XSS-Protection: ""
basic_auth_users:
  alice: )") + kHash + "\n",
                               "/etc/gw/web.yml");
  ASSERT_TRUE(config.ok()) << config.error().message;
  ASSERT_TRUE(config->tls.has_value());
  const TlsServerConfig& tls = *config->tls;
  EXPECT_EQ(tls.cert_file, "/etc/gw/server.crt");  // relative to the config file
  EXPECT_EQ(tls.key_file, "/abs/server.key");
  EXPECT_EQ(tls.client_ca_file, "/etc/gw/ca/ca.crt");
  EXPECT_EQ(tls.client_auth, ClientAuth::kRequireAndVerifyClientCert);
  EXPECT_EQ(tls.min_version, TlsVersion::kTls13);
  EXPECT_EQ(tls.max_version, TlsVersion::kTls13);
  // The TLS 1.3 suite is accepted and, as in Go, not configurable.
  EXPECT_THAT(tls.openssl_ciphers,
              ElementsAre("ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305"));
  EXPECT_FALSE(tls.prefer_server_cipher_suites);
  EXPECT_THAT(tls.openssl_groups, ElementsAre("X25519", "P-256"));
  EXPECT_FALSE(config->http.http2);
  // A blank value means "unset", as exporter-toolkit documents.
  EXPECT_THAT(config->http.headers,
              ElementsAre(Pair("X-Frame-Options", "deny"),
                          Pair("Strict-Transport-Security", "max-age=31536000")));
  EXPECT_THAT(config->basic_auth_users, ElementsAre(Pair("alice", kHash)));
  EXPECT_TRUE(config->warnings.empty());
}

TEST(WebConfigTest, DefaultsMatchExporterToolkit) {
  auto config = ParseWebConfig("tls_server_config:\n  cert_file: a\n  key_file: b\n", "web.yml");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->tls->cert_file, "a");  // no directory in the config path: as written
  EXPECT_EQ(config->tls->client_auth, ClientAuth::kNoClientCert);
  EXPECT_EQ(config->tls->min_version, TlsVersion::kTls12);
  EXPECT_EQ(config->tls->max_version, TlsVersion::kTls13);
  EXPECT_TRUE(config->tls->prefer_server_cipher_suites);
  EXPECT_TRUE(config->http.http2);
}

TEST(WebConfigTest, BlankEnumsKeepDefaults) {
  auto config = ParseWebConfig(
      "tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version:\n  client_auth_type: "
      "\"\"\n",
      "web.yml");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->tls->min_version, TlsVersion::kTls12);
  EXPECT_EQ(config->tls->client_auth, ClientAuth::kNoClientCert);
}

TEST(WebConfigTest, UnknownTopLevelKeyNamesFileAndLine) {
  EXPECT_EQ(ErrorOf("basic_auth_users: {}\ntls_config:\n  cert_file: x\n"),
            "/etc/gw/web.yml:2: unknown key \"tls_config\" (expected tls_server_config, "
            "http_server_config or basic_auth_users)");
}

// yaml-cpp's recursion guard used to say only "bad file".
TEST(WebConfigTest, DeepNestingIsNamed) {
  EXPECT_THAT(ErrorOf("basic_auth_users: " + std::string(5000, '[')),
              HasSubstr("nested too deeply: more than"));
}

TEST(WebConfigTest, UnknownNestedKeyNamesFileAndLine) {
  EXPECT_EQ(ErrorOf("tls_server_config:\n  cert_file: a\n  key_file: b\n  ca_file: c\n"),
            "/etc/gw/web.yml:4: tls_server_config: unknown key \"ca_file\"");
  EXPECT_THAT(ErrorOf("http_server_config:\n  http3: true\n"),
              StartsWith("/etc/gw/web.yml:2: http_server_config: unknown key \"http3\""));
}

TEST(WebConfigTest, BadClientAuthType) {
  std::string error =
      ErrorOf("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: Sometimes\n");
  EXPECT_THAT(error, StartsWith("/etc/gw/web.yml:4: tls_server_config: client_auth_type: "
                                "unknown value \"Sometimes\""));
  EXPECT_THAT(error, HasSubstr("RequireAndVerifyClientCert"));
}

TEST(WebConfigTest, MissingKeyFile) {
  EXPECT_EQ(ErrorOf("\ntls_server_config:\n  cert_file: server.crt\n"),
            "/etc/gw/web.yml:2: tls_server_config: missing key_file");
  EXPECT_EQ(ErrorOf("tls_server_config:\n  key_file: server.key\n"),
            "/etc/gw/web.yml:1: tls_server_config: missing cert_file");
  // client_auth_type alone turns TLS on, so the files are required (exporter-toolkit's rule).
  EXPECT_EQ(ErrorOf("tls_server_config:\n  client_auth_type: RequestClientCert\n"),
            "/etc/gw/web.yml:1: tls_server_config: missing cert_file");
}

TEST(WebConfigTest, BadMinVersion) {
  EXPECT_EQ(ErrorOf("tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS1.2\n"),
            "/etc/gw/web.yml:4: tls_server_config: min_version: unknown value \"TLS1.2\" "
            "(expected one of TLS10, TLS11, TLS12, TLS13)");
  EXPECT_THAT(ErrorOf("tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS13\n"
                      "  max_version: TLS12\n"),
              StartsWith("/etc/gw/web.yml:1: tls_server_config: min_version is above max_version"));
}

TEST(WebConfigTest, UnknownCipherAndCurve) {
  EXPECT_THAT(ErrorOf("tls_server_config:\n  cert_file: a\n  key_file: b\n  cipher_suites:\n"
                      "    - TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256\n    - RC4-MD5\n"),
              StartsWith("/etc/gw/web.yml:6: tls_server_config: cipher_suites: unknown cipher "
                         "\"RC4-MD5\""));
  EXPECT_THAT(
      ErrorOf("tls_server_config:\n  cert_file: a\n  key_file: b\n  curve_preferences: [P-256]\n"),
      StartsWith("/etc/gw/web.yml:4: tls_server_config: curve_preferences: unknown curve"));
}

TEST(WebConfigTest, ClientCaWithoutClientAuthIsRejected) {
  EXPECT_THAT(ErrorOf("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_ca_file: c\n"),
              HasSubstr("client_ca_file is set but client_auth_type is NoClientCert"));
}

TEST(WebConfigTest, HeadersFollowExporterToolkitAllowList) {
  EXPECT_THAT(ErrorOf("http_server_config:\n  headers:\n    Server: gw\n"),
              StartsWith("/etc/gw/web.yml:3: http_server_config: headers: header \"Server\" can "
                         "not be configured"));
  EXPECT_THAT(ErrorOf("http_server_config:\n  headers:\n    X-Frame-Options: allow\n"),
              StartsWith("/etc/gw/web.yml:3: http_server_config: headers: X-Frame-Options: "
                         "invalid value \"allow\" (expected one of deny, sameorigin)"));
  EXPECT_THAT(ErrorOf("http_server_config:\n  headers:\n    X-Content-Type-Options: sniff\n"),
              HasSubstr("expected one of nosniff"));
}

TEST(WebConfigTest, BasicAuthUsersMustBeBcrypt) {
  EXPECT_THAT(ErrorOf("basic_auth_users:\n  alice: " + std::string(kHash) + "\n  bob: secret\n"),
              StartsWith("/etc/gw/web.yml:3: basic_auth_users: bob: not a bcrypt hash"));
  EXPECT_THAT(ErrorOf("basic_auth_users:\n  - alice\n"),
              StartsWith("/etc/gw/web.yml:1: basic_auth_users: expected a mapping"));
}

TEST(WebConfigTest, TypeErrorsAndDuplicates) {
  EXPECT_THAT(ErrorOf("http_server_config:\n  http2: maybe\n"),
              StartsWith("/etc/gw/web.yml:2: http_server_config: http2: expected true or false"));
  EXPECT_THAT(ErrorOf("tls_server_config:\n  cert_file: [a, b]\n"),
              StartsWith("/etc/gw/web.yml:2: tls_server_config: cert_file: expected a string"));
  EXPECT_THAT(ErrorOf("tls_server_config:\n  cert_file: a\n  cert_file: b\n  key_file: c\n"),
              StartsWith("/etc/gw/web.yml:3: tls_server_config: duplicate key \"cert_file\""));
  EXPECT_THAT(ErrorOf("- just\n- a list\n"), StartsWith("/etc/gw/web.yml:1: expected a mapping"));
}

TEST(WebConfigTest, YamlSyntaxErrorHasLine) {
  EXPECT_THAT(ErrorOf("basic_auth_users:\n  alice: \"unterminated\n"),
              StartsWith("/etc/gw/web.yml:"));
  EXPECT_THAT(ErrorOf("tls_server_config:\n  cert_file: a\n key_file: b\n"),
              StartsWith("/etc/gw/web.yml:3: "));
}

TEST(WebConfigTest, TlsBlockWithoutFilesStaysPlainAndWarns) {
  auto config = ParseWebConfig("tls_server_config:\n  min_version: TLS13\n", "web.yml");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_FALSE(config->tls.has_value());
  ASSERT_EQ(config->warnings.size(), 1u);
  EXPECT_THAT(config->warnings[0], StartsWith("web.yml:1: tls_server_config: no cert_file"));
}

TEST(WebConfigTest, Http2TrueWarns) {
  auto config = ParseWebConfig("http_server_config:\n  http2: true\n", "web.yml");
  ASSERT_TRUE(config.ok()) << config.error().message;
  ASSERT_EQ(config->warnings.size(), 1u);
  EXPECT_THAT(config->warnings[0], HasSubstr("web.yml:2: http_server_config: http2"));
}

TEST(WebConfigTest, LoadReportsUnreadableFiles) {
  testutil::TempDir dir;
  auto missing = LoadWebConfig(dir.File("absent.yml"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, dir.File("absent.yml") +
                                         ": cannot read: No such file or "
                                         "directory");
  auto directory = LoadWebConfig(dir.path());
  ASSERT_FALSE(directory.ok());
  EXPECT_THAT(directory.error().message, HasSubstr("is a directory"));

  std::string path = dir.Write("web.yml", "tls_server_config:\n  cert_file: c.pem\n");
  auto config = LoadWebConfig(path);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().message, path + ":1: tls_server_config: missing key_file");
}

// Not a fuzzer (g++ has no libFuzzer), but the same idea, deterministic: thousands of mangled
// variants of a valid file must produce a config or an error, never a crash (ASan watches).
TEST(WebConfigTest, SurvivesMangledInput) {
  const std::string seed = std::string(R"(tls_server_config:
  cert_file: server.crt
  key_file: server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca.crt
  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]
  curve_preferences: [X25519]
http_server_config: {http2: false, headers: {X-Frame-Options: deny}}
basic_auth_users:
  alice: )") + kHash + "\n";
  const std::string alphabet = ":-[]{}\n #&*!|>'\"%@`,?\t\\x0";
  std::mt19937 rng(42);
  for (int i = 0; i < 3000; ++i) {
    std::string text = seed;
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      size_t pos = rng() % text.size();
      switch (rng() % 3) {
        case 0:
          text[pos] = alphabet[rng() % alphabet.size()];
          break;
        case 1:
          text.erase(pos, 1 + rng() % 8);
          break;
        default:
          text.insert(pos, text.substr(rng() % text.size(), rng() % 16));
          break;
      }
      if (text.empty()) text = "x";
    }
    auto config = ParseWebConfig(text, "fuzz.yml");
    if (!config.ok()) {
      EXPECT_THAT(config.error().message, StartsWith("fuzz.yml"));
    }
  }
}

}  // namespace
}  // namespace gw::http
