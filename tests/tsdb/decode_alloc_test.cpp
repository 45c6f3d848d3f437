// Damaged blocks must be refused before the decoder allocates what their length fields claim.
// Found by tests/fuzz (target chunks): a 10-byte block announcing 2 GiB of zstd output made
// DecodeBlock allocate and zero 2 GiB before zstd failed. Its own executable: it replaces the
// global operator new to see the largest allocation.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "tsdb/block.h"
#include "tsdb/coding.h"

namespace {
std::atomic<size_t> largest{0};

// Out of line so that GCC does not pair the replaced operators below with malloc/free and warn
// (-Wmismatched-new-delete): both sides are ours.
[[gnu::noinline]] void* RawAlloc(size_t n) {
  return std::malloc(n ? n : 1);
}
[[gnu::noinline]] void RawFree(void* p) {
  std::free(p);
}
}  // namespace

void* operator new(size_t n) {
  size_t seen = largest.load();
  while (n > seen && !largest.compare_exchange_weak(seen, n)) {
  }
  if (void* p = RawAlloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) {
  return operator new(n);
}
void operator delete(void* p) noexcept {
  RawFree(p);
}
void operator delete[](void* p) noexcept {
  RawFree(p);
}
void operator delete(void* p, size_t) noexcept {
  RawFree(p);
}
void operator delete[](void* p, size_t) noexcept {
  RawFree(p);
}

namespace gw::tsdb {
namespace {

constexpr size_t kLimit = 64u << 20;

size_t LargestAllocationDecoding(const std::string& block) {
  largest = 0;
  std::vector<Sample> samples;
  EXPECT_FALSE(DecodeBlock(block, &samples).ok());
  return largest.load();
}

// The start of a zstd frame (magic number and a header that declares no content size).
const std::string kZstdStart("\x28\xb5\x2f\xfd\x00\x00", 6);

TEST(DecodeAlloc, ZstdContainerLengthIsCheckedFirst) {
  std::string block(1, '\x02');  // zstd container
  PutUvarint(&block, 1ULL << 31);
  block += kZstdStart;
  EXPECT_LT(LargestAllocationDecoding(block), kLimit);
}

TEST(DecodeAlloc, ZstdPlaneSectionLengthIsCheckedFirst) {
  std::string part(1, '\x03');  // byte planes
  PutUvarint(&part, 10);        // samples
  part += '\x01';               // timestamps: a zstd section
  PutUvarint(&part, 1ULL << 31);
  PutUvarint(&part, kZstdStart.size());
  part += kZstdStart;
  std::string block(1, '\x01');  // plain container
  PutUvarint(&block, 1);
  PutString(&block, part);
  EXPECT_LT(LargestAllocationDecoding(block), kLimit);
}

TEST(DecodeAlloc, GoodBlocksStillDecode) {
  std::vector<Sample> in;
  for (int i = 0; i < 5000; ++i) in.push_back({1'700'000'000'000 + i * 1000LL, 40.0 + i % 3});
  std::vector<Sample> out;
  ASSERT_TRUE(DecodeBlock(EncodeBlock(in, 3), &out).ok());
  ASSERT_EQ(out.size(), in.size());
  EXPECT_EQ(out.back().t_ms, in.back().t_ms);
  EXPECT_EQ(out.back().v, in.back().v);
}

}  // namespace
}  // namespace gw::tsdb
