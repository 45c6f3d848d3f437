// The Notifier end to end against an in-process loopback receiver: delivery, batching, retry,
// refusal, bounds, and the durable queue across a simulated restart.
#include <gtest/gtest.h>

#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>

#include "notify/notify.h"
#include "notify/queue.h"
#include "support/notify_webhook_receiver.h"
#include "support/process.h"

namespace gw::notify {
namespace {

using gw::testing::TempDir;
using gw::testing::WaitFor;
using gw::testing::WebhookReceiver;
using Json = nlohmann::json;

constexpr int64_t kNow = 1764445004123;

class CapturingLogger {
 public:
  CapturingLogger()
      : logger_(LogLevel::kDebug, [this](LogLevel, const std::string& line) {
          std::lock_guard<std::mutex> lock(mu_);
          lines_.push_back(line);
        }) {}
  Logger* get() { return &logger_; }
  bool Contains(const std::string& text) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& l : lines_) {
      if (l.find(text) != std::string::npos) return true;
    }
    return false;
  }
  std::string All() {
    std::lock_guard<std::mutex> lock(mu_);
    std::string out;
    for (const auto& l : lines_) out += l + "\n";
    return out;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
  Logger logger_;
};

Alert MakeAlert(const std::string& gpu, int64_t ends_at_ms = kNow + 240000) {
  Alert a;
  a.labels = {{"gpu", gpu}, {"alertname", "GpuHot"}};  // unsorted on purpose
  a.annotations = {{"summary", "GPU " + gpu + " is hot"}};
  a.starts_at_ms = kNow - 60000;
  a.ends_at_ms = ends_at_ms;
  return a;
}

Options FastOptions(std::vector<Target> targets, const std::string& queue_dir = "") {
  Options o;
  o.targets = std::move(targets);
  o.queue_dir = queue_dir;
  o.timeout_s = 5;
  o.backoff_initial_s = 0.02;
  o.backoff_max_s = 0.2;
  static const ManualClock clock(kNow);
  o.clock = &clock;
  return o;
}

std::unique_ptr<Notifier> MustCreate(Options o, Logger* logger) {
  auto n = Notifier::Create(std::move(o), logger);
  EXPECT_TRUE(n.ok()) << (n.ok() ? "" : n.error().message);
  return n.ok() ? std::move(n).value() : nullptr;
}

TEST(Notifier, WebhookBodyHeadersAndStats) {
  WebhookReceiver hook;
  ASSERT_TRUE(hook.Start());
  CapturingLogger log;
  Target t{Target::kWebhook, hook.url("/hooks/gpu")};
  t.bearer_token = "s3cret";
  t.external_url = "http://gpuwarden:9400";
  auto n = MustCreate(FastOptions({t}), log.get());
  ASSERT_TRUE(n);
  n->Send({MakeAlert("0"), MakeAlert("1", kNow - 1)});
  ASSERT_TRUE(WaitFor([&] { return n->stats().targets[0].sent == 2; }, 20)) << log.All();
  auto reqs = hook.Requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].path, "/hooks/gpu");
  EXPECT_EQ(reqs[0].content_type, "application/json");
  EXPECT_EQ(reqs[0].authorization, "Bearer s3cret");
  Json body = Json::parse(reqs[0].body);
  EXPECT_EQ(body["version"], "4");
  EXPECT_EQ(body["status"], "firing");
  EXPECT_EQ(body["externalURL"], "http://gpuwarden:9400");
  EXPECT_EQ(body["commonLabels"], (Json{{"alertname", "GpuHot"}}));
  ASSERT_EQ(body["alerts"].size(), 2u);
  EXPECT_EQ(body["alerts"][0]["status"], "firing");
  EXPECT_EQ(body["alerts"][1]["status"], "resolved");
  Notifier::Stats s = n->stats();
  EXPECT_EQ(s.targets[0].queue_length, 0);
  EXPECT_EQ(s.targets[0].failed, 0);
  EXPECT_EQ(s.targets[0].latency_count, 1);
  EXPECT_EQ(s.targets[0].name, "webhook " + hook.url("/hooks/gpu"));
}

TEST(Notifier, AlertmanagerPathPrefixBasicAuthAndBatches) {
  WebhookReceiver am;
  ASSERT_TRUE(am.Start());
  CapturingLogger log;
  Target t{Target::kAlertmanager, am.url("/am/")};
  t.basic_auth_user = "user";
  t.basic_auth_password = "pass";
  Options o = FastOptions({t});
  o.max_batch = 2;
  auto n = MustCreate(o, log.get());
  ASSERT_TRUE(n);
  n->Send({MakeAlert("0"), MakeAlert("1"), MakeAlert("2"), MakeAlert("3"), MakeAlert("4")});
  ASSERT_TRUE(WaitFor([&] { return n->stats().targets[0].sent == 5; }, 20)) << log.All();
  auto reqs = am.Requests();
  ASSERT_EQ(reqs.size(), 3u);
  size_t total = 0;
  for (const auto& r : reqs) {
    EXPECT_EQ(r.path, "/am/api/v2/alerts");
    EXPECT_EQ(r.authorization, "Basic dXNlcjpwYXNz");
    Json body = Json::parse(r.body);
    ASSERT_TRUE(body.is_array());
    EXPECT_LE(body.size(), 2u);
    total += body.size();
  }
  EXPECT_EQ(total, 5u);
  Json first = Json::parse(reqs[0].body)[0];
  EXPECT_EQ(first["labels"], (Json{{"alertname", "GpuHot"}, {"gpu", "0"}}));
  EXPECT_EQ(first["startsAt"], FormatRfc3339Ms(kNow - 60000));
}

TEST(Notifier, RetriesWithBackoffWhileTargetFails) {
  WebhookReceiver am;
  am.set_status(503);
  ASSERT_TRUE(am.Start());
  CapturingLogger log;
  auto n = MustCreate(FastOptions({{Target::kAlertmanager, am.url("")}}), log.get());
  ASSERT_TRUE(n);
  n->Send({MakeAlert("0"), MakeAlert("1")});
  ASSERT_TRUE(WaitFor([&] { return n->stats().targets[0].consecutive_failures >= 3; }, 20));
  Notifier::TargetStats s = n->stats().targets[0];
  EXPECT_EQ(s.sent, 0);
  EXPECT_GE(s.failed, 6);
  EXPECT_EQ(s.queue_length, 2);
  EXPECT_NE(s.last_error.find("HTTP 503"), std::string::npos) << s.last_error;
  EXPECT_TRUE(log.Contains("alertmanager " + am.url("") +
                           ": HTTP 503: simulated failure; "
                           "2 alerts queued (retry in "))
      << log.All();
  am.set_status(200);
  ASSERT_TRUE(WaitFor([&] { return n->stats().targets[0].sent == 2; }, 20)) << log.All();
  s = n->stats().targets[0];
  EXPECT_EQ(s.queue_length, 0);
  EXPECT_EQ(s.consecutive_failures, 0);
  EXPECT_EQ(s.last_error, "");
  EXPECT_TRUE(log.Contains("delivering again after"));
}

TEST(Notifier, ClientErrorDropsTheBatch) {
  WebhookReceiver am;
  am.set_status(400);
  ASSERT_TRUE(am.Start());
  CapturingLogger log;
  auto n = MustCreate(FastOptions({{Target::kAlertmanager, am.url("")}}), log.get());
  ASSERT_TRUE(n);
  n->Send({MakeAlert("0")});
  ASSERT_TRUE(WaitFor([&] { return n->stats().targets[0].dropped == 1; }, 20)) << log.All();
  EXPECT_EQ(n->stats().targets[0].queue_length, 0);
  EXPECT_EQ(am.Requests().size(), 1u);  // not retried
  EXPECT_TRUE(log.Contains("1 alerts dropped"));
}

TEST(Notifier, ConnectionRefusedIsLoggedAndQueued) {
  CapturingLogger log;
  int port = gw::testing::FreePort();  // nothing listens there
  std::string url = "http://127.0.0.1:" + std::to_string(port);
  Options o = FastOptions({{Target::kAlertmanager, url}});
  o.max_queue = 3;
  auto n = MustCreate(o, log.get());
  ASSERT_TRUE(n);
  n->Send({MakeAlert("0"), MakeAlert("1"), MakeAlert("2"), MakeAlert("3")});
  ASSERT_TRUE(WaitFor([&] { return n->stats().targets[0].failed > 0; }, 20));
  Notifier::TargetStats s = n->stats().targets[0];
  EXPECT_EQ(s.dropped, 1);  // bounded: the oldest went
  EXPECT_EQ(s.queue_length, 3);
  EXPECT_TRUE(log.Contains("alertmanager " + url + ": connection refused or unreachable; "))
      << log.All();
  EXPECT_TRUE(log.Contains("; 3 alerts queued")) << log.All();
  std::string metrics;
  AppendMetrics(n->stats(), o.max_queue, &metrics);
  EXPECT_NE(metrics.find("gpuwarden_notification_queue_length{target=\"" + url + "\"} 3\n"),
            std::string::npos)
      << metrics;
}

TEST(Notifier, QueueSurvivesRestartAndDeliversLatestStates) {
  TempDir dir;
  CapturingLogger log;
  WebhookReceiver hook;  // not started yet: the target is down
  Target t{Target::kWebhook, hook.url("/hook")};
  {
    auto n = MustCreate(FastOptions({t}, dir.path()), log.get());
    ASSERT_TRUE(n);
    n->Send({MakeAlert("0"), MakeAlert("1")});
    n->Send({MakeAlert("0", kNow - 10)});  // 0 resolves while the target is down
    n->Send({MakeAlert("2")});
    ASSERT_TRUE(WaitFor([&] { return n->stats().targets[0].failed > 0; }, 20));
    n->Stop();
    n->Send({MakeAlert("9")});  // after Stop: ignored
  }
  std::string path = QueueFilePath(dir.path(), t);
  ASSERT_TRUE(std::filesystem::exists(path));
  auto file = ReadQueueFile(path);
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_EQ(file->alerts.size(), 3u);

  auto n = MustCreate(FastOptions({t}, dir.path()), log.get());  // the "restarted" process
  ASSERT_TRUE(n);
  EXPECT_EQ(n->stats().targets[0].queue_length, 3);
  ASSERT_TRUE(hook.Start());
  ASSERT_TRUE(WaitFor([&] { return n->stats().targets[0].sent == 3; }, 20)) << log.All();
  std::map<std::string, std::string> status_by_gpu;
  auto requests = hook.Requests();
  ASSERT_FALSE(requests.empty());
  for (const auto& r : requests) {
    Json body = Json::parse(r.body);
    for (const Json& a : body["alerts"]) {
      status_by_gpu[a["labels"]["gpu"].get<std::string>()] = a["status"].get<std::string>();
    }
  }
  EXPECT_EQ(status_by_gpu, (std::map<std::string, std::string>{
                               {"0", "resolved"}, {"1", "firing"}, {"2", "firing"}}));
  // Delivered entries leave the file too.
  ASSERT_TRUE(
      WaitFor([&] { return ReadQueueFile(path).ok() && ReadQueueFile(path)->alerts.empty(); }, 20));
}

TEST(Notifier, CorruptQueueFileIsSetAsideAndCounted) {
  TempDir dir;
  CapturingLogger log;
  WebhookReceiver hook;
  ASSERT_TRUE(hook.Start());
  Target t{Target::kWebhook, hook.url("/hook")};
  std::string path = QueueFilePath(dir.path(), t);
  gw::testing::WriteFile(path,
                         "{\"format\":\"gpuwarden-notify-queue\",\"version\":1,\"alerts\":[{");
  auto n = MustCreate(FastOptions({t}, dir.path()), log.get());
  ASSERT_TRUE(n);
  EXPECT_EQ(n->stats().corrupt_files, 1);
  EXPECT_EQ(n->stats().targets[0].queue_length, 0);
  EXPECT_TRUE(std::filesystem::exists(path + ".corrupt"));
  EXPECT_TRUE(log.Contains("not valid JSON")) << log.All();
  n->Send({MakeAlert("0")});  // and it still works
  ASSERT_TRUE(WaitFor([&] { return n->stats().targets[0].sent == 1; }, 20)) << log.All();
}

TEST(Notifier, CreateRejectsBadConfiguration) {
  Logger logger(LogLevel::kError, [](LogLevel, const std::string&) {});
  auto bad_url = Notifier::Create(FastOptions({{Target::kAlertmanager, "am:9093"}}), &logger);
  ASSERT_FALSE(bad_url.ok());
  EXPECT_NE(bad_url.error().message.find("'am:9093' is not an http(s) URL"), std::string::npos);
  TempDir dir;
  gw::testing::WriteFile(dir / "file", "x");
  auto bad_dir = Notifier::Create(FastOptions({}, dir / "file"), &logger);
  ASSERT_FALSE(bad_dir.ok());
  EXPECT_NE(bad_dir.error().message.find(dir / "file"), std::string::npos);
}

TEST(Notifier, EveryTargetGetsEveryAlert) {
  WebhookReceiver a, b;
  ASSERT_TRUE(a.Start());
  ASSERT_TRUE(b.Start());
  CapturingLogger log;
  auto n =
      MustCreate(FastOptions({{Target::kAlertmanager, a.url("")}, {Target::kWebhook, b.url("/w")}}),
                 log.get());
  ASSERT_TRUE(n);
  n->Send({MakeAlert("0"), MakeAlert("1")});
  ASSERT_TRUE(WaitFor(
      [&] { return n->stats().targets[0].sent == 2 && n->stats().targets[1].sent == 2; }, 20));
  EXPECT_EQ(Json::parse(a.Requests()[0].body).size(), 2u);
  EXPECT_EQ(Json::parse(b.Requests()[0].body)["alerts"].size(), 2u);
}

TEST(Notifier, HttpsVerifiesAgainstCaFileOrSkipsWhenInsecure) {
  TempDir dir;
  std::string out;
  ASSERT_EQ(
      gw::testing::RunCommand({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj",
                               "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1", "-days",
                               "1", "-keyout", dir / "server.key", "-out", dir / "server.crt"},
                              &out),
      0)
      << out;
  WebhookReceiver hook(dir / "server.crt", dir / "server.key");
  ASSERT_TRUE(hook.Start());
  Target trusted{Target::kWebhook, hook.url("/trusted")};
  trusted.ca_file = dir / "server.crt";
  Target unknown{Target::kWebhook, hook.url("/unknown")};  // system CAs: self-signed refused
  Target insecure{Target::kWebhook, hook.url("/insecure")};
  insecure.insecure_skip_verify = true;
  CapturingLogger log;
  auto n = MustCreate(FastOptions({trusted, unknown, insecure}), log.get());
  ASSERT_TRUE(n);
  n->Send({MakeAlert("0")});
  ASSERT_TRUE(WaitFor(
      [&] {
        Notifier::Stats s = n->stats();
        return s.targets[0].sent == 1 && s.targets[2].sent == 1 && s.targets[1].failed > 0;
      },
      20))
      << log.All();
  Notifier::TargetStats refused = n->stats().targets[1];
  EXPECT_EQ(refused.sent, 0);
  EXPECT_EQ(refused.queue_length, 1);
  EXPECT_NE(refused.last_error.find("TLS"), std::string::npos) << refused.last_error;
  for (const auto& r : hook.Requests()) EXPECT_NE(r.path, "/unknown");
}

}  // namespace
}  // namespace gw::notify
