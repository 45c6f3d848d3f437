// base/utc_time.h — a time in milliseconds since the Unix epoch as UTC calendar fields, for the
// places that print a timestamp in a fixed textual format (RFC 3339 in alert payloads, Go's
// time.Time in templates).
//
//   UtcTime u = ToUtc(1'700'000'000'120);   // u.tm: 2023-11-14 22:13:20, u.millis: 120
//   std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &u.tm);
//   text = buf + GoFraction(u.millis);      // "2023-11-14T22:13:20.12"
//
// Times before 1970 round down to the second before them, as Go's time does: -1 ms is
// 1969-12-31 23:59:59 with millis 999. Pure; any thread (gmtime_r).
#ifndef GPUWARDEN_BASE_UTC_TIME_H_
#define GPUWARDEN_BASE_UTC_TIME_H_

#include <cstdint>
#include <cstdio>
#include <ctime>
#include <string>

namespace gw {

struct UtcTime {
  std::tm tm{};    // calendar fields in UTC
  int millis = 0;  // 0..999 within that second
};

inline UtcTime ToUtc(int64_t ms) {
  int64_t secs = ms / 1000;
  int64_t millis = ms % 1000;
  if (millis < 0) {
    millis += 1000;
    --secs;
  }
  UtcTime out;
  const std::time_t t = static_cast<std::time_t>(secs);
  gmtime_r(&t, &out.tm);
  out.millis = static_cast<int>(millis);
  return out;
}

// The sub-second part as Go's RFC3339Nano and time.Time.String print it: ".12" for 120 ms, ""
// for 0 (trailing zeros dropped).
inline std::string GoFraction(int millis) {
  if (millis == 0) return "";
  char buf[8];
  std::snprintf(buf, sizeof buf, ".%03d", millis);
  std::string out = buf;
  while (out.back() == '0') out.pop_back();
  return out;
}

}  // namespace gw

#endif  // GPUWARDEN_BASE_UTC_TIME_H_
