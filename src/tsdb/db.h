// tsdb/db.h — the store: head + write-ahead log + SQLite, behind one object.
//
//   auto db = DB::Open({.dir = "/var/lib/gpuwarden"});        // loads series, replays the WAL
//   SeriesRef ref = *db->GetRef(labels);                     // once per series
//   db->Append(ref, t_ms, v);  ...  db->Commit();            // once per collection cycle
//   db->Flush();                                             // every few minutes to hours
//   auto q = db->NewQuerier();  q->Select(...);              // any thread
//
// Data directory layout: `tsdb.sqlite` (+ SQLite's own -wal/-shm files) holds series, persisted
// chunks and compacted blocks; `wal/` holds the write-ahead log of everything since the last
// Flush. Format (version 3; version 2 is read and upgraded in place, older ones are refused) and
// crash-safety guarantees:
// docs/tsdb-format.md.
//
// Compaction: Flush (with DBOptions::compact_on_flush, the default) or Compact() re-encodes a
// series' flushed data into one *block* per aligned window of block_range_ms (6 h), zstd'd, in
// the same SQLite transaction — a crash at any point loses nothing. Every block carries the
// 5-minute rollups (rollup.h) of all its samples, written with them; retention deletes the
// samples and keeps the rollups.
// Reads decode blocks through a bounded cache (block_cache_bytes); a read of one series spanning
// more than 4 blocks (24 h at the default range) uses what the cache holds but adds nothing to
// it, so long scans neither evict the recent blocks dashboards re-read nor grow memory. Decoded
// rollup columns are kept in a second bounded cache (rollup_cache_bytes).
//
// Memory of reads (the bound measured in docs/benchmarks.md, "Long ranges from rollups"): the
// block cache (block_cache_bytes) + the rollup cache (rollup_cache_bytes) + what the queries
// running at the moment hold: the decoded samples of the series a Select returns (16 bytes a
// sample; a 7-day raw read of one 1 s series is ~9.7 MB), and for windows answered from rollups
// (SelectRollups) 120 bytes a window (a week of one series: 2016 windows, ~240 KB). The agent's
// query API gives freed memory back to the kernel after queries (base/heap.h), so between queries
// the resident size returns to the cache + the idle process.
//
// Rollups in queries: where raw data has aged out (before the newest ApplyRetention cutoff), a
// Querier's Select returns one sample per 5-minute window — the window's last numeric sample
// (value and timestamp) — so long-range dashboards still see a (coarser) series.
//
// Threading: the *writer* methods (GetRef, Append, MarkStale, Commit, Flush, Compact,
// ApplyRetention) must be called from one thread at a time (the collector's). NewQuerier, stats
// and every Querier method may be called from any number of threads concurrently with the
// writer; they wait for the SQLite part of a Flush/Compact (one transaction) and otherwise see
// the data before or after it, never a mix that loses samples. A Querier must not outlive its
// DB.
#ifndef GPUWARDEN_TSDB_DB_H_
#define GPUWARDEN_TSDB_DB_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "base/log.h"
#include "tsdb/failure_log.h"
#include "tsdb/head.h"
#include "tsdb/rollup.h"
#include "tsdb/storage.h"
#include "tsdb/wal.h"

struct sqlite3;
struct sqlite3_stmt;

namespace gw::tsdb {

struct DBOptions {
  std::string dir;  // created if missing
  HeadOptions head;
  WalSync wal_sync = WalSync::kInterval;
  double wal_sync_interval_s = 10;
  uint64_t wal_segment_bytes = 64ULL << 20;
  int64_t retention_ms = 15LL * 24 * 3600 * 1000;          // raw chunks older than this are deleted
  int64_t rollup_retention_ms = 365LL * 24 * 3600 * 1000;  // and 5-minute rollups older than this
  Logger* logger = nullptr;                                // nullptr: stay silent
  // Compaction window (fixed when the data directory is created; later values are ignored).
  int64_t block_range_ms = 6LL * 3600 * 1000;
  bool compact_on_flush = true;  // Flush writes blocks directly (else chunk rows; see Compact)
  int zstd_level = 3;
  size_t block_cache_bytes = 64ULL << 20;  // decoded blocks kept for queries (0: no cache)
  // Decoded rollup columns kept for long-range queries (0: no cache): a week of one series is
  // 2016 windows, ~240 KB decoded, so the default holds about 70 series-weeks.
  size_t rollup_cache_bytes = 16ULL << 20;
  // Compaction writes no rollups column for a block of fewer samples than this whose rollups
  // would be its present samples' alone; readers compute them from the samples, retention before
  // it drops them (docs/tsdb-format.md §1b, "Sparse blocks"). Per 6 h of block_range_ms (a
  // 24 h block needs 4 times as many: the same per 5-minute window). 6 h blocks hold fewer beyond
  // ~10.5 s between samples (Prometheus' usual 15 s included), where a 5-minute window's rollup
  // costs about what 9 of its 20-odd samples do. 0: always write.
  size_t rollup_min_samples = 2048;
  // false: Append/Commit do not write the WAL; only Flush makes data durable. For bulk imports
  // that can simply be re-run after a crash (`gpuwarden tsdb import`): a crash before the final
  // Flush loses the import, never older data.
  bool write_wal = true;
  // Readers beside a live writer (`gpuwarden query`, `tsdb export`, `diagnose`, `report`): SQLite
  // opened read-only, the WAL replayed without being changed (no new segment, no truncation),
  // nothing created (a directory without tsdb.sqlite reads as the WAL alone). Writer methods
  // fail, except GetRef/Append, which change only this process' memory.
  bool read_only = false;
  // Write failures (docs/tsdb-format.md, "Write failures").
  uint64_t wal_max_pending_bytes = 64ULL << 20;  // WAL records kept in memory for a retry
  double failure_summary_interval_s = 60;        // one log line per interval while writes fail
  WalFiles* wal_files = nullptr;                 // tests: injected write failures
};

struct DBStats {
  uint64_t series = 0;
  uint64_t samples_appended = 0;      // accepted since open (WAL replay included)
  uint64_t out_of_order = 0;          // rejected by Append since open (replay excluded)
  uint64_t wal_replayed_samples = 0;  // read back from the WAL at open
  uint64_t wal_corruptions = 0;       // torn/damaged WAL stretches found at open
  uint64_t wal_skipped_bytes = 0;     // bytes in them (skipped or cut off)
  uint64_t wal_orphan_samples = 0;    // replayed samples of series no record names (dropped)
  uint64_t wal_write_failures = 0;    // Commits whose WAL write failed since open
  bool wal_writes_failing = false;    // the last WAL write failed
  uint64_t wal_pending_bytes = 0;     // records kept in memory for a retry
  uint64_t wal_dropped_samples = 0;   // samples left out of the WAL (retry buffer full)
  uint64_t flush_failures = 0;        // Flushes that failed since open
  uint64_t chunk_corruptions = 0;     // persisted chunks that failed their checksum or decode
  uint64_t chunks_persisted = 0;      // chunks written to SQLite since open
  uint64_t wal_bytes = 0;
  uint64_t sqlite_bytes = 0;   // the database file and SQLite's own journal (-wal)
  uint64_t bytes_on_disk = 0;  // wal_bytes + sqlite_bytes
  double last_flush_seconds = 0;
  // Compaction (Flush with compact_on_flush, or Compact()).
  uint64_t compactions = 0;  // compaction passes that wrote at least one block
  uint64_t blocks_written = 0;
  double compaction_seconds_total = 0;
  double last_compaction_seconds = 0;
  // Queries through NewQuerier()'s Select.
  uint64_t selects = 0;
  double select_seconds_total = 0;
  uint64_t block_cache_hits = 0, block_cache_misses = 0;
  uint64_t block_cache_bytes = 0;  // decoded samples held now
  // Blocks decoded from SQLite since open by reads (cache misses) and by ReadRollups' fallback
  // for blocks written before format 3; compaction's and retention's decodes are not counted.
  uint64_t blocks_decoded = 0;
  // Blocks' rollup columns decoded by ReadRollups since open (the rollup cache's misses), and
  // those the cache answered; bytes of decoded rollups it holds now.
  uint64_t rollups_decoded = 0, rollup_cache_hits = 0;
  uint64_t rollup_cache_bytes = 0;
};

class DB {
 public:
  // Opens or creates the store in options.dir: loads the series from SQLite, then replays the
  // WAL into the head. Corruption found on the way is logged and counted, not fatal; I/O and
  // SQLite errors are.
  static Expected<std::unique_ptr<DB>> Open(const DBOptions& options);
  // Commits buffered WAL records; does not Flush (the WAL keeps the head).
  ~DB();
  DB(const DB&) = delete;
  DB& operator=(const DB&) = delete;

  // ---- Writer (one thread). ----

  // The id of the series with `labels` (sorted by name, names unique and non-empty), created if
  // new. Use it with Append(ref, ...) to skip hashing the labels on every sample.
  Expected<SeriesRef> GetRef(const Labels& labels);
  // Appends a sample: visible to queriers at once, durable after the next Commit. A sample at or
  // before the series' newest timestamp is rejected and counted (DBStats::out_of_order).
  Status Append(SeriesRef ref, int64_t t_ms, double v);
  Status Append(const Labels& labels, int64_t t_ms, double v);
  // Appends the stale marker (StaleNaN) — the series has disappeared at t_ms.
  Status MarkStale(SeriesRef ref, int64_t t_ms) { return Append(ref, t_ms, StaleNaN()); }
  // Writes the batch appended since the last Commit to the WAL (one write). After it returns OK,
  // the batch survives kill -9 (see wal.h for fsync). When the write fails the batch stays in
  // memory (and visible) and is written by the next Commit that works, or persisted by the next
  // Flush; the failure is logged at most once per failure_summary_interval_s and counted in
  // stats(), so callers need not log it again.
  Status Commit();
  // Commits, encodes every open chunk, writes all in-memory chunks, their 5-minute rollups and
  // new series to SQLite in one transaction, then drops the chunks from memory and deletes the
  // WAL segments they came from. Call every few minutes (each Flush ends every open chunk, so
  // much more often costs compression). A failing WAL write does not stop it (SQLite then makes
  // the data durable); a failed Flush is logged like a failed Commit.
  Status Flush();
  // Re-encodes every series' chunk rows (left by a Flush without compact_on_flush) into blocks,
  // merged with the blocks already there, in one SQLite transaction.
  Status Compact();
  // Deletes persisted chunks (and the samples of blocks) whose newest sample is older than
  // now_ms - retention_ms, and rollups whose window starts before now_ms - rollup_retention_ms.
  // A block's rollups outlive its samples.
  Status ApplyRetention(int64_t now_ms);

  // ---- Readers (any thread). ----

  // A Querier over everything appended so far (persisted and in memory), duplicates removed.
  // Thread-safe; reads the live store (no snapshot isolation across calls).
  std::unique_ptr<tsdb::Querier> NewQuerier();
  DBStats stats() const;
  // The time window of one block, fixed when the directory was created (DBOptions::block_range_ms).
  int64_t block_range_ms() const { return block_range_ms_; }

  // The samples of one series in [mint_ms, maxt_ms], time-ordered and unique in time.
  Status ReadSeries(SeriesRef ref, int64_t mint_ms, int64_t maxt_ms, std::vector<Sample>* out);
  // ReadSeries, preceded where raw data has aged out (before the newest retention cutoff) by one
  // sample per 5-minute rollup window: (last_t, last). What Select returns.
  Status ReadSeriesWithRollups(SeriesRef ref, int64_t mint_ms, int64_t maxt_ms,
                               std::vector<Sample>* out);
  // The same samples as ReadSeries / ReadSeriesWithRollups, as runs (out->labels untouched):
  // views of the cached decoded blocks where the sources follow each other in time, so a read
  // copies only the head's and chunk rows' samples; one merged, owned run otherwise.
  Status ReadSeriesRuns(SeriesRef ref, int64_t mint_ms, int64_t maxt_ms, SeriesRuns* out);
  Status ReadSeriesRunsWithRollups(SeriesRef ref, int64_t mint_ms, int64_t maxt_ms,
                                   SeriesRuns* out);
  // Counts one Select of `seconds` in stats() (called by the Querier).
  void RecordSelect(double seconds);
  // The persisted 5-minute rollups of one series for windows overlapping [mint_ms, maxt_ms],
  // ascending. Rollups cover flushed data only (the head's samples are summarised at Flush).
  // Stored with every block since format 3, so this decodes no samples — except for blocks
  // written before (format 2), whose present samples are summarised here, as they were.
  Status ReadRollups(SeriesRef ref, int64_t mint_ms, int64_t maxt_ms, std::vector<Rollup>* out);
  // The rollups a Querier's SelectRollups returns for one series: those of ReadRollups for the
  // windows [t, t + 5 min) with t >= mint_ms and t + 5 min <= maxt_ms + 1 that are *complete*,
  // t + 5 min <= *complete_before_ms = Head::SettledBefore(ref): the oldest sample still in
  // memory, or INT64_MAX when memory holds none of the series' samples.
  // Why that is exact: every sample older than that time has left memory, so it is in SQLite (a
  // Flush drops chunks from the head only after its transaction committed) and its window's
  // stored rollup stands for all of them; a complete window without a rollup had no sample. So
  // the head's windows, and a window a Flush split with the head still holding its newer part,
  // are left out (a reader takes raw samples there). With nothing in memory every window is
  // complete as the store is now: a later append is newer than the newest sample, goes to
  // memory, and makes its window and those after it incomplete again. SettledBefore is read
  // before SQLite, so a Flush running concurrently can only add rows for windows this call
  // leaves out; an append racing the call may or may not be seen, as with any read.
  Status ReadCompleteRollups(SeriesRef ref, int64_t mint_ms, int64_t maxt_ms,
                             std::vector<Rollup>* out, int64_t* complete_before_ms);
  const Head& head() const { return head_; }

  // Groups one thread's reads. While a ReadBatch of this DB lives on a thread, that thread's
  // reads of the SQLite file (ReadSeries*, ReadRollups, ReadCompleteRollups) share one read
  // transaction, begun by the first read that needs SQLite and ended with the batch, instead of
  // SQLite taking and dropping its file locks (a dozen fcntl calls) for every statement: a range
  // query over 1,260 series spent half its time there (docs/tsdb-format.md §5). From that first
  // read to its end the batch holds the connection, so the Querier ends one every
  // kReadBatchSeries series and a flush or another thread's read waits at most that long; reads
  // the head answers alone never take it. A batch inside another of the same DB does nothing.
  class ReadBatch {
   public:
    explicit ReadBatch(DB* db);
    ~ReadBatch();
    ReadBatch(const ReadBatch&) = delete;
    ReadBatch& operator=(const ReadBatch&) = delete;

   private:
    friend class DB;
    DB* db_;
    ReadBatch* outer_;  // the thread's enclosing batch (any DB), restored at the end
    bool inert_ = false;
    bool in_transaction_ = false;
    bool data_in_transaction_ = false;  // on data_sql_, begun by the batch's first block read
    std::unique_lock<std::mutex> lock_;
  };
  static constexpr size_t kReadBatchSeries = 64;

 private:
  // The connection for one read: the thread's batch's (begun now if it was not; the returned
  // lock is then empty) or, outside a batch, an owning lock of sql_mu_.
  std::unique_lock<std::mutex> LockForRead();
  // Decodes a block row's `data`; `ts_id` > 0 names the timestamps row its values share, read
  // through `select_ts` (kSelectTimestampsSql prepared on the connection the caller reads with)
  // and the timestamp cache. `mint_ms` and `from_ms` as in DecodeBlockTail (the default: the
  // whole block). With sql_mu_ held.
  Status DecodeStoredBlock(std::string_view data, int64_t ts_id, sqlite3_stmt* select_ts,
                           std::vector<Sample>* out, int64_t mint_ms = INT64_MIN,
                           int64_t* from_ms = nullptr);
  // Deletes the timestamps rows of windows [min_window, max_window] that no block refers to. In
  // the writer's transaction.
  Status DropUnusedTimestampsLocked(int64_t min_window, int64_t max_window);
  // Called with sql_mu_ held before a read on data_sql_: inside a batch, begins the batch's read
  // transaction there too (once), for the same reason as on sql_.
  void BeginDataRead();
  explicit DB(const DBOptions& options);
  Status OpenSqlite();
  Status LoadSeries();
  Status ReplayWal(WalReplayStats* replay, bool* vanished);
  // Buffers the series record of `ref` in the WAL unless the current segment generation has it.
  void LogSeries(SeriesRef ref, const Labels* labels);
  void Warn(const std::string& message) const;
  // Merges the rollups of `chunks` into the rollups table (select: the row of (ref, t); insert:
  // INSERT OR REPLACE of a whole row).
  bool InsertRollups(sqlite3_stmt* select, sqlite3_stmt* insert, SeriesRef ref,
                     const std::vector<EncodedChunk>& chunks);
  struct BlockJob;
  // Writes blocks for `jobs` (fresh samples per series) merged with what SQLite holds for their
  // windows; sql_mu_ held, inside a transaction.
  Status CompactLocked(std::vector<BlockJob>* jobs);
  Status LoadMeta();
  Status SetMetaLocked(const char* key, int64_t value);
  using Decoded = std::shared_ptr<const std::vector<Sample>>;
  struct SeriesParts;
  Status ReadParts(SeriesRef ref, int64_t mint_ms, int64_t maxt_ms, SeriesParts* parts);
  // The rollup samples that stand in for aged-out raw data of `ref` in [mint_ms, maxt_ms] before
  // first_raw_ms (INT64_MAX: no raw sample); empty while raw data reaches back to mint_ms.
  Status RollupsBefore(SeriesRef ref, int64_t mint_ms, int64_t maxt_ms, int64_t first_raw_ms,
                       std::vector<Sample>* out);
  // Appends the samples in [mint_ms, maxt_ms] of the chunk rows of `ref` (non-compacting
  // flushes), time-ordered; corrupt rows are counted, logged and skipped. sql_mu_ held.
  Status ReadChunkRowsLocked(SeriesRef ref, int64_t mint_ms, int64_t maxt_ms,
                             std::vector<Sample>* out);
  // The decoded block of the current row of `s` (columns id, crc32), through the cache (put
  // there only if `admit`); its data is read (select_block_data_) only when the cache misses:
  // selecting it with the row made SQLite read every overflow page of it at each step, cached
  // or not (docs/tsdb-format.md §5). With `mint_ms` above INT64_MIN only the samples from
  // mint_ms on are needed: a cached entry holding them will do, and a miss decodes the block's
  // newest parts (DecodeBlockTail); the result may hold older samples too. nullptr (counted,
  // logged) when corrupt. sql_mu_ held.
  Decoded LoadBlockLocked(SeriesRef ref, sqlite3_stmt* s, bool admit = true,
                          int64_t mint_ms = INT64_MIN);
  // The decoded format-3 rollups column of the current row of `s` (columns id, crc32, data,
  // rollups), through the rollup cache; nullptr (counted, logged) when corrupt. sql_mu_ held.
  std::shared_ptr<const std::vector<Rollup>> DecodeRollupsCached(SeriesRef ref, sqlite3_stmt* s);
  // Decodes a rollups column into `out`, counted in rollups_decoded; false (counted as a
  // corruption, logged; `out` may hold part of it) when it does not decode.
  bool DecodeRollupsCounted(SeriesRef ref, std::string_view blob, std::vector<Rollup>* out);

  DBOptions options_;
  Head head_;
  std::unique_ptr<Wal> wal_;
  std::vector<SeriesRef> unpersisted_series_;  // writer only
  // Per series: the WAL generation its series record was last buffered in (writer only). A new
  // segment generation gets the record again before the series' first sample in it, so the
  // segments since the last checkpoint name every series they hold (a lost tsdb.sqlite loses
  // no WAL sample).
  std::vector<uint64_t> wal_series_gen_;
  std::unique_ptr<FailureLog> wal_log_, flush_log_;
  std::atomic<uint64_t> wal_pending_bytes_{0}, wal_dropped_samples_{0};
  uint64_t wal_skipped_bytes_ = 0, wal_orphan_samples_ = 0;

  mutable std::mutex sql_mu_;  // guards the connection and statements
  sqlite3* sql_ = nullptr;
  sqlite3_stmt* select_chunks_ = nullptr;
  sqlite3_stmt* select_blocks_ = nullptr;
  sqlite3_stmt* select_block_rollups_ = nullptr;  // ReadRollups: blocks' rollups (db_open.cpp)
  // Block data is read through a second, read-only connection with a small page cache (its
  // pages are decoded once into the block cache and would only push the index pages out of
  // sql_'s); null in a read-only DB, which reads it through sql_. Guarded by sql_mu_ too, so it
  // sees what sql_ sees: every commit of the writing process happens under sql_mu_.
  sqlite3* data_sql_ = nullptr;
  sqlite3_stmt* select_block_data_ = nullptr;   // LoadBlockLocked: data, ts_id (data_sql_)
  sqlite3_stmt* select_timestamps_ = nullptr;   // a timestamps row, on the same connection
  sqlite3_stmt* select_rollup_rows_ = nullptr;  // ReadRollups: the rollups table
  bool rollups_ext_ = true;                     // the rollups table has `ext` (version 3)
  bool shared_ts_ = true;                // blocks.ts_id and the timestamps table exist (version 4)
  std::atomic<bool> rollup_rows_{true};  // the rollups table may have rows
  std::atomic<bool> chunk_rows_{true};   // the chunks table may have rows (same rule)
  int64_t block_range_ms_ = 0;
  std::atomic<int64_t> raw_horizon_{INT64_MIN};     // raw samples before this were deleted
  std::atomic<int64_t> rollup_horizon_{INT64_MIN};  // rollup windows before this were deleted

  struct DecodedBlock;  // a cached block, whole or its newest parts (db_internal.h)
  struct BlockCache;    // LRU of decoded blocks, own mutex (db_internal.h)
  std::unique_ptr<BlockCache> cache_;
  struct RollupCache;  // LRU of decoded rollup columns, own mutex (db_internal.h)
  std::unique_ptr<RollupCache> rollup_cache_;
  struct TimestampCache;  // LRU of decoded shared timestamps, own mutex (db_internal.h)
  std::unique_ptr<TimestampCache> ts_cache_;

  uint64_t wal_replayed_samples_ = 0, wal_corruptions_ = 0, out_of_order_at_open_ = 0;
  std::atomic<uint64_t> chunk_corruptions_{0}, chunks_persisted_{0}, blocks_decoded_{0};
  std::atomic<uint64_t> rollups_decoded_{0};
  std::atomic<double> last_flush_seconds_{0};
  std::atomic<uint64_t> compactions_{0}, blocks_written_{0}, selects_{0};
  std::atomic<double> compaction_seconds_total_{0}, last_compaction_seconds_{0},
      select_seconds_total_{0};
};

// The Appender over a DB (its writer methods, so one thread at a time). Commit never fails: a
// failed WAL write is the store's to report (it logs the start, a summary a minute and the end
// of a failure, counts it on /metrics, keeps the samples in memory, queryable, and writes them
// when it can); every writer reporting it again would only repeat it.
class DBAppender : public Appender {
 public:
  explicit DBAppender(DB* db) : db_(db) {}  // `db` must outlive this
  Expected<Ref> GetRef(const Labels& labels) override { return db_->GetRef(labels); }
  Status Append(Ref ref, int64_t t_ms, double v) override { return db_->Append(ref, t_ms, v); }
  Status Commit() override {
    (void)db_->Commit();
    return Status::Ok();
  }

 protected:
  DB* db() const { return db_; }

 private:
  DB* db_;
};

}  // namespace gw::tsdb

#endif  // GPUWARDEN_TSDB_DB_H_
