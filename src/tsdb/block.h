// tsdb/block.h — compaction's on-disk unit: all of one series' samples in one aligned time window
// (DBOptions::block_range_ms, 6 h by default), plus the 5-minute rollups of those samples.
//
//   std::string data = EncodeBlock(samples, level);     // chunk codec per ≤ 65536 samples, zstd'd
//   std::string roll = EncodeRollups(rollups, level);   // rollup fields as chunk-coded columns
//   DecodeBlock(data, &samples);  DecodeRollups(roll, &rollups);
//
// Both use one container: byte 0 is 1 (plain) or 2 (zstd: uvarint plain length, then one zstd
// frame of the plain form); the plain form is uvarint k, then k × (uvarint length, bytes). The
// encoder keeps whichever is smaller. Layout in docs/tsdb-format.md §1b.
//
// Pure functions; thread-safe. Decoders never read out of bounds and fail on malformed input.
#ifndef GPUWARDEN_TSDB_BLOCK_H_
#define GPUWARDEN_TSDB_BLOCK_H_

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "tsdb/rollup.h"
#include "tsdb/storage.h"

namespace gw::tsdb {

// Encodes time-ordered samples (any number) as consecutive chunks (chunk.h) of at most
// kMaxChunkSamples, compressed as a whole with zstd at `zstd_level` when that is smaller.
std::string EncodeBlock(std::span<const Sample> samples, int zstd_level = 3);
// Appends the block's samples to `out`.
Status DecodeBlock(std::string_view block, std::vector<Sample>* out);

// Encodes rollups (ascending, count > 0) as five chunk-coded columns: min, max, sum and count at
// the window start, and last at last_t.
std::string EncodeRollups(std::span<const Rollup> rollups, int zstd_level = 3);
// Appends the rollups to `out`.
Status DecodeRollups(std::string_view encoded, std::vector<Rollup>* out);

}  // namespace gw::tsdb

#endif  // GPUWARDEN_TSDB_BLOCK_H_
