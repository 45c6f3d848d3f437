// Rollups as the store keeps them (format 3): the block encoding, every block carrying the
// rollups of all its samples, reads that decode no samples, DBQuerier::SelectRollups' complete
// windows, and a data directory written in format 2 (before these fields) read correctly.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <filesystem>
#include <optional>
#include <random>
#include <span>
#include <thread>
#include <vector>

#include "support/process.h"
#include "tsdb/block.h"
#include "tsdb/db.h"

namespace gw::tsdb {
namespace {

namespace fs = std::filesystem;
using gw::testing::TempDir;

constexpr int64_t kMin = 60'000;

Labels L(const char* name, int gpu) {
  return {{"__name__", name}, {"gpu", std::to_string(gpu)}};
}

Matcher M(MatchType type, const char* name, const char* value) {
  return Matcher::Make(type, name, value).value();
}

bool Same(double a, double b) {
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

// Every field, bit for bit; sums to float rounding with `merged_sums` (windows merged across
// flushes add partial sums in another order than one pass).
void ExpectSame(const std::vector<Rollup>& want, const std::vector<Rollup>& got,
                bool merged_sums = false) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const Rollup &w = want[i], &g = got[i];
    EXPECT_EQ(g.t_ms, w.t_ms) << i;
    EXPECT_TRUE(Same(g.min, w.min) && Same(g.max, w.max)) << i;
    if (merged_sums) {
      EXPECT_NEAR(g.sum, w.sum, 1e-12 * std::fabs(w.sum)) << i;
    } else {
      EXPECT_TRUE(Same(g.sum, w.sum)) << i;
    }
    EXPECT_EQ(g.count, w.count) << i;
    EXPECT_TRUE(Same(g.first, w.first) && Same(g.last, w.last)) << i;
    EXPECT_EQ(g.first_t_ms, w.first_t_ms) << i;
    EXPECT_EQ(g.last_t_ms, w.last_t_ms) << i;
    EXPECT_TRUE(Same(g.counter_correction, w.counter_correction)) << i;
    EXPECT_EQ(g.nan_count, w.nan_count) << i;
    EXPECT_EQ(g.stale_count, w.stale_count) << i;
    EXPECT_EQ(g.first_raw_t_ms, w.first_raw_t_ms) << i;
    EXPECT_EQ(g.last_raw_t_ms, w.last_raw_t_ms) << i;
    EXPECT_EQ(g.newest_stale, w.newest_stale) << i;
    EXPECT_EQ(g.exact, w.exact) << i;
  }
}

// The fields a format-2 rollup carries too.
void ExpectSameSummary(const Rollup& want, const Rollup& got, size_t i) {
  EXPECT_EQ(got.t_ms, want.t_ms) << i;
  EXPECT_EQ(got.min, want.min) << i;
  EXPECT_EQ(got.max, want.max) << i;
  EXPECT_EQ(got.sum, want.sum) << i;
  EXPECT_EQ(got.count, want.count) << i;
  EXPECT_EQ(got.last, want.last) << i;
  EXPECT_EQ(got.last_t_ms, want.last_t_ms) << i;
}

// A counter with resets, NaNs, stale markers, gaps and windows holding only a stale marker.
std::vector<Sample> Awkward(int64_t start, int n) {
  std::vector<Sample> s;
  double c = 0;
  for (int i = 0; i < n; ++i) {
    const int64_t t = start + i * 1000LL + (i % 7 == 0 ? 300 : 0);
    if (i % 1000 > 900 && i % 1000 < 990) continue;  // a gap of 89 s
    c = i % 1700 == 0 ? 1.25 : c + (i % 3) * 0.5;
    double v = c;
    if (i % 211 == 0) v = std::nan("");
    if (i % 499 == 0) v = StaleNaN();
    s.push_back({t, v});
  }
  s.push_back({s.back().t_ms + 20 * kMin, StaleNaN()});  // a window with only a stale marker
  return s;
}

// rollup_min_samples 0: these tests' blocks are small, and what they check is the stored
// rollups column (DBRollups.SparseBlocksKeepNoColumn checks the default).
std::unique_ptr<DB> Open(const std::string& dir, bool compact = true, int64_t range = 3'600'000,
                         size_t rollup_min_samples = 0) {
  DBOptions o;
  o.dir = dir;
  o.compact_on_flush = compact;
  o.block_range_ms = range;
  o.head.samples_per_chunk = 120;
  o.rollup_min_samples = rollup_min_samples;
  auto db = DB::Open(o);
  EXPECT_TRUE(db.ok()) << (db.ok() ? "" : db.error().message);
  return db.ok() ? std::move(db).value() : nullptr;
}

// AddToRollups updates a window in place for the usual sample (a number newer than the window's
// others); every field must be what merging each sample's own rollup gives, bit for bit.
TEST(RollupFormat, AddingSamplesEqualsMergingOneRollupPerSample) {
  std::mt19937_64 rng(9);
  std::vector<Sample> samples;
  int64_t t = 1'700'000'000'000;
  double counter = 0;
  for (int i = 0; i < 20000; ++i) {
    t += 1 + static_cast<int64_t>(rng() % (i % 500 < 5 ? 400'000 : 3000));  // some gaps
    const int kind = static_cast<int>(rng() % 50);
    double v;
    if (kind == 0) {
      v = StaleNaN();
    } else if (kind == 1) {
      v = std::nan("");
    } else if (kind == 2) {
      counter = static_cast<double>(rng() % 10);  // a reset
      v = counter;
    } else if (kind == 3) {
      v = -0.0;
    } else {
      counter += static_cast<double>(rng() % 1000) / 7;
      v = kind % 2 ? counter : -counter;
    }
    samples.push_back({t, v});
  }
  std::vector<Rollup> fast, ref;
  AddToRollups(samples, &fast);
  for (const Sample& x : samples) {
    std::vector<Rollup> one;
    AddToRollups(std::span<const Sample>(&x, 1), &one);
    ASSERT_EQ(one.size(), 1u);
    if (ref.empty() || ref.back().t_ms != one[0].t_ms) {
      ref.push_back(one[0]);
    } else {
      MergeRollup(&ref.back(), one[0]);
    }
  }
  ASSERT_EQ(fast.size(), ref.size());
  auto bits = [](double d) { return std::bit_cast<uint64_t>(d); };
  for (size_t i = 0; i < ref.size(); ++i) {
    const Rollup &a = fast[i], &b = ref[i];
    SCOPED_TRACE(i);
    EXPECT_EQ(a.t_ms, b.t_ms);
    EXPECT_EQ(bits(a.min), bits(b.min));
    EXPECT_EQ(bits(a.max), bits(b.max));
    EXPECT_EQ(bits(a.sum), bits(b.sum));
    EXPECT_EQ(a.count, b.count);
    EXPECT_EQ(bits(a.last), bits(b.last));
    EXPECT_EQ(a.last_t_ms, b.last_t_ms);
    EXPECT_EQ(bits(a.first), bits(b.first));
    EXPECT_EQ(a.first_t_ms, b.first_t_ms);
    EXPECT_EQ(bits(a.counter_correction), bits(b.counter_correction));
    EXPECT_EQ(a.nan_count, b.nan_count);
    EXPECT_EQ(a.stale_count, b.stale_count);
    EXPECT_EQ(a.first_raw_t_ms, b.first_raw_t_ms);
    EXPECT_EQ(a.last_raw_t_ms, b.last_raw_t_ms);
    EXPECT_EQ(a.newest_stale, b.newest_stale);
    EXPECT_EQ(a.exact, b.exact);
  }
}

TEST(RollupFormat, EveryFieldRoundTrips) {
  std::vector<Rollup> want, got;
  AddToRollups(Awkward(1'700'000'000'000, 9000), &want);
  ASSERT_GT(want.size(), 20u);
  want[3].exact = false;  // an inexact one (merged with a format-2 rollup) stays inexact
  ASSERT_TRUE(DecodeRollups(EncodeRollups(want), &got).ok());
  ExpectSame(want, got);
  EXPECT_EQ(RollupsFormat(EncodeRollups(want)), 3);
  // Appends after what `out` holds; an empty list round-trips too.
  got.assign(1, want[0]);
  ASSERT_TRUE(DecodeRollups(EncodeRollups(std::span(want).subspan(1)), &got).ok());
  ExpectSame(want, got);
  got.clear();
  ASSERT_TRUE(DecodeRollups(EncodeRollups({}), &got).ok());
  EXPECT_TRUE(got.empty());
}

TEST(RollupFormat, CorruptInputIsAClearError) {
  std::vector<Rollup> want, got;
  AddToRollups(Awkward(0, 4000), &want);
  const std::string good = EncodeRollups(want, /*zstd_level=*/0);  // plain: every byte matters
  for (size_t n = 1; n < good.size(); ++n) {
    got.clear();
    Status st = DecodeRollups(good.substr(0, n), &got);
    EXPECT_FALSE(st.ok()) << n;
    if (!st.ok()) {
      EXPECT_TRUE(st.message().find("rollups") != std::string::npos ||
                  st.message().find("block") != std::string::npos ||
                  st.message().find("chunk") != std::string::npos)
          << st.message();
    }
  }
  // Flipped bytes anywhere: an error or some rollups, never a crash (ASan) or a raw_count of 0.
  for (size_t i = 1; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    got.clear();
    if (DecodeRollups(bad, &got).ok()) {
      for (const Rollup& r : got) EXPECT_GT(r.raw_count(), 0u);
    }
  }
  got.clear();
  Status st = DecodeRollups(std::string("\x03\x07garbage", 9), &got);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("unknown container"), std::string::npos) << st.message();
}

// CoveredWindows against its definition, window by window, on random series: a window is
// covered when each series has a usable rollup there, or none in a window complete for it.
TEST(RollupCover, AWindowIsCoveredWhenEverySeriesHasAUsableRollupOrNoSamples) {
  constexpr int64_t W = kRollupWindowMs;
  std::mt19937_64 rng(11);
  auto usable = [](const Rollup& r) { return r.exact; };
  for (int round = 0; round < 300; ++round) {
    const int64_t w0 = (static_cast<int64_t>(rng() % 1000) - 500) * W;
    const size_t n = rng() % 30;
    std::vector<SeriesRollups> rolls(rng() % 4);
    for (SeriesRollups& s : rolls) {
      const int kind = static_cast<int>(rng() % 5);
      s.complete_before_ms = kind == 0   ? INT64_MAX
                             : kind == 1 ? INT64_MIN
                                         : w0 + (static_cast<int64_t>(rng() % 40) - 5) * W +
                                               static_cast<int64_t>(rng() % 3) * 1000;
      for (int64_t t = w0 - 3 * W; t < w0 + 40 * W; t += W) {
        if (t + W > s.complete_before_ms || rng() % 3 == 0) continue;
        Rollup r;
        r.t_ms = t;
        r.count = 1;
        r.exact = rng() % 6 != 0;
        s.rollups.push_back(r);
      }
    }
    const std::vector<uint8_t> got = CoveredWindows(rolls, w0, n, +usable);
    ASSERT_EQ(got.size(), n);
    for (size_t i = 0; i < n; ++i) {
      const int64_t t = w0 + static_cast<int64_t>(i) * W;
      bool want = true;
      for (const SeriesRollups& s : rolls) {
        auto r = std::find_if(s.rollups.begin(), s.rollups.end(),
                              [t](const Rollup& x) { return x.t_ms == t; });
        want = want && (r != s.rollups.end() ? usable(*r) : t + W <= s.complete_before_ms);
      }
      EXPECT_EQ(got[i] != 0, want) << "round " << round << " window " << i;
    }
  }
}

// Reading rollups decodes no block: they are stored with every block, exact, however the
// windows were split across flushes, and survive retention without a decode.
TEST(DBRollups, StoredWithEveryBlockAndReadWithoutDecoding) {
  TempDir tmp;
  const std::vector<Sample> all = Awkward(1'700'000'000'000, 3 * 3600);
  {
    auto db = Open(tmp.path());
    const SeriesRef ref = *db->GetRef(L("energy", 0));
    for (size_t i = 0; i < all.size(); ++i) {
      ASSERT_TRUE(db->Append(ref, all[i].t_ms, all[i].v).ok());
      if (i % 1333 == 0) {
        ASSERT_TRUE(db->Flush().ok());  // splits windows and rewrites blocks
      }
    }
    ASSERT_TRUE(db->Flush().ok());
  }
  std::vector<Rollup> want, got;
  AddToRollups(all, &want);
  auto db = Open(tmp.path());
  const SeriesRef ref = *db->GetRef(L("energy", 0));
  ASSERT_TRUE(db->ReadRollups(ref, INT64_MIN, INT64_MAX, &got).ok());
  ExpectSame(want, got);
  EXPECT_EQ(db->stats().blocks_decoded, 0u);
  // Retention keeps them, still without decoding a block.
  ASSERT_TRUE(db->ApplyRetention(all.back().t_ms + 15LL * 24 * 3'600'000 + 1).ok());
  ASSERT_TRUE(db->ReadRollups(ref, INT64_MIN, INT64_MAX, &got).ok());
  ExpectSame(want, got);
  EXPECT_EQ(db->stats().blocks_decoded, 0u);
  // A raw read does decode (the counter counts).
  std::vector<Sample> raw;
  ASSERT_TRUE(db->ReadSeries(ref, INT64_MIN, INT64_MAX, &raw).ok());
  EXPECT_TRUE(raw.empty());  // all aged out
}

// Long-range reads decode each block's rollup column once: later reads of the same windows are
// answered from the rollup cache (no decode), a block rewritten by a later flush is decoded
// afresh (never served from the older decode), and a cache of 0 bytes decodes every time.
// DB::ReadBatch: reads inside a batch give what reads outside give; a batch inside another of
// the same DB does nothing (no deadlock); a flush from another thread waits for the batch's
// connection and lands once it ends; and the batch ends its read transaction — left open, the
// flush's BEGIN IMMEDIATE would fail ("cannot start a transaction within a transaction").
TEST(DBReadBatch, ReadsShareOneTransactionAndLeaveTheConnectionFree) {
  TempDir tmp;
  auto db = Open(tmp.path());  // 1 h blocks
  const int64_t t0 = 1'700'000'000'000;
  auto append = [&](int from, int to) {
    for (int g = 0; g < 8; ++g)
      for (int i = from; i < to; ++i)
        ASSERT_TRUE(db->Append(L("power", g), t0 + i * 10'000LL, g * 100 + i * 0.5).ok());
  };
  append(0, 720);  // two blocks per series
  ASSERT_TRUE(db->Flush().ok());
  append(720, 760);  // and some in the head only
  std::vector<SeriesRef> refs;
  for (int g = 0; g < 8; ++g) refs.push_back(*db->GetRef(L("power", g)));
  auto read_all = [&](std::vector<std::vector<Sample>>* samples,
                      std::vector<std::vector<Rollup>>* rollups) {
    samples->assign(8, {});
    rollups->assign(8, {});
    for (int g = 0; g < 8; ++g) {
      ASSERT_TRUE(db->ReadSeries(refs[g], INT64_MIN, INT64_MAX, &(*samples)[g]).ok());
      ASSERT_TRUE(db->ReadRollups(refs[g], INT64_MIN, INT64_MAX, &(*rollups)[g]).ok());
    }
  };
  std::vector<std::vector<Sample>> plain, batched;
  std::vector<std::vector<Rollup>> plain_r, batched_r;
  read_all(&plain, &plain_r);
  std::atomic<bool> flushed{false};
  std::thread writer;
  {
    std::optional<DB::ReadBatch> batch(std::in_place, db.get());
    DB::ReadBatch inner(db.get());
    read_all(&batched, &batched_r);
    append(760, 800);
    writer = std::thread([&] {
      EXPECT_TRUE(db->Flush().ok());
      flushed = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_FALSE(flushed.load()) << "the flush did not wait for the batch's connection";
  }
  writer.join();
  EXPECT_TRUE(flushed.load());
  for (int g = 0; g < 8; ++g) {
    ASSERT_EQ(batched[g].size(), 760u) << g;
    ASSERT_EQ(plain[g].size(), batched[g].size()) << g;
    for (size_t i = 0; i < plain[g].size(); ++i) {
      EXPECT_EQ(plain[g][i].t_ms, batched[g][i].t_ms);
      EXPECT_EQ(plain[g][i].v, batched[g][i].v);
    }
    ExpectSame(plain_r[g], batched_r[g]);
  }
  // The connection is free again: another flush and reads see everything.
  append(800, 810);
  ASSERT_TRUE(db->Flush().ok());
  std::vector<Sample> all;
  {
    DB::ReadBatch batch(db.get());
    ASSERT_TRUE(db->ReadSeries(refs[3], INT64_MIN, INT64_MAX, &all).ok());
  }
  ASSERT_EQ(all.size(), 810u);
  EXPECT_EQ(all.back().v, 300 + 809 * 0.5);
}

TEST(DBRollups, DecodedRollupsAreCachedUntilTheBlockChanges) {
  TempDir tmp;
  std::vector<Sample> all;
  for (int i = 0; i < 6 * 240; ++i) all.push_back({1'700'000'000'000 + i * 15'000LL, i % 17 * 0.5});
  {
    auto db = Open(tmp.path());  // 1 h blocks: 6 of them
    for (const Sample& x : all) ASSERT_TRUE(db->Append(L("power", 0), x.t_ms, x.v).ok());
    ASSERT_TRUE(db->Flush().ok());
  }
  auto db = Open(tmp.path());
  const SeriesRef ref = *db->GetRef(L("power", 0));
  std::vector<Rollup> want, got;
  AddToRollups(all, &want);
  ASSERT_TRUE(db->ReadRollups(ref, INT64_MIN, INT64_MAX, &got).ok());
  ExpectSame(want, got);
  const uint64_t blocks = db->stats().rollups_decoded;
  EXPECT_GE(blocks, 6u);
  EXPECT_GT(db->stats().rollup_cache_bytes, 0u);
  ASSERT_TRUE(db->ReadRollups(ref, INT64_MIN, INT64_MAX, &got).ok());
  ExpectSame(want, got);
  EXPECT_EQ(db->stats().rollups_decoded, blocks);  // all from the cache
  EXPECT_EQ(db->stats().rollup_cache_hits, blocks);
  // A part of the range: the cached windows outside it are left out.
  const int64_t lo = want[3].t_ms, hi = want[9].t_ms;
  ASSERT_TRUE(db->ReadRollups(ref, lo, hi, &got).ok());
  ExpectSame(std::vector<Rollup>(want.begin() + 3, want.begin() + 10), got);
  // New samples rewrite the newest block: its rollups change and are decoded afresh.
  for (int i = 0; i < 10; ++i) {
    const Sample x{all.back().t_ms + 15'000, 100.0 + i};
    all.push_back(x);
    ASSERT_TRUE(db->Append(ref, x.t_ms, x.v).ok());
  }
  ASSERT_TRUE(db->Flush().ok());
  const uint64_t before = db->stats().rollups_decoded;
  want.clear();
  AddToRollups(all, &want);
  ASSERT_TRUE(db->ReadRollups(ref, INT64_MIN, INT64_MAX, &got).ok());
  ExpectSame(want, got);
  EXPECT_EQ(db->stats().rollups_decoded, before + 1);
  // Without a cache every read decodes.
  DBOptions o;
  o.dir = tmp.path();
  o.rollup_cache_bytes = 0;
  db.reset();
  auto uncached = DB::Open(o);
  ASSERT_TRUE(uncached.ok());
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE((*uncached)->ReadRollups(ref, INT64_MIN, INT64_MAX, &got).ok());
    ExpectSame(want, got);
  }
  EXPECT_EQ((*uncached)->stats().rollups_decoded, 2 * blocks);
  EXPECT_EQ((*uncached)->stats().rollup_cache_hits, 0u);
}

TEST(DBRollups, BlockDecodesAreCounted) {
  TempDir tmp;
  auto db = Open(tmp.path());
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(db->Append(L("t", 0), i * 1000LL, i).ok());
  ASSERT_TRUE(db->Flush().ok());
  std::vector<Sample> raw;
  ASSERT_TRUE(db->ReadSeries(*db->GetRef(L("t", 0)), 0, INT64_MAX, &raw).ok());
  EXPECT_EQ(raw.size(), 100u);
  EXPECT_EQ(db->stats().blocks_decoded, 1u);
}

// Without compaction the rollups table holds every field too (merged across flushes), and
// compacting those chunk rows later gives the same rollups.
TEST(DBRollups, NonCompactingFlushesKeepEveryField) {
  TempDir tmp;
  const std::vector<Sample> all = Awkward(0, 7200);
  std::vector<Rollup> want, got;
  AddToRollups(all, &want);
  {
    auto db = Open(tmp.path(), /*compact=*/false);
    const SeriesRef ref = *db->GetRef(L("energy", 1));
    for (size_t i = 0; i < all.size(); ++i) {
      ASSERT_TRUE(db->Append(ref, all[i].t_ms, all[i].v).ok());
      if (i % 777 == 0) {
        ASSERT_TRUE(db->Flush().ok());
      }
    }
    ASSERT_TRUE(db->Flush().ok());
    ASSERT_TRUE(db->ReadRollups(ref, INT64_MIN, INT64_MAX, &got).ok());
    ExpectSame(want, got, /*merged_sums=*/true);
    ASSERT_TRUE(db->Compact().ok());
  }
  auto db = Open(tmp.path());
  ASSERT_TRUE(db->ReadRollups(*db->GetRef(L("energy", 1)), INT64_MIN, INT64_MAX, &got).ok());
  ExpectSame(want, got);
  EXPECT_EQ(db->stats().blocks_decoded, 0u);
}

std::vector<SeriesRollups> SelectRollups(DB* db, const std::vector<Matcher>& ms, int64_t mint,
                                         int64_t maxt) {
  std::vector<SeriesRollups> out;
  bool supported = false;
  EXPECT_TRUE(db->NewQuerier()->SelectRollups(ms, mint, maxt, &out, &supported).ok());
  EXPECT_TRUE(supported);
  return out;
}

TEST(DBQuerierRollups, CompleteWindowsOnlyInSelectOrder) {
  TempDir tmp;
  auto db = Open(tmp.path());
  // Three series appended in an order unlike their label order.
  const Labels a = L("power", 7), b = L("power", 2), c = L("temp", 0);
  std::vector<Sample> sa, sb;
  for (int i = 0; i < 1500; ++i) {  // 25 minutes at 1 s: windows 0..4, the last one full
    const int64_t t = i * 1000LL;
    ASSERT_TRUE(db->Append(a, t, i % 17).ok());
    ASSERT_TRUE(db->Append(b, t, 100 - i % 13).ok());
    ASSERT_TRUE(db->Append(c, t, 1).ok());
    sa.push_back({t, static_cast<double>(i % 17)});
    sb.push_back({t, static_cast<double>(100 - i % 13)});
  }
  const std::vector<Matcher> power = {M(MatchType::kEqual, "__name__", "power")};
  // Nothing flushed: nothing complete; both series listed, without rollups.
  auto none = SelectRollups(db.get(), power, 0, INT64_MAX);
  ASSERT_EQ(none.size(), 2u);
  for (const SeriesRollups& s : none) {
    EXPECT_TRUE(s.rollups.empty());
    EXPECT_EQ(s.complete_before_ms, 0);
  }
  ASSERT_TRUE(db->Flush().ok());
  // Flushed, nothing left in memory: every window is complete as the store holds it now, the
  // newest [1200 s, 1500 s) included (a later sample would go to memory and reopen it).
  auto got = SelectRollups(db.get(), power, 0, INT64_MAX);
  std::vector<SeriesData> raw;
  ASSERT_TRUE(db->NewQuerier()->Select(power, 0, INT64_MAX, &raw).ok());
  ASSERT_EQ(got.size(), 2u);
  ASSERT_EQ(raw.size(), 2u);
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(got[i].labels, raw[i].labels);
  EXPECT_EQ(got[0].labels, b);  // gpu 2 before gpu 7
  EXPECT_EQ(got[0].complete_before_ms, INT64_MAX);
  std::vector<Rollup> want;
  AddToRollups(sb, &want);
  ASSERT_EQ(want.size(), 5u);
  ExpectSame(want, got[0].rollups);
  want.clear();
  AddToRollups(sa, &want);
  ExpectSame(want, got[1].rollups);
  // Only windows wholly inside [mint, maxt + 1).
  got = SelectRollups(db.get(), power, 1, 1'199'999);
  ASSERT_EQ(got.size(), 2u);
  ASSERT_EQ(got[0].rollups.size(), 3u);  // [300, 600), [600, 900), [900, 1200) s
  EXPECT_EQ(got[0].rollups.front().t_ms, 300'000);
  got = SelectRollups(db.get(), power, 300'000, 1'199'998);
  ASSERT_EQ(got[0].rollups.size(), 2u);
  // Samples in memory make their windows and the later ones incomplete: the head's window, and
  // one a Flush split with the head holding its newer part; they are complete again once flushed.
  const std::vector<Matcher> only_a = {M(MatchType::kEqual, "__name__", "power"),
                                       M(MatchType::kEqual, "gpu", "7")};
  for (int i = 1500; i < 1700; ++i) ASSERT_TRUE(db->Append(a, i * 1000LL, 3).ok());
  got = SelectRollups(db.get(), only_a, 0, INT64_MAX);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].rollups.size(), 5u);
  EXPECT_EQ(got[0].complete_before_ms, 1'500'000);
  ASSERT_TRUE(db->Flush().ok());
  got = SelectRollups(db.get(), only_a, 0, INT64_MAX);
  ASSERT_EQ(got[0].rollups.size(), 6u);
  EXPECT_EQ(got[0].rollups.back().count, 200u);
  for (int i = 1700; i < 1900; ++i) ASSERT_TRUE(db->Append(a, i * 1000LL, 4).ok());
  got = SelectRollups(db.get(), only_a, 0, INT64_MAX);
  EXPECT_EQ(got[0].rollups.size(), 5u);  // [1500, 1800) is split: part in the head
  EXPECT_EQ(got[0].complete_before_ms, 1'700'000);
  ASSERT_TRUE(db->Flush().ok());
  got = SelectRollups(db.get(), only_a, 0, INT64_MAX);
  ASSERT_EQ(got[0].rollups.size(), 7u);
  EXPECT_EQ(got[0].rollups[5].t_ms, 1'500'000);
  EXPECT_EQ(got[0].rollups[5].count, 300u);
  EXPECT_EQ(got[0].rollups.back().t_ms, 1'800'000);
  EXPECT_EQ(got[0].rollups.back().count, 100u);
  // A series with samples in memory only is listed without rollups where they may lie, and left
  // out of a range that ends before them.
  const Labels d = L("power", 9);
  for (int i = 1000; i < 1100; ++i) ASSERT_TRUE(db->Append(d, i * 1000LL, 5).ok());
  got = SelectRollups(db.get(), power, 0, INT64_MAX);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[2].labels, d);
  EXPECT_TRUE(got[2].rollups.empty());
  EXPECT_EQ(got[2].complete_before_ms, 1'000'000);
  got = SelectRollups(db.get(), power, 0, 999'999);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].labels, a);
  // A regex matcher across names, and no match at all.
  got =
      SelectRollups(db.get(), {M(MatchType::kRegexMatch, "__name__", "temp|power")}, 0, INT64_MAX);
  EXPECT_EQ(got.size(), 4u);
  EXPECT_TRUE(
      SelectRollups(db.get(), {M(MatchType::kEqual, "__name__", "none")}, 0, INT64_MAX).empty());
}

// What compaction wrote, read with SQLite itself: per block of a series, the rollups column's
// first byte (0 when empty) and whether data is there.
std::vector<std::pair<int, bool>> RollupColumns(const std::string& dir, SeriesRef ref) {
  std::vector<std::pair<int, bool>> out;
  sqlite3* raw = nullptr;
  EXPECT_EQ(sqlite3_open_v2((dir + "/tsdb.sqlite").c_str(), &raw, SQLITE_OPEN_READONLY, nullptr),
            SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(raw,
                     "SELECT rollups, data IS NOT NULL FROM blocks WHERE id >> 32 = ? ORDER BY id",
                     -1, &st, nullptr);
  sqlite3_bind_int64(st, 1, static_cast<sqlite3_int64>(ref));
  while (sqlite3_step(st) == SQLITE_ROW) {
    const int n = sqlite3_column_bytes(st, 0);
    const auto* b = static_cast<const unsigned char*>(sqlite3_column_blob(st, 0));
    out.emplace_back(n > 0 ? b[0] : 0, sqlite3_column_int(st, 1) != 0);
  }
  sqlite3_finalize(st);
  sqlite3_close(raw);
  return out;
}

// Sparse blocks (DBOptions::rollup_min_samples, default 2,048 per 6 h of block range: 341 for
// these 1 h blocks): a block of fewer samples keeps no rollups column and its rollups are computed
// from the samples — the same ones; a dense block keeps format 3; a sparse block that grows past
// the threshold gets its column; retention writes the column before it drops the samples, so the
// rollups outlive them.
TEST(DBRollups, SparseBlocksKeepNoColumn) {
  TempDir tmp;
  auto db = Open(tmp.path(), /*compact=*/true, /*range=*/3'600'000, DBOptions{}.rollup_min_samples);
  std::vector<Sample> sparse, dense;
  for (int64_t t = 0; t < 9'000'000; t += 15'000) {  // 240 per 1 h block, 120 in the third
    sparse.push_back({t, static_cast<double>(t / 15'000 % 23)});
    ASSERT_TRUE(db->Append(L("sparse", 0), t, sparse.back().v).ok());
  }
  for (int64_t t = 0; t < 3 * 3'600'000; t += 1'000) {  // 3,600
    dense.push_back({t, static_cast<double>(t / 1'000 % 29)});
    ASSERT_TRUE(db->Append(L("dense", 0), t, dense.back().v).ok());
  }
  ASSERT_TRUE(db->Flush().ok());
  const SeriesRef sref = *db->GetRef(L("sparse", 0)), dref = *db->GetRef(L("dense", 0));
  auto columns = [&](SeriesRef ref) { return RollupColumns(tmp.path(), ref); };
  EXPECT_EQ(columns(sref), (std::vector<std::pair<int, bool>>{{0, true}, {0, true}, {0, true}}));
  EXPECT_EQ(columns(dref), (std::vector<std::pair<int, bool>>{{3, true}, {3, true}, {3, true}}));
  std::vector<Rollup> want, got;
  AddToRollups(sparse, &want);
  ASSERT_TRUE(db->ReadRollups(sref, INT64_MIN, INT64_MAX, &got).ok());
  ExpectSame(want, got);
  const uint64_t decoded = db->stats().blocks_decoded;
  EXPECT_GE(decoded, 3u);  // computed from the samples, then kept in the rollup cache:
  ASSERT_TRUE(db->ReadRollups(sref, INT64_MIN, INT64_MAX, &got).ok());
  ExpectSame(want, got);
  EXPECT_EQ(db->stats().blocks_decoded, decoded);
  // Through the Querier as the evaluator reads it: complete windows only.
  auto sel = SelectRollups(db.get(), {M(MatchType::kEqual, "__name__", "sparse")}, 0, INT64_MAX);
  ASSERT_EQ(sel.size(), 1u);
  ExpectSame(want, sel[0].rollups);

  // The newest block grows past the threshold (120 + 3,600 samples): now it has a column.
  for (int64_t t = 9'000'000; t < 3 * 3'600'000; t += 500) {
    sparse.push_back({t, static_cast<double>(t / 500 % 7)});
    ASSERT_TRUE(db->Append(sref, t, sparse.back().v).ok());
  }
  ASSERT_TRUE(db->Flush().ok());
  EXPECT_EQ(columns(sref).back(), (std::pair<int, bool>{3, true}));
  want.clear();
  AddToRollups(sparse, &want);
  ASSERT_TRUE(db->ReadRollups(sref, INT64_MIN, INT64_MAX, &got).ok());
  ExpectSame(want, got);

  // Retention drops the first hour's samples: its rollups are written first and read the same.
  DBOptions defaults;
  ASSERT_TRUE(db->ApplyRetention(3'600'000 + defaults.retention_ms).ok());
  const auto after = columns(sref);
  ASSERT_EQ(after.size(), 3u);
  EXPECT_EQ(after[0], (std::pair<int, bool>{3, false}));
  EXPECT_EQ(after[1], (std::pair<int, bool>{0, true}));
  EXPECT_EQ(after[2], (std::pair<int, bool>{3, true}));
  ASSERT_TRUE(db->ReadRollups(sref, INT64_MIN, INT64_MAX, &got).ok());
  ExpectSame(want, got);
}

// rollup_min_samples is per 6 h of block range: 24 h blocks at 15 s (5,760 samples, 20 per
// 5-minute window) keep no column, as 6 h ones do (1,440); at 5 s (17,280, 60 a window) they do.
// Either way the rollups read are those of the samples.
TEST(DBRollups, TheSparseThresholdScalesWithTheBlockRange) {
  TempDir tmp;
  auto db =
      Open(tmp.path(), /*compact=*/true, /*range=*/86'400'000, DBOptions{}.rollup_min_samples);
  std::vector<Sample> sparse, dense;
  for (int64_t t = 0; t < 2 * 86'400'000; t += 15'000) {
    sparse.push_back({t, static_cast<double>(t / 15'000 % 17)});
    ASSERT_TRUE(db->Append(L("sparse", 0), t, sparse.back().v).ok());
  }
  for (int64_t t = 0; t < 2 * 86'400'000; t += 5'000) {
    dense.push_back({t, static_cast<double>(t / 5'000 % 13)});
    ASSERT_TRUE(db->Append(L("dense", 0), t, dense.back().v).ok());
  }
  ASSERT_TRUE(db->Flush().ok());
  const SeriesRef sref = *db->GetRef(L("sparse", 0)), dref = *db->GetRef(L("dense", 0));
  EXPECT_EQ(RollupColumns(tmp.path(), sref),
            (std::vector<std::pair<int, bool>>{{0, true}, {0, true}}));
  EXPECT_EQ(RollupColumns(tmp.path(), dref),
            (std::vector<std::pair<int, bool>>{{3, true}, {3, true}}));
  for (auto [ref, samples] : {std::pair{sref, &sparse}, std::pair{dref, &dense}}) {
    std::vector<Rollup> want, got;
    AddToRollups(*samples, &want);
    ASSERT_TRUE(db->ReadRollups(ref, INT64_MIN, INT64_MAX, &got).ok());
    ExpectSame(want, got);
  }
}

// Raw data aged out: SelectRollups still answers from the rollups; Select keeps today's one
// sample per window.
TEST(DBQuerierRollups, AgedOutRawDataStillHasRollups) {
  TempDir tmp;
  auto db = Open(tmp.path());
  std::vector<Sample> all;
  for (int i = 0; i < 2 * 3600; ++i) {
    all.push_back({i * 1000LL, static_cast<double>((i * 7) % 31)});
    ASSERT_TRUE(db->Append(L("temp", 0), all.back().t_ms, all.back().v).ok());
  }
  ASSERT_TRUE(db->Flush().ok());
  DBOptions o;
  ASSERT_TRUE(db->ApplyRetention(3'600'000 + o.retention_ms).ok());  // the first hour's block
  const std::vector<Matcher> ms = {M(MatchType::kEqual, "__name__", "temp")};
  auto got = SelectRollups(db.get(), ms, 0, INT64_MAX);
  std::vector<Rollup> want;
  AddToRollups(all, &want);
  ASSERT_EQ(got.size(), 1u);
  ExpectSame(want, got[0].rollups);  // nothing in memory: every window complete
  std::vector<SeriesData> raw;
  ASSERT_TRUE(db->NewQuerier()->Select(ms, 0, INT64_MAX, &raw).ok());
  ASSERT_EQ(raw.size(), 1u);
  ASSERT_EQ(raw[0].samples.size(), 12u + 3600);
  EXPECT_EQ(raw[0].samples[0].t_ms, want[0].last_t_ms);
  EXPECT_EQ(raw[0].samples[0].v, want[0].last);
}

// Random series, values (NaNs, stale markers, resets), gaps and flush points: SelectRollups gives,
// for random ranges, exactly the rollups of the raw samples of every complete window.
TEST(DBQuerierRollups, AgreesWithRollupsOfTheRawSamplesOnRandomData) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 8; ++round) {
    TempDir tmp;
    // Compacting and not; every sample flushed at the end, or the last ones left in memory.
    const bool flush_all = round % 2 == 0;
    auto db = Open(tmp.path(), /*compact=*/round % 4 < 2, /*range=*/15 * kMin);
    std::vector<std::vector<Sample>> all(3);
    std::vector<int64_t> t(3, static_cast<int64_t>(rng() % 600'000));
    // Per series, the oldest sample appended since the last flush (INT64_MAX: none).
    std::vector<int64_t> in_memory(3, INT64_MAX);
    for (int step = 0; step < 6000; ++step) {
      const size_t k = rng() % 3;
      t[k] += 1 + static_cast<int64_t>(rng() % (rng() % 50 == 0 ? 900'000 : 4'000));
      const int kind = static_cast<int>(rng() % 40);
      const double v = kind == 0   ? std::nan("")
                       : kind == 1 ? StaleNaN()
                                   : static_cast<double>(rng() % 1000) / 8;
      ASSERT_TRUE(db->Append(L("m", static_cast<int>(k)), t[k], v).ok());
      all[k].push_back({t[k], v});
      in_memory[k] = std::min(in_memory[k], t[k]);
      if (rng() % 700 == 0 && step < 5900) {
        ASSERT_TRUE(db->Flush().ok());
        in_memory.assign(3, INT64_MAX);
      }
    }
    if (flush_all) {
      ASSERT_TRUE(db->Flush().ok());
      in_memory.assign(3, INT64_MAX);
    }
    for (int q = 0; q < 20; ++q) {
      const int64_t a = static_cast<int64_t>(rng() % 20'000'000),
                    b = a + static_cast<int64_t>(rng() % 40'000'000);
      auto got = SelectRollups(db.get(), {M(MatchType::kEqual, "__name__", "m")}, a, b);
      size_t gi = 0;
      for (size_t k = 0; k < 3; ++k) {
        std::vector<Rollup> want, every;
        AddToRollups(all[k], &every);
        const int64_t settled = in_memory[k];
        for (const Rollup& r : every)
          if (r.t_ms >= a && r.t_ms + kRollupWindowMs <= std::min(b + 1, settled))
            want.push_back(r);
        // Listed when it has complete windows there or may have samples in the others.
        if (want.empty() && settled > b) continue;
        ASSERT_LT(gi, got.size());
        EXPECT_EQ(got[gi].labels, L("m", static_cast<int>(k)));
        EXPECT_EQ(got[gi].complete_before_ms, settled);
        ExpectSame(want, got[gi].rollups);
        ++gi;
      }
      EXPECT_EQ(gi, got.size());
    }
    EXPECT_EQ(db->stats().blocks_decoded, 0u);
  }
}

// ---- A data directory written in format 2 (tests/tsdb/testdata/make_format2.cpp). ----

constexpr int64_t kStart = 1767225600000;
constexpr int64_t kStep = 10'000;
double FixtureTemp(int64_t i) {
  return 40 + static_cast<double>((i * 7) % 23) / 4;
}
double FixtureEnergy(int64_t i) {
  return static_cast<double>(i % 1000) * 1.5;
}

std::vector<Sample> FixtureTempSamples() {
  std::vector<Sample> s;
  for (int64_t i = 0; i < 13 * 360; ++i)
    s.push_back({kStart + i * kStep, i == 100   ? std::nan("")
                                     : i == 200 ? StaleNaN()
                                                : FixtureTemp(i)});
  return s;
}

std::string CopyFixture(const TempDir& tmp) {
  const std::string dir = tmp.path() + "/data";
  fs::copy(std::string(GW_SOURCE_DIR) + "/tests/tsdb/testdata/format2", dir,
           fs::copy_options::recursive);
  for (const auto& e : fs::recursive_directory_iterator(dir))
    fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
  return dir;
}

std::string FormatVersion(const std::string& dir) {
  sqlite3* sql = nullptr;
  std::string v;
  if (sqlite3_open_v2((dir + "/tsdb.sqlite").c_str(), &sql, SQLITE_OPEN_READONLY, nullptr) ==
      SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(sql, "SELECT value FROM meta WHERE key = 'format_version'", -1, &st,
                       nullptr);
    if (st && sqlite3_step(st) == SQLITE_ROW)
      v = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
  }
  sqlite3_close(sql);
  return v;
}

// Checks everything the fixture holds, read through `db`.
void ExpectFixture(DB* db) {
  const std::vector<Sample> temp = FixtureTempSamples();
  std::vector<Rollup> want;
  AddToRollups(temp, &want);
  const SeriesRef t_ref = *db->GetRef(L("temp", 0));
  // The first 6 h aged out (format-2 five-column rollups, inexact), the rest raw.
  std::vector<Rollup> got;
  ASSERT_TRUE(db->ReadRollups(t_ref, INT64_MIN, INT64_MAX, &got).ok());
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const bool aged = got[i].t_ms < kStart + 6 * 3'600'000;
    EXPECT_EQ(got[i].exact, !aged) << i;
    ExpectSameSummary(want[i], got[i], i);
    if (!aged) {
      EXPECT_EQ(got[i].first, want[i].first) << i;
    }
  }
  std::vector<SeriesData> raw;
  ASSERT_TRUE(db->NewQuerier()
                  ->Select({M(MatchType::kEqual, "__name__", "temp")}, 0, INT64_MAX, &raw)
                  .ok());
  ASSERT_EQ(raw.size(), 1u);
  ASSERT_EQ(raw[0].samples.size(), 72u + 7 * 360);  // one per aged-out window, then raw
  EXPECT_EQ(raw[0].samples[72].t_ms, kStart + 6 * 3'600'000);
  for (int64_t i = 6 * 360; i < 13 * 360; ++i)
    EXPECT_EQ(raw[0].samples[72 + i - 6 * 360].v, FixtureTemp(i)) << i;
  // The counter flushed as chunk rows, its rollups in the table (inexact: no ext).
  const SeriesRef e_ref = *db->GetRef(L("energy", 0));
  std::vector<Sample> energy, e_samples;
  for (int64_t i = 0; i < 4000; ++i) energy.push_back({kStart + i * kStep, FixtureEnergy(i)});
  ASSERT_TRUE(db->ReadSeries(e_ref, INT64_MIN, INT64_MAX, &e_samples).ok());
  ASSERT_EQ(e_samples.size(), energy.size());
  for (size_t i = 0; i < energy.size(); ++i) EXPECT_EQ(e_samples[i].v, energy[i].v) << i;
  want.clear();
  AddToRollups(energy, &want);
  ASSERT_TRUE(db->ReadRollups(e_ref, INT64_MIN, INT64_MAX, &got).ok());
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_FALSE(got[i].exact);
    ExpectSameSummary(want[i], got[i], i);
  }
}

TEST(DBFormat2, ReadOnlyOpenReadsItUnchanged) {
  TempDir tmp;
  const std::string dir = CopyFixture(tmp);
  ASSERT_EQ(FormatVersion(dir), "2");
  DBOptions o;
  o.dir = dir;
  o.read_only = true;
  auto db = DB::Open(o);
  ASSERT_TRUE(db.ok()) << db.error().message;
  ExpectFixture(db->get());
  EXPECT_EQ(FormatVersion(dir), "2");
}

TEST(DBFormat2, WritableOpenUpgradesAndNewWritesAreExact) {
  TempDir tmp;
  const std::string dir = CopyFixture(tmp);
  {
    auto db = Open(dir);
    ASSERT_NE(db, nullptr);
    EXPECT_EQ(FormatVersion(dir), "4");  // through 3 (exact rollups) to 4 (shared timestamps)
    ExpectFixture(db.get());
    // New samples of the counter compact its chunk rows into blocks: exact rollups from then
    // on, with the table's rows gone; the old temp blocks still read as before.
    const SeriesRef e_ref = *db->GetRef(L("energy", 0));
    for (int64_t i = 4000; i < 4100; ++i)
      ASSERT_TRUE(db->Append(e_ref, kStart + i * kStep, FixtureEnergy(i)).ok());
    ASSERT_TRUE(db->Flush().ok());
  }
  auto db = Open(dir);
  std::vector<Sample> energy;
  for (int64_t i = 0; i < 4100; ++i) energy.push_back({kStart + i * kStep, FixtureEnergy(i)});
  std::vector<Rollup> want, got;
  AddToRollups(energy, &want);
  ASSERT_TRUE(db->ReadRollups(*db->GetRef(L("energy", 0)), INT64_MIN, INT64_MAX, &got).ok());
  ExpectSame(want, got);
  EXPECT_EQ(db->stats().blocks_decoded, 0u);
}

// A version-3 directory (made here from a version-4 one with regular timestamps, so nothing is
// shared, by taking away what version 4 added): a read-only open reads it unchanged; a writable
// open upgrades it in place, reads every old block as it was and shares the timestamps of new
// jittered scrapes.
TEST(DBFormat3, ReadOnlyOpenReadsItUnchangedAndAWritableOpenUpgradesIt) {
  TempDir tmp;
  const std::string dir = tmp.path();
  std::vector<Sample> regular;
  {
    auto db = Open(dir);
    ASSERT_NE(db, nullptr);
    for (int64_t i = 0; i < 3000; ++i) {
      regular.push_back({kStart + i * 1000, static_cast<double>(i % 97)});
      ASSERT_TRUE(db->Append(L("temp", 0), regular.back().t_ms, regular.back().v).ok());
    }
    ASSERT_TRUE(db->Flush().ok());
  }
  {
    sqlite3* sql = nullptr;
    ASSERT_EQ(sqlite3_open((dir + "/tsdb.sqlite").c_str(), &sql), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(sql,
                           "DROP INDEX blocks_by_ts; ALTER TABLE blocks DROP COLUMN ts_id; DROP "
                           "TABLE timestamps; UPDATE meta SET value = '3' WHERE key = "
                           "'format_version'",
                           nullptr, nullptr, nullptr),
              SQLITE_OK)
        << sqlite3_errmsg(sql);
    sqlite3_close(sql);
  }
  ASSERT_EQ(FormatVersion(dir), "3");
  auto read = [](DB* db, const Labels& l) {
    std::vector<Sample> got;
    EXPECT_TRUE(db->ReadSeries(*db->GetRef(l), INT64_MIN, INT64_MAX, &got).ok());
    return got;
  };
  auto same = [](const std::vector<Sample>& a, const std::vector<Sample>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].t_ms != b[i].t_ms || a[i].v != b[i].v) return false;
    return true;
  };
  {
    DBOptions o;
    o.dir = dir;
    o.read_only = true;
    auto db = DB::Open(o);
    ASSERT_TRUE(db.ok()) << db.error().message;
    EXPECT_TRUE(same(read(db->get(), L("temp", 0)), regular));
  }
  EXPECT_EQ(FormatVersion(dir), "3");
  auto db = Open(dir);
  ASSERT_NE(db, nullptr);
  EXPECT_EQ(FormatVersion(dir), "4");
  EXPECT_TRUE(same(read(db.get(), L("temp", 0)), regular));
  // Two series scraped together, with jitter, in a later window: one timestamps row.
  std::mt19937_64 rng(2);
  std::vector<Sample> jittered[2];
  for (int64_t i = 0; i < 3000; ++i) {
    const int64_t t = kStart + 7'200'000 + i * 1000 + static_cast<int64_t>(rng() % 16);
    for (int g = 0; g < 2; ++g) {
      jittered[g].push_back({t, static_cast<double>(i * (g + 1))});
      ASSERT_TRUE(db->Append(L("power", g), t, jittered[g].back().v).ok());
    }
  }
  ASSERT_TRUE(db->Flush().ok());
  for (int g = 0; g < 2; ++g) EXPECT_TRUE(same(read(db.get(), L("power", g)), jittered[g])) << g;
  sqlite3* sql = nullptr;
  ASSERT_EQ(sqlite3_open((dir + "/tsdb.sqlite").c_str(), &sql), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(sql, "SELECT count(*) FROM timestamps", -1, &st, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int64(st, 0), 1);  // the 3,000 s lie in one (1 h) window
  sqlite3_finalize(st);
  sqlite3_close(sql);
}

}  // namespace
}  // namespace gw::tsdb
