// Small wire-format helpers the server needs and httplib gets subtly wrong for us: form and
// query decoding with Go's rules, Accept-Encoding negotiation, gzip, strict base64. Internal to
// src/http (tests use them directly). All functions are pure and thread-safe.
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

// Standard base64 with padding, as Go's base64.StdEncoding decodes it (strictly). False if
// malformed.
bool DecodeBase64(std::string_view in, std::string* out);

}  // namespace gw::http

#endif  // GPUWARDEN_HTTP_CODEC_H_
