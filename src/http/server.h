// gpuwarden's HTTP server: exact-path and prefix routes, HTTP basic auth and TLS from a
// Prometheus web configuration file (see web_config.h and docs/web-config.md), gzip, and an
// access log at debug level. Our own small HTTP/1.1 core (request_parser.h for the bytes,
// OpenSSL for TLS); nothing of it leaks out of src/http.
//
// Usage:
//   auto server = gw::http::Server::Create({.listen_address = ":9966"}, &logger);
//   if (!server.ok()) return Fail(server.error().message);
//   (*server)->Get("/metrics", [&](const Request& req, Response& res) { res.body = ...; });
//   if (auto s = (*server)->Start(); !s.ok()) return Fail(s.message());
//   ...
//   (*server)->Stop();
//
// Connections: one thread accepts and reads every connection without blocking (epoll), with a
// deadline for the whole request head, one for the whole body, one for the whole response and
// one for an idle keep-alive connection; a slow client costs a socket and a buffer, never a
// worker. Only complete requests reach a worker. Keep-alive, pipelining, Content-Length and
// chunked bodies, `Expect: 100-continue`.
//
// What every request goes through, in order:
//   1. The head is parsed (limits in request_parser.h: 400, 414, 431, 501, 505 on violation).
//   2. Authentication, when the web config has basic_auth_users, before any byte of the body is
//      read or decoded: a request without valid credentials gets 401 with
//      `WWW-Authenticate: Basic`, whatever its path. (bcrypt runs on a worker, not the reader.)
//   3. Routing: an unknown path gets 404 "404 page not found"; a known path with a method it has
//      no handler for gets 405 with an `Allow` header. HEAD is served by the GET handler (the
//      body is not sent). Exact routes win over prefix routes; the longest prefix wins. The body
//      of a refused request is drained unread so the connection stays usable.
//   4. The body, for a route that takes one: larger than max_request_body_bytes gets 413, before
//      and after decoding: a `Content-Encoding: gzip` (or deflate) body is inflated as it
//      arrives and refused as soon as the inflated size passes the limit. Other encodings and
//      multipart/form-data get 415.
//   5. The handler, on a worker of the route's class (priority, query when configured, or
//      general): priority_paths (/metrics, /healthz,
//      /readyz) have their own priority_threads, so slow queries or a full queue never delay
//      them. An exception escaping a handler becomes a 500 and an error log line. A class whose
//      queue holds max_queued_requests already answers 503.
//   6. The response: the web config's extra headers are added (unless the handler set the same
//      name); a body of kGzipMinBytes or more is gzipped when the request's Accept-Encoding
//      admits gzip (with `Vary: Accept-Encoding`). Range requests are ignored: handlers always
//      produce whole representations, as Prometheus' do.
//
// Threading: handlers run on the server's worker threads, so they must be thread-safe. Routes
// must be registered before Start(); after it the route table is read without locks. Start(),
// Stop() and the destructor must not be called from a handler.
//
// The process should ignore SIGPIPE (signal(SIGPIPE, SIG_IGN) in main); the server sends with
// MSG_NOSIGNAL, but OpenSSL may write on its own.
#ifndef GPUWARDEN_HTTP_SERVER_H_
#define GPUWARDEN_HTTP_SERVER_H_

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/log.h"

namespace gw::http {

// What a handler sees. All strings are decoded; the request owns them.
struct Request {
  std::string method;  // as sent: "GET", "HEAD", "POST", ...
  std::string path;    // percent-decoded, without the query string
  // Query string and, for an application/x-www-form-urlencoded body, the form fields, decoded
  // with Go's rules. Body fields come before query fields of the same name, so param() prefers
  // the body, as Go's Request.FormValue does.
  std::multimap<std::string, std::string> params;
  std::multimap<std::string, std::string> headers;  // names lower-cased
  std::string body;                                 // empty for GET and HEAD
  std::string remote_addr;                          // peer IP address, without the port

  // The first value of a header, by case-insensitive name; "" if absent.
  std::string header(std::string_view name) const;
  // The first value of a parameter; "" if absent.
  std::string param(std::string_view name) const;
  // Every value of a parameter, in order ("match[]" in the Prometheus API).
  std::vector<std::string> params_all(std::string_view name) const;
};

// What a handler fills in. The server sets Content-Length, Content-Encoding, Transfer-Encoding
// and Connection itself; `headers` entries with those names (or Content-Type, which comes from
// `content_type`) are ignored.
struct Response {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // Run by the worker once the response is handed to the connection for sending: work the
  // client need not wait for (the query API gives freed heap back to the kernel here). An
  // exception it throws is logged. Not run when the handler threw.
  std::function<void()> after_send;
};

using Handler = std::function<void(const Request&, Response&)>;

struct ServerOptions {
  // "host:port", ":port" (all IPv4 interfaces, 0.0.0.0), "[v6addr]:port". Port 0 picks a free
  // port; port() tells which.
  std::string listen_address;
  // Path of a Prometheus web configuration file; empty: plain HTTP without authentication.
  std::string web_config_file;
  // Workers for every route but the priority ones.
  int worker_threads = 8;
  // Workers of their own for GET/HEAD of these exact paths: what monitoring and probes ask.
  int priority_threads = 2;
  std::vector<std::string> priority_paths = {"/metrics", "/healthz", "/readyz"};
  // With query_threads > 0: workers of their own for any method of these exact paths (the query
  // API), so queries waiting for their turn hold neither the general workers nor the priority
  // ones; more wait in this class's queue. 0: these paths are general routes.
  int query_threads = 0;
  std::vector<std::string> query_paths;
  // Deadlines for a whole phase, not per read: the request head (a new connection: from accept,
  // the TLS handshake included; a kept-alive one: from the first byte of the next request), the
  // body, the response, and the wait for a next request on a kept-alive connection. A client
  // that misses one is disconnected (408 when it had sent part of a request).
  double header_timeout_s = 10;
  double body_timeout_s = 30;
  double write_timeout_s = 30;
  double idle_timeout_s = 5;
  // Connections held at once. A new one beyond it replaces the oldest connection that has not
  // sent a whole request yet; with none such, the new one is closed at once.
  size_t max_connections = 1024;
  // Complete requests waiting for a worker, per class; more get 503.
  size_t max_queued_requests = 1024;
  // Larger request bodies get 413, as sent and after Content-Encoding is decoded.
  size_t max_request_body_bytes = 16u << 20;
};

class Server {
 public:
  // Bodies smaller than this are sent uncompressed: gzip would not pay for its header.
  static constexpr size_t kGzipMinBytes = 1024;

  // Validates the options, parses the web config (errors read "FILE:LINE: what is wrong") and,
  // for TLS, loads the certificate, key and client CA now, so configuration mistakes surface
  // before anything listens. `log` may be null (no logging); otherwise it must outlive the
  // server. Web-config warnings are logged here.
  static gw::Expected<std::unique_ptr<Server>> Create(ServerOptions options, gw::Logger* log);

  // Routes. `path` must start with '/'; registering the same method and path twice replaces the
  // handler. Calls after Start() are ignored.
  void Get(std::string path, Handler handler);
  void Post(std::string path, Handler handler);
  // GET (and HEAD) of any path that starts with `prefix` and has no exact route.
  void GetPrefix(std::string prefix, Handler handler);

  // Binds the listen address and serves on background threads. Fails with a message that names
  // the address ("listen 0.0.0.0:9966: address already in use"); a port held by another process
  // is never shared (no SO_REUSEPORT). Not restartable: one Start per Server.
  gw::Status Start();

  // The bound port once Start() succeeded (useful with port 0); 0 before.
  int port() const;
  // True when the web config turned TLS on.
  bool tls() const;

  // Stops accepting, closes idle connections, lets requests already on a worker finish (their
  // responses are sent, for up to write_timeout_s) and joins every thread; requests still queued
  // are dropped. Idempotent; also called by the destructor.
  void Stop();

  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

 private:
  struct Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gw::http

#endif  // GPUWARDEN_HTTP_SERVER_H_
