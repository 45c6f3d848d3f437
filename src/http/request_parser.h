// The HTTP/1.1 request reader of gpuwarden's server, as pure functions over bytes: no sockets, no
// clocks, no allocation beyond what the result holds. The server (server.cpp) feeds them what it
// has received so far; a fuzz target can feed them anything.
//
//   ParseRequestHead   request line and header fields (RFC 9112 §2–§5), with size limits
//   BodyFramingOf      how long the body is: none, Content-Length or chunked (§6)
//   ChunkedDecoder     an incremental decoder of the chunked transfer coding (§7.1)
//
// Strictness follows what a request smuggler would try: a request with both Content-Length and
// Transfer-Encoding, differing Content-Length values, a transfer coding other than "chunked",
// obs-fold continuation lines, whitespace before a colon, or bare CR are refused with 400 (501
// for a transfer coding we do not know).
#ifndef GPUWARDEN_HTTP_REQUEST_PARSER_H_
#define GPUWARDEN_HTTP_REQUEST_PARSER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gw::http {

struct HeadLimits {
  size_t max_head_bytes = 64 * 1024;  // request line + header fields + the blank line
  size_t max_header_fields = 128;
};

struct RequestHead {
  std::string method;     // as sent (case-sensitive token)
  std::string target;     // as sent: "/path?query" (origin form), or absolute / asterisk form
  int minor_version = 1;  // HTTP/1.<minor>
  // Field names lower-cased, values with surrounding whitespace removed, in order.
  std::vector<std::pair<std::string, std::string>> fields;

  // The first value of a field (lower-case name); nullptr if absent.
  const std::string* Field(std::string_view lower_name) const;
};

struct HeadParse {
  enum class Status { kIncomplete, kComplete, kError };
  Status status = Status::kIncomplete;
  size_t consumed = 0;   // kComplete: bytes of the head, blank line included
  int error_status = 0;  // kError: 400, 414 (request line too long), 431, 501, 505
  std::string error;     // kError: a short reason for the response body
  RequestHead head;      // kComplete
};

// Parses the head at the start of `data`. Leading empty lines (CRLF or LF) before the request
// line are skipped, as RFC 9112 §2.2 allows. LF without CR ends a line too. kIncomplete means
// more bytes are needed and none of the limits is exceeded yet.
HeadParse ParseRequestHead(std::string_view data, const HeadLimits& limits = {});

struct BodyFraming {
  enum class Kind { kNone, kLength, kChunked, kError };
  Kind kind = Kind::kNone;
  uint64_t length = 0;   // kLength
  int error_status = 0;  // kError: 400 or 501
  std::string error;
};

// The body's framing from the head's Content-Length and Transfer-Encoding fields.
BodyFraming BodyFramingOf(const RequestHead& head);

// Decodes a chunked body incrementally: feed it bytes as they come.
class ChunkedDecoder {
 public:
  enum class Result { kNeedMore, kDone, kError };
  struct Limits {
    size_t max_line_bytes = 4096;      // a chunk-size line with its extensions
    size_t max_trailer_bytes = 16384;  // all trailer fields together
  };

  ChunkedDecoder() = default;
  explicit ChunkedDecoder(Limits limits) : limits_(limits) {}

  // Consumes a prefix of `in` (*consumed bytes), appending chunk data to `out` (nullptr: the data
  // is dropped). kDone: the last chunk and trailers were read; bytes after *consumed belong to the
  // next request. kError: malformed (error() says why). Stops early, returning kNeedMore with
  // unconsumed input, once `out` has grown by more than `max_out` bytes in this call, so a
  // caller can apply its size limit between calls.
  Result Feed(std::string_view in, size_t* consumed, std::string* out, size_t max_out = SIZE_MAX);

  // Payload bytes decoded so far.
  uint64_t payload_bytes() const { return payload_; }
  const std::string& error() const { return error_; }

 private:
  enum class State { kSize, kData, kDataCrlf, kTrailer, kDone, kError };
  Result Fail(std::string why);

  Limits limits_;
  State state_ = State::kSize;
  std::string line_;         // a partial size line or trailer line
  uint64_t chunk_left_ = 0;  // data bytes left in the current chunk
  size_t crlf_seen_ = 0;     // kDataCrlf: bytes of the CRLF after the data seen
  size_t trailer_bytes_ = 0;
  uint64_t payload_ = 0;
  std::string error_;
};

// Decodes a request target's path: %XX become bytes ('+' stays '+'). False on a malformed escape.
bool DecodePath(std::string_view in, std::string* out);

// The reason phrase for a status code ("Not Found"); "" for unknown codes.
std::string_view ReasonPhrase(int status);

}  // namespace gw::http

#endif  // GPUWARDEN_HTTP_REQUEST_PARSER_H_
