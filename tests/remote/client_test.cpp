// remote/client.h against a loopback receiver: what goes on the wire (headers, snappy, the
// decoded WriteRequest), and how every kind of answer is classified; the backoff's sequence.
#include "remote/client.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <snappy.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

#include "support/notify_webhook_receiver.h"

namespace gw::remote {
namespace {

using gw::testing::WebhookReceiver;

std::vector<TimeSeries> Batch() {
  std::vector<TimeSeries> b(2);
  for (int s = 0; s < 2; ++s) {
    b[s].labels = {{"__name__", "gpu_power_watts"}, {"gpu", std::to_string(s)}};
    for (int i = 0; i < 50; ++i) b[s].samples.push_back({300.0 + i, 1767225600000 + i * 1000});
  }
  return b;
}

TEST(RemoteClient, PostsSnappyProtobufWithTheProtocolsHeaders) {
  WebhookReceiver rx;
  ASSERT_TRUE(rx.Start());
  auto client = Client::Create({.url = rx.url("/api/v1/write"),
                                .headers = {{"X-Scope-OrgID", "team-a"}},
                                .bearer_token = "s3cret"});
  ASSERT_TRUE(client.ok()) << client.error().message;
  SendResult r =
      (*client)->Send(Batch(), {{MetricType::kGauge, "gpu_power_watts", "Power.", "watts"}});
  EXPECT_EQ(r.outcome, SendResult::kSent) << r.error;
  EXPECT_EQ(r.status, 200);
  ASSERT_TRUE(rx.WaitForRequests(1, 10));
  const auto req = rx.Requests()[0];
  EXPECT_EQ(req.path, "/api/v1/write");
  EXPECT_EQ(req.content_type, "application/x-protobuf");
  EXPECT_EQ(req.authorization, "Bearer s3cret");
  auto header = [&](const char* k) {
    auto it = req.headers.find(k);
    return it == req.headers.end() ? std::string("<absent>") : it->second;
  };
  EXPECT_EQ(header("Content-Encoding"), "snappy");
  EXPECT_EQ(header("X-Prometheus-Remote-Write-Version"), "0.1.0");
  EXPECT_EQ(header("X-Scope-OrgID"), "team-a");
  EXPECT_EQ(r.bytes, req.body.size());
  std::string raw;
  ASSERT_TRUE(snappy::Uncompress(req.body.data(), req.body.size(), &raw));
  auto decoded = DecodeWriteRequest(raw);
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  ASSERT_EQ(decoded->series.size(), 2u);
  EXPECT_EQ(decoded->series[1].labels[1].value, "1");
  ASSERT_EQ(decoded->series[1].samples.size(), 50u);
  EXPECT_EQ(decoded->series[1].samples[49].value, 349.0);
  ASSERT_EQ(decoded->metadata.size(), 1u);
  EXPECT_EQ(decoded->metadata[0].unit, "watts");
}

TEST(RemoteClient, ClassifiesAnswersAsTheProtocolAsks) {
  WebhookReceiver rx;
  ASSERT_TRUE(rx.Start());
  auto client = Client::Create({.url = rx.url("/write"), .timeout_s = 5});
  ASSERT_TRUE(client.ok());
  struct Case {
    int status;
    SendResult::Outcome want;
  };
  for (Case c :
       {Case{204, SendResult::kSent}, Case{500, SendResult::kRetry}, Case{503, SendResult::kRetry},
        Case{429, SendResult::kRetry}, Case{400, SendResult::kDrop}, Case{401, SendResult::kDrop},
        Case{404, SendResult::kDrop}, Case{413, SendResult::kDrop}}) {
    rx.set_status(c.status);
    SendResult r = (*client)->Send(Batch());
    EXPECT_EQ(r.outcome, c.want) << "HTTP " << c.status << ": " << r.error;
    EXPECT_EQ(r.status, c.status);
    if (c.status >= 300) {
      EXPECT_NE(r.error.find("HTTP " + std::to_string(c.status) + ": simulated failure"),
                std::string::npos)
          << r.error;
    }
  }
  // Nobody listening: retry later, and say so in words.
  rx.Stop();
  SendResult r = (*client)->Send(Batch());
  EXPECT_EQ(r.outcome, SendResult::kRetry);
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.error.find("connection refused"), std::string::npos) << r.error;
}

// A receiver that reads each request whole (head and Content-Length body) and closes the
// connection without answering: a store stopping after it acted on a request.
class AnswerlessReceiver {
 public:
  AnswerlessReceiver() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd_, 4) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      return;
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] {
      while (true) {
        int c = accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        std::string in;
        char buf[4096];
        size_t want = std::string::npos;
        while (want == std::string::npos || in.size() < want) {
          ssize_t n = read(c, buf, sizeof buf);
          if (n <= 0) break;
          in.append(buf, static_cast<size_t>(n));
          const size_t head_end = in.find("\r\n\r\n");
          const size_t cl = in.find("Content-Length: ");
          if (want == std::string::npos && head_end != std::string::npos && cl != std::string::npos)
            want = head_end + 4 + std::stoul(in.substr(cl + 16));
        }
        if (want != std::string::npos && in.size() >= want) ++whole_requests_;
        close(c);
      }
    });
  }
  ~AnswerlessReceiver() {
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    if (thread_.joinable()) thread_.join();
  }
  int port() const { return port_; }
  int whole_requests() const { return whole_requests_; }

 private:
  int fd_ = -1, port_ = 0;
  std::atomic<int> whole_requests_{0};
  std::thread thread_;
};

TEST(RemoteClient, SaysWhenTheRequestWentOutWholeAndTheAnswerWasLost) {
  AnswerlessReceiver rx;
  ASSERT_NE(rx.port(), 0);
  auto client = Client::Create(
      {.url = "http://127.0.0.1:" + std::to_string(rx.port()) + "/write", .timeout_s = 5});
  ASSERT_TRUE(client.ok());
  SendResult r = (*client)->Send(Batch());
  EXPECT_EQ(r.outcome, SendResult::kRetry);
  EXPECT_TRUE(r.answer_lost) << r.error;
  EXPECT_NE(r.error.find("no reply"), std::string::npos) << r.error;
  EXPECT_EQ(rx.whole_requests(), 1);

  // Refused before anything was sent: nothing can have been stored.
  WebhookReceiver gone;
  ASSERT_TRUE(gone.Start());
  const std::string url = gone.url("/write");
  gone.Stop();
  auto other = Client::Create({.url = url, .timeout_s = 5});
  ASSERT_TRUE(other.ok());
  r = (*other)->Send(Batch());
  EXPECT_EQ(r.outcome, SendResult::kRetry);
  EXPECT_FALSE(r.answer_lost) << r.error;
  // An answer, even a failing one, is not a lost answer.
  WebhookReceiver failing;
  ASSERT_TRUE(failing.Start());
  failing.set_status(503);
  auto third = Client::Create({.url = failing.url("/write"), .timeout_s = 5});
  ASSERT_TRUE(third.ok());
  r = (*third)->Send(Batch());
  EXPECT_EQ(r.outcome, SendResult::kRetry);
  EXPECT_FALSE(r.answer_lost);
}

TEST(RemoteClient, RefusesWhatIsNotAnHttpUrl) {
  for (const char* url : {"vm:8428/api/v1/write", "ftp://vm/api", ""}) {
    auto c = Client::Create({.url = url});
    ASSERT_FALSE(c.ok()) << url;
    EXPECT_NE(c.error().message.find("not an http(s) URL"), std::string::npos) << c.error().message;
  }
}

TEST(RemoteBackoff, DoublesFromMinToMaxAndResets) {
  Backoff b(0.03, 0.2);
  EXPECT_DOUBLE_EQ(b.NextDelayS(), 0.03);
  EXPECT_DOUBLE_EQ(b.NextDelayS(), 0.06);
  EXPECT_DOUBLE_EQ(b.NextDelayS(), 0.12);
  EXPECT_DOUBLE_EQ(b.NextDelayS(), 0.2);
  EXPECT_DOUBLE_EQ(b.NextDelayS(), 0.2);
  EXPECT_EQ(b.failures(), 5u);
  b.Reset();
  EXPECT_DOUBLE_EQ(b.NextDelayS(), 0.03);
}

}  // namespace
}  // namespace gw::remote
