// PromQL text → syntax tree → canonical text. Checks the parser's documented round trip:
// whatever parses prints as text that parses again and (see below for ±Inf) prints the same.
#include "fuzz_util.h"
#include "promql/parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view query = gw::fuzz::AsText(data, size);
  auto expr = gw::promql::Parse(query);
  if (!expr.ok()) {
    if (expr.error().message.empty()) gw::fuzz::Fail("parse error without a message");
  } else {
    const std::string printed = gw::promql::Format(**expr);
    auto again = gw::promql::Parse(printed);
    if (!again.ok()) {
      gw::fuzz::Fail("printed form does not parse: " + printed + " -> " + again.error().message);
    }
    // Prometheus prints an infinite number as "+Inf", which re-reads as a unary plus that binds
    // looser than a following "^" (`2 ^ Inf ^ 2` prints `2 ^ +Inf ^ 2`, then `2 ^ ++Inf ^ 2`);
    // Format copies Prometheus' String() there, so only text without "Inf" must be stable.
    if (printed.find("Inf") == std::string::npos && gw::promql::Format(**again) != printed) {
      gw::fuzz::Fail("printing is not stable: " + printed + " -> " + gw::promql::Format(**again));
    }
  }
  (void)gw::promql::GoQuote(query);
  int64_t ms = 0;
  if (gw::promql::ParsePromDuration(query, &ms)) {
    const std::string text = gw::promql::FormatPromDuration(ms);
    int64_t back = -1;
    if (!gw::promql::ParsePromDuration(text, &back) || back != ms) {
      gw::fuzz::Fail("duration " + std::to_string(ms) + " prints as " + text);
    }
  }
  return 0;
}
