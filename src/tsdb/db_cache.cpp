// tsdb/db_cache.cpp — the block cache: decoded blocks shared by concurrent reads, LRU by bytes of
// samples held (DBOptions::block_cache_bytes), and LoadBlockLocked, which decodes a block row
// through it.
#include <sqlite3.h>

#include "tsdb/block.h"
#include "tsdb/db.h"
#include "tsdb/db_internal.h"

namespace gw::tsdb {

DB::Decoded DB::CacheGet(uint64_t id, uint32_t crc) {
  return cache_->Get(id, crc);
}

void DB::CachePut(uint64_t id, uint32_t crc, Decoded samples) {
  const size_t bytes = samples->size() * sizeof(Sample);
  cache_->Put(id, crc, std::move(samples), bytes);
}

DB::Decoded DB::LoadBlockLocked(SeriesRef ref, sqlite3_stmt* s, bool admit) {
  const auto id = static_cast<uint64_t>(sqlite3_column_int64(s, 0));
  const auto crc = static_cast<uint32_t>(sqlite3_column_int64(s, 1));
  if (Decoded d = CacheGet(id, crc)) return d;
  BeginDataRead();
  sqlite3_stmt* q = select_block_data_;
  sqlite3_bind_int64(q, 1, static_cast<sqlite3_int64>(id));
  auto decoded = std::make_shared<std::vector<Sample>>();
  ++blocks_decoded_;
  Status dst = Error{"row not found"};
  if (sqlite3_step(q) == SQLITE_ROW) {
    const std::string_view data = BlobColumn(q, 0);
    dst = Crc32(data) == crc ? DecodeStoredBlock(data, sqlite3_column_int64(q, 1),
                                                 select_timestamps_, decoded.get())
                             : Status(Error{"checksum mismatch"});
  }
  sqlite3_reset(q);
  if (!dst.ok()) {
    ++chunk_corruptions_;
    Warn("tsdb: corrupt block of series " + std::to_string(ref) + " (window " +
         std::to_string(WindowOfId(id)) + "): " + dst.message() + "; skipped");
    return nullptr;
  }
  if (admit) CachePut(id, crc, decoded);
  return decoded;
}

Status DB::DecodeStoredBlock(std::string_view data, int64_t ts_id, sqlite3_stmt* select_ts,
                             std::vector<Sample>* out) {
  if (!BlockSharesTimestamps(data)) return DecodeBlock(data, out);
  if (ts_id <= 0 || select_ts == nullptr) return Error{"values without a timestamps row"};
  // Timestamps rows are never rewritten and their ids never reused (AUTOINCREMENT): the cache
  // needs no checksum of its own (the key's crc half is 0).
  const auto key = static_cast<uint64_t>(ts_id);
  TimestampCache::Ptr times = ts_cache_->Get(key, 0);
  if (times == nullptr) {
    sqlite3_bind_int64(select_ts, 1, ts_id);
    auto own = std::make_shared<std::vector<int64_t>>();
    Status st = Error{"timestamps row " + std::to_string(ts_id) + " not found"};
    if (sqlite3_step(select_ts) == SQLITE_ROW) {
      const std::string_view blob = BlobColumn(select_ts, 1);
      st = Crc32(blob) == static_cast<uint32_t>(sqlite3_column_int64(select_ts, 0))
               ? DecodeTimestamps(blob, own.get())
               : Status(Error{"timestamps row " + std::to_string(ts_id) + ": checksum mismatch"});
    }
    sqlite3_reset(select_ts);
    if (!st.ok()) return st;
    ts_cache_->Put(key, 0, own, own->size() * sizeof(int64_t));
    times = std::move(own);
  }
  return DecodeBlock(data, *times, out);
}

}  // namespace gw::tsdb
