// Grafana 9/10 and promtool against the real agent: the requests Grafana's Prometheus data source
// sends (docs/prometheus-notes.md, "What Grafana asks"), replayed with Grafana's methods,
// parameters and encodings, each answer checked the way Grafana reads it; promtool's query
// commands; and the shapes of the endpoints added for issue 15 compared with a real Prometheus
// 2.42 that scrapes the same agent.
#include <gtest/gtest.h>
#include <httplib.h>

#include <ctime>
#include <nlohmann/json.hpp>
#include <set>

#include "support/agent_process.h"
#include "support/prometheus_server.h"

namespace gw::testing {
namespace {

using nlohmann::json;

// Grafana's two ways of sending a request: GET with the parameters in the URL, or (the data
// source's default "POST" method) POST with them form-encoded in the body.
struct Reply {
  int status = 0;
  json doc;
};
Reply Send(int port, const std::string& method, const std::string& path,
           const std::vector<std::pair<std::string, std::string>>& params) {
  std::string form;
  for (const auto& [k, v] : params) form += (form.empty() ? "" : "&") + k + "=" + UrlEncode(v);
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(60);
  httplib::Result res = method == "GET"
                            ? client.Get((path + (form.empty() ? "" : "?" + form)).c_str())
                            : client.Post(path.c_str(), form, "application/x-www-form-urlencoded");
  Reply r;
  if (!res) return r;
  r.status = res->status;
  r.doc = json::parse(res->body, nullptr, false);
  return r;
}

// What every Grafana caller checks first: HTTP 200 and "status":"success"; returns data.
json DataOf(const Reply& r, const std::string& what) {
  EXPECT_EQ(r.status, 200) << what << ": " << r.doc.dump();
  EXPECT_EQ(r.doc.value("status", ""), "success") << what << ": " << r.doc.dump();
  return r.doc.contains("data") ? r.doc["data"] : json();
}

bool IsStringArray(const json& j) {
  if (!j.is_array()) return false;
  for (const json& e : j)
    if (!e.is_string()) return false;
  return true;
}

std::set<std::string> Keys(const json& object) {
  std::set<std::string> out;
  if (object.is_object())
    for (auto it = object.begin(); it != object.end(); ++it) out.insert(it.key());
  return out;
}

class GrafanaReplay : public ::testing::Test {
 protected:
  void SetUp() override {
    // One scrape target that can never answer, so /api/v1/targets has one to report.
    WriteFile(dir_ / "gw.yml",
              "scrape:\n  targets:\n    - name: nowhere\n      url: http://127.0.0.1:1/metrics\n"
              "      interval: 5s\n");
    agent_ = std::make_unique<AgentProcess>(std::vector<std::string>{
        "--simulate", "demo", "--sim-clock", "stepped", "--config", dir_ / "gw.yml"});
    ASSERT_NE(agent_->port(), 0);
    agent_->Advance(60);
    ASSERT_TRUE(WaitFor(
        [&] {
          return Value(ParseExposition(agent_->Get("/metrics").body),
                       "gpuwarden_recorder_snapshots_recorded_total") >= 2;
        },
        30));
    // Grafana's default range, now-1h .. now, in whole seconds (getPrometheusTime); the simulated
    // clock started about now and ran 60 s ahead, so `end` reaches past it.
    start_ = std::to_string(time(nullptr) - 3600);
    end_ = std::to_string(time(nullptr) + 120);
  }
  Reply Get(const std::string& path,
            const std::vector<std::pair<std::string, std::string>>& params = {}) {
    return Send(agent_->port(), "GET", path, params);
  }
  Reply Post(const std::string& path,
             const std::vector<std::pair<std::string, std::string>>& params) {
    return Send(agent_->port(), "POST", path, params);
  }

  TempDir dir_;
  std::unique_ptr<AgentProcess> agent_;
  std::string start_, end_;
};

TEST_F(GrafanaReplay, SaveAndTest) {
  // The health check: an instant query of 1+1 at the end of a range (POST by default), then the
  // build information, whose absent `features` makes Grafana call the server "prometheus".
  const json data =
      DataOf(Post("/api/v1/query", {{"query", "1+1"}, {"time", end_ + ".5"}}), "health check");
  EXPECT_EQ(data["resultType"], "scalar");
  ASSERT_TRUE(data["result"].is_array());
  EXPECT_EQ(data["result"][1], "2");
  const json build = DataOf(Get("/api/v1/status/buildinfo"), "buildinfo");
  for (const char* key : {"version", "revision", "branch", "buildUser", "buildDate", "goVersion"})
    EXPECT_TRUE(build.contains(key) && build[key].is_string()) << key;
  EXPECT_FALSE(build.contains("features"));
  EXPECT_NE(build["revision"], "");
  EXPECT_NE(build["buildDate"], "");
}

TEST_F(GrafanaReplay, MetricsBrowserAndQueryBuilder) {
  const std::vector<std::pair<std::string, std::string>> range = {{"start", start_}, {"end", end_}};
  // The language provider's start: metric names, all metadata, all label names (POST).
  const json names = DataOf(Get("/api/v1/label/__name__/values", range), "metric names");
  ASSERT_TRUE(IsStringArray(names)) << names.dump();
  EXPECT_NE(std::find(names.begin(), names.end(), "gpu_power_watts"), names.end());
  const json metadata = DataOf(Get("/api/v1/metadata"), "metadata");
  ASSERT_TRUE(metadata.is_object());
  ASSERT_TRUE(metadata.contains("gpu_power_watts"));
  for (auto it = metadata.begin(); it != metadata.end(); ++it) {
    // Grafana reads metadata[metric][0].type and .help.
    ASSERT_TRUE(it.value().is_array() && !it.value().empty()) << it.key();
    EXPECT_TRUE(it.value()[0]["type"].is_string()) << it.key();
    EXPECT_TRUE(it.value()[0]["help"].is_string()) << it.key();
  }
  const json labels = DataOf(Post("/api/v1/labels", range), "label names");
  ASSERT_TRUE(IsStringArray(labels));
  EXPECT_NE(std::find(labels.begin(), labels.end(), "gpu"), labels.end());

  // Metrics browser: a metric picked; its label names, a label's values, its series (GET, with
  // Grafana's series limit, which 2.42 ignores).
  auto with = [&](std::vector<std::pair<std::string, std::string>> p) {
    p.insert(p.end(), range.begin(), range.end());
    return p;
  };
  const json metric_labels =
      DataOf(Get("/api/v1/labels", with({{"match[]", "gpu_power_watts"}})), "labels of a metric");
  ASSERT_TRUE(IsStringArray(metric_labels));
  EXPECT_NE(std::find(metric_labels.begin(), metric_labels.end(), "uuid"), metric_labels.end());
  EXPECT_EQ(std::find(metric_labels.begin(), metric_labels.end(), "target"), metric_labels.end());
  const json gpus =
      DataOf(Get("/api/v1/label/gpu/values", with({{"match[]", "{__name__=\"gpu_power_watts\"}"}})),
             "values of a label");
  ASSERT_TRUE(IsStringArray(gpus));
  EXPECT_EQ(gpus.size(), 8u) << gpus.dump();
  const json series = DataOf(
      Get("/api/v1/series", with({{"match[]", "gpu_power_watts"}, {"limit", "40000"}})), "series");
  ASSERT_TRUE(series.is_array());
  EXPECT_EQ(series.size(), 8u);
  for (const json& s : series) {
    EXPECT_EQ(s["__name__"], "gpu_power_watts");
    for (auto it = s.begin(); it != s.end(); ++it) EXPECT_TRUE(it.value().is_string());
  }
  // Series through POST, as Grafana sends them with the POST method.
  EXPECT_EQ(
      DataOf(Post("/api/v1/series", with({{"match[]", "gpu_power_watts"}})), "POST series").size(),
      8u);

  // Query builder: the picked metric's metadata, its label names with the other filters, values.
  const json one = DataOf(Get("/api/v1/metadata", {{"metric", "gpu_power_watts"}}), "metadata");
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one["gpu_power_watts"][0]["type"], "gauge");
  EXPECT_EQ(one["gpu_power_watts"][0]["unit"], "watts");
  EXPECT_FALSE(one["gpu_power_watts"][0]["help"].get<std::string>().empty());
  const json builder_labels = DataOf(
      Get("/api/v1/labels", with({{"match[]", "{gpu=\"0\", __name__=\"gpu_power_watts\"}"}})),
      "builder labels");
  EXPECT_NE(std::find(builder_labels.begin(), builder_labels.end(), "uuid"), builder_labels.end());
  const json uuids = DataOf(Get("/api/v1/label/uuid/values",
                                with({{"match[]", "{gpu=\"0\", __name__=\"gpu_power_watts\"}"}})),
                            "builder values");
  EXPECT_EQ(uuids.size(), 1u);
}

TEST_F(GrafanaReplay, ExploreQueries) {
  // Range query as Grafana's backend sends it: POST, form-encoded, times with fractions.
  const json range =
      DataOf(Post("/api/v1/query_range", {{"query", "max by (gpu) (gpu_power_watts)"},
                                          {"start", start_ + ".123"},
                                          {"end", end_ + ".456"},
                                          {"step", "15"}}),
             "range query");
  EXPECT_EQ(range["resultType"], "matrix");
  ASSERT_EQ(range["result"].size(), 8u);
  for (const json& s : range["result"]) {
    ASSERT_TRUE(s["metric"].is_object());
    ASSERT_TRUE(s["values"].is_array());
    ASSERT_FALSE(s["values"].empty());
    EXPECT_TRUE(s["values"][0][0].is_number());
    EXPECT_TRUE(s["values"][0][1].is_string());
  }
  const json instant =
      DataOf(Post("/api/v1/query", {{"query", "gpu_power_watts"}, {"time", end_}}), "instant");
  EXPECT_EQ(instant["resultType"], "vector");
  EXPECT_EQ(instant["result"].size(), 8u);
  // Explore asks for exemplars beside a range query.
  const json exemplars =
      DataOf(Get("/api/v1/query_exemplars",
                 {{"query", "gpu_power_watts"}, {"start", start_}, {"end", end_}}),
             "exemplars");
  EXPECT_TRUE(exemplars.is_array());
  EXPECT_TRUE(exemplars.empty());
  // The rule and alert lists (Grafana's alerting view of the data source).
  EXPECT_TRUE(DataOf(Get("/api/v1/rules"), "rules")["groups"].is_array());
  // A bad query comes back as Grafana shows errors: status error, errorType, error.
  const Reply bad = Post("/api/v1/query_range",
                         {{"query", "sum("}, {"start", start_}, {"end", end_}, {"step", "15"}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.doc["status"], "error");
  EXPECT_EQ(bad.doc["errorType"], "bad_data");
}

TEST_F(GrafanaReplay, PromtoolQueries) {
  const std::string url = "http://127.0.0.1:" + std::to_string(agent_->port());
  std::string out;
  ASSERT_EQ(RunCommand({"promtool", "query", "instant", "--time", end_, url,
                        "count(last_over_time(gpu_up[5m]))"},
                       &out),
            0)
      << out;
  EXPECT_NE(out.find("=> 8 @"), std::string::npos) << out;
  ASSERT_EQ(RunCommand({"promtool", "query", "range", "--start", start_, "--end", end_, "--step",
                        "30s", url, "count(gpu_up)"},
                       &out),
            0)
      << out;
  EXPECT_NE(out.find("8 @["), std::string::npos) << out;
  ASSERT_EQ(RunCommand({"promtool", "query", "series", "--match", "gpu_up{gpu=\"3\"}", "--start",
                        start_, "--end", end_, url},
                       &out),
            0)
      << out;
  EXPECT_NE(out.find("__name__=\"gpu_up\""), std::string::npos) << out;
  EXPECT_NE(out.find("gpu=\"3\""), std::string::npos) << out;
  EXPECT_EQ(out.find("gpu=\"4\""), std::string::npos) << out;
  ASSERT_EQ(RunCommand({"promtool", "query", "labels", "--match", "gpu_up", url, "gpu"}, &out), 0)
      << out;
  for (int g = 0; g < 8; ++g) EXPECT_NE(out.find(std::to_string(g)), std::string::npos) << out;
}

// The new endpoints beside a real Prometheus 2.42 that scrapes this agent: the same keys, types
// and printed expressions.
TEST_F(GrafanaReplay, NewEndpointsHavePrometheusShapes) {
  PrometheusServer prom(agent_->port());
  ASSERT_TRUE(prom.ready());
  ASSERT_TRUE(WaitFor(
      [&] {
        const Reply r =
            Send(prom.port(), "GET", "/api/v1/metadata", {{"metric", "gpu_power_watts"}});
        return r.status == 200 && r.doc["data"].contains("gpu_power_watts");
      },
      60));
  auto both = [&](const std::string& path,
                  const std::vector<std::pair<std::string, std::string>>& params = {}) {
    const Reply ours = Get(path, params);
    const Reply theirs = Send(prom.port(), "GET", path, params);
    EXPECT_EQ(ours.status, theirs.status)
        << path << "\nours: " << ours.doc.dump() << "\ntheirs: " << theirs.doc.dump();
    return std::pair{ours.doc, theirs.doc};
  };
  // Metadata of a gauge: what Prometheus learnt from our page is what we answer.
  {
    auto [ours, theirs] = both("/api/v1/metadata", {{"metric", "gpu_power_watts"}});
    EXPECT_EQ(ours["data"], theirs["data"]);
    auto [ours_none, theirs_none] = both("/api/v1/metadata", {{"limit", "0"}});
    EXPECT_EQ(ours_none["data"], theirs_none["data"]);
    auto [ours_bad, theirs_bad] = both("/api/v1/metadata", {{"limit", "many"}});
    EXPECT_EQ(ours_bad, theirs_bad);
  }
  // Targets: the same keys per target, the same (empty) dropped list, the same filters.
  {
    auto [ours, theirs] = both("/api/v1/targets");
    ASSERT_EQ(ours["data"]["activeTargets"].size(), 1u);
    ASSERT_EQ(theirs["data"]["activeTargets"].size(), 1u);
    EXPECT_EQ(Keys(ours["data"]), Keys(theirs["data"]));
    EXPECT_EQ(Keys(ours["data"]["activeTargets"][0]), Keys(theirs["data"]["activeTargets"][0]));
    const json& t = ours["data"]["activeTargets"][0];
    EXPECT_EQ(t["health"], "down");
    EXPECT_NE(t["lastError"], "");
    EXPECT_EQ(t["scrapeUrl"], "http://127.0.0.1:1/metrics");
    EXPECT_EQ(t["labels"], json::parse(R"({"target":"nowhere"})"));
    auto [ours_dropped, theirs_dropped] = both("/api/v1/targets", {{"state", "dropped"}});
    EXPECT_EQ(ours_dropped, theirs_dropped);
  }
  // TSDB status, runtime information, build information: the same keys.
  {
    auto [ours, theirs] = both("/api/v1/status/tsdb");
    EXPECT_EQ(Keys(ours["data"]), Keys(theirs["data"]));
    EXPECT_EQ(Keys(ours["data"]["headStats"]), Keys(theirs["data"]["headStats"]));
    EXPECT_GT(ours["data"]["headStats"]["numSeries"].get<int>(), 100);
    EXPECT_EQ(ours["data"]["seriesCountByMetricName"].size(), 10u);
    EXPECT_EQ(Keys(ours["data"]["seriesCountByMetricName"][0]),
              Keys(theirs["data"]["seriesCountByMetricName"][0]));
    auto [ours_rt, theirs_rt] = both("/api/v1/status/runtimeinfo");
    EXPECT_EQ(Keys(ours_rt["data"]), Keys(theirs_rt["data"]));
    auto [ours_bi, theirs_bi] = both("/api/v1/status/buildinfo");
    EXPECT_EQ(Keys(ours_bi["data"]), Keys(theirs_bi["data"]));
    auto [ours_wal, theirs_wal] = both("/api/v1/status/walreplay");
    EXPECT_EQ(ours_wal, theirs_wal);
  }
  // Flags: name -> string; config: {"yaml": string}.
  {
    auto [ours, theirs] = both("/api/v1/status/flags");
    for (const json* doc : {&ours, &theirs}) {
      ASSERT_TRUE((*doc)["data"].is_object());
      for (auto it = (*doc)["data"].begin(); it != (*doc)["data"].end(); ++it)
        EXPECT_TRUE(it.value().is_string()) << it.key();
    }
    EXPECT_EQ(ours["data"]["sim-clock"], "stepped");
    auto [ours_config, theirs_config] = both("/api/v1/status/config");
    EXPECT_EQ(Keys(ours_config["data"]), Keys(theirs_config["data"]));
    EXPECT_NE(ours_config["data"]["yaml"].get<std::string>().find("name: nowhere"),
              std::string::npos);
  }
  // format_query prints as Prometheus prints, and refuses as it refuses.
  for (const char* query :
       {"sum(rate(x[5m]))by(a)", "a+on(b)group_left(c)d", "-x offset 5m", "x[1h:5m] @ 10",
        "topk(3,x)without(y)", "max_over_time(rate(x{a=~\"b|c\"}[5m])[1h:])", "x > bool 2 unless y",
        "label_replace(x,\"a\",\"$1\",\"b\",\"(.*)\")", "1 + 2 * 3 ^ 4", "(x)", "x{}", ""}) {
    auto [ours, theirs] = both("/api/v1/format_query", {{"query", query}});
    EXPECT_EQ(ours, theirs) << query;
  }
  // Exemplars: empty, and the same errors for the same bad parameters.
  for (const auto& params : std::vector<std::vector<std::pair<std::string, std::string>>>{
           {{"query", "gpu_up"}},
           {{"query", ""}},
           {{"query", "gpu_up"}, {"start", "10"}, {"end", "5"}},
           {{"query", "gpu_up"}, {"start", "yesterday"}}}) {
    auto [ours, theirs] = both("/api/v1/query_exemplars", params);
    EXPECT_EQ(ours, theirs) << params[0].second;
  }
}

}  // namespace
}  // namespace gw::testing
