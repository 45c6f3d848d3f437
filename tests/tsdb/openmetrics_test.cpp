#include "tsdb/openmetrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "support/mutate.h"

namespace gw::tsdb {
namespace {

struct Collected {
  std::vector<std::tuple<std::string, int64_t, double>> samples;
  SampleSink Sink() {
    return [this](std::string_view series, int64_t t, double v) {
      samples.emplace_back(std::string(series), t, v);
      return Status::Ok();
    };
  }
};

TEST(OpenMetrics, ParsesSamplesWithTimestampsAndSpecialValues) {
  const std::string text =
      "# TYPE gpu_energy_joules counter\n"
      "gpu_energy_joules_total{gpu=\"0\",uuid=\"GPU-1\"} 1234.5 1700000000.250\n"
      "gpu_temp{gpu=\"0\"} NaN 1700000001\n"
      "gpu_temp{gpu=\"1\"} +Inf 1700000001.5\n"
      "up 1\n"
      "# EOF\n"
      "ignored 1 2\n";
  Collected c;
  TextOptions o;
  o.default_t_ms = 42;
  ASSERT_TRUE(ParseText(text, "x.om", o, c.Sink()).ok());
  ASSERT_EQ(c.samples.size(), 4u);
  EXPECT_EQ(std::get<0>(c.samples[0]), "gpu_energy_joules_total{gpu=\"0\",uuid=\"GPU-1\"}");
  EXPECT_EQ(std::get<1>(c.samples[0]), 1700000000250);
  EXPECT_EQ(std::get<2>(c.samples[0]), 1234.5);
  EXPECT_TRUE(std::isnan(std::get<2>(c.samples[1])));
  EXPECT_EQ(std::get<1>(c.samples[2]), 1700000001500);
  EXPECT_TRUE(std::isinf(std::get<2>(c.samples[2])));
  EXPECT_EQ(std::get<1>(c.samples[3]), 42);
}

TEST(OpenMetrics, SeriesLabelsAreUnescapedAndSorted) {
  Labels l;
  ASSERT_TRUE(ParseSeries(R"(m{z="1",a="x\"y\\z\n",e=""})", &l).ok());
  ASSERT_EQ(l.size(), 3u);  // empty label dropped
  EXPECT_EQ(l[0].name, "__name__");
  EXPECT_EQ(l[1].name, "a");
  EXPECT_EQ(l[1].value, "x\"y\\z\n");
  EXPECT_EQ(l[2].name, "z");
  EXPECT_FALSE(ParseSeries(R"(m{a="1",a="2"})", &l).ok());
}

TEST(OpenMetrics, ErrorsNameFileAndLine) {
  Collected c;
  Status s = ParseText("a 1 1\nb{x=\"1\" 2\n", "d.om", {}, c.Sink());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("d.om:2: ", 0), 0u) << s.message();
  s = ParseText("a one\n", "d.om", {}, c.Sink());
  EXPECT_EQ(s.message(), "d.om:1: invalid value 'one'");
}

TEST(OpenMetrics, WriterRoundTrips) {
  SeriesData s;
  s.labels = {{"__name__", "gpu_power_watts"}, {"gpu", "0"}, {"note", "a \"b\"\n"}};
  s.samples = {{1700000000000, 690.634},
               {1700000015500, std::nan("")},
               {1700000030000, StaleNaN()},
               {1700000045000, 1e-9}};
  std::string text;
  AppendOpenMetricsSeries(s, &text);
  Collected c;
  ASSERT_TRUE(ParseText(text, "w.om", {}, c.Sink()).ok()) << text;
  ASSERT_EQ(c.samples.size(), 3u);  // the stale marker is not written
  Labels back;
  ASSERT_TRUE(ParseSeries(std::get<0>(c.samples[0]), &back).ok());
  EXPECT_EQ(back, s.labels);
  EXPECT_EQ(std::get<2>(c.samples[0]), 690.634);
  EXPECT_EQ(std::get<1>(c.samples[1]), 1700000015500);
  EXPECT_EQ(std::get<2>(c.samples[2]), 1e-9);
}

TEST(OpenMetrics, MutantsNeverCrash) {
  const std::string valid =
      "# TYPE a counter\na_total{x=\"1\",y=\"q\\\"\"} 12.5 1700000000.5\nb 1 2\nc{z=\"\"} NaN\n# "
      "EOF\n";
  gw::testing::Mutator m(99);
  for (int i = 0; i < 3000; ++i) {
    std::string mutant = m.Mutate(valid);
    Collected c;
    Status s = ParseText(mutant, "m.om", {}, c.Sink());
    if (!s.ok()) {
      EXPECT_EQ(s.message().rfind("m.om:", 0), 0u) << s.message();
      continue;
    }
    for (auto& [series, t, v] : c.samples) {
      Labels l;
      (void)ParseSeries(series, &l);  // may fail, must not crash
    }
  }
}

// Found by tests/fuzz (text_import): a timestamp beyond int64 milliseconds ("1700000015.e25")
// was converted with undefined behaviour and imported at an arbitrary time. Now refused.
TEST(OpenMetrics, TimestampsBeyondInt64MillisecondsAreRefused) {
  for (bool seconds : {true, false}) {
    TextOptions o;
    o.timestamps_in_seconds = seconds;
    for (const char* text : {"a 1 1700000015.e25\n", "a 1 -1e300\n", "a 1 9.3e18\n"}) {
      Collected c;
      Status s = ParseText(text, "t.om", o, c.Sink());
      ASSERT_FALSE(s.ok()) << text;
      EXPECT_NE(s.message().find("t.om:1: invalid timestamp"), std::string::npos) << s.message();
      EXPECT_TRUE(c.samples.empty());
    }
    Collected c;
    ASSERT_TRUE(ParseText("a 1 1700000015.25\n", "t.om", o, c.Sink()).ok());
    EXPECT_EQ(std::get<1>(c.samples[0]), seconds ? 1700000015250 : 1700000015);
  }
}

}  // namespace
}  // namespace gw::tsdb
