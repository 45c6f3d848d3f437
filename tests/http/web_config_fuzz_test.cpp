#include <gtest/gtest.h>

#include <regex>

#include "http/web_config.h"
#include "support/mutate.h"

namespace gw::http {
namespace {

TEST(WebConfigFuzz, MutantsAreAcceptedOrRefusedWithALocation) {
  const std::string valid =
      "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
      "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n"
      "  min_version: TLS12\n  max_version: TLS13\n"
      "  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]\n"
      "  curve_preferences: [X25519, CurveP256]\nhttp_server_config:\n  http2: false\n"
      "  headers:\n    X-Frame-Options: deny\nbasic_auth_users:\n"
      "  alice: $2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi\n";
  gw::testing::Mutator mutator(42);
  int refused = 0;
  for (int i = 0; i < 1500; ++i) {
    std::string mutant = mutator.Mutate(valid);
    auto parsed = ParseWebConfig(mutant, "/etc/web.yml");
    if (parsed.ok()) continue;
    ++refused;
    EXPECT_EQ(parsed.error().message.rfind("/etc/web.yml", 0), 0u)
        << parsed.error().message << "\n--- input:\n"
        << mutant;
  }
  EXPECT_GT(refused, 100);
}

}  // namespace
}  // namespace gw::http
