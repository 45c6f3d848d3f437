#include "base/file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "support/process.h"

namespace gw {
namespace {

TEST(WriteFileDurably, WritesReplacesAndLeavesNoTemporaryFile) {
  testing::TempDir dir;
  const std::string path = dir / "state.json";
  ASSERT_TRUE(WriteFileDurably(path, "first").ok());
  EXPECT_EQ(testing::ReadFile(path), "first");
  ASSERT_TRUE(WriteFileDurably(path, std::string(100000, 'x')).ok());
  EXPECT_EQ(testing::ReadFile(path), std::string(100000, 'x'));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST(WriteFileDurably, AnErrorNamesTheFileAndKeepsTheOldContents) {
  testing::TempDir dir;
  Status s = WriteFileDurably(dir / "missing/state.json", "x");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("create " + (dir / "missing/state.json.tmp")), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("No such file"), std::string::npos) << s.message();
  // A directory in place of the file: the rename fails and the directory is untouched.
  const std::string path = dir / "taken";
  std::filesystem::create_directories(path + "/inside");
  s = WriteFileDurably(path, "x");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("rename"), std::string::npos) << s.message();
  EXPECT_TRUE(std::filesystem::is_directory(path + "/inside"));
}

}  // namespace
}  // namespace gw
