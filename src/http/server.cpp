#include "http/server.h"

// cpp-httplib 0.11.4 (Debian's compiled build, with OpenSSL and zlib). Only this file sees it.
#include <httplib.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

#include "http/basic_auth.h"
#include "http/codec.h"
#include "http/tls_context.h"
#include "http/web_config.h"

namespace gw::http {

// ---- Request accessors ------------------------------------------------------------------------

std::string Request::header(std::string_view name) const {
  auto it = headers.find(ToLowerAscii(name));
  return it == headers.end() ? std::string() : it->second;
}

std::string Request::param(std::string_view name) const {
  auto it = params.find(std::string(name));
  return it == params.end() ? std::string() : it->second;
}

std::vector<std::string> Request::params_all(std::string_view name) const {
  std::vector<std::string> out;
  auto [begin, end] = params.equal_range(std::string(name));
  for (auto it = begin; it != end; ++it) out.push_back(it->second);
  return out;
}

namespace {

// ---- Listen address -----------------------------------------------------------------------------

struct ListenAddress {
  std::string host;     // for getaddrinfo: "0.0.0.0", "::1", "localhost"
  int port = 0;         // 0: any free port
  std::string display;  // for messages: "0.0.0.0:9966", "[::1]:9966"
};

gw::Expected<ListenAddress> ParseListenAddress(const std::string& text) {
  auto fail = [&](const std::string& why) {
    return gw::Error{"listen address \"" + text + "\": " + why};
  };
  ListenAddress out;
  std::string port_text;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return fail("expected [address]:port");
    }
    out.host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
    if (out.host.empty()) return fail("empty IPv6 address");
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos) return fail("expected host:port or :port");
    out.host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (out.host.find(':') != std::string::npos) {
      return fail("an IPv6 address needs brackets, as in [::1]:9966");
    }
    if (out.host.empty()) out.host = "0.0.0.0";
  }
  if (port_text.empty() || port_text.size() > 5 ||
      port_text.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(port_text) > 65535) {
    return fail("port must be a number from 0 to 65535");
  }
  out.port = std::stoi(port_text);
  bool v6 = out.host.find(':') != std::string::npos;
  out.display = (v6 ? "[" + out.host + "]" : out.host) + ":" + std::to_string(out.port);
  return out;
}

// httplib reports a failed bind as -1 without the reason, so on failure we repeat the attempt
// once ourselves to learn errno: "address already in use", "cannot assign requested address".
std::string BindFailureReason(const ListenAddress& address) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  int rc = getaddrinfo(address.host.c_str(), std::to_string(address.port).c_str(), &hints, &result);
  if (rc != 0) return "cannot resolve \"" + address.host + "\": " + gai_strerror(rc);
  std::string reason;
  for (addrinfo* ai = result; ai && reason.empty(); ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      reason = std::strerror(errno);
      continue;
    }
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 1) != 0) {
      reason = std::strerror(errno);
    }
    close(fd);
  }
  freeaddrinfo(result);
  if (reason.empty()) return "bind failed";
  reason[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(reason[0])));
  return reason;
}

// ---- Small helpers ----------------------------------------------------------------------------

std::string EscapeRegex(std::string_view literal) {
  std::string out;
  for (char c : literal) {
    if (std::strchr(".^$|()[]{}*+?\\", c)) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

void SplitSeconds(double seconds, time_t* sec, time_t* usec) {
  double whole = std::floor(seconds);
  *sec = static_cast<time_t>(whole);
  *usec = static_cast<time_t>((seconds - whole) * 1e6);
}

bool IsServerManagedHeader(const std::string& lower_name) {
  return lower_name == "content-type" || lower_name == "content-length" ||
         lower_name == "content-encoding" || lower_name == "transfer-encoding" ||
         lower_name == "connection";
}

// Headers httplib adds to every request for its own use; not the client's.
bool IsHttplibPseudoHeader(const std::string& lower_name) {
  return lower_name == "remote_addr" || lower_name == "remote_port" || lower_name == "local_addr" ||
         lower_name == "local_port";
}

// Methods whose body httplib reads before routing (its detail::expect_content).
bool CarriesBody(const std::string& method) {
  return method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE" ||
         method == "PRI";
}

// A client-chosen string made safe for a one-line log entry: control bytes (a decoded %0A could
// forge a log line) become \xNN, and it is cut at 256 bytes.
std::string ForLog(std::string_view text) {
  std::string out;
  for (unsigned char c : text.substr(0, 256)) {
    if (c < 0x20 || c == 0x7f || c == '\\') {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", c);
      out += escaped;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  if (text.size() > 256) out += "...";
  return out;
}

void SetPlainText(Response* res, int status, std::string body) {
  res->status = status;
  res->content_type = "text/plain; charset=utf-8";
  res->body = std::move(body);
}

}  // namespace

// ---- Server::Impl -------------------------------------------------------------------------------

struct Server::Impl {
  struct Route {
    Handler get;
    Handler post;
  };

  ServerOptions options;
  ListenAddress address;
  gw::Logger* log = nullptr;
  WebConfig web;
  std::unique_ptr<BasicAuth> auth;  // null: no authentication
  std::unique_ptr<httplib::Server> http;

  std::map<std::string, Route, std::less<>> routes;
  std::vector<std::pair<std::string, Handler>> prefixes;

  std::mutex lifecycle_mu;
  bool started = false;
  std::atomic<int> bound_port{0};
  std::atomic<bool> listen_returned{false};
  std::thread listener;

  void Info(const std::string& m) {
    if (log) log->Info(m);
  }

  void Install();
  // Authenticates, routes and answers one request. `unsupported_body`: refuse with 415 once
  // authenticated.
  void Serve(const httplib::Request& in, std::string body, httplib::Response& out,
             bool unsupported_body = false);
  Request Convert(const httplib::Request& in, std::string body) const;
  void Dispatch(const Request& req, Response& res);
  const Handler* FindPrefix(std::string_view path) const;
  void Write(const httplib::Request& in, Response& res, httplib::Response& out) const;
};

void Server::Impl::Install() {
  const int threads = options.worker_threads;
  http->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  time_t sec = 0, usec = 0;
  SplitSeconds(options.read_timeout_s, &sec, &usec);
  http->set_read_timeout(sec, usec);
  SplitSeconds(options.write_timeout_s, &sec, &usec);
  http->set_write_timeout(sec, usec);
  http->set_keep_alive_timeout(5);
  http->set_keep_alive_max_count(100);
  http->set_payload_max_length(options.max_request_body_bytes);
  // Headers and body go out in separate writes; without TCP_NODELAY, Nagle plus the client's
  // delayed ACK would add ~40 ms to every keep-alive response.
  http->set_tcp_nodelay(true);
  // httplib's default sets SO_REUSEPORT, which lets a second process bind a port already in use
  // and silently split the traffic. SO_REUSEADDR only allows a restart over TIME_WAIT sockets.
  http->set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });

  // Requests without a body are served entirely here, before httplib reads anything more.
  // Methods that carry one fall through so httplib reads the body first (never leaving it unread
  // on a keep-alive connection); they reach the POST routes below or, unmatched, the error
  // handler. We never give httplib a catch-all route: its std::regex matching of ".*" recurses
  // once per character and overflows the stack on long paths.
  http->set_pre_routing_handler([this](const httplib::Request& in, httplib::Response& out) {
    if (CarriesBody(in.method)) return httplib::Server::HandlerResponse::Unhandled;
    Serve(in, std::string(), out);
    return httplib::Server::HandlerResponse::Handled;
  });

  http->set_error_handler(httplib::Server::HandlerWithResponse(
      [this](const httplib::Request& in, httplib::Response& out) {
        // Our own responses always carry a Content-Type. A 404 without one is httplib saying no
        // route matched a request with a body: authenticate and route it ourselves (404/405).
        // Other statuses (400, 413, 414, ...) are httplib's protocol errors; send them as is.
        if (out.status != 404 || out.has_header("Content-Type")) {
          return httplib::Server::HandlerResponse::Unhandled;
        }
        Serve(in, in.body, out);
        return httplib::Server::HandlerResponse::Handled;
      }));

  http->set_exception_handler(
      [this](const httplib::Request& in, httplib::Response& out, std::exception_ptr) {
        if (log) log->Error("http: exception while serving " + in.method + " " + ForLog(in.path));
        out.status = 500;
        out.set_content("internal server error\n", "text/plain; charset=utf-8");
      });

  for (const auto& [path, route] : routes) {
    if (!route.post) continue;
    // A literal pattern: matching it recurses at most once per character of the pattern.
    http->Post(EscapeRegex(path), [this](const httplib::Request& in, httplib::Response& out,
                                         const httplib::ContentReader& reader) {
      std::string body;
      bool read = false;
      const bool multipart = in.is_multipart_form_data();
      // RFC 9112 §6.3: a request with neither Content-Length nor Transfer-Encoding has no body.
      // httplib would instead read until the client closes (`curl -X POST` would hang 10 s).
      const bool has_body = in.has_header("Content-Length") || in.has_header("Transfer-Encoding");
      if (!has_body) {
        read = true;
      } else if (multipart) {
        // Drained (so the connection stays usable), then refused after authentication.
        read = reader([](const httplib::MultipartFormData&) { return true; },
                      [](const char*, size_t) { return true; });
      } else {
        read = reader([&](const char* data, size_t size) {
          body.append(data, size);
          return true;
        });
      }
      if (!read) return;  // httplib has set 400 or 413
      Serve(in, std::move(body), out, multipart);
    });
  }
}

void Server::Impl::Serve(const httplib::Request& in, std::string body, httplib::Response& out,
                         bool unsupported_body) {
  const auto start = std::chrono::steady_clock::now();
  // httplib applies any Range header to whatever we answer; our handlers produce whole
  // representations, so the parsed ranges are dropped. The Request object is httplib's own
  // non-const local (process_request), handed to us as const; clearing it is well-defined.
  const_cast<httplib::Request&>(in).ranges.clear();

  Request req = Convert(in, std::move(body));
  Response res;
  if (auth && !auth->Check(req.header("authorization"))) {
    SetPlainText(&res, 401, "Unauthorized\n");
    res.headers.emplace_back("WWW-Authenticate", "Basic");
  } else if (unsupported_body) {
    SetPlainText(&res, 415,
                 "multipart/form-data is not supported; use application/x-www-form-urlencoded\n");
  } else {
    Dispatch(req, res);
  }
  const size_t bytes = res.body.size();
  Write(in, res, out);

  if (log) {
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    char timing[32];
    std::snprintf(timing, sizeof(timing), "%.1fms", ms);
    log->Debug("http " + req.method + " " + ForLog(req.path) + " " + std::to_string(out.status) +
               " " + std::to_string(bytes) + "B " + timing + " from " + req.remote_addr);
  }
}

Request Server::Impl::Convert(const httplib::Request& in, std::string body) const {
  Request req;
  req.method = in.method;
  req.path = in.path;
  req.remote_addr = in.remote_addr;
  for (const auto& [name, value] : in.headers) {
    std::string lower = ToLowerAscii(name);
    if (!IsHttplibPseudoHeader(lower)) req.headers.emplace(std::move(lower), value);
  }
  // Our own decoding rather than httplib's params: its form parser splits values at every '='
  // (breaking unencoded PromQL such as {job="x"}) and caps form bodies at 8 KiB.
  if (ToLowerAscii(req.header("content-type")).rfind("application/x-www-form-urlencoded", 0) == 0) {
    ParseFormInto(body, &req.params);
  }
  size_t query = in.target.find('?');
  if (query != std::string::npos) {
    ParseFormInto(std::string_view(in.target).substr(query + 1), &req.params);
  }
  req.body = std::move(body);
  return req;
}

const Handler* Server::Impl::FindPrefix(std::string_view path) const {
  const Handler* best = nullptr;
  size_t best_size = 0;
  for (const auto& [prefix, handler] : prefixes) {
    if (path.substr(0, prefix.size()) == prefix && (!best || prefix.size() > best_size)) {
      best = &handler;
      best_size = prefix.size();
    }
  }
  return best;
}

void Server::Impl::Dispatch(const Request& req, Response& res) {
  const bool is_get = req.method == "GET" || req.method == "HEAD";
  const Handler* handler = nullptr;
  std::string allow;
  if (auto it = routes.find(req.path); it != routes.end()) {
    if (is_get && it->second.get) handler = &it->second.get;
    if (req.method == "POST" && it->second.post) handler = &it->second.post;
    if (it->second.get) allow = "GET, HEAD";
    if (it->second.post) allow += allow.empty() ? "POST" : ", POST";
  } else if (const Handler* prefix = FindPrefix(req.path)) {
    if (is_get) handler = prefix;
    allow = "GET, HEAD";
  } else {
    SetPlainText(&res, 404, "404 page not found\n");
    return;
  }
  if (!handler) {
    SetPlainText(&res, 405, "Method Not Allowed\n");
    res.headers.emplace_back("Allow", allow);
    return;
  }
  try {
    (*handler)(req, res);
  } catch (const std::exception& e) {
    if (log)
      log->Error("http: handler for " + req.method + " " + ForLog(req.path) +
                 " threw: " + ForLog(e.what()));
    res = Response();
    SetPlainText(&res, 500, "internal server error\n");
  } catch (...) {
    if (log) log->Error("http: handler for " + req.method + " " + ForLog(req.path) + " threw");
    res = Response();
    SetPlainText(&res, 500, "internal server error\n");
  }
}

void Server::Impl::Write(const httplib::Request& in, Response& res, httplib::Response& out) const {
  out.status = res.status;
  for (const auto& [name, value] : res.headers) {
    if (!IsServerManagedHeader(ToLowerAscii(name))) out.set_header(name, value);
  }
  for (const auto& [name, value] : web.http.headers) {
    if (!out.has_header(name)) out.set_header(name, value);
  }
  if (res.body.empty()) {
    out.set_header("Content-Type", res.content_type);
    return;
  }
  // The body goes out through a content provider, which httplib never compresses on its own: it
  // would otherwise gzip (or brotli) every text body, however small, by its own rules.
  auto body = std::make_shared<std::string>(std::move(res.body));
  if (body->size() >= kGzipMinBytes) {
    out.set_header("Vary", "Accept-Encoding");
    std::string compressed;
    if (AcceptsGzip(in.get_header_value("Accept-Encoding")) && GzipCompress(*body, &compressed)) {
      *body = std::move(compressed);
      out.set_header("Content-Encoding", "gzip");
    }
  }
  out.set_content_provider(body->size(), res.content_type,
                           [body](size_t offset, size_t length, httplib::DataSink& sink) {
                             return sink.write(body->data() + offset, length);
                           });
}

// ---- Server -------------------------------------------------------------------------------------

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() {
  Stop();
}

gw::Expected<std::unique_ptr<Server>> Server::Create(ServerOptions options, gw::Logger* log) {
  auto impl = std::make_unique<Impl>();
  impl->log = log;
  auto address = ParseListenAddress(options.listen_address);
  if (!address.ok()) return address.error();
  impl->address = std::move(*address);
  if (options.worker_threads < 1) return gw::Error{"http: worker_threads must be at least 1"};
  if (!(options.read_timeout_s > 0) || !(options.write_timeout_s > 0)) {
    return gw::Error{"http: read and write timeouts must be positive"};
  }

  if (!options.web_config_file.empty()) {
    auto web = LoadWebConfig(options.web_config_file);
    if (!web.ok()) return web.error();
    impl->web = std::move(*web);
    for (const auto& warning : impl->web.warnings) {
      if (log) log->Warn(warning);
    }
  }
  if (impl->web.tls) {
    gw::Status tls_status;
    const TlsServerConfig& tls = *impl->web.tls;
    auto server = std::make_unique<httplib::SSLServer>([&](SSL_CTX& ctx) {
      tls_status = ConfigureTlsContext(tls, &ctx);
      return tls_status.ok();
    });
    if (!tls_status.ok()) return gw::Error{options.web_config_file + ": " + tls_status.message()};
    if (!server->is_valid()) {
      return gw::Error{options.web_config_file + ": cannot create the TLS context"};
    }
    impl->http = std::move(server);
  } else {
    impl->http = std::make_unique<httplib::Server>();
  }
  if (!impl->web.basic_auth_users.empty()) {
    auto auth = BasicAuth::Create(impl->web.basic_auth_users);
    if (!auth.ok()) return gw::Error{options.web_config_file + ": " + auth.error().message};
    impl->auth = std::move(*auth);
  }
  impl->options = std::move(options);
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

void Server::Get(std::string path, Handler handler) {
  std::lock_guard<std::mutex> lock(impl_->lifecycle_mu);
  if (impl_->started) return;  // contract: routes only before Start()
  impl_->routes[std::move(path)].get = std::move(handler);
}

void Server::Post(std::string path, Handler handler) {
  std::lock_guard<std::mutex> lock(impl_->lifecycle_mu);
  if (impl_->started) return;
  impl_->routes[std::move(path)].post = std::move(handler);
}

void Server::GetPrefix(std::string prefix, Handler handler) {
  std::lock_guard<std::mutex> lock(impl_->lifecycle_mu);
  if (impl_->started) return;
  for (auto& [existing, h] : impl_->prefixes) {
    if (existing == prefix) {
      h = std::move(handler);
      return;
    }
  }
  impl_->prefixes.emplace_back(std::move(prefix), std::move(handler));
}

gw::Status Server::Start() {
  std::lock_guard<std::mutex> lock(impl_->lifecycle_mu);
  if (impl_->started) return gw::Error{"http: server already started"};
  impl_->started = true;
  impl_->Install();

  const ListenAddress& address = impl_->address;
  int port = address.port;
  bool bound = port == 0 ? (port = impl_->http->bind_to_any_port(address.host)) > 0
                         : impl_->http->bind_to_port(address.host, port);
  if (!bound) {
    return gw::Error{"listen " + address.display + ": " + BindFailureReason(address)};
  }
  impl_->bound_port = port;
  impl_->listener = std::thread([impl = impl_.get()] {
    if (!impl->http->listen_after_bind() && impl->log) {
      impl->log->Error("http: listener on " + impl->address.display + " stopped unexpectedly");
    }
    impl->listen_returned = true;
  });
  // Stop() can only interrupt a listener that has begun its accept loop.
  while (!impl_->http->is_running() && !impl_->listen_returned) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  bool v6 = address.host.find(':') != std::string::npos;
  std::string shown = (v6 ? "[" + address.host + "]" : address.host) + ":" + std::to_string(port);
  impl_->Info(std::string("http: listening on ") + (tls() ? "https://" : "http://") + shown +
              (impl_->auth ? " (basic auth)" : ""));
  return gw::Status::Ok();
}

int Server::port() const {
  return impl_->bound_port;
}

bool Server::tls() const {
  return impl_->web.tls.has_value();
}

void Server::Stop() {
  std::lock_guard<std::mutex> lock(impl_->lifecycle_mu);
  if (!impl_->listener.joinable()) return;
  impl_->http->stop();
  impl_->listener.join();
  impl_->Info("http: stopped listening on " + impl_->address.display);
}

}  // namespace gw::http
