#include "tsdb/db.h"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <list>
#include <thread>
#include <unordered_map>

#include "tsdb/block.h"
#include "tsdb/chunk.h"
#include "tsdb/coding.h"
#include "tsdb/rollup.h"

namespace gw::tsdb {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDbFile = "tsdb.sqlite";

// The schema (docs/tsdb-format.md). Chunks are clustered by (series, newest timestamp): a
// series' chunks never overlap, so maxt is unique per series, and a query for [mint, maxt] reads
// from the first chunk ending at or after mint — no separate index, which would cost a fifth of
// the file. Retention scans the table (hourly). Labels are a blob: uvarint n, n × (string name,
// string value), strings as uvarint length + bytes. A chunk's crc32 covers its data blob.
// Blocks (compacted data) are a rowid table keyed by BlockId(series, window), so they are
// clustered by series and time without an index; data is NULL once raw retention has passed
// (the rollups, computed then, stay).
constexpr const char* kFormatVersion = "2";
constexpr const char* kPreSchema = R"sql(
PRAGMA page_size=1024;
PRAGMA auto_vacuum=INCREMENTAL;
PRAGMA journal_mode=WAL;
PRAGMA synchronous=NORMAL;
)sql";
constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT OR IGNORE INTO meta(key, value) VALUES('format_version', '2');
CREATE TABLE IF NOT EXISTS series(id INTEGER PRIMARY KEY, labels BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS chunks(
  series_id INTEGER NOT NULL,
  mint INTEGER NOT NULL,
  maxt INTEGER NOT NULL,
  num_samples INTEGER NOT NULL,
  encoding INTEGER NOT NULL,
  crc32 INTEGER NOT NULL,
  data BLOB NOT NULL,
  PRIMARY KEY(series_id, maxt)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS rollups(
  series_id INTEGER NOT NULL,
  t INTEGER NOT NULL,
  min_v REAL NOT NULL,
  max_v REAL NOT NULL,
  sum_v REAL NOT NULL,
  count_v INTEGER NOT NULL,
  last_v REAL NOT NULL,
  last_t INTEGER NOT NULL,
  PRIMARY KEY(series_id, t)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS blocks(
  id INTEGER PRIMARY KEY,
  mint INTEGER NOT NULL,
  maxt INTEGER NOT NULL,
  num_samples INTEGER NOT NULL,
  crc32 INTEGER NOT NULL,
  rollups BLOB NOT NULL DEFAULT x'',
  data BLOB);
)sql";

// Window index of t (floor division), clamped to what a block id can hold.
int64_t WindowOf(int64_t t_ms, int64_t range_ms) {
  int64_t w = t_ms / range_ms;
  if (t_ms % range_ms < 0) --w;
  return std::clamp<int64_t>(w, INT32_MIN, INT32_MAX);
}

// series << 32 | (window + 2^31): ascending by series, then time.
uint64_t BlockId(SeriesRef ref, int64_t window) {
  return (static_cast<uint64_t>(ref) << 32) | static_cast<uint64_t>(window - INT32_MIN);
}

int64_t WindowOfId(uint64_t id) {
  return static_cast<int64_t>(id & 0xffffffffULL) + INT32_MIN;
}

std::string EncodeLabels(const Labels& labels) {
  std::string out;
  PutUvarint(&out, labels.size());
  for (const Label& l : labels) PutString(&out, l.name), PutString(&out, l.value);
  return out;
}

bool DecodeLabels(std::string_view in, Labels* labels) {
  uint64_t n;
  if (!GetUvarint(&in, &n) || n > in.size()) return false;
  labels->resize(n);
  for (Label& l : *labels)
    if (!GetString(&in, &l.name) || !GetString(&in, &l.value)) return false;
  return in.empty();
}

// A prepared statement that finalizes itself.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) { ok_ = sqlite3_prepare_v2(db, sql, -1, &s_, nullptr) == 0; }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  bool ok() const { return ok_; }
  sqlite3_stmt* get() { return s_; }

 private:
  sqlite3_stmt* s_ = nullptr;
  bool ok_ = false;
};

std::string_view BlobColumn(sqlite3_stmt* s, int col) {
  const void* p = sqlite3_column_blob(s, col);
  const int n = sqlite3_column_bytes(s, col);
  return p ? std::string_view(static_cast<const char*>(p), static_cast<size_t>(n))
           : std::string_view();
}

uint64_t FileSize(const std::string& path) {
  std::error_code ec;
  const auto n = fs::file_size(path, ec);
  return ec ? 0 : n;
}

}  // namespace

// Decoded blocks for queries: LRU by bytes of samples held. An entry is valid for one version of
// a block (its crc32); a rewritten block gets a new crc and the old entry ages out.
struct DB::BlockCache {
  struct Entry {
    uint32_t crc = 0;
    Decoded samples;
    std::list<uint64_t>::iterator lru;
  };
  std::mutex mu;
  size_t limit = 0, bytes = 0;
  uint64_t hits = 0, misses = 0;
  std::list<uint64_t> lru;  // front: most recently used
  std::unordered_map<uint64_t, Entry> map;
};

DB::DB(const DBOptions& options)
    : options_(options),
      head_(options.head),
      wal_log_(std::make_unique<FailureLog>(
          "tsdb: WAL write",
          "the samples stay in memory (queries see them) and are written at the next WAL write "
          "or flush that works",
          options.failure_summary_interval_s, options.logger)),
      flush_log_(std::make_unique<FailureLog>("tsdb: flush to " + options.dir + "/" + kDbFile,
                                              "the data stays in memory and in the WAL",
                                              options.failure_summary_interval_s, options.logger)),
      cache_(std::make_unique<BlockCache>()) {
  cache_->limit = options.block_cache_bytes;
}

DB::~DB() {
  if (wal_) (void)Commit();  // a failure is logged there
  sqlite3_finalize(select_chunks_);
  sqlite3_finalize(select_blocks_);
  sqlite3_close(sql_);
}

void DB::Warn(const std::string& message) const {
  if (options_.logger) options_.logger->Warn(message);
}

Expected<std::unique_ptr<DB>> DB::Open(const DBOptions& options) {
  std::error_code ec;
  if (!options.read_only) {
    fs::create_directories(options.dir, ec);
    if (ec) return Error{"tsdb: cannot create " + options.dir + ": " + ec.message()};
  }
  const std::string sqlite_path = options.dir + "/" + kDbFile;
  const bool had_sqlite = fs::exists(sqlite_path, ec);
  // A reader beside a live writer: a checkpoint may delete a WAL segment between reading SQLite
  // and reading that segment. Then its samples are in SQLite, but the series it named may not
  // have been when SQLite was read: read again (a checkpoint takes well under a second and comes
  // every flush interval, so a second pass all but always sees a quiet directory).
  for (int attempt = 0;; ++attempt) {
    std::unique_ptr<DB> db(new DB(options));
    Status st = db->OpenSqlite();
    if (st.ok()) st = db->LoadMeta();
    if (st.ok()) st = db->LoadSeries();
    WalReplayStats replay;
    bool vanished = false;
    if (st.ok()) st = db->ReplayWal(&replay, &vanished);
    if (!st.ok()) return Error{st.message()};
    if (vanished && attempt < 4) continue;
    db->wal_replayed_samples_ = replay.samples;
    db->wal_corruptions_ = replay.corruptions;
    db->wal_skipped_bytes_ = replay.skipped_bytes;
    db->out_of_order_at_open_ = db->head_.out_of_order();
    if (db->wal_orphan_samples_ > 0)
      db->Warn("tsdb: wal replay: " + std::to_string(db->wal_orphan_samples_) +
               " samples belong to series that neither the WAL nor " + sqlite_path +
               " names (their series records were lost); dropped");
    if (!had_sqlite && replay.records > 0 && !options.read_only) {
      // Say what happened: the WAL is kept and goes into the new database at the next flush.
      db->Warn("tsdb: " + sqlite_path + " was missing; created a new, empty one and replayed " +
               std::to_string(replay.samples) + " samples of " +
               std::to_string(db->unpersisted_series_.size()) + " series from the WAL (" +
               std::to_string(replay.segments) +
               " segments) into it; they are written to it at the next flush. Data flushed "
               "before the database was lost is gone");
    }
    return db;
  }
}

Status DB::OpenSqlite() {
  const std::string path = options_.dir + "/" + kDbFile;
  // Read-only: the database as it is; none (nothing written yet) reads as an empty one in
  // memory, so that the WAL alone can still be read.
  bool in_memory = false;
  if (options_.read_only) {
    std::error_code ec;
    in_memory = !fs::exists(path, ec);
  }
  const int flags = options_.read_only && !in_memory
                        ? SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX
                        : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX;
  if (sqlite3_open_v2(in_memory ? ":memory:" : path.c_str(), &sql_, flags, nullptr) != SQLITE_OK)
    return Error{"tsdb: cannot open " + path + ": " + sqlite3_errmsg(sql_)};
  sqlite3_busy_timeout(sql_, 5000);
  auto exec = [&](const char* sql) -> Status {
    char* err = nullptr;
    if (sqlite3_exec(sql_, sql, nullptr, nullptr, &err) == SQLITE_OK) return Status::Ok();
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    return Error{"tsdb: " + path + ": " + msg};
  };
  // page_size and auto_vacuum only take effect on a new database.
  const bool writable = !options_.read_only || in_memory;
  if (writable) {
    if (Status st = exec(kPreSchema); !st.ok()) return st;
  }
  {
    // Refuse other format versions before touching the schema.
    Stmt q(sql_, "SELECT value FROM meta WHERE key = 'format_version'");
    if (q.ok() && sqlite3_step(q.get()) == SQLITE_ROW) {
      const auto* v = reinterpret_cast<const char*>(sqlite3_column_text(q.get(), 0));
      const std::string version = v ? v : "";
      if (version != kFormatVersion)
        return Error{"tsdb: " + path + " has format version " + version +
                     "; this build reads version " + kFormatVersion +
                     " only (no migration: move the data directory away and start afresh)"};
    }
  }
  if (writable) {
    if (Status st = exec(kSchema); !st.ok()) return st;
  }
  if (sqlite3_prepare_v2(sql_,
                         "SELECT crc32, data FROM chunks WHERE series_id = ? AND maxt >= ? "
                         "AND mint <= ? ORDER BY mint",
                         -1, &select_chunks_, nullptr) != SQLITE_OK ||
      sqlite3_prepare_v2(sql_,
                         "SELECT id, crc32, data FROM blocks WHERE id BETWEEN ? AND ? "
                         "AND maxt >= ? AND mint <= ? AND data IS NOT NULL ORDER BY id",
                         -1, &select_blocks_, nullptr) != SQLITE_OK)
    return Error{std::string("tsdb: ") + sqlite3_errmsg(sql_)};
  return Status::Ok();
}

Status DB::LoadMeta() {
  // The block range is fixed at creation: block ids depend on it.
  block_range_ms_ = std::max<int64_t>(options_.block_range_ms, 60'000);
  if (sqlite3_db_readonly(sql_, "main") != 1) {
    Stmt ins(sql_, "INSERT OR IGNORE INTO meta(key, value) VALUES('block_range_ms', ?)");
    if (!ins.ok()) return Error{std::string("tsdb: ") + sqlite3_errmsg(sql_)};
    sqlite3_bind_int64(ins.get(), 1, block_range_ms_);
    if (sqlite3_step(ins.get()) != SQLITE_DONE)
      return Error{std::string("tsdb: ") + sqlite3_errmsg(sql_)};
  }
  Stmt q(sql_, "SELECT key, CAST(value AS INTEGER) FROM meta");
  if (!q.ok()) return Error{std::string("tsdb: ") + sqlite3_errmsg(sql_)};
  while (sqlite3_step(q.get()) == SQLITE_ROW) {
    const auto* k = reinterpret_cast<const char*>(sqlite3_column_text(q.get(), 0));
    const std::string key = k ? k : "";
    const int64_t v = sqlite3_column_int64(q.get(), 1);
    if (key == "block_range_ms") block_range_ms_ = v;
    if (key == "raw_horizon_ms") raw_horizon_ = v;
    if (key == "rollup_horizon_ms") rollup_horizon_ = v;
  }
  if (block_range_ms_ < 60'000 || block_range_ms_ % kRollupWindowMs != 0)
    return Error{"tsdb: bad block_range_ms " + std::to_string(block_range_ms_) +
                 " in the data directory (a multiple of 5 minutes)"};
  return Status::Ok();
}

Status DB::SetMetaLocked(const char* key, int64_t value) {
  Stmt q(sql_, "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)");
  if (!q.ok()) return Error{std::string("tsdb: ") + sqlite3_errmsg(sql_)};
  sqlite3_bind_text(q.get(), 1, key, -1, SQLITE_STATIC);
  sqlite3_bind_text(q.get(), 2, std::to_string(value).c_str(), -1, SQLITE_TRANSIENT);
  if (sqlite3_step(q.get()) != SQLITE_DONE)
    return Error{std::string("tsdb: ") + sqlite3_errmsg(sql_)};
  return Status::Ok();
}

Status DB::LoadSeries() {
  Stmt q(sql_,
         "SELECT s.id, s.labels, max(coalesce((SELECT MAX(maxt) FROM chunks c WHERE c.series_id = "
         "s.id), -9223372036854775808), coalesce((SELECT MAX(maxt) FROM blocks b WHERE b.id "
         "BETWEEN s.id << 32 AND (s.id << 32) + 4294967295), -9223372036854775808)) "
         "FROM series s ORDER BY s.id");
  if (!q.ok()) return Error{std::string("tsdb: ") + sqlite3_errmsg(sql_)};
  while (sqlite3_step(q.get()) == SQLITE_ROW) {
    const auto ref = static_cast<SeriesRef>(sqlite3_column_int64(q.get(), 0));
    Labels labels;
    if (!DecodeLabels(BlobColumn(q.get(), 1), &labels)) {
      Warn("tsdb: series " + std::to_string(ref) + " has malformed labels; skipped");
      continue;
    }
    const int64_t last_t = sqlite3_column_int64(q.get(), 2);
    Status st = head_.AddSeries(ref, labels, last_t);
    if (!st.ok()) Warn(st.message() + " (series " + std::to_string(ref) + ")");
  }
  return Status::Ok();
}

Status DB::ReplayWal(WalReplayStats* replay, bool* vanished) {
  auto on_series = [this](SeriesRef ref, const Labels& labels) {
    if (head_.LabelsOf(ref) == labels) return;  // already loaded (SQLite, or an earlier record)
    Status st = head_.AddSeries(ref, labels);
    if (st.ok())
      unpersisted_series_.push_back(ref);
    else
      Warn("tsdb: wal replay: " + st.message());
  };
  // Samples already persisted come back as out-of-order and are skipped.
  auto on_sample = [this](SeriesRef ref, int64_t t, double v) {
    if (!head_.Append(ref, t, v).ok() && head_.LabelsOf(ref).empty()) ++wal_orphan_samples_;
  };
  const std::string dir = options_.dir + "/wal";
  if (options_.read_only)
    return Wal::Replay(dir, options_.logger, on_series, on_sample, replay, vanished);
  WalOptions wo;
  wo.dir = dir;
  wo.segment_bytes = options_.wal_segment_bytes;
  wo.sync = options_.wal_sync;
  wo.sync_interval_s = options_.wal_sync_interval_s;
  wo.max_pending_bytes = options_.wal_max_pending_bytes;
  wo.files = options_.wal_files;
  auto wal = Wal::Open(wo, options_.logger, on_series, on_sample, replay);
  if (!wal.ok()) return Error{wal.error().message};
  wal_ = std::move(wal).value();
  return Status::Ok();
}

Expected<SeriesRef> DB::GetRef(const Labels& labels) {
  bool created = false;
  auto ref = head_.GetOrCreate(labels, &created);
  if (ref.ok() && created) {
    LogSeries(*ref, &labels);
    unpersisted_series_.push_back(*ref);
  }
  return ref;
}

void DB::LogSeries(SeriesRef ref, const Labels* labels) {
  if (!options_.write_wal || !wal_) return;
  if (ref >= wal_series_gen_.size()) wal_series_gen_.resize(ref + 1 + ref / 4, 0);
  const uint64_t generation = wal_->generation();
  if (wal_series_gen_[ref] == generation) return;
  wal_series_gen_[ref] = generation;
  if (labels != nullptr) {
    wal_->AddSeries(ref, *labels);
  } else {
    wal_->AddSeries(ref, head_.LabelsOf(ref));
  }
}

Status DB::Append(SeriesRef ref, int64_t t_ms, double v) {
  Status st = head_.Append(ref, t_ms, v);
  if (st.ok() && options_.write_wal && wal_) {
    if (ref >= wal_series_gen_.size() || wal_series_gen_[ref] != wal_->generation())
      LogSeries(ref, nullptr);
    wal_->AddSample(ref, t_ms, v);
  }
  return st;
}

Status DB::Append(const Labels& labels, int64_t t_ms, double v) {
  auto ref = GetRef(labels);
  if (!ref.ok()) return Error{ref.error().message};
  return Append(*ref, t_ms, v);
}

Status DB::Commit() {
  if (!wal_) return Error{"tsdb: " + options_.dir + " is open read-only"};
  const bool writes = wal_->has_buffered();
  Status st = wal_->Commit();
  const auto now = std::chrono::steady_clock::now();
  if (st.ok()) {
    if (writes) wal_log_->Succeeded(now);
  } else {
    wal_log_->Failed(st.message(), now);
  }
  wal_pending_bytes_ = wal_->pending_bytes();
  wal_dropped_samples_ = wal_->dropped_samples();
  return st;
}

// One series' work in a compaction: the fresh samples (from the head) plus, filled in by
// CompactLocked, what SQLite holds for the windows they touch, and the blocks to write.
struct DB::BlockJob {
  SeriesRef ref = 0;
  std::vector<Sample> fresh;  // time-ordered
  bool had_chunk_rows = false;
  struct Window {
    int64_t window = 0;
    std::vector<Sample> samples;       // existing block first, then newer; sorted before encoding
    std::vector<Rollup> kept_rollups;  // of a block whose samples retention already deleted
    std::string data, rollups;
    int64_t mint = 0, maxt = 0;
  };
  std::vector<Window> windows;
};

Status DB::Flush() {
  const auto start = std::chrono::steady_clock::now();
  if (!wal_) return Error{"tsdb: " + options_.dir + " is open read-only"};
  // A failed WAL write (logged there) does not stop the flush: SQLite makes the data durable.
  (void)Commit();
  auto collected = head_.CutAndCollect(/*cut_open=*/true);
  uint64_t written = 0;
  std::vector<BlockJob> jobs;
  if (options_.compact_on_flush) {
    // Decode the head's chunks for the blocks, on two threads.
    jobs.resize(collected.size());
    std::atomic<size_t> next{0};
    std::atomic<bool> bad{false};
    auto decode = [&] {
      for (size_t i; (i = next.fetch_add(1)) < collected.size();) {
        jobs[i].ref = collected[i].first;
        size_t n = 0;
        for (const EncodedChunk& c : collected[i].second) n += c.num_samples;
        jobs[i].fresh.reserve(n);
        for (const EncodedChunk& c : collected[i].second)
          if (!DecodeChunk(c.data, &jobs[i].fresh).ok()) bad = true;
      }
    };
    std::thread helper;
    if (collected.size() > 1) helper = std::thread(decode);
    decode();
    if (helper.joinable()) helper.join();
    // The head encoded these chunks itself: failing to decode one is a bug, not bad data.
    if (bad) return Error{"tsdb: flush: an in-memory chunk does not decode"};
    for (const auto& c : collected) written += c.second.size();
  }
  {
    std::lock_guard lock(sql_mu_);
    auto exec = [this](const char* sql) {
      return sqlite3_exec(sql_, sql, nullptr, nullptr, nullptr) == SQLITE_OK;
    };
    if (!exec("BEGIN IMMEDIATE")) return Error{std::string("tsdb: flush: ") + sqlite3_errmsg(sql_)};
    Stmt ins_series(sql_, "INSERT OR REPLACE INTO series(id, labels) VALUES(?, ?)");
    bool ok = ins_series.ok();
    for (size_t i = 0; ok && i < unpersisted_series_.size(); ++i) {
      const std::string blob = EncodeLabels(head_.LabelsOf(unpersisted_series_[i]));
      sqlite3_stmt* s = ins_series.get();
      sqlite3_bind_int64(s, 1, static_cast<sqlite3_int64>(unpersisted_series_[i]));
      sqlite3_bind_blob(s, 2, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
      ok = sqlite3_step(s) == SQLITE_DONE;
      sqlite3_reset(s);
    }
    std::string error;
    if (ok && options_.compact_on_flush) {
      const auto cstart = std::chrono::steady_clock::now();
      Status cst = CompactLocked(&jobs);
      if (!cst.ok()) {
        ok = false;
        error = cst.message();
      } else {
        const double secs =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - cstart).count();
        last_compaction_seconds_ = secs;
        compaction_seconds_total_.fetch_add(secs);
        if (!jobs.empty()) ++compactions_;
      }
    } else if (ok) {
      Stmt ins_chunk(sql_,
                     "INSERT OR REPLACE INTO chunks(series_id, mint, maxt, num_samples, encoding, "
                     "crc32, data) VALUES(?, ?, ?, ?, ?, ?, ?)");
      Stmt ins_rollup(
          sql_,
          "INSERT INTO rollups(series_id, t, min_v, max_v, sum_v, count_v, last_v, last_t) "
          "VALUES(?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(series_id, t) DO UPDATE SET "
          "min_v = min(min_v, excluded.min_v), max_v = max(max_v, excluded.max_v), "
          "sum_v = sum_v + excluded.sum_v, count_v = count_v + excluded.count_v, "
          "last_v = CASE WHEN excluded.last_t >= last_t THEN excluded.last_v "
          "ELSE last_v END, last_t = max(last_t, excluded.last_t)");
      ok = ins_chunk.ok() && ins_rollup.ok();
      for (size_t i = 0; ok && i < collected.size(); ++i) {
        for (const EncodedChunk& c : collected[i].second) {
          sqlite3_stmt* s = ins_chunk.get();
          sqlite3_bind_int64(s, 1, static_cast<sqlite3_int64>(collected[i].first));
          sqlite3_bind_int64(s, 2, c.mint_ms);
          sqlite3_bind_int64(s, 3, c.maxt_ms);
          sqlite3_bind_int64(s, 4, c.num_samples);
          sqlite3_bind_int(s, 5, ChunkEncodingOf(c.data));
          sqlite3_bind_int64(s, 6, Crc32(c.data));
          sqlite3_bind_blob(s, 7, c.data.data(), static_cast<int>(c.data.size()), SQLITE_STATIC);
          ok = sqlite3_step(s) == SQLITE_DONE;
          sqlite3_reset(s);
          if (!ok) break;
          ++written;
        }
        if (ok) ok = InsertRollups(ins_rollup.get(), collected[i].first, collected[i].second);
      }
    }
    if (!ok || !exec("COMMIT")) {
      std::string msg = error.empty() ? sqlite3_errmsg(sql_) : error;
      exec("ROLLBACK");
      flush_log_->Failed(msg, std::chrono::steady_clock::now());
      return Error{"tsdb: flush: " + msg};
    }
    flush_log_->Succeeded(std::chrono::steady_clock::now());
    // Fold SQLite's own journal into the database file and truncate it, so the data is not on
    // disk twice between SQLite's automatic checkpoints; return pages freed by compaction to
    // the file system. Failure here loses nothing.
    exec("PRAGMA incremental_vacuum");
    exec("PRAGMA wal_checkpoint(TRUNCATE)");
  }
  // Persisted: drop from memory (readers look at the head before SQLite, so they never miss a
  // chunk in between), then forget the WAL that held it.
  for (const auto& [ref, chunks] : collected) head_.DropPersisted(ref, chunks.size());
  unpersisted_series_.clear();
  chunks_persisted_ += written;
  // Everything appended so far is in SQLite: the WAL (and any records it kept after failed
  // writes) is no longer needed.
  Status st = wal_->Checkpoint();
  wal_pending_bytes_ = wal_->pending_bytes();
  last_flush_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return st;
}

Status DB::Compact() {
  const auto start = std::chrono::steady_clock::now();
  if (!wal_) return Error{"tsdb: " + options_.dir + " is open read-only"};
  std::lock_guard lock(sql_mu_);
  std::vector<BlockJob> jobs;
  {
    Stmt q(sql_, "SELECT DISTINCT series_id FROM chunks ORDER BY series_id");
    if (!q.ok()) return Error{std::string("tsdb: compact: ") + sqlite3_errmsg(sql_)};
    while (sqlite3_step(q.get()) == SQLITE_ROW)
      jobs.emplace_back().ref = static_cast<SeriesRef>(sqlite3_column_int64(q.get(), 0));
  }
  if (jobs.empty()) return Status::Ok();
  auto exec = [this](const char* sql) {
    return sqlite3_exec(sql_, sql, nullptr, nullptr, nullptr) == SQLITE_OK;
  };
  if (!exec("BEGIN IMMEDIATE")) return Error{std::string("tsdb: compact: ") + sqlite3_errmsg(sql_)};
  Status st = CompactLocked(&jobs);
  if (!st.ok() || !exec("COMMIT")) {
    std::string msg = st.ok() ? sqlite3_errmsg(sql_) : st.message();
    exec("ROLLBACK");
    return Error{"tsdb: compact: " + msg};
  }
  exec("PRAGMA incremental_vacuum");
  exec("PRAGMA wal_checkpoint(TRUNCATE)");
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  last_compaction_seconds_ = secs;
  compaction_seconds_total_.fetch_add(secs);
  ++compactions_;
  return Status::Ok();
}

Status DB::CompactLocked(std::vector<BlockJob>* jobs) {
  Stmt sel_chunks(sql_, "SELECT crc32, data FROM chunks WHERE series_id = ? ORDER BY maxt");
  Stmt sel_block(sql_, "SELECT crc32, data, rollups FROM blocks WHERE id = ?");
  Stmt put_block(sql_,
                 "INSERT OR REPLACE INTO blocks(id, mint, maxt, num_samples, crc32, rollups, data) "
                 "VALUES(?, ?, ?, ?, ?, ?, ?)");
  Stmt del_chunks(sql_, "DELETE FROM chunks WHERE series_id = ?");
  Stmt del_rollups(sql_, "DELETE FROM rollups WHERE series_id = ? AND t >= ? AND t < ?");
  if (!sel_chunks.ok() || !sel_block.ok() || !put_block.ok() || !del_chunks.ok() ||
      !del_rollups.ok())
    return Error{sqlite3_errmsg(sql_)};
  auto corrupt = [this](SeriesRef ref, const std::string& what) {
    ++chunk_corruptions_;
    Warn("tsdb: corrupt chunk of series " + std::to_string(ref) + ": " + what + "; skipped");
  };
  const int64_t range = block_range_ms_;
  const int level = options_.zstd_level;
  // Series in batches, to bound memory: read (SQLite), encode (2 threads), write (SQLite).
  constexpr size_t kBatch = 64;
  for (size_t b0 = 0; b0 < jobs->size(); b0 += kBatch) {
    const size_t b1 = std::min(jobs->size(), b0 + kBatch);
    for (size_t j = b0; j < b1; ++j) {
      BlockJob& job = (*jobs)[j];
      // Chunk rows left by flushes without compaction: older than the fresh samples.
      std::vector<Sample> merged;
      sqlite3_stmt* s = sel_chunks.get();
      sqlite3_bind_int64(s, 1, static_cast<sqlite3_int64>(job.ref));
      while (sqlite3_step(s) == SQLITE_ROW) {
        job.had_chunk_rows = true;
        const std::string_view data = BlobColumn(s, 1);
        if (Crc32(data) != static_cast<uint32_t>(sqlite3_column_int64(s, 0))) {
          corrupt(job.ref, "checksum mismatch");
          continue;
        }
        const size_t before = merged.size();
        if (Status dst = DecodeChunk(data, &merged); !dst.ok()) {
          merged.resize(before);
          corrupt(job.ref, dst.message());
        }
      }
      sqlite3_reset(s);
      if (merged.empty())
        merged.swap(job.fresh);
      else
        merged.insert(merged.end(), job.fresh.begin(), job.fresh.end());
      job.fresh = std::vector<Sample>();
      // Normally already in order (chunk rows are older than the head); a window must come out
      // as one run below, or a later write of the same block would replace an earlier one.
      auto by_time = [](const Sample& a, const Sample& b) { return a.t_ms < b.t_ms; };
      if (!std::is_sorted(merged.begin(), merged.end(), by_time))
        std::stable_sort(merged.begin(), merged.end(), by_time);
      // Split by window; merge each with the block already there.
      for (size_t i = 0; i < merged.size();) {
        const int64_t w = WindowOf(merged[i].t_ms, range);
        size_t k = i;
        while (k < merged.size() && WindowOf(merged[k].t_ms, range) == w) ++k;
        BlockJob::Window win;
        win.window = w;
        sqlite3_stmt* q = sel_block.get();
        sqlite3_bind_int64(q, 1, static_cast<sqlite3_int64>(BlockId(job.ref, w)));
        if (sqlite3_step(q) == SQLITE_ROW) {
          if (!BlobColumn(q, 2).empty()) (void)DecodeRollups(BlobColumn(q, 2), &win.kept_rollups);
          if (sqlite3_column_type(q, 1) != SQLITE_NULL) {
            const std::string_view data = BlobColumn(q, 1);
            Status dst = Crc32(data) == static_cast<uint32_t>(sqlite3_column_int64(q, 0))
                             ? DecodeBlock(data, &win.samples)
                             : Status(Error{"checksum mismatch"});
            if (!dst.ok()) {
              win.samples.clear();
              corrupt(job.ref, "block " + dst.message());
            }
          }
        }
        sqlite3_reset(q);
        win.samples.insert(win.samples.end(), merged.begin() + static_cast<ptrdiff_t>(i),
                           merged.begin() + static_cast<ptrdiff_t>(k));
        job.windows.push_back(std::move(win));
        i = k;
      }
    }
    // Encode: pure CPU, on two threads.
    std::vector<BlockJob::Window*> work;
    for (size_t j = b0; j < b1; ++j)
      for (auto& w : (*jobs)[j].windows) work.push_back(&w);
    std::atomic<size_t> next{0};
    auto encode = [&] {
      for (size_t i; (i = next.fetch_add(1)) < work.size();) {
        BlockJob::Window& w = *work[i];
        auto by_time = [](const Sample& a, const Sample& b) { return a.t_ms < b.t_ms; };
        if (!std::is_sorted(w.samples.begin(), w.samples.end(), by_time))
          std::stable_sort(w.samples.begin(), w.samples.end(), by_time);
        w.samples.erase(
            std::unique(w.samples.begin(), w.samples.end(),
                        [](const Sample& a, const Sample& b) { return a.t_ms == b.t_ms; }),
            w.samples.end());
        w.data = EncodeBlock(w.samples, level);
        // Rollups are computed from the samples while they exist; only those of samples
        // retention already deleted are stored (ApplyRetention stores the rest).
        if (!w.kept_rollups.empty()) w.rollups = EncodeRollups(w.kept_rollups, level);
        w.mint = w.samples.front().t_ms;
        w.maxt = w.samples.back().t_ms;
      }
    };
    {
      std::thread helper;
      if (work.size() > 1) helper = std::thread(encode);
      encode();
      if (helper.joinable()) helper.join();
    }
    // Write.
    for (size_t j = b0; j < b1; ++j) {
      BlockJob& job = (*jobs)[j];
      for (BlockJob::Window& w : job.windows) {
        sqlite3_stmt* s = put_block.get();
        sqlite3_bind_int64(s, 1, static_cast<sqlite3_int64>(BlockId(job.ref, w.window)));
        sqlite3_bind_int64(s, 2, w.mint);
        sqlite3_bind_int64(s, 3, w.maxt);
        sqlite3_bind_int64(s, 4, static_cast<sqlite3_int64>(w.samples.size()));
        sqlite3_bind_int64(s, 5, Crc32(w.data));
        sqlite3_bind_blob(s, 6, w.rollups.data(), static_cast<int>(w.rollups.size()),
                          SQLITE_STATIC);
        sqlite3_bind_blob(s, 7, w.data.data(), static_cast<int>(w.data.size()), SQLITE_STATIC);
        const bool ok = sqlite3_step(s) == SQLITE_DONE;
        sqlite3_reset(s);
        if (!ok) return Error{sqlite3_errmsg(sql_)};
        ++blocks_written_;
        if (job.had_chunk_rows) {
          sqlite3_stmt* d = del_rollups.get();
          sqlite3_bind_int64(d, 1, static_cast<sqlite3_int64>(job.ref));
          sqlite3_bind_int64(d, 2, w.window * range);
          sqlite3_bind_int64(d, 3, (w.window + 1) * range);
          const bool dok = sqlite3_step(d) == SQLITE_DONE;
          sqlite3_reset(d);
          if (!dok) return Error{sqlite3_errmsg(sql_)};
        }
      }
      if (job.had_chunk_rows) {
        sqlite3_stmt* d = del_chunks.get();
        sqlite3_bind_int64(d, 1, static_cast<sqlite3_int64>(job.ref));
        const bool dok = sqlite3_step(d) == SQLITE_DONE;
        sqlite3_reset(d);
        if (!dok) return Error{sqlite3_errmsg(sql_)};
      }
      job.windows = {};
    }
  }
  return Status::Ok();
}

bool DB::InsertRollups(sqlite3_stmt* s, SeriesRef ref, const std::vector<EncodedChunk>& chunks) {
  std::vector<Sample> samples;
  std::vector<Rollup> rollups;
  for (const EncodedChunk& c : chunks) {
    samples.clear();
    if (DecodeChunk(c.data, &samples).ok()) AddToRollups(samples, &rollups);
  }
  for (const Rollup& r : rollups) {
    sqlite3_bind_int64(s, 1, static_cast<sqlite3_int64>(ref));
    sqlite3_bind_int64(s, 2, r.t_ms);
    sqlite3_bind_double(s, 3, r.min);
    sqlite3_bind_double(s, 4, r.max);
    sqlite3_bind_double(s, 5, r.sum);
    sqlite3_bind_int64(s, 6, static_cast<sqlite3_int64>(r.count));
    sqlite3_bind_double(s, 7, r.last);
    sqlite3_bind_int64(s, 8, r.last_t_ms);
    const bool ok = sqlite3_step(s) == SQLITE_DONE;
    sqlite3_reset(s);
    if (!ok) return false;
  }
  return true;
}

Status DB::ApplyRetention(int64_t now_ms) {
  if (!wal_) return Error{"tsdb: " + options_.dir + " is open read-only"};
  std::lock_guard lock(sql_mu_);
  const int64_t raw_cutoff = now_ms - options_.retention_ms;
  const int64_t rollup_cutoff = now_ms - options_.rollup_retention_ms;
  auto exec = [this](const char* sql) {
    return sqlite3_exec(sql_, sql, nullptr, nullptr, nullptr) == SQLITE_OK;
  };
  if (!exec("BEGIN IMMEDIATE"))
    return Error{std::string("tsdb: retention: ") + sqlite3_errmsg(sql_)};
  auto fail = [&]() -> Status {
    std::string msg = sqlite3_errmsg(sql_);
    exec("ROLLBACK");
    return Error{"tsdb: retention: " + msg};
  };
  {
    // Blocks whose samples expire keep their 5-minute rollups, computed now.
    Stmt sel(sql_,
             "SELECT id, crc32, data, rollups FROM blocks WHERE maxt < ? AND maxt >= ? "
             "AND data IS NOT NULL");
    Stmt upd(sql_, "UPDATE blocks SET data = NULL, crc32 = 0, rollups = ? WHERE id = ?");
    if (!sel.ok() || !upd.ok()) return fail();
    sqlite3_bind_int64(sel.get(), 1, raw_cutoff);
    sqlite3_bind_int64(sel.get(), 2, rollup_cutoff);
    std::vector<std::pair<uint64_t, std::string>> updates;
    std::vector<Sample> samples;
    while (sqlite3_step(sel.get()) == SQLITE_ROW) {
      const auto id = static_cast<uint64_t>(sqlite3_column_int64(sel.get(), 0));
      const std::string_view data = BlobColumn(sel.get(), 2);
      std::vector<Rollup> rollups;
      if (!BlobColumn(sel.get(), 3).empty())
        (void)DecodeRollups(BlobColumn(sel.get(), 3), &rollups);
      samples.clear();
      if (Crc32(data) == static_cast<uint32_t>(sqlite3_column_int64(sel.get(), 1)) &&
          DecodeBlock(data, &samples).ok()) {
        std::vector<Rollup> computed;
        AddToRollups(samples, &computed);
        rollups.insert(rollups.end(), computed.begin(), computed.end());
        std::sort(rollups.begin(), rollups.end(),
                  [](const Rollup& a, const Rollup& b) { return a.t_ms < b.t_ms; });
      } else {
        ++chunk_corruptions_;
        Warn("tsdb: corrupt block of series " + std::to_string(id >> 32) +
             " at retention; its rollups are lost");
      }
      updates.emplace_back(id, EncodeRollups(rollups, options_.zstd_level));
    }
    sqlite3_reset(sel.get());
    for (const auto& [id, blob] : updates) {
      sqlite3_bind_blob(upd.get(), 1, blob.data(), static_cast<int>(blob.size()), SQLITE_STATIC);
      sqlite3_bind_int64(upd.get(), 2, static_cast<sqlite3_int64>(id));
      const bool ok = sqlite3_step(upd.get()) == SQLITE_DONE;
      sqlite3_reset(upd.get());
      if (!ok) return fail();
    }
  }
  const std::pair<const char*, int64_t> deletes[] = {
      {"DELETE FROM chunks WHERE maxt < ?", raw_cutoff},
      {"DELETE FROM blocks WHERE maxt < ?", rollup_cutoff},
      {"DELETE FROM rollups WHERE t < ?", rollup_cutoff}};
  for (const auto& [sql, cutoff] : deletes) {
    Stmt del(sql_, sql);
    if (!del.ok()) return fail();
    sqlite3_bind_int64(del.get(), 1, cutoff);
    if (sqlite3_step(del.get()) != SQLITE_DONE) return fail();
  }
  // Remembered so that reads know where raw data (and rollups) may be missing.
  const int64_t raw_h = std::max(raw_cutoff, raw_horizon_.load());
  const int64_t rollup_h = std::max(rollup_cutoff, rollup_horizon_.load());
  if (!SetMetaLocked("raw_horizon_ms", raw_h).ok() ||
      !SetMetaLocked("rollup_horizon_ms", rollup_h).ok() || !exec("COMMIT"))
    return fail();
  raw_horizon_ = raw_h;
  rollup_horizon_ = rollup_h;
  exec("PRAGMA incremental_vacuum");
  exec("PRAGMA wal_checkpoint(TRUNCATE)");
  return Status::Ok();
}

Status DB::ReadRollups(SeriesRef ref, int64_t mint_ms, int64_t maxt_ms, std::vector<Rollup>* out) {
  out->clear();
  const int64_t window_start =
      mint_ms < INT64_MIN + kRollupWindowMs ? INT64_MIN : RollupWindowStart(mint_ms);
  const int64_t from = std::max(window_start, rollup_horizon_.load());
  if (from > maxt_ms) return Status::Ok();
  std::lock_guard lock(sql_mu_);
  {
    Stmt q(sql_,
           "SELECT t, min_v, max_v, sum_v, count_v, last_v, last_t FROM rollups "
           "WHERE series_id = ? AND t >= ? AND t <= ? ORDER BY t");
    if (!q.ok()) return Error{std::string("tsdb: rollups: ") + sqlite3_errmsg(sql_)};
    sqlite3_stmt* s = q.get();
    sqlite3_bind_int64(s, 1, static_cast<sqlite3_int64>(ref));
    sqlite3_bind_int64(s, 2, from);
    sqlite3_bind_int64(s, 3, maxt_ms);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      Rollup r;
      r.t_ms = sqlite3_column_int64(s, 0);
      r.min = sqlite3_column_double(s, 1);
      r.max = sqlite3_column_double(s, 2);
      r.sum = sqlite3_column_double(s, 3);
      r.count = static_cast<uint64_t>(sqlite3_column_int64(s, 4));
      r.last = sqlite3_column_double(s, 5);
      r.last_t_ms = sqlite3_column_int64(s, 6);
      out->push_back(r);
    }
    if (rc != SQLITE_DONE) return Error{std::string("tsdb: rollups: ") + sqlite3_errmsg(sql_)};
  }
  {
    Stmt q(sql_,
           "SELECT id, crc32, data, rollups FROM blocks WHERE id BETWEEN ? AND ? ORDER BY id");
    if (!q.ok()) return Error{std::string("tsdb: rollups: ") + sqlite3_errmsg(sql_)};
    sqlite3_stmt* s = q.get();
    sqlite3_bind_int64(s, 1,
                       static_cast<sqlite3_int64>(BlockId(ref, WindowOf(from, block_range_ms_))));
    sqlite3_bind_int64(
        s, 2, static_cast<sqlite3_int64>(BlockId(ref, WindowOf(maxt_ms, block_range_ms_))));
    std::vector<Rollup> decoded;
    while (sqlite3_step(s) == SQLITE_ROW) {
      decoded.clear();
      // Stored rollups (of samples already expired), plus those of the samples still there.
      if (!BlobColumn(s, 3).empty()) {
        if (Status st = DecodeRollups(BlobColumn(s, 3), &decoded); !st.ok()) {
          ++chunk_corruptions_;
          Warn("tsdb: corrupt rollups of series " + std::to_string(ref) + ": " + st.message() +
               "; skipped");
          decoded.clear();
        }
      }
      if (sqlite3_column_type(s, 2) != SQLITE_NULL) {
        if (Decoded d = LoadBlockLocked(ref, s)) AddToRollups(*d, &decoded);
      }
      for (const Rollup& r : decoded)
        if (r.t_ms >= from && r.t_ms <= maxt_ms) out->push_back(r);
    }
  }
  auto by_t = [](const Rollup& a, const Rollup& b) { return a.t_ms < b.t_ms; };
  std::stable_sort(out->begin(), out->end(), by_t);
  size_t n = 0;
  for (size_t i = 0; i < out->size(); ++i) {
    if (n > 0 && (*out)[n - 1].t_ms == (*out)[i].t_ms)
      MergeRollup(&(*out)[n - 1], (*out)[i]);
    else
      (*out)[n++] = (*out)[i];
  }
  out->resize(n);
  return Status::Ok();
}

DB::Decoded DB::CacheGet(uint64_t id, uint32_t crc) {
  std::lock_guard lock(cache_->mu);
  auto it = cache_->map.find(id);
  if (it == cache_->map.end() || it->second.crc != crc) {
    ++cache_->misses;
    return nullptr;
  }
  ++cache_->hits;
  cache_->lru.splice(cache_->lru.begin(), cache_->lru, it->second.lru);
  return it->second.samples;
}

void DB::CachePut(uint64_t id, uint32_t crc, Decoded samples) {
  const size_t bytes = samples->size() * sizeof(Sample);
  BlockCache& c = *cache_;
  std::lock_guard lock(c.mu);
  if (bytes > c.limit) return;
  auto it = c.map.find(id);
  if (it != c.map.end()) {
    c.bytes -= it->second.samples->size() * sizeof(Sample);
    c.lru.erase(it->second.lru);
    c.map.erase(it);
  }
  while (c.bytes + bytes > c.limit && !c.lru.empty()) {
    auto victim = c.map.find(c.lru.back());
    c.bytes -= victim->second.samples->size() * sizeof(Sample);
    c.map.erase(victim);
    c.lru.pop_back();
  }
  c.lru.push_front(id);
  c.map[id] = BlockCache::Entry{crc, std::move(samples), c.lru.begin()};
  c.bytes += bytes;
}

DB::Decoded DB::LoadBlockLocked(SeriesRef ref, sqlite3_stmt* s) {
  const auto id = static_cast<uint64_t>(sqlite3_column_int64(s, 0));
  const auto crc = static_cast<uint32_t>(sqlite3_column_int64(s, 1));
  if (Decoded d = CacheGet(id, crc)) return d;
  const std::string_view data = BlobColumn(s, 2);
  auto decoded = std::make_shared<std::vector<Sample>>();
  Status dst =
      Crc32(data) == crc ? DecodeBlock(data, decoded.get()) : Status(Error{"checksum mismatch"});
  if (!dst.ok()) {
    ++chunk_corruptions_;
    Warn("tsdb: corrupt block of series " + std::to_string(ref) + " (window " +
         std::to_string(WindowOfId(id)) + "): " + dst.message() + "; skipped");
    return nullptr;
  }
  CachePut(id, crc, decoded);
  return decoded;
}

// What one series holds in [mint_ms, maxt_ms], by source: views of decoded blocks (shared with
// the cache), samples decoded from chunk rows, and the head's samples.
struct DB::SeriesParts {
  std::vector<Decoded> blocks;
  std::vector<std::span<const Sample>> block_spans;  // the window's part of each block
  std::vector<Sample> chunks, head;
};

Status DB::ReadParts(SeriesRef ref, int64_t mint_ms, int64_t maxt_ms, SeriesParts* parts) {
  // The head first, then SQLite: a chunk flushed in between is then seen at least once.
  Status st = head_.ReadSamples(ref, mint_ms, maxt_ms, &parts->head);
  if (!st.ok()) return st;
  {
    std::lock_guard lock(sql_mu_);
    sqlite3_stmt* s = select_blocks_;
    sqlite3_bind_int64(
        s, 1, static_cast<sqlite3_int64>(BlockId(ref, WindowOf(mint_ms, block_range_ms_))));
    sqlite3_bind_int64(
        s, 2, static_cast<sqlite3_int64>(BlockId(ref, WindowOf(maxt_ms, block_range_ms_))));
    sqlite3_bind_int64(s, 3, mint_ms);
    sqlite3_bind_int64(s, 4, maxt_ms);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      if (Decoded d = LoadBlockLocked(ref, s)) parts->blocks.push_back(std::move(d));
    }
    sqlite3_reset(s);
    if (rc != SQLITE_DONE) return Error{std::string("tsdb: read: ") + sqlite3_errmsg(sql_)};

    s = select_chunks_;
    sqlite3_bind_int64(s, 1, static_cast<sqlite3_int64>(ref));
    sqlite3_bind_int64(s, 2, mint_ms);
    sqlite3_bind_int64(s, 3, maxt_ms);
    std::vector<Sample> decoded;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      const auto crc = static_cast<uint32_t>(sqlite3_column_int64(s, 0));
      const std::string_view data = BlobColumn(s, 1);
      decoded.clear();
      Status dst =
          Crc32(data) == crc ? DecodeChunk(data, &decoded) : Status(Error{"checksum mismatch"});
      if (!dst.ok()) {
        ++chunk_corruptions_;
        Warn("tsdb: corrupt chunk of series " + std::to_string(ref) + ": " + dst.message() +
             "; skipped");
        continue;
      }
      for (const Sample& smp : decoded)
        if (smp.t_ms >= mint_ms && smp.t_ms <= maxt_ms) parts->chunks.push_back(smp);
    }
    sqlite3_reset(s);
    if (rc != SQLITE_DONE) return Error{std::string("tsdb: read: ") + sqlite3_errmsg(sql_)};
  }
  // Blocks are decoded once and shared (cache); only the part inside the window is wanted.
  auto t_less = [](const Sample& a, int64_t t) { return a.t_ms < t; };
  auto t_greater = [](int64_t t, const Sample& a) { return t < a.t_ms; };
  for (const Decoded& b : parts->blocks) {
    auto lo = std::lower_bound(b->begin(), b->end(), mint_ms, t_less);
    auto hi = std::upper_bound(lo, b->end(), maxt_ms, t_greater);
    parts->block_spans.emplace_back(b->data() + (lo - b->begin()), static_cast<size_t>(hi - lo));
  }
  return Status::Ok();
}

namespace {

// Every sample of `parts` in one time-ordered vector, one sample per timestamp (the first seen:
// blocks, then chunk rows, then the head).
void Flatten(std::span<const std::span<const Sample>> block_spans,
             const std::vector<Sample>& chunks, const std::vector<Sample>& head,
             std::vector<Sample>* out) {
  size_t total = chunks.size() + head.size();
  for (const auto& span : block_spans) total += span.size();
  out->clear();
  out->reserve(total);  // one allocation: large copies into fresh memory fault pages in once
  for (const auto& span : block_spans) out->insert(out->end(), span.begin(), span.end());
  out->insert(out->end(), chunks.begin(), chunks.end());
  out->insert(out->end(), head.begin(), head.end());
  auto by_time = [](const Sample& a, const Sample& b) { return a.t_ms < b.t_ms; };
  if (!std::is_sorted(out->begin(), out->end(), by_time))
    std::stable_sort(out->begin(), out->end(), by_time);
  out->erase(std::unique(out->begin(), out->end(),
                         [](const Sample& a, const Sample& b) { return a.t_ms == b.t_ms; }),
             out->end());
}

bool StrictlyIncreasing(const std::vector<Sample>& v) {
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i].t_ms <= v[i - 1].t_ms) return false;
  return true;
}

}  // namespace

Status DB::ReadSeries(SeriesRef ref, int64_t mint_ms, int64_t maxt_ms, std::vector<Sample>* out) {
  out->clear();
  if (mint_ms > maxt_ms) return Status::Ok();
  SeriesParts parts;
  Status st = ReadParts(ref, mint_ms, maxt_ms, &parts);
  if (!st.ok()) return st;
  Flatten(parts.block_spans, parts.chunks, parts.head, out);
  return Status::Ok();
}

Status DB::ReadSeriesRuns(SeriesRef ref, int64_t mint_ms, int64_t maxt_ms, SeriesRuns* out) {
  out->runs.clear();
  out->owners.clear();
  if (mint_ms > maxt_ms) return Status::Ok();
  SeriesParts parts;
  Status st = ReadParts(ref, mint_ms, maxt_ms, &parts);
  if (!st.ok()) return st;
  // Usually the sources follow each other in time (old blocks, then chunk rows, then the head):
  // then the blocks are handed out as they are and only the small rest is owned. Overlaps (a
  // chunk flushed while it was read, a block rewritten) take the merging path.
  std::vector<std::span<const Sample>> runs;
  for (const auto& span : parts.block_spans)
    if (!span.empty()) runs.push_back(span);
  bool in_order = StrictlyIncreasing(parts.chunks) && StrictlyIncreasing(parts.head);
  for (size_t i = 1; in_order && i < runs.size(); ++i)
    in_order = runs[i - 1].back().t_ms < runs[i].front().t_ms;
  int64_t last = runs.empty() ? INT64_MIN : runs.back().back().t_ms;
  for (const std::vector<Sample>* rest : {&parts.chunks, &parts.head}) {
    if (!in_order || rest->empty()) continue;
    in_order = last < rest->front().t_ms;
    last = rest->back().t_ms;
  }
  if (!in_order) {
    std::vector<Sample> merged;
    Flatten(parts.block_spans, parts.chunks, parts.head, &merged);
    out->Own(std::move(merged));
    return Status::Ok();
  }
  out->runs = std::move(runs);
  for (Decoded& b : parts.blocks) out->owners.push_back(std::move(b));
  for (std::vector<Sample>* rest : {&parts.chunks, &parts.head}) {
    if (rest->empty()) continue;
    auto owned = std::make_shared<const std::vector<Sample>>(std::move(*rest));
    out->runs.emplace_back(owned->data(), owned->size());
    out->owners.push_back(std::move(owned));
  }
  return Status::Ok();
}

Status DB::RollupsBefore(SeriesRef ref, int64_t mint_ms, int64_t maxt_ms, int64_t first_raw_ms,
                         std::vector<Sample>* out) {
  out->clear();
  if (mint_ms >= raw_horizon_.load()) return Status::Ok();
  // Raw data before the horizon may be gone: one sample per rollup window (its last), up to the
  // first raw sample.
  const int64_t upto = first_raw_ms == INT64_MAX ? maxt_ms : first_raw_ms - 1;
  if (upto < mint_ms) return Status::Ok();
  std::vector<Rollup> rollups;
  Status st = ReadRollups(ref, mint_ms, upto, &rollups);
  if (!st.ok()) return st;
  for (const Rollup& r : rollups)
    if (r.count > 0 && r.last_t_ms >= mint_ms && r.last_t_ms <= upto)
      out->push_back({r.last_t_ms, r.last});
  return Status::Ok();
}

Status DB::ReadSeriesWithRollups(SeriesRef ref, int64_t mint_ms, int64_t maxt_ms,
                                 std::vector<Sample>* out) {
  Status st = ReadSeries(ref, mint_ms, maxt_ms, out);
  if (!st.ok()) return st;
  std::vector<Sample> merged;
  st = RollupsBefore(ref, mint_ms, maxt_ms, out->empty() ? INT64_MAX : out->front().t_ms, &merged);
  if (!st.ok() || merged.empty()) return st;
  merged.insert(merged.end(), out->begin(), out->end());
  out->swap(merged);
  return st;
}

Status DB::ReadSeriesRunsWithRollups(SeriesRef ref, int64_t mint_ms, int64_t maxt_ms,
                                     SeriesRuns* out) {
  Status st = ReadSeriesRuns(ref, mint_ms, maxt_ms, out);
  if (!st.ok()) return st;
  std::vector<Sample> rollups;
  st = RollupsBefore(ref, mint_ms, maxt_ms,
                     out->runs.empty() ? INT64_MAX : out->runs.front().front().t_ms, &rollups);
  if (!st.ok() || rollups.empty()) return st;
  auto owned = std::make_shared<const std::vector<Sample>>(std::move(rollups));
  out->runs.emplace(out->runs.begin(), owned->data(), owned->size());
  out->owners.push_back(std::move(owned));
  return st;
}

void DB::RecordSelect(double seconds) {
  ++selects_;
  select_seconds_total_.fetch_add(seconds);
}

DBStats DB::stats() const {
  DBStats s;
  s.series = head_.num_series();
  s.samples_appended = head_.samples_appended();
  s.out_of_order = head_.out_of_order() - out_of_order_at_open_;
  s.wal_replayed_samples = wal_replayed_samples_;
  s.wal_corruptions = wal_corruptions_;
  s.wal_skipped_bytes = wal_skipped_bytes_;
  s.wal_orphan_samples = wal_orphan_samples_;
  s.wal_write_failures = wal_log_->failures();
  s.wal_writes_failing = wal_log_->failing();
  s.wal_pending_bytes = wal_pending_bytes_.load();
  s.wal_dropped_samples = wal_dropped_samples_.load();
  s.flush_failures = flush_log_->failures();
  s.chunk_corruptions = chunk_corruptions_.load();
  s.chunks_persisted = chunks_persisted_.load();
  s.wal_bytes = wal_ ? wal_->size_bytes() : 0;
  const std::string db = options_.dir + "/" + kDbFile;
  s.sqlite_bytes = FileSize(db) + FileSize(db + "-wal");  // -shm is SQLite's in-memory index
  s.bytes_on_disk = s.wal_bytes + s.sqlite_bytes;
  s.last_flush_seconds = last_flush_seconds_.load();
  s.compactions = compactions_.load();
  s.blocks_written = blocks_written_.load();
  s.compaction_seconds_total = compaction_seconds_total_.load();
  s.last_compaction_seconds = last_compaction_seconds_.load();
  s.selects = selects_.load();
  s.select_seconds_total = select_seconds_total_.load();
  {
    std::lock_guard lock(cache_->mu);
    s.block_cache_hits = cache_->hits;
    s.block_cache_misses = cache_->misses;
    s.block_cache_bytes = cache_->bytes;
  }
  return s;
}

}  // namespace gw::tsdb
