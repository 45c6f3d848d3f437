// tsdb/wal.h — the write-ahead log: what the head holds, on disk before it is in SQLite.
//
// A directory of numbered segment files ("00000001", "00000002", ...). Records are appended and
// never rewritten; each carries its length and a CRC-32, so a torn or damaged record (kill -9,
// power loss, a full disk) is detected on replay. Format: docs/tsdb-format.md.
//
// Durability contract: a batch is *committed* when Commit() returns OK. A committed batch has been
// handed to the kernel with write(2), so it survives the process being killed (kill -9). Surviving
// power loss needs fsync(2): WalSync::kAlways fsyncs in every Commit; kInterval (the default)
// fsyncs in the first Commit at least `sync_interval_s` after the previous fsync; kNever leaves it
// to the kernel.
//
// Write failures (ENOSPC, EIO): a Commit whose write fails leaves the segment as it was before it
// (the partial record is truncated away; if even that fails, the next Commit starts a new
// segment), keeps the batch and writes it, ahead of newer records, at the next Commit. While
// writes fail the kept records are bounded (`max_pending_bytes`): past it the kept *sample*
// records are given up (counted in dropped_samples(); the head still holds them until the next
// Flush), series records never. Checkpoint() works while writes fail (it only removes files).
//
// Not thread-safe: one writer (the store's appending thread) owns it.
#ifndef GPUWARDEN_TSDB_WAL_H_
#define GPUWARDEN_TSDB_WAL_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/error.h"
#include "base/log.h"
#include "tsdb/index.h"
#include "tsdb/storage.h"

namespace gw::tsdb {

enum class WalSync { kNever, kInterval, kAlways };

// The system calls the WAL writes through (a seam: tests inject ENOSPC and short writes). Each
// returns what the system call returns and sets errno the same way.
class WalFiles {
 public:
  virtual ~WalFiles() = default;
  // open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)
  virtual int OpenAppend(const std::string& path);
  virtual ssize_t Write(int fd, const void* data, size_t size);
  virtual int Truncate(int fd, off_t size);
  virtual int Sync(int fd);  // fdatasync
  // The plain system calls.
  static WalFiles* System();
};

struct WalOptions {
  std::string dir;                       // created if missing
  uint64_t segment_bytes = 64ULL << 20;  // a new segment starts past this size
  WalSync sync = WalSync::kInterval;
  double sync_interval_s = 10;
  uint64_t max_pending_bytes = 64ULL << 20;  // records kept for a retry while writes fail
  WalFiles* files = nullptr;                 // nullptr: WalFiles::System()
};

struct WalReplayStats {
  uint64_t records = 0;        // good records read
  uint64_t samples = 0;        // samples in them
  uint64_t corruptions = 0;    // damaged stretches found (torn tails, bad CRCs, bad records)
  uint64_t skipped_bytes = 0;  // bytes in them (skipped to the next whole record, or dropped)
  uint64_t segments = 0;       // segments read
};

class Wal {
 public:
  using SeriesFn = std::function<void(SeriesRef ref, const Labels& labels)>;
  using SampleFn = std::function<void(SeriesRef ref, int64_t t_ms, double v)>;

  // Opens (creating) the directory, replays every segment in order through the callbacks, then
  // starts a fresh segment for new records. A damaged record is skipped: replay resynchronises
  // on the next whole record (valid header, length, CRC and payload) and goes on, so every whole
  // record after the damage is kept; the skipped bytes are logged and counted in `*stats`. A
  // damaged tail (nothing whole after it: a torn last write) is truncated away. Fails only on
  // I/O errors.
  static Expected<std::unique_ptr<Wal>> Open(const WalOptions& options, Logger* logger,
                                             const SeriesFn& on_series, const SampleFn& on_sample,
                                             WalReplayStats* stats);
  // Replays `dir` (missing: nothing) without changing anything in it: no truncation, no new
  // segment. For readers beside a live writer: a segment removed while it is read is skipped
  // and reported in `*vanished`, and a damaged tail of the newest segment (a write in progress)
  // is not logged.
  static Status Replay(const std::string& dir, Logger* logger, const SeriesFn& on_series,
                       const SampleFn& on_sample, WalReplayStats* stats, bool* vanished);
  ~Wal();
  Wal(const Wal&) = delete;
  Wal& operator=(const Wal&) = delete;

  // Buffer records for the next Commit.
  void AddSeries(SeriesRef ref, const Labels& labels);
  void AddSample(SeriesRef ref, int64_t t_ms, double v);

  // Writes everything buffered (records kept from failed Commits first) with one write(2) (see
  // the durability contract and write failures above).
  Status Commit();

  // Forgets everything buffered or kept, starts a new segment and deletes every older one. Call
  // only once everything appended so far is persisted elsewhere (after a Flush to SQLite). When
  // no new segment can be created (a full disk), the current one is emptied instead.
  Status Checkpoint();

  // Bytes in all segments on disk.
  uint64_t size_bytes() const;
  const std::string& dir() const { return options_.dir; }
  // Changes whenever a new segment is started: series records written before it may be in a
  // segment that a later replay does not see, so the store writes them again (db.cpp).
  uint64_t generation() const { return generation_; }
  // Whether anything awaits a Commit.
  bool has_buffered() const { return !pending_.empty() || samples_count_ > 0; }
  // Bytes of records kept for a retry after failed writes.
  uint64_t pending_bytes() const { return pending_.size(); }
  // Samples given up from the retry buffer (it was full) since open.
  uint64_t dropped_samples() const { return dropped_samples_; }

 private:
  explicit Wal(WalOptions options, Logger* logger);
  Status StartSegment();
  void FlushSamplesRecord();
  void DropPendingSamples();

  WalOptions options_;
  Logger* logger_;
  WalFiles* files_;
  int fd_ = -1;
  uint64_t segment_ = 0, segment_size_ = 0;  // size: bytes of whole records in the segment
  bool broken_ = false;  // the segment's end could not be restored: start a new one first
  std::string pending_;  // framed records awaiting Commit (or kept from a failed one)
  std::string samples_;  // payload of the samples record being built
  uint64_t samples_count_ = 0;
  int64_t samples_prev_t_ = 0;
  uint64_t dropped_samples_ = 0;
  uint64_t generation_ = 0;
  std::chrono::steady_clock::time_point last_sync_;
};

}  // namespace gw::tsdb

#endif  // GPUWARDEN_TSDB_WAL_H_
