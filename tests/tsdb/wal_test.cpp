// The WAL under write failures (a full disk, I/O errors) and damaged segments, the store's
// read-only mode, a lost tsdb.sqlite, the data-directory lock and the failure log.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "support/process.h"
#include "support/tmpfs.h"
#include "tsdb/db.h"
#include "tsdb/dir_lock.h"
#include "tsdb/failure_log.h"
#include "tsdb/wal.h"

namespace gw::tsdb {
namespace {

namespace fs = std::filesystem;
using gw::testing::FillUp;
using gw::testing::TempDir;
using gw::testing::Tmpfs;

Labels Series(int gpu) {
  return {{"__name__", "gpu_temperature_celsius"}, {"gpu", std::to_string(gpu)}};
}

std::vector<Sample> ReadAll(DB* db, const Labels& labels) {
  std::vector<SeriesData> out;
  std::vector<Matcher> ms;
  for (const Label& l : labels)
    ms.push_back(Matcher::Make(MatchType::kEqual, l.name, l.value).value());
  EXPECT_TRUE(db->NewQuerier()->Select(ms, INT64_MIN, INT64_MAX, &out).ok());
  return out.empty() ? std::vector<Sample>{} : out[0].samples;
}

std::vector<std::string> Segments(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir + "/wal", ec)) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Write failures on demand: `budget` bytes are written, then writes fail with ENOSPC (a short
// write first when a call straddles the budget); truncation and file creation can fail too.
class FaultyFiles : public WalFiles {
 public:
  ssize_t Write(int fd, const void* data, size_t size) override {
    if (budget < 0) return WalFiles::Write(fd, data, size);
    if (budget == 0) {
      errno = ENOSPC;
      return -1;
    }
    const size_t n = std::min(size, static_cast<size_t>(budget));
    const ssize_t written = WalFiles::Write(fd, data, n);
    if (written > 0) budget -= written;
    return written;
  }
  int Truncate(int fd, off_t size) override {
    if (fail_truncate) {
      errno = EIO;
      return -1;
    }
    return WalFiles::Truncate(fd, size);
  }
  int OpenAppend(const std::string& path) override {
    if (fail_open) {
      errno = ENOSPC;
      return -1;
    }
    return WalFiles::OpenAppend(path);
  }
  void Heal() { budget = -1, fail_truncate = fail_open = false; }

  long budget = -1;  // -1: no limit
  bool fail_truncate = false, fail_open = false;
};

DBOptions Options(const std::string& dir, WalFiles* files, Logger* logger = nullptr) {
  DBOptions o;
  o.dir = dir;
  o.head.samples_per_chunk = 50;
  o.wal_sync = WalSync::kNever;
  o.wal_files = files;
  o.logger = logger;
  return o;
}

// Cycle c: one sample per GPU at t = c s, value c * 10 + gpu.
void AppendCycle(DB* db, int cycle, int gpus = 4) {
  for (int gpu = 0; gpu < gpus; ++gpu)
    ASSERT_TRUE(db->Append(Series(gpu), cycle * 1000LL, cycle * 10 + gpu).ok());
}

void ExpectCycles(DB* db, int from, int to, int gpus = 4) {
  for (int gpu = 0; gpu < gpus; ++gpu) {
    const auto s = ReadAll(db, Series(gpu));
    ASSERT_EQ(s.size(), static_cast<size_t>(to - from)) << "gpu " << gpu;
    for (int c = from; c < to; ++c) {
      ASSERT_EQ(s[static_cast<size_t>(c - from)].t_ms, c * 1000LL);
      ASSERT_EQ(s[static_cast<size_t>(c - from)].v, c * 10 + gpu);
    }
  }
}

// A failed append (a short write, then ENOSPC) leaves the log as it was; the batches appended
// while writes fail are written at the first commit that works, and replay finds no damage.
TEST(WalWriteFailure, AFailedAppendLeavesTheLogWholeAndIsWrittenLater) {
  TempDir tmp;
  FaultyFiles files;
  std::vector<std::string> lines;
  Logger logger(LogLevel::kInfo, [&](LogLevel, const std::string& l) { lines.push_back(l); });
  {
    auto db = std::move(DB::Open(Options(tmp.path(), &files, &logger))).value();
    for (int c = 0; c < 10; ++c) {
      AppendCycle(db.get(), c);
      ASSERT_TRUE(db->Commit().ok());
    }
    files.budget = 7;  // the next write stops after 7 bytes: a torn record, then a full disk
    for (int c = 10; c < 40; ++c) {
      AppendCycle(db.get(), c);
      EXPECT_FALSE(db->Commit().ok());
    }
    EXPECT_TRUE(db->stats().wal_writes_failing);
    EXPECT_EQ(db->stats().wal_write_failures, 30u);
    EXPECT_GT(db->stats().wal_pending_bytes, 0u);
    ExpectCycles(db.get(), 0, 40);  // queries see them meanwhile
    files.Heal();
    for (int c = 40; c < 50; ++c) {
      AppendCycle(db.get(), c);
      ASSERT_TRUE(db->Commit().ok());
    }
    EXPECT_FALSE(db->stats().wal_writes_failing);
    EXPECT_EQ(db->stats().wal_pending_bytes, 0u);
  }
  // One line when it started, one when it ended: not one per failed commit.
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("tsdb: WAL write failed"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("No space left on device"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("works again after 30 failures"), std::string::npos) << lines[1];
  auto db = std::move(DB::Open(Options(tmp.path(), nullptr))).value();
  ExpectCycles(db.get(), 0, 50);
  EXPECT_EQ(db->stats().wal_corruptions, 0u);
}

// When even the truncation fails, the next records go to a new segment; replay drops the torn
// end of the old one and keeps everything committed.
TEST(WalWriteFailure, WhenTheTornEndCannotBeCutANewSegmentTakesOver) {
  TempDir tmp;
  FaultyFiles files;
  {
    auto db = std::move(DB::Open(Options(tmp.path(), &files))).value();
    for (int c = 0; c < 5; ++c) {
      AppendCycle(db.get(), c);
      ASSERT_TRUE(db->Commit().ok());
    }
    const size_t before = Segments(tmp.path()).size();
    files.budget = 11;
    files.fail_truncate = true;
    AppendCycle(db.get(), 5);
    EXPECT_FALSE(db->Commit().ok());
    files.Heal();
    for (int c = 6; c < 10; ++c) {
      AppendCycle(db.get(), c);
      ASSERT_TRUE(db->Commit().ok());
    }
    EXPECT_EQ(Segments(tmp.path()).size(), before + 1);
  }
  auto db = std::move(DB::Open(Options(tmp.path(), nullptr))).value();
  ExpectCycles(db.get(), 0, 10);
  EXPECT_EQ(db->stats().wal_corruptions, 1u);  // the 11 torn bytes
  EXPECT_EQ(db->stats().wal_skipped_bytes, 11u);
}

// While writes fail for long, the kept records are bounded: sample records are given up (they
// stay in memory), series records never, so samples committed after recovery replay.
TEST(WalWriteFailure, TheRetryBufferIsBoundedAndKeepsSeriesRecords) {
  TempDir tmp;
  FaultyFiles files;
  DBOptions o = Options(tmp.path(), &files);
  o.wal_max_pending_bytes = 2000;
  {
    auto db = std::move(DB::Open(o)).value();
    files.budget = 0;
    for (int c = 0; c < 200; ++c) {
      AppendCycle(db.get(), c);
      EXPECT_FALSE(db->Commit().ok());
    }
    EXPECT_LE(db->stats().wal_pending_bytes, 2000u + 200u);
    EXPECT_GT(db->stats().wal_dropped_samples, 0u);
    ExpectCycles(db.get(), 0, 200);  // still in memory
    files.Heal();
    for (int c = 200; c < 210; ++c) {
      AppendCycle(db.get(), c);
      ASSERT_TRUE(db->Commit().ok());
    }
  }
  auto db = std::move(DB::Open(Options(tmp.path(), nullptr))).value();
  for (int gpu = 0; gpu < 4; ++gpu) {
    const auto s = ReadAll(db.get(), Series(gpu));
    ASSERT_GE(s.size(), 10u);
    EXPECT_EQ(s.back().t_ms, 209'000);  // the series records were kept
  }
  EXPECT_EQ(db->stats().wal_orphan_samples, 0u);
}

// A flush goes on when the WAL cannot be written, and rotation goes on when no new segment can
// be created: the old segments are deleted, the current one emptied.
TEST(WalWriteFailure, FlushAndCheckpointGoOnWhenTheWalCannotBeWritten) {
  TempDir tmp;
  FaultyFiles files;
  DBOptions o = Options(tmp.path(), &files);
  o.wal_segment_bytes = 300;
  {
    auto db = std::move(DB::Open(o)).value();
    for (int c = 0; c < 30; ++c) {
      AppendCycle(db.get(), c);
      ASSERT_TRUE(db->Commit().ok());
    }
    ASSERT_GT(Segments(tmp.path()).size(), 3u);
    files.budget = 0;
    files.fail_open = true;
    AppendCycle(db.get(), 30);
    EXPECT_FALSE(db->Commit().ok());
    ASSERT_TRUE(db->Flush().ok());  // SQLite is on a working disk
    EXPECT_EQ(Segments(tmp.path()).size(), 1u);
    EXPECT_EQ(fs::file_size(Segments(tmp.path())[0]), 0u);
    EXPECT_EQ(db->stats().wal_pending_bytes, 0u);
    files.Heal();
    AppendCycle(db.get(), 31);
    ASSERT_TRUE(db->Commit().ok());
  }
  auto db = std::move(DB::Open(Options(tmp.path(), nullptr))).value();
  ExpectCycles(db.get(), 0, 32);
}

// Finds the record boundaries of a segment (each: fixed32 length, fixed32 CRC, type + payload).
std::vector<std::pair<size_t, size_t>> Records(const std::string& data) {
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t off = 0; off + 8 <= data.size();) {
    uint32_t len = 0;
    for (int i = 0; i < 4; ++i)
      len |= static_cast<uint32_t>(static_cast<unsigned char>(data[off + i])) << (8 * i);
    out.emplace_back(off, 8 + len);
    off += 8 + len;
  }
  return out;
}

// One segment of 10 commits of cycle c (one samples record each, after the series records).
std::string WriteTenCycles(const std::string& dir) {
  {
    auto db = std::move(DB::Open(Options(dir, nullptr))).value();
    for (int c = 0; c < 10; ++c) {
      AppendCycle(db.get(), c);
      EXPECT_TRUE(db->Commit().ok());
    }
  }
  for (const std::string& seg : Segments(dir))
    if (fs::file_size(seg) > 0) return seg;
  return "";
}

// A bad CRC in the middle costs that record only: replay resynchronises on the next one.
TEST(WalReplay, ACorruptRecordInTheMiddleCostsOnlyThatRecord) {
  TempDir tmp;
  const std::string seg = WriteTenCycles(tmp.path());
  std::string data = gw::testing::ReadFile(seg);
  const auto records = Records(data);
  ASSERT_EQ(records.size(), 14u);           // 4 series records, 10 samples records
  const auto [off, size] = records[4 + 3];  // cycle 3's samples
  data[off + size - 2] ^= 0x10;
  gw::testing::WriteFile(seg, data);
  std::vector<std::string> lines;
  Logger logger(LogLevel::kWarn, [&](LogLevel, const std::string& l) { lines.push_back(l); });
  auto db = std::move(DB::Open(Options(tmp.path(), nullptr, &logger))).value();
  for (int gpu = 0; gpu < 4; ++gpu) {
    const auto s = ReadAll(db.get(), Series(gpu));
    ASSERT_EQ(s.size(), 9u) << gpu;
    EXPECT_EQ(s[2].t_ms, 2000);
    EXPECT_EQ(s[3].t_ms, 4000);  // cycle 3 skipped, 4 to 9 kept
    EXPECT_EQ(s.back().t_ms, 9000);
  }
  EXPECT_EQ(db->stats().wal_corruptions, 1u);
  EXPECT_EQ(db->stats().wal_skipped_bytes, size);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("CRC mismatch at offset " + std::to_string(off) + "; skipped " +
                          std::to_string(size) + " bytes to the next whole record"),
            std::string::npos)
      << lines[0];
}

// What a full disk left on main: a torn record (a short write) with whole records after it.
TEST(WalReplay, ATornRecordFollowedByWholeOnesKeepsThemAll) {
  TempDir tmp;
  const std::string seg = WriteTenCycles(tmp.path());
  const std::string data = gw::testing::ReadFile(seg);
  const auto records = Records(data);
  const auto [off, size] = records[4 + 5];
  // Cycle 5's record torn after 13 bytes, then cycles 6..9 whole.
  gw::testing::WriteFile(seg, data.substr(0, off + 13) + data.substr(off + size));
  auto db = std::move(DB::Open(Options(tmp.path(), nullptr))).value();
  for (int gpu = 0; gpu < 4; ++gpu) {
    const auto s = ReadAll(db.get(), Series(gpu));
    ASSERT_EQ(s.size(), 9u) << gpu;
    EXPECT_EQ(s[5].t_ms, 6000);
  }
  EXPECT_EQ(db->stats().wal_corruptions, 1u);
  EXPECT_EQ(db->stats().wal_skipped_bytes, 13u);
}

// Garbage of every kind between records (zeros, plausible headers, random bytes) is skipped.
TEST(WalReplay, GarbageBetweenRecordsIsSkipped) {
  TempDir tmp;
  const std::string seg = WriteTenCycles(tmp.path());
  const std::string data = gw::testing::ReadFile(seg);
  const auto records = Records(data);
  std::string garbage(300, '\0');
  for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<char>((i * 7919) % 251);
  garbage += std::string("\x10\0\0\0\x01\x02\x03\x04\x02", 9);  // a header with a wrong CRC
  garbage += std::string(50, '\0');
  const size_t at = records[4 + 6].first;
  gw::testing::WriteFile(seg, data.substr(0, at) + garbage + data.substr(at));
  auto db = std::move(DB::Open(Options(tmp.path(), nullptr))).value();
  ExpectCycles(db.get(), 0, 10);
  EXPECT_EQ(db->stats().wal_corruptions, 1u);
  EXPECT_EQ(db->stats().wal_skipped_bytes, garbage.size());
}

// Prints what resynchronising costs when the damage is at the start of a large samples record
// (the scan then walks through its payload, where plausible headers are common): timings for
// docs/benchmarks.md, no assertion on speed.
TEST(WalReplay, ResyncThroughALargeDamagedRecord) {
  TempDir tmp;
  constexpr int kSeries = 2000, kCycles = 50;
  {
    DBOptions o = Options(tmp.path(), nullptr);
    auto db = std::move(DB::Open(o)).value();
    std::vector<SeriesRef> refs;
    for (int i = 0; i < kSeries; ++i)
      refs.push_back(*db->GetRef({{"__name__", "gpu_power_milliwatts"}, {"i", std::to_string(i)}}));
    for (int c = 0; c < kCycles; ++c) {
      for (int i = 0; i < kSeries; ++i)
        ASSERT_TRUE(db->Append(refs[static_cast<size_t>(i)], c * 1000LL,
                               300000 + (c * 7919 + i * 104729) % 90001)
                        .ok());
      ASSERT_TRUE(db->Commit().ok());
    }
  }
  std::string seg;
  for (const std::string& s : Segments(tmp.path()))
    if (fs::file_size(s) > 0) seg = s;
  const std::string clean = gw::testing::ReadFile(seg);
  const auto records = Records(clean);
  ASSERT_EQ(records.size(), static_cast<size_t>(kSeries + kCycles));
  auto open_seconds = [&](uint64_t* samples) {
    const auto start = std::chrono::steady_clock::now();
    auto db = std::move(DB::Open(Options(tmp.path(), nullptr))).value();
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    *samples = db->stats().wal_replayed_samples;
    return s;
  };
  uint64_t clean_samples = 0, damaged_samples = 0;
  const double clean_s = open_seconds(&clean_samples);
  ASSERT_EQ(clean_samples, static_cast<uint64_t>(kSeries) * kCycles);
  // Damage the CRC of cycle 10's samples record (~30 KB): everything after it must come back.
  for (const std::string& s : Segments(tmp.path())) fs::remove(s);
  std::string damaged = clean;
  damaged[records[kSeries + 10].first + 4] ^= 0x01;
  gw::testing::WriteFile(seg, damaged);
  const double damaged_s = open_seconds(&damaged_samples);
  EXPECT_EQ(damaged_samples, static_cast<uint64_t>(kSeries) * (kCycles - 1));
  std::printf(
      "replay of %zu bytes (%d samples): clean %.3f s, one damaged %zu-byte record %.3f s\n",
      clean.size(), kSeries * kCycles, clean_s, records[kSeries + 10].second, damaged_s);
}

// ---- Read-only. ----

TEST(ReadOnly, SeesTheWriterAndChangesNothing) {
  TempDir tmp;
  auto writer = std::move(DB::Open(Options(tmp.path(), nullptr))).value();
  for (int c = 0; c < 5; ++c) AppendCycle(writer.get(), c);
  ASSERT_TRUE(writer->Flush().ok());
  for (int c = 5; c < 8; ++c) {
    AppendCycle(writer.get(), c);
    ASSERT_TRUE(writer->Commit().ok());
  }
  // A write in progress, as a reader may see it.
  const std::string seg = Segments(tmp.path()).back();
  {
    std::ofstream out(seg, std::ios::app | std::ios::binary);
    out.write("\x30\0\0\0\1\2", 6);
  }
  const auto size = fs::file_size(seg);
  const auto segments = Segments(tmp.path());
  std::vector<std::string> lines;
  Logger logger(LogLevel::kWarn, [&](LogLevel, const std::string& l) { lines.push_back(l); });
  DBOptions o = Options(tmp.path(), nullptr, &logger);
  o.read_only = true;
  {
    auto reader = std::move(DB::Open(o)).value();
    ExpectCycles(reader.get(), 0, 8);
    EXPECT_FALSE(reader->Commit().ok());
    EXPECT_FALSE(reader->Flush().ok());
    EXPECT_FALSE(reader->ApplyRetention(1'000'000'000).ok());
  }
  EXPECT_EQ(Segments(tmp.path()), segments);  // no new segment
  EXPECT_EQ(fs::file_size(seg), size);        // the tail was not cut
  EXPECT_TRUE(lines.empty()) << lines[0];     // nor reported: a write in progress
}

TEST(ReadOnly, AMissingDirectoryReadsAsEmptyAndIsNotCreated) {
  TempDir tmp;
  DBOptions o;
  o.dir = tmp / "nothing";
  o.read_only = true;
  auto db = DB::Open(o);
  ASSERT_TRUE(db.ok()) << db.error().message;
  EXPECT_TRUE(ReadAll(db->get(), Series(0)).empty());
  EXPECT_FALSE(fs::exists(tmp / "nothing"));
}

// ---- tsdb.sqlite lost, the WAL still there. ----

TEST(MissingSqlite, TheWalIsReplayedIntoANewDatabaseAndItIsSaid) {
  TempDir tmp;
  {
    auto db = std::move(DB::Open(Options(tmp.path(), nullptr))).value();
    for (int c = 0; c < 20; ++c) AppendCycle(db.get(), c);
    ASSERT_TRUE(db->Flush().ok());  // series now in SQLite; the WAL starts afresh
    for (int c = 20; c < 65; ++c) {
      AppendCycle(db.get(), c);
      ASSERT_TRUE(db->Commit().ok());
    }
  }
  for (const char* f : {"tsdb.sqlite", "tsdb.sqlite-wal", "tsdb.sqlite-shm"}) fs::remove(tmp / f);
  std::vector<std::string> lines;
  Logger logger(LogLevel::kWarn, [&](LogLevel, const std::string& l) { lines.push_back(l); });
  {
    auto db = std::move(DB::Open(Options(tmp.path(), nullptr, &logger))).value();
    ExpectCycles(db.get(), 20, 65);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_NE(lines[0].find("tsdb.sqlite was missing"), std::string::npos) << lines[0];
    EXPECT_NE(lines[0].find("replayed 180 samples of 4 series"), std::string::npos) << lines[0];
    ASSERT_TRUE(db->Flush().ok());
  }
  auto db = std::move(DB::Open(Options(tmp.path(), nullptr))).value();
  ExpectCycles(db.get(), 20, 65);
}

// ---- The data-directory lock. ----

TEST(DirLock, ASecondWriterIsRefusedWithTheHoldersPidAndChangesNothing) {
  TempDir tmp;
  const std::string dir = tmp / "data";
  auto first = DirLock::Acquire(dir, "serve");
  ASSERT_TRUE(first.ok()) << first.error().message;
  const std::string note = gw::testing::ReadFile(dir + "/LOCK");
  EXPECT_EQ(note, std::to_string(getpid()) + " serve\n");
  auto second = DirLock::Acquire(dir, "tsdb import");
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message.find("data directory " + dir + " is in use by gpuwarden pid " +
                                        std::to_string(getpid()) + " (serve)"),
            std::string::npos)
      << second.error().message;
  EXPECT_EQ(gw::testing::ReadFile(dir + "/LOCK"), note);
  first->reset();
  auto third = DirLock::Acquire(dir, "tsdb import");
  ASSERT_TRUE(third.ok()) << third.error().message;
  EXPECT_EQ(gw::testing::ReadFile(dir + "/LOCK"), std::to_string(getpid()) + " tsdb import\n");
}

// ---- The failure log. ----

TEST(FailureLog, OneLineAtTheStartASummaryPerIntervalOneAtTheEnd) {
  std::vector<std::pair<LogLevel, std::string>> lines;
  Logger logger(LogLevel::kDebug,
                [&](LogLevel level, const std::string& l) { lines.emplace_back(level, l); });
  FailureLog log("tsdb: WAL write", "kept in memory", 60, &logger);
  const auto t0 = FailureLog::Clock::time_point{} + std::chrono::hours(1);
  auto at = [&](double s) {
    return t0 + std::chrono::duration_cast<FailureLog::Clock::duration>(
                    std::chrono::duration<double>(s));
  };
  log.Succeeded(at(0));
  EXPECT_TRUE(lines.empty());
  for (int i = 0; i < 6 * 59; ++i) log.Failed("write: No space left on device", at(i / 6.0));
  ASSERT_EQ(lines.size(), 1u);  // ~6 failures a second for a minute: one line
  EXPECT_EQ(lines[0].first, LogLevel::kError);
  EXPECT_NE(lines[0].second.find("tsdb: WAL write failed: write: No space left on device; "
                                 "kept in memory"),
            std::string::npos)
      << lines[0].second;
  log.Failed("write: No space left on device", at(60));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1].first, LogLevel::kWarn);
  EXPECT_NE(lines[1].second.find("still failing: 354 more failures in the last 60s, 355 since it "
                                 "started 60s ago"),
            std::string::npos)
      << lines[1].second;
  EXPECT_TRUE(log.failing());
  log.Succeeded(at(75));
  log.Succeeded(at(76));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[2].first, LogLevel::kInfo);
  EXPECT_NE(lines[2].second.find("works again after 355 failures over 75s"), std::string::npos)
      << lines[2].second;
  EXPECT_FALSE(log.failing());
  EXPECT_EQ(log.failures(), 355u);
}

// ---- A real full disk (a small tmpfs; needs the right to mount). ----

TEST(WalWriteFailure, ARealFullDiskThenRecoveryLosesNoCommittedSample) {
  TempDir tmp;
  Tmpfs disk(tmp / "disk", "2m");
  if (!disk.mounted())
    GTEST_SKIP() << "cannot mount a tmpfs here (" << disk.error()
                 << "): the full-disk test needs root or CAP_SYS_ADMIN";
  const std::string dir = tmp / "disk/data";
  std::vector<int> committed;
  {
    DBOptions o;
    o.dir = dir;
    o.wal_sync = WalSync::kNever;
    auto db = std::move(DB::Open(o)).value();
    for (int c = 0; c < 20; ++c) {
      AppendCycle(db.get(), c, 64);
      ASSERT_TRUE(db->Commit().ok());
    }
    const std::string filler = FillUp(tmp / "disk");
    int failed = 0;
    for (int c = 20; c < 40; ++c) {
      AppendCycle(db.get(), c, 64);
      failed += !db->Commit().ok();
    }
    EXPECT_GT(failed, 0);
    fs::remove(filler);
    for (int c = 40; c < 60; ++c) {
      AppendCycle(db.get(), c, 64);
      ASSERT_TRUE(db->Commit().ok());
    }
    // The store is dropped without a flush, as kill -9 would (the WAL is all there is).
  }
  DBOptions o;
  o.dir = dir;
  auto db = std::move(DB::Open(o)).value();
  ExpectCycles(db.get(), 0, 60, 64);
  EXPECT_EQ(db->stats().wal_corruptions, 0u);
}

}  // namespace
}  // namespace gw::tsdb
