// The manager: loading (errors keep the old rules), scheduling, sending, API shapes.
#include <gtest/gtest.h>

#include <cstdint>

#include "rules/manager.h"
#include "support/process.h"

namespace gw::rules {
namespace {

constexpr int64_t kMin = 60000;

// The rules' results in a memory querier that View reads.
struct SharedStore {
  std::shared_ptr<tsdb::MemoryQuerier> q = std::make_shared<tsdb::MemoryQuerier>();
  tsdb::MemoryAppender appender{q.get()};
};

// A querier that reads the shared store.
class View : public tsdb::Querier {
 public:
  explicit View(std::shared_ptr<tsdb::MemoryQuerier> q) : q_(std::move(q)) {}
  Status Select(const std::vector<tsdb::Matcher>& m, int64_t a, int64_t b,
                std::vector<tsdb::SeriesData>* out) override {
    return q_->Select(m, a, b, out);
  }
  Status LabelNames(const std::vector<std::vector<tsdb::Matcher>>& m, int64_t a, int64_t b,
                    std::vector<std::string>* out) override {
    return q_->LabelNames(m, a, b, out);
  }
  Status LabelValues(const std::string& n, const std::vector<std::vector<tsdb::Matcher>>& m,
                     int64_t a, int64_t b, std::vector<std::string>* out) override {
    return q_->LabelValues(n, m, a, b, out);
  }

 private:
  std::shared_ptr<tsdb::MemoryQuerier> q_;
};

class ManagerTest : public ::testing::Test {
 protected:
  ManagerTest() {
    ManagerOptions o;
    o.external_labels = {{"cluster", "c1"}};
    o.external_url = "http://prom:9090";
    manager = std::make_unique<Manager>(
        o, [this] { return std::make_unique<View>(store.q); }, &store.appender,
        [this](std::vector<Alert> a) { sent.push_back(std::move(a)); }, &log);
  }
  std::string Write(const std::string& name, const std::string& text) {
    std::string p = dir / name;
    testing::WriteFile(p, text);
    return p;
  }

  testing::TempDir dir;
  SharedStore store;
  Logger log{LogLevel::kError};
  std::vector<std::vector<Alert>> sent;
  std::unique_ptr<Manager> manager;
};

TEST_F(ManagerTest, LoadErrorKeepsCurrentRules) {
  std::string good =
      Write("a.yml", "groups:\n- name: g\n  rules:\n  - record: r\n    expr: vector(1)\n");
  ASSERT_TRUE(manager->Load({good}).ok());
  std::string bad = Write("b.yml", "groups:\n- name: g\n  rules:\n  - record: r\n    expr: sum(\n");
  Status s = manager->Load({dir / "*.yml"});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(bad + ":5:11:"), std::string::npos) << s.message();
  EXPECT_EQ(manager->stats().rules, 1u);
}

TEST_F(ManagerTest, EvaluatesWhenDueAndSendsFiringAlerts) {
  ASSERT_TRUE(manager
                  ->Load({Write("a.yml",
                                "groups:\n- name: g\n  rules:\n  - alert: Always\n    expr: "
                                "vector(1)\n    labels: {severity: page}\n")})
                  .ok());
  const int64_t t0 = 1700000000000;
  manager->EvalDue(t0);
  EXPECT_EQ(manager->stats().evaluations, 1u);
  manager->EvalDue(t0);  // the same slot again: not due
  EXPECT_EQ(manager->stats().evaluations, 1u);
  ASSERT_EQ(sent.size(), 1u);
  const Alert& a = sent[0][0];
  EXPECT_EQ(a.labels,
            (tsdb::Labels{{"alertname", "Always"}, {"cluster", "c1"}, {"severity", "page"}}));
  EXPECT_EQ(a.generator_url, "http://prom:9090/graph?g0.expr=vector%281%29&g0.tab=1");
  EXPECT_EQ(a.ends_at_ms - a.starts_at_ms, 4 * kMin);
  // Slots are aligned to a per-group offset (a hash of the group's name and file, and the file
  // lives in a random temporary directory), so the next slot falls anywhere in (t0, t0 + 1m].
  // Ticking every second through one interval must evaluate exactly once more, not per tick.
  for (int k = 1; k <= 60; ++k) manager->EvalDue(t0 + k * 1000);
  EXPECT_EQ(manager->stats().evaluations, 2u);
  for (int i = 2; i <= 4; ++i) manager->EvalDue(t0 + i * kMin);
  EXPECT_EQ(manager->stats().evaluations, 5u);
  EXPECT_EQ(manager->stats().alerts_firing, 1u);
  // Firing alerts are resent once resend_delay (1m) has passed since the last send.
  EXPECT_GE(sent.size(), 2u);
}

// A store that does not answer fails every rule of a group with one message: one log line per
// distinct error and group, naming its rules, not a line per rule.
TEST(ManagerLog, RulesFailingWithOneErrorAreOneLine) {
  testing::TempDir dir;
  const std::string file = dir / "rules.yml";
  testing::WriteFile(file,
                     "groups:\n- name: g\n  rules:\n"
                     "  - alert: A\n    expr: up == 0\n"
                     "  - alert: B\n    expr: up > 1\n"
                     "  - record: c\n    expr: sum(up)\n"
                     "  - alert: D\n    expr: vector(1)\n");
  std::vector<std::string> lines;
  Logger log(LogLevel::kWarn, [&](LogLevel, const std::string& line) { lines.push_back(line); });
  ManagerOptions o;
  o.instant_query = [](const std::string& expr, int64_t) -> Expected<std::vector<promql::Series>> {
    if (expr == "vector(1)") return Error{"bad answer"};
    return Error{"the store did not answer"};
  };
  Manager m(
      o, [] { return std::make_unique<tsdb::MemoryQuerier>(); }, nullptr, [](std::vector<Alert>) {},
      &log);
  ASSERT_TRUE(m.Load({file}).ok());
  m.EvalDue(1700000000000);
  ASSERT_EQ(lines.size(), 2u);
  std::string all = lines[0] + "\n" + lines[1];
  EXPECT_NE(all.find("group=g rules=A,B,c err=the store did not answer"), std::string::npos) << all;
  EXPECT_NE(all.find("group=g rule=D err=bad answer"), std::string::npos) << all;
  EXPECT_EQ(m.stats().evaluation_failures, 4u);
}

TEST_F(ManagerTest, ReloadCarriesAlertState) {
  std::string path = Write(
      "a.yml", "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: vector(1)\n    for: 10m\n");
  ASSERT_TRUE(manager->Load({path}).ok());
  const int64_t t0 = 1700000000000;
  manager->EvalDue(t0);
  nlohmann::json before = manager->AlertsApi();
  ASSERT_EQ(before["alerts"].size(), 1u);
  // A changed group (new rule added): the unchanged alert keeps its active-since time.
  Write("a.yml",
        "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: vector(1)\n    for: 10m\n"
        "  - record: r\n    expr: vector(2)\n");
  ASSERT_TRUE(manager->Load({path}).ok());
  nlohmann::json after = manager->AlertsApi();
  ASSERT_EQ(after["alerts"].size(), 1u);
  EXPECT_EQ(after["alerts"][0]["activeAt"], before["alerts"][0]["activeAt"]);
}

TEST_F(ManagerTest, ApiShapesAsPrometheus) {
  ASSERT_TRUE(
      manager
          ->Load({Write("a.yml",
                        "groups:\n- name: g\n  rules:\n  - record: r\n    expr: vector(3)\n"
                        "  - alert: A\n    expr: vector(1.5)\n    for: 1h\n    labels: {s: x}\n"
                        "    annotations: {v: \"{{ $value }}\"}\n")})
          .ok());
  manager->EvalDue(1700000000000);
  nlohmann::json rules = manager->RulesApi("");
  ASSERT_EQ(rules["groups"].size(), 1u);
  const auto& g = rules["groups"][0];
  EXPECT_EQ(g["name"], "g");
  EXPECT_EQ(g["interval"], 60);
  EXPECT_EQ(g["limit"], 0);
  ASSERT_EQ(g["rules"].size(), 2u);
  EXPECT_EQ(g["rules"][0]["type"], "recording");
  EXPECT_EQ(g["rules"][0]["health"], "ok");
  EXPECT_FALSE(g["rules"][0].contains("labels"));
  const auto& a = g["rules"][1];
  EXPECT_EQ(a["type"], "alerting");
  EXPECT_EQ(a["state"], "pending");
  EXPECT_EQ(a["duration"], 3600);
  EXPECT_EQ(a["keepFiringFor"], 0);
  EXPECT_EQ(a["annotations"]["v"], "{{ $value }}");
  ASSERT_EQ(a["alerts"].size(), 1u);
  EXPECT_EQ(a["alerts"][0]["value"], "1.5e+00");
  EXPECT_EQ(a["alerts"][0]["annotations"]["v"], "1.5");
  EXPECT_EQ(manager->RulesApi("record")["groups"][0]["rules"].size(), 1u);
  EXPECT_EQ(manager->RulesApi("alert")["groups"][0]["rules"].size(), 1u);
  EXPECT_TRUE(manager->RulesApi("bogus").is_null());
  EXPECT_EQ(manager->AlertsApi()["alerts"][0]["state"], "pending");
  EXPECT_TRUE(sent.empty());  // pending alerts are never sent
}

// The last sample written for a series named `name`, if any.
bool LastIsStale(tsdb::MemoryQuerier& q, const std::string& name) {
  auto m = tsdb::Matcher::Make(tsdb::MatchType::kEqual, "__name__", name);
  std::vector<tsdb::SeriesData> out;
  if (!m.ok() || !q.Select({*m}, 0, INT64_MAX, &out).ok() || out.empty()) return false;
  return tsdb::IsStaleNaN(out[0].samples.back().v);
}

TEST_F(ManagerTest, RemovedRulesAndGroupsGetStaleMarkers) {
  std::string path = Write("a.yml",
                           "groups:\n- name: g\n  rules:\n  - record: r1\n    expr: vector(1)\n"
                           "  - record: r2\n    expr: vector(2)\n- name: h\n  rules:\n"
                           "  - record: r3\n    expr: vector(3)\n");
  ASSERT_TRUE(manager->Load({path}).ok());
  const int64_t t0 = 1700000000000;
  manager->EvalDue(t0);
  EXPECT_FALSE(LastIsStale(*store.q, "r2"));
  Write("a.yml", "groups:\n- name: g\n  rules:\n  - record: r1\n    expr: vector(1)\n");
  ASSERT_TRUE(manager->Load({path}).ok());
  manager->EvalDue(t0 + kMin);
  EXPECT_FALSE(LastIsStale(*store.q, "r1"));
  EXPECT_TRUE(LastIsStale(*store.q, "r2"));
  EXPECT_TRUE(LastIsStale(*store.q, "r3"));
}

TEST(Rfc3339, GoFormatting) {
  EXPECT_EQ(FormatRfc3339(0), "0001-01-01T00:00:00Z");
  EXPECT_EQ(FormatRfc3339(1700000000000), "2023-11-14T22:13:20Z");
  EXPECT_EQ(FormatRfc3339(1700000000120), "2023-11-14T22:13:20.12Z");
}

}  // namespace
}  // namespace gw::rules
