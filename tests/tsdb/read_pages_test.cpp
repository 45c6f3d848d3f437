// How many pages tsdb reads from SQLite: a VFS that forwards to the default one and counts
// xRead calls on the database file, registered as the default for this program (its own test
// binary, so no other test's connection goes through it).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "support/process.h"
#include "tsdb/db.h"
#include "tsdb/read_ahead.h"

namespace gw::tsdb {
namespace {

std::atomic<uint64_t> g_db_reads{0};
sqlite3_vfs* g_real = nullptr;

struct CountingFile {
  sqlite3_file base;
  bool main_db;
  sqlite3_file* real;  // allocated after this struct
};

sqlite3_file* Real(sqlite3_file* f) {
  return reinterpret_cast<CountingFile*>(f)->real;
}

int Close(sqlite3_file* f) {
  return Real(f)->pMethods->xClose(Real(f));
}
int Read(sqlite3_file* f, void* buf, int n, sqlite3_int64 off) {
  if (reinterpret_cast<CountingFile*>(f)->main_db) ++g_db_reads;
  return Real(f)->pMethods->xRead(Real(f), buf, n, off);
}
int Write(sqlite3_file* f, const void* buf, int n, sqlite3_int64 off) {
  return Real(f)->pMethods->xWrite(Real(f), buf, n, off);
}
int Truncate(sqlite3_file* f, sqlite3_int64 size) {
  return Real(f)->pMethods->xTruncate(Real(f), size);
}
int Sync(sqlite3_file* f, int flags) {
  return Real(f)->pMethods->xSync(Real(f), flags);
}
int FileSize(sqlite3_file* f, sqlite3_int64* size) {
  return Real(f)->pMethods->xFileSize(Real(f), size);
}
int Lock(sqlite3_file* f, int l) {
  return Real(f)->pMethods->xLock(Real(f), l);
}
int Unlock(sqlite3_file* f, int l) {
  return Real(f)->pMethods->xUnlock(Real(f), l);
}
int CheckLock(sqlite3_file* f, int* out) {
  return Real(f)->pMethods->xCheckReservedLock(Real(f), out);
}
int FileControl(sqlite3_file* f, int op, void* arg) {
  return Real(f)->pMethods->xFileControl(Real(f), op, arg);
}
int SectorSize(sqlite3_file* f) {
  return Real(f)->pMethods->xSectorSize(Real(f));
}
int DeviceChars(sqlite3_file* f) {
  return Real(f)->pMethods->xDeviceCharacteristics(Real(f));
}
int ShmMap(sqlite3_file* f, int pg, int sz, int extend, void volatile** p) {
  return Real(f)->pMethods->xShmMap(Real(f), pg, sz, extend, p);
}
int ShmLock(sqlite3_file* f, int off, int n, int flags) {
  return Real(f)->pMethods->xShmLock(Real(f), off, n, flags);
}
void ShmBarrier(sqlite3_file* f) {
  Real(f)->pMethods->xShmBarrier(Real(f));
}
int ShmUnmap(sqlite3_file* f, int del) {
  return Real(f)->pMethods->xShmUnmap(Real(f), del);
}
int Fetch(sqlite3_file* f, sqlite3_int64 off, int n, void** p) {
  return Real(f)->pMethods->xFetch(Real(f), off, n, p);
}
int Unfetch(sqlite3_file* f, sqlite3_int64 off, void* p) {
  return Real(f)->pMethods->xUnfetch(Real(f), off, p);
}

const sqlite3_io_methods kMethods = {3,           Close,      Read,        Write,  Truncate,
                                     Sync,        FileSize,   Lock,        Unlock, CheckLock,
                                     FileControl, SectorSize, DeviceChars, ShmMap, ShmLock,
                                     ShmBarrier,  ShmUnmap,   Fetch,       Unfetch};

int Open(sqlite3_vfs*, const char* name, sqlite3_file* f, int flags, int* out_flags) {
  auto* cf = reinterpret_cast<CountingFile*>(f);
  cf->real = reinterpret_cast<sqlite3_file*>(cf + 1);
  cf->main_db = (flags & SQLITE_OPEN_MAIN_DB) != 0;
  const int rc = g_real->xOpen(g_real, name, cf->real, flags, out_flags);
  f->pMethods = rc == SQLITE_OK && cf->real->pMethods ? &kMethods : nullptr;
  return rc;
}

sqlite3_vfs g_counting;

void RegisterCountingVfs() {
  if (g_real) return;
  g_real = sqlite3_vfs_find(nullptr);
  g_counting = *g_real;
  g_counting.zName = "counting";
  g_counting.szOsFile = static_cast<int>(sizeof(CountingFile)) + g_real->szOsFile;
  g_counting.xOpen = Open;
  g_counting.pNext = nullptr;
  ASSERT_EQ(sqlite3_vfs_register(&g_counting, /*makeDflt=*/1), SQLITE_OK);
}

constexpr int64_t kT0 = 1'700'006'400'000;  // a 6 h window start
constexpr int kSeries = 24;

// 24 series of full-precision noise, 6 h at 1 s: ~170 KB blocks over many overflow pages,
// 4 MB in all — more than SQLite's own page cache (2 MB), so a read of them reaches the file.
// Returns the bytes of block data.
sqlite3_int64 WriteNoise(DB& db, const std::string& dir) {
  uint64_t x = 88172645463325252ULL;
  for (int g = 0; g < kSeries; ++g) {
    const Labels l{{"__name__", "noise"}, {"g", std::to_string(g)}};
    for (int64_t i = 0; i < 21'600; ++i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      EXPECT_TRUE(db.Append(l, kT0 + i * 1000, static_cast<double>(x >> 11) * 0x1p-53).ok());
    }
  }
  EXPECT_TRUE(db.Flush().ok());
  sqlite3_int64 file_bytes = 0;
  sqlite3* raw = nullptr;
  EXPECT_EQ(sqlite3_open_v2((dir + "/tsdb.sqlite").c_str(), &raw, SQLITE_OPEN_READONLY, "unix"),
            SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(raw, "SELECT sum(length(data)) FROM blocks", -1, &st, nullptr);
  EXPECT_EQ(sqlite3_step(st), SQLITE_ROW);
  file_bytes = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(raw);
  return file_bytes;
}

// Page reads of the database file while reading every noise series whole.
uint64_t ReadAll(DB& db) {
  const uint64_t before = g_db_reads.load();
  auto q = db.NewQuerier();
  std::vector<SeriesRuns> runs;
  EXPECT_TRUE(q->SelectRuns({Matcher::Make(MatchType::kEqual, "__name__", "noise").value()}, kT0,
                            kT0 + 21'600'000, &runs)
                  .ok());
  EXPECT_EQ(runs.size(), static_cast<size_t>(kSeries));
  return g_db_reads.load() - before;
}

// A warm read — every block in the block cache — reads only the b-tree pages that lead to the
// blocks' rows, not their data: the data column is read only on a cache miss (db_cache.cpp).
// Selecting it with the row made SQLite read all of each block's overflow pages on every query
// (noise data at 512-byte pages: ~3,400 page reads per warm query, 5x its time).
TEST(ReadPages, AWarmReadDoesNotReadTheBlocksData) {
  RegisterCountingVfs();
  gw::testing::TempDir tmp;
  DBOptions o;
  o.dir = tmp.path();
  auto opened = DB::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  DB& db = **opened;
  const sqlite3_int64 file_bytes = WriteNoise(db, tmp.path());
  ASSERT_GT(file_bytes, 3 << 20);
  const uint64_t cold = ReadAll(db);
  const uint64_t decoded = db.stats().blocks_decoded;
  const uint64_t warm = ReadAll(db);
  EXPECT_EQ(db.stats().blocks_decoded, decoded);  // all from the cache
  // Cold reads the data (its pages, unless SQLite's own page cache still holds them from the
  // flush); warm reads at most the path to the rows: far fewer pages than the data spans.
  const uint64_t data_pages = static_cast<uint64_t>(file_bytes) / 512;
  EXPECT_LT(warm, data_pages / 10)
      << "cold " << cold << " page reads, data " << data_pages << " pages";
}

// Block data goes through a connection of its own (db_open.cpp): after a restart, the first
// read of 4 MB of blocks does not push the b-tree pages that lead to the rows out of the main
// connection's page cache, so the next read makes no page read at all. Through one connection
// the data pages evicted them, and SQLite's page cache growing page by page over the data was
// a third of a cold query (docs/tsdb-format.md §5, "Cold reads").
TEST(ReadPages, ColdReadsOfLargeBlocksKeepTheIndexPagesCached) {
  RegisterCountingVfs();
  gw::testing::TempDir tmp;
  DBOptions o;
  o.dir = tmp.path();
  sqlite3_int64 file_bytes = 0;
  {
    auto opened = DB::Open(o);
    ASSERT_TRUE(opened.ok()) << opened.error().message;
    file_bytes = WriteNoise(**opened, tmp.path());
  }
  auto opened = DB::Open(o);  // a restart: every cache empty
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  DB& db = **opened;
  const ReadAheadStats ahead = ReadAheadCounts();
  const uint64_t cold = ReadAll(db);
  // The data came from the file, its pages mostly from read-ahead buffers (read_ahead.h): far
  // fewer reads of the file than pages (~3,700 reads before).
  const uint64_t data_pages = static_cast<uint64_t>(file_bytes) / 512;
  EXPECT_GT(ReadAheadCounts().buffered_reads - ahead.buffered_reads, data_pages / 2);
  EXPECT_LT(cold, data_pages / 20);
  EXPECT_EQ(db.stats().blocks_decoded, static_cast<uint64_t>(kSeries));
  EXPECT_EQ(ReadAll(db), 0u) << "cold " << cold << " page reads";
  EXPECT_EQ(db.stats().blocks_decoded, static_cast<uint64_t>(kSeries));
}

// The read-ahead buffer never answers with bytes the file no longer holds: without a block
// cache every read goes through the data connection, interleaved with appends, flushes that
// rewrite blocks, retention that deletes them and incremental vacuum that moves pages and
// truncates the file. Each read returns exactly the samples written and still kept.
TEST(ReadPages, ReadAheadStaysCoherentWithWritesCompactionAndVacuum) {
  gw::testing::TempDir tmp;
  DBOptions o;
  o.dir = tmp.path();
  o.block_cache_bytes = 0;
  o.block_range_ms = 3'600'000;
  o.retention_ms = 4 * 3'600'000;
  auto opened = DB::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  DB& db = **opened;
  constexpr int kN = 6;
  std::vector<std::vector<Sample>> want(kN);
  uint64_t x = 0x9E3779B97F4A7C15ULL;
  int64_t t = kT0;
  const ReadAheadStats before = ReadAheadCounts();
  for (int round = 0; round < 40; ++round) {
    for (int i = 0; i < 600; ++i, t += 1000) {  // 10 minutes of noise per round
      for (int g = 0; g < kN; ++g) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        const double v = static_cast<double>(x >> 11) * 0x1p-53;
        ASSERT_TRUE(db.Append({{"__name__", "noise"}, {"g", std::to_string(g)}}, t, v).ok());
        want[static_cast<size_t>(g)].push_back({t, v});
      }
    }
    ASSERT_TRUE(db.Flush().ok());
    if (round % 7 == 6) {  // drop everything older than the retention, then vacuum
      ASSERT_TRUE(db.ApplyRetention(t).ok());
      for (auto& w : want)
        std::erase_if(w, [&](const Sample& s) { return s.t_ms < t - o.retention_ms; });
    }
    std::vector<SeriesData> got;
    auto q = db.NewQuerier();
    ASSERT_TRUE(q->Select({*Matcher::Make(MatchType::kEqual, "__name__", "noise")}, INT64_MIN,
                          INT64_MAX, &got)
                    .ok());
    ASSERT_EQ(got.size(), static_cast<size_t>(kN));
    for (const SeriesData& s : got) {
      const auto& w = want[static_cast<size_t>(std::stoi(std::string(s.labels.back().value)))];
      // Retention keeps whole blocks: compare the samples from the first one kept.
      ASSERT_GE(s.samples.size(), w.size()) << "round " << round;
      const size_t skip = s.samples.size() - w.size();
      for (size_t i = 0; i < w.size(); ++i) {
        ASSERT_EQ(s.samples[skip + i].t_ms, w[i].t_ms) << "round " << round;
        ASSERT_EQ(s.samples[skip + i].v, w[i].v) << "round " << round;
      }
    }
  }
  EXPECT_GT(ReadAheadCounts().buffered_reads, before.buffered_reads);  // read-ahead was used
}

}  // namespace
}  // namespace gw::tsdb
