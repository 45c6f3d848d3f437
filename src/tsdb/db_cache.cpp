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
    dst =
        Crc32(data) == crc ? DecodeBlock(data, decoded.get()) : Status(Error{"checksum mismatch"});
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

}  // namespace gw::tsdb
