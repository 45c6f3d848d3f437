// The HTTP server (server.h): the epoll loop that accepts and reads every connection, the
// per-connection state machine (head, authentication, routing, body, response, keep-alive,
// linger), the worker pools and the listener setup.
//
// Why one file of ~1.5k lines: nearly all of it is Server::Impl, one object whose state (the
// connection table, deadlines, epoll interest, the completion queue) every step of the state
// machine reads and changes on the loop thread. Split across files, each piece would need that
// whole private state in a shared header, and a reader would lose the order of the steps, which
// the file follows top to bottom (accept → read head → auth → route → body → worker → write →
// keep-alive or close). The parts that stand alone already live elsewhere: request_parser.h
// (bytes to request head), codec.h (gzip, form decoding), tls_context.h, basic_auth.h.
#include "http/server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "http/basic_auth.h"
#include "http/codec.h"
#include "http/request_parser.h"
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

// Binds and listens on the first address `address` resolves to that accepts it. SO_REUSEADDR
// only (a restart over TIME_WAIT sockets), never SO_REUSEPORT, which would let a second process
// share a port already in use. Errors read "address already in use", "cannot resolve ...".
gw::Expected<int> BindListener(const ListenAddress& address) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* result = nullptr;
  int rc = getaddrinfo(address.host.c_str(), std::to_string(address.port).c_str(), &hints, &result);
  if (rc != 0) return gw::Error{"cannot resolve \"" + address.host + "\": " + gai_strerror(rc)};
  std::string reason;
  int bound = -1;
  for (addrinfo* ai = result; ai && bound < 0; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0) {
      reason = std::strerror(errno);
      continue;
    }
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
      reason = std::strerror(errno);
      close(fd);
      continue;
    }
    bound = fd;
  }
  freeaddrinfo(result);
  if (bound >= 0) return bound;
  if (reason.empty()) reason = "bind failed";
  reason[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(reason[0])));
  return gw::Error{reason};
}

// ---- Small helpers ----------------------------------------------------------------------------

bool IsServerManagedHeader(const std::string& lower_name) {
  return lower_name == "content-type" || lower_name == "content-length" ||
         lower_name == "content-encoding" || lower_name == "transfer-encoding" ||
         lower_name == "connection";
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

// ---- Connections and workers ------------------------------------------------------------------

namespace {

using Clock = std::chrono::steady_clock;
constexpr Clock::time_point kNever = Clock::time_point::max();
constexpr uint64_t kListenerId = 0;
constexpr uint64_t kWakeId = 1;
// After a response that closes the connection, unread input is drained this long so the client
// reads the response instead of a reset.
constexpr double kLingerSeconds = 2;

Clock::time_point After(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// What the worker must know to put a response on the wire.
struct ReplyShape {
  bool head_only = false;  // HEAD: headers only
  bool gzip_ok = false;    // Accept-Encoding admits gzip
  bool keep_alive = true;  // else "Connection: close" and the connection is closed after
  bool http10 = false;     // an HTTP/1.0 client asked for keep-alive: say so explicitly
};

// A request handed to a worker.
struct Job {
  uint64_t conn_id = 0;
  bool auth_only = false;            // only check the credentials (a body waits on them)
  bool check_auth = false;           // check the credentials before anything else
  const Handler* handler = nullptr;  // null: send `prebuilt`
  Response prebuilt;
  Request req;
  ReplyShape shape;
  Clock::time_point start;
};

struct Completion {
  enum class Kind { kResponse, kAuth, kDropped };
  Kind kind = Kind::kResponse;
  uint64_t conn_id = 0;
  std::string wire;  // kResponse: the whole response
  bool close = false;
  bool auth_ok = false;
};

class Pool {
 public:
  Pool(const char* name, size_t max_queued) : name_(name), max_queued_(max_queued) {}
  const char* name() const { return name_; }

  void Start(int threads, const std::function<void(Job&)>& run) {
    for (int i = 0; i < threads; ++i) {
      threads_.emplace_back([this, run] {
        while (true) {
          Job job;
          {
            std::unique_lock<std::mutex> lock(mu_);
            cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
            if (stop_) return;
            job = std::move(jobs_.front());
            jobs_.pop_front();
          }
          run(job);
        }
      });
    }
  }
  // False when the queue is full or the pool stopped.
  bool Push(Job job) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_ || jobs_.size() >= max_queued_) return false;
      jobs_.push_back(std::move(job));
    }
    cv_.notify_one();
    return true;
  }
  // Stops taking jobs; returns the connection ids of the queued ones, which will never run.
  std::vector<uint64_t> Drop() {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    std::vector<uint64_t> ids;
    for (const Job& job : jobs_) ids.push_back(job.conn_id);
    jobs_.clear();
    cv_.notify_all();
    return ids;
  }
  void Join() {
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

 private:
  const char* name_;
  size_t max_queued_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

struct Conn {
  enum class State {
    kHandshake,  // TLS handshake
    kHead,       // reading a request head (or idle between requests)
    kBody,       // reading the body of an accepted request
    kDiscard,    // draining the body of a refused request, then sending `pending`
    kAuthWait,   // a worker checks the credentials; the body waits
    kBusy,       // a worker runs the handler
    kWrite,      // sending the response
    kLinger,     // response sent, write side shut: draining input until EOF
  };

  uint64_t id = 0;
  int fd = -1;
  SSL* ssl = nullptr;
  std::string remote;
  State state = State::kHead;
  Clock::time_point deadline = kNever;
  bool idle = true;  // kHead: no byte of the next request yet
  uint32_t events = 0;
  bool registered = true;
  bool want_write_for_read = false;  // TLS: a read needs the socket writable
  bool want_read_for_write = false;  // TLS: a write needs the socket readable
  bool dead = false;                 // peer gone while a worker had the request

  std::string in;  // received bytes not consumed yet

  // The current request.
  Request req;
  Pool* pool = nullptr;
  const Handler* handler = nullptr;
  ReplyShape shape;
  Clock::time_point start;
  BodyFraming framing;
  uint64_t length_left = 0;  // kLength bodies
  std::unique_ptr<ChunkedDecoder> chunked;
  std::unique_ptr<BodyInflater> inflater;
  uint64_t raw_bytes = 0;
  bool expect_continue = false;
  std::string query;  // the raw query string, decoded into params by Dispatch
  Response pending;   // kDiscard: the answer once the body is drained (status 0: dispatch)

  std::string out;  // bytes to send
  size_t out_off = 0;
  bool close_after = false;

  void ResetRequest() {
    req = Request();
    pool = nullptr;
    handler = nullptr;
    shape = ReplyShape();
    framing = BodyFraming();
    length_left = 0;
    chunked.reset();
    inflater.reset();
    raw_bytes = 0;
    expect_continue = false;
    query.clear();
    pending = Response();
  }
};

bool HasToken(std::string_view list, std::string_view token) {
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (ToLowerAscii(item) == token) return true;
  }
  return false;
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
  SSL_CTX* ssl_ctx = nullptr;       // null: plain HTTP

  std::map<std::string, Route, std::less<>> routes;
  std::vector<std::pair<std::string, Handler>> prefixes;

  std::mutex lifecycle_mu;
  bool started = false;
  bool stopped = false;
  std::atomic<int> bound_port{0};
  std::atomic<bool> stopping{false};
  std::thread loop;

  int listen_fd = -1;
  int epoll_fd = -1;
  int wake_fd = -1;
  Clock::time_point accept_paused_until{};
  bool listener_registered = false;

  std::unique_ptr<Pool> general;
  std::unique_ptr<Pool> priority;
  std::unique_ptr<Pool> query_pool;  // null without query_threads

  std::mutex done_mu;
  std::vector<Completion> done;

  // Loop thread only.
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns;
  uint64_t next_id = 2;

  ~Impl() {
    if (ssl_ctx) SSL_CTX_free(ssl_ctx);
    for (int fd : {listen_fd, epoll_fd, wake_fd}) {
      if (fd >= 0) close(fd);
    }
  }

  void Info(const std::string& m) {
    if (log) log->Info(m);
  }

  // Routing and responses (any thread).
  const Handler* FindPrefix(std::string_view path) const;
  // The handler for the request, or the 404/405 answer in `res`.
  const Handler* Lookup(const Request& req, Response* res) const;
  // The workers of a routed request: the priority class or the general one.
  Pool* PoolFor(const Request& req) const;
  void RunHandler(const Handler& handler, const Request& req, Response& res) const;
  std::string Wire(Response& res, const ReplyShape& shape) const;
  void AccessLog(const Request& req, int status, size_t bytes, Clock::time_point start) const;
  void RunJob(Job& job);
  void Post(Completion c);

  // The loop (its thread only).
  void Loop();
  void AcceptAll();
  bool EvictOne();
  void DrainCompletions();
  void HandleCompletion(Conn* c, Completion d);
  // The earliest deadline the loop must act on (kNever: none), and epoll_wait's timeout for it.
  Clock::time_point NextDue() const;
  static int TimeoutMs(Clock::time_point due);
  void Sweep();
  void BeginStop();
  void OnEvent(Conn* c, uint32_t events);
  void Drive(Conn* c);
  void ReadHead(Conn* c);
  void OnHead(Conn* c, RequestHead head);
  void AfterAuth(Conn* c);
  void ReadBody(Conn* c);
  void PrepareBody(Conn* c);
  bool ConsumeBody(Conn* c, std::string_view data, size_t* consumed, bool* complete);
  void Dispatch(Conn* c);
  void Refuse(Conn* c, Response res);
  void Reply(Conn* c, Response res);
  void ProtocolError(Conn* c, int status, const std::string& why);
  void Enqueue(Conn* c, Job job);
  void Flush(Conn* c);
  void AfterWrite(Conn* c);
  void Linger(Conn* c);
  void Close(Conn* c);
  void Interest(Conn* c);
  // Non-blocking I/O, plain or TLS: > 0 bytes, 0 end of stream, -1 would block, -2 failed.
  ssize_t Recv(Conn* c, char* buf, size_t size);
  ssize_t Send(Conn* c, const char* buf, size_t size);
};

// ---- Routing and responses ----------------------------------------------------------------------

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

Pool* Server::Impl::PoolFor(const Request& req) const {
  const bool priority_route =
      (req.method == "GET" || req.method == "HEAD") &&
      std::find(options.priority_paths.begin(), options.priority_paths.end(), req.path) !=
          options.priority_paths.end();
  if (priority_route) return priority.get();
  if (query_pool && std::find(options.query_paths.begin(), options.query_paths.end(), req.path) !=
                        options.query_paths.end())
    return query_pool.get();
  return general.get();
}

const Handler* Server::Impl::Lookup(const Request& req, Response* res) const {
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
    SetPlainText(res, 404, "404 page not found\n");
    return nullptr;
  }
  if (!handler) {
    SetPlainText(res, 405, "Method Not Allowed\n");
    res->headers.emplace_back("Allow", allow);
  }
  return handler;
}

void Server::Impl::RunHandler(const Handler& handler, const Request& req, Response& res) const {
  try {
    handler(req, res);
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

std::string Server::Impl::Wire(Response& res, const ReplyShape& shape) const {
  std::string head = "HTTP/1.1 " + std::to_string(res.status) + " ";
  std::string_view reason = ReasonPhrase(res.status);
  head += reason.empty() ? "Status" : reason;
  head += "\r\n";
  std::vector<std::string> names;  // lower-cased names already written
  auto add = [&](std::string_view name, std::string_view value) {
    // Values come from handlers and the web config; a CR or LF in them would split the response.
    std::string clean;
    for (char ch : value) clean.push_back(ch == '\r' || ch == '\n' ? ' ' : ch);
    head.append(name).append(": ").append(clean).append("\r\n");
    names.push_back(ToLowerAscii(name));
  };
  for (const auto& [name, value] : res.headers) {
    if (name.empty() || name.find_first_of(":\r\n ") != std::string::npos) continue;
    if (!IsServerManagedHeader(ToLowerAscii(name))) add(name, value);
  }
  for (const auto& [name, value] : web.http.headers) {
    if (std::find(names.begin(), names.end(), ToLowerAscii(name)) == names.end()) add(name, value);
  }
  add("Content-Type", res.content_type);
  if (res.body.size() >= Server::kGzipMinBytes) {
    add("Vary", "Accept-Encoding");
    std::string compressed;
    if (shape.gzip_ok && GzipCompress(res.body, &compressed)) {
      res.body = std::move(compressed);
      add("Content-Encoding", "gzip");
    }
  }
  add("Content-Length", std::to_string(res.body.size()));
  if (!shape.keep_alive) {
    add("Connection", "close");
  } else if (shape.http10) {
    add("Connection", "keep-alive");
  }
  head += "\r\n";
  if (!shape.head_only) head += res.body;
  return head;
}

void Server::Impl::AccessLog(const Request& req, int status, size_t bytes,
                             Clock::time_point start) const {
  if (!log) return;
  double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  char timing[32];
  std::snprintf(timing, sizeof(timing), "%.1fms", ms);
  log->Debug("http " + (req.method.empty() ? std::string("-") : ForLog(req.method)) + " " +
             ForLog(req.path) + " " + std::to_string(status) + " " + std::to_string(bytes) + "B " +
             timing + " from " + req.remote_addr);
}

void Server::Impl::RunJob(Job& job) {
  if (job.auth_only) {
    Completion c;
    c.kind = Completion::Kind::kAuth;
    c.conn_id = job.conn_id;
    c.auth_ok = auth->Check(job.req.header("authorization"));
    Post(std::move(c));
    return;
  }
  Response res;
  if (job.check_auth && !auth->Check(job.req.header("authorization"))) {
    SetPlainText(&res, 401, "Unauthorized\n");
    res.headers.emplace_back("WWW-Authenticate", "Basic");
  } else if (job.handler) {
    RunHandler(*job.handler, job.req, res);
  } else {
    res = std::move(job.prebuilt);
  }
  const size_t bytes = res.body.size();
  const int status = res.status;
  Completion c;
  c.conn_id = job.conn_id;
  c.wire = Wire(res, job.shape);
  c.close = !job.shape.keep_alive;
  AccessLog(job.req, status, bytes, job.start);
  Post(std::move(c));
  if (res.after_send) {
    try {
      res.after_send();
    } catch (...) {
      if (log) log->Error("http: work after the response to " + ForLog(job.req.path) + " threw");
    }
  }
}

void Server::Impl::Post(Completion c) {
  {
    std::lock_guard<std::mutex> lock(done_mu);
    done.push_back(std::move(c));
  }
  uint64_t one = 1;
  ssize_t n = write(wake_fd, &one, sizeof one);
  (void)n;  // the counter saturating is harmless: the loop drains everything on one wake
}

// ---- The loop -----------------------------------------------------------------------------------

void Server::Impl::Loop() {
  epoll_event events[256];
  Clock::time_point stop_deadline = kNever;
  while (true) {
    // Sleep until the nearest deadline (a connection's, the paused listener's, the stop's):
    // an idle server does not wake up at all. Everything else that needs the loop (a worker's
    // answer, Stop) writes to wake_fd. The cap only bounds the cost of a forgotten wake-up.
    const int n = epoll_wait(epoll_fd, events, 256, TimeoutMs(std::min(NextDue(), stop_deadline)));
    for (int i = 0; i < n; ++i) {
      const uint64_t id = events[i].data.u64;
      if (id == kListenerId) {
        AcceptAll();
      } else if (id == kWakeId) {
        uint64_t count = 0;
        ssize_t r = read(wake_fd, &count, sizeof count);
        (void)r;
      } else if (auto it = conns.find(id); it != conns.end()) {
        OnEvent(it->second.get(), events[i].events);
      }
    }
    DrainCompletions();
    if (stopping && stop_deadline == kNever) {
      BeginStop();
      stop_deadline = After(options.write_timeout_s);
    }
    if (stopping && (conns.empty() || Clock::now() >= stop_deadline)) break;
    if (Clock::now() >= NextDue()) Sweep();
  }
  std::vector<Conn*> left;
  for (auto& [id, conn] : conns) left.push_back(conn.get());
  for (Conn* c : left) Close(c);
}

void Server::Impl::BeginStop() {
  if (listener_registered) epoll_ctl(epoll_fd, EPOLL_CTL_DEL, listen_fd, nullptr);
  listener_registered = false;
  close(listen_fd);
  listen_fd = -1;
  // Requests still waiting for a worker never run; their connections close.
  for (Pool* pool : {general.get(), priority.get(), query_pool.get()}) {
    if (pool == nullptr) continue;
    for (uint64_t id : pool->Drop()) {
      Completion c;
      c.kind = Completion::Kind::kDropped;
      c.conn_id = id;
      Post(std::move(c));
    }
  }
  std::vector<Conn*> idle;
  for (auto& [id, conn] : conns) {
    if (conn->state != Conn::State::kBusy && conn->state != Conn::State::kWrite) {
      idle.push_back(conn.get());
    }
  }
  for (Conn* c : idle) Close(c);
}

void Server::Impl::AcceptAll() {
  while (true) {
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    int fd =
        accept4(listen_fd, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors: stop accepting for a moment instead of spinning on the listener.
        if (log) log->Warn(std::string("http: accept: ") + std::strerror(errno));
        epoll_ctl(epoll_fd, EPOLL_CTL_DEL, listen_fd, nullptr);
        listener_registered = false;
        accept_paused_until = After(0.1);
      }
      return;  // EAGAIN, or a connection that went away before we took it
    }
    if (stopping) {
      close(fd);
      continue;
    }
    if (conns.size() >= options.max_connections && !EvictOne()) {
      close(fd);
      continue;
    }
    int yes = 1;
    // Small responses go out at once: without it, Nagle plus the client's delayed ACK adds
    // ~40 ms to keep-alive exchanges.
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    auto conn = std::make_unique<Conn>();
    conn->id = next_id++;
    conn->fd = fd;
    char text[INET6_ADDRSTRLEN] = "";
    if (peer.ss_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&peer)->sin_addr, text, sizeof text);
    } else if (peer.ss_family == AF_INET6) {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&peer)->sin6_addr, text, sizeof text);
    }
    conn->remote = text;
    conn->deadline = After(options.header_timeout_s);
    if (ssl_ctx) {
      conn->ssl = SSL_new(ssl_ctx);
      if (!conn->ssl || SSL_set_fd(conn->ssl, fd) != 1) {
        if (conn->ssl) SSL_free(conn->ssl);
        close(fd);
        continue;
      }
      SSL_set_accept_state(conn->ssl);
      conn->state = Conn::State::kHandshake;
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = conn->id;
    if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
      if (conn->ssl) SSL_free(conn->ssl);
      close(fd);
      continue;
    }
    conn->events = EPOLLIN;
    Conn* c = conn.get();
    conns.emplace(c->id, std::move(conn));
    Drive(c);  // data may already be there
  }
}

// At the connection limit, a new connection is worth more than the oldest one that has not
// sent a whole request (idle, half-sent or mid-handshake): that one is closed, so a crowd of
// slow clients cannot keep a prober out. False if every connection has a request in progress.
bool Server::Impl::EvictOne() {
  Conn* victim = nullptr;
  for (auto& [id, conn] : conns) {
    const bool waiting =
        conn->state == Conn::State::kHead || conn->state == Conn::State::kHandshake;
    if (waiting && (!victim || conn->id < victim->id)) victim = conn.get();
  }
  if (!victim) return false;
  Close(victim);
  return true;
}

void Server::Impl::DrainCompletions() {
  std::vector<Completion> batch;
  {
    std::lock_guard<std::mutex> lock(done_mu);
    batch.swap(done);
  }
  for (Completion& d : batch) {
    auto it = conns.find(d.conn_id);
    if (it == conns.end()) continue;
    Conn* c = it->second.get();
    if (c->dead || d.kind == Completion::Kind::kDropped) {
      Close(c);
      continue;
    }
    const uint64_t id = d.conn_id;
    HandleCompletion(c, std::move(d));
    if (auto again = conns.find(id); again != conns.end()) Interest(again->second.get());
  }
}

void Server::Impl::HandleCompletion(Conn* c, Completion d) {
  {
    if (d.kind == Completion::Kind::kAuth) {
      if (d.auth_ok) {
        AfterAuth(c);
      } else {
        Response res;
        SetPlainText(&res, 401, "Unauthorized\n");
        res.headers.emplace_back("WWW-Authenticate", "Basic");
        Refuse(c, std::move(res));
      }
      return;
    }
    c->out += d.wire;
    c->close_after = c->close_after || d.close || stopping;
    c->state = Conn::State::kWrite;
    c->deadline = After(options.write_timeout_s);
    Flush(c);
  }
}

Clock::time_point Server::Impl::NextDue() const {
  Clock::time_point due = kNever;
  if (!listener_registered && listen_fd >= 0 && !stopping) due = accept_paused_until;
  for (const auto& [id, conn] : conns) due = std::min(due, conn->deadline);
  return due;
}

int Server::Impl::TimeoutMs(Clock::time_point due) {
  constexpr int kCapMs = 60'000;
  if (due == kNever) return kCapMs;
  const Clock::time_point now = Clock::now();
  if (due <= now) return 0;
  // Rounded up: waking a little after the deadline is fine, before it would spin.
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(due - now).count();
  return ms >= kCapMs ? kCapMs : static_cast<int>(ms);
}

void Server::Impl::Sweep() {
  const Clock::time_point now = Clock::now();
  if (!listener_registered && listen_fd >= 0 && !stopping && now >= accept_paused_until) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kListenerId;
    listener_registered = epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listen_fd, &ev) == 0;
  }
  std::vector<Conn*> expired;
  for (auto& [id, conn] : conns) {
    if (conn->deadline <= now) expired.push_back(conn.get());
  }
  for (Conn* c : expired) {
    switch (c->state) {
      case Conn::State::kHead:
        if (c->idle) {
          Close(c);
        } else {
          ProtocolError(c, 408, "request head not received in time");
        }
        break;
      case Conn::State::kBody:
      case Conn::State::kDiscard:
        ProtocolError(c, 408, "request body not received in time");
        break;
      default:
        Close(c);
    }
  }
}

void Server::Impl::OnEvent(Conn* c, uint32_t events) {
  if (c->state == Conn::State::kBusy || c->state == Conn::State::kAuthWait) {
    if (events & (EPOLLHUP | EPOLLERR)) {
      // The peer is gone; the worker's answer has nowhere to go. Stop watching the socket (a
      // hung-up socket would wake the loop forever) and close when the worker is done.
      c->dead = true;
      epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c->fd, nullptr);
      c->registered = false;
      return;
    }
    Interest(c);  // stop watching for input until the worker is done
    return;
  }
  if ((events & EPOLLERR) && c->state != Conn::State::kLinger) {
    Close(c);
    return;
  }
  Drive(c);
}

// Does whatever the connection's state allows now, then updates what epoll watches.
void Server::Impl::Drive(Conn* c) {
  const uint64_t id = c->id;
  switch (c->state) {
    case Conn::State::kHandshake: {
      ERR_clear_error();
      int rc = SSL_accept(c->ssl);
      if (rc == 1) {
        c->state = Conn::State::kHead;
        c->idle = false;  // the header deadline from accept keeps running
        c->want_write_for_read = false;
        ReadHead(c);
        break;
      }
      int err = SSL_get_error(c->ssl, rc);
      if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
        c->want_write_for_read = err == SSL_ERROR_WANT_WRITE;
        break;
      }
      if (log) log->Debug("http: TLS handshake with " + c->remote + " failed");
      Close(c);
      return;
    }
    case Conn::State::kHead:
      ReadHead(c);
      break;
    case Conn::State::kBody:
    case Conn::State::kDiscard:
      ReadBody(c);
      break;
    case Conn::State::kWrite:
      Flush(c);
      break;
    case Conn::State::kLinger:
      Linger(c);
      break;
    case Conn::State::kAuthWait:
    case Conn::State::kBusy:
      break;
  }
  if (auto it = conns.find(id); it != conns.end()) Interest(it->second.get());
}

void Server::Impl::Interest(Conn* c) {
  if (!c->registered) return;
  uint32_t want = 0;
  switch (c->state) {
    case Conn::State::kHandshake:
      want = c->want_write_for_read ? EPOLLOUT : EPOLLIN;
      break;
    case Conn::State::kHead:
    case Conn::State::kBody:
    case Conn::State::kDiscard:
    case Conn::State::kLinger:
      want = c->want_write_for_read ? EPOLLOUT : EPOLLIN;
      if (c->out_off < c->out.size()) want |= EPOLLOUT;  // a 100 Continue still going out
      break;
    case Conn::State::kWrite:
      want = c->want_read_for_write ? EPOLLIN : EPOLLOUT;
      break;
    case Conn::State::kAuthWait:
    case Conn::State::kBusy:
      want = 0;  // hang-ups and errors are reported anyway
      break;
  }
  if (want == c->events) return;
  epoll_event ev{};
  ev.events = want;
  ev.data.u64 = c->id;
  if (epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c->fd, &ev) == 0) c->events = want;
}

ssize_t Server::Impl::Recv(Conn* c, char* buf, size_t size) {
  if (!c->ssl) {
    ssize_t n = recv(c->fd, buf, size, 0);
    if (n > 0) return n;
    if (n == 0) return 0;
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return -1;
    return -2;
  }
  ERR_clear_error();
  int n = SSL_read(c->ssl, buf, static_cast<int>(std::min<size_t>(size, INT32_MAX)));
  if (n > 0) {
    c->want_write_for_read = false;
    return n;
  }
  int err = SSL_get_error(c->ssl, n);
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
    c->want_write_for_read = err == SSL_ERROR_WANT_WRITE;
    return -1;
  }
  if (err == SSL_ERROR_ZERO_RETURN) return 0;
  return -2;
}

ssize_t Server::Impl::Send(Conn* c, const char* buf, size_t size) {
  if (!c->ssl) {
    ssize_t n = send(c->fd, buf, size, MSG_NOSIGNAL);
    if (n >= 0) return n;
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return -1;
    return -2;
  }
  ERR_clear_error();
  int n = SSL_write(c->ssl, buf, static_cast<int>(std::min<size_t>(size, 1 << 20)));
  if (n > 0) {
    c->want_read_for_write = false;
    return n;
  }
  int err = SSL_get_error(c->ssl, n);
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
    c->want_read_for_write = err == SSL_ERROR_WANT_READ;
    return -1;
  }
  return -2;
}

void Server::Impl::ReadHead(Conn* c) {
  const HeadLimits limits;
  char buf[16384];
  while (true) {
    if (!c->in.empty()) {
      HeadParse parsed = ParseRequestHead(c->in, limits);
      if (parsed.status == HeadParse::Status::kError) {
        ProtocolError(c, parsed.error_status, parsed.error);
        return;
      }
      if (parsed.status == HeadParse::Status::kComplete) {
        c->in.erase(0, parsed.consumed);
        OnHead(c, std::move(parsed.head));
        return;
      }
    }
    ssize_t n = Recv(c, buf, sizeof buf);
    if (n == -1) return;
    if (n <= 0) {
      Close(c);  // end of stream or error, mid-head or between requests
      return;
    }
    if (c->idle) {
      // The first byte of a request on a kept-alive connection starts its header deadline.
      c->idle = false;
      c->deadline = After(options.header_timeout_s);
    }
    c->in.append(buf, static_cast<size_t>(n));
  }
}

void Server::Impl::OnHead(Conn* c, RequestHead head) {
  c->ResetRequest();
  c->start = Clock::now();
  Request& req = c->req;
  req.method = head.method;
  req.remote_addr = c->remote;
  for (auto& [name, value] : head.fields) req.headers.emplace(name, value);

  // The target: origin form "/path?query", or absolute form "http://host/path?query".
  std::string_view target = head.target;
  if (target.size() > 0 && target[0] != '/') {
    size_t scheme = target.find("://");
    if (target == "*") {
      target = "*";
    } else if (scheme != std::string_view::npos && scheme > 0) {
      size_t slash = target.find('/', scheme + 3);
      size_t query = target.find('?', scheme + 3);
      if (slash == std::string_view::npos || (query != std::string_view::npos && query < slash)) {
        target = query == std::string_view::npos ? std::string_view("/") : target.substr(query);
      } else {
        target = target.substr(slash);
      }
    } else {
      ProtocolError(c, 400, "malformed request target");
      return;
    }
  }
  size_t question = target.find('?');
  std::string_view raw_path = target.substr(0, question);
  if (!DecodePath(raw_path, &req.path)) {
    ProtocolError(c, 400, "malformed escape in request path");
    return;
  }
  // Decoded by Dispatch, after the form fields of a body (which come first).
  if (question != std::string_view::npos) c->query = std::string(target.substr(question + 1));

  const std::string* connection = head.Field("connection");
  if (head.minor_version == 0) {
    c->shape.keep_alive = connection && HasToken(*connection, "keep-alive");
    c->shape.http10 = c->shape.keep_alive;
  } else {
    c->shape.keep_alive = !(connection && HasToken(*connection, "close"));
  }
  c->shape.head_only = req.method == "HEAD";
  const std::string* accept = head.Field("accept-encoding");
  c->shape.gzip_ok = accept && AcceptsGzip(*accept);
  const std::string* expect = head.Field("expect");
  if (expect) {
    if (ToLowerAscii(*expect) != "100-continue") {
      Response res;
      SetPlainText(&res, 417, "unsupported Expect value\n");
      c->framing = BodyFramingOf(head);
      c->shape.keep_alive = false;
      Reply(c, std::move(res));
      return;
    }
    c->expect_continue = head.minor_version >= 1;
  }

  c->framing = BodyFramingOf(head);
  if (c->framing.kind == BodyFraming::Kind::kError) {
    ProtocolError(c, c->framing.error_status, c->framing.error);
    return;
  }

  if (auth) {
    if (c->framing.kind == BodyFraming::Kind::kNone) {
      // No body: the worker checks the credentials, then routes and serves.
      Response unused;
      c->handler = Lookup(req, &unused);
      c->pool = c->handler ? PoolFor(req) : general.get();
      Dispatch(c);
      return;
    }
    // A body waits until the credentials are known good: nothing of it is read before.
    Job job;
    job.auth_only = true;
    job.req.headers = req.headers;
    c->state = Conn::State::kAuthWait;
    c->deadline = kNever;
    Enqueue(c, std::move(job));
    return;
  }
  AfterAuth(c);
}

// The credentials are good (or none are asked for): route, then read the body or serve.
void Server::Impl::AfterAuth(Conn* c) {
  Request& req = c->req;
  Response res;
  c->handler = Lookup(req, &res);
  if (!c->handler) {
    Refuse(c, std::move(res));
    return;
  }
  c->pool = PoolFor(req);
  if (c->framing.kind == BodyFraming::Kind::kNone) {
    Dispatch(c);
    return;
  }
  if (req.method != "POST") {
    // GET and HEAD handlers take no body: drained, then served.
    PrepareBody(c);
    c->state = Conn::State::kDiscard;
    c->deadline = After(options.body_timeout_s);
    c->pending = Response();
    c->pending.status = 0;  // dispatch once drained
    ReadBody(c);
    return;
  }
  const std::string content_type = ToLowerAscii(req.header("content-type"));
  if (content_type.rfind("multipart/form-data", 0) == 0) {
    SetPlainText(&res, 415,
                 "multipart/form-data is not supported; use application/x-www-form-urlencoded\n");
    Refuse(c, std::move(res));
    return;
  }
  const std::string encoding = req.header("content-encoding");
  if (!encoding.empty() && ToLowerAscii(encoding) != "identity") {
    if (!IsInflatableEncoding(encoding)) {
      SetPlainText(&res, 415, "unsupported Content-Encoding \"" + ForLog(encoding) + "\"\n");
      Refuse(c, std::move(res));
      return;
    }
    c->inflater = std::make_unique<BodyInflater>();
  }
  if (c->framing.kind == BodyFraming::Kind::kLength &&
      c->framing.length > options.max_request_body_bytes) {
    SetPlainText(&res, 413, "request body too large\n");
    c->shape.keep_alive = false;
    Reply(c, std::move(res));
    return;
  }
  PrepareBody(c);
  if (c->expect_continue) {
    c->out += "HTTP/1.1 100 Continue\r\n\r\n";  // flushed as the body is read
  }
  c->state = Conn::State::kBody;
  c->deadline = After(options.body_timeout_s);
  ReadBody(c);
}

void Server::Impl::PrepareBody(Conn* c) {
  c->chunked.reset();
  if (c->framing.kind == BodyFraming::Kind::kChunked) {
    c->chunked = std::make_unique<ChunkedDecoder>();
  }
  c->length_left = c->framing.length;
}

// Takes body bytes from `data`. False when the request was answered with an error.
bool Server::Impl::ConsumeBody(Conn* c, std::string_view data, size_t* consumed, bool* complete) {
  const size_t limit = options.max_request_body_bytes;
  const bool keep = c->state == Conn::State::kBody;
  std::string decoded;  // chunked payload of this piece
  std::string_view payload;
  *complete = false;
  if (c->framing.kind == BodyFraming::Kind::kLength) {
    size_t take = static_cast<size_t>(std::min<uint64_t>(c->length_left, data.size()));
    payload = data.substr(0, take);
    c->length_left -= take;
    *consumed = take;
    *complete = c->length_left == 0;
  } else {
    ChunkedDecoder::Result r = c->chunked->Feed(data, consumed, keep ? &decoded : nullptr);
    if (r == ChunkedDecoder::Result::kError) {
      ProtocolError(c, 400, "malformed chunked body: " + c->chunked->error());
      return false;
    }
    *complete = r == ChunkedDecoder::Result::kDone;
    payload = decoded;
    if (c->chunked->payload_bytes() > limit) {
      Response res;
      SetPlainText(&res, 413, "request body too large\n");
      c->shape.keep_alive = false;
      Reply(c, std::move(res));
      return false;
    }
  }
  if (!keep) return true;
  c->raw_bytes += payload.size();
  if (c->inflater) {
    BodyInflater::Result r = c->inflater->Feed(payload, &c->req.body, limit);
    if (r == BodyInflater::Result::kTooLarge) {
      Response res;
      SetPlainText(
          &res, 413,
          "request body too large once decoded (limit " + std::to_string(limit) + " bytes)\n");
      c->req.body.clear();
      c->req.body.shrink_to_fit();
      c->shape.keep_alive = false;
      Reply(c, std::move(res));
      return false;
    }
    if (r == BodyInflater::Result::kError) {
      ProtocolError(c, 400, "malformed " + ForLog(c->req.header("content-encoding")) + " body");
      return false;
    }
    if (*complete && !c->inflater->finished()) {
      ProtocolError(c, 400, "truncated " + ForLog(c->req.header("content-encoding")) + " body");
      return false;
    }
  } else {
    c->req.body.append(payload);
  }
  return true;
}

void Server::Impl::ReadBody(Conn* c) {
  const uint64_t id = c->id;
  // A 100 Continue still going out.
  while (c->out_off < c->out.size()) {
    ssize_t n = Send(c, c->out.data() + c->out_off, c->out.size() - c->out_off);
    if (n == -1) break;
    if (n < 0) {
      Close(c);
      return;
    }
    c->out_off += static_cast<size_t>(n);
  }
  if (c->out_off == c->out.size()) {
    c->out.clear();
    c->out_off = 0;
  }
  char buf[65536];
  while (true) {
    if (!c->in.empty()) {
      size_t consumed = 0;
      bool complete = false;
      if (!ConsumeBody(c, c->in, &consumed, &complete)) return;
      c->in.erase(0, consumed);
      if (complete) {
        if (c->state == Conn::State::kDiscard && c->pending.status != 0) {
          Response res = std::move(c->pending);
          Reply(c, std::move(res));
        } else {
          Dispatch(c);
        }
        return;
      }
    }
    if (conns.find(id) == conns.end()) return;
    ssize_t n = Recv(c, buf, sizeof buf);
    if (n == -1) return;
    if (n <= 0) {
      Close(c);
      return;
    }
    c->in.append(buf, static_cast<size_t>(n));
  }
}

void Server::Impl::Dispatch(Conn* c) {
  Request& req = c->req;
  if (req.method != "POST") {
    req.body.clear();
  } else if (ToLowerAscii(req.header("content-type"))
                 .rfind("application/x-www-form-urlencoded", 0) == 0) {
    ParseFormInto(req.body, &req.params);
  }
  ParseFormInto(c->query, &req.params);
  Job job;
  if (auth && c->state == Conn::State::kHead) {
    // No body and not yet authenticated: the worker checks first (OnHead).
    job.check_auth = true;
  }
  job.handler = c->handler;
  if (!c->handler) Lookup(req, &job.prebuilt);
  if (!c->pool) c->pool = general.get();
  job.req = std::move(req);
  c->state = Conn::State::kBusy;
  c->deadline = kNever;
  Enqueue(c, std::move(job));
}

void Server::Impl::Enqueue(Conn* c, Job job) {
  job.conn_id = c->id;
  job.shape = c->shape;
  job.start = c->start;
  Pool* pool = c->pool ? c->pool : general.get();
  if (!job.auth_only && job.req.remote_addr.empty()) job.req.remote_addr = c->remote;
  if (!pool->Push(std::move(job))) {
    Response res;
    SetPlainText(&res, 503, "server busy: too many requests waiting\n");
    if (log) log->Warn(std::string("http: the ") + pool->name() + " queue is full; answered 503");
    c->shape.keep_alive = false;
    c->framing = BodyFraming();  // an unread body is not drained: the connection closes
    Reply(c, std::move(res));
  }
}

// A refused request: its body (if any) is drained unread, then `res` is sent.
void Server::Impl::Refuse(Conn* c, Response res) {
  if (c->framing.kind == BodyFraming::Kind::kNone) {
    Reply(c, std::move(res));
    return;
  }
  const bool too_big = c->framing.kind == BodyFraming::Kind::kLength &&
                       c->framing.length > options.max_request_body_bytes;
  if (too_big || c->expect_continue) {
    // Not worth draining (or the client waits for our word before sending it): answer and close.
    c->shape.keep_alive = false;
    Reply(c, std::move(res));
    return;
  }
  PrepareBody(c);
  c->inflater.reset();
  c->pending = std::move(res);
  if (c->pending.status == 0) c->pending.status = 500;
  c->state = Conn::State::kDiscard;
  c->deadline = After(options.body_timeout_s);
  ReadBody(c);
}

// Sends `res` from the loop (errors, refusals): small bodies, no handler.
void Server::Impl::Reply(Conn* c, Response res) {
  if (c->req.remote_addr.empty()) c->req.remote_addr = c->remote;
  AccessLog(c->req, res.status, res.body.size(), c->start);
  c->out += Wire(res, c->shape);
  c->close_after = !c->shape.keep_alive || stopping;
  c->state = Conn::State::kWrite;
  c->deadline = After(options.write_timeout_s);
  Flush(c);
}

void Server::Impl::ProtocolError(Conn* c, int status, const std::string& why) {
  Response res;
  SetPlainText(&res, status, why + "\n");
  c->shape = ReplyShape();
  c->shape.keep_alive = false;
  if (c->start == Clock::time_point()) c->start = Clock::now();
  c->state = Conn::State::kHead;  // whatever was read is abandoned
  c->framing = BodyFraming();
  Reply(c, std::move(res));
}

void Server::Impl::Flush(Conn* c) {
  while (c->out_off < c->out.size()) {
    ssize_t n = Send(c, c->out.data() + c->out_off, c->out.size() - c->out_off);
    if (n == -1) {
      Interest(c);
      return;
    }
    if (n < 0) {
      Close(c);
      return;
    }
    c->out_off += static_cast<size_t>(n);
  }
  c->out.clear();
  c->out.shrink_to_fit();
  c->out_off = 0;
  AfterWrite(c);
}

void Server::Impl::AfterWrite(Conn* c) {
  if (c->close_after) {
    if (c->ssl) {
      ERR_clear_error();
      SSL_shutdown(c->ssl);  // best effort: our close_notify
      Close(c);
      return;
    }
    shutdown(c->fd, SHUT_WR);
    c->state = Conn::State::kLinger;
    c->deadline = After(kLingerSeconds);
    c->in.clear();
    Linger(c);
    return;
  }
  // Kept alive: wait for the next request, which may already be buffered (pipelining).
  c->ResetRequest();
  c->start = Clock::time_point();
  c->state = Conn::State::kHead;
  c->idle = c->in.empty();
  c->deadline = c->idle ? After(options.idle_timeout_s) : After(options.header_timeout_s);
  const uint64_t id = c->id;
  ReadHead(c);
  if (auto it = conns.find(id); it != conns.end()) Interest(it->second.get());
}

void Server::Impl::Linger(Conn* c) {
  char buf[16384];
  for (int i = 0; i < 64; ++i) {  // at most 1 MiB per wake-up; the rest on the next one
    ssize_t n = Recv(c, buf, sizeof buf);
    if (n == -1) return;
    if (n <= 0) {
      Close(c);  // the client has read the answer and closed: done
      return;
    }
  }
}

void Server::Impl::Close(Conn* c) {
  if (c->registered) epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c->fd, nullptr);
  if (c->ssl) SSL_free(c->ssl);
  close(c->fd);
  conns.erase(c->id);  // destroys *c
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
  if (options.worker_threads < 1 || options.priority_threads < 1) {
    return gw::Error{"http: worker_threads and priority_threads must be at least 1"};
  }
  if (!(options.header_timeout_s > 0) || !(options.body_timeout_s > 0) ||
      !(options.write_timeout_s > 0) || !(options.idle_timeout_s > 0)) {
    return gw::Error{"http: timeouts must be positive"};
  }
  if (options.max_connections < 1 || options.max_queued_requests < 1) {
    return gw::Error{"http: max_connections and max_queued_requests must be at least 1"};
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
    SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) return gw::Error{options.web_config_file + ": cannot create the TLS context"};
    impl->ssl_ctx = ctx;
    SSL_CTX_set_options(
        ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    // Responses go out in pieces from a buffer that may move between attempts.
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    gw::Status tls_status = ConfigureTlsContext(*impl->web.tls, ctx);
    if (!tls_status.ok()) return gw::Error{options.web_config_file + ": " + tls_status.message()};
  }
  if (!impl->web.basic_auth_users.empty()) {
    auto auth = BasicAuth::Create(impl->web.basic_auth_users);
    if (!auth.ok()) return gw::Error{options.web_config_file + ": " + auth.error().message};
    impl->auth = std::move(*auth);
  }
  impl->general = std::make_unique<Pool>("worker", options.max_queued_requests);
  impl->priority = std::make_unique<Pool>("priority", options.max_queued_requests);
  if (options.query_threads > 0)
    impl->query_pool = std::make_unique<Pool>("query", options.max_queued_requests);
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
  Impl& s = *impl_;
  const ListenAddress& address = s.address;
  auto fd = BindListener(address);
  if (!fd.ok()) return gw::Error{"listen " + address.display + ": " + fd.error().message};
  s.listen_fd = *fd;
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  int port = address.port;
  if (getsockname(s.listen_fd, reinterpret_cast<sockaddr*>(&bound), &len) == 0) {
    if (bound.ss_family == AF_INET) port = ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    if (bound.ss_family == AF_INET6) {
      port = ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
    }
  }
  s.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  s.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (s.epoll_fd < 0 || s.wake_fd < 0) {
    return gw::Error{std::string("http: cannot create the event loop: ") + std::strerror(errno)};
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenerId;
  epoll_ctl(s.epoll_fd, EPOLL_CTL_ADD, s.listen_fd, &ev);
  s.listener_registered = true;
  ev.data.u64 = kWakeId;
  epoll_ctl(s.epoll_fd, EPOLL_CTL_ADD, s.wake_fd, &ev);

  Impl* impl = impl_.get();
  s.general->Start(s.options.worker_threads, [impl](Job& job) { impl->RunJob(job); });
  s.priority->Start(s.options.priority_threads, [impl](Job& job) { impl->RunJob(job); });
  if (s.query_pool)
    s.query_pool->Start(s.options.query_threads, [impl](Job& job) { impl->RunJob(job); });
  s.loop = std::thread([impl] { impl->Loop(); });
  s.bound_port = port;
  bool v6 = address.host.find(':') != std::string::npos;
  std::string shown = (v6 ? "[" + address.host + "]" : address.host) + ":" + std::to_string(port);
  s.Info(std::string("http: listening on ") + (tls() ? "https://" : "http://") + shown +
         (s.auth ? " (basic auth)" : ""));
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
  Impl& s = *impl_;
  if (!s.loop.joinable() || s.stopped) return;
  s.stopped = true;
  s.stopping = true;
  uint64_t one = 1;
  ssize_t n = write(s.wake_fd, &one, sizeof one);
  (void)n;
  s.loop.join();
  s.general->Drop();
  s.priority->Drop();
  if (s.query_pool) s.query_pool->Drop();
  s.general->Join();
  s.priority->Join();
  if (s.query_pool) s.query_pool->Join();
  s.Info("http: stopped listening on " + s.address.display);
}

}  // namespace gw::http
