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

#if defined(__SANITIZE_ADDRESS__)
#define GW_HEAP_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GW_HEAP_TEST_SANITIZED 1
#endif
#endif

// Blocks of 1 MiB are mmapped by default (above glibc's initial 128 KiB threshold) and unmapped
// when freed; after KeepFreedHeap they come from the heap and, freed, stay there as free memory.
// (Each test runs in its own process, so the process-wide setting touches nothing else.)
TEST(Heap, KeepFreedHeapKeepsAQuerysPagesForTheNext) {
#if defined(GW_HEAP_TEST_SANITIZED) || !defined(__GLIBC__)
  GTEST_SKIP() << "glibc's malloc only";
#else
  if (std::getenv("GLIBC_TUNABLES") != nullptr ||
      std::getenv("MALLOC_MMAP_THRESHOLD_") != nullptr) {
    GTEST_SKIP() << "the environment tunes malloc";
  }
  KeepFreedHeap(size_t{64} << 20, size_t{4} << 20);
  const HeapFigures before = ReadHeap();
  std::vector<void*> blocks;
  for (int i = 0; i < 16; ++i) {
    blocks.push_back(std::malloc(size_t{1} << 20));
    static_cast<char*>(blocks.back())[0] = 1;
  }
  const HeapFigures during = ReadHeap();
  // Served from the heap, not mapped one by one.
  EXPECT_LT(during.mapped_bytes, before.mapped_bytes + (size_t{1} << 20));
  for (void* b : blocks) std::free(b);
  // Freed, the 16 MiB stay with the allocator (under the 64 MiB trim threshold).
  EXPECT_GE(ReadHeap().free_bytes, before.free_bytes + (size_t{15} << 20));
#endif
}

}  // namespace
}  // namespace gw
