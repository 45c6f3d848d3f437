// remote/client.h against a loopback receiver: what goes on the wire (headers, snappy, the
// decoded WriteRequest), and how every kind of answer is classified; the backoff's sequence.
#include "remote/client.h"

#include <gtest/gtest.h>
#include <snappy.h>

#include <string>

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
