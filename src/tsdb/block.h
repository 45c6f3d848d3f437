// tsdb/block.h — compaction's on-disk unit: all of one series' samples in one aligned time window
// (DBOptions::block_range_ms, 6 h by default), plus the 5-minute rollups of those samples.
//
//   std::string data = EncodeBlock(samples, level);     // chunk codec per ≤ 65536 samples, zstd'd
//   std::string roll = EncodeRollups(rollups, level);   // every rollup field, as columns
//   DecodeBlock(data, &samples);  DecodeRollups(roll, &rollups);
//
// Both use one container: byte 0 is 1 (plain) or 2 (zstd: uvarint plain length, then one zstd
// frame of the plain form); the plain form is uvarint k, then k × (uvarint length, bytes). The
// encoder keeps whichever is smaller. A block of values alone (shared timestamps, below) is byte
// 3 followed by such a container. Layout in docs/tsdb-format.md §1b.
//
// Pure functions; thread-safe. Decoders never read out of bounds and fail on malformed input.
#ifndef GPUWARDEN_TSDB_BLOCK_H_
#define GPUWARDEN_TSDB_BLOCK_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "tsdb/rollup.h"
#include "tsdb/storage.h"

namespace gw::tsdb {

// Samples per part of a block: a read that wants only a block's newest samples decodes only the
// parts holding them (DecodeBlockTail). About an hour at 1 s; a block of 6 h at 15 s is one part.
// Older blocks have parts of up to kMaxChunkSamples (the limit before) and read the same way.
inline constexpr size_t kBlockPartSamples = 4096;

// Encodes time-ordered samples (any number) as consecutive parts (a chunk, chunk.h, or byte
// planes) of at most kBlockPartSamples, compressed as a whole with zstd at `zstd_level` when that
// is smaller.
std::string EncodeBlock(std::span<const Sample> samples, int zstd_level = 3);
// Appends the block's samples to `out`. A block whose timestamps are stored apart (below) is
// an error here: its timestamps are needed.
Status DecodeBlock(std::string_view block, std::vector<Sample>* out);

// Timestamps stored apart (docs/tsdb-format.md §1b, "Shared timestamps"): series scraped
// together have identical, jittered timestamps, which cost more than their values; the store
// keeps them once per window in a table of their own and the blocks only their values.
//   std::string ts = EncodeTimestamps(samples, level);    // the timestamps alone
//   std::string data = EncodeBlockValues(samples, level);  // byte 3, then a block of the values
//   DecodeTimestamps(ts, &times);  DecodeBlock(data, times, &samples);
// Timestamps whose encoding is shorter than this stay in the block (a regular grid is ~10 bytes).
inline constexpr size_t kMinSharedTimestampBytes = 64;
std::string EncodeTimestamps(std::span<const Sample> samples, int zstd_level = 3);
// What compaction shares: EncodeTimestamps(samples) when it takes kMinSharedTimestampBytes or
// more, else empty (evenly spaced timestamps are not even encoded: they take a few bytes).
std::string SharedTimestamps(std::span<const Sample> samples, int zstd_level = 3);
Status DecodeTimestamps(std::string_view encoded, std::vector<int64_t>* out);
std::string EncodeBlockValues(std::span<const Sample> samples, int zstd_level = 3);
// True for EncodeBlockValues' output.
bool BlockSharesTimestamps(std::string_view block);
// Appends the block's samples to `out`: a block of values takes its timestamps from
// `timestamps` (an error unless there is one per value); any other block ignores them.
Status DecodeBlock(std::string_view block, std::span<const int64_t> timestamps,
                   std::vector<Sample>* out);

// Appends the block's newest samples: its parts from the last one back to the first that starts
// at or before `mint_ms`, oldest first, so every sample at or after mint_ms is there (INT64_MIN:
// the whole block, as DecodeBlock). *from_ms is INT64_MIN when every part was decoded, else the
// time of the first sample appended: `out` then holds exactly the block's samples from it on.
// Timestamps as in DecodeBlock.
Status DecodeBlockTail(std::string_view block, std::span<const int64_t> timestamps, int64_t mint_ms,
                       std::vector<Sample>* out, int64_t* from_ms);

// Encodes rollups (ascending by window, each with raw_count() > 0) with every field of rollup.h
// (format 3: byte 3, then the container above holding integer columns and six chunk-coded value
// columns; docs/tsdb-format.md §1b).
std::string EncodeRollups(std::span<const Rollup> rollups, int zstd_level = 3);
// Appends the rollups to `out`. Reads format 3 and the five-column format 2 (min, max, sum,
// count, last; written before version 3), whose rollups come back with exact == false,
// first_raw_t_ms = the window start and last_raw_t_ms = last_t_ms. Malformed input is an error
// naming what is wrong; nothing is appended past the bad group.
Status DecodeRollups(std::string_view encoded, std::vector<Rollup>* out);
// 0: empty (no rollups stored), 3: format 3, 2: anything else (the five-column format, or junk
// that DecodeRollups refuses).
int RollupsFormat(std::string_view encoded);

}  // namespace gw::tsdb

#endif  // GPUWARDEN_TSDB_BLOCK_H_
