// Prometheus remote write's WriteRequest (remote/write_request.h) from arbitrary bytes: the decoder
// must refuse or accept without reading outside the input, and what it accepts must encode and
// decode back to the same message (every label, every sample's bits and time, every metadata).
#include <cstring>

#include "fuzz_util.h"
#include "remote/write_request.h"

namespace {

bool SameBits(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto first = gw::remote::DecodeWriteRequest(gw::fuzz::AsText(data, size));
  if (!first.ok()) {
    if (first.error().message.find("malformed WriteRequest at byte ") != 0)
      gw::fuzz::Fail("an error without its offset: " + first.error().message);
    return 0;
  }
  std::string again;
  gw::remote::EncodeWriteRequest(first->series, first->metadata, &again);
  auto second = gw::remote::DecodeWriteRequest(again);
  if (!second.ok()) gw::fuzz::Fail("re-encoded message refused: " + second.error().message);
  if (second->series.size() != first->series.size() ||
      second->metadata.size() != first->metadata.size())
    gw::fuzz::Fail("re-encoded message has other counts");
  for (size_t i = 0; i < first->series.size(); ++i) {
    const auto& a = first->series[i];
    const auto& b = second->series[i];
    if (a.labels != b.labels || a.samples.size() != b.samples.size())
      gw::fuzz::Fail("a series changed in the round trip");
    for (size_t k = 0; k < a.samples.size(); ++k)
      if (!SameBits(a.samples[k].value, b.samples[k].value) ||
          a.samples[k].timestamp_ms != b.samples[k].timestamp_ms)
        gw::fuzz::Fail("a sample changed in the round trip");
  }
  for (size_t i = 0; i < first->metadata.size(); ++i) {
    const auto& a = first->metadata[i];
    const auto& b = second->metadata[i];
    if (a.type != b.type || a.family != b.family || a.help != b.help || a.unit != b.unit)
      gw::fuzz::Fail("metadata changed in the round trip");
  }
  return 0;
}
