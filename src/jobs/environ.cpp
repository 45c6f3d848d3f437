#include "jobs/environ.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <cerrno>

namespace gw::jobs {
namespace {

constexpr std::size_t kScratch = 4096;
constexpr std::size_t kMaxKey = 32;  // longer than any allowed key: such an entry is skipped

// Entry-by-entry state across reads. Holds only key bytes (names, never values) and the values
// of allowed keys.
struct Scan {
  enum class Phase { kKey, kValue, kSkip } phase = Phase::kKey;
  char key[kMaxKey];
  std::size_t key_len = 0;
  bool key_overflow = false;
  int slot = -1;  // allowed key being copied
  std::string value;

  void Consume(const char* data, std::size_t n, AllowedEnv* out) {
    for (std::size_t i = 0; i < n; ++i) {
      const char c = data[i];
      if (c == '\0') {
        Finish(out);
        continue;
      }
      switch (phase) {
        case Phase::kKey:
          if (c == '=') {
            slot = key_overflow ? -1 : Lookup();
            phase = slot >= 0 ? Phase::kValue : Phase::kSkip;
          } else if (key_len < kMaxKey) {
            key[key_len++] = c;
          } else {
            key_overflow = true;
          }
          break;
        case Phase::kValue:
          if (value.size() < kMaxEnvValue) value.push_back(c);
          break;
        case Phase::kSkip:
          break;
      }
    }
  }

  int Lookup() const {
    const std::string_view name(key, key_len);
    for (std::size_t k = 0; k < kEnvKeys.size(); ++k)
      if (kEnvKeys[k] == name) return static_cast<int>(k);
    return -1;
  }

  void Finish(AllowedEnv* out) {
    if (phase == Phase::kValue && slot >= 0) out->values[static_cast<std::size_t>(slot)] = value;
    phase = Phase::kKey;
    key_len = 0;
    key_overflow = false;
    slot = -1;
    value.clear();
  }
};

}  // namespace

Expected<AllowedEnv> ScanAllowedEnv(int fd) {
  AllowedEnv env;
  Scan scan;
  char scratch[kScratch];
  for (;;) {
    const ssize_t n = read(fd, scratch, sizeof scratch);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      explicit_bzero(scratch, sizeof scratch);
      explicit_bzero(scan.key, sizeof scan.key);
      return Error{std::string("reading the environment: ") + strerror(err)};
    }
    if (n == 0) break;
    scan.Consume(scratch, static_cast<std::size_t>(n), &env);
  }
  scan.Finish(&env);  // a last entry without a trailing NUL
  explicit_bzero(scratch, sizeof scratch);
  explicit_bzero(scan.key, sizeof scan.key);  // an entry without '=' may have left bytes here
  return env;
}

Expected<AllowedEnv> ReadAllowedEnv(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error{path + ": " + strerror(errno)};
  Expected<AllowedEnv> env = ScanAllowedEnv(fd);
  close(fd);
  if (!env.ok()) return Error{path + ": " + env.error().message};
  return env;
}

}  // namespace gw::jobs
