#include "tsdb/head.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <thread>

#include "tsdb/chunk.h"
#include "tsdb/index.h"

namespace gw::tsdb {
namespace {

Labels L(std::initializer_list<std::pair<const char*, const char*>> pairs) {
  Labels out;
  for (auto& [n, v] : pairs) out.push_back({n, v});
  std::sort(out.begin(), out.end());
  return out;
}

Matcher M(MatchType type, const char* name, const char* value) {
  return Matcher::Make(type, name, value).value();
}

TEST(SeriesIndex, SelectsWithPostingsAndRegexes) {
  SeriesIndex idx;
  idx.Add(1, L({{"__name__", "gpu_temp"}, {"gpu", "0"}}));
  idx.Add(2, L({{"__name__", "gpu_temp"}, {"gpu", "1"}}));
  idx.Add(3, L({{"__name__", "gpu_power"}, {"gpu", "0"}}));
  idx.Add(4, L({{"__name__", "gpu_power"}}));
  using V = std::vector<SeriesRef>;
  EXPECT_EQ(idx.Select({M(MatchType::kEqual, "__name__", "gpu_temp")}), (V{1, 2}));
  EXPECT_EQ(idx.Select({M(MatchType::kEqual, "gpu", "0")}), (V{1, 3}));
  EXPECT_EQ(
      idx.Select({M(MatchType::kEqual, "__name__", "gpu_power"), M(MatchType::kEqual, "gpu", "")}),
      (V{4}));
  EXPECT_EQ(idx.Select({M(MatchType::kRegexMatch, "__name__", "gpu_.*"),
                        M(MatchType::kNotEqual, "gpu", "0")}),
            (V{2, 4}));
  EXPECT_EQ(idx.Select({M(MatchType::kRegexMatch, "gpu", "1|0")}), (V{1, 2, 3}));
  EXPECT_EQ(idx.Select({M(MatchType::kRegexMatch, "gpu", "|1")}), (V{2, 4}));
  EXPECT_EQ(idx.Select({M(MatchType::kRegexNoMatch, "gpu", ".+")}), (V{4}));
  EXPECT_EQ(idx.Select({M(MatchType::kEqual, "missing", "x")}), V{});
  EXPECT_EQ(idx.Select({}), (V{1, 2, 3, 4}));
  EXPECT_EQ(idx.Find(L({{"__name__", "gpu_temp"}, {"gpu", "1"}})), 2u);
  EXPECT_EQ(idx.Find(L({{"__name__", "gpu_temp"}})), 0u);
}

TEST(SeriesIndex, LabelHashSeparatesNamesFromValues) {
  EXPECT_NE(HashLabels(L({{"ab", "c"}})), HashLabels(L({{"a", "bc"}})));
  EXPECT_FALSE(LabelsAreValid({{"b", "1"}, {"a", "2"}}));
  EXPECT_FALSE(LabelsAreValid({{"a", "1"}, {"a", "2"}}));
  EXPECT_TRUE(LabelsAreValid(L({{"b", "1"}, {"a", "2"}})));
}

TEST(Head, AppendsCutsChunksAndRejectsOutOfOrder) {
  Head head({.samples_per_chunk = 10, .chunk_range_ms = 1'000'000});
  bool created = false;
  auto ref = head.GetOrCreate(L({{"__name__", "x"}}), &created);
  ASSERT_TRUE(ref.ok());
  EXPECT_TRUE(created);
  EXPECT_EQ(*head.GetOrCreate(L({{"__name__", "x"}}), &created), *ref);
  EXPECT_FALSE(created);
  EXPECT_FALSE(head.GetOrCreate({{"b", "1"}, {"a", "2"}}, &created).ok());
  for (int i = 0; i < 35; ++i) ASSERT_TRUE(head.Append(*ref, i * 1000, i).ok());
  EXPECT_FALSE(head.Append(*ref, 34'000, 1).ok());
  EXPECT_FALSE(head.Append(*ref, 1'000, 1).ok());
  EXPECT_FALSE(head.Append(999, 50'000, 1).ok());
  EXPECT_EQ(head.out_of_order(), 2u);
  EXPECT_EQ(head.samples_appended(), 35u);
  std::vector<Sample> got;
  ASSERT_TRUE(head.ReadSamples(*ref, 5'000, 25'000, &got).ok());
  ASSERT_EQ(got.size(), 21u);
  EXPECT_EQ(got.front().t_ms, 5'000);
  EXPECT_EQ(got.back().v, 25);
  auto collected = head.CutAndCollect(true);
  ASSERT_EQ(collected.size(), 1u);
  EXPECT_EQ(collected[0].second.size(), 4u);  // 10 + 10 + 10 + 5
  head.DropPersisted(*ref, 4);
  got.clear();
  ASSERT_TRUE(head.ReadSamples(*ref, 0, 100'000, &got).ok());
  EXPECT_TRUE(got.empty());
}

TEST(Head, ChunksAreCutByTimeSpanToo) {
  Head head({.samples_per_chunk = 1000, .chunk_range_ms = 10'000});
  bool created;
  SeriesRef ref = *head.GetOrCreate(L({{"__name__", "x"}}), &created);
  for (int i = 0; i < 25; ++i) ASSERT_TRUE(head.Append(ref, i * 1000, i).ok());
  EXPECT_EQ(head.CutAndCollect(false)[0].second.size(), 2u);
}

TEST(Head, StaleMarkerIsStored) {
  Head head;
  bool created;
  SeriesRef ref = *head.GetOrCreate(L({{"__name__", "x"}}), &created);
  ASSERT_TRUE(head.Append(ref, 1, 1).ok());
  ASSERT_TRUE(head.Append(ref, 2, StaleNaN()).ok());
  head.CutAndCollect(true);
  std::vector<Sample> got;
  ASSERT_TRUE(head.ReadSamples(ref, 0, 10, &got).ok());
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(IsStaleNaN(got[1].v));
}

// One writer, readers concurrently: every read sees a time-ordered prefix of what was written.
TEST(Head, ReadersSeeConsistentSeriesWhileTheWriterAppends) {
  Head head({.samples_per_chunk = 16, .chunk_range_ms = 1'000'000'000});
  bool created;
  SeriesRef ref = *head.GetOrCreate(L({{"__name__", "x"}}), &created);
  std::atomic<bool> done{false};
  std::atomic<int> bad{0};
  std::thread reader([&] {
    std::vector<Sample> got;
    while (!done) {
      got.clear();
      if (!head.ReadSamples(ref, 0, INT64_MAX, &got).ok()) ++bad;
      for (size_t i = 0; i < got.size(); ++i)
        if (got[i].t_ms != static_cast<int64_t>(i) + 1 || got[i].v != static_cast<double>(i)) ++bad;
      (void)head.Select({});
    }
  });
  for (int i = 0; i < 20000; ++i) {
    ASSERT_TRUE(head.Append(ref, i + 1, i).ok());
    if (i % 1000 == 0) (void)head.GetOrCreate(L({{"__name__", "y"}, {"i", "a"}}), &created);
  }
  done = true;
  reader.join();
  EXPECT_EQ(bad.load(), 0);
}

// The open chunk is held as encoded segments plus a raw tail (head.h): every sub-range read of
// it, across segment boundaries and with values each encoding handles, returns exactly the raw
// samples appended, and the chunk cut from it is the codec's encoding of all of them.
TEST(Head, OpenChunkSegmentsReadBackExactly) {
  HeadOptions o;
  o.samples_per_chunk = 200;  // not a multiple of the segment size
  Head head(o);
  bool created = false;
  const SeriesRef ref = *head.GetOrCreate(L({{"__name__", "m"}}), &created);
  std::vector<Sample> want;
  for (int i = 0; i < 150; ++i) {
    // Jittered timestamps; integers, decimals, NaN and the stale marker among the values.
    const int64_t t = 1000LL * i + (i % 7) * 13;
    double v = i % 3 == 0 ? i * 0.1 : i;
    if (i == 40) v = std::nan("");
    if (i == 77) v = StaleNaN();
    ASSERT_TRUE(head.Append(ref, t, v).ok());
    want.push_back({t, v});
  }
  auto same = [](const Sample& a, const Sample& b) {
    return a.t_ms == b.t_ms && std::memcmp(&a.v, &b.v, sizeof a.v) == 0;
  };
  const std::vector<std::pair<int64_t, int64_t>> ranges = {
      {INT64_MIN, INT64_MAX}, {0, 31'000},   {31'500, 33'000},     {32'000, 32'100},
      {63'900, 96'200},       {-5, -1},      {149'000, INT64_MAX}, {200'000, 300'000},
      {5'013, 5'013},         {5'014, 5'999}};
  for (const auto& [lo, hi] : ranges) {
    std::vector<Sample> got;
    ASSERT_TRUE(head.ReadSamples(ref, lo, hi, &got).ok());
    std::vector<Sample> expect;
    for (const Sample& s : want)
      if (s.t_ms >= lo && s.t_ms <= hi) expect.push_back(s);
    ASSERT_EQ(got.size(), expect.size()) << lo << ".." << hi;
    for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(same(got[i], expect[i])) << i;
  }
  EXPECT_EQ(head.SettledBefore(ref), 0);
  EXPECT_EQ(head.memory_stats().chunks, 1u);
  EXPECT_EQ(head.memory_stats().max_t_ms, want.back().t_ms);
  auto collected = head.CutAndCollect(/*cut_open=*/true);
  ASSERT_EQ(collected.size(), 1u);
  ASSERT_EQ(collected[0].second.size(), 1u);
  const EncodedChunk& c = collected[0].second[0];
  EXPECT_EQ(c.num_samples, want.size());
  EXPECT_EQ(c.mint_ms, want.front().t_ms);
  EXPECT_EQ(c.maxt_ms, want.back().t_ms);
  EXPECT_EQ(c.data, EncodeChunk(want));
  // After the cut the series starts a fresh open chunk; both read back in order.
  ASSERT_TRUE(head.Append(ref, 1'000'000, 1).ok());
  std::vector<Sample> all;
  ASSERT_TRUE(head.ReadSamples(ref, INT64_MIN, INT64_MAX, &all).ok());
  ASSERT_EQ(all.size(), want.size() + 1);
  EXPECT_EQ(all.back().t_ms, 1'000'000);
}

// The persisted time ReadSamples reports moves when chunks leave the head, not before.
TEST(Head, PersistedTimeMovesWithDropPersisted) {
  HeadOptions o;
  o.samples_per_chunk = 10;
  Head head(o);
  ASSERT_TRUE(head.AddSeries(1, L({{"__name__", "a"}}), 5'000).ok());
  ASSERT_TRUE(head.AddSeries(2, L({{"__name__", "b"}})).ok());
  std::vector<Sample> out;
  int64_t persisted = 0;
  ASSERT_TRUE(head.ReadSamples(1, 0, INT64_MAX, &out, &persisted).ok());
  EXPECT_EQ(persisted, 5'000);  // what SQLite held at open
  ASSERT_TRUE(head.ReadSamples(2, 0, INT64_MAX, &out, &persisted).ok());
  EXPECT_EQ(persisted, INT64_MIN);
  for (int i = 1; i <= 25; ++i) ASSERT_TRUE(head.Append(2, i * 1000LL, i).ok());
  auto collected = head.CutAndCollect(/*cut_open=*/false);
  ASSERT_EQ(collected.size(), 1u);
  ASSERT_EQ(collected[0].second.size(), 2u);
  ASSERT_TRUE(head.ReadSamples(2, 0, INT64_MAX, &out, &persisted).ok());
  EXPECT_EQ(persisted, INT64_MIN);  // collected, not yet persisted
  head.DropPersisted(2, 1);
  out.clear();
  ASSERT_TRUE(head.ReadSamples(2, 0, INT64_MAX, &out, &persisted).ok());
  EXPECT_EQ(persisted, 10'000);
  ASSERT_EQ(out.size(), 15u);
  EXPECT_EQ(out.front().t_ms, 11'000);
}

}  // namespace
}  // namespace gw::tsdb
