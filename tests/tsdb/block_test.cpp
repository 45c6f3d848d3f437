#include "tsdb/block.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <string_view>
#include <utility>

#include "tsdb/chunk.h"

namespace gw::tsdb {
namespace {

void ExpectSame(const std::vector<Sample>& want, const std::vector<Sample>& got) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(want[i].t_ms, got[i].t_ms) << i;
    ASSERT_EQ(std::bit_cast<uint64_t>(want[i].v), std::bit_cast<uint64_t>(got[i].v)) << i;
  }
}

std::vector<Sample> RoundTrip(const std::vector<Sample>& in, int level = 3) {
  std::vector<Sample> out;
  const std::string b = EncodeBlock(in, level);
  Status st = DecodeBlock(b, &out);
  EXPECT_TRUE(st.ok()) << st.message();
  return out;
}

TEST(Block, RoundTripsEveryKindOfSeriesBitExactly) {
  std::mt19937_64 rng(7);
  const int64_t t0 = 1'700'000'000'000;
  for (int kind = 0; kind < 7; ++kind) {
    std::vector<Sample> s;
    double acc = 5e7;
    for (int i = 0; i < 20'000; ++i) {
      const int64_t t = t0 + i * 1000 + (kind == 5 ? static_cast<int64_t>(rng() % 11) - 5 : 0);
      double v = 0;
      switch (kind) {
        case 0:
          v = 42;
          break;  // constant
        case 1:
          v = 690 + static_cast<double>(rng() % 3000) / 1000;
          break;  // W, 3 decimals
        case 2:
          acc += static_cast<double>(rng() % 3000) / 1000;
          v = acc;
          break;  // counter
        case 3:
          v = std::bit_cast<double>(rng());
          break;  // any bits
        case 4:
          v = i % 100 == 0 ? StaleNaN() : static_cast<double>(rng() % 100);
          break;
        case 5:
          v = static_cast<double>(rng() % 5);
          break;  // jittered t
        case 6:
          v = -static_cast<double>(i) * 1e6;
          break;  // negative
      }
      if (kind == 3 && std::isnan(v)) v = 1;  // any NaN payload is tested in case 4 too
      s.push_back({t, v});
    }
    ExpectSame(s, RoundTrip(s));
    ExpectSame(s, RoundTrip(s, 0));  // no zstd
  }
}

TEST(Block, EmptyAndTinyAndHuge) {
  ExpectSame({}, RoundTrip({}));
  ExpectSame({{5, 1.5}}, RoundTrip({{5, 1.5}}));
  ExpectSame({{INT64_MIN, -0.0}, {INT64_MAX, std::numeric_limits<double>::infinity()}},
             RoundTrip({{INT64_MIN, -0.0}, {INT64_MAX, std::numeric_limits<double>::infinity()}}));
  std::vector<Sample> big;  // more than one part (kMaxChunkSamples)
  for (int64_t i = 0; i < 150'000; ++i) big.push_back({i * 100, static_cast<double>(i % 977)});
  ExpectSame(big, RoundTrip(big));
}

TEST(Block, NoisyMilliwattsBeatTheChunkCodec) {
  std::mt19937_64 rng(3);
  std::vector<Sample> s;
  for (int i = 0; i < 21'600; ++i)
    s.push_back({i * 1000LL, 690 + static_cast<double>(rng() % 3000) / 1000});
  size_t chunks = 0;
  for (size_t i = 0; i < s.size(); i += 240)
    chunks += EncodeChunk(std::span(s).subspan(i, std::min<size_t>(240, s.size() - i))).size();
  const size_t block = EncodeBlock(s).size();
  std::printf("noisy W: 240-sample chunks %.3f B/sample, block %.3f B/sample\n",
              static_cast<double>(chunks) / 21600, static_cast<double>(block) / 21600);
  EXPECT_LT(block, chunks);
}

TEST(Block, CorruptBlocksFailCleanly) {
  std::vector<Sample> s;
  for (int i = 0; i < 5000; ++i) s.push_back({i * 1000LL, static_cast<double>((i * 37) % 1001)});
  const std::string good = EncodeBlock(s);
  std::mt19937_64 rng(11);
  for (int round = 0; round < 3000; ++round) {
    std::string bad = good;
    if (round % 3 == 0) {
      bad.resize(rng() % bad.size());
    } else {
      for (int k = 0; k < 1 + static_cast<int>(rng() % 4); ++k)
        bad[rng() % bad.size()] = static_cast<char>(rng());
    }
    std::vector<Sample> out;
    (void)DecodeBlock(bad, &out);  // must not crash or read out of bounds (ASan)
  }
}

TEST(Block, RollupsRoundTrip) {
  std::vector<Sample> s;
  for (int i = 0; i < 7200; ++i)
    s.push_back(
        {1'700'000'000'000 + i * 1000LL, i % 61 == 0 ? std::nan("") : (i * 13) % 101 / 4.0});
  std::vector<Rollup> want, got;
  AddToRollups(s, &want);
  ASSERT_TRUE(DecodeRollups(EncodeRollups(want), &got).ok());
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(want[i].t_ms, got[i].t_ms);
    EXPECT_EQ(want[i].min, got[i].min);
    EXPECT_EQ(want[i].max, got[i].max);
    EXPECT_EQ(want[i].sum, got[i].sum);
    EXPECT_EQ(want[i].count, got[i].count);
    EXPECT_EQ(want[i].last, got[i].last);
    EXPECT_EQ(want[i].last_t_ms, got[i].last_t_ms);
  }
  got.clear();
  EXPECT_TRUE(DecodeRollups(EncodeRollups({}), &got).ok());
  EXPECT_TRUE(got.empty());
  EXPECT_FALSE(DecodeRollups("\x07garbage", &got).ok());
}

// Timestamps stored apart: a block of values plus its timestamps decode to the samples, bit for
// bit; the values alone are far smaller than the block when the timestamps are jittered.
TEST(Block, ValuesAndSharedTimestampsRoundTrip) {
  std::mt19937_64 rng(3);
  std::vector<Sample> s;
  int64_t counter = 0;
  for (int i = 0; i < 7200; ++i) {
    counter += 200 + static_cast<int64_t>(rng() % 60);
    s.push_back({1'700'000'000'000 + i * 1000LL + static_cast<int64_t>(rng() % 16),
                 i == 100 ? std::nan("") : static_cast<double>(counter)});
  }
  const std::string whole = EncodeBlock(s);
  const std::string ts = EncodeTimestamps(s);
  const std::string values = EncodeBlockValues(s);
  EXPECT_TRUE(BlockSharesTimestamps(values));
  EXPECT_FALSE(BlockSharesTimestamps(whole));
  EXPECT_GE(ts.size(), kMinSharedTimestampBytes);
  EXPECT_EQ(SharedTimestamps(s), ts);  // what compaction shares
  std::vector<Sample> regular = s;
  for (size_t i = 0; i < regular.size(); ++i) regular[i].t_ms = 1'700'000'000'000 + 1000LL * i;
  EXPECT_TRUE(SharedTimestamps(regular).empty());
  EXPECT_LT(EncodeTimestamps(regular).size(), kMinSharedTimestampBytes);
  // The jitter is 4 bits a sample, 3,600 bytes here, that the values alone do without.
  EXPECT_LT(values.size() + 3000, whole.size()) << values.size() << " vs " << whole.size();
  std::vector<int64_t> times;
  ASSERT_TRUE(DecodeTimestamps(ts, &times).ok());
  ASSERT_EQ(times.size(), s.size());
  std::vector<Sample> out = {{1, 2}};  // decoding appends
  ASSERT_TRUE(DecodeBlock(values, times, &out).ok());
  ASSERT_EQ(out.size(), s.size() + 1);
  for (size_t i = 0; i < s.size(); ++i) {
    ASSERT_EQ(out[i + 1].t_ms, s[i].t_ms) << i;
    ASSERT_EQ(std::bit_cast<uint64_t>(out[i + 1].v), std::bit_cast<uint64_t>(s[i].v)) << i;
  }
  // A whole block ignores the timestamps it is given.
  out.clear();
  ASSERT_TRUE(DecodeBlock(whole, times, &out).ok());
  EXPECT_EQ(out.size(), s.size());
  // Values without their timestamps, or with the wrong number, are errors that append nothing.
  out.clear();
  EXPECT_FALSE(DecodeBlock(values, &out).ok());
  times.pop_back();
  EXPECT_FALSE(DecodeBlock(values, times, &out).ok());
  EXPECT_TRUE(out.empty());
  EXPECT_FALSE(DecodeBlock(std::string_view("\x03", 1), times, &out).ok());
}

// A read from inside a block decodes only the parts from the one holding its start: the newest
// parts, oldest first, exactly the block's samples from the first one appended.
TEST(Block, TailDecodesOnlyTheNewestPartsHoldingTheRange) {
  constexpr size_t P = kBlockPartSamples;
  const size_t n = 3 * P + 1000;
  std::mt19937_64 rng(5);
  std::vector<Sample> s;
  for (size_t i = 0; i < n; ++i) {
    s.push_back(
        {1'700'000'000'000 + static_cast<int64_t>(i) * 1000 + static_cast<int64_t>(rng() % 16),
         std::round(std::sin(static_cast<double>(i) / 50) * 1000) / 10});
  }
  const std::string whole = EncodeBlock(s);
  const std::string values = EncodeBlockValues(s);
  std::vector<int64_t> times;
  ASSERT_TRUE(DecodeTimestamps(EncodeTimestamps(s), &times).ok());
  const int64_t t0 = s.front().t_ms, tn = s.back().t_ms;
  const Sample sentinel{1, 2};
  for (int64_t mint :
       {std::numeric_limits<int64_t>::min(), t0 - 1, t0, t0 + 1, s[P].t_ms - 1, s[P].t_ms,
        s[P].t_ms + 1, s[2 * P + 17].t_ms, s[3 * P].t_ms, s[3 * P].t_ms + 5, tn, tn + 1}) {
    SCOPED_TRACE(mint);
    const size_t idx =
        static_cast<size_t>(std::lower_bound(times.begin(), times.end(), mint) - times.begin());
    // Whole blocks: back to the newest part that starts at or before mint. Values: from the part
    // holding the first timestamp at or after mint (the shared timestamps place every part).
    size_t plain_from = 0;
    for (size_t ps = 0; ps < n; ps += P)
      if (s[ps].t_ms <= mint) plain_from = ps;
    const size_t values_from = idx == n ? 3 * P : idx / P * P;
    for (const auto& [block, from_index] :
         {std::pair<std::string_view, size_t>{whole, plain_from}, {values, values_from}}) {
      // INT64_MIN: the whole block, however it is stored.
      const size_t k = mint == std::numeric_limits<int64_t>::min() ? 0 : from_index;
      std::vector<Sample> out = {sentinel};  // decoding appends
      int64_t from = 0;
      ASSERT_TRUE(DecodeBlockTail(block, times, mint, &out, &from).ok());
      ASSERT_EQ(out.size(), 1 + n - k) << BlockSharesTimestamps(block);
      EXPECT_EQ(out[0].t_ms, sentinel.t_ms);
      for (size_t i = k; i < n; ++i) {
        ASSERT_EQ(out[1 + i - k].t_ms, s[i].t_ms) << i;
        ASSERT_EQ(std::bit_cast<uint64_t>(out[1 + i - k].v), std::bit_cast<uint64_t>(s[i].v)) << i;
      }
      EXPECT_EQ(from, k == 0 ? std::numeric_limits<int64_t>::min() : s[k].t_ms);
      // Every sample at or after mint is there.
      EXPECT_LE(k, idx);
    }
  }
  // Values with the wrong number of timestamps: an error, nothing appended.
  times.pop_back();
  std::vector<Sample> out;
  int64_t from = 0;
  EXPECT_FALSE(DecodeBlockTail(values, times, s[3 * P].t_ms, &out, &from).ok());
  EXPECT_TRUE(out.empty());
  // A corrupt newest part is an error, not a shorter answer.
  std::string bad = whole;
  bad.resize(bad.size() - 20);
  EXPECT_FALSE(DecodeBlockTail(bad, {}, tn, &out, &from).ok());
}

}  // namespace
}  // namespace gw::tsdb
