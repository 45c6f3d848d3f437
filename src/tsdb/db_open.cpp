// tsdb/db_open.cpp — opening a data directory: the SQLite schema and its format version, the
// meta table (block range, retention horizons), loading the persisted series into the head and
// replaying the write-ahead log on top of them (DB::Open and the steps it runs).
#include <sqlite3.h>

#include <algorithm>
#include <filesystem>

#include "tsdb/db.h"
#include "tsdb/db_internal.h"
#include "tsdb/read_ahead.h"

namespace gw::tsdb {
namespace {

namespace fs = std::filesystem;

// The schema (docs/tsdb-format.md). Chunks are clustered by (series, newest timestamp): a
// series' chunks never overlap, so maxt is unique per series, and a query for [mint, maxt] reads
// from the first chunk ending at or after mint — no separate index, which would cost a fifth of
// the file. Retention scans the table (hourly). Labels are a blob: uvarint n, n × (string name,
// string value), strings as uvarint length + bytes. A chunk's crc32 covers its data blob.
// Blocks (compacted data) are a rowid table keyed by BlockId(series, window), so they are
// clustered by series and time without an index; data is NULL once raw retention has passed
// (the rollups, computed then, stay).
// Version 3 added the rollups table's `ext` column and format-3 rollups in blocks (every block
// carries the rollups of all its samples); version 2 is upgraded in place at a writable open
// (one ALTER TABLE, no rows rewritten) and read as it is by a read-only one.
constexpr const char* kFormatVersion = "4";
// The block-data connection's page cache: 64 KiB. Its pages are read once and decoded into the
// block cache, so a large cache only costs fresh memory per page on the first reads after a
// start, and the index pages the main connection keeps (2 MiB, SQLite's default) stay there.
constexpr const char* kDataConnectionPragmas = "PRAGMA cache_size=-64;";

constexpr const char* kPreSchema = R"sql(
PRAGMA page_size=512;
PRAGMA auto_vacuum=INCREMENTAL;
PRAGMA journal_mode=WAL;
PRAGMA synchronous=NORMAL;
)sql";
constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT OR IGNORE INTO meta(key, value) VALUES('format_version', '4');
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
  ext BLOB,
  PRIMARY KEY(series_id, t)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS blocks(
  id INTEGER PRIMARY KEY,
  mint INTEGER NOT NULL,
  maxt INTEGER NOT NULL,
  num_samples INTEGER NOT NULL,
  crc32 INTEGER NOT NULL,
  rollups BLOB NOT NULL DEFAULT x'',
  data BLOB,
  ts_id INTEGER);
)sql";
// Version 4: timestamps shared by the blocks of series scraped together (docs/tsdb-format.md
// §1b, "Shared timestamps"). Run after the upgrade from 3, which adds blocks.ts_id.
constexpr const char* kSchema4 = R"sql(
CREATE TABLE IF NOT EXISTS timestamps(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  window INTEGER NOT NULL,
  crc32 INTEGER NOT NULL,
  data BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS timestamps_by_crc ON timestamps(window, crc32);
CREATE INDEX IF NOT EXISTS blocks_by_ts ON blocks(ts_id) WHERE ts_id IS NOT NULL;
)sql";

}  // namespace

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
  std::string version;
  {
    // Refuse other format versions before touching the schema.
    Stmt q(sql_, "SELECT value FROM meta WHERE key = 'format_version'");
    if (q.ok() && sqlite3_step(q.get()) == SQLITE_ROW) {
      const auto* v = reinterpret_cast<const char*>(sqlite3_column_text(q.get(), 0));
      version = v ? v : "";
      if (version != kFormatVersion && version != "2" && version != "3")
        return Error{"tsdb: " + path + " has format version " + version +
                     "; this build reads versions 2 to " + kFormatVersion +
                     " only (no migration: move the data directory away and start afresh)"};
    }
  }
  if (writable) {
    if (Status st = exec(kSchema); !st.ok()) return st;
    if (version.empty()) version = kFormatVersion;  // a new database
    // Upgrades, each one transaction: 2 → 3 (exact rollups), 3 → 4 (shared timestamps).
    const std::pair<const char*, const char*> upgrades[] = {
        {"2",
         "BEGIN IMMEDIATE; ALTER TABLE rollups ADD COLUMN ext BLOB; UPDATE meta SET value = '3' "
         "WHERE key = 'format_version'; COMMIT"},
        {"3",
         "BEGIN IMMEDIATE; ALTER TABLE blocks ADD COLUMN ts_id INTEGER; UPDATE meta SET value = "
         "'4' WHERE key = 'format_version'; COMMIT"}};
    for (const auto& [from, sql] : upgrades) {
      if (version != from) continue;
      if (Status st = exec(sql); !st.ok()) {
        (void)exec("ROLLBACK");
        return st;
      }
      version = std::to_string(std::stoi(version) + 1);
    }
    if (Status st = exec(kSchema4); !st.ok()) return st;
  }
  rollups_ext_ = version != "2";
  shared_ts_ = version == "4";
  if (!options_.read_only) {
    // Skips the table in reads while it is empty (a reader beside a live writer always looks:
    // the writer may add rows later).
    Stmt q(sql_, "SELECT 1 FROM rollups LIMIT 1");
    rollup_rows_ = !q.ok() || sqlite3_step(q.get()) == SQLITE_ROW;
    Stmt c(sql_, "SELECT 1 FROM chunks LIMIT 1");
    chunk_rows_ = !c.ok() || sqlite3_step(c.get()) == SQLITE_ROW;
  }
  if (sqlite3_prepare_v2(sql_,
                         "SELECT crc32, data FROM chunks WHERE series_id = ? AND maxt >= ? "
                         "AND mint <= ? ORDER BY mint",
                         -1, &select_chunks_, nullptr) != SQLITE_OK ||
      sqlite3_prepare_v2(sql_,
                         "SELECT id, crc32, mint FROM blocks WHERE id BETWEEN ? AND ? "
                         "AND maxt >= ? AND mint <= ? AND typeof(data) = 'blob' ORDER BY id",
                         -1, &select_blocks_, nullptr) != SQLITE_OK ||
      // A block's rollups, and whether its samples are needed too: they are where the rollups
      // are not format 3 (written before version 3, or a sparse block's empty column) and the
      // samples are still there; those are summarised from the samples at read time.
      sqlite3_prepare_v2(sql_,
                         "SELECT id, crc32, typeof(data) = 'blob' AND substr(rollups, 1, 1) IS NOT "
                         "x'03', rollups FROM blocks WHERE id BETWEEN ? AND ? ORDER BY id",
                         -1, &select_block_rollups_, nullptr) != SQLITE_OK ||
      sqlite3_prepare_v2(sql_,
                         rollups_ext_ ? "SELECT t, min_v, max_v, sum_v, count_v, last_v, last_t, "
                                        "ext FROM rollups WHERE series_id = ? AND t >= ? AND "
                                        "t <= ? ORDER BY t"
                                      : "SELECT t, min_v, max_v, sum_v, count_v, last_v, last_t, "
                                        "NULL FROM rollups WHERE series_id = ? AND t >= ? AND "
                                        "t <= ? ORDER BY t",
                         -1, &select_rollup_rows_, nullptr) != SQLITE_OK)
    return Error{std::string("tsdb: ") + sqlite3_errmsg(sql_)};
  // A block's samples, read only when the block cache does not have them (db_cache.cpp), through
  // a connection of their own with a small page cache (docs/tsdb-format.md §5, "Cold reads").
  // Only in the writing process, where every commit happens under sql_mu_ (so both connections
  // see the same database while it is held); a read-only opener beside another process's
  // writer, and an in-memory database, read it through sql_, in the same snapshot as the rows.
  if (!options_.read_only) {
    // Through the read-ahead VFS (read_ahead.h): a block's overflow pages in a few reads.
    if (sqlite3_open_v2(path.c_str(), &data_sql_, SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX,
                        ReadAheadVfs()) == SQLITE_OK) {
      sqlite3_busy_timeout(data_sql_, 5000);
      (void)sqlite3_exec(data_sql_, kDataConnectionPragmas, nullptr, nullptr, nullptr);
    } else {
      Warn("tsdb: cannot open a second connection to " + path + " (" + sqlite3_errmsg(data_sql_) +
           "); block data is read through the first");
      sqlite3_close(data_sql_);
      data_sql_ = nullptr;
    }
  }
  sqlite3* data = data_sql_ ? data_sql_ : sql_;
  if (sqlite3_prepare_v2(data,
                         shared_ts_ ? "SELECT data, ts_id FROM blocks WHERE id = ?"
                                    : "SELECT data, NULL FROM blocks WHERE id = ?",
                         -1, &select_block_data_, nullptr) != SQLITE_OK ||
      (shared_ts_ && sqlite3_prepare_v2(data, kSelectTimestampsSql, -1, &select_timestamps_,
                                        nullptr) != SQLITE_OK))
    return Error{std::string("tsdb: ") + sqlite3_errmsg(data)};
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

}  // namespace gw::tsdb
