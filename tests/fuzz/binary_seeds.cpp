// Writes the binary seeds of the `wal` and `chunks` fuzz targets (usage: fuzz_binary_seeds
// CORPUS_DIR; tests/fuzz/make_seeds.py runs it). The bytes come from the store's own encoders
// and its WAL writer, so the seeds are what a real data directory holds.
#include <bit>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "fuzz_util.h"
#include "tsdb/block.h"
#include "tsdb/chunk.h"
#include "tsdb/coding.h"
#include "tsdb/db.h"
#include "tsdb/rollup.h"

namespace {

using gw::tsdb::Sample;

class Out {
 public:
  explicit Out(std::string dir) : dir_(std::move(dir)) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void Add(uint8_t first, std::string_view rest) {
    std::string data(1, static_cast<char>(first));
    data.append(rest);
    gw::fuzz::WriteWhole(dir_ + "/seed-" + std::to_string(++n_), data);
  }

 private:
  std::string dir_;
  int n_ = 0;
};

std::vector<std::vector<Sample>> SampleSets() {
  std::vector<std::vector<Sample>> sets;
  const int64_t t0 = 1'700'000'000'000;
  std::vector<Sample> temps, power, odd, irregular, near, jittered;
  for (int i = 0; i < 120; ++i) {
    temps.push_back({t0 + i * 1000, 40.0 + (i % 9)});
    power.push_back({t0 + i * 1000, 312.25 + 0.125 * (i % 5)});
    irregular.push_back({t0 + i * 997 + (i % 3) * 13, std::sin(i) * 1e3});
    // A ratio a few ULPs off a short decimal (near-decimal chunks) and scrape-jittered
    // timestamps (grid timestamps).
    const double ratio = static_cast<double>(5200 + (i * 37) % 90) / 10000;
    near.push_back({t0 + i * 1000, std::bit_cast<double>(std::bit_cast<uint64_t>(ratio) +
                                                         static_cast<uint64_t>(i % 7))});
    jittered.push_back(
        {t0 + i * 1000 + static_cast<int64_t>((static_cast<uint32_t>(i) * 2654435761u) >> 28),
         static_cast<double>(i * 250)});
  }
  const double specials[] = {NAN, gw::tsdb::StaleNaN(), INFINITY, -INFINITY, -0.0, 1e308, 5e-324};
  for (int i = 0; i < 14; ++i) odd.push_back({t0 - 5000 + i * 15000, specials[i % 7]});
  sets.push_back(temps);
  sets.push_back(power);
  sets.push_back(odd);
  sets.push_back(irregular);
  sets.push_back(near);
  sets.push_back(jittered);
  sets.push_back({});
  return sets;
}

void ChunkSeeds(const std::string& dir) {
  Out out(dir);
  for (const auto& samples : SampleSets()) {
    out.Add(0, gw::tsdb::EncodeChunk(samples));
    out.Add(0, gw::tsdb::EncodeXorChunk(samples));
    out.Add(1, gw::tsdb::EncodeBlock(samples, 1));
    std::vector<gw::tsdb::Rollup> rollups;
    gw::tsdb::AddToRollups(samples, &rollups);
    out.Add(2, gw::tsdb::EncodeRollups(rollups, 1));
  }
  // A block long enough that zstd wins.
  std::vector<Sample> day;
  for (int i = 0; i < 2000; ++i) day.push_back({1'700'000'000'000 + i * 15000LL, 50.0 + (i % 4)});
  out.Add(1, gw::tsdb::EncodeBlock(day, 3));
}

// The segment a store writes for a few series, one commit per "scrape".
std::string WalSegment() {
  gw::fuzz::ScratchDir scratch;
  {
    gw::tsdb::DBOptions options;
    options.dir = scratch / "data";
    options.wal_sync = gw::tsdb::WalSync::kNever;
    auto db = gw::tsdb::DB::Open(options);
    if (!db.ok()) gw::fuzz::Fail(db.error().message);
    for (int step = 0; step < 4; ++step) {
      for (int gpu = 0; gpu < 2; ++gpu) {
        gw::tsdb::Labels labels = {{"__name__", "gpu_temperature_celsius"},
                                   {"gpu", std::to_string(gpu)}};
        auto ref = (*db)->GetRef(labels);
        if (!ref.ok()) gw::fuzz::Fail(ref.error().message);
        const double v = step == 3 && gpu == 1 ? gw::tsdb::StaleNaN() : 40.0 + step + gpu;
        (void)(*db)->Append(*ref, 1'700'000'000'000 + step * 1000, v);
      }
      if (!(*db)->Commit().ok()) gw::fuzz::Fail("commit");
    }
  }
  std::string segment;
  for (const auto& entry : std::filesystem::directory_iterator(scratch / "data/wal")) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (bytes.size() > segment.size()) segment = bytes;
  }
  return segment;
}

void WalSeeds(const std::string& dir) {
  Out out(dir);
  const std::string segment = WalSegment();
  out.Add(1, segment);  // the segment as it is on disk
  // The same records as the harness's framed layout: uvarint length, then the record body.
  std::string bodies;
  std::string_view rest = segment;
  while (rest.size() >= 8) {
    uint32_t len = 0, crc = 0;
    if (!gw::tsdb::GetFixed32(&rest, &len) || !gw::tsdb::GetFixed32(&rest, &crc) ||
        len > rest.size()) {
      break;
    }
    gw::tsdb::PutUvarint(&bodies, len);
    bodies.append(rest.substr(0, len));
    rest.remove_prefix(len);
  }
  for (uint8_t layout : {0, 2, 4, 6}) out.Add(layout, bodies);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const std::string corpus = argv[1];
  ChunkSeeds(corpus + "/chunks");
  WalSeeds(corpus + "/wal");
  return 0;
}
