#include "tsdb/chunk.h"

#include <algorithm>
#include <array>
#include <bit>
#include <climits>
#include <cmath>
#include <cstring>

#include "tsdb/coding.h"

namespace gw::tsdb {
namespace {

constexpr int kMaxScale = 15;                        // 10^15 is still exact as a double
constexpr double kMaxExactInt = 9007199254740992.0;  // 2^53

constexpr std::array<double, kMaxScale + 1> kPow10 = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                                      1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};

uint64_t Bits(double v) {
  return std::bit_cast<uint64_t>(v);
}
double FromBits(uint64_t b) {
  return std::bit_cast<double>(b);
}

// Values the integer coder escapes: NaN (any payload, the stale marker included), ±Inf, -0.0.
bool IsEscaped(double v) {
  return !std::isfinite(v) || (v == 0 && std::signbit(v));
}

// ---- The integer coder, shared by timestamps and scaled-integer values. ----
//
// Predictor: order 0 codes x - base (base = the chunk's smallest integer, so codes are >= 0 and
// not zigzagged); order 1 predicts the previous integer, order 2 the previous plus the previous
// delta (both start from 0) and codes zigzag(x - prediction). Arithmetic wraps modulo 2^64, so
// any int64 sequence round-trips.
// Layout: [2 bits: order] [1 bit: dense] [7 bits: width B] [order 0 only: var zigzag(base)],
// then per sample one of (dense = 0 | dense = 1, chosen per chunk, whichever is smaller):
//   0   | 10   + gamma(r)   a run of r >= 1 samples whose code is 0
//   10  | 0    + B bits     the code, when it fits in B bits
//   110 | 110  + var        the code, any size (7-bit length + that many bits)
//   111 | 111  + 64 bits    (values only) the raw IEEE-754 bits of an escaped value; the
//                           predictor state is left unchanged
struct IntItem {
  uint64_t code = 0;
  bool escaped = false;
  uint64_t raw = 0;
};

struct IntPlan {
  int order = 2;
  bool dense = false;
  int width = 0;
  uint64_t base = 0;
  size_t bits = 0;
};

uint64_t Predict(int order, uint64_t base, uint64_t last, uint64_t last_delta) {
  return order == 0 ? base : order == 1 ? last : last + last_delta;
}

uint64_t ToCode(int order, uint64_t diff) {
  return order == 0 ? diff : ZigZag(static_cast<int64_t>(diff));
}
uint64_t FromCode(int order, uint64_t code) {
  return order == 0 ? code : static_cast<uint64_t>(UnZigZag(code));
}

// Fills `items` and returns the base (for order 0).
uint64_t Residuals(std::span<const int64_t> xs, std::span<const uint8_t> escaped, int order,
                   std::vector<IntItem>* items) {
  items->clear();
  items->reserve(xs.size());
  int64_t min = INT64_MAX;
  for (size_t i = 0; i < xs.size(); ++i)
    if (escaped.empty() || !escaped[i]) min = std::min(min, xs[i]);
  const auto base = static_cast<uint64_t>(min);
  uint64_t last = 0, last_delta = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    IntItem item;
    if (!escaped.empty() && escaped[i]) {
      item.escaped = true;
    } else {
      const auto x = static_cast<uint64_t>(xs[i]);
      item.code = ToCode(order, x - Predict(order, base, last, last_delta));
      last_delta = x - last;
      last = x;
    }
    items->push_back(item);
  }
  return base;
}

// Picks the width and run/packed prefixes that minimise the stream's size.
IntPlan PlanWidth(const std::vector<IntItem>& items, int order, uint64_t base) {
  std::array<size_t, 65> hist{};
  size_t fixed_bits =
      10 +
      (order == 0 ? 7 + static_cast<size_t>(BitLength(ZigZag(static_cast<int64_t>(base)))) : 0);
  size_t runs = 0;
  for (size_t i = 0; i < items.size();) {
    if (items[i].escaped) {
      fixed_bits += 3 + 64;
      ++i;
    } else if (items[i].code == 0) {
      size_t run = 0;
      while (i < items.size() && !items[i].escaped && items[i].code == 0) ++run, ++i;
      fixed_bits += 2 * static_cast<size_t>(BitLength(run)) - 1;
      ++runs;
    } else {
      ++hist[static_cast<size_t>(BitLength(items[i].code))];
      ++i;
    }
  }
  // Size for width w: codes of at most w bits cost w (+ prefix), longer ones 10 + their length.
  // One pass over w with running sums instead of re-summing the histogram for every w.
  size_t long_bits = 0, long_count = 0;
  for (int len = 1; len <= 64; ++len) {
    long_bits += hist[static_cast<size_t>(len)] * (10 + static_cast<size_t>(len));
    long_count += hist[static_cast<size_t>(len)];
  }
  IntPlan best{order, false, 0, base, SIZE_MAX};
  size_t fits = 0;
  for (int w = 0; w <= 64; ++w) {
    const size_t n = hist[static_cast<size_t>(w)];
    if (w > 0) {
      fits += n;
      long_bits -= n * (10 + static_cast<size_t>(w));
      long_count -= n;
    }
    const size_t bits = fixed_bits + long_bits + fits * static_cast<size_t>(w);
    for (bool dense : {false, true}) {
      const size_t total = bits + (dense ? 2 * runs + fits : runs + 2 * fits);
      if (total < best.bits) best = {order, dense, w, base, total};
    }
    if (long_count == 0) break;  // wider only costs more
  }
  return best;
}

void WriteInts(const std::vector<IntItem>& items, const IntPlan& plan, BitWriter* w) {
  w->Write(static_cast<uint64_t>(plan.order), 2);
  w->WriteBit(plan.dense);
  w->Write(static_cast<uint64_t>(plan.width), 7);
  if (plan.order == 0) w->WriteVar(ZigZag(static_cast<int64_t>(plan.base)));
  for (size_t i = 0; i < items.size();) {
    const IntItem& item = items[i];
    if (item.escaped) {
      w->Write(0b111, 3);
      w->Write(item.raw, 64);
      ++i;
    } else if (item.code == 0) {
      uint64_t run = 0;
      while (i < items.size() && !items[i].escaped && items[i].code == 0) ++run, ++i;
      plan.dense ? w->Write(0b10, 2) : w->WriteBit(false);
      w->WriteGamma(run);
    } else if (BitLength(item.code) <= plan.width) {
      plan.dense ? w->WriteBit(false) : w->Write(0b10, 2);
      w->Write(item.code, plan.width);
      ++i;
    } else {
      w->Write(0b110, 3);
      w->WriteVar(item.code);
      ++i;
    }
  }
}

// Decodes `n` items; for escaped ones `escaped_out[i]` is set and `raw_out[i]` holds the bits.
bool ReadInts(BitReader* r, size_t n, std::vector<int64_t>* xs, std::vector<uint64_t>* raw_out,
              std::vector<uint8_t>* escaped_out) {
  const int order = static_cast<int>(r->Read(2));
  const bool dense = r->ReadBit();
  const int width = static_cast<int>(r->Read(7));
  if (order > 2 || width > 64) return false;
  const uint64_t base = order == 0 ? static_cast<uint64_t>(UnZigZag(r->ReadVar())) : 0;
  uint64_t last = 0, last_delta = 0;
  auto push = [&](uint64_t code) {
    const uint64_t x = Predict(order, base, last, last_delta) + FromCode(order, code);
    last_delta = x - last;
    last = x;
    xs->push_back(static_cast<int64_t>(x));
    if (escaped_out) escaped_out->push_back(0), raw_out->push_back(0);
  };
  auto read_run = [&]() {
    const uint64_t run = r->ReadGamma();
    if (run > n - xs->size()) return false;
    for (uint64_t k = 0; k < run; ++k) push(0);
    return true;
  };
  while (xs->size() < n) {
    if (r->overrun()) return false;
    if (!r->ReadBit()) {  // 0: run (sparse) or packed (dense)
      if (dense)
        push(r->Read(width));
      else if (!read_run())
        return false;
    } else if (!r->ReadBit()) {  // 10: packed (sparse) or run (dense)
      if (!dense)
        push(r->Read(width));
      else if (!read_run())
        return false;
    } else if (!r->ReadBit()) {
      push(r->ReadVar());
    } else {
      if (!escaped_out) return false;  // timestamps have no escapes
      xs->push_back(0);
      escaped_out->push_back(1);
      raw_out->push_back(r->Read(64));
    }
  }
  return !r->overrun();
}

// ---- Scaled-integer detection. ----

// The smallest decimal scale at which every non-escaped value is an exact integer multiple of
// 10^-s below 2^53; -1 if there is none.
int FindScale(std::span<const Sample> samples) {
  for (int s = 0; s <= kMaxScale; ++s) {
    bool ok = true;
    for (const Sample& smp : samples) {
      if (IsEscaped(smp.v)) continue;
      const double x = smp.v * kPow10[static_cast<size_t>(s)];
      if (!(std::fabs(x) < kMaxExactInt)) return -1;  // larger scales only grow |x|
      const double k = std::nearbyint(x);
      if (k / kPow10[static_cast<size_t>(s)] != smp.v) {
        ok = false;
        break;
      }
    }
    if (ok) return s;
  }
  return -1;
}

// ---- Gorilla XOR values. ----
// First value: 64 raw bits. Then per value, x = bits XOR previous bits:
//   0                               x == 0
//   10 + (64-lead-trail) bits       x fits in the previous window (lead, trail)
//   11 + 5b lead + 6b len + len bits  a new window; lead capped at 31, len 64 written as 0
void WriteXorValues(std::span<const Sample> samples, BitWriter* w) {
  uint64_t prev = 0;
  int lead = -1, trail = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    const uint64_t bits = Bits(samples[i].v);
    if (i == 0) {
      w->Write(bits, 64);
      prev = bits;
      continue;
    }
    const uint64_t x = bits ^ prev;
    prev = bits;
    if (x == 0) {
      w->WriteBit(false);
      continue;
    }
    int l = __builtin_clzll(x);
    const int t = __builtin_ctzll(x);
    if (l > 31) l = 31;
    if (lead >= 0 && l >= lead && t >= trail) {
      w->Write(0b10, 2);
      w->Write(x >> trail, 64 - lead - trail);
    } else {
      lead = l;
      trail = t;
      const int len = 64 - lead - trail;
      w->Write(0b11, 2);
      w->Write(static_cast<uint64_t>(lead), 5);
      w->Write(static_cast<uint64_t>(len & 63), 6);
      w->Write(x >> trail, len);
    }
  }
}

bool ReadXorValues(BitReader* r, size_t n, std::vector<Sample>* out, size_t first) {
  uint64_t prev = 0;
  int lead = -1, trail = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i == 0) {
      prev = r->Read(64);
    } else if (r->ReadBit()) {
      if (r->ReadBit()) {
        lead = static_cast<int>(r->Read(5));
        int len = static_cast<int>(r->Read(6));
        if (len == 0) len = 64;
        if (lead + len > 64) return false;
        trail = 64 - lead - len;
      } else if (lead < 0) {
        return false;
      }
      prev ^= r->Read(64 - lead - trail) << trail;
    }
    (*out)[first + i].v = FromBits(prev);
  }
  return !r->overrun();
}

void WriteTimestamps(std::span<const Sample> samples, BitWriter* w) {
  std::vector<int64_t> ts;
  ts.reserve(samples.size());
  for (const Sample& s : samples) ts.push_back(s.t_ms);
  std::vector<IntItem> items;
  const uint64_t base = Residuals(ts, {}, 2, &items);
  WriteInts(items, PlanWidth(items, 2, base), w);
}

std::string Header(ChunkEncoding enc, size_t n) {
  // Byte 0: encoding; then uvarint sample count; then the bit stream.
  std::string out(1, static_cast<char>(enc));
  PutUvarint(&out, n);
  return out;
}

std::string EncodeScaledInt(std::span<const Sample> samples, int scale) {
  std::vector<int64_t> ks;
  std::vector<uint8_t> escaped;
  ks.reserve(samples.size());
  escaped.reserve(samples.size());
  for (const Sample& s : samples) {
    const bool esc = IsEscaped(s.v);
    escaped.push_back(esc ? 1 : 0);
    ks.push_back(
        esc ? 0 : static_cast<int64_t>(std::nearbyint(s.v * kPow10[static_cast<size_t>(scale)])));
  }
  // Try each predictor order; keep the smallest stream.
  std::vector<IntItem> items[3];
  IntPlan plans[3];
  int best = 0;
  for (int order = 0; order <= 2; ++order) {
    auto& it = items[order];
    const uint64_t base = Residuals(ks, escaped, order, &it);
    for (size_t i = 0; i < samples.size(); ++i)
      if (escaped[i]) it[i].raw = Bits(samples[i].v);
    plans[order] = PlanWidth(it, order, base);
    if (plans[order].bits < plans[best].bits) best = order;
  }

  std::string out = Header(ChunkEncoding::kScaledInt, samples.size());
  BitWriter w(&out);
  WriteTimestamps(samples, &w);
  w.Write(static_cast<uint64_t>(scale), 4);  // values: [4 bits: decimal scale] + integer stream
  WriteInts(items[best], plans[best], &w);
  return out;
}

}  // namespace

std::string EncodeXorChunk(std::span<const Sample> samples) {
  std::string out = Header(ChunkEncoding::kXor, samples.size());
  BitWriter w(&out);
  WriteTimestamps(samples, &w);
  WriteXorValues(samples, &w);
  return out;
}

std::string EncodeChunk(std::span<const Sample> samples) {
  const int scale = FindScale(samples);
  if (scale < 0) return EncodeXorChunk(samples);
  std::string best = EncodeScaledInt(samples, scale);
  size_t escaped = 0;
  for (const Sample& s : samples) escaped += IsEscaped(s.v) ? 1 : 0;
  if (escaped > 0) {  // runs of NaN are cheaper as XOR; try both
    std::string xor_chunk = EncodeXorChunk(samples);
    if (xor_chunk.size() < best.size()) return xor_chunk;
  }
  return best;
}

uint8_t ChunkEncodingOf(std::string_view chunk) {
  return chunk.empty() ? 0 : static_cast<uint8_t>(chunk[0]);
}

Status DecodeChunk(std::string_view chunk, std::vector<Sample>* out) {
  if (chunk.empty()) return Error{"chunk: empty"};
  const auto enc = static_cast<ChunkEncoding>(chunk[0]);
  chunk.remove_prefix(1);
  uint64_t n;
  if (!GetUvarint(&chunk, &n) || n > kMaxChunkSamples) return Error{"chunk: bad sample count"};
  if (enc != ChunkEncoding::kScaledInt && enc != ChunkEncoding::kXor)
    return Error{"chunk: unknown encoding " + std::to_string(static_cast<int>(enc))};
  BitReader r(chunk);
  std::vector<int64_t> ts;
  ts.reserve(n);
  if (!ReadInts(&r, n, &ts, nullptr, nullptr)) return Error{"chunk: truncated timestamps"};
  const size_t first = out->size();
  out->resize(first + n);
  for (size_t i = 0; i < n; ++i) (*out)[first + i].t_ms = ts[i];
  if (enc == ChunkEncoding::kXor) {
    if (!ReadXorValues(&r, n, out, first)) return Error{"chunk: truncated XOR values"};
    return Status::Ok();
  }
  const int scale = static_cast<int>(r.Read(4));
  std::vector<int64_t> ks;
  std::vector<uint64_t> raw;
  std::vector<uint8_t> escaped;
  ks.reserve(n);
  if (!ReadInts(&r, n, &ks, &raw, &escaped)) return Error{"chunk: truncated integer values"};
  for (size_t i = 0; i < n; ++i)
    (*out)[first + i].v = escaped[i]
                              ? FromBits(raw[i])
                              : static_cast<double>(ks[i]) / kPow10[static_cast<size_t>(scale)];
  return Status::Ok();
}

}  // namespace gw::tsdb
