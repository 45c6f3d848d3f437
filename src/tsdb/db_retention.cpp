// tsdb/db_retention.cpp — DB::ApplyRetention: deletes chunk rows and block samples older than
// the raw retention (keeping the blocks' 5-minute rollups, stored with them since format 3),
// deletes rollups older than the rollup retention, and records both horizons in the meta table for
// reads.
#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "tsdb/block.h"
#include "tsdb/db.h"
#include "tsdb/db_internal.h"

namespace gw::tsdb {

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
    // Blocks whose samples expire keep their 5-minute rollups: format 3 already stands for
    // every sample (the samples are simply dropped); older blocks get theirs computed now.
    Stmt drop(sql_,
              "UPDATE blocks SET data = NULL, crc32 = 0, ts_id = NULL WHERE maxt < ? AND maxt >= "
              "? AND data IS NOT NULL AND substr(rollups, 1, 1) = x'03'");
    Stmt sel(sql_,
             "SELECT id, crc32, data, rollups, ts_id FROM blocks WHERE maxt < ? AND maxt >= ? "
             "AND data IS NOT NULL");
    Stmt sel_ts(sql_, kSelectTimestampsSql);
    Stmt upd(sql_,
             "UPDATE blocks SET data = NULL, crc32 = 0, ts_id = NULL, rollups = ? WHERE id = ?");
    if (!drop.ok() || !sel.ok() || !sel_ts.ok() || !upd.ok()) return fail();
    sqlite3_bind_int64(drop.get(), 1, raw_cutoff);
    sqlite3_bind_int64(drop.get(), 2, rollup_cutoff);
    if (sqlite3_step(drop.get()) != SQLITE_DONE) return fail();
    sqlite3_bind_int64(sel.get(), 1, raw_cutoff);
    sqlite3_bind_int64(sel.get(), 2, rollup_cutoff);
    std::vector<std::pair<uint64_t, std::string>> updates;
    std::vector<Sample> samples;
    while (sqlite3_step(sel.get()) == SQLITE_ROW) {
      const auto id = static_cast<uint64_t>(sqlite3_column_int64(sel.get(), 0));
      const std::string_view data = BlobColumn(sel.get(), 2);
      std::vector<Rollup> rollups;
      if (!BlobColumn(sel.get(), 3).empty() &&
          !DecodeRollups(BlobColumn(sel.get(), 3), &rollups).ok()) {
        ++chunk_corruptions_;
        Warn("tsdb: corrupt rollups of series " + std::to_string(id >> 32) +
             " at retention; recomputed from the samples");
        rollups.clear();
      }
      samples.clear();
      if (Crc32(data) == static_cast<uint32_t>(sqlite3_column_int64(sel.get(), 1)) &&
          DecodeStoredBlock(data, sqlite3_column_int64(sel.get(), 4), sel_ts.get(), &samples)
              .ok()) {
        std::vector<Rollup> computed;
        AddToRollups(samples, &computed);
        MergeRollups(&rollups, computed);  // the stored ones are of older, deleted samples
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
  if (!DropUnusedTimestampsLocked(INT64_MIN, INT64_MAX).ok()) return fail();
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

}  // namespace gw::tsdb
