#include "tsdb/chunk.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <random>
#include <string_view>
#include <utility>

#include "tsdb/block.h"

namespace gw::tsdb {
namespace {

constexpr int64_t kStart = 1'764'000'000'000;  // ms

void ExpectBitExact(const std::vector<Sample>& in) {
  const std::string chunk = EncodeChunk(in);
  std::vector<Sample> out;
  ASSERT_TRUE(DecodeChunk(chunk, &out).ok());
  ASSERT_EQ(out.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_EQ(out[i].t_ms, in[i].t_ms) << i;
    ASSERT_EQ(std::bit_cast<uint64_t>(out[i].v), std::bit_cast<uint64_t>(in[i].v))
        << i << " " << in[i].v << " vs " << out[i].v;
  }
  // Decoding appends: a second decode into the same vector leaves the first one intact.
  ASSERT_TRUE(DecodeChunk(chunk, &out).ok());
  ASSERT_EQ(out.size(), 2 * in.size());
  for (size_t i = 0; i < 2 * in.size(); ++i) {
    ASSERT_EQ(out[i].t_ms, in[i % in.size()].t_ms) << i;
    ASSERT_EQ(std::bit_cast<uint64_t>(out[i].v), std::bit_cast<uint64_t>(in[i % in.size()].v)) << i;
  }
  std::vector<Sample> xor_out;
  ASSERT_TRUE(DecodeChunk(EncodeXorChunk(in), &xor_out).ok());
  ASSERT_EQ(xor_out.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint64_t>(xor_out[i].v), std::bit_cast<uint64_t>(in[i].v)) << i;
}

TEST(Chunk, EmptyAndSingle) {
  ExpectBitExact({});
  ExpectBitExact({{kStart, 42}});
  ExpectBitExact({{-5, StaleNaN()}});
}

TEST(Chunk, SpecialValuesRoundTripBitExactly) {
  const double nan_payload = std::bit_cast<double>(0x7ff8dead0000beefULL);
  std::vector<Sample> s;
  const double specials[] = {0.0,
                             -0.0,
                             std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity(),
                             std::numeric_limits<double>::quiet_NaN(),
                             StaleNaN(),
                             nan_payload,
                             1e300,
                             -1e-300,
                             std::numeric_limits<double>::denorm_min(),
                             9007199254740993.0,
                             0.1,
                             690.634};
  for (int rep = 0; rep < 3; ++rep)
    for (double v : specials) s.push_back({kStart + static_cast<int64_t>(s.size()) * 1000, v});
  ExpectBitExact(s);
  // Integers with a few escaped values stay in the integer encoding.
  std::vector<Sample> ints;
  for (int i = 0; i < 200; ++i)
    ints.push_back({kStart + i * 1000, static_cast<double>(60 + i % 3)});
  ints[50].v = StaleNaN();
  ints[51].v = -0.0;
  ints[52].v = std::numeric_limits<double>::infinity();
  ExpectBitExact(ints);
  EXPECT_EQ(ChunkEncodingOf(EncodeChunk(ints)), static_cast<uint8_t>(ChunkEncoding::kScaledInt));
}

TEST(Chunk, RandomRoundTrips) {
  std::mt19937_64 rng(7);
  for (int iter = 0; iter < 400; ++iter) {
    const size_t n = rng() % 300;
    std::vector<Sample> s;
    int64_t t = static_cast<int64_t>(rng()) >> (rng() % 64);
    const int kind = static_cast<int>(rng() % 5);
    for (size_t i = 0; i < n; ++i) {
      // Irregular steps, sometimes huge; timestamps may even wrap: the codec is arithmetic mod
      // 2^64.
      const uint64_t step_kind = rng() % 10;
      t = static_cast<int64_t>(static_cast<uint64_t>(t) + (step_kind < 6   ? 1000
                                                           : step_kind < 9 ? rng() % 5000
                                                                           : rng()));
      double v = 0;
      switch (kind) {
        case 0:
          v = std::bit_cast<double>(rng());
          break;  // anything, NaNs included
        case 1:
          v = static_cast<double>(static_cast<int64_t>(rng() % 2000) - 1000);
          break;
        case 2:
          v = static_cast<double>(rng() % 100000) / 1000.0;
          break;
        case 3:
          v = (rng() % 7 == 0) ? StaleNaN() : static_cast<double>(rng() % 5);
          break;
        default:
          v = static_cast<double>(static_cast<int64_t>(rng())) * 1e10;
          break;
      }
      s.push_back({t, v});
    }
    ExpectBitExact(s);
  }
}

TEST(Chunk, CorruptChunksFailCleanly) {
  std::vector<Sample> s;
  for (int i = 0; i < 120; ++i) s.push_back({kStart + i * 1000, 300000.0 + i * 17 % 900});
  const std::string good = EncodeChunk(s);
  std::mt19937 rng(3);
  for (size_t cut = 0; cut < good.size(); ++cut) {
    std::vector<Sample> out;
    EXPECT_FALSE(DecodeChunk(good.substr(0, cut), &out).ok()) << cut;
  }
  for (int i = 0; i < 2000; ++i) {  // random bit flips: must not crash or over-read
    std::string bad = good;
    bad[rng() % bad.size()] ^= static_cast<char>(1 << (rng() % 8));
    std::vector<Sample> out;
    (void)DecodeChunk(bad, &out);
  }
}

// ---- Format 1: chunks as the codec before near-decimal values and grid timestamps wrote them.
// ----

// The inputs of the format-1 fixtures below (deterministic, no libm).
std::vector<std::vector<Sample>> FixtureInputs() {
  constexpr int64_t t0 = 1'764'000'000'000;
  std::vector<std::vector<Sample>> sets(5);
  for (int i = 0; i < 40; ++i) {  // integers with escapes, one late sample
    double v = 60 + (i * 7) % 5;
    if (i == 10) v = StaleNaN();
    if (i == 11) v = -0.0;
    if (i == 12) v = std::bit_cast<double>(0x7ff8dead0000beefULL);
    sets[0].push_back({t0 + i * 1000 + (i == 20 ? 3 : 0), v});
  }
  for (int i = 0; i < 50; ++i)  // two decimals, a walk
    sets[1].push_back({t0 + i * 15000, static_cast<double>(1234 + (i * 37) % 11 - 5) / 100});
  for (int i = 0; i < 30; ++i)  // full-precision floats: XOR
    sets[2].push_back({t0 + i * 1000, 1.0 / (i + 3)});
  for (int i = 0; i < 60; ++i)  // a counter with a reset, irregular times
    sets[3].push_back(
        {t0 + i * 997 + (i % 7) * 13, static_cast<double>(i < 35 ? i * 250 : (i - 35) * 125)});
  for (int i = 0; i < 25; ++i)  // flat run then steps of 0.125
    sets[4].push_back({t0 + i * 1000, i < 15 ? 40.0 : 40.0 + (i - 14) * 0.125});
  return sets;
}

// EncodeChunk (5) then EncodeXorChunk (5) of FixtureInputs(), written by the format-1 encoder
// (commit ce3e820) and kept as hex: today's decoder must read them bit for bit.
const char* const kFormat1Chunks[] = {
    "0128a132acd5b4bf40032acd5b4bf20be09196682204187f14904e9209f7ff0000000000002f000000000000"
    "0001dffe37ab40002fbbc4e9209d2413a48274904e920980",
    "0132aa99ab697e8003356d2f5acf81811083266a91012a44650cf4880952232867a4404a9119433d22025488"
    "ca19e91012a4",
    "021eaa99ab697e8003356d2fc82f8387faaaaaaaaaaaaabb73aaaaaaaaaaaabaf4ccccccccccccdd9a666666"
    "6666667ce38e38e38e38f124924924924969d7e38e38e38e38fb72bd0bd0bd0bd0f665db891db891dbeeca10"
    "8421084213db9ee46e46e46e418fc0fc0fc0fc34d60d60d60d60e2222222222223af4f0f0f0f0f0f0f84dfb2"
    "04dfb206341a0d068341a86d63e4a706d660fc0fc0fc0fc19e48aed87922be0838c96ab1b11dd962f3a18bce"
    "86325f6825f6825db73f97b4a83e5edf147bfae10147c85fd017f405fd4fba77cd4d7c1216d50e016d50f195"
    "301953019584210842108420",
    "013ca232acd5b4bf40032acd5b4bf206e2ad56d156ab68ab55b455aada2ad56d156ab68ab55b455aada4107b"
    "01f4021a22dd0d8817",
    "0119aa99ab697e8003356d2fc82f82e748a71009c3fc3400fa8480",
    "0228a132acd5b4bf40032acd5b4bf20be091966822809c000000000001bc1eb17fac6f60a0e0afaf60b17bfd"
    "fc00000000001c1ffff8000000000001c007ffc6f5680005f77c7f6cbd5a00017ddf00008000000000004000"
    "300000000000100008000000000004003e000000000001000f400000000000400020000000000010000c0000"
    "000000040002000000000001000f8000000000004003d0000000000010000800000000000400030000000000"
    "0100008000000000004003e000000000001000f400000000000400020000000000010000c000000000004000"
    "2000000000001000f8000000000004003d000000000001000080000000000040003000000000001000080000"
    "00000004003e000000000001000f400000000000400020000000000000",
    "0232aa99ab697e8003356d2f5acf81820144a3d70a3d70a72bbc8f23c8f23d958561585614a4e93a4e93a7b7"
    "8de378de34e37ec9b26c9b26dae1b86e1b86e4b62d8b62d8b2e93a4e93a4f764791e4791ec8dc370dc370e4b"
    "0ac2b0ac2b2791e4791e47b15856158561492749d2749d3cde378de378d2d9364d9364db5c370dc370dc96c5"
    "b16c5b165d2749d2749eec8f23c8f23d91b86e1b86e1c9615856158564f23c8f23c8f62b0ac2b0ac2924e93a"
    "4e93a79bc6f1bc6f1a5b26c9b26c9b6b86e1b86e1b92d8b62d8b62cba4e93a4e93dd91e4791e47b2370dc370"
    "dc392c2b0ac2b0ac9e4791e4791ec56158561585249d2749d274f378de378de34b64d9364d936d70dc370dc3"
    "725b16c5b16c59749d2749d27bb23c8f23c8f646e1b86e1b8725856158561593c8f23c8f23d8ac2b0ac2b0a4"
    "93a4e93a4e9e6f1bc6f1bc696c9b26c9b26d",
    "021eaa99ab697e8003356d2fc82f8387faaaaaaaaaaaaabb73aaaaaaaaaaaabaf4ccccccccccccdd9a666666"
    "6666667ce38e38e38e38f124924924924969d7e38e38e38e38fb72bd0bd0bd0bd0f665db891db891dbeeca10"
    "8421084213db9ee46e46e46e418fc0fc0fc0fc34d60d60d60d60e2222222222223af4f0f0f0f0f0f0f84dfb2"
    "04dfb206341a0d068341a86d63e4a706d660fc0fc0fc0fc19e48aed87922be0838c96ab1b11dd962f3a18bce"
    "86325f6825f6825db73f97b4a83e5edf147bfae10147c85fd017f405fd4fba77cd4d7c1216d50e016d50f195"
    "301953019584210842108420",
    "023ca232acd5b4bf40032acd5b4bf206e2ad56d156ab68ab55b455aada2ad56d156ab68ab55b455aada40000"
    "00000000000185180dec0040d067c1c107acae6627e61620f519f6b043c37b041c70b047c30b041eb33fb608"
    "786360838e160ff86160839e3608786760838e1608f8616083d27ff5d8043e15a0604da02fa0801800800c18"
    "800418807e6480027c80061480020c800f6a80010e80037a80010680070a80011e80030a800106801fed8000"
    "8780018d8000838003858000ff800185800083",
    "0219aa99ab697e8003356d2fc82f82e80880000000000000007307c82e7887e338f013e18c"};

std::string FromHex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  return out;
}

TEST(Chunk, Format1ChunksStillDecode) {
  const auto inputs = FixtureInputs();
  for (size_t f = 0; f < std::size(kFormat1Chunks); ++f) {
    const std::vector<Sample>& in = inputs[f % inputs.size()];
    std::vector<Sample> out;
    ASSERT_TRUE(DecodeChunk(FromHex(kFormat1Chunks[f]), &out).ok()) << f;
    ASSERT_EQ(out.size(), in.size()) << f;
    for (size_t i = 0; i < in.size(); ++i) {
      EXPECT_EQ(out[i].t_ms, in[i].t_ms) << f << " " << i;
      EXPECT_EQ(std::bit_cast<uint64_t>(out[i].v), std::bit_cast<uint64_t>(in[i].v))
          << f << " " << i;
    }
  }
  // Where format 2 saves less than 4 bytes the chunk is still written byte for byte as format 1
  // did (older builds read it); where it is used, it is smaller.
  EXPECT_EQ(EncodeChunk(inputs[4]), FromHex(kFormat1Chunks[4]));
  for (size_t f = 0; f < inputs.size(); ++f) {
    const std::string now = EncodeChunk(inputs[f]);
    if ((static_cast<uint8_t>(now[0]) & kChunkFormat2) != 0)
      EXPECT_LE(now.size() + 4, FromHex(kFormat1Chunks[f]).size()) << f;
    else
      EXPECT_LE(now.size(), FromHex(kFormat1Chunks[f]).size()) << f;
  }
}

// ---- Size on NVML-like series: 1 s spacing, 240-sample chunks, 6 h per series. ----

struct SizeResult {
  double ours, xor_baseline;
};

SizeResult BytesPerSample(const std::function<double(int, std::mt19937_64&)>& gen,
                          int64_t jitter_ms = 0) {
  std::mt19937_64 rng(11);
  const int total = 6 * 3600, per_chunk = 240;
  size_t ours = 0, xor_bytes = 0;
  for (int c = 0; c < total / per_chunk; ++c) {
    std::vector<Sample> s;
    for (int i = c * per_chunk; i < (c + 1) * per_chunk; ++i) {
      const int64_t jitter =
          jitter_ms ? static_cast<int64_t>(rng() % (2 * jitter_ms + 1)) - jitter_ms : 0;
      s.push_back({kStart + i * 1000LL + jitter, gen(i, rng)});
    }
    ours += EncodeChunk(s).size();
    xor_bytes += EncodeXorChunk(s).size();
  }
  return {static_cast<double>(ours) / total, static_cast<double>(xor_bytes) / total};
}

TEST(Chunk, SizeOnGpuTelemetryBeatsXor) {
  struct Case {
    const char* name;
    std::function<double(int, std::mt19937_64&)> gen;
    int64_t jitter_ms;
    double max_bytes;  // what this codec must stay under (a regression guard)
  };
  double temp = 60, energy_mj = 1e9;
  const Case cases[] = {
      {"constant", [](int, auto&) { return 1.0; }, 0, 0.10},
      {"temperature_celsius",
       [&](int, auto& r) {
         if (r() % 10 == 0) temp += (r() % 2) ? 1 : -1;
         return temp;
       },
       0, 0.24},
      {"power_mw_noisy",
       [](int i, auto& r) {
         return std::round(300000 + 50000 * std::sin(i / 600.0) + static_cast<double>(r() % 4000));
       },
       0, 1.95},
      {"energy_mj_counter",
       [&](int, auto& r) {
         energy_mj += 300000 + static_cast<double>(r() % 4000);
         return energy_mj;
       },
       0, 1.95},
      {"utilization_percent", [](int, auto& r) { return static_cast<double>(r() % 101); }, 0, 1.15},
      {"ratio_0.01_steps",
       [](int i, auto& r) { return static_cast<double>((i / 30 + r() % 3) % 101) / 100.0; }, 0,
       0.6},
      {"power_watts_3_decimals",
       [](int, auto& r) { return static_cast<double>(600000 + r() % 100000) / 1000.0; }, 0, 2.45},
      {"constant_jitter_5ms", [](int, auto&) { return 1.0; }, 5, 0.95},
  };
  for (const Case& c : cases) {
    const SizeResult r = BytesPerSample(c.gen, c.jitter_ms);
    std::printf("%-24s ours %.3f B/sample   xor %.3f B/sample\n", c.name, r.ours, r.xor_baseline);
    EXPECT_LT(r.ours, c.max_bytes) << c.name;
    EXPECT_LE(r.ours, r.xor_baseline) << c.name;
  }
}

// ---- Near-decimal values (encoding 4) and grid timestamps (format 2). ----

double Ulps(double v, int64_t n) {  // v moved by n ULPs (v > 0)
  return std::bit_cast<double>(std::bit_cast<uint64_t>(v) + static_cast<uint64_t>(n));
}

TEST(Chunk, NearDecimalValuesAreSmallAndExact) {
  // Ratios of large counters: a short decimal give or take a growing number of ULPs.
  std::mt19937_64 rng(5);
  std::vector<Sample> s;
  for (int i = 0; i < 240; ++i) {
    const double dec = static_cast<double>(52000 + static_cast<int>(rng() % 900)) / 100000;
    s.push_back({kStart + i * 1000, Ulps(dec, static_cast<int64_t>(rng() % (8 + 40 * i)) - 4)});
  }
  s[17].v = StaleNaN();
  s[18].v = -0.0;
  s[19].v = 1e300;  // too large for any scale: escaped
  ExpectBitExact(s);
  const std::string near = EncodeChunk(s);
  EXPECT_EQ(ChunkEncodingOf(near), static_cast<uint8_t>(ChunkEncoding::kNearDecimal));
  EXPECT_LT(near.size() * 10, EncodeXorChunk(s).size() * 6) << near.size();
  // Negative values and sign changes.
  for (Sample& x : s) x.v = -x.v + 0.3;
  ExpectBitExact(s);
  // Escapes at both ends: the ULP offsets skip them there too.
  s[0].v = StaleNaN();
  s[239].v = -std::numeric_limits<double>::infinity();
  ExpectBitExact(s);
  EXPECT_EQ(ChunkEncodingOf(EncodeChunk(s)), static_cast<uint8_t>(ChunkEncoding::kNearDecimal));
}

TEST(Chunk, JitteredTimestampsUseTheGrid) {
  std::mt19937_64 rng(9);
  std::vector<Sample> s;
  for (int i = 0; i < 240; ++i)
    s.push_back({kStart + i * 1000 + static_cast<int64_t>(rng() % 16), 1.0});
  ExpectBitExact(s);
  const std::string grid = EncodeChunk(s);
  EXPECT_EQ(static_cast<uint8_t>(grid[0]) & kChunkFormat2, kChunkFormat2);
  EXPECT_LT(grid.size(), 240u * 6 / 8 + 16) << "4 bits and a prefix per timestamp";
  // A gap keeps the grid: samples after it are still on the same 1 s grid.
  for (size_t i = 120; i < s.size(); ++i) s[i].t_ms += 3'600'000;
  ExpectBitExact(s);
  // Regular timestamps never set the flag.
  for (int i = 0; i < 240; ++i) s[static_cast<size_t>(i)].t_ms = kStart + i * 15000;
  EXPECT_EQ(static_cast<uint8_t>(EncodeChunk(s)[0]) & kChunkFormat2, 0);
}

TEST(Chunk, CorruptNearDecimalAndGridChunksFailCleanly) {
  std::mt19937_64 rng(4);
  std::vector<Sample> s;
  for (int i = 0; i < 200; ++i)
    s.push_back({kStart + i * 1000 + static_cast<int64_t>(rng() % 9),
                 Ulps(static_cast<double>(3000 + i) / 1000, static_cast<int64_t>(rng() % 64))});
  const std::string good = EncodeChunk(s);
  ASSERT_EQ(ChunkEncodingOf(good), static_cast<uint8_t>(ChunkEncoding::kNearDecimal));
  ASSERT_NE(static_cast<uint8_t>(good[0]) & kChunkFormat2, 0);
  for (size_t cut = 0; cut < good.size(); ++cut) {
    std::vector<Sample> out;
    EXPECT_FALSE(DecodeChunk(good.substr(0, cut), &out).ok()) << cut;
  }
  for (int i = 0; i < 2000; ++i) {
    std::string bad = good;
    bad[rng() % bad.size()] ^= static_cast<char>(1 << (rng() % 8));
    std::vector<Sample> out;
    (void)DecodeChunk(bad, &out);
  }
  // The grid flag on another encoding byte, or an unknown flag, is refused or decoded, never
  // misread: format-1 decoders (no grid) reject order 3.
  std::string flagged = good;
  flagged[0] = static_cast<char>(0x20 | 4);
  std::vector<Sample> out;
  EXPECT_FALSE(DecodeChunk(flagged, &out).ok());
}

// The shapes of bench/make_varied.cpp's data sets, as 240- and 7200-sample chunks: every value
// (stale markers, NaN payloads and -0.0 among them) must come back bit for bit.
TEST(Chunk, VariedDataShapesRoundTrip) {
  std::mt19937_64 rng(21);
  auto normal = [&] {
    std::normal_distribution<double> n;
    return n(rng);
  };
  auto uniform = [&] { return static_cast<double>(rng() >> 11) * 0x1p-53; };
  using Gen = std::function<double(int)>;
  double walk = 123.45, counter = 0, sensor = 40, level = 0.5, rss = 4096 * 1000.0;
  const std::pair<const char*, Gen> shapes[] = {
      {"walk_2_decimals",
       [&](int) {
         return static_cast<double>(std::llround((walk += 0.3 * normal()) * 100)) / 100;
       }},
      {"walk_3_decimals",
       [&](int) {
         return static_cast<double>(std::llround((level += 0.01 * normal()) * 1000)) / 1000;
       }},
      {"noise_full_precision", [&](int) { return uniform(); }},
      {"noise_lognormal", [&](int) { return std::exp(-4 + normal()); }},
      {"noise_sine", [&](int i) { return 40 + 5 * std::sin(i / 300.0) + 0.3 * normal(); }},
      {"counter_with_resets",
       [&](int) {
         return counter = rng() % 3000 == 0 ? 0 : counter + static_cast<double>(rng() % 400);
       }},
      {"counter_centiseconds",
       [&](int) {
         return counter =
                    static_cast<double>(std::llround((counter + 0.37 * uniform()) * 100)) / 100;
       }},
      {"quantized_eighths",
       [&](int) { return std::round((sensor += rng() % 50 == 0 ? normal() : 0) * 8) / 8; }},
      {"quantized_halves_flat", [&](int i) { return i < 3000 ? 55.5 : 56.0; }},
      {"churn_rss_then_stale",
       [&](int i) {
         return i % 240 == 239 ? StaleNaN() : (rss += 4096 * static_cast<double>(rng() % 3));
       }},
      {"rate_of_big_counter",
       [&](int i) { return (1e12 + i * 1234.567 + 0.1 * i) - (1e12 + (i - 1) * 1234.567); }},
      {"specials_mixed",
       [&](int i) {
         const double sp[] = {-0.0, std::bit_cast<double>(0x7ff8dead0000beefULL), StaleNaN(),
                              std::numeric_limits<double>::infinity(), 0.1 + 0.2};
         return i % 17 == 0 ? sp[(i / 17) % 5] : static_cast<double>(i % 13) / 8;
       }},
  };
  for (const auto& [name, gen] : shapes) {
    for (size_t len : {240u, 7200u}) {
      std::vector<Sample> s;
      for (size_t i = 0; i < len; ++i)
        s.push_back(
            {kStart + static_cast<int64_t>(i) * 1000 + static_cast<int64_t>(rng() % 4 * (i % 2)),
             gen(static_cast<int>(i))});
      SCOPED_TRACE(name);
      ExpectBitExact(s);
      EXPECT_LE(EncodeChunk(s).size(), EncodeXorChunk(s).size()) << name;
    }
  }
}

// The seeds of the `chunks` fuzz target (tests/fuzz/corpus/chunks, written by the store's own
// encoders, format-1 chunks and near-decimal / grid ones among them) hold the fuzz target's
// property without a fuzz build: what decodes re-encodes to the same bits.
TEST(Chunk, FuzzSeedsRoundTrip) {
  const std::filesystem::path dir =
      std::filesystem::path(GW_SOURCE_DIR) / "tests/fuzz/corpus/chunks";
  size_t chunks = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string seed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (seed.empty() || static_cast<uint8_t>(seed[0]) % 3 == 2) continue;  // rollups: block_test
    const std::string_view body = std::string_view(seed).substr(1);
    std::vector<Sample> samples, again;
    const bool is_chunk = static_cast<uint8_t>(seed[0]) % 3 == 0;
    ASSERT_TRUE((is_chunk ? DecodeChunk(body, &samples) : DecodeBlock(body, &samples)).ok())
        << entry.path();
    const std::string re = is_chunk ? EncodeChunk(samples) : EncodeBlock(samples, 1);
    ASSERT_TRUE((is_chunk ? DecodeChunk(re, &again) : DecodeBlock(re, &again)).ok())
        << entry.path();
    ASSERT_EQ(again.size(), samples.size());
    for (size_t i = 0; i < samples.size(); ++i) {
      EXPECT_EQ(again[i].t_ms, samples[i].t_ms);
      EXPECT_EQ(std::bit_cast<uint64_t>(again[i].v), std::bit_cast<uint64_t>(samples[i].v));
    }
    chunks += is_chunk ? 1 : 0;
  }
  EXPECT_GE(chunks, 10u);
}

}  // namespace
}  // namespace gw::tsdb
