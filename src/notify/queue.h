// notify/queue.h — internal: the per-target alert queue and its file. Not part of the module's
// public API (notify.h); exposed in a header so the tests can drive it without threads.
#ifndef GPUWARDEN_NOTIFY_QUEUE_H_
#define GPUWARDEN_NOTIFY_QUEUE_H_

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "notify/notify.h"

namespace gw::notify {

// Latest state per alert fingerprint, oldest update first, at most `max_entries` entries.
// Not thread-safe; the owner locks.
class AlertQueue {
 public:
  explicit AlertQueue(int64_t max_entries) : max_entries_(max_entries < 1 ? 1 : max_entries) {}

  // Stores `alert` (labels already sorted), replacing the queued state of the same fingerprint;
  // returns how many older entries were dropped to stay within max_entries.
  int64_t Put(Alert alert);

  // Up to `max` of the oldest entries, still queued. `keys` identify exactly these states.
  struct Batch {
    std::vector<Alert> alerts;
    std::vector<std::pair<uint64_t, uint64_t>> keys;  // (fingerprint, update sequence)
  };
  Batch Peek(size_t max) const;
  // Removes the batch's entries that were not replaced since Peek; returns how many.
  size_t Remove(const Batch& batch);

  std::vector<Alert> Snapshot() const;  // oldest first
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }

 private:
  struct Entry {
    Alert alert;
    uint64_t seq;
  };
  int64_t max_entries_;
  uint64_t next_seq_ = 1;
  std::unordered_map<uint64_t, Entry> entries_;  // by fingerprint
  std::map<uint64_t, uint64_t> order_;           // seq -> fingerprint
};

// The on-disk form of one target's queue (format in notify.h).
struct QueueFile {
  std::string kind;  // "alertmanager" | "webhook"
  std::string target_url;
  std::vector<Alert> alerts;
};

const char* KindName(Target::Kind kind);
// <dir>/<kind>-<fnv64(url)>.json
std::string QueueFilePath(const std::string& dir, const Target& target);
// Atomic replace: <path>.tmp, fsync, rename, fsync(dir).
Status WriteQueueFile(const std::string& path, const QueueFile& file);
// Fails with a message naming the file and the fault when it is unreadable, not JSON, of the
// wrong shape, or its checksum does not match.
Expected<QueueFile> ReadQueueFile(const std::string& path);

}  // namespace gw::notify

#endif  // GPUWARDEN_NOTIFY_QUEUE_H_
