// http/prom_api_internal.h — the pieces prom_api.cpp (queries) and prom_api_status.cpp (metadata,
// targets, status) share: JSON writing as Go's encoding/json does it, the API's success and error
// documents, and time parameters. Not for use outside src/http.
#ifndef GPUWARDEN_HTTP_PROM_API_INTERNAL_H_
#define GPUWARDEN_HTTP_PROM_API_INTERNAL_H_

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "base/error.h"
#include "http/prom_api.h"
#include "http/server.h"
#include "tsdb/storage.h"

namespace gw::http::api_internal {

// An absent start/end: the widest range (Prometheus' minTime/maxTime, halved against overflow).
inline constexpr int64_t kMinTimeMs = std::numeric_limits<int64_t>::min() / 2;
inline constexpr int64_t kMaxTimeMs = std::numeric_limits<int64_t>::max() / 2;

// JSON string escaping as Go's encoding/json writes it (HTML-safe).
void AppendJsonString(std::string* out, std::string_view s);
// {"name":"value",...} in the labels' order.
void AppendLabels(std::string* out, const tsdb::Labels& labels);
// {"status":"success","data":DATA} with HTTP 200.
void Succeed(Response& res, std::string data_json);
// The error document with the HTTP status Prometheus uses for `error_type`.
void Fail(Response& res, const std::string& error_type, const std::string& message);
// Reads a time parameter; `fallback` when absent. False (with the reply written) if malformed.
bool TimeParam(const Request& req, Response& res, const char* name, int64_t fallback, int64_t* out);

// A plain series selector (`up{job="x"}`), as match[] and match_target take it, or the parse
// error in Prometheus' words.
Expected<std::vector<tsdb::Matcher>> ParseSeriesSelector(const std::string& text);

// Registers metadata, exemplars, targets, format_query and the status pages
// (prom_api_status.cpp).
void RegisterStatusApi(Server* server, const PromApiOptions& options);

}  // namespace gw::http::api_internal

#endif  // GPUWARDEN_HTTP_PROM_API_INTERNAL_H_
