#include "http/basic_auth.h"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "http/codec.h"

namespace gw::http {
namespace {

// Equality whose running time depends only on the lengths.
bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    (void)CRYPTO_memcmp(a.data(), a.data(), a.size());
    return false;
  }
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

int BcryptCost(const std::string& hash) {
  return (hash[4] - '0') * 10 + (hash[5] - '0');
}

}  // namespace

size_t BasicAuth::DigestHash::operator()(const Digest& d) const {
  size_t h;
  std::memcpy(&h, d.data(), sizeof(h));  // the digest is already uniformly distributed
  return h;
}

gw::Expected<std::unique_ptr<BasicAuth>> BasicAuth::Create(
    std::map<std::string, std::string> users) {
  std::unique_ptr<BasicAuth> auth(new BasicAuth());
  int cost = 4;
  for (const auto& [user, hash] : users) {
    if (hash.size() != 60 || !std::isdigit(static_cast<unsigned char>(hash[4])) ||
        !std::isdigit(static_cast<unsigned char>(hash[5]))) {
      return gw::Error{"basic_auth_users: " + user + ": not a bcrypt hash"};
    }
    cost = std::max(cost, BcryptCost(hash));
  }
  auth->users_ = std::move(users);
  if (RAND_bytes(auth->pepper_.data(), static_cast<int>(auth->pepper_.size())) != 1) {
    return gw::Error{"basic auth: no randomness available for the credential cache"};
  }
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  if (!crypt_gensalt_rn("$2b$", static_cast<unsigned long>(cost), nullptr, 0, setting,
                        sizeof(setting))) {
    return gw::Error{"basic auth: libcrypt cannot make a bcrypt salt: " +
                     std::string(std::strerror(errno))};
  }
  auth->dummy_setting_ = setting;
  std::string probe;
  if (!auth->Bcrypt("probe", auth->dummy_setting_, &probe)) {
    return gw::Error{"basic auth: libcrypt cannot compute bcrypt ($2b$) hashes"};
  }
  return auth;
}

bool BasicAuth::Check(std::string_view authorization) {
  if (authorization.size() < 6 || ToLowerAscii(authorization.substr(0, 6)) != "basic ") {
    return false;
  }
  std::string decoded;
  if (!DecodeBase64(authorization.substr(6), &decoded)) return false;
  size_t colon = decoded.find(':');
  if (colon == std::string::npos) return false;
  std::string_view text(decoded);
  return Verify(text.substr(0, colon), text.substr(colon + 1));
}

bool BasicAuth::Verify(std::string_view user, std::string_view password) {
  // crypt() reads a C string: a password with a NUL would be checked as its prefix.
  if (password.find('\0') != std::string_view::npos) return false;

  // Walk every user so the time taken does not depend on where (or whether) the name matches.
  const std::string* hash = nullptr;
  for (const auto& [name, h] : users_) {
    if (ConstantTimeEquals(name, user)) hash = &h;
  }
  const std::string& setting = hash ? *hash : dummy_setting_;
  const Digest key = CacheKey(user, setting, password);
  if (hash) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    if (verified_.count(key)) return true;
  }

  std::string computed;
  const bool ran = Bcrypt(password, setting, &computed);
  const bool ok = hash != nullptr && ran && ConstantTimeEquals(computed, *hash);
  if (ok) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    if (verified_.size() >= kMaxCached) verified_.clear();
    verified_.insert(key);
  }
  return ok;
}

BasicAuth::Digest BasicAuth::CacheKey(std::string_view user, std::string_view hash,
                                      std::string_view password) const {
  Digest out{};
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  bool ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) == 1 &&
            EVP_DigestUpdate(ctx, pepper_.data(), pepper_.size()) == 1;
  // Length-prefixed fields, so ("ab", "c") and ("a", "bc") cannot collide.
  for (std::string_view field : {user, hash, password}) {
    const uint64_t size = field.size();
    ok = ok && EVP_DigestUpdate(ctx, &size, sizeof(size)) == 1 &&
         EVP_DigestUpdate(ctx, field.data(), field.size()) == 1;
  }
  unsigned int len = 0;
  ok = ok && EVP_DigestFinal_ex(ctx, out.data(), &len) == 1 && len == out.size();
  EVP_MD_CTX_free(ctx);
  if (!ok) {
    // Without a digest nothing can be cached safely: a key no success ever produces.
    RAND_bytes(out.data(), static_cast<int>(out.size()));
  }
  return out;
}

bool BasicAuth::Bcrypt(std::string_view password, const std::string& setting, std::string* out) {
  // crypt_data is ~32 KiB: keep it off the worker's stack. Value-initialised (zeroed), as
  // crypt_rn requires.
  auto data = std::make_unique<crypt_data>();
  std::string phrase(password);
  std::lock_guard<std::mutex> lock(bcrypt_mu_);
  const char* result =
      crypt_rn(phrase.c_str(), setting.c_str(), data.get(), static_cast<int>(sizeof(*data)));
  OPENSSL_cleanse(phrase.data(), phrase.size());
  if (!result || result[0] == '*') {
    OPENSSL_cleanse(data.get(), sizeof(*data));
    return false;
  }
  out->assign(result);
  OPENSSL_cleanse(data.get(), sizeof(*data));
  return true;
}

}  // namespace gw::http
