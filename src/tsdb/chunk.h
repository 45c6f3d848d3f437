// tsdb/chunk.h — the chunk codec: a run of one series' samples compressed into a byte string.
//
// Designed for GPU telemetry: NVML values are mostly integers (mW, °C, %, MHz, bytes, mJ) sampled
// at a regular interval. A chunk picks one of three value encodings when it is cut:
//   * kScaledInt: every value is k × 10^-s for one decimal scale s (0..15) and an integer k with
//     |k| < 2^53, checked to round-trip bit-exactly. The integers are coded as values, deltas or
//     delta-of-deltas (whichever is smaller for this chunk) with zero-runs and a per-chunk bit
//     width. NaN, the stale marker, ±Inf and -0.0 are escaped as raw 64-bit values.
//   * kNearDecimal: values a few ULPs off such decimals (ratios, rates, sums computed in floating
//     point): the decimal's k plus the exact ULP distance, so every value still round-trips.
//   * kXor: Gorilla XOR coding for anything else (the Prometheus baseline).
// Timestamps are delta-of-delta coded with the same integer coder: a chunk of evenly spaced
// samples costs a few bytes for all its timestamps together; jittered ones are coded as offsets
// from a regular grid. Grid timestamps and plain (prefix-free) packing make a chunk "format 2"
// (kChunkFormat2); the encoder uses them only where they save 4 bytes, so other chunks are
// exactly what format 1 wrote, and the decoder reads both.
// The exact bit layout is in docs/tsdb-format.md and commented where it is written (chunk.cpp).
//
// Pure functions; thread-safe.
#ifndef GPUWARDEN_TSDB_CHUNK_H_
#define GPUWARDEN_TSDB_CHUNK_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "tsdb/storage.h"

namespace gw::tsdb {

// Byte 3 is not a chunk encoding: blocks use it to mark a byte-planes part (block.h).
enum class ChunkEncoding : uint8_t { kScaledInt = 1, kXor = 2, kNearDecimal = 4 };

// Or'd into the encoding byte when a stream of the chunk uses a format-2 feature (grid
// timestamps, plain packing); chunks without it are byte-for-byte what format 1 wrote and older
// builds read them. docs/tsdb-format.md section 1.
inline constexpr uint8_t kChunkFormat2 = 0x10;

// Chunks hold at most this many samples (the decoder rejects more as corrupt).
inline constexpr size_t kMaxChunkSamples = 1 << 16;

// Encodes `samples` (any timestamps and values; at most kMaxChunkSamples) choosing the smaller
// encoding. Every value, NaN payloads included, decodes bit-exactly.
std::string EncodeChunk(std::span<const Sample> samples);

// Encodes with Gorilla XOR values only: the baseline our codec is measured against.
std::string EncodeXorChunk(std::span<const Sample> samples);

// Appends the chunk's samples to `out`. Fails (leaving `out` possibly extended) on a malformed
// chunk; never reads out of bounds.
Status DecodeChunk(std::string_view chunk, std::vector<Sample>* out);

// Reserves room for `n` more samples in `out`, for a decoder to append, and prefaults it.
void ReserveForDecode(std::vector<Sample>* out, size_t n);
// Populates the whole pages inside [begin, begin + bytes) for writing in one
// madvise(MADV_POPULATE_WRITE) call instead of one page fault per 4 KiB page (several µs each
// on a VM: docs/tsdb-format.md §5, "Cold reads"), from 16 KiB up; best effort.
void PrefaultForWrite(void* begin, size_t bytes);

// The value encoding of a chunk (its first byte without kChunkFormat2), 0 if empty.
uint8_t ChunkEncodingOf(std::string_view chunk);

}  // namespace gw::tsdb

#endif  // GPUWARDEN_TSDB_CHUNK_H_
