#include "base/secret_file.h"

#include <gtest/gtest.h>

#include "support/process.h"

namespace gw {
namespace {

TEST(TrimSecretTest, DropsWhitespaceAtBothEndsOnly) {
  EXPECT_EQ(TrimSecret("s3cret\n"), "s3cret");
  EXPECT_EQ(TrimSecret("s3cret\r\n"), "s3cret");
  EXPECT_EQ(TrimSecret("  \t s3cret \t\v\f\n\n"), "s3cret");
  EXPECT_EQ(TrimSecret("two words\n"), "two words");  // inside the secret: kept
  EXPECT_EQ(TrimSecret("line1\nline2\n"), "line1\nline2");
  EXPECT_EQ(TrimSecret(" \n\t"), "");
  EXPECT_EQ(TrimSecret(""), "");
  EXPECT_EQ(TrimSecret("tok"), "tok");
}

TEST(ReadSecretFileTest, ReadsTheWholeFileTrimmed) {
  testing::TempDir dir;
  testing::WriteFile(dir / "token", "tok-123\n");
  auto token = ReadSecretFile(dir / "token");
  ASSERT_TRUE(token.ok()) << token.error().message;
  EXPECT_EQ(*token, "tok-123");

  testing::WriteFile(dir / "password", " pass word \r\n\n");
  auto password = ReadSecretFile(dir / "password");
  ASSERT_TRUE(password.ok()) << password.error().message;
  EXPECT_EQ(*password, "pass word");

  testing::WriteFile(dir / "empty", "\n");
  auto empty = ReadSecretFile(dir / "empty");
  ASSERT_TRUE(empty.ok()) << empty.error().message;
  EXPECT_EQ(*empty, "");

  const std::string big(100'000, 'k');  // longer than one read
  testing::WriteFile(dir / "big", big + "\n");
  auto read_big = ReadSecretFile(dir / "big");
  ASSERT_TRUE(read_big.ok()) << read_big.error().message;
  EXPECT_EQ(*read_big, big);
}

TEST(ReadSecretFileTest, AnErrorNamesTheFileAndTheReason) {
  testing::TempDir dir;
  auto missing = ReadSecretFile(dir / "absent");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, (dir / "absent") + ": cannot read: No such file or directory");
  auto directory = ReadSecretFile(dir.path());
  ASSERT_FALSE(directory.ok());
  EXPECT_EQ(directory.error().message, dir.path() + ": cannot read: Is a directory");
}

}  // namespace
}  // namespace gw
