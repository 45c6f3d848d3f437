#include "tsdb/head.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <thread>

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

}  // namespace
}  // namespace gw::tsdb
