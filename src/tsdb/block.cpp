// tsdb/block.cpp — blocks, their timestamps rows and rollup columns (block.h).
// Kept as one piece: all of them share the container (Pack/Unpack), the byte-plane part codec
// and its sections, and a change to the layout must touch writer and readers together.
#include "tsdb/block.h"

#include <zstd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <memory>

#include "tsdb/chunk.h"
#include "tsdb/coding.h"

namespace gw::tsdb {
namespace {

enum ContainerKind : char { kPlain = 1, kZstd = 2 };

// True when `frame` can be a zstd frame of `plain_size` bytes: its header declares that size
// (ZSTD_compress always writes it) and it is not more than zstd can expand (a 4-byte RLE block
// per 128 KiB block: 32768-fold). Checked before the output buffer is allocated, so a damaged
// length costs nothing instead of gigabytes.
bool PlausibleZstd(std::string_view frame, uint64_t plain_size) {
  return plain_size <= (1ULL << 31) && plain_size / 32768 <= frame.size() &&
         ZSTD_getFrameContentSize(frame.data(), frame.size()) == plain_size;
}

// Decompresses one zstd frame into `*out`, already sized to the frame's content size. One
// decompression context per thread: ZSTD_decompress would allocate and initialise a fresh one
// (~100 KB) per call, which cost more than the decode itself for the few hundred bytes of a
// block's rollups.
bool Decompress(std::string_view frame, std::string* out) {
  struct FreeDCtx {
    void operator()(ZSTD_DCtx* c) const { ZSTD_freeDCtx(c); }
  };
  thread_local std::unique_ptr<ZSTD_DCtx, FreeDCtx> dctx(ZSTD_createDCtx());
  if (dctx == nullptr) return false;
  const size_t n =
      ZSTD_decompressDCtx(dctx.get(), out->data(), out->size(), frame.data(), frame.size());
  return !ZSTD_isError(n) && n == out->size();
}

// Frames `parts` as uvarint k, k × (uvarint length, bytes), then picks plain or zstd.
std::string Pack(const std::vector<std::string>& parts, int zstd_level) {
  std::string plain;
  PutUvarint(&plain, parts.size());
  for (const std::string& p : parts) PutString(&plain, p);
  std::string out(1, kPlain);
  if (zstd_level > 0 && plain.size() > 32) {
    std::string z;
    PutUvarint(&z, plain.size());
    const size_t head = z.size();
    z.resize(head + ZSTD_compressBound(plain.size()));
    const size_t n =
        ZSTD_compress(z.data() + head, z.size() - head, plain.data(), plain.size(), zstd_level);
    if (!ZSTD_isError(n) && head + n < plain.size()) {
      z.resize(head + n);
      out[0] = kZstd;
      out += z;
      return out;
    }
  }
  out += plain;
  return out;
}

// Undoes Pack: the parts as views into `*storage` (or into `in`).
Status Unpack(std::string_view in, std::string* storage, std::vector<std::string_view>* parts) {
  if (in.empty()) return Error{"block: empty"};
  const char kind = in[0];
  in.remove_prefix(1);
  if (kind == kZstd) {
    uint64_t plain_size;
    // A block is at most a few MB; refuse absurd sizes rather than allocate them.
    if (!GetUvarint(&in, &plain_size) || !PlausibleZstd(in, plain_size))
      return Error{"block: bad length"};
    storage->resize(plain_size);
    if (!Decompress(in, storage)) return Error{"block: zstd frame does not decode"};
    in = *storage;
  } else if (kind != kPlain) {
    return Error{"block: unknown container " + std::to_string(static_cast<int>(kind))};
  }
  uint64_t k;
  if (!GetUvarint(&in, &k) || k > in.size()) return Error{"block: bad part count"};
  parts->clear();
  for (uint64_t i = 0; i < k; ++i) {
    uint64_t len;
    if (!GetUvarint(&in, &len) || len > in.size()) return Error{"block: truncated part"};
    parts->push_back(in.substr(0, len));
    in.remove_prefix(len);
  }
  if (!in.empty()) return Error{"block: trailing bytes"};
  return Status::Ok();
}

// ---- Byte planes: a part encoding for blocks only (chunks are 1 and 2). ----
//
// Bit-packed chunks are near-incompressible for zstd; noisy integer series (power in mW at
// millisecond resolution) compress better as *byte planes*: every residual written with the same
// number of bytes W, plane j holding byte j of every residual, each plane zstd'd on its own (the
// high plane has few distinct values, which zstd's Huffman stage codes in a few bits).
//   byte 3, uvarint n, section timestamps (varint t0, then varint delta-of-delta per sample),
//   byte scale s (v = k / 10^s), byte order (0: k - base, 1: delta, 2: delta of delta; 1 and 2
//   zigzagged), [order 0: varint base], byte W, W × section plane
//   section = byte 0 (raw) | 1 (zstd), uvarint length, bytes (a zstd frame of the raw bytes)
constexpr char kPlanes = 3;
constexpr double kMaxExactInt = 9007199254740992.0;  // 2^53
constexpr double kPow10[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                             1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};

void PutSection(std::string* out, const std::string& raw, int level) {
  std::string z(ZSTD_compressBound(raw.size()), '\0');
  const size_t n = ZSTD_compress(z.data(), z.size(), raw.data(), raw.size(), level);
  if (!ZSTD_isError(n) && n + 4 < raw.size()) {
    out->push_back(1);
    PutUvarint(out, raw.size());
    PutUvarint(out, n);
    out->append(z.data(), n);
  } else {
    out->push_back(0);
    PutString(out, raw);
  }
}

bool GetSection(std::string_view* in, std::string* raw) {
  if (in->empty()) return false;
  const char kind = (*in)[0];
  in->remove_prefix(1);
  if (kind == 0) return GetString(in, raw);
  uint64_t raw_len, len;
  if (kind != 1 || !GetUvarint(in, &raw_len) || !GetUvarint(in, &len) || len > in->size() ||
      !PlausibleZstd(in->substr(0, len), raw_len))
    return false;
  raw->resize(raw_len);
  const bool ok = Decompress(in->substr(0, len), raw);
  in->remove_prefix(len);
  return ok;
}

// The smallest decimal scale at which every value is an exact integer below 2^53; -1 if none
// (or a value is NaN, ±Inf or -0.0: those stay with the chunk codec).
int FindPlaneScale(std::span<const Sample> samples) {
  for (const Sample& s : samples)
    if (!std::isfinite(s.v) || (s.v == 0 && std::signbit(s.v))) return -1;
  for (int scale = 0; scale <= 15; ++scale) {
    bool ok = true;
    for (const Sample& s : samples) {
      const double k = std::nearbyint(s.v * kPow10[scale]);
      if (std::fabs(k) >= kMaxExactInt || k / kPow10[scale] != s.v) {
        ok = false;
        break;
      }
    }
    if (ok) return scale;
  }
  return -1;
}

std::string EncodePlanes(std::span<const Sample> samples, int level) {
  const int scale = FindPlaneScale(samples);
  if (scale < 0 || samples.size() < 2) return {};
  const double pow10 = kPow10[scale];
  const size_t n = samples.size();
  std::vector<int64_t> k(n);
  for (size_t i = 0; i < n; ++i) k[i] = static_cast<int64_t>(std::nearbyint(samples[i].v * pow10));
  // Residuals per order; pick the one with the fewest significant bits in total.
  const int64_t base = *std::min_element(k.begin(), k.end());
  std::vector<uint64_t> codes[3];
  uint64_t cost[3] = {0, 0, 0};
  for (int order = 0; order < 3; ++order) {
    codes[order].resize(n);
    for (size_t i = 0; i < n; ++i) {
      const uint64_t x = static_cast<uint64_t>(k[i]);
      const uint64_t p1 = i >= 1 ? static_cast<uint64_t>(k[i - 1]) : 0;
      const uint64_t p2 = i >= 2 ? static_cast<uint64_t>(k[i - 2]) : 0;
      uint64_t c;
      if (order == 0)
        c = x - static_cast<uint64_t>(base);
      else if (order == 1)
        c = ZigZag(static_cast<int64_t>(x - p1));
      else
        c = ZigZag(static_cast<int64_t>(x - (2 * p1 - p2)));
      codes[order][i] = c;
      cost[order] += static_cast<uint64_t>(std::bit_width(c));
    }
  }
  const int order = static_cast<int>(std::min_element(cost, cost + 3) - cost);
  uint64_t max_code = 0;
  for (uint64_t c : codes[order]) max_code = std::max(max_code, c);
  const int width = (std::bit_width(max_code) + 7) / 8;

  std::string out(1, kPlanes);
  PutUvarint(&out, n);
  std::string ts;
  int64_t prev = 0, prev_delta = 0;
  for (size_t i = 0; i < n; ++i) {
    const int64_t t = samples[i].t_ms;
    const int64_t delta =
        static_cast<int64_t>(static_cast<uint64_t>(t) - static_cast<uint64_t>(prev));
    PutVarint(&ts, i == 0 ? t
                          : static_cast<int64_t>(static_cast<uint64_t>(delta) -
                                                 static_cast<uint64_t>(prev_delta)));
    prev_delta = i == 0 ? 0 : delta;
    prev = t;
  }
  PutSection(&out, ts, level);
  out.push_back(static_cast<char>(scale));
  out.push_back(static_cast<char>(order));
  if (order == 0) PutVarint(&out, base);
  out.push_back(static_cast<char>(width));
  std::string plane(n, '\0');
  for (int j = 0; j < width; ++j) {
    for (size_t i = 0; i < n; ++i) plane[i] = static_cast<char>(codes[order][i] >> (8 * j));
    PutSection(&out, plane, level);
  }
  return out;
}

Status DecodePlanes(std::string_view in, std::vector<Sample>* out) {
  in.remove_prefix(1);
  uint64_t n;
  if (!GetUvarint(&in, &n) || n > kMaxChunkSamples) return Error{"block: bad sample count"};
  std::string ts;
  if (!GetSection(&in, &ts)) return Error{"block: bad timestamps"};
  std::string_view tv = ts;
  // Timestamps and residual codes go to per-thread scratch buffers (warm after the first part);
  // each sample is then appended whole, so `out`'s fresh memory is written once.
  thread_local std::vector<int64_t> times;
  thread_local std::vector<uint64_t> codes;
  times.resize(n);
  uint64_t prev = 0, prev_delta = 0;
  for (size_t i = 0; i < n; ++i) {
    int64_t x;
    if (!GetVarint(&tv, &x)) return Error{"block: truncated timestamps"};
    if (i == 0) {
      prev = static_cast<uint64_t>(x);
    } else {
      const uint64_t delta = (i == 1 ? 0 : prev_delta) + static_cast<uint64_t>(x);
      prev += delta;
      prev_delta = delta;
    }
    times[i] = static_cast<int64_t>(prev);
  }
  if (in.size() < 3) return Error{"block: truncated header"};
  const int scale = in[0], order = in[1];
  in.remove_prefix(2);
  int64_t base = 0;
  if (scale < 0 || scale > 15 || order < 0 || order > 2) return Error{"block: bad header"};
  if (order == 0 && !GetVarint(&in, &base)) return Error{"block: bad base"};
  if (in.empty()) return Error{"block: truncated header"};
  const int width = in[0];
  in.remove_prefix(1);
  if (width < 0 || width > 8) return Error{"block: bad width"};
  codes.assign(n, 0);
  std::string plane;
  for (int j = 0; j < width; ++j) {
    if (!GetSection(&in, &plane) || plane.size() != n) return Error{"block: bad plane"};
    const auto* bytes = reinterpret_cast<const unsigned char*>(plane.data());
    for (size_t i = 0; i < n; ++i) codes[i] |= static_cast<uint64_t>(bytes[i]) << (8 * j);
  }
  if (!in.empty()) return Error{"block: trailing bytes"};
  const double pow10 = kPow10[scale];
  ReserveForDecode(out, n);
  uint64_t p1 = 0, p2 = 0;
  for (size_t i = 0; i < n; ++i) {
    uint64_t x;
    if (order == 0)
      x = codes[i] + static_cast<uint64_t>(base);
    else if (order == 1)
      x = p1 + static_cast<uint64_t>(UnZigZag(codes[i]));
    else
      x = 2 * p1 - p2 + static_cast<uint64_t>(UnZigZag(codes[i]));
    p2 = p1;
    p1 = x;
    out->push_back({times[i], static_cast<double>(static_cast<int64_t>(x)) / pow10});
  }
  return Status::Ok();
}

// The smaller of the chunk codec (as zstd would leave it) and byte planes.
std::string EncodePart(std::span<const Sample> samples, int level) {
  std::string chunk = EncodeChunk(samples);
  std::string planes = EncodePlanes(samples, level);
  if (planes.empty() || planes.size() >= chunk.size()) return chunk;
  std::string z(ZSTD_compressBound(chunk.size()), '\0');
  const size_t zn = ZSTD_compress(z.data(), z.size(), chunk.data(), chunk.size(), level);
  const size_t chunk_cost = ZSTD_isError(zn) ? chunk.size() : std::min(zn, chunk.size());
  return planes.size() < chunk_cost ? planes : chunk;
}

}  // namespace

std::string EncodeBlock(std::span<const Sample> samples, int zstd_level) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < samples.size(); i += kBlockPartSamples)
    parts.push_back(EncodePart(samples.subspan(i, std::min(kBlockPartSamples, samples.size() - i)),
                               zstd_level));
  return Pack(parts, zstd_level);
}

namespace {
constexpr char kValuesOnly = 3;  // a block whose timestamps are stored apart
}  // namespace

std::string EncodeTimestamps(std::span<const Sample> samples, int zstd_level) {
  std::vector<Sample> times(samples.begin(), samples.end());
  for (Sample& s : times) s.v = 0;  // a constant: a run of zero codes
  return EncodeBlock(times, zstd_level);
}

std::string SharedTimestamps(std::span<const Sample> samples, int zstd_level) {
  bool even = true;
  for (size_t i = 2; i < samples.size() && even; ++i)
    even = samples[i].t_ms - samples[i - 1].t_ms == samples[1].t_ms - samples[0].t_ms;
  if (even) return {};
  std::string ts = EncodeTimestamps(samples, zstd_level);
  if (ts.size() < kMinSharedTimestampBytes) ts.clear();
  return ts;
}

Status DecodeTimestamps(std::string_view encoded, std::vector<int64_t>* out) {
  thread_local std::vector<Sample> times;  // scratch, warm after the first call
  times.clear();
  if (Status st = DecodeBlock(encoded, &times); !st.ok()) return st;
  const size_t first = out->size();
  out->reserve(first + times.size());
  PrefaultForWrite(out->data() + first, times.size() * sizeof(int64_t));
  for (const Sample& s : times) out->push_back(s.t_ms);
  return Status::Ok();
}

std::string EncodeBlockValues(std::span<const Sample> samples, int zstd_level) {
  // The values with the timestamps 0, 1, 2, ...: a regular grid, which the codec stores in a few
  // bytes; the decoder puts the real ones back.
  std::vector<Sample> values(samples.begin(), samples.end());
  for (size_t i = 0; i < values.size(); ++i) values[i].t_ms = static_cast<int64_t>(i);
  return std::string(1, kValuesOnly) + EncodeBlock(values, zstd_level);
}

bool BlockSharesTimestamps(std::string_view block) {
  return !block.empty() && block[0] == kValuesOnly;
}

namespace {

// A part's sample count, from its header (a chunk's or byte planes' first byte, then uvarint n).
bool PartSamples(std::string_view part, uint64_t* n) {
  if (part.empty()) return false;
  part.remove_prefix(1);
  return GetUvarint(&part, n) && *n <= kMaxChunkSamples;
}

Status DecodePart(std::string_view part, std::vector<Sample>* out) {
  return !part.empty() && part[0] == kPlanes ? DecodePlanes(part, out) : DecodeChunk(part, out);
}

Error TimestampsMismatch(size_t timestamps, size_t values) {
  return Error{"block: " + std::to_string(timestamps) + " shared timestamps for " +
               std::to_string(values) + " values"};
}

}  // namespace

Status DecodeBlockTail(std::string_view block, std::span<const int64_t> timestamps, int64_t mint_ms,
                       std::vector<Sample>* out, int64_t* from_ms) {
  *from_ms = INT64_MIN;
  if (mint_ms == INT64_MIN) return DecodeBlock(block, timestamps, out);
  const bool values_only = BlockSharesTimestamps(block);
  if (values_only) block.remove_prefix(1);
  std::string storage;
  std::vector<std::string_view> parts;
  if (Status st = Unpack(block, &storage, &parts); !st.ok()) return st;
  const size_t base = out->size();
  if (values_only) {
    // The parts' sample counts place them on the shared timestamps: decode from the part holding
    // the first timestamp at or after mint_ms (the values' own timestamps are their indexes).
    size_t total = 0, first = parts.size(), start = 0;
    const auto want = static_cast<size_t>(
        std::lower_bound(timestamps.begin(), timestamps.end(), mint_ms) - timestamps.begin());
    for (size_t i = 0; i < parts.size(); ++i) {
      uint64_t n;
      if (!PartSamples(parts[i], &n)) return Error{"block: bad sample count"};
      if (first == parts.size() && (total + n > want || i + 1 == parts.size())) {
        first = i;
        start = total;
      }
      total += n;
    }
    if (total != timestamps.size()) return TimestampsMismatch(timestamps.size(), total);
    for (size_t i = first; i < parts.size(); ++i) {
      if (Status st = DecodePart(parts[i], out); !st.ok()) {
        out->resize(base);
        return st;
      }
    }
    if (out->size() - base != total - start) {
      out->resize(base);
      return Error{"block: part sample counts disagree with their samples"};
    }
    for (size_t i = base; i < out->size(); ++i) (*out)[i].t_ms = timestamps[start + (i - base)];
    if (first > 0 && out->size() > base) *from_ms = (*out)[base].t_ms;
    return Status::Ok();
  }
  // Newest part first into scratch, until one starts at or before mint_ms; then appended oldest
  // first.
  thread_local std::vector<Sample> scratch;
  thread_local std::vector<size_t> starts;  // where each part begins in scratch, newest first
  scratch.clear();
  starts.clear();
  size_t first = parts.size();
  while (first > 0) {
    --first;
    starts.push_back(scratch.size());
    if (Status st = DecodePart(parts[first], &scratch); !st.ok()) return st;
    if (scratch.size() > starts.back() && scratch[starts.back()].t_ms <= mint_ms) break;
  }
  ReserveForDecode(out, scratch.size());
  for (size_t j = starts.size(); j-- > 0;) {
    const size_t b = starts[j], e = j + 1 < starts.size() ? starts[j + 1] : scratch.size();
    out->insert(out->end(), scratch.begin() + static_cast<ptrdiff_t>(b),
                scratch.begin() + static_cast<ptrdiff_t>(e));
  }
  if (scratch.capacity() > (size_t{1} << 17)) std::vector<Sample>().swap(scratch);
  if (first > 0 && out->size() > base) *from_ms = (*out)[base].t_ms;
  return Status::Ok();
}

Status DecodeBlock(std::string_view block, std::span<const int64_t> timestamps,
                   std::vector<Sample>* out) {
  if (!BlockSharesTimestamps(block)) return DecodeBlock(block, out);
  block.remove_prefix(1);
  const size_t first = out->size();
  if (Status st = DecodeBlock(block, out); !st.ok()) return st;
  if (const size_t n = out->size() - first; n != timestamps.size()) {
    out->resize(first);
    return TimestampsMismatch(timestamps.size(), n);
  }
  for (size_t i = 0; i < timestamps.size(); ++i) (*out)[first + i].t_ms = timestamps[i];
  return Status::Ok();
}

Status DecodeBlock(std::string_view block, std::vector<Sample>* out) {
  if (BlockSharesTimestamps(block)) return Error{"block: its timestamps are stored apart"};
  std::string storage;
  std::vector<std::string_view> parts;
  if (Status st = Unpack(block, &storage, &parts); !st.ok()) return st;
  for (std::string_view p : parts)
    if (Status st = DecodePart(p, out); !st.ok()) return st;
  return Status::Ok();
}

namespace {

// Rollups, format 3 (docs/tsdb-format.md §1b, "Rollups"): byte kRollups3, then a container whose
// parts come in groups of 7 per ≤ kMaxChunkSamples rollups: one part of integer columns, then
// six chunk-coded value columns (min, max, sum, first, last, counter_correction) timestamped at
// the window start. Integer columns are column-major so that zstd sees each as a run of mostly
// equal bytes.
constexpr char kRollups3 = 3;
constexpr size_t kRollupGroup = 7;
constexpr uint8_t kNewestStale = 1, kInexact = 2;

uint64_t Wrap(int64_t a, int64_t b) {  // a - b without signed overflow
  return static_cast<uint64_t>(a) - static_cast<uint64_t>(b);
}

void PutDelta(std::string* out, int64_t a, int64_t b) {
  PutVarint(out, static_cast<int64_t>(Wrap(a, b)));
}

bool GetDelta(std::string_view* in, int64_t b, int64_t* a) {
  int64_t d;
  if (!GetVarint(in, &d)) return false;
  *a = static_cast<int64_t>(static_cast<uint64_t>(b) + static_cast<uint64_t>(d));
  return true;
}

std::string EncodeRollupInts(std::span<const Rollup> rs) {
  std::string out;
  PutUvarint(&out, rs.size());
  int64_t prev_t = 0;
  uint64_t prev_count = 0;
  for (const Rollup& r : rs) PutDelta(&out, r.t_ms, prev_t), prev_t = r.t_ms;
  for (const Rollup& r : rs)
    PutVarint(&out, static_cast<int64_t>(r.count - prev_count)), prev_count = r.count;
  for (const Rollup& r : rs) PutUvarint(&out, r.nan_count);
  for (const Rollup& r : rs) PutUvarint(&out, r.stale_count);
  for (const Rollup& r : rs) PutDelta(&out, r.first_t_ms, r.t_ms);
  for (const Rollup& r : rs) PutDelta(&out, r.last_t_ms, r.t_ms);
  for (const Rollup& r : rs) PutDelta(&out, r.first_raw_t_ms, r.t_ms);
  for (const Rollup& r : rs) PutDelta(&out, r.last_raw_t_ms, r.t_ms);
  for (const Rollup& r : rs)
    out.push_back(
        static_cast<char>((r.newest_stale ? kNewestStale : 0) | (r.exact ? 0 : kInexact)));
  return out;
}

Status DecodeRollupInts(std::string_view in, std::vector<Rollup>* rs) {
  uint64_t n;
  // Every rollup takes at least 9 bytes of this part.
  if (!GetUvarint(&in, &n) || n > kMaxChunkSamples || n * 9 > in.size())
    return Error{"rollups: bad count of windows"};
  rs->assign(n, Rollup{});
  int64_t prev_t = 0;
  uint64_t prev_count = 0;
  bool ok = true;
  for (Rollup& r : *rs) ok = ok && GetDelta(&in, prev_t, &r.t_ms), prev_t = r.t_ms;
  for (Rollup& r : *rs) {
    int64_t d = 0;
    ok = ok && GetVarint(&in, &d);
    r.count = prev_count + static_cast<uint64_t>(d);
    prev_count = r.count;
  }
  uint64_t u = 0;
  for (Rollup& r : *rs)
    ok = ok && GetUvarint(&in, &u) && u <= UINT32_MAX, r.nan_count = static_cast<uint32_t>(u);
  for (Rollup& r : *rs)
    ok = ok && GetUvarint(&in, &u) && u <= UINT32_MAX, r.stale_count = static_cast<uint32_t>(u);
  for (Rollup& r : *rs) ok = ok && GetDelta(&in, r.t_ms, &r.first_t_ms);
  for (Rollup& r : *rs) ok = ok && GetDelta(&in, r.t_ms, &r.last_t_ms);
  for (Rollup& r : *rs) ok = ok && GetDelta(&in, r.t_ms, &r.first_raw_t_ms);
  for (Rollup& r : *rs) ok = ok && GetDelta(&in, r.t_ms, &r.last_raw_t_ms);
  if (!ok || in.size() != n) return Error{"rollups: truncated integer columns"};
  for (size_t i = 0; i < n; ++i) {
    const auto flags = static_cast<uint8_t>(in[i]);
    if (flags & ~(kNewestStale | kInexact)) return Error{"rollups: bad flags"};
    (*rs)[i].newest_stale = flags & kNewestStale;
    (*rs)[i].exact = !(flags & kInexact);
  }
  for (size_t i = 0; i < n; ++i) {
    const Rollup& r = (*rs)[i];
    if ((i > 0 && r.t_ms <= (*rs)[i - 1].t_ms) || r.count >= (1ULL << 53) || r.raw_count() == 0 ||
        r.first_raw_t_ms > r.last_raw_t_ms)
      return Error{"rollups: inconsistent window " + std::to_string(i)};
  }
  return Status::Ok();
}

Status DecodeRollups2(const std::vector<std::string_view>& parts, std::vector<Rollup>* out) {
  if (parts.size() % 5 != 0) return Error{"rollups: bad column count"};
  std::vector<Sample> cols[5];
  for (size_t g = 0; g < parts.size(); g += 5) {
    for (size_t c = 0; c < 5; ++c) {
      cols[c].clear();
      if (Status st = DecodeChunk(parts[g + c], &cols[c]); !st.ok()) return st;
      if (cols[c].size() != cols[0].size()) return Error{"rollups: columns differ in length"};
    }
    for (size_t i = 0; i < cols[0].size(); ++i) {
      const double count = cols[3][i].v;
      if (!(count >= 0 && count < 1e18)) return Error{"rollups: bad count"};
      Rollup r;
      r.t_ms = cols[0][i].t_ms;
      r.min = cols[0][i].v;
      r.max = cols[1][i].v;
      r.sum = cols[2][i].v;
      r.count = static_cast<uint64_t>(count);
      r.last = cols[4][i].v;
      r.last_t_ms = cols[4][i].t_ms;
      // Five columns carry no first/NaN/stale fields (rollup.h); the raw-sample bounds are what
      // is known (the window start and the newest numeric sample), so merges order correctly.
      r.first_raw_t_ms = r.t_ms;
      r.last_raw_t_ms = r.last_t_ms;
      r.exact = false;
      out->push_back(r);
    }
  }
  return Status::Ok();
}

}  // namespace

int RollupsFormat(std::string_view encoded) {
  if (encoded.empty()) return 0;
  return encoded[0] == kRollups3 ? 3 : 2;
}

std::string EncodeRollups(std::span<const Rollup> rollups, int zstd_level) {
  std::vector<std::string> parts;
  std::vector<Sample> col;
  for (size_t off = 0; off < rollups.size(); off += kMaxChunkSamples) {
    const auto part = rollups.subspan(off, std::min(kMaxChunkSamples, rollups.size() - off));
    parts.push_back(EncodeRollupInts(part));
    col.resize(part.size());
    // The value columns are timestamped 0, 1, 2, ... (readers take the window starts from
    // part 0): one run on the chunk codec's grid, where the window starts cost a base and a
    // step per column (docs/tsdb-format.md §1b).
    auto column = [&](double Rollup::*field) {
      for (size_t i = 0; i < part.size(); ++i) col[i] = {static_cast<int64_t>(i), part[i].*field};
      parts.push_back(EncodeChunk(col));
    };
    column(&Rollup::min);
    column(&Rollup::max);
    column(&Rollup::sum);
    column(&Rollup::first);
    column(&Rollup::last);
    column(&Rollup::counter_correction);
  }
  std::string out(1, kRollups3);
  out += Pack(parts, zstd_level);
  return out;
}

Status DecodeRollups(std::string_view encoded, std::vector<Rollup>* out) {
  const int format = RollupsFormat(encoded);
  if (format == 3) encoded.remove_prefix(1);
  // Scratch reused across calls on a thread: a long-range read decodes one rollup column per
  // block (hundreds per query), each only a few hundred bytes.
  thread_local std::string storage;
  thread_local std::vector<std::string_view> parts;
  thread_local std::vector<Rollup> group;
  thread_local std::vector<Sample> col;
  struct Bound {  // a thread keeps no more than a typical block's worth between calls
    ~Bound() {
      if (storage.capacity() > (64u << 10)) std::string().swap(storage);
      if (group.capacity() > 4096) std::vector<Rollup>().swap(group);
      if (col.capacity() > 4096) std::vector<Sample>().swap(col);
    }
  } bound;
  if (Status st = Unpack(encoded, &storage, &parts); !st.ok()) return st;
  if (format == 2) return DecodeRollups2(parts, out);
  if (parts.size() % kRollupGroup != 0) return Error{"rollups: bad column count"};
  const size_t first = out->size();
  double Rollup::*const fields[] = {&Rollup::min,   &Rollup::max,  &Rollup::sum,
                                    &Rollup::first, &Rollup::last, &Rollup::counter_correction};
  for (size_t g = 0; g < parts.size(); g += kRollupGroup) {
    if (Status st = DecodeRollupInts(parts[g], &group); !st.ok()) return st;
    for (size_t c = 0; c < 6; ++c) {
      col.clear();
      if (Status st = DecodeChunk(parts[g + 1 + c], &col); !st.ok()) return st;
      if (col.size() != group.size()) return Error{"rollups: columns differ in length"};
      for (size_t i = 0; i < col.size(); ++i) group[i].*fields[c] = col[i].v;
    }
    if (out->size() > first && !group.empty() && group.front().t_ms <= out->back().t_ms)
      return Error{"rollups: windows out of order"};
    out->insert(out->end(), group.begin(), group.end());
  }
  return Status::Ok();
}

}  // namespace gw::tsdb
