#include "tsdb/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace gw::tsdb {
namespace {

// "<pid> <command>" from the holder's LOCK file; empty when it cannot be read (the holder may
// not have written it yet).
std::string Holder(int fd) {
  char buf[256];
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return "";
  std::string text(buf, static_cast<size_t>(n));
  if (size_t nl = text.find('\n'); nl != std::string::npos) text.resize(nl);
  const size_t space = text.find(' ');
  const std::string pid = text.substr(0, space);
  if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) return "";
  std::string out = "gpuwarden pid " + pid;
  if (space != std::string::npos && space + 1 < text.size())
    out += " (" + text.substr(space + 1) + ")";
  return out;
}

}  // namespace

Expected<std::unique_ptr<DirLock>> DirLock::Acquire(const std::string& dir,
                                                    const std::string& command) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error{"cannot create the data directory " + dir + ": " + ec.message()};
  const std::string path = dir + "/LOCK";
  // Opened without O_TRUNC: a refused writer leaves the holder's note as it is. Close-on-exec:
  // children (reclaim commands, hooks) must not keep the lock after the agent is gone.
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Error{"cannot open " + path + ": " + std::strerror(errno)};
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    std::string holder = err == EWOULDBLOCK ? Holder(fd) : "";
    ::close(fd);
    if (err != EWOULDBLOCK) return Error{"cannot lock " + path + ": " + std::strerror(err)};
    return Error{"data directory " + dir + " is in use by " +
                 (holder.empty() ? std::string("another gpuwarden process") : holder) +
                 "; only one process may write it at a time (read-only commands need no lock)"};
  }
  const std::string note = std::to_string(::getpid()) + " " + command + "\n";
  // Without the note (a full disk) the lock still holds; a refused writer then names no pid.
  const bool noted = ::ftruncate(fd, 0) == 0 &&
                     ::pwrite(fd, note.data(), note.size(), 0) == static_cast<ssize_t>(note.size());
  (void)noted;
  return std::unique_ptr<DirLock>(new DirLock(path, fd));
}

DirLock::~DirLock() {
  ::close(fd_);  // releases the lock
}

}  // namespace gw::tsdb
