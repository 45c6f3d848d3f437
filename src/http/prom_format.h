// http/prom_format.h — the small formats of Prometheus' HTTP API (2.42), byte for byte.
//
//   sample values    "0.35", "1e-07", "NaN", "+Inf" (strings in JSON)
//   timestamps       1435781451.781, 1435781451 (JSON numbers: seconds with a 3-digit fraction,
//                    no fraction when the milliseconds are 0)
//   time parameters  "1435781451.781" or RFC 3339 "2015-07-01T20:10:51.781Z"
//   durations        "30", "1.5", "5m", "1h30m"
#ifndef GPUWARDEN_HTTP_PROM_FORMAT_H_
#define GPUWARDEN_HTTP_PROM_FORMAT_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace gw::http {

// Appends a sample value as Prometheus writes it inside the JSON string: Go's
// strconv.FormatFloat(v, 'f', -1, 64), or 'e' when 0 < |v| < 1e-6 or |v| >= 1e21.
void AppendPromValue(std::string* out, double v);

// Appends a millisecond timestamp as Prometheus writes it (a JSON number of seconds).
void AppendPromTimestamp(std::string* out, int64_t t_ms);

// Parses a time parameter (float Unix seconds or RFC 3339 with optional fraction and offset)
// into milliseconds. False if it is neither.
bool ParsePromTime(std::string_view text, int64_t* t_ms);

// Parses a duration parameter (float seconds or a Prometheus duration) into milliseconds.
// False if malformed, negative, or too large.
bool ParsePromDuration(std::string_view text, int64_t* ms);

}  // namespace gw::http

#endif  // GPUWARDEN_HTTP_PROM_FORMAT_H_
