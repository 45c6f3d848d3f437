// The Notifier against the real Alertmanager 0.25: what Alertmanager shows after firing,
// resolution, an outage spanning a gpuwarden restart; and our webhook body beside the one
// Alertmanager itself sends.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "base/clock.h"
#include "notify/notify.h"
#include "support/alertmanager.h"
#include "support/notify_webhook_receiver.h"
#include "support/process.h"

namespace gw::notify {
namespace {

using gw::testing::Alertmanager;
using gw::testing::TempDir;
using gw::testing::WaitFor;
using gw::testing::WebhookReceiver;
using Json = nlohmann::json;

// Whole seconds plus 123 ms, so that Go's trimmed fractions print the same as ours.
int64_t At(int64_t ms) {
  return ms / 1000 * 1000 + 123;
}

Alert MakeAlert(const std::string& gpu, int64_t starts_ms, int64_t ends_ms) {
  Alert a;
  a.labels = {{"alertname", "GpuHot"}, {"gpu", gpu}, {"instance", "node-1:9400"}};
  a.annotations = {{"summary", "GPU " + gpu + " is hot"}, {"description", "quote \" and\nnewline"}};
  a.starts_at_ms = starts_ms;
  a.ends_at_ms = ends_ms;
  a.generator_url = "http://node-1:9400/graph?g0.expr=gpu_temp%3E90";
  return a;
}

Options AmOptions(const std::string& url, const std::string& queue_dir = "") {
  Options o;
  o.targets = {{Target::kAlertmanager, url}};
  o.queue_dir = queue_dir;
  o.timeout_s = 5;
  o.backoff_initial_s = 0.1;
  o.backoff_max_s = 0.5;
  return o;
}

// gpu label -> alert, from Alertmanager's GET /api/v2/alerts.
std::map<std::string, Json> ByGpu(const Json& alerts) {
  std::map<std::string, Json> out;
  if (!alerts.is_array()) return out;
  for (const Json& a : alerts) out[a["labels"].value("gpu", "")] = a;
  return out;
}

class AlertmanagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Alertmanager::Available()) GTEST_SKIP() << gw::testing::kAlertmanagerBinary << " missing";
  }
  Logger logger_{LogLevel::kInfo};
};

TEST_F(AlertmanagerTest, FiringThenResolved) {
  Alertmanager am;
  ASSERT_TRUE(am.Start()) << am.Output();
  auto n = Notifier::Create(AmOptions(am.url()), &logger_);
  ASSERT_TRUE(n.ok()) << n.error().message;
  int64_t now = SystemClock().NowMs();
  Alert a0 = MakeAlert("0", At(now - 60000), At(now + 600000));
  Alert a1 = MakeAlert("1", At(now - 30000), At(now + 600000));
  (*n)->Send({a0, a1});
  ASSERT_TRUE(WaitFor([&] { return ByGpu(am.Alerts()).size() == 2; }, 30)) << am.Alerts().dump();

  auto shown = ByGpu(am.Alerts());
  const Json& got = shown["0"];
  EXPECT_EQ(got["labels"],
            (Json{{"alertname", "GpuHot"}, {"gpu", "0"}, {"instance", "node-1:9400"}}));
  EXPECT_EQ(got["annotations"]["summary"], "GPU 0 is hot");
  EXPECT_EQ(got["annotations"]["description"], "quote \" and\nnewline");
  EXPECT_EQ(got["startsAt"], FormatRfc3339Ms(a0.starts_at_ms));
  EXPECT_EQ(got["endsAt"], FormatRfc3339Ms(a0.ends_at_ms));
  EXPECT_EQ(got["generatorURL"], a0.generator_url);
  EXPECT_EQ(got["fingerprint"], FingerprintHex(Fingerprint(a0.labels)));
  EXPECT_EQ(got["status"]["state"], "active");
  EXPECT_EQ(shown["1"]["startsAt"], FormatRfc3339Ms(a1.starts_at_ms));
  EXPECT_EQ((*n)->stats().targets[0].sent, 2);

  // Resolve gpu 0: Alertmanager stops listing it (its API hides alerts whose endsAt has passed).
  a0.ends_at_ms = SystemClock().NowMs();
  (*n)->Send({a0, a1});
  ASSERT_TRUE(WaitFor([&] { return (*n)->stats().targets[0].sent == 4; }, 30));
  ASSERT_TRUE(WaitFor([&] { return ByGpu(am.Alerts()).size() == 1; }, 30)) << am.Alerts().dump();
  EXPECT_EQ(ByGpu(am.Alerts()).count("1"), 1u);
}

// Alertmanager is down while alerts fire and resolve, gpuwarden restarts in between; when it
// comes back every latest state arrives. Alertmanager forwards to a webhook, so the resolution
// (which its API no longer lists) is checked in what Alertmanager itself notifies.
TEST_F(AlertmanagerTest, OutageAcrossRestartLosesNothing) {
  WebhookReceiver am_hook;
  ASSERT_TRUE(am_hook.Start());
  Alertmanager am(gw::testing::WebhookAlertmanagerConfig(am_hook.url("/am")));
  ASSERT_TRUE(am.Start()) << am.Output();
  TempDir queue_dir;
  int64_t now = SystemClock().NowMs();
  Alert a0 = MakeAlert("0", At(now - 60000), At(now + 600000));
  Alert a1 = MakeAlert("1", At(now - 60000), At(now + 600000));
  {
    auto n = Notifier::Create(AmOptions(am.url(), queue_dir.path()), &logger_);
    ASSERT_TRUE(n.ok()) << n.error().message;
    (*n)->Send({a0, a1});
    ASSERT_TRUE(WaitFor([&] { return ByGpu(am.Alerts()).size() == 2; }, 30));
    ASSERT_TRUE(am_hook.WaitForRequests(1, 30));  // Alertmanager notified the firing group

    am.Stop();
    a0.ends_at_ms = At(SystemClock().NowMs() - 1000);  // gpu 0 resolves during the outage
    a1.ends_at_ms = At(SystemClock().NowMs() + 900000);
    Alert a2 = MakeAlert("2", At(SystemClock().NowMs()),
                         At(SystemClock().NowMs() + 600000));  // gpu 2 starts firing
    (*n)->Send({a0, a1, a2});
    ASSERT_TRUE(WaitFor([&] { return (*n)->stats().targets[0].consecutive_failures >= 2; }, 30));
    EXPECT_EQ((*n)->stats().targets[0].queue_length, 3);
    EXPECT_NE((*n)->stats().targets[0].last_error, "");
  }  // gpuwarden "exits"

  auto n = Notifier::Create(AmOptions(am.url(), queue_dir.path()), &logger_);  // and restarts
  ASSERT_TRUE(n.ok()) << n.error().message;
  EXPECT_EQ((*n)->stats().targets[0].queue_length, 3);
  size_t hook_before = am_hook.Requests().size();
  ASSERT_TRUE(am.Start()) << am.Output();  // same port, same storage
  ASSERT_TRUE(WaitFor([&] { return (*n)->stats().targets[0].sent == 3; }, 60));
  EXPECT_EQ((*n)->stats().targets[0].queue_length, 0);

  auto shown = ByGpu(am.Alerts());
  EXPECT_EQ(shown.size(), 2u) << am.Alerts().dump();
  EXPECT_EQ(shown.count("0"), 0u);
  ASSERT_EQ(shown.count("1"), 1u);
  EXPECT_EQ(shown["1"]["endsAt"], FormatRfc3339Ms(a1.ends_at_ms));  // the refreshed state
  EXPECT_EQ(shown.count("2"), 1u);

  // Alertmanager's own notification after the restart carries gpu 0 as resolved at our endsAt.
  Json resolved;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto reqs = am_hook.Requests();
        for (size_t i = hook_before; i < reqs.size(); ++i) {
          Json body = Json::parse(reqs[i].body, nullptr, false);
          if (body.is_discarded()) continue;
          for (const Json& a : body["alerts"]) {
            if (a["labels"].value("gpu", "") == "0" && a["status"] == "resolved") resolved = a;
          }
        }
        return !resolved.is_null();
      },
      30))
      << am.Output();
  EXPECT_EQ(resolved["endsAt"], FormatRfc3339Ms(a0.ends_at_ms));
  EXPECT_EQ(resolved["startsAt"], FormatRfc3339Ms(a0.starts_at_ms));
}

TEST_F(AlertmanagerTest, WebhookBodyHasAlertmanagersShape) {
  WebhookReceiver hook;  // /am: from Alertmanager; /ours: from our webhook target
  ASSERT_TRUE(hook.Start());
  Alertmanager am(gw::testing::WebhookAlertmanagerConfig(hook.url("/am")));
  ASSERT_TRUE(am.Start()) << am.Output();
  Options o = AmOptions(am.url());
  o.targets.push_back({Target::kWebhook, hook.url("/ours")});
  auto n = Notifier::Create(o, &logger_);
  ASSERT_TRUE(n.ok()) << n.error().message;
  int64_t now = SystemClock().NowMs();
  (*n)->Send({MakeAlert("0", At(now - 60000), At(now + 600000))});
  Json theirs, ours;
  ASSERT_TRUE(WaitFor(
      [&] {
        for (const auto& r : hook.Requests())
          (r.path == "/am" ? theirs : ours) = Json::parse(r.body);
        return !theirs.is_null() && !ours.is_null();
      },
      30));
  auto keys = [](const Json& obj) {
    std::set<std::string> k;
    for (const auto& [key, v] : obj.items()) k.insert(key);
    return k;
  };
  EXPECT_EQ(keys(ours), keys(theirs)) << "ours: " << ours.dump() << "\ntheirs: " << theirs.dump();
  ASSERT_EQ(ours["alerts"].size(), 1u);
  ASSERT_EQ(theirs["alerts"].size(), 1u);
  const Json& a = ours["alerts"][0];
  const Json& b = theirs["alerts"][0];
  EXPECT_EQ(keys(a), keys(b));
  for (const char* field :
       {"status", "labels", "annotations", "startsAt", "endsAt", "generatorURL", "fingerprint"}) {
    EXPECT_EQ(a[field], b[field]) << field;
  }
  for (const char* field : {"version", "status", "commonLabels", "commonAnnotations"}) {
    EXPECT_EQ(ours[field], theirs[field]) << field;
  }
}

// promtool (Prometheus 2.42) lints our self-metrics the way Prometheus would scrape them.
TEST(NotifyMetrics, PromtoolAcceptsThem) {
  if (::access("/usr/bin/promtool", X_OK) != 0) GTEST_SKIP() << "/usr/bin/promtool missing";
  Notifier::Stats stats;
  Notifier::TargetStats t;
  t.url = "http://am:9093";
  t.sent = 3;
  t.latency_sum_s = 0.25;
  t.latency_count = 2;
  stats.targets = {t, t};
  stats.targets[1].url = "http://hook:8080/x?a=\"b\"";
  std::string text;
  AppendMetrics(stats, 10000, &text);
  TempDir dir;
  gw::testing::WriteFile(dir / "metrics.txt", text);
  std::string out;
  int code = gw::testing::RunCommand({"/usr/bin/promtool", "check", "metrics"}, &out, 60,
                                     dir / "metrics.txt");
  EXPECT_EQ(code, 0) << out << "\n" << text;
  EXPECT_EQ(out, "") << text;
}

}  // namespace
}  // namespace gw::notify
