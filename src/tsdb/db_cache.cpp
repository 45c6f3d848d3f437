// tsdb/db_cache.cpp — the block cache: decoded blocks (whole, or their newest parts) shared by
// concurrent reads, LRU by bytes of samples held (DBOptions::block_cache_bytes), and
// LoadBlockLocked, which decodes a block row through it.
#include <sqlite3.h>

#include "tsdb/block.h"
#include "tsdb/db.h"
#include "tsdb/db_internal.h"

namespace gw::tsdb {

DB::Decoded DB::LoadBlockLocked(SeriesRef ref, sqlite3_stmt* s, bool admit, int64_t mint_ms) {
  const auto id = static_cast<uint64_t>(sqlite3_column_int64(s, 0));
  const auto crc = static_cast<uint32_t>(sqlite3_column_int64(s, 1));
  // The entry's own samples, kept alive by the entry (aliasing pointer).
  auto samples_of = [](std::shared_ptr<const DecodedBlock> b) {
    const std::vector<Sample>* v = &b->samples;
    return Decoded(std::move(b), v);
  };
  if (auto hit = cache_->GetIf(id, crc,
                               [mint_ms](const DecodedBlock& b) { return b.from_ms <= mint_ms; })) {
    return samples_of(std::move(hit));
  }
  BeginDataRead();
  sqlite3_stmt* q = select_block_data_;
  sqlite3_bind_int64(q, 1, static_cast<sqlite3_int64>(id));
  auto decoded = std::make_shared<DecodedBlock>();
  ++blocks_decoded_;
  Status dst = Error{"row not found"};
  if (sqlite3_step(q) == SQLITE_ROW) {
    const std::string_view data = BlobColumn(q, 0);
    dst = Crc32(data) == crc
              ? DecodeStoredBlock(data, sqlite3_column_int64(q, 1), select_timestamps_,
                                  &decoded->samples, mint_ms, &decoded->from_ms)
              : Status(Error{"checksum mismatch"});
  }
  sqlite3_reset(q);
  if (!dst.ok()) {
    ++chunk_corruptions_;
    Warn("tsdb: corrupt block of series " + std::to_string(ref) + " (window " +
         std::to_string(WindowOfId(id)) + "): " + dst.message() + "; skipped");
    return nullptr;
  }
  if (admit) cache_->Put(id, crc, decoded, decoded->samples.size() * sizeof(Sample));
  return samples_of(std::move(decoded));
}

Status DB::DecodeStoredBlock(std::string_view data, int64_t ts_id, sqlite3_stmt* select_ts,
                             std::vector<Sample>* out, int64_t mint_ms, int64_t* from_ms) {
  int64_t from = INT64_MIN;
  if (from_ms == nullptr) from_ms = &from;
  if (!BlockSharesTimestamps(data)) return DecodeBlockTail(data, {}, mint_ms, out, from_ms);
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
  return DecodeBlockTail(data, *times, mint_ms, out, from_ms);
}

}  // namespace gw::tsdb
