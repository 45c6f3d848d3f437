#include "http/codec.h"
#include "test_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <random>

namespace gw::http {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

std::multimap<std::string, std::string> Form(std::string_view text) {
  std::multimap<std::string, std::string> out;
  ParseFormInto(text, &out);
  return out;
}

TEST(CodecTest, FormDecodingFollowsGo) {
  EXPECT_THAT(Form("a=1&b=x+y&c=%2F%3d&d"),
              ElementsAre(Pair("a", "1"), Pair("b", "x y"), Pair("c", "/="), Pair("d", "")));
  // The key ends at the first '=': unencoded PromQL keeps its matchers.
  EXPECT_THAT(Form("query=up{job=\"a\"}"), ElementsAre(Pair("query", "up{job=\"a\"}")));
  EXPECT_THAT(Form("m[]=a&m[]=b&m[]=a"),
              ElementsAre(Pair("m[]", "a"), Pair("m[]", "b"), Pair("m[]", "a")));
  // Malformed escapes and empty keys are dropped, the rest kept.
  EXPECT_THAT(Form("bad=%zz&=x&&ok=1&trail=%4"), ElementsAre(Pair("ok", "1")));
  EXPECT_TRUE(Form("").empty());
}

TEST(CodecTest, AcceptEncoding) {
  EXPECT_TRUE(AcceptsGzip("gzip"));
  EXPECT_TRUE(AcceptsGzip("deflate, GZIP;q=0.5"));
  EXPECT_TRUE(AcceptsGzip("x-gzip"));
  EXPECT_TRUE(AcceptsGzip("br;q=1.0, *;q=0.1"));
  EXPECT_FALSE(AcceptsGzip(""));
  EXPECT_FALSE(AcceptsGzip("identity"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0.000, *"));
  EXPECT_FALSE(AcceptsGzip("*;q=0"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=bogus"));
  EXPECT_FALSE(AcceptsGzip("gzipped"));
}

TEST(CodecTest, GzipRoundTrips) {
  std::string text;
  for (int i = 0; i < 2000; ++i)
    text += "gpu_temperature_celsius{gpu=\"" + std::to_string(i % 8) + "\"} 42\n";
  std::string compressed;
  ASSERT_TRUE(GzipCompress(text, &compressed));
  EXPECT_LT(compressed.size(), text.size() / 10);
  EXPECT_EQ(static_cast<unsigned char>(compressed[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>(compressed[1]), 0x8b);
  EXPECT_EQ(testutil::Gunzip(compressed), text);
  ASSERT_TRUE(GzipCompress("", &compressed));
  EXPECT_EQ(testutil::Gunzip(compressed), "");
}

TEST(CodecTest, Base64IsStrict) {
  std::string out;
  ASSERT_TRUE(DecodeBase64("YWxpY2U6czNjcmV0", &out));
  EXPECT_EQ(out, "alice:s3cret");
  ASSERT_TRUE(DecodeBase64("YQ==", &out));
  EXPECT_EQ(out, "a");
  ASSERT_TRUE(DecodeBase64("YWI=", &out));
  EXPECT_EQ(out, "ab");
  ASSERT_TRUE(DecodeBase64("", &out));
  EXPECT_EQ(out, "");
  EXPECT_FALSE(DecodeBase64("YQ", &out));    // missing padding
  EXPECT_FALSE(DecodeBase64("YR==", &out));  // non-zero padding bits
  EXPECT_FALSE(DecodeBase64("Y===", &out));
  EXPECT_FALSE(DecodeBase64("YQ==YQ==", &out));  // padding in the middle
  EXPECT_FALSE(DecodeBase64("YW Jj", &out));
  EXPECT_FALSE(DecodeBase64("YW-j", &out));  // URL alphabet is not the standard one
}

TEST(CodecTest, DecodersSurviveRandomInput) {
  std::mt19937 rng(7);
  for (int i = 0; i < 20000; ++i) {
    std::string text(rng() % 24, '\0');
    for (char& c : text) c = "%=&+aZ09/=;q,*\0\xff"[rng() % 16];
    std::string out;
    DecodeBase64(text, &out);
    Form(text);
    AcceptsGzip(text);
  }
}

}  // namespace
}  // namespace gw::http
