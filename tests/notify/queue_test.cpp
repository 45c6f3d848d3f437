// The per-target queue: latest state per fingerprint, bounds, and its file.
#include <gtest/gtest.h>

#include <filesystem>

#include "notify/queue.h"
#include "support/process.h"

namespace gw::notify {
namespace {

using gw::testing::ReadFile;
using gw::testing::TempDir;
using gw::testing::WriteFile;

Alert MakeAlert(const std::string& name, int64_t ends_at_ms = 0) {
  Alert a;
  a.labels = {{"alertname", name}, {"gpu", "0"}};
  a.annotations = {{"summary", name + " summary"}};
  a.starts_at_ms = 1000;
  a.ends_at_ms = ends_at_ms;
  a.generator_url = "http://g/" + name;
  return a;
}

std::vector<std::string> Names(const std::vector<Alert>& alerts) {
  std::vector<std::string> out;
  for (const Alert& a : alerts) out.push_back(a.labels[0].second);
  return out;
}

TEST(AlertQueue, KeepsLatestStatePerFingerprint) {
  AlertQueue q(100);
  q.Put(MakeAlert("A"));
  q.Put(MakeAlert("B"));
  q.Put(MakeAlert("A", 5000));  // A resolves: replaces its firing state, moves to the back
  ASSERT_EQ(q.size(), 2u);
  std::vector<Alert> snap = q.Snapshot();
  EXPECT_EQ(Names(snap), (std::vector<std::string>{"B", "A"}));
  EXPECT_EQ(snap[1].ends_at_ms, 5000);
}

TEST(AlertQueue, BoundedDropsOldest) {
  AlertQueue q(3);
  EXPECT_EQ(q.Put(MakeAlert("A")), 0);
  EXPECT_EQ(q.Put(MakeAlert("B")), 0);
  EXPECT_EQ(q.Put(MakeAlert("C")), 0);
  EXPECT_EQ(q.Put(MakeAlert("A", 7)), 0);  // an update never overflows
  EXPECT_EQ(q.Put(MakeAlert("D")), 1);     // drops B, the oldest update
  EXPECT_EQ(Names(q.Snapshot()), (std::vector<std::string>{"C", "A", "D"}));
}

TEST(AlertQueue, RemoveKeepsStatesReplacedSincePeek) {
  AlertQueue q(100);
  q.Put(MakeAlert("A"));
  q.Put(MakeAlert("B"));
  q.Put(MakeAlert("C"));
  AlertQueue::Batch batch = q.Peek(2);
  EXPECT_EQ(Names(batch.alerts), (std::vector<std::string>{"A", "B"}));
  q.Put(MakeAlert("A", 9000));  // A resolved while the batch was in flight
  EXPECT_EQ(q.Remove(batch), 1u);
  std::vector<Alert> rest = q.Snapshot();
  EXPECT_EQ(Names(rest), (std::vector<std::string>{"C", "A"}));
  EXPECT_EQ(rest[1].ends_at_ms, 9000);  // the newer state stays queued
}

TEST(QueueFile, RoundTrip) {
  TempDir dir;
  Target t{Target::kAlertmanager, "http://am:9093"};
  std::string path = QueueFilePath(dir.path(), t);
  EXPECT_EQ(path.rfind(dir.path() + "/alertmanager-", 0), 0u) << path;
  QueueFile f{"alertmanager", t.url, {MakeAlert("A"), MakeAlert("B\"\n☃", 42)}};
  f.alerts[1].starts_at_ms = -5;
  ASSERT_TRUE(WriteQueueFile(path, f).ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  auto back = ReadQueueFile(path);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->kind, "alertmanager");
  EXPECT_EQ(back->target_url, "http://am:9093");
  ASSERT_EQ(back->alerts.size(), 2u);
  EXPECT_EQ(back->alerts[1].labels, f.alerts[1].labels);
  EXPECT_EQ(back->alerts[1].annotations, f.alerts[1].annotations);
  EXPECT_EQ(back->alerts[1].starts_at_ms, -5);
  EXPECT_EQ(back->alerts[1].ends_at_ms, 42);
  EXPECT_EQ(back->alerts[1].generator_url, f.alerts[1].generator_url);
  // Rewriting replaces the content.
  f.alerts.pop_back();
  ASSERT_TRUE(WriteQueueFile(path, f).ok());
  EXPECT_EQ(ReadQueueFile(path)->alerts.size(), 1u);
}

TEST(QueueFile, DistinctTargetsDistinctFiles) {
  EXPECT_NE(QueueFilePath("/d", {Target::kAlertmanager, "http://a:1"}),
            QueueFilePath("/d", {Target::kAlertmanager, "http://a:2"}));
  EXPECT_NE(QueueFilePath("/d", {Target::kAlertmanager, "http://a:1"}),
            QueueFilePath("/d", {Target::kWebhook, "http://a:1"}));
}

TEST(QueueFile, CorruptionIsReportedNotFatal) {
  TempDir dir;
  std::string path = dir / "q.json";
  ASSERT_TRUE(
      WriteQueueFile(path, {"webhook", "http://h/", {MakeAlert("A"), MakeAlert("B")}}).ok());
  std::string good = ReadFile(path);

  struct Case {
    std::string name, text, expect;
  };
  std::string flipped = good;
  size_t pos = flipped.find("A summary");
  ASSERT_NE(pos, std::string::npos);
  flipped[pos] = 'X';  // still valid JSON: only the checksum notices
  std::vector<Case> cases = {
      {"empty", "", "not valid JSON"},
      {"truncated", good.substr(0, good.size() / 2), "not valid JSON"},
      {"garbage", "\x01\x02\xff garbage", "not valid JSON"},
      {"other json", "[1,2,3]", "not a gpuwarden"},
      {"bit flip", flipped, "checksum mismatch"},
      {"wrong version", std::string(good).replace(good.find("\"version\":1"), 11, "\"version\":9"),
       "unknown version"},
  };
  for (const Case& c : cases) {
    WriteFile(path, c.text);
    auto r = ReadQueueFile(path);
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_NE(r.error().message.find(c.expect), std::string::npos)
        << c.name << ": " << r.error().message;
    EXPECT_NE(r.error().message.find(path), std::string::npos) << c.name;
  }
  EXPECT_FALSE(ReadQueueFile(dir / "missing.json").ok());
}

}  // namespace
}  // namespace gw::notify
