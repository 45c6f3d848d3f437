// Small wire-format helpers of the server: form and query decoding with Go's rules,
// Accept-Encoding negotiation, gzip both ways (BodyInflater for request bodies), strict base64.
// Internal to src/http (tests use them directly). The functions are pure and thread-safe; a
// BodyInflater belongs to one body.
#ifndef GPUWARDEN_HTTP_CODEC_H_
#define GPUWARDEN_HTTP_CODEC_H_

#include <map>
#include <string>
#include <string_view>

namespace gw::http {

std::string ToLowerAscii(std::string_view text);

// Decodes "a=1&b=x+y&c=%2F" into `out` as Go's url.ParseQuery does: pairs split on '&', the key
// ends at the first '=' (so values may hold '='), '+' is a space, %XX is a byte. Pairs with an
// empty key or a malformed %-escape are skipped. Appends; existing entries stay first.
void ParseFormInto(std::string_view text, std::multimap<std::string, std::string>* out);

// True when an Accept-Encoding value admits gzip: "gzip" or "x-gzip" with q > 0, or "*" with
// q > 0 and gzip not excluded by name.
bool AcceptsGzip(std::string_view accept_encoding);

// gzip (RFC 1952) of `in`, default compression level. False only if zlib fails.
bool GzipCompress(std::string_view in, std::string* out);

// Inflates a request body sent with Content-Encoding gzip (or x-gzip, or deflate in zlib's
// wrapper), piece by piece as it arrives, never producing more than a limit: a small body that
// inflates to gigabytes (a "gzip bomb") is stopped as soon as it passes the limit.
class BodyInflater {
 public:
  enum class Result { kOk, kTooLarge, kError };

  BodyInflater();
  ~BodyInflater();
  BodyInflater(const BodyInflater&) = delete;
  BodyInflater& operator=(const BodyInflater&) = delete;

  // Appends what `in` inflates to onto `out`. kTooLarge as soon as `out` would exceed
  // `max_out` bytes (what was appended stays, at most one 16 KiB piece beyond the limit);
  // kError for a corrupt stream or bytes after its end.
  Result Feed(std::string_view in, std::string* out, size_t max_out);
  // True once the whole compressed stream has been read (its trailer checked).
  bool finished() const { return finished_; }

 private:
  struct State;
  State* state_;
  bool finished_ = false;
  bool failed_ = false;
};

// True for the Content-Encoding values BodyInflater reads ("gzip", "x-gzip", "deflate"; any
// case).
bool IsInflatableEncoding(std::string_view content_encoding);

// Standard base64 with padding, as Go's base64.StdEncoding decodes it (strictly). False if
// malformed.
bool DecodeBase64(std::string_view in, std::string* out);

}  // namespace gw::http

#endif  // GPUWARDEN_HTTP_CODEC_H_
