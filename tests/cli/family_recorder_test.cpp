// FamilyRecorder: the task layer's /metrics families written into the history at the snapshot's
// time, ended series marked stale, bad input counted without losing the rest.
#include "cli/family_recorder.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tsdb/storage.h"

namespace gw::cli {
namespace {

struct Written {
  std::string series;  // name{a="b",...} in label order
  int64_t t_ms;
  double v;
};

class ListAppender : public collect::SampleAppender {
 public:
  Expected<Ref> GetRef(const tsdb::Labels& labels) override {
    std::string text;
    for (const tsdb::Label& l : labels) text += l.name + "=" + l.value + ";";
    for (size_t i = 0; i < series.size(); ++i)
      if (series[i] == text) return static_cast<Ref>(i);
    series.push_back(text);
    return static_cast<Ref>(series.size() - 1);
  }
  Status Append(Ref ref, int64_t t_ms, double v) override {
    if (refuse_at == t_ms) return Status(Error{"out of order"});
    written.push_back({series[ref], t_ms, v});
    return Status::Ok();
  }
  Status Commit() override {
    ++commits;
    return Status::Ok();
  }
  std::vector<std::string> series;
  std::vector<Written> written;
  int commits = 0;
  int64_t refuse_at = -1;
};

TEST(FamilyRecorder, RecordsSamplesAtTheSnapshotTimeAndMarksEndedSeriesStale) {
  ListAppender appender;
  Logger log(LogLevel::kError);
  std::string page =
      "# HELP gpu_job_gpus GPUs.\n# TYPE gpu_job_gpus gauge\n"
      "gpu_job_gpus{job_id=\"11\",team=\"sim\"} 2\ngpu_job_gpus{job_id=\"12\",team=\"bio\"} 1\n"
      "# TYPE gpu_job_queue_wait_seconds histogram\n"
      "gpu_job_queue_wait_seconds_bucket{partition=\"gpu\",le=\"+Inf\"} 3\n";
  FamilyRecorder recorder(
      &appender, [&page](std::string* out) { *out += page; }, &log);
  recorder.Record(1000);
  ASSERT_EQ(appender.written.size(), 3u);
  EXPECT_EQ(appender.written[0].series, "__name__=gpu_job_gpus;job_id=11;team=sim;");
  EXPECT_EQ(appender.written[0].t_ms, 1000);
  EXPECT_EQ(appender.written[0].v, 2);
  EXPECT_EQ(appender.written[2].series,
            "__name__=gpu_job_queue_wait_seconds_bucket;le=+Inf;partition=gpu;");
  EXPECT_EQ(appender.commits, 1);
  EXPECT_EQ(recorder.series(), 3u);

  // Job 12 ends: its series gets one stale marker, then is forgotten.
  page =
      "gpu_job_gpus{job_id=\"11\",team=\"sim\"} 2\n"
      "gpu_job_queue_wait_seconds_bucket{partition=\"gpu\",le=\"+Inf\"} 4\n";
  recorder.Record(2000);
  ASSERT_EQ(appender.written.size(), 6u);
  const Written& stale = appender.written.back();
  EXPECT_EQ(stale.series, "__name__=gpu_job_gpus;job_id=12;team=bio;");
  EXPECT_EQ(stale.t_ms, 2000);
  EXPECT_TRUE(tsdb::IsStaleNaN(stale.v));
  EXPECT_EQ(recorder.series(), 2u);
  recorder.Record(3000);
  EXPECT_EQ(appender.written.size(), 8u);  // no second marker
  EXPECT_EQ(recorder.samples_appended(), 7u);
  EXPECT_EQ(recorder.append_errors(), 0u);
}

TEST(FamilyRecorder, RefusedSamplesAndBadTextAreCountedAndTheRestKept) {
  ListAppender appender;
  Logger log(LogLevel::kError);
  std::string page = "a_total 1\nb 2\n";
  FamilyRecorder recorder(
      &appender, [&page](std::string* out) { *out += page; }, &log);
  appender.refuse_at = 1000;
  recorder.Record(1000);
  EXPECT_EQ(recorder.append_errors(), 2u);
  EXPECT_EQ(appender.written.size(), 0u);
  appender.refuse_at = -1;
  page = "a_total 2\nb{oops 3\n";  // the second line does not parse
  recorder.Record(2000);
  EXPECT_GE(recorder.append_errors(), 3u);
  ASSERT_FALSE(appender.written.empty());
  EXPECT_EQ(appender.written[0].series, "__name__=a_total;");
  EXPECT_EQ(appender.written[0].v, 2);
}

}  // namespace
}  // namespace gw::cli
