#include "web/chart.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>

#include "support/counting_querier.h"
#include "support/process.h"
#include "tsdb/db.h"
#include "tsdb/rollup.h"
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

// Long ranges from rollups (chart.h): the answer must be the raw one, and a counting querier
// (tests/support/counting_querier.h) tells that rollups were read at all.
using gw::testing::CountingQuerier;

// min, max and count bit for bit, avg to float rounding (sums of window sums).
void ExpectSameCharts(const std::vector<ChartSeries>& raw, const std::vector<ChartSeries>& roll,
                      const std::string& what) {
  ASSERT_EQ(raw.size(), roll.size()) << what;
  for (size_t s = 0; s < raw.size(); ++s) {
    EXPECT_EQ(raw[s].labels, roll[s].labels) << what;
    const ChartBuckets &a = raw[s].buckets, &b = roll[s].buckets;
    ASSERT_EQ(a.count.size(), b.count.size()) << what;
    for (size_t i = 0; i < a.count.size(); ++i) {
      ASSERT_EQ(a.count[i], b.count[i]) << what << " series " << s << " bucket " << i;
      if (a.count[i] == 0) continue;
      EXPECT_EQ(a.min[i], b.min[i]) << what << " bucket " << i;
      EXPECT_EQ(a.max[i], b.max[i]) << what << " bucket " << i;
      EXPECT_NEAR(a.sum[i] / a.count[i], b.sum[i] / b.count[i],
                  1e-9 * std::max(1.0, std::fabs(a.sum[i] / a.count[i])))
          << what << " bucket " << i;
    }
  }
}

constexpr int64_t kDayMs = 86400 * 1000LL;
constexpr int64_t kWeekStartMs = 1767225600000;  // 2026-01-01T00:00:00Z

// The grids a chart may be asked for over a week of data: the console's aligned 7-day and 1-day
// charts (buckets of 20 and 5 minutes), one bucket per day, ranges reaching past the data on
// either side, and grids that are not whole windows (read raw).
std::vector<ChartQuery> WeekGrids(const std::string& metric) {
  const int64_t s = kWeekStartMs, e = kWeekStartMs + 7 * kDayMs, m5 = 300000;
  return {
      {.metric = metric, .start_ms = s, .end_ms = e, .points = 504},
      {.metric = metric, .start_ms = s, .end_ms = e, .points = 2016},
      {.metric = metric, .start_ms = s, .end_ms = e, .points = 7},
      {.metric = metric, .gpu = "1", .start_ms = s, .end_ms = e, .points = 168},
      {.metric = metric, .start_ms = e - kDayMs, .end_ms = e, .points = 288},
      {.metric = metric, .start_ms = s - kDayMs, .end_ms = e + kDayMs, .points = 90},
      {.metric = metric, .start_ms = s + m5, .end_ms = s + m5 + 3 * kDayMs, .points = 432},
      {.metric = metric, .start_ms = s, .end_ms = e, .points = 600},  // 1008 s buckets
      {.metric = metric, .start_ms = s + 1000, .end_ms = e + 1000, .points = 504},  // unaligned
  };
}

std::string Describe(const ChartQuery& q) {
  return q.metric + " gpu=" + q.gpu + " start=" + std::to_string(q.start_ms) +
         " end=" + std::to_string(q.end_ms) + " points=" + std::to_string(q.points);
}

TEST(ChartRollupsTest, GridsOfWholeWindowsFitRollups) {
  EXPECT_TRUE(ChartGridFitsRollups({.start_ms = 0, .end_ms = 7 * kDayMs, .points = 504}));
  EXPECT_TRUE(ChartGridFitsRollups({.start_ms = 300000, .end_ms = 900000, .points = 2}));
  EXPECT_FALSE(ChartGridFitsRollups({.start_ms = 0, .end_ms = 7 * kDayMs, .points = 600}));
  EXPECT_FALSE(ChartGridFitsRollups({.start_ms = 1000, .end_ms = 601000, .points = 2}));
  EXPECT_FALSE(ChartGridFitsRollups({.start_ms = 0, .end_ms = 600000, .points = 4}));
  EXPECT_FALSE(ChartGridFitsRollups({.start_ms = 0, .end_ms = 600001, .points = 2}));
}

// Random data over a week (MemoryQuerier with rollups: every window complete): NaN, stale
// markers, +-Inf, a GPU gone for hours, every series gone for a restart. Each grid's answer from
// rollups equals the raw one, and the whole-window grids read a small part of the raw samples.
TEST(ChartRollupsTest, RandomWeekFromRollupsEqualsRaw) {
  tsdb::MemoryQuerier store;
  std::mt19937_64 rng(15);
  std::uniform_real_distribution<double> u(0, 1);
  size_t total = 0;
  for (int gpu = 0; gpu < 3; ++gpu) {
    const tsdb::Labels labels = GpuLabels("gpu_temperature_celsius", std::to_string(gpu));
    double v = 50;
    for (int64_t t = kWeekStartMs + 7000; t < kWeekStartMs + 7 * kDayMs - 4000; t += 30000) {
      const int64_t hour = (t - kWeekStartMs) / 3600000;
      if (gpu == 2 && hour >= 30 && hour < 33) continue;   // GPU 2 lost for three hours
      if (hour == 100 && (t / 60000) % 60 < 20) continue;  // a restart: 20 minutes of nothing
      v = std::round((v + u(rng) - 0.5) * 100) / 100;
      double x = v;
      const double r = u(rng);
      if (r < 0.002) x = std::nan("");
      if (r > 0.998) x = tsdb::StaleNaN();
      if (r > 0.4995 && r < 0.5) x = r < 0.49975 ? INFINITY : -INFINITY;
      ASSERT_TRUE(store.Append(labels, t, x).ok());
      ++total;
    }
  }
  store.EnableRollups(true);
  CountingQuerier counting(&store);
  for (const ChartQuery& q : WeekGrids("gpu_temperature_celsius")) {
    std::vector<ChartSeries> raw, roll;
    counting.raw_samples = 0;
    ASSERT_TRUE(ChartSeriesOf(&counting, q, {.rollups = false}, &raw).ok());
    const size_t raw_read = counting.raw_samples;
    counting.raw_samples = 0;
    ASSERT_TRUE(ChartSeriesOf(&counting, q, {}, &roll).ok());
    ExpectSameCharts(raw, roll, Describe(q));
    if (ChartGridFitsRollups(q)) {
      EXPECT_LT(counting.raw_samples * 5, raw_read) << Describe(q);
    } else {
      EXPECT_EQ(counting.raw_samples, raw_read) << Describe(q);
    }
    EXPECT_FALSE(raw.empty());
  }
  EXPECT_GT(total, 50000u);
}

// The real store: a week of 5 s samples for two GPUs, flushed every 3 hours into blocks (whose
// rollups the chart reads), GPU 1 gone for 3 hours (stale marker), NaN samples, a restart on
// day 4 (stale markers, the store closed unflushed and reopened from its WAL, 30 minutes of
// nothing) and the last 40 minutes still in memory. Every grid's answer from rollups equals the
// raw one; the console's 7-day chart decodes far fewer blocks.
TEST(ChartRollupsTest, StoredWeekWithGapsAndARestartFromRollupsEqualsRaw) {
  gw::testing::TempDir tmp;
  tsdb::DBOptions o;
  o.dir = tmp.path();
  o.retention_ms = o.rollup_retention_ms = 100LL * 365 * kDayMs;
  const int64_t restart = kWeekStartMs + 4 * kDayMs + 1234567;
  const int64_t end = kWeekStartMs + 7 * kDayMs;
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(-1, 1);
  double temp[2] = {40, 60};
  auto write = [&](tsdb::DB* db, int64_t from, int64_t to) {
    for (int64_t t = from; t < to; t += 5000) {
      for (int gpu = 0; gpu < 2; ++gpu) {
        const tsdb::Labels labels = GpuLabels("gpu_temperature_celsius", std::to_string(gpu));
        const int64_t hour = (t - kWeekStartMs) / 3600000;
        if (gpu == 1 && hour >= 40 && hour < 43) {
          if (hour == 40 && t % 3600000 < 5000) {
            ASSERT_TRUE(db->Append(labels, t, tsdb::StaleNaN()).ok());
          }
          continue;
        }
        temp[gpu] = std::clamp(temp[gpu] + std::round(u(rng) * 0.6), 20.0, 95.0);
        const double v = u(rng) > 0.999 ? std::nan("") : temp[gpu];
        ASSERT_TRUE(db->Append(labels, t, v).ok());
      }
      if ((t - kWeekStartMs) % 3600000 == 0) {
        ASSERT_TRUE(db->Commit().ok());
      }
      if ((t - kWeekStartMs) % (3 * 3600000) == 0 && t > from && t < end - 40 * 60000) {
        ASSERT_TRUE(db->Flush().ok());
      }
    }
  };
  {
    auto db = tsdb::DB::Open(o);
    ASSERT_TRUE(db.ok()) << db.error().message;
    write(db->get(), kWeekStartMs, restart);
    for (int gpu = 0; gpu < 2; ++gpu) {
      ASSERT_TRUE((*db)
                      ->Append(GpuLabels("gpu_temperature_celsius", std::to_string(gpu)), restart,
                               tsdb::StaleNaN())
                      .ok());
    }
    ASSERT_TRUE((*db)->Commit().ok());
  }
  auto db = tsdb::DB::Open(o);
  ASSERT_TRUE(db.ok()) << db.error().message;
  write(db->get(), restart + 30 * 60000, end);
  for (const ChartQuery& q : WeekGrids("gpu_temperature_celsius")) {
    std::vector<ChartSeries> raw, roll;
    auto querier = (*db)->NewQuerier();
    const uint64_t d0 = (*db)->stats().blocks_decoded;
    ASSERT_TRUE(ChartSeriesOf(querier.get(), q, {.rollups = false}, &raw).ok());
    const uint64_t d1 = (*db)->stats().blocks_decoded;
    ASSERT_TRUE(ChartSeriesOf(querier.get(), q, {}, &roll).ok());
    const uint64_t d2 = (*db)->stats().blocks_decoded;
    ExpectSameCharts(raw, roll, Describe(q));
    ASSERT_FALSE(raw.empty()) << Describe(q);
    if (ChartGridFitsRollups(q) && q.end_ms - q.start_ms >= 3 * kDayMs) {
      EXPECT_LT((d2 - d1) * 4, d1 - d0) << Describe(q);  // long scans are not cached: each decodes
    }
  }
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
