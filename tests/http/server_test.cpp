#include "http/server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "http/codec.h"
#include "support/raw_http.h"
#include "test_util.h"

namespace gw::http {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

class ServerTest : public ::testing::Test {
 protected:
  ServerTest()
      : logger_(LogLevel::kDebug, [this](LogLevel, const std::string& line) {
          std::lock_guard<std::mutex> lock(mu_);
          lines_.push_back(line);
        }) {}

  // Creates a server on 127.0.0.1:0 with the routes every test uses, and starts it.
  void Start(const std::string& web_config_yaml = "",
             const std::function<void(Server*)>& more_routes = nullptr) {
    ServerOptions options;
    options.listen_address = "127.0.0.1:0";
    options.worker_threads = 4;
    if (!web_config_yaml.empty()) options.web_config_file = dir_.Write("web.yml", web_config_yaml);
    auto server = Server::Create(options, &logger_);
    ASSERT_TRUE(server.ok()) << server.error().message;
    server_ = std::move(*server);
    server_->Get("/hello", [](const Request&, Response& res) { res.body = "hi"; });
    server_->Get("/echo", [](const Request& req, Response& res) {
      res.content_type = "application/json";
      for (const auto& [k, v] : req.params) res.body += k + "=" + v + ";";
      res.headers.emplace_back("X-Seen", req.header("x-custom"));
      res.headers.emplace_back("X-Agent-Header", req.header("REMOTE_ADDR").empty() ? "no" : "yes");
      res.headers.emplace_back("X-Remote", req.remote_addr);
    });
    server_->Post("/form", [](const Request& req, Response& res) {
      res.body = "a=" + req.param("a") + " all=";
      for (const auto& v : req.params_all("a")) res.body += v + ",";
      res.body += " big=" + std::to_string(req.param("big").size());
      res.body += " body=" + std::to_string(req.body.size());
    });
    server_->Get("/big", [](const Request&, Response& res) {
      for (int i = 0; i < 500; ++i)
        res.body += "gpu_power_watts{gpu=\"" + std::to_string(i) + "\"} 300\n";
    });
    server_->Get("/throw", [](const Request&, Response&) { throw std::runtime_error("boom"); });
    server_->GetPrefix("/api/v1/label/",
                       [](const Request& req, Response& res) { res.body = "prefix " + req.path; });
    server_->GetPrefix("/api/v1/label/job/",
                       [](const Request&, Response& res) { res.body = "longer prefix"; });
    server_->Get("/api/v1/label/exact", [](const Request&, Response& res) { res.body = "exact"; });
    if (more_routes) more_routes(server_.get());
    ASSERT_TRUE(server_->Start().ok());
    ASSERT_GT(server_->port(), 0);
  }

  httplib::Client Client() {
    httplib::Client cli("127.0.0.1", server_->port());
    cli.set_connection_timeout(5);
    cli.set_read_timeout(10);
    cli.set_decompress(false);  // we want to see what the server sent
    cli.set_url_encode(false);  // and to send targets exactly as written
    return cli;
  }

  std::vector<std::string> Lines() {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }

  testutil::TempDir dir_;
  std::mutex mu_;
  std::vector<std::string> lines_;
  gw::Logger logger_;
  std::unique_ptr<Server> server_;
};

TEST_F(ServerTest, ServesRoutesAnd404And405) {
  Start();
  auto cli = Client();
  auto res = cli.Get("/hello");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "hi");
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain; charset=utf-8");

  res = cli.Get("/nope");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  EXPECT_EQ(res->body, "404 page not found\n");

  res = cli.Post("/hello", "x=1", "application/x-www-form-urlencoded");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 405);
  EXPECT_EQ(res->get_header_value("Allow"), "GET, HEAD");

  res = cli.Get("/form");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 405);
  EXPECT_EQ(res->get_header_value("Allow"), "POST");

  res = cli.Put("/hello", "x", "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 405);

  res = cli.Delete("/nope");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);

  res = cli.Head("/hello");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "");
  EXPECT_EQ(res->get_header_value("Content-Length"), "2");
}

TEST_F(ServerTest, PrefixRoutesLongestWinsExactFirst) {
  Start();
  auto cli = Client();
  auto res = cli.Get("/api/v1/label/instance/values");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body, "prefix /api/v1/label/instance/values");
  res = cli.Get("/api/v1/label/job/values");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body, "longer prefix");
  res = cli.Get("/api/v1/label/exact");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body, "exact");
  res = cli.Post("/api/v1/label/job/values", "", "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 405);
}

TEST_F(ServerTest, QueryParamsAndHeaders) {
  Start();
  auto cli = Client();
  httplib::Headers headers = {{"X-CUSTOM", "v1"}};
  auto res = cli.Get("/echo?match%5B%5D=a&match[]=b&q=up{job=%22x%22}&sp=a+b", headers);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "match[]=a;match[]=b;q=up{job=\"x\"};sp=a b;");
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(res->get_header_value("X-Seen"), "v1");
  EXPECT_EQ(res->get_header_value("X-Agent-Header"), "no");  // httplib's pseudo-headers hidden
  EXPECT_EQ(res->get_header_value("X-Remote"), "127.0.0.1");
}

// `curl -X POST URL` sends neither Content-Length nor a body: that is an empty body, answered at
// once (httplib alone waited for the connection to close and answered 400 after 10 s).
TEST_F(ServerTest, PostWithoutContentLengthHasAnEmptyBody) {
  Start();
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(server_->port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  timeval timeout{3, 0};  // far below the server's 10 s read timeout
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  const std::string request = "POST /form?a=1 HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(send(fd, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
  std::string reply;
  char buffer[1024];
  // Headers and body may arrive in separate segments: read until the body is in.
  while (reply.find("body=") == std::string::npos) {
    ssize_t n = recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    reply.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  ASSERT_FALSE(reply.empty()) << "no answer within 3 s";
  EXPECT_EQ(reply.rfind("HTTP/1.1 200", 0), 0u) << reply;
  EXPECT_NE(reply.find("body=0"), std::string::npos) << reply;
}

TEST_F(ServerTest, PostFormBodyMergesWithQueryBodyFirst) {
  Start();
  auto cli = Client();
  auto res = cli.Post("/form?a=fromquery", "a=frombody&b=2", "application/x-www-form-urlencoded");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "a=frombody all=frombody,fromquery, big=0 body=14");

  // Larger than httplib's own 8 KiB limit for form bodies.
  std::string big(20000, 'x');
  res = cli.Post("/form", "big=" + big, "application/x-www-form-urlencoded");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_THAT(res->body, HasSubstr("big=20000"));

  // A body that is not a form is passed through untouched.
  res = cli.Post("/form?a=q", "a=notparsed", "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body, "a=q all=q, big=0 body=11");
}

TEST_F(ServerTest, KeepAliveSurvivesRejectedBodies) {
  Start();
  auto cli = Client();
  cli.set_keep_alive(true);
  // Rejected requests with bodies must not leave bytes behind on the connection.
  for (int i = 0; i < 3; ++i) {
    auto res = cli.Post("/nope", std::string(5000, 'y'), "text/plain");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 404);
    res = cli.Put("/hello", std::string(3000, 'z'), "text/plain");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 405);
    res = cli.Get("/hello");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->body, "hi");
  }
}

TEST_F(ServerTest, LongPathsAreRoutedWithoutRegexRecursion) {
  // std::regex recurses per character; a catch-all route would overflow the stack here (under
  // ASan already at a few thousand characters).
  Start();
  auto cli = Client();
  const std::string long_path = "/form" + std::string(8000, 'a');
  auto res = cli.Get(long_path);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  res = cli.Post(long_path, "a=1", "application/x-www-form-urlencoded");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
}

TEST_F(ServerTest, MultipartBodiesAreRefused) {
  Start();
  auto cli = Client();
  httplib::MultipartFormDataItems items = {{"a", "1", "", ""}};
  auto res = cli.Post("/form", items);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 415);
}

TEST(ServerLimitsTest, OversizedBodyIs413) {
  auto server =
      Server::Create({.listen_address = "127.0.0.1:0", .max_request_body_bytes = 1000}, nullptr);
  ASSERT_TRUE(server.ok());
  (*server)->Post("/form", [](const Request&, Response& res) { res.body = "ok"; });
  ASSERT_TRUE((*server)->Start().ok());
  httplib::Client cli("127.0.0.1", (*server)->port());
  auto res = cli.Post("/form", std::string(999, 'x'), "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  res = cli.Post("/form", std::string(5000, 'x'), "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 413);
}

TEST_F(ServerTest, GzipsLargeBodiesWhenAsked) {
  Start();
  auto cli = Client();
  auto plain = cli.Get("/big", {{"Accept-Encoding", "identity"}});
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->get_header_value("Content-Encoding"), "");
  EXPECT_EQ(plain->get_header_value("Vary"), "Accept-Encoding");
  ASSERT_GT(plain->body.size(), Server::kGzipMinBytes);

  auto gz = cli.Get("/big", {{"Accept-Encoding", "gzip"}});  // what Prometheus sends
  ASSERT_TRUE(gz);
  EXPECT_EQ(gz->status, 200);
  EXPECT_EQ(gz->get_header_value("Content-Encoding"), "gzip");
  EXPECT_LT(gz->body.size(), plain->body.size() / 4);
  EXPECT_EQ(testutil::Gunzip(gz->body), plain->body);

  auto refused = cli.Get("/big", {{"Accept-Encoding", "gzip;q=0, br"}});
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->get_header_value("Content-Encoding"), "");
  EXPECT_EQ(refused->body, plain->body);

  // Small bodies are never compressed, whatever the client accepts.
  auto small = cli.Get("/hello", {{"Accept-Encoding", "gzip, br"}});
  ASSERT_TRUE(small);
  EXPECT_EQ(small->get_header_value("Content-Encoding"), "");
  EXPECT_EQ(small->body, "hi");
}

TEST_F(ServerTest, RangeHeadersAreIgnored) {
  Start();
  auto cli = Client();
  auto res = cli.Get("/hello", {{"Range", "bytes=0-0"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "hi");
}

TEST_F(ServerTest, HandlerExceptionIs500AndLogged) {
  Start();
  auto cli = Client();
  auto res = cli.Get("/throw");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 500);
  EXPECT_EQ(res->body, "internal server error\n");
  EXPECT_FALSE(res->has_header("EXCEPTION_WHAT"));
  bool logged = false;
  for (const auto& line : Lines()) logged = logged || line.find("threw: boom") != std::string::npos;
  EXPECT_TRUE(logged);
}

// Work after the response (Response::after_send) runs once the response is on its way: the
// client has the whole answer while that work still waits; a throw there is logged and the
// connection keeps serving.
TEST_F(ServerTest, WorkAfterTheResponseDoesNotDelayIt) {
  std::mutex m;
  std::condition_variable cv;
  bool client_has_it = false, ran = false;
  Start("", [&](Server* server) {
    server->Get("/then", [&](const Request&, Response& res) {
      res.body = "answer";
      res.after_send = [&] {
        std::unique_lock lock(m);
        cv.wait_for(lock, std::chrono::seconds(20), [&] { return client_has_it; });
        ran = client_has_it;  // the client had the answer before this work ended
        cv.notify_all();
      };
    });
    server->Get("/then-throw", [](const Request&, Response& res) {
      res.body = "fine";
      res.after_send = [] { throw std::runtime_error("late"); };
    });
  });
  auto cli = Client();
  auto res = cli.Get("/then");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->body, "answer");
  {
    std::unique_lock lock(m);
    client_has_it = true;
    cv.notify_all();
    cv.wait_for(lock, std::chrono::seconds(20), [&] { return ran; });
  }
  EXPECT_TRUE(ran);
  res = cli.Get("/then-throw");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body, "fine");
  res = cli.Get("/hello");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body, "hi");
  server_->Stop();
  bool logged = false;
  for (const auto& line : Lines())
    logged =
        logged || line.find("work after the response to /then-throw threw") != std::string::npos;
  EXPECT_TRUE(logged);
}

TEST_F(ServerTest, AccessLogAtDebug) {
  Start();
  auto cli = Client();
  ASSERT_TRUE(cli.Get("/hello"));
  ASSERT_TRUE(cli.Get("/nope"));
  ASSERT_TRUE(cli.Get("/x%0Alevel=error%20forged"));  // a decoded newline must not split the line
  server_->Stop();  // joins the workers, so their log lines are in
  std::vector<std::string> access;
  for (const auto& line : Lines()) {
    if (line.find("level=debug") != std::string::npos) access.push_back(line);
  }
  ASSERT_EQ(access.size(), 3u);
  EXPECT_THAT(access[0], HasSubstr("http GET /hello 200 2B"));
  EXPECT_THAT(access[0], HasSubstr("from 127.0.0.1"));
  EXPECT_THAT(access[1], HasSubstr("http GET /nope 404"));
  EXPECT_THAT(access[2], HasSubstr("http GET /x\\x0alevel=error forged 404"));
  EXPECT_EQ(access[2].find('\n'), std::string::npos);
}

TEST_F(ServerTest, ConfiguredHeadersOnEveryResponse) {
  Start(
      "http_server_config:\n  headers:\n    X-Frame-Options: deny\n"
      "    Content-Security-Policy: default-src 'self'\n");
  auto cli = Client();
  for (const char* path : {"/hello", "/nope"}) {
    auto res = cli.Get(path);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->get_header_value("X-Frame-Options"), "deny") << path;
    EXPECT_EQ(res->get_header_value("Content-Security-Policy"), "default-src 'self'") << path;
  }
}

class AuthServerTest : public ServerTest {
 protected:
  void SetUp() override {
    Start("basic_auth_users:\n  alice: " + testutil::BcryptHash("s3cret") + "\n");
  }
};

TEST_F(AuthServerTest, RequiresCredentialsEverywhere) {
  auto cli = Client();
  auto res = cli.Get("/hello");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  EXPECT_EQ(res->get_header_value("WWW-Authenticate"), "Basic");

  res = cli.Get("/nope");  // unknown paths are not revealed to strangers
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  res = cli.Post("/form", "a=1", "application/x-www-form-urlencoded");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  res = cli.Post("/form", httplib::MultipartFormDataItems{{"a", "1", "", ""}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);

  cli.set_basic_auth("alice", "wrong");
  res = cli.Get("/hello");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);

  cli.set_basic_auth("mallory", "s3cret");
  res = cli.Get("/hello");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);

  cli.set_basic_auth("alice", "s3cret");
  res = cli.Get("/hello");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "hi");
  res = cli.Post("/form", "a=1", "application/x-www-form-urlencoded");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  res = cli.Get("/nope");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
}

TEST(ServerLifecycleTest, BindConflictIsAClearError) {
  auto first = Server::Create({.listen_address = "127.0.0.1:0"}, nullptr);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE((*first)->Start().ok());
  const std::string address = "127.0.0.1:" + std::to_string((*first)->port());
  auto second = Server::Create({.listen_address = address}, nullptr);
  ASSERT_TRUE(second.ok());
  gw::Status status = (*second)->Start();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(), "listen " + address + ": address already in use");
  EXPECT_EQ((*second)->port(), 0);
}

TEST(ServerLifecycleTest, ListenAddressValidation) {
  for (const char* bad : {"", "9966", "127.0.0.1:99999", "127.0.0.1:http", "::1:9966", "[::1]9966",
                          "[]:1", "host:"}) {
    auto server = Server::Create({.listen_address = bad}, nullptr);
    ASSERT_FALSE(server.ok()) << bad;
    EXPECT_THAT(server.error().message, StartsWith("listen address \"" + std::string(bad) + "\""));
  }
  for (const char* good : {":0", "127.0.0.1:0", "localhost:0", "[::1]:0"}) {
    EXPECT_TRUE(Server::Create({.listen_address = good}, nullptr).ok()) << good;
  }
}

TEST(ServerLifecycleTest, CreateReportsWebConfigErrors) {
  testutil::TempDir dir;
  std::string path = dir.Write("web.yml", "tls_server_config:\n  cert_file: x.pem\n");
  auto server = Server::Create({.listen_address = ":0", .web_config_file = path}, nullptr);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.error().message, path + ":1: tls_server_config: missing key_file");
  server =
      Server::Create({.listen_address = ":0", .web_config_file = dir.File("none.yml")}, nullptr);
  ASSERT_FALSE(server.ok());
  EXPECT_THAT(server.error().message, HasSubstr("none.yml: cannot read"));
}

TEST(ServerLifecycleTest, StopIsIdempotentAndFreesThePort) {
  auto server = Server::Create({.listen_address = "127.0.0.1:0"}, nullptr);
  ASSERT_TRUE(server.ok());
  (*server)->Stop();  // before Start: nothing to do
  EXPECT_EQ((*server)->port(), 0);
  ASSERT_TRUE((*server)->Start().ok());
  int port = (*server)->port();
  EXPECT_FALSE((*server)->Start().ok());  // one Start per Server
  (*server)->Stop();
  (*server)->Stop();
  auto again = Server::Create({.listen_address = "127.0.0.1:" + std::to_string(port)}, nullptr);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE((*again)->Start().ok());
}

// ---- Our own HTTP/1.1 core: deadlines, capacity, bodies
// ------------------------------------------

using gw::testing::RawAfter;
using gw::testing::RawConnect;
using gw::testing::RawExchange;
using gw::testing::RawGet;
using gw::testing::RawRead;
using gw::testing::RawResponse;
using gw::testing::RawSend;

std::string Gzipped(const std::string& text) {
  std::string out;
  EXPECT_TRUE(GzipCompress(text, &out));
  return out;
}

std::string PostForm(const std::string& path, const std::string& body,
                     const std::string& extra_headers = "") {
  return "POST " + path +
         " HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
         "Content-Length: " +
         std::to_string(body.size()) + "\r\n" + extra_headers + "\r\n" + body;
}

// Sends `bytes` one at a time, reading for 200 ms after each, until the server answers or
// closes; `*sent` says how many went out before that.
RawResponse DribbleUntilAnswered(int fd, const std::string& bytes, size_t* sent) {
  std::string buffer;
  RawResponse r;
  for (*sent = 0; *sent < bytes.size(); ++*sent) {
    if (!RawSend(fd, bytes.substr(*sent, 1), RawAfter(1))) break;
    r = RawRead(fd, RawAfter(0.2), &buffer);
    if (r.status != 0 || r.closed) break;
  }
  return r;
}

// A client that sends its head one byte every 200 ms is cut off by the deadline for the whole
// head, although every single byte arrives well within it (per-read timeouts would never fire).
TEST(ServerDeadlineTest, WholeHeadDeadlineAgainstADribblingClient) {
  ServerOptions options{.listen_address = "127.0.0.1:0"};
  options.header_timeout_s = 1;
  auto server = Server::Create(options, nullptr);
  ASSERT_TRUE(server.ok());
  (*server)->Get("/hello", [](const Request&, Response& res) { res.body = "hi"; });
  ASSERT_TRUE((*server)->Start().ok());
  int fd = RawConnect((*server)->port());
  ASSERT_GE(fd, 0);
  const std::string head = "GET /hello HTTP/1.1\r\nX-Long: " + std::string(60, 'a');
  size_t sent = 0;
  RawResponse r = DribbleUntilAnswered(fd, head, &sent);  // 61 bytes: 12 s if never cut off
  close(fd);
  EXPECT_LT(sent, head.size()) << "the server waited for the whole dribbled head";
  EXPECT_EQ(r.status, 408) << r.head;
}

TEST(ServerDeadlineTest, WholeBodyDeadline) {
  ServerOptions options{.listen_address = "127.0.0.1:0"};
  options.body_timeout_s = 1;
  auto server = Server::Create(options, nullptr);
  ASSERT_TRUE(server.ok());
  (*server)->Post("/form", [](const Request&, Response& res) { res.body = "ok"; });
  ASSERT_TRUE((*server)->Start().ok());
  int fd = RawConnect((*server)->port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(
      RawSend(fd, "POST /form HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n", RawAfter(1)));
  size_t sent = 0;
  RawResponse r = DribbleUntilAnswered(fd, std::string(60, 'a'), &sent);
  close(fd);
  EXPECT_LT(sent, 60u);
  EXPECT_EQ(r.status, 408) << r.head;
}

TEST(ServerDeadlineTest, IdleKeepAliveConnectionIsClosed) {
  ServerOptions options{.listen_address = "127.0.0.1:0"};
  options.idle_timeout_s = 0.5;
  auto server = Server::Create(options, nullptr);
  ASSERT_TRUE(server.ok());
  (*server)->Get("/hello", [](const Request&, Response& res) { res.body = "hi"; });
  ASSERT_TRUE((*server)->Start().ok());
  int fd = RawConnect((*server)->port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(RawSend(fd, RawGet("/hello"), RawAfter(2)));
  std::string buffer;
  EXPECT_EQ(RawRead(fd, RawAfter(5), &buffer).status, 200);
  char c;
  ASSERT_TRUE(gw::testing::RawWait(fd, POLLIN, RawAfter(5)));
  EXPECT_EQ(recv(fd, &c, 1, 0), 0);  // closed by the server, silently
  close(fd);
}

// Priority routes have workers of their own: a worker pool full of slow handlers, a full queue
// and a crowd of half-sent heads leave /healthz answering.
TEST(ServerCapacityTest, PriorityRoutesAnswerWhileEveryWorkerIsBusy) {
  ServerOptions options{.listen_address = "127.0.0.1:0"};
  options.worker_threads = 2;
  options.priority_threads = 1;
  options.max_queued_requests = 2;
  auto server = Server::Create(options, nullptr);
  ASSERT_TRUE(server.ok());
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> entered{0};
  (*server)->Get("/slow", [&](const Request&, Response& res) {
    ++entered;
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::seconds(30), [&] { return release; });
    res.body = "slow";
  });
  (*server)->Get("/healthz", [](const Request&, Response& res) { res.body = "ok\n"; });
  ASSERT_TRUE((*server)->Start().ok());
  const int port = (*server)->port();

  std::vector<int> slow_heads;
  for (int i = 0; i < 16; ++i) {
    int fd = RawConnect(port);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(RawSend(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ", RawAfter(1)));
    slow_heads.push_back(fd);
  }
  // Six at once: two run (and block); of the other four at most two fit in the queue (fewer if
  // they came while the first two were still in it), the rest find it full: 503 at once.
  std::vector<std::thread> slow;
  std::vector<std::atomic<int>> slow_status(6);
  for (int i = 0; i < 6; ++i) {
    slow.emplace_back([&, i] { slow_status[i] = RawExchange(port, RawGet("/slow"), 30).status; });
  }
  auto refused = [&] {
    int n = 0;
    for (const auto& status : slow_status) n += status == 503;
    return n;
  };
  for (int i = 0; i < 1000 && (entered < 2 || refused() < 2); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(entered, 2);  // (EXPECT: the threads are released and joined below either way)
  EXPECT_GE(refused(), 2);

  for (int i = 0; i < 5; ++i) {
    RawResponse r = RawExchange(port, RawGet("/healthz"), 5);
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "ok\n");
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  for (auto& t : slow) t.join();
  int ok = 0;
  for (const auto& status : slow_status) ok += status == 200;
  EXPECT_GE(ok, 2);
  EXPECT_EQ(ok + refused(), 6);
  for (int fd : slow_heads) close(fd);
}

TEST_F(ServerTest, GzipRequestBodiesAreDecodedWithinTheLimit) {
  Start();
  const int port = server_->port();
  RawResponse r =
      RawExchange(port, PostForm("/form?a=q", Gzipped("a=zipped&big=" + std::string(50000, 'z')),
                                 "Content-Encoding: gzip\r\n"));
  EXPECT_EQ(r.status, 200) << r.head;
  EXPECT_EQ(r.body, "a=zipped all=zipped,q, big=50000 body=50013");

  // 64 MiB of zeros in ~64 KB: refused once the inflated size passes the 16 MiB limit.
  r = RawExchange(
      port, PostForm("/form", Gzipped(std::string(64u << 20, '\0')), "Content-Encoding: gzip\r\n"));
  EXPECT_EQ(r.status, 413) << r.head;
  EXPECT_THAT(r.body, HasSubstr("once decoded"));

  r = RawExchange(port, PostForm("/form", "abc", "Content-Encoding: br\r\n"));
  EXPECT_EQ(r.status, 415);
  r = RawExchange(port, PostForm("/form", "not gzip", "Content-Encoding: gzip\r\n"));
  EXPECT_EQ(r.status, 400);
}

TEST_F(AuthServerTest, BodiesOfStrangersAreNeverDecoded) {
  const int port = server_->port();
  RawResponse r = RawExchange(
      port, PostForm("/form", Gzipped(std::string(64u << 20, '\0')), "Content-Encoding: gzip\r\n"));
  EXPECT_EQ(r.status, 401) << r.head;
  EXPECT_EQ(r.Header("www-authenticate"), "Basic");
  // Also a bad body: it is not looked at, so it is still 401, not 400.
  r = RawExchange(port, PostForm("/form", "not gzip", "Content-Encoding: gzip\r\n"));
  EXPECT_EQ(r.status, 401);
  // With credentials the same route works.
  r = RawExchange(port,
                  PostForm("/form", Gzipped("a=1"),
                           "Content-Encoding: gzip\r\nAuthorization: Basic YWxpY2U6czNjcmV0\r\n"));
  EXPECT_EQ(r.status, 200) << r.head;
  EXPECT_THAT(r.body, HasSubstr("a=1 "));
}

TEST_F(ServerTest, ChunkedBodiesExpectContinueAndPipelining) {
  Start();
  const int port = server_->port();
  RawResponse r = RawExchange(
      port,
      "POST /form HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
      "Content-Type: application/x-www-form-urlencoded\r\n\r\n3\r\na=1\r\n2\r\n&b\r\n0\r\n\r\n");
  EXPECT_EQ(r.status, 200) << r.head;
  EXPECT_EQ(r.body, "a=1 all=1, big=0 body=5");

  // Expect: 100-continue: the body is sent only after the interim response.
  int fd = RawConnect(port);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(RawSend(fd,
                      "POST /form HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
                      "Content-Type: application/x-www-form-urlencoded\r\n"
                      "Expect: 100-continue\r\n\r\n",
                      RawAfter(2)));
  std::string buffer;
  ASSERT_TRUE(gw::testing::RawWait(fd, POLLIN, RawAfter(5)));
  char interim[64];
  ssize_t n = recv(fd, interim, sizeof interim, 0);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(interim, static_cast<size_t>(n)), "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_TRUE(RawSend(fd, "a=7", RawAfter(2)));
  r = RawRead(fd, RawAfter(5), &buffer);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "a=7 all=7, big=0 body=3");

  // Pipelining: two requests in one write, two responses in order on the same connection.
  ASSERT_TRUE(RawSend(fd, RawGet("/hello") + RawGet("/echo?x=1"), RawAfter(2)));
  RawResponse first = RawRead(fd, RawAfter(5), &buffer);
  RawResponse second = RawRead(fd, RawAfter(5), &buffer);
  close(fd);
  EXPECT_EQ(first.body, "hi");
  EXPECT_EQ(second.body, "x=1;");
}

TEST_F(ServerTest, MalformedRequestsGetAClearStatusAndTheServerCarriesOn) {
  Start();
  const int port = server_->port();
  struct Case {
    std::string request;
    int status;
  } cases[] = {
      {"GARBAGE\r\n\r\n", 400},
      {"GET /hello HTTP/3.0\r\n\r\n", 505},
      {"GET /hello HTTP/1.1\r\nX: " + std::string(70000, 'x') + "\r\n\r\n", 431},
      {"POST /form HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\nabc", 400},
      {"POST /form HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
      {"POST /form HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400},
      {"GET /a%zz HTTP/1.1\r\n\r\n", 400},
      {"POST /form HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n", 413},
  };
  for (const Case& c : cases) {
    RawResponse r = RawExchange(port, c.request, 5);
    EXPECT_EQ(r.status, c.status) << c.request.substr(0, 80);
    EXPECT_EQ(r.Header("connection"), "close") << c.request.substr(0, 80);
  }
  EXPECT_EQ(RawExchange(port, RawGet("/hello")).body, "hi");
  // Absolute-form targets are served like origin-form ones.
  EXPECT_EQ(RawExchange(port, RawGet("http://127.0.0.1/echo?q=2")).body, "q=2;");
}

}  // namespace
}  // namespace gw::http
