// Builds the server's OpenSSL context from a parsed `tls_server_config`. Internal to src/http.
#ifndef GPUWARDEN_HTTP_TLS_CONTEXT_H_
#define GPUWARDEN_HTTP_TLS_CONTEXT_H_

#include "base/error.h"
#include "http/web_config.h"

struct ssl_ctx_st;  // OpenSSL's SSL_CTX

namespace gw::http {

// Configures `ctx` (fresh from SSL_CTX_new(TLS_method())): certificate chain and key (read now;
// the key must match the certificate), protocol versions, TLS <= 1.2 cipher list, ECDHE groups,
// and the client-certificate policy with its trust anchors. Errors name the setting and file
// ("tls_server_config: key_file /etc/gw/key.pem: cannot read: Permission denied").
gw::Status ConfigureTlsContext(const TlsServerConfig& config, ssl_ctx_st* ctx);

}  // namespace gw::http

#endif  // GPUWARDEN_HTTP_TLS_CONTEXT_H_
