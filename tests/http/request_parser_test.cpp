// The request reader as pure functions: heads, framing, chunked bodies, inflation limits.
#include "http/request_parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <string>

#include "http/codec.h"

namespace gw::http {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

TEST(RequestParserTest, ParsesAHeadAndSaysWhereItEnds) {
  const std::string text =
      "GET /api/v1/query?query=up HTTP/1.1\r\nHost: x\r\nAccept-Encoding:  gzip \r\n\r\nNEXT";
  HeadParse p = ParseRequestHead(text);
  ASSERT_EQ(p.status, HeadParse::Status::kComplete) << p.error;
  EXPECT_EQ(p.consumed, text.size() - 4);
  EXPECT_EQ(p.head.method, "GET");
  EXPECT_EQ(p.head.target, "/api/v1/query?query=up");
  EXPECT_EQ(p.head.minor_version, 1);
  EXPECT_THAT(p.head.fields, ElementsAre(Pair("host", "x"), Pair("accept-encoding", "gzip")));
  ASSERT_NE(p.head.Field("host"), nullptr);
  EXPECT_EQ(p.head.Field("absent"), nullptr);
}

TEST(RequestParserTest, IncompleteUntilTheBlankLineAtEveryCut) {
  const std::string text = "POST /x HTTP/1.0\nContent-Length: 3\n\n";
  for (size_t cut = 0; cut < text.size(); ++cut) {
    EXPECT_EQ(ParseRequestHead(text.substr(0, cut)).status, HeadParse::Status::kIncomplete) << cut;
  }
  HeadParse p = ParseRequestHead(text);
  ASSERT_EQ(p.status, HeadParse::Status::kComplete);
  EXPECT_EQ(p.head.minor_version, 0);
  // Empty lines before a request are skipped.
  p = ParseRequestHead("\r\n\r\nGET / HTTP/1.1\r\n\r\n");
  ASSERT_EQ(p.status, HeadParse::Status::kComplete);
  EXPECT_EQ(p.head.target, "/");
}

TEST(RequestParserTest, RefusesWhatASmugglerWouldTry) {
  struct Case {
    const char* text;
    int status;
  } cases[] = {
      {"GET / HTTP/1.1\r\n Host: folded\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n", 400},
      {"GET  / HTTP/1.1\r\n\r\n", 400},
      {"GET / HTTP/1.1 extra\r\n\r\n", 400},
      {"G(T / HTTP/1.1\r\n\r\n", 400},
      {"GET / HTTP/2.0\r\n\r\n", 505},
      {"GET / HTTX/1.1\r\n\r\n", 400},
      {"GET /a\x01 HTTP/1.1\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nX: \x7f\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nnocolon\r\n\r\n", 400},
  };
  for (const Case& c : cases) {
    HeadParse p = ParseRequestHead(c.text);
    EXPECT_EQ(p.status, HeadParse::Status::kError) << c.text;
    EXPECT_EQ(p.error_status, c.status) << c.text;
  }
  HeadParse p = ParseRequestHead(std::string("GET / HTTP/1.1\r\nX: a\0b\r\n\r\n", 26));
  EXPECT_EQ(p.error_status, 400);
}

TEST(RequestParserTest, SizeLimits) {
  HeadLimits limits;
  limits.max_head_bytes = 100;
  limits.max_header_fields = 2;
  // A request line longer than the limit: 414 even before its end arrives.
  EXPECT_EQ(ParseRequestHead("GET /" + std::string(200, 'a'), limits).error_status, 414);
  // Header fields past the limit without the blank line: 431.
  EXPECT_EQ(ParseRequestHead("GET / HTTP/1.1\r\nX: " + std::string(200, 'b'), limits).error_status,
            431);
  EXPECT_EQ(ParseRequestHead("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", limits).error_status,
            431);
  EXPECT_EQ(ParseRequestHead("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\n\r\n", limits).status,
            HeadParse::Status::kComplete);
}

RequestHead Head(std::vector<std::pair<std::string, std::string>> fields, int minor = 1) {
  RequestHead head;
  head.method = "POST";
  head.target = "/";
  head.minor_version = minor;
  head.fields = std::move(fields);
  return head;
}

TEST(RequestParserTest, BodyFraming) {
  EXPECT_EQ(BodyFramingOf(Head({})).kind, BodyFraming::Kind::kNone);
  EXPECT_EQ(BodyFramingOf(Head({{"content-length", "0"}})).kind, BodyFraming::Kind::kNone);
  BodyFraming f = BodyFramingOf(Head({{"content-length", "12"}}));
  EXPECT_EQ(f.kind, BodyFraming::Kind::kLength);
  EXPECT_EQ(f.length, 12u);
  EXPECT_EQ(BodyFramingOf(Head({{"content-length", "5, 5"}})).length, 5u);
  EXPECT_EQ(BodyFramingOf(Head({{"transfer-encoding", "Chunked"}})).kind,
            BodyFraming::Kind::kChunked);
  struct Case {
    std::vector<std::pair<std::string, std::string>> fields;
    int status;
  } bad[] = {
      {{{"content-length", "5"}, {"content-length", "6"}}, 400},
      {{{"content-length", "-1"}}, 400},
      {{{"content-length", "1e3"}}, 400},
      {{{"content-length", "99999999999999999999"}}, 400},
      {{{"content-length", "5"}, {"transfer-encoding", "chunked"}}, 400},
      {{{"transfer-encoding", "gzip, chunked"}}, 501},
      {{{"transfer-encoding", "identity"}}, 501},
  };
  for (const Case& c : bad) {
    BodyFraming b = BodyFramingOf(Head(c.fields));
    EXPECT_EQ(b.kind, BodyFraming::Kind::kError) << c.fields[0].second;
    EXPECT_EQ(b.error_status, c.status) << c.fields[0].second;
  }
  EXPECT_EQ(BodyFramingOf(Head({{"transfer-encoding", "chunked"}}, 0)).kind,
            BodyFraming::Kind::kError);
}

TEST(RequestParserTest, ChunkedBodyFedByteByByte) {
  const std::string wire =
      "4;ext=1\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nX: y\r\n\r\nGET";
  for (size_t step : {size_t{1}, size_t{3}, wire.size()}) {
    ChunkedDecoder d;
    std::string out;
    size_t pos = 0;
    ChunkedDecoder::Result r = ChunkedDecoder::Result::kNeedMore;
    while (r == ChunkedDecoder::Result::kNeedMore && pos < wire.size()) {
      size_t consumed = 0;
      std::string_view piece = std::string_view(wire).substr(pos, step);
      r = d.Feed(piece, &consumed, &out);
      pos += consumed;
      if (consumed == 0 && r == ChunkedDecoder::Result::kNeedMore) break;
    }
    ASSERT_EQ(r, ChunkedDecoder::Result::kDone) << step;
    EXPECT_EQ(out, "Wikipedia in\r\n\r\nchunks.");
    EXPECT_EQ(wire.substr(pos), "GET") << step;
    EXPECT_EQ(d.payload_bytes(), out.size());
  }
}

TEST(RequestParserTest, ChunkedErrors) {
  for (const char* bad : {"zz\r\n", "5\r\nabcdeX\r\n", "1\r\na\r\n0\r\nbad trailer\r\n\r\n",
                          "fffffffffffffffffff\r\n"}) {
    ChunkedDecoder d;
    std::string out;
    size_t consumed = 0;
    EXPECT_EQ(d.Feed(bad, &consumed, &out), ChunkedDecoder::Result::kError) << bad;
    EXPECT_FALSE(d.error().empty());
  }
  ChunkedDecoder::Limits limits;
  limits.max_line_bytes = 8;
  ChunkedDecoder d(limits);
  size_t consumed = 0;
  EXPECT_EQ(d.Feed("1;" + std::string(20, 'e'), &consumed, nullptr),
            ChunkedDecoder::Result::kError);
}

TEST(RequestParserTest, ChunkedStopsAtTheOutputBudget) {
  const std::string wire = "10\r\n0123456789abcdef\r\n10\r\n0123456789abcdef\r\n0\r\n\r\n";
  ChunkedDecoder d;
  std::string out;
  size_t consumed = 0;
  // max_out 0: one piece of data, then it stops and hands back the rest.
  EXPECT_EQ(d.Feed(wire, &consumed, &out, 0), ChunkedDecoder::Result::kNeedMore);
  EXPECT_EQ(out, "0123456789abcdef");
  EXPECT_LT(consumed, wire.size());
}

TEST(RequestParserTest, DecodePath) {
  std::string out;
  ASSERT_TRUE(DecodePath("/a%20b+c%2F", &out));
  EXPECT_EQ(out, "/a b+c/");
  EXPECT_FALSE(DecodePath("/a%2", &out));
  EXPECT_FALSE(DecodePath("/a%zz", &out));
}

std::string Gzip(const std::string& in) {
  std::string out;
  EXPECT_TRUE(GzipCompress(in, &out));
  return out;
}

TEST(BodyInflaterTest, InflatesInPieces) {
  const std::string plain(100000, 'x');
  const std::string gz = Gzip(plain);
  BodyInflater inflater;
  std::string out;
  for (size_t i = 0; i < gz.size(); i += 7) {
    ASSERT_EQ(inflater.Feed(std::string_view(gz).substr(i, 7), &out, 1 << 20),
              BodyInflater::Result::kOk);
  }
  EXPECT_TRUE(inflater.finished());
  EXPECT_EQ(out, plain);
}

TEST(BodyInflaterTest, StopsABombAtTheLimit) {
  const std::string gz = Gzip(std::string(8 << 20, '\0'));  // 8 MiB of zeros: ~8 KB
  BodyInflater inflater;
  std::string out;
  EXPECT_EQ(inflater.Feed(gz, &out, 1 << 20), BodyInflater::Result::kTooLarge);
  EXPECT_LE(out.size(), (1u << 20) + 16384);
}

TEST(BodyInflaterTest, CorruptAndTrailingBytes) {
  BodyInflater corrupt;
  std::string out;
  EXPECT_EQ(corrupt.Feed("not gzip at all", &out, 1000), BodyInflater::Result::kError);
  BodyInflater trailing;
  EXPECT_EQ(trailing.Feed(Gzip("abc") + "junk", &out, 1000), BodyInflater::Result::kError);
  BodyInflater truncated;
  std::string gz = Gzip(std::string(1000, 'q'));
  out.clear();
  EXPECT_EQ(truncated.Feed(gz.substr(0, gz.size() - 4), &out, 10000), BodyInflater::Result::kOk);
  EXPECT_FALSE(truncated.finished());
}

}  // namespace
}  // namespace gw::http
