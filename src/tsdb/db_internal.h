// tsdb/db_internal.h — private to the db*.cpp files that implement tsdb::DB (db.h): the
// helpers they share (block ids and windows, the label blob, a self-finalizing SQLite statement)
// and the block cache's state. Not part of the module's interface; include it from nowhere else.
#ifndef GPUWARDEN_TSDB_DB_INTERNAL_H_
#define GPUWARDEN_TSDB_DB_INTERNAL_H_

#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tsdb/coding.h"
#include "tsdb/db.h"
#include "tsdb/rollup.h"

namespace gw::tsdb {

inline constexpr const char* kDbFile = "tsdb.sqlite";
// One timestamps row (format 4), for DB::DecodeStoredBlock.
inline constexpr const char* kSelectTimestampsSql =
    "SELECT crc32, data FROM timestamps WHERE id = ?";

// Window index of t (floor division), clamped to what a block id can hold.
inline int64_t WindowOf(int64_t t_ms, int64_t range_ms) {
  int64_t w = t_ms / range_ms;
  if (t_ms % range_ms < 0) --w;
  return std::clamp<int64_t>(w, INT32_MIN, INT32_MAX);
}

// series << 32 | (window + 2^31): ascending by series, then time.
inline uint64_t BlockId(SeriesRef ref, int64_t window) {
  return (static_cast<uint64_t>(ref) << 32) | static_cast<uint64_t>(window - INT32_MIN);
}

inline int64_t WindowOfId(uint64_t id) {
  return static_cast<int64_t>(id & 0xffffffffULL) + INT32_MIN;
}

// The series table's label blob (format in db_open.cpp's schema comment).
inline std::string EncodeLabels(const Labels& labels) {
  std::string out;
  PutUvarint(&out, labels.size());
  for (const Label& l : labels) PutString(&out, l.name), PutString(&out, l.value);
  return out;
}

inline bool DecodeLabels(std::string_view in, Labels* labels) {
  uint64_t n;
  if (!GetUvarint(&in, &n) || n > in.size()) return false;
  labels->resize(n);
  for (Label& l : *labels)
    if (!GetString(&in, &l.name) || !GetString(&in, &l.value)) return false;
  return in.empty();
}

// Sorts `samples` by time (stable: of equal timestamps the first stays) and drops the later
// samples of each timestamp.
inline void SortUniqueByTime(std::vector<Sample>* samples) {
  auto by_time = [](const Sample& a, const Sample& b) { return a.t_ms < b.t_ms; };
  if (!std::is_sorted(samples->begin(), samples->end(), by_time))
    std::stable_sort(samples->begin(), samples->end(), by_time);
  samples->erase(std::unique(samples->begin(), samples->end(),
                             [](const Sample& a, const Sample& b) { return a.t_ms == b.t_ms; }),
                 samples->end());
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

inline std::string_view BlobColumn(sqlite3_stmt* s, int col) {
  const void* p = sqlite3_column_blob(s, col);
  const int n = sqlite3_column_bytes(s, col);
  return p ? std::string_view(static_cast<const char*>(p), static_cast<size_t>(n))
           : std::string_view();
}

// Decoded data for queries, LRU by bytes held: decoded blocks (DB::BlockCache) and decoded
// rollup columns (DB::RollupCache). An entry is valid for one version of what it decoded (a
// crc32); a rewritten block gets a new crc and the old entry ages out.
template <class T>
struct LruCache {
  using Ptr = std::shared_ptr<const T>;
  struct Entry {
    uint32_t crc = 0;
    Ptr value;
    size_t bytes = 0;
    std::list<uint64_t>::iterator lru;
  };
  std::mutex mu;
  size_t limit = 0, bytes = 0;
  uint64_t hits = 0, misses = 0;
  std::list<uint64_t> lru;  // front: most recently used
  std::unordered_map<uint64_t, Entry> map;

  Ptr Get(uint64_t id, uint32_t crc) {
    return GetIf(id, crc, [](const T&) { return true; });
  }
  // A hit only when `usable(value)`; otherwise counted as a miss.
  template <class Usable>
  Ptr GetIf(uint64_t id, uint32_t crc, Usable usable) {
    std::lock_guard lock(mu);
    auto it = map.find(id);
    if (it == map.end() || it->second.crc != crc || !usable(*it->second.value)) {
      ++misses;
      return nullptr;
    }
    ++hits;
    lru.splice(lru.begin(), lru, it->second.lru);
    return it->second.value;
  }
  void Put(uint64_t id, uint32_t crc, Ptr value, size_t size) {
    std::lock_guard lock(mu);
    if (limit == 0 || size > limit) return;
    if (auto it = map.find(id); it != map.end()) {
      bytes -= it->second.bytes;
      lru.erase(it->second.lru);
      map.erase(it);
    }
    while (bytes + size > limit && !lru.empty()) {
      auto victim = map.find(lru.back());
      bytes -= victim->second.bytes;
      map.erase(victim);
      lru.pop_back();
    }
    lru.push_front(id);
    map[id] = Entry{crc, std::move(value), size, lru.begin()};
    bytes += size;
  }
};

// A decoded block, or its newest parts (DecodeBlockTail): `samples` are exactly the block's
// samples at or after from_ms (INT64_MIN: all of them).
struct DB::DecodedBlock {
  std::vector<Sample> samples;
  int64_t from_ms = INT64_MIN;
};
struct DB::BlockCache : LruCache<DB::DecodedBlock> {};
struct DB::RollupCache : LruCache<std::vector<Rollup>> {};
struct DB::TimestampCache : LruCache<std::vector<int64_t>> {};

}  // namespace gw::tsdb

#endif  // GPUWARDEN_TSDB_DB_INTERNAL_H_
