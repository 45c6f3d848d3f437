#include "http/basic_auth.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

namespace gw::http {
namespace {

std::string Basic(const std::string& user_colon_password) {
  static const char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  const std::string& in = user_colon_password;
  for (size_t i = 0; i < in.size(); i += 3) {
    unsigned n = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) n |= static_cast<unsigned char>(in[i + 1]) << 8;
    if (i + 2 < in.size()) n |= static_cast<unsigned char>(in[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < in.size() ? kAlphabet[n & 63] : '=';
  }
  return "Basic " + out;
}

class BasicAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto auth = BasicAuth::Create({{"alice", testutil::BcryptHash("s3cret")},
                                   {"bob", testutil::BcryptHash("hunter2", 4, "$2y$")},
                                   {"carol", testutil::BcryptHash("pa:ss")}});
    ASSERT_TRUE(auth.ok()) << auth.error().message;
    auth_ = std::move(*auth);
  }
  std::unique_ptr<BasicAuth> auth_;
};

TEST_F(BasicAuthTest, VerifiesPasswords) {
  EXPECT_TRUE(auth_->Verify("alice", "s3cret"));
  EXPECT_TRUE(auth_->Verify("alice", "s3cret"));  // second time from the cache
  EXPECT_FALSE(auth_->Verify("alice", "S3cret"));
  EXPECT_FALSE(auth_->Verify("alice", ""));
  EXPECT_FALSE(auth_->Verify("Alice", "s3cret"));
  EXPECT_FALSE(auth_->Verify("mallory", "s3cret"));
  EXPECT_FALSE(auth_->Verify("", ""));
  EXPECT_TRUE(auth_->Verify("bob", "hunter2"));  // $2y$ hashes, as htpasswd writes them
  EXPECT_FALSE(auth_->Verify("bob", "s3cret"));  // another user's password
  // A cached success for alice must not open the door for the same password elsewhere.
  EXPECT_FALSE(auth_->Verify("carol", "s3cret"));
}

TEST_F(BasicAuthTest, NulInPasswordIsRejectedNotTruncated) {
  EXPECT_FALSE(auth_->Verify("alice", std::string("s3cret\0x", 8)));
  EXPECT_FALSE(auth_->Verify("alice", std::string("s3cret\0", 7)));
}

TEST_F(BasicAuthTest, ParsesAuthorizationHeader) {
  EXPECT_TRUE(auth_->Check(Basic("alice:s3cret")));
  EXPECT_TRUE(auth_->Check("basic " + Basic("alice:s3cret").substr(6)));  // scheme is any case
  EXPECT_TRUE(auth_->Check(Basic("carol:pa:ss")));  // the password may contain ':'
  EXPECT_FALSE(auth_->Check(Basic("alice:wrong")));
  EXPECT_FALSE(auth_->Check(Basic("alice")));  // no colon
  EXPECT_FALSE(auth_->Check("Bearer abc"));
  EXPECT_FALSE(auth_->Check("Basic !!!!"));
  EXPECT_FALSE(auth_->Check("Basic"));
  EXPECT_FALSE(auth_->Check(""));
}

TEST_F(BasicAuthTest, CacheStaysBoundedAndCorrect) {
  // Many distinct successes (same user, the cache key includes the password) overflow the cache;
  // verification stays right throughout.
  for (size_t i = 0; i < BasicAuth::kMaxCached + 10; ++i) {
    ASSERT_TRUE(auth_->Verify("alice", "s3cret"));
    ASSERT_FALSE(auth_->Verify("alice", "wrong" + std::to_string(i)));
  }
}

TEST_F(BasicAuthTest, ConcurrentChecksAgree) {
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        if (!auth_->Verify("alice", "s3cret")) ++wrong;
        if (auth_->Verify("bob", "nope" + std::to_string(t))) ++wrong;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace gw::http
