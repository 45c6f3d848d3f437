// base/heap.h: trimming counts, the trimmer's rate limit, and the figures' plausibility (the
// figures are glibc's; under a sanitizer's allocator they describe glibc's unused heap, so only
// their consistency is checked).
#include "base/heap.h"

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#if defined(__GLIBC__)
#include <gnu/libc-version.h>
#include <malloc.h>
#endif

#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>
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

// After a trim the reserve is still at the main heap's top (mallinfo2's keepcost) and resident
// (mincore up to the program break), so the next 4 MiB of allocations fault few pages; with no
// reserve the same trim gives the top back.
TEST(Heap, TrimsLeaveTheReserveWarmAtTheTopOfTheMainHeap) {
#if defined(GW_HEAP_TEST_SANITIZED) || !defined(__GLIBC__)
  GTEST_SKIP() << "glibc's malloc only";
#else
  if (std::getenv("GLIBC_TUNABLES") != nullptr ||
      std::getenv("MALLOC_TRIM_THRESHOLD_") != nullptr) {
    GTEST_SKIP() << "the environment tunes malloc";
  }
  constexpr size_t kReserve = size_t{8} << 20;
  KeepFreedHeap(size_t{64} << 20, size_t{4} << 20);
  KeepHeapReserve(kReserve);
  EXPECT_EQ(HeapReserveBytes(), kReserve);
  TrimHeap();
  EXPECT_GE(mallinfo2().keepcost, kReserve);
  EXPECT_LT(mallinfo2().keepcost, kReserve + (size_t{1} << 20));
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const auto brk = reinterpret_cast<uintptr_t>(sbrk(0));
  const uintptr_t from = (brk - (kReserve - (size_t{64} << 10))) & ~(uintptr_t{page} - 1);
  std::vector<unsigned char> resident((brk - from + page - 1) / page);
  ASSERT_EQ(mincore(reinterpret_cast<void*>(from), brk - from, resident.data()), 0);
  size_t missing = 0;
  for (unsigned char r : resident) missing += (r & 1) == 0 ? 1 : 0;
  EXPECT_EQ(missing, 0u) << "of " << resident.size() << " pages below the break";

  struct rusage before {};
  getrusage(RUSAGE_THREAD, &before);
  std::vector<void*> blocks;
  for (int i = 0; i < 64; ++i) {
    blocks.push_back(std::malloc(size_t{64} << 10));
    for (size_t at = 0; at < (size_t{64} << 10); at += page)
      static_cast<volatile char*>(blocks.back())[at] = 1;
  }
  struct rusage after {};
  getrusage(RUSAGE_THREAD, &after);
  EXPECT_LT(after.ru_minflt - before.ru_minflt, 256) << "page faults for 1,024 pages";
  for (size_t i = blocks.size(); i-- > 0;) std::free(blocks[i]);

  KeepHeapReserve(0);
  TrimHeap();
  EXPECT_LT(mallinfo2().keepcost, size_t{1} << 20);
#endif
}

// The decision to run again with huge pages, apart from the system it reads.
TEST(Heap, HugePageTunablesAddTheSettingWhereTheKernelAndGlibcHaveIt) {
  const std::string_view madvise = "always [madvise] never\n", always = "[always] madvise never\n";
  EXPECT_EQ(HugePageTunables(nullptr, madvise, "2.36"), "glibc.malloc.hugetlb=1");
  EXPECT_EQ(HugePageTunables(nullptr, always, "2.40"), "glibc.malloc.hugetlb=1");
  EXPECT_EQ(HugePageTunables("", madvise, "2.35"), "glibc.malloc.hugetlb=1");
  EXPECT_EQ(HugePageTunables(nullptr, madvise, "3.0"), "glibc.malloc.hugetlb=1");
  // The operator's other settings are kept, ours appended.
  EXPECT_EQ(HugePageTunables("glibc.malloc.tcache_count=0", madvise, "2.36"),
            "glibc.malloc.tcache_count=0:glibc.malloc.hugetlb=1");
  // The operator's own word on huge pages, whatever it is, stands.
  EXPECT_EQ(HugePageTunables("glibc.malloc.hugetlb=0", madvise, "2.36"), "");
  EXPECT_EQ(HugePageTunables("glibc.malloc.arena_max=4:glibc.malloc.hugetlb=2", madvise, "2.36"),
            "");
  // The kernel gives none, or says nothing readable.
  EXPECT_EQ(HugePageTunables(nullptr, "always madvise [never]\n", "2.36"), "");
  EXPECT_EQ(HugePageTunables(nullptr, "", "2.36"), "");
  EXPECT_EQ(HugePageTunables(nullptr, "madvise", "2.36"), "");
  EXPECT_EQ(HugePageTunables(nullptr, "][", "2.36"), "");
  // glibc before 2.35 has no such tunable; not glibc at all.
  EXPECT_EQ(HugePageTunables(nullptr, madvise, "2.34"), "");
  EXPECT_EQ(HugePageTunables(nullptr, madvise, "1.99"), "");
  EXPECT_EQ(HugePageTunables(nullptr, madvise, ""), "");
}

// Runs this test again (its own command line) the way the agent runs itself: the first image
// sets GLIBC_TUNABLES and execs where the system has huge pages; the second finds the setting in
// effect and the environment as the first had it, so the agent's children inherit nothing.
TEST(Heap, ExecWithHugePageHeapRunsAgainAndPutsTheEnvironmentBack) {
#if defined(GW_HEAP_TEST_SANITIZED) || !defined(__GLIBC__)
  GTEST_SKIP() << "glibc's malloc only";
#else
  constexpr const char* kOriginal = "glibc.malloc.tcache_count=7";
  const bool second_image = std::getenv("GPUWARDEN_HUGE_PAGE_HEAP") != nullptr;
  if (!second_image) setenv("GLIBC_TUNABLES", kOriginal, 1);
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  for (std::string a; std::getline(in, a, '\0');) args.push_back(a);
  ASSERT_FALSE(args.empty());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ExecWithHugePageHeap(argv.data());
  // Here: the second image, or the first where the system has no huge pages for malloc.
  std::string modes;
  std::getline(std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled"), modes);
  const bool system_has_them = !HugePageTunables(kOriginal, modes, gnu_get_libc_version()).empty();
  EXPECT_EQ(second_image, system_has_them);
  EXPECT_EQ(HugePageHeap(), system_has_them);
  ASSERT_NE(std::getenv("GLIBC_TUNABLES"), nullptr);
  EXPECT_STREQ(std::getenv("GLIBC_TUNABLES"), kOriginal);
  EXPECT_EQ(std::getenv("GPUWARDEN_HUGE_PAGE_HEAP"), nullptr);
  EXPECT_EQ(std::getenv("GPUWARDEN_SAVED_GLIBC_TUNABLES"), nullptr);
#endif
}

}  // namespace
}  // namespace gw
