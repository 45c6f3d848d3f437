// Test support: a real full disk. A small tmpfs mounted over a folder (needs root or
// CAP_SYS_ADMIN; tests skip with the reason otherwise), and a filler that takes its last byte.
#ifndef GPUWARDEN_TESTS_SUPPORT_TMPFS_H_
#define GPUWARDEN_TESTS_SUPPORT_TMPFS_H_

#include <sys/mount.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

namespace gw::testing {

class Tmpfs {
 public:
  // Mounts a tmpfs of `size` ("8m") over `dir`, created if missing; mounted() says whether it
  // worked and error() why not. Unmounted (lazily) by the destructor.
  Tmpfs(const std::string& dir, const std::string& size) : dir_(dir) {
    std::filesystem::create_directories(dir);
    mounted_ = ::mount("tmpfs", dir.c_str(), "tmpfs", 0, ("size=" + size).c_str()) == 0;
    if (!mounted_) error_ = std::strerror(errno);
  }
  ~Tmpfs() {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  Tmpfs(const Tmpfs&) = delete;
  Tmpfs& operator=(const Tmpfs&) = delete;
  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }

 private:
  std::string dir_, error_;
  bool mounted_ = false;
};

// Fills the file system of `dir` to the last byte; returns the filler's path (remove it to give
// the room back).
inline std::string FillUp(const std::string& dir) {
  const std::string path = dir + "/filler";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return path;
  std::setvbuf(f, nullptr, _IONBF, 0);
  const std::string block(4096, 'x');
  while (std::fwrite(block.data(), 1, block.size(), f) == block.size()) {
  }
  while (std::fwrite("x", 1, 1, f) == 1) {
  }
  std::fclose(f);
  return path;
}

}  // namespace gw::testing

#endif  // GPUWARDEN_TESTS_SUPPORT_TMPFS_H_
