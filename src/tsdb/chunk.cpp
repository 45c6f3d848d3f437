// tsdb/chunk.cpp — the sample codec (format and encodings: docs/tsdb-format.md §1).
// Kept as one piece: each encoding's writer and reader sit side by side so a change to one side
// is seen next to the other; split, the pairs would drift apart.
#include "tsdb/chunk.h"

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <bit>
#include <climits>
#include <cmath>
#include <cstring>

#include "tsdb/coding.h"

namespace gw::tsdb {
namespace {

constexpr uint8_t kFormat2 = kChunkFormat2;
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
// Order 3 ("grid", timestamps of format-2 chunks only): predicts base + i × step, the i-th point
// of a regular grid, and codes x - prediction unsigned (base is the smallest x_i - i × step).
// Jittered scrape times cost the jitter's width instead of the delta-of-delta's (twice as wide).
constexpr int kGridOrder = 3;

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
  uint64_t step = 0;  // order 3 only
  size_t bits = 0;
  bool plain = false;  // format 2: every code in exactly `width` bits, no prefixes
  bool Format2() const { return order == kGridOrder || plain; }
};

// The predictor's state while a stream is written or read; all arithmetic modulo 2^64.
struct Predictor {
  int order;
  uint64_t base, step;
  uint64_t i = 0, last = 0, last_delta = 0;
  uint64_t Next() const {
    return order == 0 ? base : order == 1 ? last : order == 2 ? last + last_delta : base + i * step;
  }
  uint64_t ToCode(uint64_t diff) const {
    return order == 0 || order == kGridOrder ? diff : ZigZag(static_cast<int64_t>(diff));
  }
  uint64_t FromCode(uint64_t code) const {
    return order == 0 || order == kGridOrder ? code : static_cast<uint64_t>(UnZigZag(code));
  }
  void Push(uint64_t x) {
    last_delta = x - last;
    last = x;
    ++i;
  }
};

// Candidate grid steps of a timestamp stream: the median spacing (right across gaps) and the
// mean spacing (right when the jitter is not symmetric around the median).
std::array<uint64_t, 2> GridSteps(std::span<const int64_t> xs) {
  if (xs.size() < 2) return {0, 0};
  std::vector<int64_t> deltas(xs.size() - 1);
  for (size_t i = 1; i < xs.size(); ++i)
    deltas[i - 1] =
        static_cast<int64_t>(static_cast<uint64_t>(xs[i]) - static_cast<uint64_t>(xs[i - 1]));
  auto mid = deltas.begin() + static_cast<std::ptrdiff_t>(deltas.size() / 2);
  std::nth_element(deltas.begin(), mid, deltas.end());
  const uint64_t span = static_cast<uint64_t>(xs.back()) - static_cast<uint64_t>(xs.front());
  const uint64_t n = xs.size() - 1;
  return {static_cast<uint64_t>(*mid), (span + n / 2) / n};
}

// Fills `items` and returns the base (for orders 0 and 3).
uint64_t Residuals(std::span<const int64_t> xs, std::span<const uint8_t> escaped, int order,
                   uint64_t step, std::vector<IntItem>* items) {
  items->clear();
  items->reserve(xs.size());
  int64_t min = INT64_MAX;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!escaped.empty() && escaped[i]) continue;
    const uint64_t off = static_cast<uint64_t>(xs[i]) - (order == kGridOrder ? i * step : 0);
    min = std::min(min, static_cast<int64_t>(off));
  }
  Predictor p{order, static_cast<uint64_t>(min), step};
  for (size_t i = 0; i < xs.size(); ++i) {
    IntItem item;
    if (!escaped.empty() && escaped[i]) {
      item.escaped = true;
      ++p.i;  // as ReadInts does
    } else {
      const auto x = static_cast<uint64_t>(xs[i]);
      item.code = p.ToCode(x - p.Next());
      p.Push(x);
    }
    items->push_back(item);
  }
  return p.base;
}

// Plain streams write their width as kPlainWidth + width in the 7-bit width field (format 1 uses
// 0..64 there).
constexpr int kPlainWidth = 65;
constexpr int kMaxPlain = 127 - kPlainWidth;

// Picks the width and run/packed prefixes (or plain packing) that minimise the stream's size.
IntPlan PlanWidth(const std::vector<IntItem>& items, int order, uint64_t base, uint64_t step = 0) {
  std::array<size_t, 65> hist{};
  auto var_bits = [](uint64_t v) {
    return 7 + static_cast<size_t>(BitLength(ZigZag(static_cast<int64_t>(v))));
  };
  const size_t header_bits = 10 + (order == 0 || order == kGridOrder ? var_bits(base) : 0) +
                             (order == kGridOrder ? var_bits(step) : 0);
  size_t fixed_bits = header_bits;
  size_t runs = 0;
  int max_len = 0;
  bool any_escaped = false;
  for (const IntItem& item : items) {
    any_escaped = any_escaped || item.escaped;
    max_len = std::max(max_len, BitLength(item.code));
  }
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
  IntPlan best{order, false, 0, base, step, SIZE_MAX};
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
      if (total < best.bits) best = {order, dense, w, base, step, total};
    }
    if (long_count == 0) break;  // wider only costs more
  }
  // Plain packing (format 2): no prefixes, so no runs and no escapes; widths up to kMaxPlain.
  // Like the grid, only where it saves 4 bytes: small chunks stay format 1.
  if (!any_escaped && max_len <= kMaxPlain) {
    const size_t plain = header_bits + items.size() * static_cast<size_t>(max_len);
    if (plain + 32 <= best.bits) best = {order, false, max_len, base, step, plain, true};
  }
  return best;
}

void WriteInts(const std::vector<IntItem>& items, const IntPlan& plan, BitWriter* w) {
  w->Write(static_cast<uint64_t>(plan.order), 2);
  w->WriteBit(plan.dense);
  w->Write(static_cast<uint64_t>(plan.plain ? kPlainWidth + plan.width : plan.width), 7);
  if (plan.order == 0 || plan.order == kGridOrder)
    w->WriteVar(ZigZag(static_cast<int64_t>(plan.base)));
  if (plan.order == kGridOrder) w->WriteVar(ZigZag(static_cast<int64_t>(plan.step)));
  if (plan.plain) {
    for (const IntItem& item : items) w->Write(item.code, plan.width);
    return;
  }
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

// Decodes `n` items, in order: emit(i, x) for the i-th integer, escape(i, raw) for an escaped
// value's bits (kEscapes: values; timestamps have no escapes and fail on one). `format2`: plain
// packing and the grid predictor are allowed (the grid for timestamps only: callers pass
// `max_order` 3 there, 2 for values). The sinks write straight into their destination, so a
// decode allocates nothing per sample.
struct NoEscapes {
  void operator()(size_t, uint64_t) const {}
};
template <bool kEscapes, typename Emit, typename Escape = NoEscapes>
bool ReadInts(BitReader* r, size_t n, bool format2, int max_order, Emit emit, Escape escape = {}) {
  const int order = static_cast<int>(r->Read(2));
  const bool dense = r->ReadBit();
  int width = static_cast<int>(r->Read(7));
  const bool plain = width >= kPlainWidth;
  if (plain) width -= kPlainWidth;
  if (order > (format2 ? max_order : 2) || width > 64 || (plain && !format2)) return false;
  const uint64_t base =
      order == 0 || order == kGridOrder ? static_cast<uint64_t>(UnZigZag(r->ReadVar())) : 0;
  const uint64_t step = order == kGridOrder ? static_cast<uint64_t>(UnZigZag(r->ReadVar())) : 0;
  Predictor p{order, base, step};
  size_t i = 0;
  auto push = [&](uint64_t code) {
    const uint64_t x = p.Next() + p.FromCode(code);
    p.Push(x);
    emit(i++, x);
  };
  if (plain) {
    if (r->overrun()) return false;
    for (size_t k = 0; k < n; ++k) push(r->Read(width));
    return !r->overrun();
  }
  auto read_run = [&]() {
    const uint64_t run = r->ReadGamma();
    if (run > n - i) return false;
    for (uint64_t k = 0; k < run; ++k) push(0);
    return true;
  };
  while (i < n) {
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
      if constexpr (!kEscapes) {
        return false;
      } else {
        escape(i++, r->Read(64));
        ++p.i;  // the grid counts every sample; the other predictors skip escapes
      }
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

bool ReadXorValues(BitReader* r, size_t n, const int64_t* ts, std::vector<Sample>* out) {
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
    out->push_back({ts[i], FromBits(prev)});
  }
  return !r->overrun();
}

// ---- Timestamps: one stream per chunk, planned once and written into every candidate. ----
struct IntStream {
  std::vector<IntItem> items;
  IntPlan plan;
};

// Delta-of-delta (order 2) or, when smaller, the grid (order 3: the chunk becomes format 2).
IntStream PlanTimestamps(std::span<const Sample> samples) {
  std::vector<int64_t> ts;
  ts.reserve(samples.size());
  for (const Sample& s : samples) ts.push_back(s.t_ms);
  IntStream out;
  out.plan = PlanWidth(out.items, 2, Residuals(ts, {}, 2, 0, &out.items));
  // The grid only where it saves at least 4 bytes: regular series (a zero-run either way) stay
  // byte-for-byte format 1, which older builds read.
  if (ts.size() > 2) {
    const size_t dod_bits = out.plan.bits;
    for (uint64_t step : GridSteps(ts)) {
      IntStream grid;
      grid.plan =
          PlanWidth(grid.items, kGridOrder, Residuals(ts, {}, kGridOrder, step, &grid.items), step);
      if (grid.plan.bits + 32 <= dod_bits && grid.plan.bits < out.plan.bits) out = std::move(grid);
    }
  }
  return out;
}

// Tries predictor orders 0-2 on integers (escaped ones carry their raw bits) and keeps the
// smallest stream.
IntStream BestInts(std::span<const int64_t> xs, std::span<const uint8_t> escaped,
                   std::span<const Sample> samples) {
  IntStream best, cand;
  best.plan.bits = SIZE_MAX;
  for (int order = 0; order <= 2; ++order) {
    const uint64_t base = Residuals(xs, escaped, order, 0, &cand.items);
    for (size_t i = 0; i < escaped.size(); ++i)
      if (escaped[i]) cand.items[i].raw = Bits(samples[i].v);
    cand.plan = PlanWidth(cand.items, order, base);
    if (cand.plan.bits < best.plan.bits) std::swap(best, cand);
  }
  return best;
}

std::string Header(ChunkEncoding enc, bool format2, size_t n) {
  // Byte 0: encoding, | kFormat2 when a stream uses the grid or plain packing; then uvarint
  // sample count; then the bit stream.
  const auto byte = static_cast<uint8_t>(static_cast<uint8_t>(enc) | (format2 ? kFormat2 : 0));
  std::string out(1, static_cast<char>(byte));
  PutUvarint(&out, n);
  return out;
}

std::string EncodeScaledInt(std::span<const Sample> samples, int scale, const IntStream& ts) {
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
  const IntStream values = BestInts(ks, escaped, samples);
  std::string out =
      Header(ChunkEncoding::kScaledInt, ts.plan.Format2() || values.plan.Format2(), samples.size());
  BitWriter w(&out);
  WriteInts(ts.items, ts.plan, &w);
  w.Write(static_cast<uint64_t>(scale), 4);  // values: [4 bits: decimal scale] + integer stream
  WriteInts(values.items, values.plan, &w);
  return out;
}

std::string EncodeXor(std::span<const Sample> samples, const IntStream& ts) {
  std::string out = Header(ChunkEncoding::kXor, ts.plan.Format2(), samples.size());
  BitWriter w(&out);
  WriteInts(ts.items, ts.plan, &w);
  WriteXorValues(samples, &w);
  return out;
}

// ---- Near-decimal values (encoding 4). ----
// Values computed in floating point (ratios, per-second rates, sums) are often a few ULPs away
// from a short decimal: 0.5295499999999999 is 0.52955 less one ULP. Such a value is coded as the
// integer k of the decimal k × 10^-s plus its exact distance in ULPs, c = bits(v) - bits(k / 10^s)
// (modulo 2^64, so every value round-trips bit-exactly whatever c is).
// k and c of `v` at scale `s`; false when |v| × 10^s is not below 2^53 (v is then escaped).
bool ToNearDecimal(double v, int s, int64_t* k, uint64_t* c) {
  const double x = v * kPow10[static_cast<size_t>(s)];
  if (!(std::fabs(x) < kMaxExactInt)) return false;
  *k = static_cast<int64_t>(std::nearbyint(x));
  *c = Bits(v) - Bits(static_cast<double>(*k) / kPow10[static_cast<size_t>(s)]);
  return true;
}

// The candidate scales: for every scale, the bits of the k deltas and of the offsets are
// estimated on up to 256 evenly spaced pairs of neighbouring values; the two cheapest scales
// are then encoded for real. (A larger scale makes k wider and the offsets narrower; where the
// offsets reach 0 the decimal is exact.)
// `budget_bits`: the size of the alternative (XOR); when even the cheapest estimate, scaled to
// the whole chunk, does not beat it, no scale is returned (noise: spares the encoding).
std::vector<int> NearScales(std::span<const Sample> samples, size_t budget_bits) {
  if (samples.size() < 2) return {};
  const size_t pairs = std::min<size_t>(256, samples.size() - 1);
  const size_t stride = (samples.size() - 1) / pairs;
  std::array<size_t, kMaxScale + 1> cost{};
  for (int s = 0; s <= kMaxScale; ++s) {
    size_t bits = 0;
    for (size_t p = 0; p < pairs; ++p) {
      const double a = samples[p * stride].v, b = samples[p * stride + 1].v;
      int64_t ka, kb;
      uint64_t ca, cb;
      if (IsEscaped(a) || IsEscaped(b)) continue;
      if (!ToNearDecimal(a, s, &ka, &ca) || !ToNearDecimal(b, s, &kb, &cb)) {
        bits += 67;
        continue;
      }
      bits += static_cast<size_t>(BitLength(ZigZag(static_cast<int64_t>(
                                      static_cast<uint64_t>(kb) - static_cast<uint64_t>(ka)))) +
                                  BitLength(ZigZag(static_cast<int64_t>(cb))));
    }
    cost[static_cast<size_t>(s)] = bits;
  }
  std::vector<int> scales(kMaxScale + 1);
  for (int s = 0; s <= kMaxScale; ++s) scales[static_cast<size_t>(s)] = s;
  std::stable_sort(scales.begin(), scales.end(), [&](int x, int y) {
    return cost[static_cast<size_t>(x)] < cost[static_cast<size_t>(y)];
  });
  const double per_pair =
      static_cast<double>(cost[static_cast<size_t>(scales[0])]) / static_cast<double>(pairs);
  if (per_pair * static_cast<double>(samples.size()) >= static_cast<double>(budget_bits)) return {};
  scales.resize(2);
  return scales;
}

// The smallest near-decimal chunk over the candidate scales; empty if there is none.
std::string EncodeNearDecimal(std::span<const Sample> samples, const IntStream& ts,
                              size_t budget_bytes) {
  const std::vector<int> scales = NearScales(samples, 8 * budget_bytes);
  std::vector<int64_t> ks(samples.size()), cs;
  std::vector<uint8_t> escaped(samples.size());
  IntStream best_k, best_c;
  int best_scale = -1;
  size_t best_bits = SIZE_MAX;
  for (int s : scales) {
    cs.clear();
    for (size_t i = 0; i < samples.size(); ++i) {
      uint64_t c = 0;
      escaped[i] = IsEscaped(samples[i].v) || !ToNearDecimal(samples[i].v, s, &ks[i], &c);
      if (escaped[i])
        ks[i] = 0;
      else
        cs.push_back(static_cast<int64_t>(c));
    }
    IntStream k_stream = BestInts(ks, escaped, samples);
    IntStream c_stream = BestInts(cs, {}, {});
    if (k_stream.plan.bits + c_stream.plan.bits < best_bits) {
      best_bits = k_stream.plan.bits + c_stream.plan.bits;
      best_k = std::move(k_stream);
      best_c = std::move(c_stream);
      best_scale = s;
    }
  }
  if (best_scale < 0) return {};
  std::string out =
      Header(ChunkEncoding::kNearDecimal,
             ts.plan.Format2() || best_k.plan.Format2() || best_c.plan.Format2(), samples.size());
  BitWriter w(&out);
  WriteInts(ts.items, ts.plan, &w);
  w.Write(static_cast<uint64_t>(best_scale), 4);
  WriteInts(best_k.items, best_k.plan, &w);
  WriteInts(best_c.items, best_c.plan, &w);
  return out;
}

}  // namespace

std::string EncodeXorChunk(std::span<const Sample> samples) {
  return EncodeXor(samples, PlanTimestamps(samples));
}

std::string EncodeChunk(std::span<const Sample> samples) {
  const IntStream ts = PlanTimestamps(samples);
  const int scale = FindScale(samples);
  if (scale >= 0) {
    std::string best = EncodeScaledInt(samples, scale, ts);
    size_t escaped = 0;
    for (const Sample& s : samples) escaped += IsEscaped(s.v) ? 1 : 0;
    if (escaped > 0) {  // runs of NaN are cheaper as XOR; try both
      std::string xor_chunk = EncodeXor(samples, ts);
      if (xor_chunk.size() < best.size()) return xor_chunk;
    }
    return best;
  }
  std::string best = EncodeXor(samples, ts);
  std::string near = EncodeNearDecimal(samples, ts, best.size());
  return !near.empty() && near.size() < best.size() ? near : best;
}

void PrefaultForWrite(void* begin, size_t bytes) {
  // Below 16 KiB (a few pages) the faults cost about what the call does.
  constexpr size_t kMin = size_t{16} << 10;
  if (bytes < kMin) return;
  constexpr uintptr_t kPage = 4096;  // a multiple of every page size Linux uses on x86/arm64
  uintptr_t lo = reinterpret_cast<uintptr_t>(begin);
  const uintptr_t hi = (lo + bytes) & ~(kPage - 1);
  lo = (lo + kPage - 1) & ~(kPage - 1);
  // Best effort: on an older kernel (before 5.14) or any error the pages fault in as before.
  if (hi > lo) (void)madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_POPULATE_WRITE);
}

void ReserveForDecode(std::vector<Sample>* out, size_t n) {
  const size_t first = out->size();
  if (out->capacity() < first + n) out->reserve(std::max(first + n, 2 * out->capacity()));
  PrefaultForWrite(out->data() + first, n * sizeof(Sample));
}

uint8_t ChunkEncodingOf(std::string_view chunk) {
  return chunk.empty() ? 0 : static_cast<uint8_t>(chunk[0]) & ~kFormat2;
}

Status DecodeChunk(std::string_view chunk, std::vector<Sample>* out) {
  if (chunk.empty()) return Error{"chunk: empty"};
  const auto byte = static_cast<uint8_t>(chunk[0]);
  const auto enc = static_cast<ChunkEncoding>(byte & ~kFormat2);
  chunk.remove_prefix(1);
  uint64_t n;
  if (!GetUvarint(&chunk, &n) || n > kMaxChunkSamples) return Error{"chunk: bad sample count"};
  if (enc != ChunkEncoding::kScaledInt && enc != ChunkEncoding::kXor &&
      enc != ChunkEncoding::kNearDecimal)
    return Error{"chunk: unknown encoding " + std::to_string(static_cast<int>(byte))};
  BitReader r(chunk);
  const bool format2 = (byte & kFormat2) != 0;
  // Timestamps go to a per-thread scratch buffer (warm in the cache after the first chunk); each
  // sample is then appended whole, so `out`'s fresh memory is written once (no zeroing pass).
  thread_local std::vector<int64_t> ts_buf;
  ts_buf.resize(n);
  int64_t* const ts = ts_buf.data();
  if (!ReadInts<false>(&r, n, format2, kGridOrder,
                       [ts](size_t i, uint64_t x) { ts[i] = static_cast<int64_t>(x); }))
    return Error{"chunk: truncated timestamps"};
  const size_t first = out->size();
  ReserveForDecode(out, n);
  if (enc == ChunkEncoding::kXor) {
    if (!ReadXorValues(&r, n, ts, out)) return Error{"chunk: truncated XOR values"};
    return Status::Ok();
  }
  const int scale = static_cast<int>(r.Read(4));
  const double pow10 = kPow10[static_cast<size_t>(scale)];
  auto escape = [ts, out](size_t i, uint64_t raw) { out->push_back({ts[i], FromBits(raw)}); };
  if (enc == ChunkEncoding::kScaledInt) {
    auto emit = [ts, out, pow10](size_t i, uint64_t k) {
      out->push_back({ts[i], static_cast<double>(static_cast<int64_t>(k)) / pow10});
    };
    if (!ReadInts<true>(&r, n, format2, 2, emit, escape))
      return Error{"chunk: truncated integer values"};
    return Status::Ok();
  }
  // Near-decimal: the k's wait in the values' bits until their ULP offsets are read; escaped
  // values (rare) are listed so the offsets can skip them.
  std::vector<uint32_t> escaped;
  auto keep_k = [ts, out](size_t i, uint64_t k) { out->push_back({ts[i], FromBits(k)}); };
  auto escape_near = [&escaped, &escape](size_t i, uint64_t raw) {
    escape(i, raw);
    escaped.push_back(static_cast<uint32_t>(i));
  };
  if (!ReadInts<true>(&r, n, format2, 2, keep_k, escape_near))
    return Error{"chunk: truncated integer values"};
  Sample* const s = out->data() + first;
  size_t i = 0, e = 0;
  auto add_offset = [&](size_t, uint64_t c) {
    while (e < escaped.size() && escaped[e] == i) ++i, ++e;
    Sample& smp = s[i++];
    const auto k = static_cast<int64_t>(Bits(smp.v));
    smp.v = FromBits(Bits(static_cast<double>(k) / pow10) + c);
  };
  if (!ReadInts<false>(&r, n - escaped.size(), format2, 2, add_offset))
    return Error{"chunk: truncated ULP offsets"};
  return Status::Ok();
}

}  // namespace gw::tsdb
