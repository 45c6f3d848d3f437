// GPM, MIG, NVLink and T.Limit: the parsers, and the collector through the real dlopen path
// against the simulator's datacenter scenarios (docs/scenarios.md).
#include <gtest/gtest.h>

#include "collect/gpu_reader.h"

namespace gw::collect {
namespace {

TEST(MigProfile, ComesFromTheMigDeviceName) {
  EXPECT_EQ(MigProfileFromName("NVIDIA H100 80GB HBM3 MIG 1g.10gb"), "1g.10gb");
  EXPECT_EQ(MigProfileFromName("NVIDIA A100-SXM4-40GB MIG 3g.20gb"), "3g.20gb");
  EXPECT_EQ(MigProfileFromName("NVIDIA H200 MIG 1c.3g.71gb "), "1c.3g.71gb");
  EXPECT_EQ(MigProfileFromName("2g.20gb"), "2g.20gb");
  EXPECT_EQ(MigProfileFromName(""), "");
}

TEST(MigProfile, ComputeSlicesFollowTheShareRule) {
  EXPECT_EQ(MigComputeSlices("1g.10gb"), 1u);
  EXPECT_EQ(MigComputeSlices("3g.40gb"), 3u);
  EXPECT_EQ(MigComputeSlices("7g.80gb"), 7u);
  EXPECT_EQ(MigComputeSlices("1g.10gb+me"), 1u);
  EXPECT_EQ(MigComputeSlices("1c.3g.40gb"), 1u);  // one compute slice of a 3g GPU instance
  EXPECT_EQ(MigComputeSlices("gb"), 0u);
  EXPECT_EQ(MigComputeSlices("12"), 0u);
  EXPECT_EQ(MigComputeSlices(""), 0u);
}

}  // namespace
}  // namespace gw::collect
