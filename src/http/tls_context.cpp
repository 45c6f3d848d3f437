#include "http/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

namespace gw::http {
namespace {

// The oldest queued OpenSSL error as text, and an empty queue afterwards.
std::string TakeOpenSslError() {
  unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "unknown OpenSSL error";
  const char* reason = ERR_reason_error_string(code);
  return reason ? reason : "OpenSSL error " + std::to_string(code);
}

gw::Status CheckReadable(const char* setting, const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return gw::Error{std::string("tls_server_config: ") + setting + " " + path +
                     ": cannot read: " + std::strerror(errno)};
  }
  return gw::Status::Ok();
}

int OpenSslVersion(TlsVersion v) {
  switch (v) {
    case TlsVersion::kTls10:
      return TLS1_VERSION;
    case TlsVersion::kTls11:
      return TLS1_1_VERSION;
    case TlsVersion::kTls12:
      return TLS1_2_VERSION;
    case TlsVersion::kTls13:
      return TLS1_3_VERSION;
  }
  return TLS1_2_VERSION;
}

std::string JoinColon(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ":") + n;
  return out;
}

// For RequestClientCert and RequireAnyClientCert: a certificate is asked for but, as in Go, not
// checked against any CA.
int AcceptAnyCertificate(int /*preverify_ok*/, X509_STORE_CTX* /*store*/) {
  return 1;
}

gw::Status ConfigureClientAuth(const TlsServerConfig& config, SSL_CTX* ctx) {
  if (config.client_auth == ClientAuth::kNoClientCert) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
    return gw::Status::Ok();
  }
  if (!config.client_ca_file.empty()) {
    if (auto s = CheckReadable("client_ca_file", config.client_ca_file); !s.ok()) return s;
    if (SSL_CTX_load_verify_locations(ctx, config.client_ca_file.c_str(), nullptr) != 1) {
      return gw::Error{"tls_server_config: client_ca_file " + config.client_ca_file + ": " +
                       TakeOpenSslError()};
    }
    // The CA names go into the CertificateRequest so clients pick a matching certificate.
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(config.client_ca_file.c_str());
    if (!names) {
      return gw::Error{"tls_server_config: client_ca_file " + config.client_ca_file +
                       ": no certificates found"};
    }
    SSL_CTX_set_client_CA_list(ctx, names);  // takes ownership
  } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
    return gw::Error{"tls_server_config: cannot load the system trust store: " +
                     TakeOpenSslError()};
  }
  switch (config.client_auth) {
    case ClientAuth::kNoClientCert:
      break;
    case ClientAuth::kRequestClientCert:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, AcceptAnyCertificate);
      break;
    case ClientAuth::kRequireAnyClientCert:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                         AcceptAnyCertificate);
      break;
    case ClientAuth::kVerifyClientCertIfGiven:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
      break;
    case ClientAuth::kRequireAndVerifyClientCert:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
      break;
  }
  // Session resumption with client certificates needs a context id, or OpenSSL refuses it.
  static const unsigned char kSessionContext[] = "gpuwarden";
  SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof(kSessionContext) - 1);
  return gw::Status::Ok();
}

}  // namespace

gw::Status ConfigureTlsContext(const TlsServerConfig& config, ssl_ctx_st* ctx) {
  ERR_clear_error();
  uint64_t options = SSL_OP_NO_COMPRESSION | SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION |
                     SSL_OP_NO_RENEGOTIATION;
  if (config.prefer_server_cipher_suites) options |= SSL_OP_CIPHER_SERVER_PREFERENCE;
  SSL_CTX_set_options(ctx, options);

  if (SSL_CTX_set_min_proto_version(ctx, OpenSslVersion(config.min_version)) != 1 ||
      SSL_CTX_set_max_proto_version(ctx, OpenSslVersion(config.max_version)) != 1) {
    return gw::Error{"tls_server_config: min_version/max_version: " + TakeOpenSslError()};
  }

  if (auto s = CheckReadable("cert_file", config.cert_file); !s.ok()) return s;
  if (auto s = CheckReadable("key_file", config.key_file); !s.ok()) return s;
  if (SSL_CTX_use_certificate_chain_file(ctx, config.cert_file.c_str()) != 1) {
    return gw::Error{"tls_server_config: cert_file " + config.cert_file +
                     ": not a PEM certificate: " + TakeOpenSslError()};
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, config.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    return gw::Error{"tls_server_config: key_file " + config.key_file +
                     ": not a PEM private key: " + TakeOpenSslError()};
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return gw::Error{"tls_server_config: key_file " + config.key_file +
                     " does not match cert_file " + config.cert_file};
  }

  if (!config.openssl_ciphers.empty() &&
      SSL_CTX_set_cipher_list(ctx, JoinColon(config.openssl_ciphers).c_str()) != 1) {
    return gw::Error{"tls_server_config: cipher_suites: OpenSSL supports none of them: " +
                     TakeOpenSslError()};
  }
  if (!config.openssl_groups.empty() &&
      SSL_CTX_set1_groups_list(ctx, JoinColon(config.openssl_groups).c_str()) != 1) {
    return gw::Error{"tls_server_config: curve_preferences: " + TakeOpenSslError()};
  }
  return ConfigureClientAuth(config, ctx);
}

}  // namespace gw::http
