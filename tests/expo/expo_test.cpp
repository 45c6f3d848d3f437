// The exposition rules of expo/expo.h, each in both formats.
#include "expo/expo.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace gw::expo {
namespace {

constexpr Format kBoth[] = {Format::kText, Format::kOpenMetrics};

std::string One(Format format, std::string_view name, Type type, std::string_view help,
                std::string_view unit, double value) {
  std::string out;
  Writer w(format, &out);
  w.Family(name, type, help, unit);
  w.Sample(value);
  return out;
}

TEST(ExpoFormat, NegotiatesOpenMetricsOnlyWhenAsked) {
  EXPECT_EQ(NegotiateFormat(""), Format::kText);
  EXPECT_EQ(NegotiateFormat("text/plain;version=0.0.4"), Format::kText);
  EXPECT_EQ(NegotiateFormat("application/openmetrics-text;version=1.0.0,text/plain;q=0.5"),
            Format::kOpenMetrics);
  EXPECT_EQ(ContentType(Format::kText), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(ContentType(Format::kOpenMetrics),
            "application/openmetrics-text; version=1.0.0; charset=utf-8");
}

TEST(ExpoCounter, TextNamesTheFamilyWithTotal) {
  EXPECT_EQ(One(Format::kText, "x_requests_total", Type::kCounter, "Requests.", "", 3),
            "# HELP x_requests_total Requests.\n"
            "# TYPE x_requests_total counter\n"
            "x_requests_total 3\n");
}

TEST(ExpoCounter, OpenMetricsNamesTheFamilyWithoutTotalAndTheSamplesWithIt) {
  EXPECT_EQ(One(Format::kOpenMetrics, "x_requests_total", Type::kCounter, "Requests.", "", 3),
            "# HELP x_requests Requests.\n"
            "# TYPE x_requests counter\n"
            "x_requests_total 3\n");
}

TEST(ExpoCounter, OnlyCountersLoseTotal) {
  EXPECT_EQ(One(Format::kOpenMetrics, "x_total", Type::kGauge, "A gauge.", "", 1),
            "# HELP x_total A gauge.\n# TYPE x_total gauge\nx_total 1\n");
}

TEST(ExpoInfo, InfoIsAGaugeInTextAndLosesInfoInOpenMetrics) {
  EXPECT_EQ(One(Format::kText, "x_build_info", Type::kInfo, "Build.", "", 1),
            "# HELP x_build_info Build.\n# TYPE x_build_info gauge\nx_build_info 1\n");
  EXPECT_EQ(One(Format::kOpenMetrics, "x_build_info", Type::kInfo, "Build.", "", 1),
            "# HELP x_build Build.\n# TYPE x_build info\nx_build_info 1\n");
}

TEST(ExpoType, UnknownIsUntypedInText) {
  EXPECT_EQ(One(Format::kText, "x", Type::kUnknown, "?", "", 1),
            "# HELP x ?\n# TYPE x untyped\nx 1\n");
  EXPECT_EQ(One(Format::kOpenMetrics, "x", Type::kUnknown, "?", "", 1),
            "# HELP x ?\n# TYPE x unknown\nx 1\n");
}

TEST(ExpoUnit, OpenMetricsWritesUnitWhenTheNameEndsWithIt) {
  EXPECT_EQ(One(Format::kOpenMetrics, "x_duration_seconds", Type::kGauge, "D.", "seconds", 1),
            "# HELP x_duration_seconds D.\n# TYPE x_duration_seconds gauge\n"
            "# UNIT x_duration_seconds seconds\nx_duration_seconds 1\n");
  // A counter: the family name (without _total) is what must end with the unit.
  EXPECT_EQ(One(Format::kOpenMetrics, "x_cpu_seconds_total", Type::kCounter, "C.", "seconds", 1),
            "# HELP x_cpu_seconds C.\n# TYPE x_cpu_seconds counter\n"
            "# UNIT x_cpu_seconds seconds\nx_cpu_seconds_total 1\n");
}

TEST(ExpoUnit, NoUnitWhenTheNameDoesNotEndInUnderscoreUnit) {
  for (std::string_view name : {"x_seconds_max", "xseconds", "seconds"}) {
    std::string out = One(Format::kOpenMetrics, name, Type::kGauge, "D.", "seconds", 1);
    EXPECT_EQ(out.find("# UNIT"), std::string::npos) << out;
  }
}

TEST(ExpoUnit, TextNeverWritesUnit) {
  std::string out = One(Format::kText, "x_duration_seconds", Type::kGauge, "D.", "seconds", 1);
  EXPECT_EQ(out.find("# UNIT"), std::string::npos) << out;
}

TEST(ExpoHelp, TextEscapesBackslashAndNewlineOnly) {
  EXPECT_EQ(One(Format::kText, "x", Type::kGauge, "a\\b\nc \"q\"", "", 1),
            "# HELP x a\\\\b\\nc \"q\"\n# TYPE x gauge\nx 1\n");
}

TEST(ExpoHelp, OpenMetricsAlsoEscapesQuotes) {
  EXPECT_EQ(One(Format::kOpenMetrics, "x", Type::kGauge, "a\\b\nc \"q\"", "", 1),
            "# HELP x a\\\\b\\nc \\\"q\\\"\n# TYPE x gauge\nx 1\n");
}

TEST(ExpoLabels, ValuesAreEscapedTheSameInBothFormats) {
  for (Format f : kBoth) {
    std::string out;
    Writer w(f, &out);
    w.Family("x", Type::kGauge, "X.");
    w.Sample().Label("a", "b\\c\"d\ne").Label("f", "").Value(2);
    EXPECT_EQ(out.substr(out.find("\nx") + 1), "x{a=\"b\\\\c\\\"d\\ne\",f=\"\"} 2\n");
  }
}

TEST(ExpoLabels, EscapedTextAndSpansJoinWithCommas) {
  std::string out;
  Writer w(Format::kText, &out);
  w.Family("x", Type::kGauge, "X.");
  const Label more[] = {{"c", "3"}};
  w.Sample().Escaped("").Escaped("a=\"1\",b=\"2\"").Labels(more).Escaped("").Value(1);
  w.Sample(more, 4);
  w.Sample().Escaped("").Value(5);
  EXPECT_EQ(out.substr(out.find("\nx") + 1), "x{a=\"1\",b=\"2\",c=\"3\"} 1\nx{c=\"3\"} 4\nx 5\n");
}

TEST(ExpoValues, SpecialValuesAndShortestDecimals) {
  std::string out;
  for (double v :
       {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
        -std::numeric_limits<double>::infinity(), 0.0, 42.0, 0.1, -2.5, 1e-9}) {
    AppendValue(&out, v);
    out += ' ';
  }
  EXPECT_EQ(out, "NaN +Inf -Inf 0 42 0.1 -2.5 1e-09 ");
}

TEST(ExpoHistogram, SuffixesFollowTheFamilyName) {
  for (Format f : kBoth) {
    std::string out;
    Writer w(f, &out);
    w.Family("x_seconds", Type::kHistogram, "H.", "seconds");
    w.Sample("_bucket").Label("le", "+Inf").Value(2);
    w.Sample("_sum").Value(0.5);
    w.Sample("_count").Value(2);
    std::string samples = out.substr(out.find("\nx_seconds_bucket") + 1);
    EXPECT_EQ(samples, "x_seconds_bucket{le=\"+Inf\"} 2\nx_seconds_sum 0.5\nx_seconds_count 2\n");
    EXPECT_NE(out.find("# TYPE x_seconds histogram\n"), std::string::npos);
  }
}

TEST(ExpoTimestamp, MillisecondsInTextSecondsInOpenMetrics) {
  std::string text, om;
  Writer t(Format::kText, &text), o(Format::kOpenMetrics, &om);
  for (Writer* w : {&t, &o}) {
    w->Family("x", Type::kGauge, "X.");
    w->Sample().Value(1, 1700000000123);
    w->Sample().Value(1, 1700000000000);
    w->Sample().Value(1, -1500);
  }
  EXPECT_EQ(text.substr(text.find("\nx ") + 1),
            "x 1 1700000000123\nx 1 1700000000000\nx 1 -1500\n");
  EXPECT_EQ(om.substr(om.find("\nx ") + 1), "x 1 1700000000.123\nx 1 1700000000\nx 1 -1.500\n");
}

TEST(ExpoPage, EofOnlyInOpenMetricsAndOnlyFromEndPage) {
  std::string text, om;
  Writer t(Format::kText, &text), o(Format::kOpenMetrics, &om);
  t.Family("x", Type::kGauge, "X.");
  t.Sample(1);
  o.Family("x", Type::kGauge, "X.");
  o.Sample(1);
  EXPECT_EQ(om.find("# EOF"), std::string::npos);
  EndPage(Format::kText, &text);
  EndPage(Format::kOpenMetrics, &om);
  EXPECT_EQ(text.find("# EOF"), std::string::npos);
  EXPECT_EQ(om.substr(om.size() - 6), "# EOF\n");
}

TEST(ExpoPrefix, AppliesToFamiliesBegunAfterIt) {
  std::string out;
  Writer w(Format::kOpenMetrics, &out);
  w.SetPrefix("gw_");
  w.Family("sent_total", Type::kCounter, "S.");
  w.SetPrefix("");  // the family already begun keeps its prefix
  w.Sample(1);
  w.Family("queue", Type::kGauge, "Q.");
  w.Sample(2);
  EXPECT_EQ(out,
            "# HELP gw_sent S.\n# TYPE gw_sent counter\ngw_sent_total 1\n"
            "# HELP queue Q.\n# TYPE queue gauge\nqueue 2\n");
}

TEST(ExpoData, FamiliesAsDataWriteLikeTheStreamAndSkipEmptyOnes) {
  FamilyData sent{"x_sent_total", Type::kCounter, "Sent.", "", {}};
  sent.samples.push_back({"", {{"target", "a\"b"}}, 3, std::nullopt});
  FamilyData empty{"x_empty", Type::kGauge, "Nothing.", "", {}};
  FamilyData latency{"x_latency_seconds", Type::kSummary, "L.", "seconds", {}};
  latency.samples.push_back({"_sum", {}, 0.25, std::nullopt});
  latency.samples.push_back({"_count", {}, 2, 1000});
  const FamilyData all[] = {sent, empty, latency};
  for (Format f : kBoth) {
    std::string data, stream;
    Writer dw(f, &data);
    Write(all, &dw);
    Writer sw(f, &stream);
    sw.Family("x_sent_total", Type::kCounter, "Sent.");
    sw.Sample().Label("target", "a\"b").Value(3);
    sw.Family("x_latency_seconds", Type::kSummary, "L.", "seconds");
    sw.Sample("_sum").Value(0.25);
    sw.Sample("_count").Value(2, 1000);
    EXPECT_EQ(data, stream);
    EXPECT_EQ(data.find("x_empty"), std::string::npos);
  }
}

TEST(ExpoWriter, ReusedStringDoesNotGrowWhenRewritten) {
  std::string out;
  auto render = [&] {
    out.clear();
    Writer w(Format::kOpenMetrics, &out);
    w.Family("x_seconds_total", Type::kCounter, "A \"help\".", "seconds");
    for (int i = 0; i < 100; ++i) w.Sample().Label("i", "v").Value(i);
    EndPage(Format::kOpenMetrics, &out);
  };
  render();
  const size_t capacity = out.capacity();
  const char* data = out.data();
  render();
  EXPECT_EQ(out.capacity(), capacity);
  EXPECT_EQ(out.data(), data);
}

}  // namespace
}  // namespace gw::expo
