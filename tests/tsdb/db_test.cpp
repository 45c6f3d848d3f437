#include "tsdb/db.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <thread>

#include "support/mutate.h"
#include "support/process.h"
#include "tsdb/block.h"

namespace gw::tsdb {
namespace {

namespace fs = std::filesystem;
using gw::testing::TempDir;

Labels Series(int gpu, const char* name = "gpu_temperature_celsius") {
  return {{"__name__", name}, {"gpu", std::to_string(gpu)}};
}

Matcher M(MatchType type, const char* name, const char* value) {
  return Matcher::Make(type, name, value).value();
}

std::unique_ptr<DB> OpenDb(const std::string& dir, Logger* logger = nullptr,
                           bool compact_on_flush = true) {
  DBOptions o;
  o.dir = dir;
  o.head.samples_per_chunk = 50;
  o.logger = logger;
  o.compact_on_flush = compact_on_flush;
  auto db = DB::Open(o);
  EXPECT_TRUE(db.ok()) << (db.ok() ? "" : db.error().message);
  return db.ok() ? std::move(db).value() : nullptr;
}

std::vector<Sample> ReadAll(DB* db, const Labels& labels) {
  std::vector<SeriesData> out;
  std::vector<Matcher> ms;
  for (const Label& l : labels) ms.push_back(M(MatchType::kEqual, l.name.c_str(), l.value.c_str()));
  EXPECT_TRUE(db->NewQuerier()->Select(ms, INT64_MIN, INT64_MAX, &out).ok());
  return out.empty() ? std::vector<Sample>{} : out[0].samples;
}

// SelectRuns' answer flattened into Select's shape; false (with why) when the runs break their
// contract (empty runs, runs out of time order or overlapping).
bool SelectViaRuns(Querier* q, const std::vector<Matcher>& ms, int64_t mint, int64_t maxt,
                   std::vector<SeriesData>* out, std::string* why) {
  std::vector<SeriesRuns> runs;
  out->clear();
  if (Status st = q->SelectRuns(ms, mint, maxt, &runs); !st.ok()) return *why = st.message(), false;
  for (const SeriesRuns& s : runs) {
    SeriesData d{s.labels, {}};
    for (const auto& run : s.runs) {
      if (run.empty()) return *why = "empty run", false;
      if (!d.samples.empty() && run.front().t_ms <= d.samples.back().t_ms)
        return *why = "runs out of order", false;
      d.samples.insert(d.samples.end(), run.begin(), run.end());
    }
    if (d.samples.empty()) return *why = "series without samples", false;
    out->push_back(std::move(d));
  }
  return true;
}

std::string LastWalSegment(const std::string& dir) {
  std::string last;
  for (const auto& e : fs::directory_iterator(dir + "/wal"))
    if (fs::file_size(e.path()) > 0 && e.path().string() > last) last = e.path().string();
  return last;
}

TEST(DB, ReopenWithoutFlushReplaysTheWal) {
  TempDir tmp;
  {
    auto db = OpenDb(tmp.path());
    SeriesRef ref = *db->GetRef(Series(0));
    for (int i = 0; i < 120; ++i) ASSERT_TRUE(db->Append(ref, i * 1000, 40 + i % 7).ok());
    ASSERT_TRUE(db->MarkStale(ref, 120'000).ok());
    ASSERT_TRUE(db->Append(Series(1), 5, 0.25).ok());
    ASSERT_TRUE(db->Commit().ok());
  }
  auto db = OpenDb(tmp.path());
  auto s0 = ReadAll(db.get(), Series(0));
  ASSERT_EQ(s0.size(), 121u);
  EXPECT_EQ(s0[7].v, 40);
  EXPECT_TRUE(IsStaleNaN(s0.back().v));
  EXPECT_EQ(ReadAll(db.get(), Series(1)).at(0).v, 0.25);
  EXPECT_EQ(db->stats().wal_replayed_samples, 122u);
  EXPECT_EQ(db->stats().series, 2u);
  // Refs survive the restart, and order is still enforced.
  EXPECT_EQ(*db->GetRef(Series(1)), 2u);
  EXPECT_FALSE(db->Append(*db->GetRef(Series(0)), 5'000, 1).ok());
  EXPECT_EQ(db->stats().out_of_order, 1u);
}

// A child process appends and commits batches, reports each commit through a pipe, and is
// killed with SIGKILL in the middle of the next batch. Every reported batch must be there.
TEST(DB, KillNineLosesNoCommittedSample) {
  TempDir tmp;
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    DBOptions o;
    o.dir = tmp.path();
    o.wal_sync = WalSync::kNever;  // kill -9 must not need fsync
    auto db = std::move(DB::Open(o)).value();
    for (int cycle = 0;; ++cycle) {
      for (int gpu = 0; gpu < 8; ++gpu)
        (void)db->Append(Series(gpu), cycle * 1000, cycle * 10 + gpu);
      if (cycle == 300) raise(SIGKILL);  // mid-batch: appended, not committed
      if (!db->Commit().ok()) _exit(3);
      if (cycle == 150) (void)db->Flush();
      const int done = cycle;
      if (write(fds[1], &done, sizeof done) != sizeof done) _exit(4);
    }
  }
  close(fds[1]);
  int last = -1, v;
  while (read(fds[0], &v, sizeof v) == sizeof v) last = v;
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  ASSERT_EQ(last, 299);
  auto db = OpenDb(tmp.path());
  for (int gpu = 0; gpu < 8; ++gpu) {
    auto s = ReadAll(db.get(), Series(gpu));
    ASSERT_GE(s.size(), 300u) << gpu;
    for (int c = 0; c < 300; ++c) {
      ASSERT_EQ(s[static_cast<size_t>(c)].t_ms, c * 1000);
      ASSERT_EQ(s[static_cast<size_t>(c)].v, c * 10 + gpu);
    }
  }
  EXPECT_EQ(db->stats().wal_corruptions, 0u);
}

TEST(DB, WalReplaysAcrossManySegments) {
  TempDir tmp;
  DBOptions o;
  o.dir = tmp.path();
  o.wal_segment_bytes = 2000;
  o.wal_sync = WalSync::kAlways;
  {
    auto db = std::move(DB::Open(o)).value();
    for (int c = 0; c < 200; ++c) {
      for (int gpu = 0; gpu < 4; ++gpu) ASSERT_TRUE(db->Append(Series(gpu), c, c + gpu).ok());
      ASSERT_TRUE(db->Commit().ok());
    }
  }
  size_t segments = 0;
  for (const auto& e : fs::directory_iterator(tmp.path() + "/wal")) segments += e.is_regular_file();
  EXPECT_GT(segments, 5u);
  auto db = std::move(DB::Open(o)).value();
  for (int gpu = 0; gpu < 4; ++gpu) EXPECT_EQ(ReadAll(db.get(), Series(gpu)).size(), 200u);
  EXPECT_EQ(db->stats().wal_replayed_samples, 800u);
}

TEST(DB, TruncatedWalTailIsDetectedAndTheRestKept) {
  TempDir tmp;
  std::vector<std::string> lines;
  Logger logger(LogLevel::kWarn, [&](LogLevel, const std::string& line) { lines.push_back(line); });
  {
    auto db = OpenDb(tmp.path());
    SeriesRef ref = *db->GetRef(Series(0));
    for (int batch = 0; batch < 10; ++batch) {
      for (int i = 0; i < 10; ++i) ASSERT_TRUE(db->Append(ref, batch * 10 + i, i).ok());
      ASSERT_TRUE(db->Commit().ok());
    }
  }
  const std::string seg = LastWalSegment(tmp.path());
  fs::resize_file(seg, fs::file_size(seg) - 5);  // a torn last write
  {
    auto db = OpenDb(tmp.path(), &logger);
    EXPECT_EQ(ReadAll(db.get(), Series(0)).size(), 90u);
    EXPECT_EQ(db->stats().wal_corruptions, 1u);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_NE(lines[0].find("truncated record"), std::string::npos) << lines[0];
    ASSERT_TRUE(db->Append(*db->GetRef(Series(0)), 1000, 1).ok());
    ASSERT_TRUE(db->Commit().ok());
  }
  auto db = OpenDb(tmp.path());
  EXPECT_EQ(ReadAll(db.get(), Series(0)).size(), 91u);
  EXPECT_EQ(db->stats().wal_corruptions, 0u);  // the bad tail was cut off once
}

// Mutated WAL segments (flips, cuts, insertions) never crash the replay, and every sample
// replayed is one that was written, in order: CRCs keep damaged records out (and replay picks up
// again at the next whole record, so it is a subsequence, not just a prefix).
TEST(DB, MutatedWalReplaysAPrefixAndNeverCrashes) {
  TempDir tmp;
  const std::string dir = tmp / "src";
  {
    auto db = OpenDb(dir);
    for (int c = 0; c < 30; ++c) {
      for (int gpu = 0; gpu < 3; ++gpu) ASSERT_TRUE(db->Append(Series(gpu), c, c * 3 + gpu).ok());
      ASSERT_TRUE(db->Commit().ok());
    }
  }
  const std::string seg_name = fs::path(LastWalSegment(dir)).filename().string();
  const std::string original = gw::testing::ReadFile(dir + "/wal/" + seg_name);
  gw::testing::Mutator mutator(5);
  for (int i = 0; i < 25; ++i) {
    const std::string run = tmp / ("m" + std::to_string(i));
    fs::create_directories(run + "/wal");
    gw::testing::WriteFile(run + "/wal/" + seg_name, mutator.Mutate(original));
    auto db = OpenDb(run);
    ASSERT_NE(db, nullptr);
    for (int gpu = 0; gpu < 3; ++gpu) {
      const auto s = ReadAll(db.get(), Series(gpu));
      ASSERT_LE(s.size(), 30u);
      for (size_t k = 0; k < s.size(); ++k) {
        ASSERT_GE(s[k].t_ms, 0) << i;
        ASSERT_LT(s[k].t_ms, 30) << i;
        if (k > 0) {
          ASSERT_GT(s[k].t_ms, s[k - 1].t_ms) << i;
        }
        ASSERT_EQ(s[k].v, static_cast<double>(s[k].t_ms * 3) + gpu) << i;
      }
    }
    db.reset();
    fs::remove_all(run);
  }
}

TEST(DB, BadWalCrcStopsReplayOfThatSegment) {
  TempDir tmp;
  {
    auto db = OpenDb(tmp.path());
    SeriesRef ref = *db->GetRef(Series(0));
    for (int batch = 0; batch < 4; ++batch) {
      ASSERT_TRUE(db->Append(ref, batch, batch).ok());
      ASSERT_TRUE(db->Commit().ok());
    }
  }
  const std::string seg = LastWalSegment(tmp.path());
  std::string data = gw::testing::ReadFile(seg);
  data[data.size() - 3] ^= 0x40;  // inside the last record's value
  gw::testing::WriteFile(seg, data);
  auto db = OpenDb(tmp.path());
  EXPECT_EQ(ReadAll(db.get(), Series(0)).size(), 3u);
  EXPECT_EQ(db->stats().wal_corruptions, 1u);
}

TEST(DB, FlushPersistsToSqliteAndCheckpointsTheWal) {
  TempDir tmp;
  {
    auto db = OpenDb(tmp.path());
    SeriesRef ref = *db->GetRef(Series(0));
    for (int i = 0; i < 500; ++i) ASSERT_TRUE(db->Append(ref, i * 1000, i % 13).ok());
    ASSERT_TRUE(db->Flush().ok());
    EXPECT_EQ(db->stats().chunks_persisted, 10u);
    EXPECT_EQ(db->stats().wal_bytes, 0u);
    for (int i = 500; i < 520; ++i) ASSERT_TRUE(db->Append(ref, i * 1000, i % 13).ok());
    ASSERT_TRUE(db->Commit().ok());
    EXPECT_GT(db->stats().wal_bytes, 0u);
    EXPECT_GT(db->stats().sqlite_bytes, 0u);
  }
  auto db = OpenDb(tmp.path());
  auto s = ReadAll(db.get(), Series(0));
  ASSERT_EQ(s.size(), 520u);
  for (int i = 0; i < 520; ++i) ASSERT_EQ(s[static_cast<size_t>(i)].v, i % 13);
  EXPECT_EQ(db->stats().wal_replayed_samples, 20u);
  EXPECT_FALSE(db->Append(*db->GetRef(Series(0)), 400'000, 1).ok());  // before persisted data
}

TEST(DB, CorruptChunkIsReportedSkippedAndTheRestServed) {
  TempDir tmp;
  {
    auto db = OpenDb(tmp.path(), nullptr, /*compact_on_flush=*/false);
    for (int i = 0; i < 150; ++i) {
      ASSERT_TRUE(db->Append(Series(0), i * 1000, i).ok());
      ASSERT_TRUE(db->Append(Series(1), i * 1000, i).ok());
    }
    ASSERT_TRUE(db->Flush().ok());
  }
  sqlite3* sql = nullptr;
  ASSERT_EQ(sqlite3_open((tmp.path() + "/tsdb.sqlite").c_str(), &sql), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(sql,
                         "UPDATE chunks SET data = CAST(zeroblob(length(data)) AS BLOB) "
                         "WHERE series_id = 1 AND mint = 50000",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  EXPECT_EQ(sqlite3_changes(sql), 1);
  sqlite3_close(sql);
  std::vector<std::string> lines;
  Logger logger(LogLevel::kWarn, [&](LogLevel, const std::string& line) { lines.push_back(line); });
  auto db = OpenDb(tmp.path(), &logger, /*compact_on_flush=*/false);
  auto s0 = ReadAll(db.get(), Series(0));
  ASSERT_EQ(s0.size(), 100u);  // chunks [0,50) and [100,150)
  EXPECT_EQ(s0[50].t_ms, 100'000);
  EXPECT_EQ(ReadAll(db.get(), Series(1)).size(), 150u);
  EXPECT_EQ(db->stats().chunk_corruptions, 1u);
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines[0].find("corrupt chunk"), std::string::npos);
}

TEST(DB, RetentionDeletesOldChunks) {
  TempDir tmp;
  DBOptions o;
  o.dir = tmp.path();
  o.head.samples_per_chunk = 10;
  o.retention_ms = 50'000;
  o.compact_on_flush = false;  // chunk rows; blocks: RetentionKeepsRollupsOfBlocks...
  auto db = std::move(DB::Open(o)).value();
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(db->Append(Series(0), i * 1000, i).ok());
  ASSERT_TRUE(db->Flush().ok());
  ASSERT_TRUE(db->ApplyRetention(100'000).ok());
  auto s = ReadAll(db.get(), Series(0));
  ASSERT_EQ(s.size(), 50u);  // chunks ending before 50 s are gone, later ones stay whole
  EXPECT_EQ(s[0].t_ms, 50'000);
}

TEST(DB, FlushWritesFiveMinuteRollupsMergedAcrossFlushes) {
  TempDir tmp;
  auto db = OpenDb(tmp.path());
  SeriesRef ref = *db->GetRef(Series(0));
  std::vector<Sample> all;
  for (int i = 0; i < 1200; ++i) {  // 20 minutes at 1 s, starting 2 minutes into a window
    const int64_t t = 120'000 + i * 1000LL;
    const double v = i % 97 == 0 ? std::nan("") : static_cast<double>((i * 37) % 101);
    ASSERT_TRUE(db->Append(ref, t, v).ok());
    all.push_back({t, v});
    if (i == 400) {
      ASSERT_TRUE(db->Flush().ok());  // splits the window [300 s, 600 s) across two flushes
    }
  }
  ASSERT_TRUE(db->MarkStale(ref, 2'000'000).ok());
  all.push_back({2'000'000, StaleNaN()});
  ASSERT_TRUE(db->Flush().ok());
  std::vector<Rollup> want;
  AddToRollups(all, &want);
  std::vector<Rollup> got;
  ASSERT_TRUE(db->ReadRollups(ref, 0, INT64_MAX, &got).ok());
  ASSERT_EQ(got.size(), want.size());
  // [0,300) partial ... [1200,1500) partial, and [1800,2100) holding only the stale marker.
  ASSERT_EQ(got.size(), 6u);
  EXPECT_EQ(got[5].count, 0u);
  EXPECT_EQ(got[5].stale_count, 1u);
  EXPECT_TRUE(got[5].newest_stale);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].t_ms, want[i].t_ms);
    EXPECT_EQ(got[i].min, want[i].min);
    EXPECT_EQ(got[i].max, want[i].max);
    EXPECT_EQ(got[i].sum, want[i].sum);
    EXPECT_EQ(got[i].count, want[i].count);
    EXPECT_EQ(got[i].last, want[i].last);
  }
  EXPECT_EQ(got[0].count, 180u - 2);  // 120..299 s; the NaNs at i = 0 and 97 are not counted
  ASSERT_TRUE(db->ReadRollups(ref, 650'000, 700'000, &got).ok());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].t_ms, 600'000);
  DBOptions o;
  ASSERT_TRUE(db->ApplyRetention(o.rollup_retention_ms + 600'000).ok());
  ASSERT_TRUE(db->ReadRollups(ref, 0, INT64_MAX, &got).ok());
  EXPECT_EQ(got.size(), 4u);  // [600,900) ... and the stale-only window
}

TEST(Rollup, WindowsAreFloorAligned) {
  EXPECT_EQ(RollupWindowStart(0), 0);
  EXPECT_EQ(RollupWindowStart(299'999), 0);
  EXPECT_EQ(RollupWindowStart(300'000), 300'000);
  EXPECT_EQ(RollupWindowStart(-1), -300'000);
}

// The fields that make a rollup stand exactly for its raw samples, and that they come out the
// same whether a window's samples are folded at once or in two parts merged (either order).
TEST(Rollup, ExactFieldsSurviveSplitsAndMerges) {
  const double nan = std::nan("");
  // One window [0, 300 s): a counter 5, 7, reset to 1, NaN, 4, reset to 2, stale marker.
  std::vector<Sample> s = {{1000, 5}, {2000, 7}, {3000, 1},         {4000, nan},
                           {5000, 4}, {6000, 2}, {7000, StaleNaN()}};
  std::vector<Rollup> whole;
  AddToRollups(s, &whole);
  ASSERT_EQ(whole.size(), 1u);
  const Rollup& r = whole[0];
  EXPECT_EQ(r.count, 5u);
  EXPECT_EQ(r.nan_count, 1u);
  EXPECT_EQ(r.stale_count, 1u);
  EXPECT_EQ(r.raw_count(), 7u);
  EXPECT_EQ(r.min, 1);
  EXPECT_EQ(r.max, 7);
  EXPECT_EQ(r.sum, 19);
  EXPECT_EQ(r.first, 5);
  EXPECT_EQ(r.first_t_ms, 1000);
  EXPECT_EQ(r.last, 2);
  EXPECT_EQ(r.last_t_ms, 6000);
  EXPECT_EQ(r.counter_correction, 7 + 4);  // drops 7->1 and 4->2 (the NaN is skipped)
  EXPECT_EQ(r.first_raw_t_ms, 1000);
  EXPECT_EQ(r.last_raw_t_ms, 7000);
  EXPECT_TRUE(r.newest_stale);
  EXPECT_TRUE(r.exact);
  for (size_t cut = 1; cut < s.size(); ++cut) {
    std::vector<Rollup> a, b;
    AddToRollups(std::span(s).first(cut), &a);
    AddToRollups(std::span(s).subspan(cut), &b);
    for (bool newer_into_older : {true, false}) {
      Rollup m = newer_into_older ? a[0] : b[0];
      MergeRollup(&m, newer_into_older ? b[0] : a[0]);
      EXPECT_EQ(m.count, r.count) << cut;
      EXPECT_EQ(m.min, r.min) << cut;
      EXPECT_EQ(m.max, r.max) << cut;
      EXPECT_EQ(m.sum, r.sum) << cut;
      EXPECT_EQ(m.first_t_ms, r.first_t_ms) << cut;
      EXPECT_EQ(m.last_t_ms, r.last_t_ms) << cut;
      EXPECT_EQ(m.counter_correction, r.counter_correction) << cut;
      EXPECT_EQ(m.nan_count, r.nan_count) << cut;
      EXPECT_EQ(m.stale_count, r.stale_count) << cut;
      EXPECT_EQ(m.first_raw_t_ms, r.first_raw_t_ms) << cut;
      EXPECT_EQ(m.newest_stale, r.newest_stale) << cut;
    }
  }
  // A sample after the stale marker: the window no longer ends stale.
  AddToRollups(std::vector<Sample>{{8000, 3}}, &whole);
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_FALSE(whole[0].newest_stale);
  EXPECT_EQ(whole[0].last, 3);
}

// Reads whose range starts after everything persisted skip SQLite (db_read.cpp); ranges that
// reach persisted samples still get them, after a flush and after reopening (the persisted time
// then comes from SQLite).
TEST(DB, ReadsAroundThePersistedTimeSeeEverySample) {
  TempDir tmp;
  DBOptions o;
  o.dir = tmp.path();
  o.head.samples_per_chunk = 30;
  auto count = [](DB* db, int64_t mint, int64_t maxt) {
    auto q = db->NewQuerier();
    std::vector<SeriesData> out;
    EXPECT_TRUE(q->Select({M(MatchType::kEqual, "gpu", "0")}, mint, maxt, &out).ok());
    if (out.size() != 1) return size_t{0};
    for (size_t i = 1; i < out[0].samples.size(); ++i)
      EXPECT_EQ(out[0].samples[i].t_ms, out[0].samples[i - 1].t_ms + 1000);
    return out[0].samples.size();
  };
  {
    auto db = std::move(DB::Open(o)).value();
    SeriesRef ref = *db->GetRef(Series(0));
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(db->Append(ref, i * 1000LL, i).ok());
    ASSERT_TRUE(db->Flush().ok());  // 0..99 s persisted
    for (int i = 100; i < 150; ++i) ASSERT_TRUE(db->Append(ref, i * 1000LL, i).ok());
    ASSERT_TRUE(db->Commit().ok());  // 100..149 s in the head and the WAL
    EXPECT_EQ(count(db.get(), 50'000, 120'000), 71u);
    EXPECT_EQ(count(db.get(), 99'000, 149'000), 51u);
    EXPECT_EQ(count(db.get(), 100'000, 149'000), 50u);
    EXPECT_EQ(count(db.get(), 0, 200'000), 150u);
  }
  auto db = std::move(DB::Open(o)).value();
  EXPECT_EQ(count(db.get(), 99'000, 149'000), 51u);
  EXPECT_EQ(count(db.get(), 100'000, 149'000), 50u);
  EXPECT_EQ(count(db.get(), 0, 200'000), 150u);
}

// Readers running while the writer appends and flushes always see every sample up to some
// point, with no gap where chunks move from memory to SQLite.
TEST(DB, ReadersNeverMissDataDuringFlush) {
  TempDir tmp;
  DBOptions o;
  o.dir = tmp.path();
  o.head.samples_per_chunk = 20;
  o.block_range_ms = 300'000;  // every flush compacts into one or two of many blocks
  auto db = std::move(DB::Open(o)).value();
  SeriesRef ref = *db->GetRef(Series(0));
  ASSERT_TRUE(db->Append(ref, 0, 0).ok());
  std::atomic<bool> done{false};
  std::atomic<int> bad{0}, reads{0};
  std::thread reader([&] {
    auto q = db->NewQuerier();
    const std::vector<Matcher> ms = {M(MatchType::kEqual, "gpu", "0")};
    for (bool runs = false; !done; runs = !runs) {
      std::vector<SeriesData> out;
      std::string why;
      const bool ok = runs ? SelectViaRuns(q.get(), ms, 0, INT64_MAX, &out, &why)
                           : q->Select(ms, 0, INT64_MAX, &out).ok();
      if (!ok || out.size() != 1) {
        ++bad;
        continue;
      }
      const auto& s = out[0].samples;
      for (size_t i = 0; i < s.size(); ++i)
        if (s[i].t_ms != static_cast<int64_t>(i) * 1000 || s[i].v != static_cast<double>(i)) {
          ++bad;
          break;
        }
      ++reads;
    }
  });
  for (int i = 1; i < 3000; ++i) {
    ASSERT_TRUE(db->Append(ref, i * 1000LL, i).ok());
    if (i % 50 == 0) {
      ASSERT_TRUE(db->Commit().ok());
    }
    if (i % 300 == 0) {
      ASSERT_TRUE(db->Flush().ok());
    }
  }
  done = true;
  reader.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(reads.load(), 0);
}

bool SameSeries(const std::vector<SeriesData>& a, const std::vector<SeriesData>& b,
                std::string* why) {
  if (a.size() != b.size()) return *why = "series count", false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].labels != b[i].labels) return *why = "labels", false;
    if (a[i].samples.size() != b[i].samples.size()) return *why = "sample count", false;
    for (size_t k = 0; k < a[i].samples.size(); ++k)
      if (a[i].samples[k].t_ms != b[i].samples[k].t_ms ||
          std::bit_cast<uint64_t>(a[i].samples[k].v) != std::bit_cast<uint64_t>(b[i].samples[k].v))
        return *why = "sample " + std::to_string(k), false;
  }
  return true;
}

// Random data through the DB (with flushes and reopens at random points) answers every query
// exactly as MemoryQuerier fed the same data.
TEST(DB, QuerierAgreesWithMemoryQuerierOnRandomData) {
  TempDir tmp;
  std::mt19937_64 rng(42);
  MemoryQuerier oracle;
  auto db = OpenDb(tmp.path());
  const char* names[] = {"gpu_temperature_celsius", "gpu_power_watts", "up"};
  int64_t t = 1'000'000;
  for (int step = 0; step < 3000; ++step) {
    t += 1 + static_cast<int64_t>(rng() % 2000);
    for (int k = 0; k < 3; ++k) {
      Labels labels = {{"__name__", names[rng() % 3]}, {"gpu", std::to_string(rng() % 4)}};
      if (rng() % 3 == 0) labels.push_back({"job", rng() % 2 ? "a" : "b"});
      const double vs[] = {static_cast<double>(rng() % 100),
                           static_cast<double>(rng() % 1000) / 100,
                           StaleNaN(),
                           std::nan(""),
                           -0.0,
                           std::bit_cast<double>(rng())};
      const double v = vs[rng() % 10 < 7 ? rng() % 2 : 2 + rng() % 4];
      const int64_t ts = t - static_cast<int64_t>(rng() % 3);  // sometimes out of order
      const bool db_ok = db->Append(labels, ts, v).ok();
      const bool oracle_ok = oracle.Append(labels, ts, v).ok();
      ASSERT_EQ(db_ok, oracle_ok) << step;
    }
    ASSERT_TRUE(db->Commit().ok());
    if (rng() % 700 == 0 || step == 1000 || step == 2200) {
      ASSERT_TRUE(db->Flush().ok());
    }
    if (rng() % 900 == 0 || step == 1500 || step == 2201) {
      db.reset();
      db = OpenDb(tmp.path());
    }
  }
  std::vector<std::vector<Matcher>> queries = {
      {M(MatchType::kEqual, "__name__", "up")},
      {M(MatchType::kRegexMatch, "__name__", "gpu_.*"), M(MatchType::kNotEqual, "gpu", "1")},
      {M(MatchType::kEqual, "job", "a")},
      {M(MatchType::kRegexMatch, "job", "|b"), M(MatchType::kRegexMatch, "gpu", "[02]")},
      {M(MatchType::kRegexNoMatch, "__name__", "up")},
  };
  auto q = db->NewQuerier();
  for (int iter = 0; iter < 60; ++iter) {
    const auto& ms = queries[static_cast<size_t>(iter) % queries.size()];
    const int64_t mint = 1'000'000 + static_cast<int64_t>(rng() % 3'000'000);
    const int64_t maxt = mint + static_cast<int64_t>(rng() % 2'000'000);
    std::vector<SeriesData> got, want;
    ASSERT_TRUE(q->Select(ms, mint, maxt, &got).ok());
    ASSERT_TRUE(oracle.Select(ms, mint, maxt, &want).ok());
    std::string why;
    ASSERT_TRUE(SameSeries(got, want, &why)) << iter << ": " << why;
    ASSERT_TRUE(SelectViaRuns(q.get(), ms, mint, maxt, &got, &why)) << iter << ": " << why;
    ASSERT_TRUE(SameSeries(got, want, &why)) << iter << " (runs): " << why;
    std::vector<std::string> a, b;
    ASSERT_TRUE(q->LabelNames({ms}, mint, maxt, &a).ok());
    ASSERT_TRUE(oracle.LabelNames({ms}, mint, maxt, &b).ok());
    EXPECT_EQ(a, b);
    ASSERT_TRUE(q->LabelValues("gpu", {}, mint, maxt, &a).ok());
    ASSERT_TRUE(oracle.LabelValues("gpu", {}, mint, maxt, &b).ok());
    EXPECT_EQ(a, b);
  }
}

// Prints bytes per sample for NVML-like telemetry (8 GPUs x 23 series x 1 h at 1 s, busy/idle
// phases): the encoded chunks alone and the whole SQLite file (rollups and indexes included).
TEST(DB, NvmlLikeFootprint) {
  TempDir tmp;
  DBOptions o;
  o.dir = tmp.path();
  auto db = std::move(DB::Open(o)).value();
  std::mt19937_64 rng(1);
  auto noise = [&](int span) {
    return static_cast<double>(static_cast<int>(rng() % (2 * span + 1)) - span);
  };
  constexpr int kGpus = 8, kSeconds = 3600;
  uint64_t samples = 0;
  for (int gpu = 0; gpu < kGpus; ++gpu) {
    std::vector<SeriesRef> refs;
    for (int k = 0; k < 23; ++k)
      refs.push_back(
          *db->GetRef({{"__name__", "m" + std::to_string(k)}, {"gpu", std::to_string(gpu)}}));
    double temp = 35, energy = 1e9, mem_used = 1 << 30;
    for (int t = 0; t < kSeconds; ++t) {
      const bool busy = ((t + gpu * 97) / 600) % 2 == 0;
      const double util = busy ? std::min(100.0, 97 + noise(3)) : 0;
      if (rng() % 8 == 0) temp += (busy ? 70 : 35) > temp ? 1 : (busy ? 70 : 35) < temp ? -1 : 0;
      const double power_mw = std::round(busy ? 650000 + noise(6000) : 85000 + noise(800));
      energy += power_mw;
      if ((t + gpu * 97) % 600 == 0) mem_used = static_cast<double>((1 + rng() % 70000)) * 1048576;
      const double values[23] = {util,
                                 busy ? std::min(100.0, 60 + noise(5)) : 0,
                                 temp,
                                 temp + 8,
                                 power_mw,
                                 energy,
                                 busy ? 1980.0 : 345.0,
                                 busy ? 1980.0 : 345.0,
                                 2619,
                                 1500,
                                 mem_used,
                                 85899345920 - mem_used,
                                 85899345920,
                                 busy ? 30000 + noise(3000) : 0,
                                 busy ? 12000 + noise(2000) : 0,
                                 busy ? 0.0 : 1.0,
                                 0,
                                 0,
                                 busy ? 0.0 : 8.0,
                                 700000,
                                 std::round(util) / 100,
                                 0,
                                 1};
      for (int k = 0; k < 23; ++k) {
        ASSERT_TRUE(
            db->Append(refs[static_cast<size_t>(k)], 1'764'000'000'000 + t * 1000LL, values[k])
                .ok());
        ++samples;
      }
    }
    ASSERT_TRUE(db->Commit().ok());
  }
  ASSERT_TRUE(db->Flush().ok());
  sqlite3* sql = nullptr;
  ASSERT_EQ(sqlite3_open((tmp.path() + "/tsdb.sqlite").c_str(), &sql), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(sql, "SELECT sum(length(data)), sum(num_samples) FROM blocks", -1,
                               &st, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  const double chunk_bytes = static_cast<double>(sqlite3_column_int64(st, 0));
  EXPECT_EQ(static_cast<uint64_t>(sqlite3_column_int64(st, 1)), samples);
  sqlite3_finalize(st);
  sqlite3_close(sql);
  const double per_sample = chunk_bytes / static_cast<double>(samples);
  std::printf("nvml-like: %llu samples; blocks %.3f B/sample; on disk %.3f B/sample\n",
              static_cast<unsigned long long>(samples), per_sample,
              static_cast<double>(db->stats().bytes_on_disk) / static_cast<double>(samples));
  EXPECT_LT(per_sample, 0.5);
}

void ExpectSameRollups(const std::vector<Rollup>& want, const std::vector<Rollup>& got) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].t_ms, want[i].t_ms) << i;
    EXPECT_EQ(got[i].min, want[i].min) << i;
    EXPECT_EQ(got[i].max, want[i].max) << i;
    EXPECT_EQ(got[i].sum, want[i].sum) << i;
    EXPECT_EQ(got[i].count, want[i].count) << i;
    EXPECT_EQ(got[i].last, want[i].last) << i;
    EXPECT_EQ(got[i].last_t_ms, want[i].last_t_ms) << i;
  }
}

int64_t CountRows(const std::string& dir, const char* sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open((dir + "/tsdb.sqlite").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &st, nullptr), SQLITE_OK);
  int64_t n = -1;
  if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return n;
}

// Chunk rows from flushes without compaction, then Compact(), then more flushes with compaction
// into the same windows: the data and the rollups are those of every sample appended.
TEST(DB, CompactionMergesChunkRowsAndBlocksExactly) {
  TempDir tmp;
  std::vector<Sample> all;
  std::mt19937_64 rng(5);
  int64_t t = 1'700'000'000'000;
  auto append_some = [&](DB* db, int n) {
    SeriesRef ref = *db->GetRef(Series(0));
    for (int i = 0; i < n; ++i) {
      t += 1000 + static_cast<int64_t>(rng() % 3);
      const double v = rng() % 50 == 0 ? StaleNaN() : static_cast<double>(rng() % 5000) / 1000;
      ASSERT_TRUE(db->Append(ref, t, v).ok());
      all.push_back({t, v});
    }
  };
  {
    DBOptions o;
    o.dir = tmp.path();
    o.compact_on_flush = false;
    o.block_range_ms = 3'600'000;
    auto db = std::move(DB::Open(o)).value();
    for (int f = 0; f < 3; ++f) {
      append_some(db.get(), 2000);
      ASSERT_TRUE(db->Flush().ok());
    }
    EXPECT_GT(CountRows(tmp.path(), "SELECT count(*) FROM chunks"), 0);
    EXPECT_GT(CountRows(tmp.path(), "SELECT count(*) FROM rollups"), 0);
    ASSERT_TRUE(db->Compact().ok());
    EXPECT_EQ(CountRows(tmp.path(), "SELECT count(*) FROM chunks"), 0);
    EXPECT_EQ(CountRows(tmp.path(), "SELECT count(*) FROM rollups"), 0);
    EXPECT_EQ(CountRows(tmp.path(), "SELECT count(*) FROM blocks"), 2);  // 6000 s: 2 windows
    EXPECT_EQ(db->stats().compactions, 1u);
    append_some(db.get(), 500);  // chunk rows again, in the newest window
    ASSERT_TRUE(db->Flush().ok());
  }
  DBOptions o;
  o.dir = tmp.path();
  o.block_range_ms = 24 * 3'600'000;  // ignored: fixed when the directory was created
  auto db = std::move(DB::Open(o)).value();
  append_some(db.get(), 3000);  // merged with the chunk rows and the blocks at this flush
  ASSERT_TRUE(db->Flush().ok());
  EXPECT_EQ(CountRows(tmp.path(), "SELECT count(*) FROM chunks"), 0);
  EXPECT_EQ(CountRows(tmp.path(), "SELECT count(*) FROM blocks"), 3);
  EXPECT_EQ(CountRows(tmp.path(), "SELECT sum(num_samples) FROM blocks"),
            static_cast<int64_t>(all.size()));
  auto got = ReadAll(db.get(), Series(0));
  ASSERT_EQ(got.size(), all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    ASSERT_EQ(got[i].t_ms, all[i].t_ms) << i;
    ASSERT_EQ(std::bit_cast<uint64_t>(got[i].v), std::bit_cast<uint64_t>(all[i].v)) << i;
  }
  std::vector<Rollup> want, rollups;
  AddToRollups(all, &want);
  ASSERT_TRUE(db->ReadRollups(*db->GetRef(Series(0)), 0, INT64_MAX, &rollups).ok());
  ExpectSameRollups(want, rollups);
  // A window in the middle: reads only what overlaps, from the cache the second time.
  const int64_t mid = all[all.size() / 2].t_ms;
  std::vector<Sample> part;
  ASSERT_TRUE(db->ReadSeries(*db->GetRef(Series(0)), mid, mid + 60'000, &part).ok());
  ASSERT_TRUE(db->ReadSeries(*db->GetRef(Series(0)), mid, mid + 60'000, &part).ok());
  ASSERT_FALSE(part.empty());
  EXPECT_EQ(part.front().t_ms, mid);
  EXPECT_LE(part.back().t_ms, mid + 60'000);
  EXPECT_GT(db->stats().block_cache_hits, 0u);
  EXPECT_EQ(db->stats().chunk_corruptions, 0u);
}

TEST(DB, CorruptBlockIsReportedSkippedAndTheRestServed) {
  TempDir tmp;
  DBOptions o;
  o.dir = tmp.path();
  o.block_range_ms = 300'000;
  {
    auto db = std::move(DB::Open(o)).value();
    for (int i = 0; i < 900; ++i) {  // 15 minutes: 3 blocks per series
      ASSERT_TRUE(db->Append(Series(0), i * 1000, i).ok());
      ASSERT_TRUE(db->Append(Series(1), i * 1000, i).ok());
    }
    ASSERT_TRUE(db->Flush().ok());
  }
  sqlite3* sql = nullptr;
  ASSERT_EQ(sqlite3_open((tmp.path() + "/tsdb.sqlite").c_str(), &sql), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(sql,
                         "UPDATE blocks SET data = CAST(zeroblob(length(data)) AS BLOB) "
                         "WHERE id >> 32 = 1 AND mint = 300000",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  EXPECT_EQ(sqlite3_changes(sql), 1);
  sqlite3_close(sql);
  std::vector<std::string> lines;
  Logger logger(LogLevel::kWarn, [&](LogLevel, const std::string& line) { lines.push_back(line); });
  o.logger = &logger;
  auto db = std::move(DB::Open(o)).value();
  auto s0 = ReadAll(db.get(), Series(0));
  ASSERT_EQ(s0.size(), 600u);  // blocks [0,300) and [600,900) s
  EXPECT_EQ(s0[300].t_ms, 600'000);
  EXPECT_EQ(ReadAll(db.get(), Series(1)).size(), 900u);
  EXPECT_EQ(db->stats().chunk_corruptions, 1u);
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines[0].find("corrupt block"), std::string::npos);
}

// Raw samples past retention are deleted block by block; the block keeps its 5-minute rollups,
// and Select serves the aged-out part as one sample per window: its last.
TEST(DB, RetentionKeepsRollupsOfBlocksAndSelectFallsBackToThem) {
  TempDir tmp;
  DBOptions o;
  o.dir = tmp.path();
  o.block_range_ms = 3'600'000;
  o.retention_ms = 5'400'000;  // 1.5 h
  std::vector<Sample> all;
  {
    auto db = std::move(DB::Open(o)).value();
    for (int i = 0; i < 3 * 3600; ++i) {
      const double v = static_cast<double>((i * 7) % 311);
      ASSERT_TRUE(db->Append(Series(0), i * 1000LL, v).ok());
      all.push_back({i * 1000LL, v});
    }
    ASSERT_TRUE(db->Flush().ok());
    const uint64_t before = db->stats().sqlite_bytes;
    ASSERT_TRUE(db->ApplyRetention(3 * 3'600'000).ok());  // cutoff 1.5 h: the first block goes
    EXPECT_EQ(CountRows(tmp.path(), "SELECT count(*) FROM blocks WHERE data IS NULL"), 1);
    EXPECT_LE(db->stats().sqlite_bytes, before);
  }
  auto db = std::move(DB::Open(o)).value();  // the horizon survives a reopen
  auto got = ReadAll(db.get(), Series(0));
  std::vector<Rollup> want;
  AddToRollups(all, &want);
  ASSERT_EQ(got.size(), 12u + 2 * 3600);
  for (size_t w = 0; w < 12; ++w) {
    EXPECT_EQ(got[w].t_ms, want[w].last_t_ms);
    EXPECT_EQ(got[w].v, want[w].last);
  }
  EXPECT_EQ(got[12].t_ms, 3'600'000);
  {  // SelectRuns: the rollups, then the blocks' samples, the same as Select
    std::vector<SeriesData> via_runs;
    std::string why;
    ASSERT_TRUE(SelectViaRuns(db->NewQuerier().get(), {M(MatchType::kEqual, "gpu", "0")}, 0,
                              INT64_MAX, &via_runs, &why))
        << why;
    ASSERT_EQ(via_runs.size(), 1u);
    std::vector<SeriesData> direct = {{Series(0), got}};
    EXPECT_TRUE(SameSeries(via_runs, direct, &why)) << why;
  }
  std::vector<Rollup> rollups;
  ASSERT_TRUE(db->ReadRollups(*db->GetRef(Series(0)), 0, INT64_MAX, &rollups).ok());
  ExpectSameRollups(want, rollups);
  // Rollup retention: whole windows before the cutoff disappear.
  o.rollup_retention_ms = 600'000;
  db.reset();
  db = std::move(DB::Open(o)).value();
  ASSERT_TRUE(db->ApplyRetention(3'600'000 + 600'000).ok());
  ASSERT_TRUE(db->ReadRollups(*db->GetRef(Series(0)), 0, INT64_MAX, &rollups).ok());
  ASSERT_FALSE(rollups.empty());
  EXPECT_EQ(rollups.front().t_ms, 3'600'000);
}

TEST(DB, OtherFormatVersionsAreRefusedClearly) {
  TempDir tmp;
  { ASSERT_NE(OpenDb(tmp.path()), nullptr); }
  sqlite3* sql = nullptr;
  ASSERT_EQ(sqlite3_open((tmp.path() + "/tsdb.sqlite").c_str(), &sql), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(sql, "UPDATE meta SET value = '1' WHERE key = 'format_version'", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(sql);
  DBOptions o;
  o.dir = tmp.path();
  auto db = DB::Open(o);
  ASSERT_FALSE(db.ok());
  EXPECT_NE(db.error().message.find("format version 1"), std::string::npos) << db.error().message;
}

// Series scraped together share their jittered timestamps (docs/tsdb-format.md §1b, "Shared
// timestamps"): one timestamps row per instance and window, the blocks hold only values, and
// every sample reads back exactly — after a restart, after some of a group's blocks are
// rewritten (the old row stays while a block uses it, then goes), and after retention.
// A read of a block's last minutes decodes only the block's newest parts (block.h,
// DecodeBlockTail) and caches them as such; a read that needs more decodes the whole block, and
// the last minutes are then read from that.
TEST(DB, AReadOfABlocksLastMinutesDecodesItsNewestPartsOnly) {
  TempDir tmp;
  const std::string dir = tmp.path();
  const int64_t t0 = 1'700'006'400'000;  // a 6 h window starts here
  constexpr size_t P = kBlockPartSamples;
  const size_t n = 3 * P + 500;  // 3.6 h at 1 s: four parts
  std::mt19937_64 rng(2);
  // A regular series (timestamps inline) and two scraped together (shared, jittered timestamps).
  const std::vector<Labels> series = {{{"__name__", "temp"}, {"gpu", "0"}},
                                      {{"__name__", "req"}, {"k", "a"}},
                                      {{"__name__", "req"}, {"k", "b"}}};
  std::vector<std::vector<Sample>> want(3);
  {
    auto db = OpenDb(dir);
    for (size_t i = 0; i < n; ++i) {
      const int64_t t = t0 + static_cast<int64_t>(i) * 1000,
                    jitter = static_cast<int64_t>(rng() % 16);
      const Sample x[3] = {{t, std::round(std::sin(static_cast<double>(i) / 40) * 100) / 10},
                           {t + jitter, static_cast<double>(i * 3)},
                           {t + jitter, static_cast<double>(i * 5 + rng() % 7)}};
      for (int k = 0; k < 3; ++k) {
        ASSERT_TRUE(db->Append(series[k], x[k].t_ms, x[k].v).ok());
        want[k].push_back(x[k]);
      }
    }
    ASSERT_TRUE(db->Flush().ok());
  }
  ASSERT_EQ(CountRows(dir, "SELECT count(*) FROM blocks WHERE ts_id IS NOT NULL"), 2);
  ASSERT_EQ(CountRows(dir, "SELECT count(*) FROM blocks WHERE ts_id IS NULL"), 1);
  auto db = OpenDb(dir);  // the head is empty: every read is from the blocks
  const int64_t tn = t0 + static_cast<int64_t>(n - 1) * 1000, mint = tn - 600'000;
  auto expect_range = [&](int64_t lo) {
    for (int k = 0; k < 3; ++k) {
      std::vector<SeriesData> out;
      std::vector<Matcher> ms;
      for (const Label& l : series[k])
        ms.push_back(M(MatchType::kEqual, l.name.c_str(), l.value.c_str()));
      ASSERT_TRUE(db->NewQuerier()->Select(ms, lo, tn + 1000, &out).ok());
      ASSERT_EQ(out.size(), 1u);
      std::vector<Sample> expected;
      for (const Sample& x : want[k])
        if (x.t_ms >= lo) expected.push_back(x);
      ASSERT_EQ(out[0].samples.size(), expected.size()) << k;
      for (size_t i = 0; i < expected.size(); ++i) {
        ASSERT_EQ(out[0].samples[i].t_ms, expected[i].t_ms) << k << " " << i;
        ASSERT_EQ(out[0].samples[i].v, expected[i].v) << k << " " << i;
      }
    }
  };
  expect_range(mint);
  DBStats st = db->stats();
  EXPECT_EQ(st.blocks_decoded, 3u);
  // The last ten minutes start in the third part: the third and fourth parts are held.
  EXPECT_EQ(st.block_cache_bytes, 3 * (P + 500) * sizeof(Sample));
  // Everything: the cached tails do not hold it, so each block is decoded whole.
  expect_range(t0);
  DBStats st2 = db->stats();
  EXPECT_EQ(st2.blocks_decoded, 6u);
  EXPECT_EQ(st2.block_cache_misses, st.block_cache_misses + 3);
  EXPECT_EQ(st2.block_cache_bytes, 3 * n * sizeof(Sample));
  // The last minutes again: from the whole blocks.
  expect_range(mint);
  EXPECT_EQ(db->stats().blocks_decoded, 6u);
}

TEST(DB, SeriesScrapedTogetherShareTheirTimestamps) {
  TempDir tmp;
  const int64_t t0 = 1'700'006'400'000 - 3'600'000;  // 1 h before a 6 h window starts
  std::mt19937_64 rng(11);
  std::vector<std::string> lines;
  Logger logger(LogLevel::kWarn, [&](LogLevel, const std::string& line) { lines.push_back(line); });
  std::map<std::string, std::vector<Sample>> want;  // by instance/series
  auto labels = [](int inst, int k) {
    return Labels{{"__name__", "requests_total"},
                  {"instance", "host-" + std::to_string(inst)},
                  {"k", std::to_string(k)}};
  };
  auto key = [](int inst, int k) { return std::to_string(inst) + "/" + std::to_string(k); };
  // Scrapes of instances 0 and 1 (5 series each, one jitter per instance per scrape) and of a
  // regular series (instance 2), from scrape `from` to `to`; `only` limits instance 1's series.
  auto scrape = [&](DB* db, int from, int to, int only = 5) {
    for (int i = from; i < to; ++i)
      for (int inst = 0; inst < 3; ++inst) {
        const int64_t t = t0 + i * 1000LL + (inst == 2 ? 0 : static_cast<int64_t>(rng() % 16));
        for (int k = 0; k < (inst == 2 ? 1 : inst == 1 ? only : 5); ++k) {
          const double v = static_cast<double>(i * (100 + k) + static_cast<int>(rng() % 50));
          ASSERT_TRUE(db->Append(labels(inst, k), t, v).ok());
          want[key(inst, k)].push_back({t, v});
        }
      }
  };
  int64_t raw_from = INT64_MIN;  // before it, after retention: one sample per 5-minute window
  auto expect_all = [&](DB* db) {
    for (const auto& [k, samples] : want) {
      const int inst = k[0] - '0', n = k[2] - '0';
      std::vector<Sample> got = ReadAll(db, labels(inst, n));
      std::erase_if(got, [&](const Sample& x) { return x.t_ms < raw_from; });
      ASSERT_EQ(got.size(), samples.size()) << k << (lines.empty() ? "" : lines[0]);
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(got[i].t_ms, samples[i].t_ms) << k << " " << i;
        ASSERT_EQ(got[i].v, samples[i].v) << k << " " << i;
      }
    }
  };
  const std::string dir = tmp.path();
  const char* kRows = "SELECT count(*) FROM timestamps";
  const char* kUnused =
      "SELECT count(*) FROM timestamps WHERE id NOT IN (SELECT ts_id FROM blocks WHERE ts_id IS "
      "NOT NULL)";
  {
    auto db = OpenDb(dir, &logger);
    scrape(db.get(), 0, 7200);  // 2 h: an hour in each of two windows
    ASSERT_TRUE(db->Flush().ok());
    expect_all(db.get());
  }
  EXPECT_EQ(CountRows(dir, kRows), 4);  // 2 instances x 2 windows; the regular series inline
  EXPECT_EQ(CountRows(dir, "SELECT count(*) FROM blocks WHERE ts_id IS NOT NULL"), 20);
  EXPECT_EQ(CountRows(dir, "SELECT count(*) FROM blocks WHERE ts_id IS NULL"), 2);
  // Under 80 % of the bytes of the same blocks with their timestamps inline (4 bits of jitter a
  // sample next to the values' 7).
  const int64_t values = CountRows(dir, "SELECT sum(length(data)) FROM blocks");
  const int64_t shared = CountRows(dir, "SELECT sum(length(data)) FROM timestamps");
  int64_t inline_bytes = 0;
  for (const auto& [k, samples] : want) {
    for (int64_t w : {0, 1}) {
      std::vector<Sample> part;
      for (const Sample& x : samples)
        if ((x.t_ms >= 1'700'006'400'000) == (w == 1)) part.push_back(x);
      inline_bytes += static_cast<int64_t>(EncodeBlock(part).size());
    }
  }
  EXPECT_LT((values + shared) * 10, inline_bytes * 8) << values << " + " << shared;
  {
    auto db = OpenDb(dir);  // a restart: the cold read path
    expect_all(db.get());
    // Three of instance 1's five series go on: their blocks of the second window are rewritten
    // with new timestamps; the other two keep the old row.
    scrape(db.get(), 7200, 7500, /*only=*/3);
    ASSERT_TRUE(db->Flush().ok());
    expect_all(db.get());
    EXPECT_EQ(CountRows(dir, kRows), 5);
    EXPECT_EQ(CountRows(dir, kUnused), 0);
    // Now all of them, so the old row is used no more: the two that paused have timestamps of
    // their own (a gap), the three others share theirs with each other.
    scrape(db.get(), 7500, 7600);
    ASSERT_TRUE(db->Flush().ok());
    expect_all(db.get());
    EXPECT_EQ(CountRows(dir, kRows), 5);
    EXPECT_EQ(CountRows(dir, kUnused), 0);
    // Raw retention past the first window: its blocks keep their rollups, not their samples,
    // and its two rows go.
    ASSERT_TRUE(db->ApplyRetention(1'700'006'400'000 + 15LL * 24 * 3'600'000).ok());
    EXPECT_EQ(CountRows(dir, kRows), 3);
    EXPECT_EQ(CountRows(dir, kUnused), 0);
    raw_from = 1'700'006'400'000;
    for (auto& [k, samples] : want)
      std::erase_if(samples, [&](const Sample& x) { return x.t_ms < raw_from; });
    expect_all(db.get());
  }
}

// A damaged timestamps row costs the blocks that use it, said as corruption, and nothing else.
TEST(DB, ADamagedTimestampsRowSkipsItsBlocksAndSaysSo) {
  TempDir tmp;
  std::mt19937_64 rng(5);
  {
    auto db = OpenDb(tmp.path());
    for (int i = 0; i < 3000; ++i) {
      const int64_t t = 1'700'006'400'000 + i * 1000LL + static_cast<int64_t>(rng() % 16);
      for (int g = 0; g < 2; ++g) ASSERT_TRUE(db->Append(Series(g), t, i + g).ok());
      ASSERT_TRUE(db->Append(Series(9), 1'700'006'400'000 + i * 1000LL, i).ok());
    }
    ASSERT_TRUE(db->Flush().ok());
  }
  ASSERT_EQ(CountRows(tmp.path(), "SELECT count(*) FROM timestamps"), 1);
  sqlite3* sql = nullptr;
  ASSERT_EQ(sqlite3_open((tmp.path() + "/tsdb.sqlite").c_str(), &sql), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(sql, "UPDATE timestamps SET data = x'0102030405'", nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(sql);
  std::vector<std::string> lines;
  Logger logger(LogLevel::kWarn, [&](LogLevel, const std::string& line) { lines.push_back(line); });
  auto db = OpenDb(tmp.path(), &logger);
  EXPECT_TRUE(ReadAll(db.get(), Series(0)).empty());
  EXPECT_TRUE(ReadAll(db.get(), Series(1)).empty());
  EXPECT_EQ(ReadAll(db.get(), Series(9)).size(), 3000u);  // regular: its timestamps inline
  EXPECT_EQ(db->stats().chunk_corruptions, 2u);
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines[0].find("checksum mismatch"), std::string::npos) << lines[0];
}

// kill -9 at random points of a Flush that compacts: every committed sample is there after.
TEST(DB, KillNineDuringCompactionLosesNothing) {
  for (int round = 0; round < 4; ++round) {
    TempDir tmp;
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      DBOptions o;
      o.dir = tmp.path();
      o.wal_sync = WalSync::kNever;
      o.block_range_ms = 300'000;
      auto db = std::move(DB::Open(o)).value();
      for (int cycle = 0;; ++cycle) {
        for (int gpu = 0; gpu < 50; ++gpu)
          (void)db->Append(Series(gpu), cycle * 1000LL, cycle * 10 + gpu);
        if (!db->Commit().ok()) _exit(3);
        const int done = cycle;
        if (write(fds[1], &done, sizeof done) != sizeof done) _exit(4);
        if (cycle % 100 == 99) (void)db->Flush();
      }
    }
    close(fds[1]);
    // Kill once the child is past a few flushes, at whatever it is doing then (often a Flush:
    // it is most of the child's time).
    int last = -1, v;
    while (last < 250 + 70 * round && read(fds[0], &v, sizeof v) == sizeof v) last = v;
    kill(pid, SIGKILL);
    while (read(fds[0], &v, sizeof v) == sizeof v) last = v;
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_GE(last, 0);
    auto db = OpenDb(tmp.path());
    for (int gpu = 0; gpu < 50; gpu += 7) {
      auto s = ReadAll(db.get(), Series(gpu));
      ASSERT_GE(s.size(), static_cast<size_t>(last + 1)) << gpu;
      for (int c = 0; c <= last; ++c) {
        ASSERT_EQ(s[static_cast<size_t>(c)].t_ms, c * 1000LL);
        ASSERT_EQ(s[static_cast<size_t>(c)].v, c * 10 + gpu);
      }
    }
    EXPECT_EQ(db->stats().chunk_corruptions, 0u);
  }
}

TEST(DB, ImportWithoutWalIsDurableAfterFlush) {
  TempDir tmp;
  DBOptions o;
  o.dir = tmp.path();
  o.write_wal = false;
  {
    auto db = std::move(DB::Open(o)).value();
    for (int i = 0; i < 1000; ++i) ASSERT_TRUE(db->Append(Series(0), i * 1000LL, i).ok());
    ASSERT_TRUE(db->Commit().ok());
    EXPECT_EQ(db->stats().wal_bytes, 0u);
    ASSERT_TRUE(db->Flush().ok());
    ASSERT_TRUE(db->Append(Series(0), 2'000'000, 1).ok());  // not flushed: lost at close
  }
  auto db = OpenDb(tmp.path());
  EXPECT_EQ(ReadAll(db.get(), Series(0)).size(), 1000u);
}

TEST(DB, StatsCountSelectsAndCompactions) {
  TempDir tmp;
  auto db = OpenDb(tmp.path());
  ASSERT_TRUE(db->Append(Series(0), 1000, 1).ok());
  ASSERT_TRUE(db->Flush().ok());
  ReadAll(db.get(), Series(0));
  ReadAll(db.get(), Series(0));
  const DBStats s = db->stats();
  EXPECT_EQ(s.selects, 2u);
  EXPECT_GT(s.select_seconds_total, 0);
  EXPECT_EQ(s.compactions, 1u);
  EXPECT_EQ(s.blocks_written, 1u);
  EXPECT_GT(s.compaction_seconds_total, 0);
}

// Prints the append rate through the ref fast path (one core, WAL commit per 1000-sample cycle).
TEST(DB, AppendRate) {
  TempDir tmp;
  DBOptions o;
  o.dir = tmp.path();
  auto db = std::move(DB::Open(o)).value();
  constexpr int kSeries = 1000, kCycles = 300;
  std::vector<SeriesRef> refs;
  for (int i = 0; i < kSeries; ++i)
    refs.push_back(*db->GetRef({{"__name__", "gpu_power_milliwatts"}, {"i", std::to_string(i)}}));
  const auto start = std::chrono::steady_clock::now();
  for (int c = 0; c < kCycles; ++c) {
    for (int i = 0; i < kSeries; ++i)
      ASSERT_TRUE(
          db->Append(refs[static_cast<size_t>(i)], c * 1000LL, 300000 + (c * 7 + i) % 900).ok());
    ASSERT_TRUE(db->Commit().ok());
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto flush_start = std::chrono::steady_clock::now();
  ASSERT_TRUE(db->Flush().ok());
  const double fs_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - flush_start).count();
  std::printf("append: %.2f M samples/s (%d samples); flush %.3f s; %.3f bytes/sample in SQLite\n",
              kSeries * kCycles / s / 1e6, kSeries * kCycles, fs_s,
              static_cast<double>(db->stats().sqlite_bytes) / (kSeries * kCycles));
}

}  // namespace
}  // namespace gw::tsdb
