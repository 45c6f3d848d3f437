// The Prometheus 2.42 endpoints besides the queries (http/prom_api_status.cpp): each answer's shape
// and each parameter error, through a real server. The shapes were taken from a Prometheus 2.42
// server (docs/prometheus-notes.md, "HTTP API"); tests/integration/grafana_replay_test.cpp compares
// them with the real binary.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "base/build_info.h"
#include "http/prom_api.h"
#include "support/process.h"
#include "test_util.h"

namespace gw::http {
namespace {

using nlohmann::json;

class StatusApiTest : public ::testing::Test {
 protected:
  // Starts a server with `options` (call once per test, after filling options_).
  void Start() {
    ServerOptions server_options;
    server_options.listen_address = "127.0.0.1:0";
    server_options.worker_threads = 2;
    auto server = Server::Create(server_options, &logger_);
    ASSERT_TRUE(server.ok()) << server.error().message;
    server_ = std::move(*server);
    RegisterPromApi(
        server_.get(), [] { return std::make_unique<tsdb::MemoryQuerier>(); }, options_);
    ASSERT_TRUE(server_->Start().ok());
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(10);
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }
  // GET `path`; the document, with the status in *status.
  json Get(const std::string& path, int* status = nullptr) {
    auto res = client_->Get(path);
    EXPECT_TRUE(res) << "no answer to " << path;
    if (!res) return json();
    if (status) *status = res->status;
    EXPECT_EQ(res->get_header_value("Content-Type"), "application/json") << path;
    return json::parse(res->body);
  }
  // The error document of `path`, checked for Prometheus' shape and `http_status`.
  std::string Error(const std::string& path, int http_status = 400,
                    const std::string& type = "bad_data") {
    int status = 0;
    json doc = Get(path, &status);
    EXPECT_EQ(status, http_status) << path << ": " << doc.dump();
    EXPECT_EQ(doc["status"], "error") << path;
    EXPECT_EQ(doc["errorType"], type) << path;
    return doc.value("error", "");
  }
  json Data(const std::string& path) {
    int status = 0;
    json doc = Get(path, &status);
    EXPECT_EQ(status, 200) << path << ": " << doc.dump();
    EXPECT_EQ(doc["status"], "success") << path;
    return doc["data"];
  }

  Logger logger_{LogLevel::kError, [](LogLevel, const std::string&) {}};
  PromApiOptions options_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<httplib::Client> client_;
};

std::vector<MetricMetadata> SomeMetadata() {
  return {{"b_seconds", "gauge", "B.", "seconds"},
          {"a_total", "counter", "A.", ""},
          {"c", "unknown", "C one.", ""},
          {"c", "gauge", "C two.", ""},
          {"c", "unknown", "C one.", ""}};  // the same as another target's: listed once
}

TEST_F(StatusApiTest, MetadataListsEveryMetricByNameWithLimitsAndAFilter) {
  options_.metadata = SomeMetadata;
  Start();
  const json all = Data("/api/v1/metadata");
  ASSERT_TRUE(all.is_object());
  EXPECT_EQ(all.size(), 3u);
  EXPECT_EQ(all["b_seconds"], json::parse(R"([{"type":"gauge","help":"B.","unit":"seconds"}])"));
  EXPECT_EQ(all["c"].size(), 2u);
  // limit counts metrics in name order; 0 gives none (as 2.42).
  const json two = Data("/api/v1/metadata?limit=2");
  EXPECT_EQ(two.size(), 2u);
  EXPECT_TRUE(two.contains("a_total"));
  EXPECT_TRUE(two.contains("b_seconds"));
  EXPECT_TRUE(Data("/api/v1/metadata?limit=0").empty());
  EXPECT_EQ(Data("/api/v1/metadata?limit=-1").size(), 3u);
  EXPECT_EQ(Data("/api/v1/metadata?limit_per_metric=1")["c"].size(), 1u);
  EXPECT_EQ(Data("/api/v1/metadata?limit_per_metric=nonsense")["c"].size(), 2u);
  const json one = Data("/api/v1/metadata?metric=a_total");
  EXPECT_EQ(one, json::parse(R"({"a_total":[{"type":"counter","help":"A.","unit":""}]})"));
  EXPECT_TRUE(Data("/api/v1/metadata?metric=nope").empty());
  EXPECT_EQ(Error("/api/v1/metadata?limit=x"), "limit must be a number");
  EXPECT_EQ(Error("/api/v1/metadata?limit=1.5"), "limit must be a number");
}

TEST_F(StatusApiTest, MetadataWithoutASourceIsAnEmptyObject) {
  Start();
  const json data = Data("/api/v1/metadata");
  EXPECT_TRUE(data.is_object());
  EXPECT_TRUE(data.empty());
}

TEST(MetadataFromExpositionTest, ReadsHelpTypeAndTheOpenMetricsUnit) {
  const std::string text =
      "# HELP x_seconds_total Time \\\\ spent\\nin x.\n"
      "# TYPE x_seconds_total counter\n"
      "x_seconds_total{a=\"# HELP no\"} 1\n"
      "# HELP v_info Version.\n"
      "# TYPE v_info gauge\n"
      "v_info 1\n"
      "# TYPE u untyped\n"
      "u 3\n"
      "# HELP t_celsius Temperature.\n"
      "# TYPE t_celsius gauge\n";
  const std::string om =
      "# TYPE x_seconds counter\n# UNIT x_seconds seconds\n# HELP x_seconds Time.\n"
      "# TYPE v info\n"
      "# TYPE t_celsius gauge\n# UNIT t_celsius celsius\n# EOF\n";
  const std::vector<MetricMetadata> got = MetadataFromExposition(text, om);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].metric, "t_celsius");
  EXPECT_EQ(got[0].unit, "celsius");
  EXPECT_EQ(got[1].metric, "u");
  EXPECT_EQ(got[1].type, "unknown");  // untyped is "unknown" in the metadata API
  EXPECT_EQ(got[1].help, "");
  EXPECT_EQ(got[2].metric, "v_info");
  EXPECT_EQ(got[2].type, "gauge");
  EXPECT_EQ(got[3].metric, "x_seconds_total");
  EXPECT_EQ(got[3].type, "counter");
  EXPECT_EQ(got[3].help, "Time \\ spent\nin x.");
  EXPECT_EQ(got[3].unit, "seconds");  // the OpenMetrics family without _total
  // Without the OpenMetrics page there are no units.
  EXPECT_EQ(MetadataFromExposition(text, "")[0].unit, "");
}

TEST_F(StatusApiTest, QueryExemplarsIsEmptyButChecksItsParameters) {
  Start();
  const json data = Data("/api/v1/query_exemplars?query=up&start=1&end=2");
  EXPECT_TRUE(data.is_array());
  EXPECT_TRUE(data.empty());
  EXPECT_TRUE(Data("/api/v1/query_exemplars?query=sum(rate(x[5m]))").empty());
  EXPECT_EQ(Error("/api/v1/query_exemplars"), "1:1: parse error: no expression found in input");
  EXPECT_NE(Error("/api/v1/query_exemplars?query=sum(x").find("parse error"), std::string::npos);
  EXPECT_EQ(Error("/api/v1/query_exemplars?query=up&start=abc"),
            "invalid parameter \"start\": Invalid time value for 'start': cannot parse \"abc\" to "
            "a valid timestamp");
  EXPECT_EQ(Error("/api/v1/query_exemplars?query=up&start=10&end=5"),
            "end timestamp must not be before start timestamp");
  // POST with a form body, as clients may send it.
  auto res =
      client_->Post("/api/v1/query_exemplars", "query=up", "application/x-www-form-urlencoded");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
}

TargetInfo UpTarget() {
  TargetInfo t;
  t.pool = "inference";
  t.url = "http://10.0.0.7:8000/metrics";
  t.labels = {{"target", "inference"}};
  t.health = "up";
  t.last_scrape_ms = 1'700'000'000'120;
  t.last_scrape_duration_s = 0.0125;
  t.interval_s = 15;
  t.timeout_s = 10;
  return t;
}

TEST_F(StatusApiTest, TargetsListsTheScrapeTargetsAsPrometheusDoes) {
  int calls = 0;
  options_.targets = [&calls] {
    ++calls;
    TargetInfo never;
    never.pool = "batch";
    never.url = "https://localhost:9100/m?x=1";
    never.labels = {{"target", "batch"}};
    never.interval_s = 60;
    never.timeout_s = 10;
    return std::vector<TargetInfo>{UpTarget(), never};
  };
  Start();
  const json data = Data("/api/v1/targets");
  ASSERT_EQ(data["activeTargets"].size(), 2u);
  EXPECT_EQ(data["droppedTargets"], json::array());
  // Sorted by pool: batch first.
  const json& never = data["activeTargets"][0];
  EXPECT_EQ(never["scrapePool"], "batch");
  EXPECT_EQ(never["health"], "unknown");
  EXPECT_EQ(never["lastScrape"], "0001-01-01T00:00:00Z");
  EXPECT_EQ(never["lastScrapeDuration"], 0);
  EXPECT_EQ(never["scrapeInterval"], "1m");
  EXPECT_EQ(never["discoveredLabels"],
            json::parse(R"({"__address__":"localhost:9100","__metrics_path__":"/m",
                "__scheme__":"https","__scrape_interval__":"1m","__scrape_timeout__":"10s",
                "target":"batch"})"));
  // A loopback host is replaced by this machine's name in globalUrl.
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof host - 1), 0);
  EXPECT_EQ(never["globalUrl"], std::string("https://") + host + ":9100/m?x=1");
  const json& up = data["activeTargets"][1];
  const std::vector<std::string> keys = {
      "discoveredLabels", "labels",         "scrapePool",   "scrapeUrl",
      "globalUrl",        "lastError",      "lastScrape",   "lastScrapeDuration",
      "health",           "scrapeInterval", "scrapeTimeout"};
  std::vector<std::string> got;
  for (auto it = up.begin(); it != up.end(); ++it) got.push_back(it.key());
  std::vector<std::string> sorted_keys = keys;
  std::sort(sorted_keys.begin(), sorted_keys.end());
  EXPECT_EQ(got, sorted_keys);  // nlohmann sorts keys; the set is what matters
  EXPECT_EQ(up["labels"], json::parse(R"({"target":"inference"})"));
  EXPECT_EQ(up["scrapeUrl"], "http://10.0.0.7:8000/metrics");
  EXPECT_EQ(up["globalUrl"], "http://10.0.0.7:8000/metrics");
  EXPECT_EQ(up["health"], "up");
  EXPECT_EQ(up["lastError"], "");
  EXPECT_EQ(up["lastScrape"], "2023-11-14T22:13:20.12Z");
  EXPECT_DOUBLE_EQ(up["lastScrapeDuration"].get<double>(), 0.0125);
  EXPECT_EQ(up["scrapeTimeout"], "10s");

  EXPECT_EQ(Data("/api/v1/targets?state=active")["activeTargets"].size(), 2u);
  EXPECT_EQ(Data("/api/v1/targets?state=any")["activeTargets"].size(), 2u);
  const int before = calls;
  const json dropped = Data("/api/v1/targets?state=dropped");
  EXPECT_EQ(dropped, json::parse(R"({"activeTargets":[],"droppedTargets":[]})"));
  EXPECT_EQ(calls, before);  // the active list is not even built
  // An unknown state lists nothing (2.42 does the same).
  EXPECT_EQ(Data("/api/v1/targets?state=bogus"), dropped);
}

// Answers as a Prometheus 2.42 server scraping itself answered (docs/prometheus-notes.md): a flat
// list of {target, metric, type, help, unit}; `metric` leaves the name out; `limit` stops before
// the next target once that many are listed; match_target selects targets by their labels.
TEST_F(StatusApiTest, TargetMetadataListsEachTargetsMetrics) {
  options_.target_metadata = [] {
    const tsdb::Labels a{{"target", "trainer"}}, b{{"target", "vllm"}};
    return std::vector<TargetMetadata>{{a, {"loss", "gauge", "Loss.", ""}},
                                       {a, {"steps_total", "counter", "Steps.", ""}},
                                       {b, {"tokens_total", "counter", "Tokens.", "tokens"}}};
  };
  Start();
  EXPECT_EQ(Data("/api/v1/targets/metadata"), json::parse(R"([
      {"target":{"target":"trainer"},"metric":"loss","type":"gauge","help":"Loss.","unit":""},
      {"target":{"target":"trainer"},"metric":"steps_total","type":"counter","help":"Steps.",
       "unit":""},
      {"target":{"target":"vllm"},"metric":"tokens_total","type":"counter","help":"Tokens.",
       "unit":"tokens"}])"));
  EXPECT_EQ(Data("/api/v1/targets/metadata?metric=tokens_total"), json::parse(R"([
      {"target":{"target":"vllm"},"type":"counter","help":"Tokens.","unit":"tokens"}])"));
  EXPECT_TRUE(Data("/api/v1/targets/metadata?metric=nope").empty());
  EXPECT_EQ(Data("/api/v1/targets/metadata?limit=1").size(), 2u);  // the whole first target
  EXPECT_TRUE(Data("/api/v1/targets/metadata?limit=0").empty());
  EXPECT_EQ(Data("/api/v1/targets/metadata?limit=-1").size(), 3u);
  const json vllm = Data("/api/v1/targets/metadata?match_target=%7Btarget%3D%22vllm%22%7D");
  ASSERT_EQ(vllm.size(), 1u);
  EXPECT_EQ(vllm[0]["metric"], "tokens_total");
  EXPECT_EQ(Data("/api/v1/targets/metadata?match_target=%7Btarget%3D~%22.%2B%22%7D").size(), 3u);
  // A metric name in match_target is matched against the target's labels, as 2.42 does: none.
  EXPECT_TRUE(Data("/api/v1/targets/metadata?match_target=loss").empty());
  EXPECT_EQ(Error("/api/v1/targets/metadata?limit=x"), "limit must be a number");
  EXPECT_EQ(Error("/api/v1/targets/metadata?match_target=foo%7B"),
            "invalid parameter \"match_target\": 1:5: parse error: unexpected end of input "
            "inside braces");
}

TEST_F(StatusApiTest, TargetMetadataWithoutTargetsIsAnEmptyList) {
  Start();
  const json data = Data("/api/v1/targets/metadata");
  EXPECT_TRUE(data.is_array());
  EXPECT_TRUE(data.empty());
}

TEST_F(StatusApiTest, FormatQueryPrintsTheExpressionAsPrometheusDoes) {
  Start();
  EXPECT_EQ(Data("/api/v1/format_query?query=sum(rate(x%5B5m%5D))by(a)"),
            "sum by (a) (rate(x[5m]))");
  EXPECT_EQ(Data("/api/v1/format_query?query=a%2Bon(b)group_left%20c"),
            "a + on (b) group_left () c");
  EXPECT_EQ(Error("/api/v1/format_query"),
            "invalid parameter \"query\": 1:1: parse error: no expression found in input");
  auto res = client_->Post("/api/v1/format_query", "query=max(x)without(y)",
                           "application/x-www-form-urlencoded");
  ASSERT_TRUE(res);
  EXPECT_EQ(json::parse(res->body)["data"], "max without (y) (x)");
  // Attacked: 100,000 nested parentheses are refused as bad data (the parser's depth limit), and
  // the server keeps answering.
  const std::string deep = "query=" + std::string(100000, '(') + "1" + std::string(100000, ')');
  res = client_->Post("/api/v1/format_query", deep, "application/x-www-form-urlencoded");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(json::parse(res->body)["errorType"], "bad_data");
  EXPECT_EQ(Data("/api/v1/format_query?query=x"), "x");
}

TEST_F(StatusApiTest, TsdbStatusCountsTheHeadsSeriesAndLabels) {
  tsdb::Head head;
  // 12 metrics: m0 with 13 series ... m11 with 2; one label `i` numbering them.
  for (int m = 0; m < 12; ++m) {
    for (int i = 0; i < 13 - m; ++i) {
      bool created = false;
      auto ref = head.GetOrCreate({{"__name__", "m" + std::to_string(m)}, {"i", std::to_string(i)}},
                                  &created);
      ASSERT_TRUE(ref.ok());
      ASSERT_TRUE(head.Append(*ref, 1000 + m, 1).ok());
    }
  }
  bool created = false;
  auto lonely = head.GetOrCreate({{"__name__", "z"}, {"job", "longvalue"}}, &created);
  ASSERT_TRUE(lonely.ok());
  ASSERT_TRUE(head.Append(*lonely, 5000, 1).ok());
  options_.head = &head;
  Start();
  const json data = Data("/api/v1/status/tsdb");
  uint64_t series = 1;
  for (int m = 0; m < 12; ++m) series += 13 - m;
  const json& stats = data["headStats"];
  EXPECT_EQ(stats["numSeries"], series);
  EXPECT_EQ(stats["numLabelPairs"], 13 /*names*/ + 13 /*i*/ + 1 /*job*/);
  EXPECT_EQ(stats["chunkCount"], series);  // one open chunk each
  EXPECT_EQ(stats["minTime"], 1000);
  EXPECT_EQ(stats["maxTime"], 5000);
  const json& by_metric = data["seriesCountByMetricName"];
  ASSERT_EQ(by_metric.size(), 10u);  // the top 10 only
  EXPECT_EQ(by_metric[0], json::parse(R"({"name":"m0","value":13})"));
  EXPECT_EQ(by_metric[9], json::parse(R"({"name":"m9","value":4})"));
  EXPECT_EQ(data["labelValueCountByLabelName"],
            json::parse(R"([{"name":"__name__","value":13},{"name":"i","value":13},
                            {"name":"job","value":1}])"));
  // Bytes of the values times their series: job="longvalue" on one series is 9.
  const json& memory = data["memoryInBytesByLabelName"];
  ASSERT_EQ(memory.size(), 3u);
  EXPECT_EQ(memory[2], json::parse(R"({"name":"job","value":9})"));
  uint64_t i_bytes = 0;
  for (int m = 0; m < 12; ++m)
    for (int i = 0; i < 13 - m; ++i) i_bytes += std::to_string(i).size();
  EXPECT_EQ(memory[1], json({{"name", "i"}, {"value", i_bytes}}));
  // Pairs: __name__=m0 has 13 series; m1, i=0 and i=1 have 12 (ties by name); then 11 each.
  const json& pairs = data["seriesCountByLabelValuePair"];
  ASSERT_EQ(pairs.size(), 10u);
  EXPECT_EQ(pairs[0], json::parse(R"({"name":"__name__=m0","value":13})"));
  EXPECT_EQ(pairs[1], json::parse(R"({"name":"__name__=m1","value":12})"));
  EXPECT_EQ(pairs[2], json::parse(R"({"name":"i=0","value":12})"));
  EXPECT_EQ(pairs[3], json::parse(R"({"name":"i=1","value":12})"));
  EXPECT_EQ(pairs[4], json::parse(R"({"name":"__name__=m2","value":11})"));
  EXPECT_EQ(pairs[5], json::parse(R"({"name":"i=2","value":11})"));
}

TEST_F(StatusApiTest, TsdbStatusOfAnEmptyHeadReportsPrometheusEmptyRange) {
  tsdb::Head head;
  options_.head = &head;
  Start();
  const json data = Data("/api/v1/status/tsdb");
  EXPECT_EQ(data["headStats"]["numSeries"], 0);
  EXPECT_EQ(data["headStats"]["minTime"], INT64_MAX);
  EXPECT_EQ(data["headStats"]["maxTime"], INT64_MIN);
  EXPECT_EQ(data["seriesCountByMetricName"], json::array());
}

TEST_F(StatusApiTest, RuntimeFlagsConfigBuildinfoAndWalreplay) {
  options_.version = "9.9.9";
  options_.flags = {{"query.timeout", "2m"}, {"listen", ":9966"}};
  options_.config_yaml = "listen: \":9966\"\n";
  options_.runtime = [] {
    RuntimeInfo r;
    r.start_time_ms = 1'700'000'000'000;
    r.last_config_time_ms = 1'700'000'000'999;
    r.cwd = "/srv";
    r.storage_retention = "15d";
    r.corruption_count = 2;
    return r;
  };
  Start();
  const json runtime = Data("/api/v1/status/runtimeinfo");
  EXPECT_EQ(runtime["startTime"], "2023-11-14T22:13:20Z");
  EXPECT_EQ(runtime["lastConfigTime"], "2023-11-14T22:13:20Z");  // whole seconds, as 2.42
  EXPECT_EQ(runtime["CWD"], "/srv");
  EXPECT_EQ(runtime["reloadConfigSuccess"], true);
  EXPECT_EQ(runtime["corruptionCount"], 2);
  EXPECT_GE(runtime["goroutineCount"].get<int>(), 2);  // this test's threads and the server's
  EXPECT_GE(runtime["GOMAXPROCS"].get<int>(), 1);
  EXPECT_EQ(runtime["storageRetention"], "15d");
  for (const char* key : {"GOGC", "GODEBUG"}) EXPECT_TRUE(runtime.contains(key)) << key;

  auto res = client_->Get("/api/v1/status/flags");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body, R"({"status":"success","data":{"listen":":9966","query.timeout":"2m"}})");
  EXPECT_EQ(Data("/api/v1/status/config"), json({{"yaml", "listen: \":9966\"\n"}}));
  const json build = Data("/api/v1/status/buildinfo");
  EXPECT_EQ(build["version"], "9.9.9");
  EXPECT_EQ(build["revision"], std::string(GetBuildInfo().revision));
  for (const char* key : {"revision", "branch", "buildUser", "buildDate", "goVersion"}) {
    ASSERT_TRUE(build.contains(key)) << key;
    EXPECT_FALSE(build[key].get<std::string>().empty()) << key;
  }
  EXPECT_EQ(Data("/api/v1/status/walreplay"), json::parse(R"({"min":0,"max":0,"current":0})"));
}

TEST(BuildInfoTest, NamesACommitOrSaysUnknown) {
  const BuildInfo& b = GetBuildInfo();
  EXPECT_FALSE(b.version.empty());
  const std::string revision(b.revision);
  if (revision != "unknown") {
    // A build from a tree with uncommitted changes says so (cmake/build_info.cmake).
    const std::string hash = revision.substr(0, 40);
    EXPECT_TRUE(revision.size() == 40 || revision.substr(40) == "-dirty") << revision;
    EXPECT_EQ(hash.find_first_not_of("0123456789abcdef"), std::string::npos) << revision;
    // 20260604-00:58:54
    ASSERT_EQ(b.build_date.size(), 17u) << b.build_date;
    EXPECT_EQ(b.build_date[8], '-');
  } else {
    EXPECT_EQ(b.build_date, "unknown");
  }
}

// cmake/build_info.cmake on a scratch repository: a clean checkout gives the bare hash, changed
// tracked files add "-dirty", an untracked file does not.
TEST(BuildInfoTest, ScriptMarksUncommittedChangesDirty) {
  gw::testing::TempDir dir;
  const std::string repo = dir / "repo";
  std::string out;
  auto run = [&](std::vector<std::string> argv) {
    ASSERT_EQ(gw::testing::RunCommand(std::move(argv), &out, 60), 0) << out;
  };
  run({"git", "init", "-q", repo});
  gw::testing::WriteFile(repo + "/a.txt", "one\n");
  run({"git", "-C", repo, "add", "a.txt"});
  run({"git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q",
       "-m", "first"});
  const std::string output = dir / "build_info.cpp";
  auto revision = [&]() -> std::string {
    out.clear();
    EXPECT_EQ(gw::testing::RunCommand(
                  {"cmake", "-DSOURCE_DIR=" + repo, "-DOUTPUT=" + output, "-DVERSION=1.2.3",
                   "-DCOMPILER=test", "-P", std::string(GW_SOURCE_DIR) + "/cmake/build_info.cmake"},
                  &out, 60),
              0)
        << out;
    const std::string text = gw::testing::ReadFile(output);
    const size_t at = text.find(".revision = \"");
    if (at == std::string::npos) return "no revision in " + text;
    const size_t begin = at + 13;
    return text.substr(begin, text.find('"', begin) - begin);
  };
  const std::string clean = revision();
  ASSERT_EQ(clean.size(), 40u) << clean;
  gw::testing::WriteFile(repo + "/untracked.txt", "x\n");
  EXPECT_EQ(revision(), clean);
  gw::testing::WriteFile(repo + "/a.txt", "two\n");
  EXPECT_EQ(revision(), clean + "-dirty");
  run({"git", "-C", repo, "checkout", "-q", "--", "a.txt"});
  EXPECT_EQ(revision(), clean);
}

}  // namespace
}  // namespace gw::http
