#include "http/client.h"

#include <httplib.h>

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

}  // namespace gw::http
