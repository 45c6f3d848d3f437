// Test support: a loopback HTTP server that records the bodies POSTed to it (webhook targets,
// Alertmanager's own webhook notifications) and answers with a status the test chooses.
//
//   gw::testing::WebhookReceiver hook;        // listens on 127.0.0.1:<free port>
//   ASSERT_TRUE(hook.Start());
//   ... POST to hook.url("/hook") ...
//   hook.WaitForRequests(1, 10); auto requests = hook.Requests();
#ifndef GPUWARDEN_TESTS_SUPPORT_NOTIFY_WEBHOOK_RECEIVER_H_
#define GPUWARDEN_TESTS_SUPPORT_NOTIFY_WEBHOOK_RECEIVER_H_

#pragma GCC system_header
#include <httplib.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "support/process.h"

namespace gw::testing {

class WebhookReceiver {
 public:
  struct Request {
    std::string path, body, content_type, authorization;
    httplib::Headers headers;  // all of them
  };

  // Plain HTTP on `port` (0: a free one).
  explicit WebhookReceiver(int port = 0)
      : WebhookReceiver(std::make_unique<httplib::Server>(), port, "http") {}
  // HTTPS with the given PEM certificate and key files.
  WebhookReceiver(const std::string& cert_file, const std::string& key_file)
      : WebhookReceiver(std::make_unique<httplib::SSLServer>(cert_file.c_str(), key_file.c_str()),
                        0, "https") {}
  ~WebhookReceiver() { Stop(); }

  bool Start() {
    if (!server_->is_valid() || !server_->bind_to_port("127.0.0.1", port_)) return false;
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    return WaitFor([&] { return server_->is_running(); }, 10);
  }
  void Stop() {
    server_->stop();
    if (thread_.joinable()) thread_.join();
  }

  // The HTTP status the next requests get (200 by default).
  void set_status(int status) { status_ = status; }
  int port() const { return port_; }
  std::string url(const std::string& path) const {
    return scheme_ + "://127.0.0.1:" + std::to_string(port_) + path;
  }

  std::vector<Request> Requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  bool WaitForRequests(size_t n, double timeout_s) const {
    return WaitFor([&] { return Requests().size() >= n; }, timeout_s);
  }

 private:
  WebhookReceiver(std::unique_ptr<httplib::Server> server, int port, std::string scheme)
      : port_(port > 0 ? port : FreePort()),
        scheme_(std::move(scheme)),
        server_(std::move(server)) {
    server_->Post(R"(/.*)", [this](const httplib::Request& req, httplib::Response& res) {
      int status = status_.load();
      {
        std::lock_guard<std::mutex> lock(mu_);
        requests_.push_back({req.path, req.body, req.get_header_value("Content-Type"),
                             req.get_header_value("Authorization"), req.headers});
      }
      res.status = status;
      res.set_content(status < 300 ? "" : "simulated failure\n", "text/plain");
    });
  }

  int port_;
  std::string scheme_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::atomic<int> status_{200};
  mutable std::mutex mu_;
  std::vector<Request> requests_;
};

}  // namespace gw::testing

#endif  // GPUWARDEN_TESTS_SUPPORT_NOTIFY_WEBHOOK_RECEIVER_H_
