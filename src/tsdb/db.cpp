#include "tsdb/db.h"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

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
constexpr const char* kSchema = R"sql(
PRAGMA journal_mode=WAL;
PRAGMA synchronous=NORMAL;
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT OR IGNORE INTO meta(key, value) VALUES('format_version', '1');
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
)sql";

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

DB::DB(const DBOptions& options) : options_(options), head_(options.head) {}

DB::~DB() {
  if (wal_) {
    Status st = wal_->Commit();
    if (!st.ok()) Warn(st.message());
  }
  sqlite3_finalize(select_chunks_);
  sqlite3_close(sql_);
}

void DB::Warn(const std::string& message) const {
  if (options_.logger) options_.logger->Warn(message);
}

Expected<std::unique_ptr<DB>> DB::Open(const DBOptions& options) {
  std::error_code ec;
  fs::create_directories(options.dir, ec);
  if (ec) return Error{"tsdb: cannot create " + options.dir + ": " + ec.message()};
  std::unique_ptr<DB> db(new DB(options));
  Status st = db->OpenSqlite();
  if (st.ok()) st = db->LoadSeries();
  WalReplayStats replay;
  if (st.ok()) st = db->ReplayWal(&replay);
  if (!st.ok()) return Error{st.message()};
  db->wal_replayed_samples_ = replay.samples;
  db->wal_corruptions_ = replay.corruptions;
  db->out_of_order_at_open_ = db->head_.out_of_order();
  return db;
}

Status DB::OpenSqlite() {
  const std::string path = options_.dir + "/" + kDbFile;
  if (sqlite3_open_v2(path.c_str(), &sql_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK)
    return Error{"tsdb: cannot open " + path + ": " + sqlite3_errmsg(sql_)};
  sqlite3_busy_timeout(sql_, 5000);
  char* err = nullptr;
  if (sqlite3_exec(sql_, kSchema, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    return Error{"tsdb: " + path + ": " + msg};
  }
  if (sqlite3_prepare_v2(sql_,
                         "SELECT crc32, data FROM chunks WHERE series_id = ? AND maxt >= ? "
                         "AND mint <= ? ORDER BY mint",
                         -1, &select_chunks_, nullptr) != SQLITE_OK)
    return Error{std::string("tsdb: ") + sqlite3_errmsg(sql_)};
  return Status::Ok();
}

Status DB::LoadSeries() {
  Stmt q(sql_,
         "SELECT s.id, s.labels, (SELECT MAX(maxt) FROM chunks c WHERE c.series_id = s.id) "
         "FROM series s ORDER BY s.id");
  if (!q.ok()) return Error{std::string("tsdb: ") + sqlite3_errmsg(sql_)};
  while (sqlite3_step(q.get()) == SQLITE_ROW) {
    const auto ref = static_cast<SeriesRef>(sqlite3_column_int64(q.get(), 0));
    Labels labels;
    if (!DecodeLabels(BlobColumn(q.get(), 1), &labels)) {
      Warn("tsdb: series " + std::to_string(ref) + " has malformed labels; skipped");
      continue;
    }
    const int64_t last_t = sqlite3_column_type(q.get(), 2) == SQLITE_NULL
                               ? INT64_MIN
                               : sqlite3_column_int64(q.get(), 2);
    Status st = head_.AddSeries(ref, labels, last_t);
    if (!st.ok()) Warn(st.message() + " (series " + std::to_string(ref) + ")");
  }
  return Status::Ok();
}

Status DB::ReplayWal(WalReplayStats* replay) {
  auto on_series = [this](SeriesRef ref, const Labels& labels) {
    if (head_.LabelsOf(ref) == labels) return;  // already loaded from SQLite
    Status st = head_.AddSeries(ref, labels);
    if (st.ok())
      unpersisted_series_.push_back(ref);
    else
      Warn("tsdb: wal replay: " + st.message());
  };
  // Samples already persisted come back as out-of-order and are skipped.
  auto on_sample = [this](SeriesRef ref, int64_t t, double v) { (void)head_.Append(ref, t, v); };
  WalOptions wo;
  wo.dir = options_.dir + "/wal";
  wo.segment_bytes = options_.wal_segment_bytes;
  wo.sync = options_.wal_sync;
  wo.sync_interval_s = options_.wal_sync_interval_s;
  auto wal = Wal::Open(wo, options_.logger, on_series, on_sample, replay);
  if (!wal.ok()) return Error{wal.error().message};
  wal_ = std::move(wal).value();
  return Status::Ok();
}

Expected<SeriesRef> DB::GetRef(const Labels& labels) {
  bool created = false;
  auto ref = head_.GetOrCreate(labels, &created);
  if (ref.ok() && created) {
    wal_->AddSeries(*ref, labels);
    unpersisted_series_.push_back(*ref);
  }
  return ref;
}

Status DB::Append(SeriesRef ref, int64_t t_ms, double v) {
  Status st = head_.Append(ref, t_ms, v);
  if (st.ok()) wal_->AddSample(ref, t_ms, v);
  return st;
}

Status DB::Append(const Labels& labels, int64_t t_ms, double v) {
  auto ref = GetRef(labels);
  if (!ref.ok()) return Error{ref.error().message};
  return Append(*ref, t_ms, v);
}

Status DB::Commit() {
  return wal_->Commit();
}

Status DB::Flush() {
  const auto start = std::chrono::steady_clock::now();
  Status st = Commit();
  if (!st.ok()) return st;
  auto collected = head_.CutAndCollect(/*cut_open=*/true);
  uint64_t written = 0;
  {
    std::lock_guard lock(sql_mu_);
    auto exec = [this](const char* sql) {
      return sqlite3_exec(sql_, sql, nullptr, nullptr, nullptr) == SQLITE_OK;
    };
    if (!exec("BEGIN IMMEDIATE")) return Error{std::string("tsdb: flush: ") + sqlite3_errmsg(sql_)};
    Stmt ins_series(sql_, "INSERT OR REPLACE INTO series(id, labels) VALUES(?, ?)");
    Stmt ins_chunk(
        sql_,
        "INSERT OR REPLACE INTO chunks(series_id, mint, maxt, num_samples, encoding, crc32, data) "
        "VALUES(?, ?, ?, ?, ?, ?, ?)");
    Stmt ins_rollup(
        sql_,
        "INSERT INTO rollups(series_id, t, min_v, max_v, sum_v, count_v, last_v, last_t) "
        "VALUES(?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(series_id, t) DO UPDATE SET "
        "min_v = min(min_v, excluded.min_v), max_v = max(max_v, excluded.max_v), "
        "sum_v = sum_v + excluded.sum_v, count_v = count_v + excluded.count_v, "
        "last_v = CASE WHEN excluded.last_t >= last_t THEN excluded.last_v "
        "ELSE last_v END, last_t = max(last_t, excluded.last_t)");
    bool ok = ins_series.ok() && ins_chunk.ok() && ins_rollup.ok();
    for (size_t i = 0; ok && i < unpersisted_series_.size(); ++i) {
      const std::string blob = EncodeLabels(head_.LabelsOf(unpersisted_series_[i]));
      sqlite3_stmt* s = ins_series.get();
      sqlite3_bind_int64(s, 1, static_cast<sqlite3_int64>(unpersisted_series_[i]));
      sqlite3_bind_blob(s, 2, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
      ok = sqlite3_step(s) == SQLITE_DONE;
      sqlite3_reset(s);
    }
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
    if (!ok || !exec("COMMIT")) {
      std::string msg = sqlite3_errmsg(sql_);
      exec("ROLLBACK");
      return Error{"tsdb: flush: " + msg};
    }
  }
  {
    // Fold SQLite's own journal into the database file and truncate it, so the data is not on
    // disk twice between SQLite's automatic checkpoints. Failure here loses nothing.
    std::lock_guard lock(sql_mu_);
    sqlite3_exec(sql_, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr);
  }
  // Persisted: drop from memory (readers look at the head before SQLite, so they never miss a
  // chunk in between), then forget the WAL that held it.
  for (const auto& [ref, chunks] : collected) head_.DropPersisted(ref, chunks.size());
  unpersisted_series_.clear();
  chunks_persisted_ += written;
  st = wal_->Checkpoint();
  last_flush_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return st;
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
  std::lock_guard lock(sql_mu_);
  const std::pair<const char*, int64_t> deletes[] = {
      {"DELETE FROM chunks WHERE maxt < ?", now_ms - options_.retention_ms},
      {"DELETE FROM rollups WHERE t < ?", now_ms - options_.rollup_retention_ms}};
  for (const auto& [sql, cutoff] : deletes) {
    Stmt del(sql_, sql);
    if (!del.ok()) return Error{std::string("tsdb: retention: ") + sqlite3_errmsg(sql_)};
    sqlite3_bind_int64(del.get(), 1, cutoff);
    if (sqlite3_step(del.get()) != SQLITE_DONE)
      return Error{std::string("tsdb: retention: ") + sqlite3_errmsg(sql_)};
  }
  return Status::Ok();
}

Status DB::ReadRollups(SeriesRef ref, int64_t mint_ms, int64_t maxt_ms, std::vector<Rollup>* out) {
  out->clear();
  std::lock_guard lock(sql_mu_);
  Stmt q(sql_,
         "SELECT t, min_v, max_v, sum_v, count_v, last_v, last_t FROM rollups "
         "WHERE series_id = ? AND t >= ? AND t <= ? ORDER BY t");
  if (!q.ok()) return Error{std::string("tsdb: rollups: ") + sqlite3_errmsg(sql_)};
  sqlite3_stmt* s = q.get();
  sqlite3_bind_int64(s, 1, static_cast<sqlite3_int64>(ref));
  sqlite3_bind_int64(s, 2, RollupWindowStart(mint_ms));
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
  return Status::Ok();
}

Status DB::ReadSeries(SeriesRef ref, int64_t mint_ms, int64_t maxt_ms, std::vector<Sample>* out) {
  out->clear();
  // The head first, then SQLite: a chunk flushed in between is then seen at least once.
  std::vector<Sample> head_samples;
  Status st = head_.ReadSamples(ref, mint_ms, maxt_ms, &head_samples);
  if (!st.ok()) return st;
  {
    std::lock_guard lock(sql_mu_);
    sqlite3_stmt* s = select_chunks_;
    sqlite3_bind_int64(s, 1, static_cast<sqlite3_int64>(ref));
    sqlite3_bind_int64(s, 2, mint_ms);
    sqlite3_bind_int64(s, 3, maxt_ms);
    std::vector<Sample> decoded;
    int rc;
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
        if (smp.t_ms >= mint_ms && smp.t_ms <= maxt_ms) out->push_back(smp);
    }
    sqlite3_reset(s);
    if (rc != SQLITE_DONE) return Error{std::string("tsdb: read: ") + sqlite3_errmsg(sql_)};
  }
  out->insert(out->end(), head_samples.begin(), head_samples.end());
  auto by_time = [](const Sample& a, const Sample& b) { return a.t_ms < b.t_ms; };
  if (!std::is_sorted(out->begin(), out->end(), by_time))
    std::stable_sort(out->begin(), out->end(), by_time);
  out->erase(std::unique(out->begin(), out->end(),
                         [](const Sample& a, const Sample& b) { return a.t_ms == b.t_ms; }),
             out->end());
  return Status::Ok();
}

DBStats DB::stats() const {
  DBStats s;
  s.series = head_.num_series();
  s.samples_appended = head_.samples_appended();
  s.out_of_order = head_.out_of_order() - out_of_order_at_open_;
  s.wal_replayed_samples = wal_replayed_samples_;
  s.wal_corruptions = wal_corruptions_;
  s.chunk_corruptions = chunk_corruptions_.load();
  s.chunks_persisted = chunks_persisted_.load();
  s.wal_bytes = wal_->size_bytes();
  const std::string db = options_.dir + "/" + kDbFile;
  s.sqlite_bytes = FileSize(db) + FileSize(db + "-wal");  // -shm is SQLite's in-memory index
  s.bytes_on_disk = s.wal_bytes + s.sqlite_bytes;
  s.last_flush_seconds = last_flush_seconds_.load();
  return s;
}

}  // namespace gw::tsdb
