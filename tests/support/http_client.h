// Test support: a tiny HTTP client over cpp-httplib for talking to the agent and to real
// Prometheus on loopback.
#ifndef GPUWARDEN_TESTS_SUPPORT_HTTP_CLIENT_H_
#define GPUWARDEN_TESTS_SUPPORT_HTTP_CLIENT_H_

#pragma GCC system_header
#include <httplib.h>

#include <string>

#include "http/client.h"

namespace gw::testing {

using gw::http::UrlEncode;  // the agent's own, from http/client.h

struct HttpReply {
  int status = 0;  // 0: no connection
  std::string body, content_type;
};

// What came back, or status 0 when nothing did.
inline HttpReply ToReply(const httplib::Result& res) {
  HttpReply r;
  if (!res) return r;
  r.status = res->status;
  r.body = res->body;
  r.content_type = res->get_header_value("Content-Type");
  return r;
}

// A GET; status 0 when no reply came within `read_timeout_s`.
inline HttpReply HttpGet(int port, const std::string& path, const std::string& accept = "",
                         int read_timeout_s = 30) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(5);
  client.set_read_timeout(read_timeout_s);
  httplib::Headers headers;
  if (!accept.empty()) headers.emplace("Accept", accept);
  return ToReply(client.Get(path.c_str(), headers));
}

inline HttpReply HttpPost(int port, const std::string& path) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(5);
  client.set_read_timeout(120);
  return ToReply(client.Post(path.c_str(), "", "application/x-www-form-urlencoded"));
}

}  // namespace gw::testing

#endif  // GPUWARDEN_TESTS_SUPPORT_HTTP_CLIENT_H_
