// base/heap.h: trimming counts, the trimmer's rate limit, and the figures' plausibility (the
// figures are glibc's; under a sanitizer's allocator they describe glibc's unused heap, so only
// their consistency is checked).
#include "base/heap.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

namespace gw {
namespace {

TEST(Heap, TrimCounts) {
  const uint64_t before = TrimsTotal();
  TrimHeap();
  EXPECT_EQ(TrimsTotal(), before + 1);
}

TEST(Heap, TrimmerTrimsFirstThenWaitsForItsInterval) {
  HeapTrimmer trimmer(/*threshold_bytes=*/1, /*min_interval_ms=*/60000);
  EXPECT_TRUE(trimmer.MaybeTrim());   // no floor yet: the first call trims
  EXPECT_FALSE(trimmer.MaybeTrim());  // within its interval
  EXPECT_FALSE(trimmer.MaybeTrim(1));
}

TEST(Heap, FiguresAreConsistent) {
  EXPECT_GT(ResidentBytes(), 0u);
  const HeapFigures h = ReadHeap();
  EXPECT_LE(h.mapped_bytes, h.in_use_bytes);
}

}  // namespace
}  // namespace gw
