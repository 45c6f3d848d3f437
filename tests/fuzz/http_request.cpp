// What the handlers read out of a request once the server's request reader (its own target,
// http_parser.cpp) has split it: query strings and form bodies with Go's rules, Accept-Encoding,
// the base64 of basic auth, the Prometheus API's times and durations, and the console's chart
// parameters. The input is used whole by each reader; for the chart, its form-decoded fields are
// the request's parameters.
#include <map>

#include "fuzz_util.h"
#include "http/codec.h"
#include "http/prom_format.h"
#include "http/server.h"
#include "web/chart.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = gw::fuzz::AsText(data, size);

  gw::http::Request req;
  req.method = "GET";
  req.path = "/api/gw/v1/chart";
  gw::http::ParseFormInto(text, &req.params);
  (void)gw::web::ParseChartQuery(req, 1'700'000'000'000);
  for (const auto& [key, value] : req.params) {
    (void)req.param(key);
    (void)req.params_all(key);
  }

  (void)gw::http::AcceptsGzip(text);
  std::string decoded;
  (void)gw::http::DecodeBase64(text, &decoded);
  (void)gw::http::ToLowerAscii(text);

  int64_t t_ms = 0;
  (void)gw::http::ParsePromTime(text, &t_ms);
  int64_t ms = 0;
  (void)gw::http::ParsePromDuration(text, &ms);
  return 0;
}
