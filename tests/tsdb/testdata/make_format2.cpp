// Writes tests/tsdb/testdata/format2/: a data directory in format version 2, the format before
// rollups carried first/NaN/stale fields (docs/tsdb-format.md, "Format versions"). It was built
// once against main at commit ce3e820 (the last commit writing version 2) and run there:
//   g++ -std=c++20 -I src make_format2.cpp build/src/tsdb/libgw_tsdb.a build/src/base/libgw_base.a
//   \
//       -lsqlite3 -lzstd -o /tmp/make_format2 && /tmp/make_format2 OUT_DIR
// It is kept for the record, not built: DBTest.OpensFormat2DataDirectory reads its output and
// recomputes every expected value from the same formulas (FixtureTemp/FixtureEnergy there).
#include <cmath>
#include <cstdio>
#include <limits>

#include "tsdb/db.h"

using namespace gw::tsdb;

namespace {

constexpr int64_t kStart = 1767225600000;  // 2026-01-01T00:00:00Z, a 6 h boundary
constexpr int64_t kStep = 10'000;

double Temp(int64_t i) {
  return 40 + static_cast<double>((i * 7) % 23) / 4;
}
double Energy(int64_t i) {
  return static_cast<double>(i % 1000) * 1.5;
}  // resets every 1000

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::string dir = argv[1];
  {
    DBOptions o{.dir = dir};
    o.retention_ms = 24LL * 3600 * 1000;
    auto db = DB::Open(o);
    if (!db.ok()) return 1;
    auto ref = (*db)->GetRef({{"__name__", "temp"}, {"gpu", "0"}});
    // 13 h at 10 s: blocks for windows 0, 1 and 2; a NaN at i = 100, a stale marker at i = 200.
    for (int64_t i = 0; i < 13 * 360; ++i) {
      double v = Temp(i);
      if (i == 100) v = std::numeric_limits<double>::quiet_NaN();
      if (i == 200) v = StaleNaN();
      (void)(*db)->Append(*ref, kStart + i * kStep, v);
    }
    if (!(*db)->Flush().ok()) return 1;
    // The first 6 h block ages out: its rollups are stored as five columns, data NULL.
    if (!(*db)->ApplyRetention(kStart + 6 * 3600 * 1000 + 24LL * 3600 * 1000 + 1).ok()) return 1;
  }
  {
    DBOptions o{.dir = dir};
    o.compact_on_flush = false;
    auto db = DB::Open(o);
    if (!db.ok()) return 1;
    auto ref = (*db)->GetRef({{"__name__", "energy"}, {"gpu", "0"}});
    // Two flushes without compaction: chunk rows and rows of the rollups table, the window at
    // i = 2000..2029 split across them (merged by the table's upsert).
    for (int64_t i = 0; i < 4000; ++i) {
      (void)(*db)->Append(*ref, kStart + i * kStep, Energy(i));
      if (i == 2010 && !(*db)->Flush().ok()) return 1;
    }
    if (!(*db)->Flush().ok()) return 1;
  }
  std::puts("ok");
  return 0;
}
