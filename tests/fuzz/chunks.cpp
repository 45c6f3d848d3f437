// The decoders of what the store keeps in SQLite: chunks, compacted blocks (zstd) and rollups.
// Byte 0 picks the decoder; the rest is the encoded form. Property: whatever a decoder accepts
// encodes again into something that decodes to the same samples, bit for bit.
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz_util.h"
#include "tsdb/block.h"
#include "tsdb/chunk.h"

namespace {

bool SameBits(const std::vector<gw::tsdb::Sample>& a, const std::vector<gw::tsdb::Sample>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].t_ms != b[i].t_ms || std::memcmp(&a[i].v, &b[i].v, sizeof(double)) != 0) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string_view encoded = gw::fuzz::AsText(data + 1, size - 1);
  std::vector<gw::tsdb::Sample> samples, again;
  switch (data[0] % 3) {
    case 0:
      if (!gw::tsdb::DecodeChunk(encoded, &samples).ok()) return 0;
      if (samples.size() > gw::tsdb::kMaxChunkSamples) gw::fuzz::Fail("chunk over the limit");
      if (!gw::tsdb::DecodeChunk(gw::tsdb::EncodeChunk(samples), &again).ok() ||
          !SameBits(samples, again)) {
        gw::fuzz::Fail("chunk does not round-trip");
      }
      again.clear();
      if (!gw::tsdb::DecodeChunk(gw::tsdb::EncodeXorChunk(samples), &again).ok() ||
          !SameBits(samples, again)) {
        gw::fuzz::Fail("XOR chunk does not round-trip");
      }
      break;
    case 1: {
      // A block, or values whose timestamps are stored apart: then the timestamps 0, 1, 2, ...
      // (any would do) stand in for the row.
      std::vector<int64_t> times;
      if (gw::tsdb::BlockSharesTimestamps(encoded)) {
        std::vector<gw::tsdb::Sample> probe;
        if (!gw::tsdb::DecodeBlock(encoded.substr(1), &probe).ok()) return 0;
        for (size_t i = 0; i < probe.size(); ++i) times.push_back(static_cast<int64_t>(i) * 7);
      }
      if (!gw::tsdb::DecodeBlock(encoded, times, &samples).ok()) return 0;
      // Its newest parts from a time inside: a suffix of the whole, holding (for time-ordered
      // samples) every one at or after that time.
      if (!samples.empty()) {
        const int64_t mint = samples[samples.size() / 2].t_ms;
        std::vector<gw::tsdb::Sample> tail;
        int64_t from = 0;
        if (!gw::tsdb::DecodeBlockTail(encoded, times, mint, &tail, &from).ok())
          gw::fuzz::Fail("a block that decodes has a tail that does not");
        if (tail.size() > samples.size() ||
            !SameBits(tail,
                      std::vector<gw::tsdb::Sample>(samples.end() - tail.size(), samples.end()))) {
          gw::fuzz::Fail("a block's tail is not a suffix of it");
        }
        bool ordered = true;
        for (size_t i = 1; i < samples.size(); ++i)
          ordered &= samples[i - 1].t_ms < samples[i].t_ms;
        if (ordered && tail.size() < samples.size() - samples.size() / 2)
          gw::fuzz::Fail("a block's tail misses samples after its start");
        if (tail.size() < samples.size() && (tail.empty() || from != tail.front().t_ms))
          gw::fuzz::Fail("a partial tail without its start time");
      }
      if (!gw::tsdb::DecodeBlock(gw::tsdb::EncodeBlock(samples, 1), &again).ok() ||
          !SameBits(samples, again)) {
        gw::fuzz::Fail("block does not round-trip");
      }
      // The same samples split into values and timestamps come back whole.
      again.clear();
      times.clear();
      if (!gw::tsdb::DecodeTimestamps(gw::tsdb::EncodeTimestamps(samples, 1), &times).ok() ||
          !gw::tsdb::DecodeBlock(gw::tsdb::EncodeBlockValues(samples, 1), times, &again).ok() ||
          !SameBits(samples, again)) {
        gw::fuzz::Fail("values and timestamps do not round-trip");
      }
      break;
    }
    default: {
      std::vector<gw::tsdb::Rollup> rollups;
      (void)gw::tsdb::DecodeRollups(encoded, &rollups);
      break;
    }
  }
  return 0;
}
