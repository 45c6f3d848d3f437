#include "tsdb/chunk.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <random>

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

}  // namespace
}  // namespace gw::tsdb
