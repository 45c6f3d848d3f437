// Opening a data directory whose write-ahead log holds the input: tsdb::DB::Open replays the WAL
// into the head (series and sample records, torn or corrupt tails), as `serve` does at start.
//
// Input: byte 0 chooses the layout, the rest is the log.
//   bit 0 clear: the rest is a list of record bodies (each a uvarint length, then that many
//                bytes: type byte and payload); the harness frames them with the right length
//                and CRC-32, so the fuzzer reaches the record decoders and the head instead of
//                stopping at the checksum. bit 1: the second half of the records go into a
//                second segment. bit 2: a torn record (a header and half a body) ends segment 1.
//   bit 0 set:   the rest is written as one segment file byte for byte (framing, CRC, torn tail).
// Afterwards the store must answer a query over everything, and open again (the replay
// truncated what was bad).
#include <filesystem>
#include <vector>

#include "fuzz_util.h"
#include "tsdb/coding.h"
#include "tsdb/db.h"

namespace {

void AppendFramed(std::string* out, std::string_view body) {
  gw::tsdb::PutFixed32(out, static_cast<uint32_t>(body.size()));
  gw::tsdb::PutFixed32(out, gw::tsdb::Crc32(body));
  out->append(body);
}

void OpenAndRead(const std::string& dir) {
  gw::tsdb::DBOptions options;
  options.dir = dir;
  options.wal_sync = gw::tsdb::WalSync::kNever;
  options.block_cache_bytes = 1 << 20;
  auto db = gw::tsdb::DB::Open(options);
  if (!db.ok()) {
    if (db.error().message.empty()) gw::fuzz::Fail("open failed without a message");
    return;
  }
  auto matcher = gw::tsdb::Matcher::Make(gw::tsdb::MatchType::kRegexMatch, "__name__", ".+");
  if (!matcher.ok()) gw::fuzz::Fail("matcher");
  auto querier = (*db)->NewQuerier();
  std::vector<gw::tsdb::SeriesData> out;
  (void)querier->Select({*matcher}, INT64_MIN, INT64_MAX, &out);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static gw::fuzz::ScratchDir scratch;
  const std::string dir = scratch / "data";
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir + "/wal");

  const uint8_t layout = data[0];
  std::string_view rest = gw::fuzz::AsText(data + 1, size - 1);
  std::string segments[2];
  if (layout & 1) {
    segments[0] = std::string(rest);
  } else {
    std::vector<std::string_view> bodies;
    while (!rest.empty()) {
      uint64_t len = 0;
      if (!gw::tsdb::GetUvarint(&rest, &len)) break;
      if (len > rest.size()) len = rest.size();
      if (len == 0) continue;
      bodies.push_back(rest.substr(0, len));
      rest.remove_prefix(len);
    }
    const size_t split = (layout & 2) ? bodies.size() / 2 : bodies.size();
    for (size_t i = 0; i < bodies.size(); ++i)
      AppendFramed(&segments[i < split ? 0 : 1], bodies[i]);
    if ((layout & 4) && !bodies.empty()) {
      std::string torn;
      AppendFramed(&torn, bodies.back());
      segments[0].append(torn, 0, 8 + bodies.back().size() / 2);
    }
  }
  gw::fuzz::WriteWhole(dir + "/wal/00000001", segments[0]);
  if (!segments[1].empty()) gw::fuzz::WriteWhole(dir + "/wal/00000002", segments[1]);

  OpenAndRead(dir);
  OpenAndRead(dir);
  return 0;
}
