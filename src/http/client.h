// http/client.h — a minimal HTTP(S) GET for the CLI (`gpuwarden query --url`).
#ifndef GPUWARDEN_HTTP_CLIENT_H_
#define GPUWARDEN_HTTP_CLIENT_H_

#include <string>

#include "base/error.h"

namespace gw::http {

struct ClientReply {
  int status = 0;
  std::string body;
};

// GETs `url` ("http://host:port/path?query" or "https://…"; TLS certificates are verified
// against the system's CAs). Fails with a one-line reason when no reply comes.
Expected<ClientReply> GetUrl(const std::string& url, double timeout_s = 60);

// Percent-encodes a query parameter value.
std::string UrlEncode(std::string_view text);

}  // namespace gw::http

#endif  // GPUWARDEN_HTTP_CLIENT_H_
