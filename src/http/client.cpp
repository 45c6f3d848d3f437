#include "http/client.h"

#include <httplib.h>

#include <cstdio>

namespace gw::http {

std::string UrlEncode(std::string_view text) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

Expected<ClientReply> GetUrl(const std::string& url, double timeout_s) {
  size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return Error{"'" + url + "' is not an http(s) URL"};
  size_t path_start = url.find('/', scheme_end + 3);
  std::string base = url.substr(0, path_start);
  std::string path = path_start == std::string::npos ? "/" : url.substr(path_start);
  httplib::Client client(base);
  if (!client.is_valid()) return Error{"'" + url + "' is not an http(s) URL"};
  auto seconds = static_cast<time_t>(timeout_s);
  client.set_connection_timeout(10);
  client.set_read_timeout(seconds);
  auto res = client.Get(path.c_str());
  if (!res) return Error{"GET " + base + ": " + httplib::to_string(res.error())};
  return ClientReply{res->status, res->body};
}

namespace {

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%gs", s);
  return buf;
}

std::string TransportError(httplib::Error error, double timeout_s) {
  switch (error) {
    case httplib::Error::Connection:
      return "connection refused or unreachable";
    case httplib::Error::ConnectionTimeout:
      return "connect timed out after " + Seconds(timeout_s);
    case httplib::Error::Read:
      return "no reply (read failed or timed out after " + Seconds(timeout_s) + ")";
    case httplib::Error::Write:
      return "sending the request failed";
    case httplib::Error::SSLConnection:
      return "TLS handshake failed";
    case httplib::Error::SSLServerVerification:
      return "TLS certificate verification failed";
    case httplib::Error::SSLLoadingCerts:
      return "cannot load the CA certificates";
    default:
      return httplib::to_string(error);
  }
}

}  // namespace

struct PostClient::Impl {
  explicit Impl(const std::string& base) : client(base) {}
  httplib::Client client;
  std::string path;
  PostClientOptions options;
};

Expected<std::unique_ptr<PostClient>> PostClient::Create(const std::string& url,
                                                         PostClientOptions options) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos ||
      (url.compare(0, scheme_end, "http") != 0 && url.compare(0, scheme_end, "https") != 0))
    return Error{"'" + url + "' is not an http(s) URL"};
  const size_t path_start = url.find('/', scheme_end + 3);
  auto impl = std::make_unique<Impl>(url.substr(0, path_start));
  if (!impl->client.is_valid()) return Error{"'" + url + "' is not an http(s) URL"};
  impl->path = path_start == std::string::npos ? "/" : url.substr(path_start);
  const auto secs = static_cast<time_t>(options.timeout_s);
  const auto usecs = static_cast<time_t>((options.timeout_s - static_cast<double>(secs)) * 1e6);
  httplib::Client& c = impl->client;
  c.set_keep_alive(true);
  // The request head and body go out as two writes: without this, Nagle holds the body until
  // the peer's delayed ACK of the head (40 ms on Linux) on every request of a kept-alive
  // connection.
  c.set_tcp_nodelay(true);
  c.set_connection_timeout(secs, usecs);
  c.set_read_timeout(secs, usecs);
  c.set_write_timeout(secs, usecs);
  if (!options.basic_auth_user.empty())
    c.set_basic_auth(options.basic_auth_user.c_str(), options.basic_auth_password.c_str());
  if (!options.bearer_token.empty()) c.set_bearer_token_auth(options.bearer_token.c_str());
  if (!options.ca_file.empty()) c.set_ca_cert_path(options.ca_file.c_str());
  c.enable_server_certificate_verification(!options.insecure_skip_verify);
  impl->options = std::move(options);
  return std::unique_ptr<PostClient>(new PostClient(url, std::move(impl)));
}

PostClient::PostClient(std::string url, std::unique_ptr<Impl> impl)
    : url_(std::move(url)), impl_(std::move(impl)) {}
PostClient::~PostClient() = default;

Expected<ClientReply> PostClient::Post(
    std::string_view body, const std::string& content_type,
    const std::vector<std::pair<std::string, std::string>>& headers) {
  httplib::Headers h;
  for (const auto& [k, v] : impl_->options.headers) h.emplace(k, v);
  for (const auto& [k, v] : headers) h.emplace(k, v);
  auto res = impl_->client.Post(impl_->path, h, body.data(), body.size(), content_type);
  // cpp-httplib reports Error::Read only once the request has been written: waiting for (or
  // reading) the status line failed.
  answer_lost_ = !res && res.error() == httplib::Error::Read;
  if (!res) return Error{TransportError(res.error(), impl_->options.timeout_s)};
  return ClientReply{res->status, std::move(res->body)};
}

}  // namespace gw::http
