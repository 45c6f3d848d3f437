// Slurm's compressed host lists (jobs/slurm_hostlist.h).
#include "jobs/slurm_hostlist.h"

#include <gtest/gtest.h>

namespace gw::jobs {
namespace {

TEST(HostList, SlurmNodeLists) {
  EXPECT_TRUE(HostListContains("vm", "vm"));
  EXPECT_FALSE(HostListContains("vm2", "vm"));
  EXPECT_TRUE(HostListContains("gpu[01-04,07]", "gpu03"));
  EXPECT_TRUE(HostListContains("gpu[01-04,07]", "gpu07"));
  EXPECT_FALSE(HostListContains("gpu[01-04,07]", "gpu05"));
  EXPECT_FALSE(HostListContains("gpu[01-04]", "gpu3"));  // zero-padded names
  EXPECT_TRUE(HostListContains("login1,gpu[1-12]-ib", "gpu11-ib"));
  EXPECT_TRUE(HostListContains("a[1-2],b[3-4]", "b4"));
  EXPECT_FALSE(HostListContains("", "vm"));
  EXPECT_FALSE(HostListContains("vm", ""));
}

// Malformed lists name nothing and never fail.
TEST(HostList, MalformedListsNameNothing) {
  EXPECT_FALSE(HostListContains("gpu[01-04", "gpu03"));
  EXPECT_FALSE(HostListContains("gpu]01-04[", "gpu03"));
  EXPECT_FALSE(HostListContains("gpu[a-b]", "gpua"));
  EXPECT_FALSE(HostListContains("gpu[1-]", "gpu1"));
  EXPECT_FALSE(HostListContains("gpu[1-1234567890123456789]", "gpu5"));  // over 18 digits
  EXPECT_FALSE(HostListContains("gpu[]", "gpu"));
  EXPECT_FALSE(HostListContains(",,,", "vm"));
  EXPECT_TRUE(HostListContains(",vm,", "vm"));
}

// A host whose name has the list's prefix but no number there is not named (std::stoull used to
// throw on it, ending the agent).
TEST(HostList, HostWithoutANumberIsNotNamed) {
  EXPECT_FALSE(HostListContains("gpu[1-3]", "gpu-a"));
  EXPECT_FALSE(HostListContains("gpu[1-3]", "gpu+1"));
  EXPECT_FALSE(HostListContains("gpu[1-3]", "gpu 2"));
  EXPECT_TRUE(HostListContains("gpu[1-3]", "gpu2"));
}

}  // namespace
}  // namespace gw::jobs
