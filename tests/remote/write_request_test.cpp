// remote/write_request.h: the encoding byte for byte against a message encoded by hand from the
// protobuf wire format, round trips of every field, and the decoder's refusals.
#include "remote/write_request.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace gw::remote {
namespace {

std::string Hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += d[c >> 4];
    out += d[c & 15];
  }
  return out;
}

TEST(WriteRequest, EncodesTheWireFormatByteForByte) {
  // WriteRequest{timeseries: [{labels: [{a, b}], samples: [{1.0, 1}]}]}:
  //   0a 15                       field 1 (timeseries), 21 bytes
  //     0a 06 0a 01 61 12 01 62   field 1 (label): name "a", value "b"
  //     12 0b 09 <1.0 LE> 10 01   field 2 (sample): value fixed64, timestamp varint 1
  std::string out;
  EncodeWriteRequest({{.labels = {{"a", "b"}}, .samples = {{1.0, 1}}}}, {}, &out);
  EXPECT_EQ(Hex(out),
            "0a150a060a016112016212"
            "0b09000000000000f03f1001");
}

TEST(WriteRequest, NegativeTimestampsAreTenByteVarints) {
  std::string out;
  EncodeWriteRequest({{.labels = {}, .samples = {{0.0, -1}}}}, {}, &out);
  // sample: key 09 + 8 bytes + key 10 + 10-byte varint = 20 (0x14); series 22 (0x16)
  EXPECT_EQ(Hex(out),
            "0a16"
            "1214"
            "090000000000000000"
            "10ffffffffffffffffff01");
  auto back = DecodeWriteRequest(out);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->series[0].samples[0].timestamp_ms, -1);
}

TEST(WriteRequest, MetadataFieldsAreNumbered1245) {
  std::string out;
  EncodeWriteRequest({}, {{MetricType::kCounter, "x", "h", "u"}}, &out);
  // 1a 0b: field 3, 11 bytes: 08 01 (type counter), 12 01 78 (family), 22 01 68 (help), 2a 01 75
  // (unit)
  EXPECT_EQ(Hex(out),
            "1a0b0801120178220168"
            "2a0175");
}

TEST(WriteRequest, RoundTripsSeriesSamplesAndMetadata) {
  std::vector<TimeSeries> in(3);
  for (int s = 0; s < 3; ++s) {
    in[s].labels = {{"__name__", "gpu_temperature_celsius"},
                    {"gpu", std::to_string(s)},
                    {"long", std::string(300, 'x')}};
    for (int i = 0; i < 200; ++i)
      in[s].samples.push_back({40.0 + i * 0.25 + s, 1767225600000 + i * 1000});
  }
  in[1].samples[5].value = std::numeric_limits<double>::quiet_NaN();
  in[2].samples[7].value = -std::numeric_limits<double>::infinity();
  std::vector<MetricMetadata> meta = {
      {MetricType::kGauge, "gpu_temperature_celsius", "GPU temperature.", "celsius"}};
  std::string out;
  EncodeWriteRequest(in, meta, &out);
  auto back = DecodeWriteRequest(out);
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->series.size(), 3u);
  for (int s = 0; s < 3; ++s) {
    EXPECT_EQ(back->series[s].labels, in[s].labels);
    ASSERT_EQ(back->series[s].samples.size(), 200u);
    for (int i = 0; i < 200; ++i) {
      const double want = in[s].samples[i].value, got = back->series[s].samples[i].value;
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got));
      } else {
        EXPECT_EQ(got, want);
      }
      EXPECT_EQ(back->series[s].samples[i].timestamp_ms, in[s].samples[i].timestamp_ms);
    }
  }
  ASSERT_EQ(back->metadata.size(), 1u);
  EXPECT_EQ(back->metadata[0].type, MetricType::kGauge);
  EXPECT_EQ(back->metadata[0].family, "gpu_temperature_celsius");
  EXPECT_EQ(back->metadata[0].unit, "celsius");
  // Appending: a second encode into the same buffer adds a second message's fields.
  std::string twice = out;
  EncodeWriteRequest(in, meta, &twice);
  auto both = DecodeWriteRequest(twice);
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->series.size(), 6u);
}

TEST(WriteRequest, SkipsUnknownFieldsAsProtobufReadersDo) {
  std::string out;
  EncodeWriteRequest({{.labels = {{"a", "b"}}, .samples = {{2.0, 5}}}}, {}, &out);
  // Prepend field 9 varint 300, field 10 fixed32, field 11 bytes "zz".
  const std::string unknown = std::string("\x48\xac\x02", 3) +
                              std::string("\x55\x01\x02\x03\x04", 5) + std::string("\x5a\x02zz", 4);
  auto back = DecodeWriteRequest(unknown + out);
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->series.size(), 1u);
  EXPECT_EQ(back->series[0].samples[0].value, 2.0);
}

TEST(WriteRequest, RefusesTruncatedAndMalformedInputWithTheOffset) {
  std::string out;
  EncodeWriteRequest({{.labels = {{"name", "value"}}, .samples = {{1.0, 1}}}}, {}, &out);
  for (size_t cut = 1; cut < out.size(); ++cut) {
    auto r = DecodeWriteRequest(std::string_view(out).substr(0, cut));
    EXPECT_FALSE(r.ok()) << "accepted a message cut at " << cut;
  }
  auto bad_type = DecodeWriteRequest(std::string("\x08\x01", 2));  // timeseries as a varint
  ASSERT_FALSE(bad_type.ok());
  EXPECT_NE(bad_type.error().message.find("byte 0"), std::string::npos) << bad_type.error().message;
  auto zero = DecodeWriteRequest(std::string("\x00\x01", 2));
  EXPECT_FALSE(zero.ok());
  auto long_varint = DecodeWriteRequest(std::string(11, '\xff'));
  EXPECT_FALSE(long_varint.ok());
}

}  // namespace
}  // namespace gw::remote
