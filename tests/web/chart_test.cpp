#include "web/chart.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>

#include "web/json_text.h"

namespace gw::web {
namespace {

using nlohmann::json;

http::Request RequestWith(std::multimap<std::string, std::string> params) {
  http::Request req;
  req.method = "GET";
  req.path = "/api/gw/v1/chart";
  req.params = std::move(params);
  return req;
}

tsdb::Labels GpuLabels(const std::string& metric, const std::string& gpu) {
  return {{"__name__", metric}, {"gpu", gpu}, {"uuid", "GPU-" + gpu}};
}

TEST(DownsampleTest, BucketsHoldMinMaxAndMean) {
  // 0..9 s at 1 s into 5 buckets of 2 s: {0,1} {2,3} {4,5} {6,7} {8,9}.
  std::vector<tsdb::Sample> samples;
  for (int i = 0; i < 10; ++i) samples.push_back({i * 1000, double(i * i)});
  ChartBuckets b;
  Downsample(samples, 0, 10000, 5, &b);
  ASSERT_EQ(b.count.size(), 5u);
  EXPECT_EQ(b.count[0], 2u);
  EXPECT_DOUBLE_EQ(b.min[1], 4);
  EXPECT_DOUBLE_EQ(b.max[1], 9);
  EXPECT_DOUBLE_EQ(b.sum[4] / b.count[4], (64 + 81) / 2.0);
}

TEST(DownsampleTest, SkipsStaleMarkersNaNAndSamplesOutsideTheRange) {
  std::vector<tsdb::Sample> samples = {{-1000, 100},         {0, 1},    {500, tsdb::StaleNaN()},
                                       {1500, std::nan("")}, {2500, 7}, {4000, 100}};
  ChartBuckets b;
  Downsample(samples, 0, 4000, 4, &b);  // end is exclusive: 4000 is out
  EXPECT_EQ(b.count[0], 1u);
  EXPECT_EQ(b.count[1], 0u);
  EXPECT_EQ(b.count[2], 1u);
  EXPECT_EQ(b.count[3], 0u);
  EXPECT_DOUBLE_EQ(b.max[0], 1);
  EXPECT_DOUBLE_EQ(b.min[2], 7);
}

TEST(DownsampleTest, ASpikeBetweenTwoPixelsSurvivesInMax) {
  std::vector<tsdb::Sample> samples;
  for (int i = 0; i < 86400; ++i) samples.push_back({i * 1000LL, i == 43210 ? 1.0 : 0.1});
  ChartBuckets b;
  Downsample(samples, 0, 86400 * 1000LL, 600, &b);
  double highest = 0;
  for (double v : b.max) highest = std::max(highest, v);
  EXPECT_DOUBLE_EQ(highest, 1.0);
  EXPECT_EQ(b.count[0], 144u);
}

TEST(ParseChartQueryTest, DefaultsToTheLastHourUpToNow) {
  auto q = ParseChartQuery(RequestWith({{"metric", "gpu_power_watts"}}), 7200 * 1000);
  ASSERT_TRUE(q.ok()) << q.error().message;
  EXPECT_EQ(q->end_ms, 7200 * 1000);
  EXPECT_EQ(q->start_ms, 3600 * 1000);
  EXPECT_EQ(q->points, kDefaultChartPoints);
  EXPECT_EQ(q->gpu, "");
}

TEST(ParseChartQueryTest, ReadsEveryParameter) {
  auto q = ParseChartQuery(RequestWith({{"metric", "gpu_temperature_celsius"},
                                        {"gpu", "3"},
                                        {"start", "1700000000"},
                                        {"end", "1700086400.5"},
                                        {"points", "250"}}),
                           0);
  ASSERT_TRUE(q.ok()) << q.error().message;
  EXPECT_EQ(q->gpu, "3");
  EXPECT_EQ(q->start_ms, 1700000000000);
  EXPECT_EQ(q->end_ms, 1700086400500);
  EXPECT_EQ(q->points, 250);
}

TEST(ParseChartQueryTest, RefusesBadInputWithTheParameterNamed) {
  struct Case {
    std::multimap<std::string, std::string> params;
    std::string starts_with;
  };
  const std::vector<Case> cases = {
      {{}, "metric: required"},
      {{{"metric", "gpu power"}}, "metric: 'gpu power' is not a valid metric name"},
      {{{"metric", "m"}, {"gpu", "0;drop"}}, "gpu: expected a GPU index"},
      {{{"metric", "m"}, {"points", "0"}}, "points: expected an integer from 1 to 4000"},
      {{{"metric", "m"}, {"points", "12x"}}, "points: expected an integer"},
      {{{"metric", "m"}, {"points", "4001"}}, "points: expected an integer"},
      {{{"metric", "m"}, {"start", "yesterday"}}, "start: expected Unix seconds"},
      {{{"metric", "m"}, {"end", "soon"}}, "end: expected Unix seconds"},
      {{{"metric", "m"}, {"start", "200"}, {"end", "100"}}, "end: must be after start"},
      {{{"metric", "m"}, {"start", "0"}, {"end", "40000000"}}, "start: the range may span"},
  };
  for (const Case& c : cases) {
    auto q = ParseChartQuery(RequestWith(c.params), 3600 * 1000);
    ASSERT_FALSE(q.ok()) << c.starts_with;
    EXPECT_EQ(q.error().message.rfind(c.starts_with, 0), 0u) << q.error().message;
  }
}

// Parameters from an untrusted client: any mix of fragments either parses into a query that
// keeps the invariants Downsample relies on, or is refused; nothing else happens.
TEST(ParseChartQueryTest, RandomParametersParseWithinBoundsOrAreRefused) {
  const std::vector<std::string> fragments = {"",           "0",    "1",   "-1",
                                              "4000",       "4001", "1e3", "99999999999999999999",
                                              "1700000000", "1.5",  "x",   "gpu_power_watts",
                                              "ALERTS",     "a b",  "{",   "2023-11-14T22:13:20Z",
                                              "NaN",        "+Inf", "3",   " 3"};
  const char* names[] = {"metric", "gpu", "start", "end", "points"};
  std::mt19937 rng(7);
  for (int round = 0; round < 5000; ++round) {
    std::multimap<std::string, std::string> params;
    for (const char* name : names) {
      if (rng() % 3 == 0) continue;
      std::string value = fragments[rng() % fragments.size()];
      if (rng() % 4 == 0) value += fragments[rng() % fragments.size()];
      params.emplace(name, value);
    }
    auto q = ParseChartQuery(RequestWith(params), 1700000000000);
    if (!q.ok()) {
      EXPECT_FALSE(q.error().message.empty());
      continue;
    }
    EXPECT_LT(q->start_ms, q->end_ms);
    EXPECT_LE(q->end_ms - q->start_ms, kMaxChartRangeMs);
    EXPECT_GE(q->points, 1);
    EXPECT_LE(q->points, kMaxChartPoints);
    EXPECT_TRUE(tsdb::IsValidMetricName(q->metric));
  }
}

class ChartJsonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int t = 0; t < 100; ++t) {
      ASSERT_TRUE(
          store_.Append(GpuLabels("gpu_temperature_celsius", "0"), t * 1000, 40 + t % 10).ok());
      ASSERT_TRUE(store_.Append(GpuLabels("gpu_temperature_celsius", "1"), t * 1000, 70).ok());
      ASSERT_TRUE(store_.Append(GpuLabels("gpu_power_watts", "0"), t * 1000, 300).ok());
    }
  }
  json Run(ChartQuery q) {
    std::string body;
    Status s = ChartJson(&store_, q, &body);
    EXPECT_TRUE(s.ok()) << s.message();
    return json::parse(body);
  }
  tsdb::MemoryQuerier store_;
};

TEST_F(ChartJsonTest, ReturnsOneColumnSetPerSeriesOfTheMetric) {
  json j =
      Run({.metric = "gpu_temperature_celsius", .start_ms = 0, .end_ms = 100000, .points = 10});
  EXPECT_EQ(j["status"], "success");
  const json& d = j["data"];
  EXPECT_EQ(d["points"], 10);
  EXPECT_DOUBLE_EQ(d["step"].get<double>(), 10.0);
  ASSERT_EQ(d["series"].size(), 2u);
  const json& s0 = d["series"][0];
  EXPECT_EQ(s0["labels"], json({{"gpu", "0"}, {"uuid", "GPU-0"}}));  // no __name__
  ASSERT_EQ(s0["min"].size(), 10u);
  EXPECT_EQ(s0["min"][0], 40);
  EXPECT_EQ(s0["max"][0], 49);
  EXPECT_DOUBLE_EQ(s0["avg"][0].get<double>(), 44.5);
  EXPECT_EQ(d["series"][1]["max"][9], 70);
}

TEST_F(ChartJsonTest, FiltersByGpuAndLeavesEmptyBucketsNull) {
  json j = Run({.metric = "gpu_temperature_celsius",
                .gpu = "1",
                .start_ms = 50000,
                .end_ms = 150000,
                .points = 4});
  const json& series = j["data"]["series"];
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(series[0]["labels"]["gpu"], "1");
  EXPECT_EQ(series[0]["avg"][0], 70);
  EXPECT_TRUE(series[0]["avg"][2].is_null());
  EXPECT_TRUE(series[0]["min"][3].is_null());
}

TEST_F(ChartJsonTest, AnUnknownMetricHasNoSeries) {
  json j = Run({.metric = "gpu_fan_speed_ratio", .start_ms = 0, .end_ms = 100000, .points = 5});
  EXPECT_EQ(j["status"], "success");
  EXPECT_TRUE(j["data"]["series"].empty());
}

TEST_F(ChartJsonTest, LabelValuesAreEscaped) {
  ASSERT_TRUE(store_.Append({{"__name__", "ALERTS"}, {"alertname", "A\"b\\c\n"}}, 1000, 1).ok());
  json j = Run({.metric = "ALERTS", .start_ms = 0, .end_ms = 2000, .points = 2});
  EXPECT_EQ(j["data"]["series"][0]["labels"]["alertname"], "A\"b\\c\n");
}

TEST(JsonTextTest, NumbersAreShortAndNonFiniteIsNull) {
  std::string out;
  AppendJsonNumber(&out, 0.35);
  out += ' ';
  AppendJsonNumber(&out, 85520809984.0);
  out += ' ';
  AppendJsonNumber(&out, std::nan(""));
  out += ' ';
  AppendJsonNumber(&out, -INFINITY);
  EXPECT_EQ(out, "0.35 8.55208e+10 null null");
}

TEST(JsonTextTest, ControlCharactersAreEscaped) {
  std::string out;
  AppendJsonString(&out, std::string("a\x01\tb", 4));
  EXPECT_EQ(out, "\"a\\u0001\\tb\"");
}

}  // namespace
}  // namespace gw::web
