// The governance settings' own rules: the "memory held" rule (governance.memory_held_ratio) at,
// below and above its threshold, with and without processes, and with the GPU's total unknown.
#include "governance/settings.h"

#include <gtest/gtest.h>

namespace gw::governance {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

TEST(MemoryHeld, DefaultIsFivePercentOfTheGpusMemory) {
  const Settings s;
  EXPECT_DOUBLE_EQ(s.memory_held_ratio, 0.05);
  const double total = 80 * kGiB;
  EXPECT_TRUE(s.MemoryHeld(false, 0.05 * total, total));         // at the threshold: held
  EXPECT_FALSE(s.MemoryHeld(false, 0.05 * total - 1, total));    // one byte below: free
  EXPECT_FALSE(s.MemoryHeld(false, 0.01 * total, total));        // well below: free
  EXPECT_TRUE(s.MemoryHeld(false, 0.05 * total + kGiB, total));  // above: held
  EXPECT_TRUE(s.MemoryHeld(false, total, total));                // full: held
  EXPECT_FALSE(s.MemoryHeld(false, 0, total));                   // nothing loaded: free
}

TEST(MemoryHeld, AProcessHoldsItWhateverTheMemory) {
  const Settings s;
  EXPECT_TRUE(s.MemoryHeld(true, 0, 80 * kGiB));
  EXPECT_TRUE(s.MemoryHeld(true, 0, 0));  // total unknown
}

TEST(MemoryHeld, UnknownTotalCountsOnlyProcesses) {
  const Settings s;
  EXPECT_FALSE(s.MemoryHeld(false, 10 * kGiB, 0));
  EXPECT_FALSE(s.MemoryHeld(false, 10 * kGiB, -1));
}

TEST(MemoryHeld, ConfiguredRatio) {
  Settings s;
  s.memory_held_ratio = 0.25;
  const double total = 40 * kGiB;
  EXPECT_FALSE(s.MemoryHeld(false, 0.2 * total, total));  // below
  EXPECT_TRUE(s.MemoryHeld(false, 0.25 * total, total));  // at
  EXPECT_TRUE(s.MemoryHeld(false, 0.3 * total, total));   // above
  s.memory_held_ratio = 0;                                // any known total: always held
  EXPECT_TRUE(s.MemoryHeld(false, 0, total));
  s.memory_held_ratio = 1;  // only a full GPU
  EXPECT_FALSE(s.MemoryHeld(false, total - 1, total));
  EXPECT_TRUE(s.MemoryHeld(false, total, total));
}

}  // namespace
}  // namespace gw::governance
