// Wire formats: timestamps, fingerprints, Alertmanager v2 and webhook bodies, backoff, metrics.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "notify/notify.h"

namespace gw::notify {
namespace {

using Json = nlohmann::json;

TEST(FormatRfc3339Ms, UtcWithMilliseconds) {
  EXPECT_EQ(FormatRfc3339Ms(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(FormatRfc3339Ms(1764445004123), "2025-11-29T19:36:44.123Z");
  EXPECT_EQ(FormatRfc3339Ms(1764445004005), "2025-11-29T19:36:44.005Z");
  EXPECT_EQ(FormatRfc3339Ms(-1), "1969-12-31T23:59:59.999Z");
  EXPECT_EQ(FormatRfc3339Ms(951782400000), "2000-02-29T00:00:00.000Z");  // leap day
}

TEST(Fingerprint, MatchesAlertmanager) {
  // Value printed by Alertmanager 0.25 (GET /api/v2/alerts "fingerprint") for this label set.
  LabelPairs labels = {{"alertname", "GpuHot"}, {"gpu", "0"}, {"instance", "node-1:9400"}};
  EXPECT_EQ(FingerprintHex(Fingerprint(labels)), "a928f5b368c9a569");
  LabelPairs shuffled = {{"instance", "node-1:9400"}, {"alertname", "GpuHot"}, {"gpu", "0"}};
  EXPECT_EQ(Fingerprint(labels), Fingerprint(shuffled));
  EXPECT_NE(Fingerprint({{"a", "bc"}}), Fingerprint({{"ab", "c"}}));  // separators matter
  EXPECT_EQ(FingerprintHex(Fingerprint({})), "cbf29ce484222325");     // FNV-1a offset basis
}

TEST(EncodeAlertmanagerV2, FieldsAndTimes) {
  Alert a;
  a.labels = {{"alertname", "GpuHot"}, {"gpu", "0"}};
  a.annotations = {{"summary", "GPU 0 is hot"}};
  a.starts_at_ms = 1764445004123;
  a.ends_at_ms = 1764445304000;
  a.generator_url = "http://node-1:9400/graph?g0.expr=x";
  Alert b;
  b.labels = {{"alertname", "Bare"}};
  Json j = Json::parse(EncodeAlertmanagerV2({a, b}));
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["labels"], (Json{{"alertname", "GpuHot"}, {"gpu", "0"}}));
  EXPECT_EQ(j[0]["annotations"], (Json{{"summary", "GPU 0 is hot"}}));
  EXPECT_EQ(j[0]["startsAt"], "2025-11-29T19:36:44.123Z");
  EXPECT_EQ(j[0]["endsAt"], "2025-11-29T19:41:44.000Z");
  EXPECT_EQ(j[0]["generatorURL"], "http://node-1:9400/graph?g0.expr=x");
  // Zero times and an empty URL are omitted: Alertmanager then uses now / resolve_timeout.
  EXPECT_FALSE(j[1].contains("startsAt"));
  EXPECT_FALSE(j[1].contains("endsAt"));
  EXPECT_FALSE(j[1].contains("generatorURL"));
  EXPECT_EQ(j[1]["annotations"], Json::object());
  EXPECT_EQ(EncodeAlertmanagerV2({}), "[]");
}

TEST(EncodeAlertmanagerV2, Escaping) {
  Alert a;
  a.labels = {{"alertname", "Q\"uote"}, {"path", "C:\\dir"}};
  a.annotations = {{"description", "line1\nline2\ttab \x01 ctl"}, {"unicode", "température 🌡"}};
  std::string text = EncodeAlertmanagerV2({a});
  EXPECT_NE(text.find(R"("Q\"uote")"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("C:\\dir")"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(line1\nline2\ttab \u0001 ctl)"), std::string::npos) << text;
  Json j = Json::parse(text);
  EXPECT_EQ(j[0]["annotations"]["description"], "line1\nline2\ttab \x01 ctl");
  EXPECT_EQ(j[0]["annotations"]["unicode"], "température 🌡");
}

TEST(EncodeAlertmanagerV2, InvalidUtf8IsReplacedNotFatal) {
  Alert a;
  a.labels = {{"alertname", std::string("bad\xff\xfe")}};
  std::string text = EncodeAlertmanagerV2({a});
  Json j = Json::parse(text);  // valid JSON
  EXPECT_EQ(j[0]["labels"]["alertname"], "bad\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(EncodeWebhook, ShapeOfAlertmanagerVersion4) {
  const int64_t now = 1764445004123;
  Alert firing;
  firing.labels = {{"alertname", "GpuHot"}, {"gpu", "0"}, {"severity", "page"}};
  firing.annotations = {{"summary", "hot"}, {"runbook", "r"}};
  firing.starts_at_ms = now - 60000;
  firing.ends_at_ms = now + 240000;  // future: firing
  Alert resolved;
  resolved.labels = {{"alertname", "GpuHot"}, {"gpu", "1"}, {"severity", "page"}};
  resolved.annotations = {{"summary", "hot"}};
  resolved.starts_at_ms = now - 120000;
  resolved.ends_at_ms = now - 1000;
  resolved.generator_url = "http://x/";
  Json j = Json::parse(EncodeWebhook({firing, resolved}, "http://gpuwarden:9400", now));
  EXPECT_EQ(j["version"], "4");
  EXPECT_EQ(j["status"], "firing");
  EXPECT_EQ(j["externalURL"], "http://gpuwarden:9400");
  EXPECT_EQ(j["groupLabels"], Json::object());
  EXPECT_EQ(j["commonLabels"], (Json{{"alertname", "GpuHot"}, {"severity", "page"}}));
  EXPECT_EQ(j["commonAnnotations"], (Json{{"summary", "hot"}}));
  EXPECT_TRUE(j["receiver"].is_string());
  EXPECT_TRUE(j["groupKey"].is_string());
  EXPECT_EQ(j["truncatedAlerts"], 0);
  ASSERT_EQ(j["alerts"].size(), 2u);
  EXPECT_EQ(j["alerts"][0]["status"], "firing");
  EXPECT_EQ(j["alerts"][0]["endsAt"], "0001-01-01T00:00:00Z");
  EXPECT_EQ(j["alerts"][0]["startsAt"], FormatRfc3339Ms(now - 60000));
  EXPECT_EQ(j["alerts"][0]["fingerprint"], FingerprintHex(Fingerprint(firing.labels)));
  EXPECT_EQ(j["alerts"][1]["status"], "resolved");
  EXPECT_EQ(j["alerts"][1]["endsAt"], FormatRfc3339Ms(now - 1000));
  EXPECT_EQ(j["alerts"][1]["generatorURL"], "http://x/");

  Json all_resolved = Json::parse(EncodeWebhook({resolved}, "", now));
  EXPECT_EQ(all_resolved["status"], "resolved");
  EXPECT_EQ(all_resolved["commonLabels"], Json(Json::parse(R"({"alertname":"GpuHot",
            "gpu":"1","severity":"page"})")));
}

TEST(BackoffSeconds, DoublesUpToTheCap) {
  EXPECT_EQ(BackoffSeconds(0, 1, 60), 0);
  EXPECT_EQ(BackoffSeconds(1, 1, 60), 1);
  EXPECT_EQ(BackoffSeconds(2, 1, 60), 2);
  EXPECT_EQ(BackoffSeconds(3, 1, 60), 4);
  EXPECT_EQ(BackoffSeconds(6, 1, 60), 32);
  EXPECT_EQ(BackoffSeconds(7, 1, 60), 60);
  EXPECT_EQ(BackoffSeconds(1000000, 1, 60), 60);
  EXPECT_EQ(BackoffSeconds(3, 0.25, 60), 1);
}

TEST(AppendMetrics, ExpositionLines) {
  Notifier::Stats stats;
  Notifier::TargetStats t;
  t.url = "http://am:9093";
  t.sent = 5;
  t.failed = 2;
  t.dropped = 1;
  t.queue_length = 3;
  t.latency_sum_s = 0.5;
  t.latency_count = 4;
  stats.targets.push_back(t);
  t.url = "http://hook/\"x\"";
  t.sent = 1;
  t.dropped = 2;
  stats.targets.push_back(t);
  stats.corrupt_files = 1;
  std::string out;
  AppendMetrics(stats, 10000, &out);
  EXPECT_NE(out.find("# TYPE gpuwarden_notifications_sent_total counter\n"), std::string::npos);
  EXPECT_NE(out.find("gpuwarden_notifications_sent_total{target=\"http://am:9093\"} 5\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("gpuwarden_notifications_sent_total{target=\"http://hook/\\\"x\\\"\"} 1\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("gpuwarden_notifications_failed_total{target=\"http://am:9093\"} 2\n"),
            std::string::npos);
  EXPECT_NE(out.find("gpuwarden_notifications_dropped_total 3\n"), std::string::npos);
  EXPECT_NE(out.find("gpuwarden_notification_queue_length{target=\"http://am:9093\"} 3\n"),
            std::string::npos);
  EXPECT_NE(out.find("gpuwarden_notification_latency_seconds_sum{target=\"http://am:9093\"} 0.5\n"),
            std::string::npos);
  EXPECT_NE(out.find("gpuwarden_notification_latency_seconds_count{target=\"http://am:9093\"} 4\n"),
            std::string::npos);
  EXPECT_NE(out.find("gpuwarden_notification_queue_capacity 10000\n"), std::string::npos);
  EXPECT_NE(out.find("gpuwarden_notification_queue_corrupt_files_total 1\n"), std::string::npos);
}

}  // namespace
}  // namespace gw::notify
