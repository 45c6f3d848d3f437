// tsdb/wal.h — the write-ahead log: what the head holds, on disk before it is in SQLite.
//
// A directory of numbered segment files ("00000001", "00000002", ...). Records are appended and
// never rewritten; each carries its length and a CRC-32, so a torn write at the tail (kill -9,
// power loss) is detected on replay. Format: docs/tsdb-format.md.
//
// Durability contract: a batch is *committed* when Commit() returns OK. A committed batch has been
// handed to the kernel with write(2), so it survives the process being killed (kill -9). Surviving
// power loss needs fsync(2): WalSync::kAlways fsyncs in every Commit; kInterval (the default)
// fsyncs in the first Commit at least `sync_interval_s` after the previous fsync; kNever leaves it
// to the kernel.
//
// Not thread-safe: one writer (the store's appending thread) owns it.
#ifndef GPUWARDEN_TSDB_WAL_H_
#define GPUWARDEN_TSDB_WAL_H_

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

struct WalOptions {
  std::string dir;                       // created if missing
  uint64_t segment_bytes = 64ULL << 20;  // a new segment starts past this size
  WalSync sync = WalSync::kInterval;
  double sync_interval_s = 10;
};

struct WalReplayStats {
  uint64_t records = 0;      // good records read
  uint64_t samples = 0;      // samples in them
  uint64_t corruptions = 0;  // segments whose tail was torn or failed its CRC
};

class Wal {
 public:
  using SeriesFn = std::function<void(SeriesRef ref, const Labels& labels)>;
  using SampleFn = std::function<void(SeriesRef ref, int64_t t_ms, double v)>;

  // Opens (creating) the directory, replays every segment in order through the callbacks, then
  // starts a fresh segment for new records. A bad record stops the replay of its segment: the
  // problem is logged, counted in `*stats`, the segment is truncated at the last good record,
  // and replay goes on with the next segment. Fails only on I/O errors.
  static Expected<std::unique_ptr<Wal>> Open(const WalOptions& options, Logger* logger,
                                             const SeriesFn& on_series, const SampleFn& on_sample,
                                             WalReplayStats* stats);
  ~Wal();
  Wal(const Wal&) = delete;
  Wal& operator=(const Wal&) = delete;

  // Buffer records for the next Commit.
  void AddSeries(SeriesRef ref, const Labels& labels);
  void AddSample(SeriesRef ref, int64_t t_ms, double v);

  // Writes everything buffered with one write(2) (see the durability contract above).
  Status Commit();

  // Starts a new segment and deletes every older one. Call only once everything the older
  // segments hold is persisted elsewhere (after a Flush to SQLite).
  Status Checkpoint();

  // Bytes in all segments on disk.
  uint64_t size_bytes() const;
  const std::string& dir() const { return options_.dir; }

 private:
  explicit Wal(WalOptions options, Logger* logger);
  Status StartSegment();
  void FlushSamplesRecord();

  WalOptions options_;
  Logger* logger_;
  int fd_ = -1;
  uint64_t segment_ = 0, segment_size_ = 0;
  std::string pending_;  // framed records awaiting Commit
  std::string samples_;  // payload of the samples record being built
  uint64_t samples_count_ = 0;
  int64_t samples_prev_t_ = 0;
  std::chrono::steady_clock::time_point last_sync_;
};

}  // namespace gw::tsdb

#endif  // GPUWARDEN_TSDB_WAL_H_
