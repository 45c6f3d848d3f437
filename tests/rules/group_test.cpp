// Group evaluation: recording rules, the alert lifecycle of Prometheus 2.42, ALERTS series,
// restore of `for` state.
#include <gtest/gtest.h>

#include <cmath>

#include "rules/group.h"

namespace gw::rules {
namespace {

constexpr int64_t kMin = 60000;

// Writes into a memory querier (so later rules see results) and remembers every sample.
class Store : public tsdb::MemoryAppender {
 public:
  Store() : tsdb::MemoryAppender(&q) {}
  Status Append(Ref ref, int64_t t, double v) override {
    written.push_back({labels(ref), {{t, v}}});
    return tsdb::MemoryAppender::Append(ref, t, v);
  }
  // Value written for `ls` at t, NAN if none; "stale" checks use IsStaleNaN.
  const tsdb::SeriesData* Find(const tsdb::Labels& ls, int64_t t) const {
    for (const auto& s : written)
      if (s.labels == ls && s.samples[0].t_ms == t) return &s;
    return nullptr;
  }
  tsdb::MemoryQuerier q;
  std::vector<tsdb::SeriesData> written;
};

GroupSpec Spec(const std::string& yaml) {
  auto f = ParseRuleText(yaml, "t.yml");
  EXPECT_TRUE(f.ok()) << f.error().message;
  return f.ok() ? f->groups[0] : GroupSpec{};
}

class GroupTest : public ::testing::Test {
 protected:
  void Load(const std::string& yaml) {
    group = std::make_unique<Group>(Spec(yaml), "t.yml", kMin, &env);
    for (auto& r : group->rules()) r->set_restored(true);
  }
  void Eval(int64_t t) { group->Eval(t, store.q, engine, &store); }
  const Rule& rule(size_t i) { return *group->rules()[i]; }
  std::vector<AlertState> States(size_t i) {
    std::vector<AlertState> out;
    for (const auto& [_, a] : rule(i).alerts()) out.push_back(a.state);
    return out;
  }
  void Series(const tsdb::Labels& ls, const std::vector<double>& values, int64_t step = kMin) {
    for (size_t i = 0; i < values.size(); ++i) {
      if (std::isnan(values[i])) continue;
      ASSERT_TRUE(store.q.Append(ls, static_cast<int64_t>(i) * step, values[i]).ok());
    }
  }

  EvalEnv env;
  Store store;
  promql::Engine engine;
  std::unique_ptr<Group> group;
};

TEST_F(GroupTest, RecordingRuleNamesAndLabels) {
  Load(
      "groups:\n- name: g\n  rules:\n  - record: job:m:sum\n    expr: sum by (job) (m)\n"
      "    labels: {job: overridden, extra: x}\n  - record: chained\n    expr: job:m:sum * 2\n");
  Series({{"__name__", "m"}, {"job", "a"}}, {1, 2});
  Eval(0);
  tsdb::Labels out = {{"__name__", "job:m:sum"}, {"extra", "x"}, {"job", "overridden"}};
  ASSERT_NE(store.Find(out, 0), nullptr);
  EXPECT_EQ(store.Find(out, 0)->samples[0].v, 1);
  // The second rule sees the first rule's result of the same evaluation.
  const auto* chained =
      store.Find({{"__name__", "chained"}, {"extra", "x"}, {"job", "overridden"}}, 0);
  ASSERT_NE(chained, nullptr);
  EXPECT_EQ(chained->samples[0].v, 2);
  EXPECT_EQ(rule(0).health(), "ok");
}

TEST_F(GroupTest, DuplicateOutputSeriesIsAnError) {
  Load("groups:\n- name: g\n  rules:\n  - record: r\n    expr: m\n    labels: {job: same}\n");
  Series({{"__name__", "m"}, {"job", "a"}}, {1});
  Series({{"__name__", "m"}, {"job", "b"}}, {1});
  Eval(0);
  EXPECT_EQ(rule(0).health(), "err");
  EXPECT_EQ(rule(0).last_error(),
            "vector contains metrics with the same labelset after applying rule labels");
}

TEST_F(GroupTest, StaleMarkerWhenSeriesDisappears) {
  Load("groups:\n- name: g\n  rules:\n  - record: r\n    expr: m > 0\n");
  Series({{"__name__", "m"}, {"job", "a"}}, {1, 0});
  Eval(0);
  Eval(kMin);
  const auto* s = store.Find({{"__name__", "r"}, {"job", "a"}}, kMin);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(tsdb::IsStaleNaN(s->samples[0].v));
}

TEST_F(GroupTest, PendingThenFiringAfterFor) {
  Load("groups:\n- name: g\n  rules:\n  - alert: Hot\n    expr: t > 80\n    for: 2m\n");
  Series({{"__name__", "t"}, {"gpu", "0"}}, {90, 90, 90, 90});
  Eval(0);
  EXPECT_EQ(States(0), std::vector<AlertState>{AlertState::kPending});
  Eval(kMin);
  EXPECT_EQ(States(0), std::vector<AlertState>{AlertState::kPending});
  Eval(2 * kMin);
  EXPECT_EQ(States(0), std::vector<AlertState>{AlertState::kFiring});
  const AlertInstance& a = rule(0).alerts().begin()->second;
  EXPECT_EQ(a.labels, (tsdb::Labels{{"alertname", "Hot"}, {"gpu", "0"}}));
  EXPECT_EQ(a.value, 90);
  EXPECT_EQ(a.active_at_ms, 0);
  EXPECT_EQ(a.fired_at_ms, 2 * kMin);
  // ALERTS moved from pending to firing; ALERTS_FOR_STATE holds active-since seconds.
  tsdb::Labels pending = {
      {"__name__", "ALERTS"}, {"alertname", "Hot"}, {"alertstate", "pending"}, {"gpu", "0"}};
  tsdb::Labels firing = {
      {"__name__", "ALERTS"}, {"alertname", "Hot"}, {"alertstate", "firing"}, {"gpu", "0"}};
  ASSERT_NE(store.Find(pending, kMin), nullptr);
  ASSERT_NE(store.Find(firing, 2 * kMin), nullptr);
  ASSERT_NE(store.Find(pending, 2 * kMin), nullptr);
  EXPECT_TRUE(tsdb::IsStaleNaN(store.Find(pending, 2 * kMin)->samples[0].v));
  const auto* fs =
      store.Find({{"__name__", "ALERTS_FOR_STATE"}, {"alertname", "Hot"}, {"gpu", "0"}}, 2 * kMin);
  ASSERT_NE(fs, nullptr);
  EXPECT_EQ(fs->samples[0].v, 0);
}

TEST_F(GroupTest, ForResetsWhenSeriesMissesOneEvaluation) {
  Load("groups:\n- name: g\n  rules:\n  - alert: Hot\n    expr: t > 80\n    for: 2m\n");
  Series({{"__name__", "t"}}, {90, 90, 50, 90, 90, 90});
  for (int i = 0; i <= 4; ++i) Eval(i * kMin);
  EXPECT_EQ(States(0), std::vector<AlertState>{AlertState::kPending});
  EXPECT_EQ(rule(0).alerts().begin()->second.active_at_ms, 3 * kMin);
  Eval(5 * kMin);
  EXPECT_EQ(States(0), std::vector<AlertState>{AlertState::kFiring});
}

TEST_F(GroupTest, ResolvedAlertsKeptFifteenMinutes) {
  Load("groups:\n- name: g\n  rules:\n  - alert: Hot\n    expr: t > 80\n");
  Series({{"__name__", "t"}}, {90, 50});
  Eval(0);
  EXPECT_EQ(States(0), std::vector<AlertState>{AlertState::kFiring});
  Eval(kMin);
  ASSERT_EQ(States(0), std::vector<AlertState>{AlertState::kInactive});
  EXPECT_EQ(rule(0).alerts().begin()->second.resolved_at_ms, kMin);
  Eval(16 * kMin);  // exactly 15m after: still kept (deleted only when older than 15m)
  EXPECT_EQ(rule(0).alerts().size(), 1u);
  Eval(16 * kMin + 1000);
  EXPECT_TRUE(rule(0).alerts().empty());
}

TEST_F(GroupTest, KeepFiringFor) {
  Load(
      "groups:\n- name: g\n  rules:\n  - alert: Down\n    expr: up == 0\n    keep_firing_for: "
      "2m\n");
  Series({{"__name__", "up"}}, {0, 1, 1, 1, 1});
  Eval(0);
  EXPECT_EQ(States(0), std::vector<AlertState>{AlertState::kFiring});
  Eval(kMin);
  EXPECT_EQ(States(0), std::vector<AlertState>{AlertState::kFiring});
  EXPECT_EQ(rule(0).alerts().begin()->second.keep_firing_since_ms, kMin);
  Eval(2 * kMin);
  EXPECT_EQ(States(0), std::vector<AlertState>{AlertState::kFiring});
  Eval(3 * kMin);
  EXPECT_EQ(States(0), std::vector<AlertState>{AlertState::kInactive});
}

TEST_F(GroupTest, LimitExceeded) {
  Load("groups:\n- name: g\n  limit: 1\n  rules:\n  - alert: A\n    expr: m\n");
  Series({{"__name__", "m"}, {"i", "1"}}, {1});
  Series({{"__name__", "m"}, {"i", "2"}}, {1});
  Eval(0);
  EXPECT_EQ(rule(0).last_error(), "exceeded limit of 1 with 2 alerts");
  EXPECT_TRUE(rule(0).alerts().empty());
}

TEST_F(GroupTest, TemplatedLabelsAndAnnotations) {
  Load(
      "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: m\n    labels: {sev: \"{{ if gt "
      "$value 1.0 }}page{{ else }}info{{ end }}\"}\n"
      "    annotations: {s: \"{{ $labels.i }}={{ $value }}\"}\n");
  Series({{"__name__", "m"}, {"i", "1"}}, {2.5});
  Eval(0);
  const AlertInstance& a = rule(0).alerts().begin()->second;
  EXPECT_EQ(a.labels, (tsdb::Labels{{"alertname", "A"}, {"i", "1"}, {"sev", "page"}}));
  EXPECT_EQ(a.annotations, (tsdb::Labels{{"s", "1=2.5"}}));
}

TEST_F(GroupTest, SendingFiringEveryResendDelayResolvedOnce) {
  Load("groups:\n- name: g\n  rules:\n  - alert: A\n    expr: m > 0\n");
  Series({{"__name__", "m"}}, {1, 1, 1, 0});
  Rule& r = *group->rules()[0];
  Eval(0);
  auto sent = r.TakeAlertsToSend(0, kMin, kMin);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].valid_until_ms, 4 * kMin);
  Eval(kMin);
  EXPECT_TRUE(r.TakeAlertsToSend(kMin, kMin, kMin).empty());  // not after resend_delay yet
  Eval(2 * kMin);
  EXPECT_EQ(r.TakeAlertsToSend(2 * kMin, kMin, kMin).size(), 1u);
  Eval(3 * kMin);
  sent = r.TakeAlertsToSend(3 * kMin, kMin, kMin);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].resolved_at_ms, 3 * kMin);
}

TEST_F(GroupTest, NoAlertSeriesUntilRestored) {
  group = std::make_unique<Group>(Spec("groups:\n- name: g\n  rules:\n  - alert: A\n    expr: m\n"),
                                  "t.yml", kMin, &env);
  Series({{"__name__", "m"}}, {1});
  Eval(0);
  EXPECT_TRUE(store.written.empty());
}

TEST_F(GroupTest, RestoreForStateAfterRestart) {
  const std::string yaml =
      "groups:\n- name: g\n  rules:\n  - alert: Hot\n    expr: t > 80\n    for: 30m\n";
  tsdb::Labels t = {{"__name__", "t"}};
  // Before the restart: hot since 0, evaluated each minute until 10m (ALERTS_FOR_STATE = 0).
  for (int i = 0; i <= 40; ++i) ASSERT_TRUE(store.q.Append(t, i * kMin, 90).ok());
  Load(yaml);
  for (int i = 0; i <= 10; ++i) Eval(i * kMin);
  // Restart at 15m: a new group, not restored, evaluates twice, then restores.
  group = std::make_unique<Group>(Spec(yaml), "t.yml", kMin, &env);
  Eval(15 * kMin);
  Eval(16 * kMin);
  EXPECT_EQ(rule(0).alerts().begin()->second.active_at_ms, 15 * kMin);
  group->RestoreForState(16 * kMin, store.q, 3600000, 600000);
  EXPECT_TRUE(rule(0).restored());
  // Pending for 10m before going down at 10m; down 6m: active-since moves forward by 6m.
  EXPECT_EQ(rule(0).alerts().begin()->second.active_at_ms, 6 * kMin);
  Eval(35 * kMin);
  EXPECT_EQ(States(0), std::vector<AlertState>{AlertState::kPending});
  Eval(36 * kMin);
  EXPECT_EQ(States(0), std::vector<AlertState>{AlertState::kFiring});
}

TEST_F(GroupTest, RestoreUsesGracePeriodWhenAlmostDue) {
  const std::string yaml =
      "groups:\n- name: g\n  rules:\n  - alert: Hot\n    expr: t > 80\n    for: 15m\n";
  tsdb::Labels t = {{"__name__", "t"}};
  for (int i = 0; i <= 40; ++i) ASSERT_TRUE(store.q.Append(t, i * kMin, 90).ok());
  Load(yaml);
  for (int i = 0; i <= 10; ++i) Eval(i * kMin);  // 5m left when going down
  group = std::make_unique<Group>(Spec(yaml), "t.yml", kMin, &env);
  Eval(20 * kMin);
  Eval(21 * kMin);
  group->RestoreForState(21 * kMin, store.q, 3600000, 600000);
  // Remaining 5m < grace 10m: fires 10m after the restore.
  EXPECT_EQ(rule(0).alerts().begin()->second.active_at_ms, 21 * kMin + 10 * kMin - 15 * kMin);
}

}  // namespace
}  // namespace gw::rules
