#include "tsdb/storage.h"

#include <gtest/gtest.h>

#include <cmath>

namespace gw::tsdb {
namespace {

Labels L(std::initializer_list<std::pair<const char*, const char*>> pairs) {
  Labels out;
  for (auto& [n, v] : pairs) out.push_back({n, v});
  std::sort(out.begin(), out.end());
  return out;
}

TEST(Matcher, RegexesAreFullyAnchoredRe2) {
  auto m = Matcher::Make(MatchType::kRegexMatch, "gpu", "1|2");
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->Matches("1"));
  EXPECT_FALSE(m->Matches("12"));
  EXPECT_FALSE(m->Matches(""));
  auto n = Matcher::Make(MatchType::kRegexNoMatch, "gpu", "1.*");
  ASSERT_TRUE(n.ok());
  EXPECT_FALSE(n->Matches("10"));
  EXPECT_TRUE(n->Matches("2"));
  auto bad = Matcher::Make(MatchType::kRegexMatch, "gpu", "(");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("invalid regular expression"), std::string::npos);
}

TEST(Stale, MarkerIsASpecificNaN) {
  EXPECT_TRUE(std::isnan(StaleNaN()));
  EXPECT_TRUE(IsStaleNaN(StaleNaN()));
  EXPECT_FALSE(IsStaleNaN(std::nan("")));
}

TEST(MemoryQuerier, SelectsByMatchersAndTime) {
  MemoryQuerier q;
  ASSERT_TRUE(q.Append(L({{"__name__", "gpu_up"}, {"gpu", "0"}}), 1000, 1).ok());
  ASSERT_TRUE(q.Append(L({{"__name__", "gpu_up"}, {"gpu", "0"}}), 2000, 0).ok());
  ASSERT_TRUE(q.Append(L({{"__name__", "gpu_up"}, {"gpu", "1"}}), 1000, 1).ok());
  ASSERT_FALSE(q.Append(L({{"__name__", "gpu_up"}, {"gpu", "1"}}), 500, 1).ok());
  std::vector<SeriesData> out;
  auto name = Matcher::Make(MatchType::kEqual, "__name__", "gpu_up");
  auto gpu = Matcher::Make(MatchType::kEqual, "gpu", "0");
  ASSERT_TRUE(q.Select({*name, *gpu}, 0, 1500, &out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].samples.size(), 1u);
  ASSERT_TRUE(q.Select({*name}, 1500, 3000, &out).ok());
  ASSERT_EQ(out.size(), 1u);  // gpu 1 has nothing after 1500
  std::vector<std::string> values;
  ASSERT_TRUE(q.LabelValues("gpu", {}, 0, 5000, &values).ok());
  EXPECT_EQ(values, (std::vector<std::string>{"0", "1"}));
}

}  // namespace
}  // namespace gw::tsdb
