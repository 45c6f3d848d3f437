// tsdb/head.h — the in-memory part of the store: every series, its not-yet-persisted chunks,
// and the open chunk samples are appended to.
//
// Threading: ONE writer thread calls AddSeries/GetOrCreate/Append/CutAndCollect/DropPersisted;
// any number of reader threads may call Select/LabelsOf/ReadSamples concurrently with it. Readers
// see each series consistently (a sample is either fully visible or not). Series are never
// removed while the Head lives, so a SeriesRef stays valid.
#ifndef GPUWARDEN_TSDB_HEAD_H_
#define GPUWARDEN_TSDB_HEAD_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "base/error.h"
#include "tsdb/index.h"
#include "tsdb/storage.h"

namespace gw::tsdb {

struct HeadOptions {
  // The open chunk is encoded ("cut") when it holds this many samples or spans this long.
  size_t samples_per_chunk = 240;
  int64_t chunk_range_ms = 2 * 3600 * 1000;
};

// One encoded chunk of one series (see chunk.h).
struct EncodedChunk {
  int64_t mint_ms = 0, maxt_ms = 0;
  uint32_t num_samples = 0;
  std::string data;
};

class Head {
 public:
  explicit Head(HeadOptions options = {});
  Head(const Head&) = delete;
  Head& operator=(const Head&) = delete;

  // ---- Writer side. ----

  // Registers a series under a known id (loading from SQLite or replaying the WAL). Fails if the
  // id or the label set is already used by another series, or the labels are invalid.
  // `last_t_ms` is the newest persisted timestamp (appends at or before it are out of order).
  Status AddSeries(SeriesRef ref, const Labels& labels, int64_t last_t_ms = INT64_MIN);

  // The id of the series with `labels`, creating it (with the next free id) if new; `*created`
  // says which. Fails on invalid labels (unsorted, duplicate or empty names).
  Expected<SeriesRef> GetOrCreate(const Labels& labels, bool* created);

  // Appends one sample. Fails (and counts it) when t_ms <= the series' newest timestamp; fails
  // for an unknown ref.
  Status Append(SeriesRef ref, int64_t t_ms, double v);

  // Encodes every open chunk (if `cut_open`) and returns, per series, the encoded chunks not yet
  // persisted, oldest first. They stay in the Head (and visible) until DropPersisted.
  std::vector<std::pair<SeriesRef, std::vector<EncodedChunk>>> CutAndCollect(bool cut_open);
  // Forgets the oldest `count` encoded chunks of `ref` (they are now persisted elsewhere) and
  // records their newest timestamp as persisted (ReadSamples' `persisted_maxt_ms`).
  void DropPersisted(SeriesRef ref, size_t count);

  // ---- Reader side (any thread). ----

  std::vector<SeriesRef> Select(const std::vector<Matcher>& matchers) const;
  // A copy of the labels of `ref`; empty if unknown.
  Labels LabelsOf(SeriesRef ref) const;
  // Appends the samples of `ref` held in memory with t in [mint_ms, maxt_ms], in time order
  // (`out` grows once, by the samples of the chunks and segments overlapping the range). If
  // `persisted_maxt_ms` is given it receives, read under the same lock as the samples, the newest
  // timestamp persisted elsewhere for `ref` (INT64_MIN: none): a sample newer than it that was
  // appended before this call is among those returned (DB::ReadParts skips SQLite with it).
  Status ReadSamples(SeriesRef ref, int64_t mint_ms, int64_t maxt_ms, std::vector<Sample>* out,
                     int64_t* persisted_maxt_ms = nullptr) const;

  // A time before which `ref` is settled as the store holds it now: every sample of it older
  // than the returned time has left the head (DropPersisted) or was never appended here. The
  // oldest sample held in memory; INT64_MAX when memory holds none (everything the series has is
  // persisted; an append, newer than its newest sample, lands in memory and moves this back to
  // it); INT64_MIN for an unknown series.
  int64_t SettledBefore(SeriesRef ref) const;

  size_t num_series() const;
  // What the head holds in memory (/api/v1/status/tsdb): encoded chunks not yet persisted plus
  // open chunks with samples, and the oldest and newest timestamp among them (INT64_MAX and
  // INT64_MIN when it holds none, as Prometheus reports an empty head). Read-only; locks each
  // series briefly.
  struct MemoryStats {
    uint64_t chunks = 0;
    int64_t min_t_ms = INT64_MAX, max_t_ms = INT64_MIN;
  };
  MemoryStats memory_stats() const;
  uint64_t samples_appended() const { return samples_appended_.load(std::memory_order_relaxed); }
  uint64_t out_of_order() const { return out_of_order_.load(std::memory_order_relaxed); }

 private:
  // The open chunk is kept mostly encoded: its samples are appended to `tail` (raw, at most
  // kSegmentSamples), and every full tail is encoded with the chunk codec into a segment appended
  // to `segments`. Cutting decodes the segments and encodes the whole chunk once (chunks stay
  // what the codec makes of all their samples). Raw samples cost 16 B each; an 8-GPU agent has
  // ~1,000 series, each with up to samples_per_chunk samples open, so raw open chunks were half
  // of its heap (docs/benchmarks.md, issue 12). Memory per series: the tail's capacity (512 B)
  // plus a few bytes per encoded sample.
  // Allocations: `tail` and `segments` keep their capacity across cuts, so the steady state
  // allocates only inside the codec — once per segment (EncodeChunk's result) and at each cut —
  // never per sample.
  static constexpr size_t kSegmentSamples = 32;
  // Segment header in `segments`: newest timestamp (8 B), sample count (4 B), encoded size
  // (4 B), then the encoded bytes.
  static constexpr size_t kSegmentHeader = 16;
  struct MemSeries {
    mutable std::mutex mu;  // guards the fields below; taken by the writer and by readers
    std::vector<EncodedChunk> chunks;
    std::string segments;       // the open chunk's encoded segments, oldest first
    std::vector<Sample> tail;   // the open chunk's newest samples, not yet in a segment
    uint32_t open_samples = 0;  // samples in the open chunk (segments + tail)
    int64_t open_mint_ms = 0;   // its oldest timestamp (when open_samples > 0)
    int64_t last_t_ms = INT64_MIN;
    int64_t persisted_maxt_ms = INT64_MIN;  // newest timestamp persisted elsewhere
  };
  MemSeries* Find(SeriesRef ref) const;
  void CutLocked(MemSeries* s);
  static void SealTailLocked(MemSeries* s);
  // Appends the open chunk's samples with t in [mint_ms, maxt_ms] (all if the range is full).
  static Status ReadOpenLocked(const MemSeries& s, int64_t mint_ms, int64_t maxt_ms,
                               std::vector<Sample>* out);
  static size_t OpenSamplesInRange(const MemSeries& s, int64_t mint_ms, int64_t maxt_ms);

  HeadOptions options_;
  mutable std::shared_mutex mu_;  // guards index_ and the shape of series_
  SeriesIndex index_;
  std::vector<std::unique_ptr<MemSeries>> series_;  // indexed by ref; [0] unused
  std::atomic<uint64_t> samples_appended_{0}, out_of_order_{0};
};

}  // namespace gw::tsdb

#endif  // GPUWARDEN_TSDB_HEAD_H_
