// HTTP basic authentication against bcrypt hashes (web config `basic_auth_users`), the way
// exporter-toolkit does it, with two hardenings.
//
// - bcrypt is slow on purpose (cost 10 is about 70 ms), so a successful check is cached. The
//   cache holds SHA-256(pepper, user, hash, password) digests, never a password; the pepper is
//   random per process, so a memory dump does not give an offline SHA-256 oracle. Failures are
//   not cached.
// - A name that is not configured still costs one bcrypt run of the same cost (on a random
//   salt), and names are compared in constant time, so timing does not reveal which users exist.
//
// bcrypt runs are serialised (one at a time), as in exporter-toolkit, so a flood of bad
// passwords costs one core, not all workers. Verification uses libxcrypt's crypt_rn.
//
// Thread-safe: Check/Verify may be called from any number of threads.
#ifndef GPUWARDEN_HTTP_BASIC_AUTH_H_
#define GPUWARDEN_HTTP_BASIC_AUTH_H_

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>

#include "base/error.h"

namespace gw::http {

class BasicAuth {
 public:
  // `users`: user -> bcrypt hash ($2a$/$2b$/$2y$, as validated by ParseWebConfig). Fails if
  // libcrypt cannot compute bcrypt or the system has no randomness.
  static gw::Expected<std::unique_ptr<BasicAuth>> Create(std::map<std::string, std::string> users);

  // True when `authorization` (an Authorization header value, "Basic base64(user:password)")
  // names a configured user with the right password.
  bool Check(std::string_view authorization);

  // True when `password` is right for `user`.
  bool Verify(std::string_view user, std::string_view password);

  // Cached successes at most; beyond it the cache is emptied and refills.
  static constexpr size_t kMaxCached = 256;

  BasicAuth(const BasicAuth&) = delete;
  BasicAuth& operator=(const BasicAuth&) = delete;

 private:
  using Digest = std::array<unsigned char, 32>;
  struct DigestHash {
    size_t operator()(const Digest& d) const;
  };

  BasicAuth() = default;
  Digest CacheKey(std::string_view user, std::string_view hash, std::string_view password) const;
  bool Bcrypt(std::string_view password, const std::string& setting, std::string* out);

  std::map<std::string, std::string> users_;
  std::string dummy_setting_;  // bcrypt salt of the highest configured cost, for unknown names
  std::array<unsigned char, 32> pepper_{};

  std::mutex bcrypt_mu_;  // one bcrypt at a time

  std::mutex cache_mu_;
  std::unordered_set<Digest, DigestHash> verified_;  // guarded by cache_mu_
};

}  // namespace gw::http

#endif  // GPUWARDEN_HTTP_BASIC_AUTH_H_
