#include "collect/recorder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "collect/exposition.h"
#include "full_snapshot.h"
#include "support/sim_fixture.h"

namespace gw::collect {
namespace {

// tsdb::MemoryAppender (over its own MemoryQuerier), counting GetRef and Commit calls.
class MemoryAppender : public tsdb::MemoryAppender {
 public:
  MemoryAppender() : tsdb::MemoryAppender(&store) {}
  Expected<Ref> GetRef(const tsdb::Labels& labels) override {
    ++get_ref_calls;
    auto ref = tsdb::MemoryAppender::GetRef(labels);
    if (ref.ok()) series_count = std::max(series_count, static_cast<size_t>(*ref) + 1);
    return ref;
  }
  Status Commit() override {
    ++commits;
    return Status::Ok();
  }
  std::vector<tsdb::SeriesData> Select(
      std::initializer_list<std::pair<const char*, const char*>> eq) {
    std::vector<tsdb::Matcher> ms;
    for (auto& [n, v] : eq) ms.push_back(*tsdb::Matcher::Make(tsdb::MatchType::kEqual, n, v));
    std::vector<tsdb::SeriesData> out;
    EXPECT_TRUE(store.Select(ms, 0, INT64_MAX, &out).ok());
    return out;
  }
  tsdb::MemoryQuerier store;
  int commits = 0, get_ref_calls = 0;
  size_t series_count = 0;  // refs are dense: 0, 1, 2, ...
};

TEST(Recorder, RecordsEverySnapshotAndMarksLostSeriesStale) {
  gw::testing::SimCollector sim("fall-off-bus", {});
  ASSERT_TRUE(sim.ok());
  MemoryAppender appender;
  Logger log(LogLevel::kError);
  Recorder recorder(&appender, &log);
  for (int i = 0; i < 50; ++i) {
    sim.Advance(1);
    recorder.RecordNow(*sim.Latest());
  }
  EXPECT_EQ(appender.commits, 50);
  auto temp1 = appender.Select({{"__name__", "gpu_temperature_celsius"}, {"gpu", "1"}});
  ASSERT_EQ(temp1.size(), 1u);
  const auto& samples = temp1[0].samples;
  // Values until the GPU fell off the bus at 30 s, then exactly one stale marker.
  size_t stale = 0;
  for (const auto& s : samples) stale += tsdb::IsStaleNaN(s.v);
  EXPECT_EQ(stale, 1u);
  EXPECT_TRUE(tsdb::IsStaleNaN(samples.back().v));
  EXPECT_GE(samples.size(), 25u);
  EXPECT_LE(samples.size(), 33u);
  // gpu_up keeps going (0 after the loss); XID 79 is a counter series; gpu_info is there.
  auto up1 = appender.Select({{"__name__", "gpu_up"}, {"gpu", "1"}});
  ASSERT_EQ(up1.size(), 1u);
  EXPECT_EQ(up1[0].samples.back().v, 0);
  EXPECT_EQ(up1[0].samples.size(), 50u);
  auto xid = appender.Select({{"__name__", "gpu_xid_errors_total"}, {"xid", "79"}});
  ASSERT_EQ(xid.size(), 1u);
  EXPECT_EQ(xid[0].samples.back().v, 1);
  EXPECT_EQ(appender.Select({{"__name__", "gpu_info"}, {"gpu", "0"}}).size(), 1u);
  // The agent's own state, for rules that run in the agent (gpuwarden_nvml_up, ...).
  auto gpus = appender.Select({{"__name__", "gpuwarden_gpus"}});
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0].samples.size(), 50u);
  EXPECT_EQ(gpus[0].samples.back().v, 2);
  auto nvml_up = appender.Select({{"__name__", "gpuwarden_nvml_up"}});
  ASSERT_EQ(nvml_up.size(), 1u);
  EXPECT_EQ(nvml_up[0].samples.back().v, 1);
  EXPECT_EQ(
      appender.Select({{"__name__", "gpuwarden_collect_last_success_timestamp_seconds"}}).size(),
      1u);
  // Series references are cached: GetRef is called once per series, not once per sample.
  EXPECT_EQ(static_cast<size_t>(appender.get_ref_calls), appender.series_count);
  // Every series of the lost GPU but gpu_up, gpu_info and its XID counter ends in one marker.
  uint64_t ended = 0;
  for (const auto& series : appender.Select({{"gpu", "1"}})) {
    size_t markers = 0;
    for (const auto& s : series.samples) markers += tsdb::IsStaleNaN(s.v);
    EXPECT_LE(markers, 1u) << tsdb::LabelValue(series.labels, "__name__");
    ended += markers;
  }
  EXPECT_GT(ended, 20u);
  EXPECT_EQ(recorder.stats().stale_markers, ended);
}

// Series of `family` on a /metrics page, one per sample line.
size_t SeriesOnPage(const std::string& page, const std::string& family) {
  size_t n = 0;
  for (size_t at = page.find("\n" + family + "{"); at != std::string::npos;
       at = page.find("\n" + family + "{", at + 1))
    ++n;
  return n;
}

TEST(Recorder, KeepsMigInstanceAndNvLinkSeriesAsMetricsWritesThem) {
  Snapshot snap = FullSnapshot(2);
  MemoryAppender appender;
  Logger log(LogLevel::kError);
  Recorder recorder(&appender, &log);
  recorder.SetNvLinkLinkMetrics(true);
  recorder.RecordNow(snap);
  std::string page;
  RenderOptions options;
  options.nvlink_link_metrics = true;
  Render(snap, Format::kText, options, ProcessFigures{}, &page);
  // Every per-instance and per-link family of /metrics is in the store, series for series.
  size_t checked = 0;
  for (const Family& f : kDynamicFamilies) {
    const std::string name(f.name);
    if (name.rfind("gpu_mig_", 0) != 0 && name.rfind("gpu_nvlink_link_", 0) != 0) continue;
    const size_t on_page = SeriesOnPage(page, name);
    EXPECT_GT(on_page, 0u) << name;
    EXPECT_EQ(appender.Select({{"__name__", name.c_str()}}).size(), on_page) << name;
    ++checked;
  }
  EXPECT_GE(checked, 15u);
  auto sm = appender.Select({{"__name__", "gpu_mig_tensor_active_ratio"},
                             {"gpu", "0"},
                             {"mig_instance", "5"},
                             {"mig_profile", "1g.10gb"},
                             {"pipe", "hmma"}});
  ASSERT_EQ(sm.size(), 1u);
  EXPECT_EQ(sm[0].samples.back().v, 0.25);
  auto crc = appender.Select(
      {{"__name__", "gpu_nvlink_link_errors_total"}, {"gpu", "1"}, {"link", "1"}, {"type", "crc"}});
  ASSERT_EQ(crc.size(), 1u);
  EXPECT_EQ(crc[0].samples.back().v, 3);
  auto info = appender.Select({{"__name__", "gpu_mig_info"}, {"mig_instance", "1"}, {"gpu", "1"}});
  ASSERT_EQ(info.size(), 1u);
  EXPECT_EQ(tsdb::LabelValue(info[0].labels, "mig_uuid"), snap.gpus[1].mig[0].uuid);

  // A re-partition on GPU 0: instance 5 goes, instance 9 comes. The old instance's series end
  // with one stale marker at once; the new one's start; GetRef stays once per series.
  snap.generation++;
  snap.taken_unix_seconds += 1;
  MigInstanceSnapshot fresh = snap.gpus[0].mig[1];
  fresh.gpu_instance_id = 9;
  fresh.uuid = "MIG-09000000-1111-2222-3333-444444444444";
  snap.gpus[0].mig[1] = fresh;
  snap.gpus[0].nvlinks.clear();  // and its NVLink series end too
  recorder.RecordNow(snap);
  for (const auto& series : appender.Select({{"gpu", "0"}, {"mig_instance", "5"}})) {
    ASSERT_EQ(series.samples.size(), 2u) << tsdb::LabelValue(series.labels, "__name__");
    EXPECT_TRUE(tsdb::IsStaleNaN(series.samples.back().v));
  }
  EXPECT_FALSE(appender.Select({{"gpu", "0"}, {"mig_instance", "5"}}).empty());
  EXPECT_EQ(appender.Select({{"__name__", "gpu_mig_info"}, {"mig_instance", "9"}}).size(), 1u);
  for (const auto& series : appender.Select({{"__name__", "gpu_nvlink_link_up"}, {"gpu", "0"}}))
    EXPECT_TRUE(tsdb::IsStaleNaN(series.samples.back().v));
  auto kept = appender.Select({{"__name__", "gpu_mig_info"}, {"gpu", "0"}, {"mig_instance", "1"}});
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].samples.size(), 2u);
  EXPECT_EQ(static_cast<size_t>(appender.get_ref_calls), appender.series_count);
}

// collect.nvlink_link_metrics off (the default): per link only gpu_nvlink_link_up is stored.
TEST(Recorder, PerLinkCountersOnlyWhenAskedFor) {
  MemoryAppender appender;
  Logger log(LogLevel::kError);
  Recorder recorder(&appender, &log);
  recorder.RecordNow(FullSnapshot(2));
  EXPECT_EQ(appender.Select({{"__name__", "gpu_nvlink_link_up"}}).size(), 4u);
  EXPECT_TRUE(appender.Select({{"__name__", "gpu_nvlink_link_errors_total"}}).empty());
  EXPECT_TRUE(appender.Select({{"__name__", "gpu_nvlink_link_transmit_bytes_per_second"}}).empty());
  EXPECT_EQ(appender.Select({{"__name__", "gpu_nvlink_errors_total"}}).size(), 10u);
}

// The trailing-window peaks are for scrapers (docs/metrics.md "Peaks over a window"): the store
// keeps every cycle's peak and leaves the window families out.
TEST(Recorder, KeepsThePerCyclePeaksAndNotTheirWindows) {
  Snapshot snap = FullSnapshot(2);
  MemoryAppender appender;
  Logger log(LogLevel::kError);
  Recorder recorder(&appender, &log);
  recorder.RecordNow(snap);
  for (const auto& [slot, window] : kPeakWindows) {
    const Family& per_cycle =
        kFamilies[static_cast<size_t>(kSlots[static_cast<size_t>(slot)].family)];
    EXPECT_EQ(appender.Select({{"__name__", std::string(per_cycle.name).c_str()}}).size(), 2u)
        << per_cycle.name;
    EXPECT_TRUE(
        appender.Select({{"__name__", std::string(DynamicFamily(window).name).c_str()}}).empty())
        << DynamicFamily(window).name;
  }
}

TEST(Recorder, ThreadTakesOfferedSnapshotsWithoutBlockingThePublisher) {
  gw::testing::SimCollector sim("demo", {});
  ASSERT_TRUE(sim.ok());
  MemoryAppender appender;
  Logger log(LogLevel::kError);
  Recorder recorder(&appender, &log);
  recorder.Start();
  for (int i = 0; i < 20; ++i) {
    sim.Advance(1);
    recorder.Offer(sim.Latest());
  }
  recorder.Stop();  // records what was offered last
  RecorderStats st = recorder.stats();
  EXPECT_EQ(st.snapshots_recorded + st.snapshots_skipped, 20u);
  EXPECT_GE(st.snapshots_recorded, 1u);
  auto up = appender.Select({{"__name__", "gpu_up"}, {"gpu", "0"}});
  ASSERT_EQ(up.size(), 1u);
  // The newest snapshot is always recorded.
  EXPECT_EQ(up[0].samples.back().t_ms,
            static_cast<int64_t>(std::llround(sim.Latest()->taken_unix_seconds * 1000)));
}

}  // namespace
}  // namespace gw::collect
