// The server's request reader (src/http/request_parser.h) on arbitrary bytes, as the network
// would feed it: the head parser, the body framing it implies, the chunked decoder fed in two
// cuts, and the request-body inflater under a small limit. Properties: a complete head never
// claims more bytes than it was given; feeding a chunked body in pieces gives the same result as
// feeding it whole; the inflater never exceeds its limit by more than one output piece.
#include <string>

#include "fuzz_util.h"
#include "http/codec.h"
#include "http/request_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = gw::fuzz::AsText(data, size);
  using gw::http::ChunkedDecoder;
  using gw::http::HeadParse;

  gw::http::HeadLimits limits;
  limits.max_head_bytes = 4096;
  limits.max_header_fields = 32;
  HeadParse head = gw::http::ParseRequestHead(text, limits);
  if (head.status == HeadParse::Status::kComplete) {
    if (head.consumed == 0 || head.consumed > size) gw::fuzz::Fail("consumed out of range");
    (void)gw::http::BodyFramingOf(head.head);
    std::string path;
    (void)gw::http::DecodePath(head.head.target, &path);
  } else if (head.status == HeadParse::Status::kError && head.error_status < 400) {
    gw::fuzz::Fail("error without a 4xx/5xx status");
  }

  // Chunked: whole, then in two pieces at a cut chosen by the first byte.
  const std::string_view body =
      head.status == HeadParse::Status::kComplete ? text.substr(head.consumed) : text;
  ChunkedDecoder whole;
  std::string whole_out;
  size_t whole_used = 0;
  ChunkedDecoder::Result whole_result = whole.Feed(body, &whole_used, &whole_out);
  if (whole_used > body.size()) gw::fuzz::Fail("chunked consumed past its input");

  ChunkedDecoder split;
  std::string split_out;
  const size_t cut = body.empty() ? 0 : static_cast<unsigned char>(body[0]) % (body.size() + 1);
  size_t used = 0, total = 0;
  ChunkedDecoder::Result r = split.Feed(body.substr(0, cut), &used, &split_out);
  total += used;
  if (r == ChunkedDecoder::Result::kNeedMore && used == cut) {
    r = split.Feed(body.substr(cut), &used, &split_out);
    total += used;
  }
  if (r == whole_result && r == ChunkedDecoder::Result::kDone &&
      (split_out != whole_out || total != whole_used)) {
    gw::fuzz::Fail("chunked decoding depends on how the input is cut");
  }

  gw::http::BodyInflater inflater;
  std::string inflated;
  constexpr size_t kLimit = 1 << 16;
  (void)inflater.Feed(text, &inflated, kLimit);
  if (inflated.size() > kLimit + 16384) gw::fuzz::Fail("inflater passed its limit");
  return 0;
}
