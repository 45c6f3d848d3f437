// Helpers shared by the libFuzzer targets in tests/fuzz (one .cpp per target, see fuzz.cmake).
#ifndef GPUWARDEN_TESTS_FUZZ_FUZZ_UTIL_H_
#define GPUWARDEN_TESTS_FUZZ_FUZZ_UTIL_H_

#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

namespace gw::fuzz {

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// A property the target checks does not hold: print what and stop (libFuzzer saves the input).
[[noreturn]] inline void Fail(const std::string& what) {
  std::fprintf(stderr, "fuzz property failed: %s\n", what.c_str());
  std::abort();
}

// One private directory per fuzzing process, removed when the process exits normally. Targets
// that must go through a file (the readers take paths) write there: under $TMPDIR when set, else
// in /dev/shm when there is one (memory: thousands of files and fsyncs a second cost nothing).
class ScratchDir {
 public:
  ScratchDir() {
    std::string base = std::filesystem::temp_directory_path().string();
    if (std::getenv("TMPDIR") == nullptr && access("/dev/shm", W_OK) == 0) base = "/dev/shm";
    std::string tmpl = base + "/gwfuzz-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) Fail("mkdtemp");
    path_ = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline void WriteWhole(const std::string& path, std::string_view data) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) Fail("cannot write " + path);
  if (!data.empty() && std::fwrite(data.data(), 1, data.size(), f) != data.size()) {
    Fail("short write to " + path);
  }
  std::fclose(f);
}

}  // namespace gw::fuzz

#endif  // GPUWARDEN_TESTS_FUZZ_FUZZ_UTIL_H_
