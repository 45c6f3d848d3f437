// http/client.h — HTTP(S) clients: a one-shot GET for the CLI (`gpuwarden query --url`), and a
// keep-alive POST client for senders (remote write). cpp-httplib stays inside http/.
#ifndef GPUWARDEN_HTTP_CLIENT_H_
#define GPUWARDEN_HTTP_CLIENT_H_

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/error.h"

namespace gw::http {

struct ClientReply {
  int status = 0;
  std::string body;
};

// GETs `url` ("http://host:port/path?query" or "https://…"; TLS certificates are verified
// against the system's CAs). Fails with a one-line reason when no reply comes.
Expected<ClientReply> GetUrl(const std::string& url, double timeout_s = 60);

struct PostClientOptions {
  std::vector<std::pair<std::string, std::string>> headers;  // sent with every request
  std::string basic_auth_user, basic_auth_password;
  std::string bearer_token;
  std::string ca_file;  // TLS: trust this CA instead of the system's
  bool insecure_skip_verify = false;
  double timeout_s = 30;  // connect, send and receive, each
};

// POSTs to one server over a kept-alive connection (reconnecting when it drops). Any HTTP
// answer, whatever its status, is a ClientReply; no answer is an Error saying why in words
// ("connection refused or unreachable", "no reply (read failed or timed out after 30s)", "TLS
// certificate verification failed"). One thread at a time.
class PostClient {
 public:
  // `url`: http(s)://host[:port]/path; Create fails when it is not one.
  static Expected<std::unique_ptr<PostClient>> Create(const std::string& url,
                                                      PostClientOptions options);
  ~PostClient();
  Expected<ClientReply> Post(std::string_view body, const std::string& content_type,
                             const std::vector<std::pair<std::string, std::string>>& headers = {});
  // After a failed Post: true when the request went out whole and the answer never came (the
  // connection dropped or timed out while waiting), so the server may have acted on it; false
  // when it failed before that (no connection, TLS, a write error) or the last Post succeeded.
  bool answer_lost() const { return answer_lost_; }
  const std::string& url() const { return url_; }

 private:
  struct Impl;
  PostClient(std::string url, std::unique_ptr<Impl> impl);
  std::string url_;
  std::unique_ptr<Impl> impl_;
  bool answer_lost_ = false;
};

// Percent-encodes a query parameter value.
std::string UrlEncode(std::string_view text);

}  // namespace gw::http

#endif  // GPUWARDEN_HTTP_CLIENT_H_
