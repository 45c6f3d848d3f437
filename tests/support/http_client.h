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

inline HttpReply HttpGet(int port, const std::string& path, const std::string& accept = "") {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(5);
  client.set_read_timeout(30);
  httplib::Headers headers;
  if (!accept.empty()) headers.emplace("Accept", accept);
  auto res = client.Get(path.c_str(), headers);
  HttpReply r;
  if (!res) return r;
  r.status = res->status;
  r.body = res->body;
  r.content_type = res->get_header_value("Content-Type");
  return r;
}

inline HttpReply HttpPost(int port, const std::string& path) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(5);
  client.set_read_timeout(120);
  auto res = client.Post(path.c_str(), "", "application/x-www-form-urlencoded");
  HttpReply r;
  if (!res) return r;
  r.status = res->status;
  r.body = res->body;
  r.content_type = res->get_header_value("Content-Type");
  return r;
}

}  // namespace gw::testing

#endif  // GPUWARDEN_TESTS_SUPPORT_HTTP_CLIENT_H_
