// tsdb/dir_lock.h — one writer per data directory: an exclusive flock(2) on DIR/LOCK, held by
// `gpuwarden serve` and by every command that writes the store (`tsdb import`), for as long as
// the process runs. The file says who holds it ("<pid> <command>"), so a second writer is refused
// with a useful message:
//
//   auto lock = DirLock::Acquire("/var/lib/gpuwarden", "serve");
//   if (!lock.ok()) ... // "data directory /var/lib/gpuwarden is in use by gpuwarden pid 4242
//   (serve)"
//
// The lock goes with the process (kill -9 included: the kernel drops it); the file stays. Readers
// (query, export, diagnose, report) take no lock: they open the store read-only.
#ifndef GPUWARDEN_TSDB_DIR_LOCK_H_
#define GPUWARDEN_TSDB_DIR_LOCK_H_

#include <memory>
#include <string>

#include "base/error.h"

namespace gw::tsdb {

class DirLock {
 public:
  // Creates `dir` if missing, then takes the lock without waiting. Refused (nothing in the
  // directory changed) when another process holds it.
  static Expected<std::unique_ptr<DirLock>> Acquire(const std::string& dir,
                                                    const std::string& command);
  ~DirLock();
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

  const std::string& path() const { return path_; }

 private:
  DirLock(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_;
};

}  // namespace gw::tsdb

#endif  // GPUWARDEN_TSDB_DIR_LOCK_H_
