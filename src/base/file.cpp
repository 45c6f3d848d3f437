#include "base/file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gw {
namespace {

Error Failed(const char* call, const std::string& path) {
  return Error{std::string(call) + " " + path + ": " + std::strerror(errno)};
}

}  // namespace

Status WriteFileDurably(const std::string& path, std::string_view text) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Failed("create", tmp);
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      Error e = Failed("write", tmp);
      ::close(fd);
      return e;
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    Error e = Failed("fsync", tmp);
    ::close(fd);
    return e;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return Failed("rename", tmp);
  const std::size_t slash = path.find_last_of('/');
  const std::string dir =
      slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);  // makes the rename durable; a failure here leaves a whole file either way
    ::close(dfd);
  }
  return Status::Ok();
}

}  // namespace gw
