// remote/queue.h against a real store (tsdb::DB in a temporary directory) and a recording stand-in
// for the endpoint: everything stored is sent once, in order per series, across restarts (the
// progress file), WAL checkpoints (data read back from blocks), retries and refusals;
// write_relabel_configs keep/drop; downsampled windows.
#include "remote/queue.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "support/process.h"

namespace gw::remote {
namespace {

using gw::testing::TempDir;

tsdb::Labels SeriesLabels(const std::string& name, int gpu) {
  return {{"__name__", name}, {"gpu", std::to_string(gpu)}};
}

// What the stand-in endpoint received: per series (labels joined), the samples in arrival order.
struct Received {
  std::map<std::string, std::vector<Sample>> series;
  std::vector<size_t> request_sizes;
  size_t requests = 0;
  std::string Key(const TimeSeries& ts) const {
    std::string k;
    for (const Label& l : ts.labels) k += l.name + "=" + l.value + ",";
    return k;
  }
  SendResult Take(const std::vector<TimeSeries>& batch) {
    ++requests;
    size_t n = 0;
    for (const TimeSeries& ts : batch) {
      auto& out = series[Key(ts)];
      out.insert(out.end(), ts.samples.begin(), ts.samples.end());
      n += ts.samples.size();
    }
    request_sizes.push_back(n);
    return {.outcome = SendResult::kSent, .status = 204, .bytes = 10};
  }
};

class QueueTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }
  void Open() {
    auto db = tsdb::DB::Open({.dir = dir_ / "data"});
    ASSERT_TRUE(db.ok()) << db.error().message;
    db_ = std::move(*db);
  }
  // `n` samples at 1 s for GPUs 0..gpus-1 of `name`, starting at t0_ms; the value at t is
  // gpu * 1000 + the seconds since t0_.
  void Append(const std::string& name, int gpus, int64_t t0_ms, int n) {
    for (int i = 0; i < n; ++i)
      for (int g = 0; g < gpus; ++g)
        ASSERT_TRUE(db_->Append(SeriesLabels(name, g), t0_ms + i * 1000,
                                g * 1000 + (t0_ms - t0_) / 1000 + i)
                        .ok());
    ASSERT_TRUE(db_->Commit().ok());
  }
  QueueOptions Options() {
    QueueOptions o;
    o.name = "test";
    o.progress_file = dir_ / "rw.progress";
    o.max_samples_per_send = 50;
    o.min_backoff_s = 0.001;
    o.max_backoff_s = 0.004;
    o.start_lookback_ms = 3600'000;
    return o;
  }
  std::unique_ptr<Queue> MakeQueue(QueueOptions o, SendFn send) {
    return std::make_unique<Queue>(std::move(o), db_.get(), std::move(send), &log_);
  }
  // Passes until caught up (at most `max` passes).
  static void Drain(Queue* q, int max = 1000) {
    for (int i = 0; i < max; ++i) {
      ASSERT_TRUE(q->Pass());
      if (q->figures().caught_up) return;
    }
    FAIL() << "not caught up after " << max << " passes";
  }
  static void ExpectSeries(const std::vector<Sample>& got, int64_t t0_ms, int n, double base) {
    ASSERT_EQ(got.size(), static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(got[i].timestamp_ms, t0_ms + i * 1000) << i;
      EXPECT_EQ(got[i].value, base + i) << i;
    }
  }

  TempDir dir_;
  Logger log_{LogLevel::kError};
  std::unique_ptr<tsdb::DB> db_;
  const int64_t t0_ = 1'700'000'000'000;
};

TEST_F(QueueTest, SendsEverySampleOnceInOrderInBoundedRequests) {
  Append("gpu_power_watts", 4, t0_, 300);
  Received rx;
  auto q = MakeQueue(Options(), [&](const auto& b) { return rx.Take(b); });
  q->Notify(t0_ + 299'000);
  Drain(q.get());
  ASSERT_EQ(rx.series.size(), 4u);
  for (int g = 0; g < 4; ++g)
    ExpectSeries(rx.series["__name__=gpu_power_watts,gpu=" + std::to_string(g) + ","], t0_, 300,
                 g * 1000);
  for (size_t n : rx.request_sizes) EXPECT_LE(n, 50u);
  const Queue::Figures f = q->figures();
  EXPECT_EQ(f.samples_sent, 1200u);
  EXPECT_EQ(f.highest_sent_ms, t0_ + 299'000);
  EXPECT_EQ(f.pending, 0u);
  EXPECT_EQ(f.bytes_sent, rx.requests * 10);
}

// While catching up the queue reads the store in slices of time, so the requests move forward in
// time across all series instead of sending one series' hour before the next one's.
TEST_F(QueueTest, CatchingUpMovesThroughTimeAcrossSeries) {
  Append("gpu_temp_celsius", 3, t0_, 1800);  // 30 minutes
  QueueOptions o = Options();
  o.max_samples_per_send = 1000;
  o.catch_up_slice_ms = 5 * 60'000;
  std::vector<int64_t> newest;  // per request: its newest timestamp
  Received rx;
  auto q = MakeQueue(o, [&](const std::vector<TimeSeries>& b) {
    int64_t n = 0;
    for (const auto& ts : b) n = std::max(n, ts.samples.back().timestamp_ms);
    newest.push_back(n);
    return rx.Take(b);
  });
  q->Notify(t0_ + 1799'000);
  Drain(q.get());
  for (int g = 0; g < 3; ++g)
    ExpectSeries(rx.series["__name__=gpu_temp_celsius,gpu=" + std::to_string(g) + ","], t0_, 1800,
                 g * 1000);
  ASSERT_GE(newest.size(), 6u);
  for (size_t i = 1; i < newest.size(); ++i) EXPECT_GE(newest[i], newest[i - 1]) << i;
}

// The store's WAL is checkpointed at every Flush; what was not yet sent is read back from the
// blocks, and a new queue (an agent restart) resumes from the progress file: nothing lost, nothing
// sent twice.
TEST_F(QueueTest, ResumesAfterRestartAndWalCheckpoint) {
  Append("gpu_power_watts", 2, t0_, 120);
  Received rx;
  {
    auto q = MakeQueue(Options(), [&](const auto& b) { return rx.Take(b); });
    q->Notify(t0_ + 119'000);
    Drain(q.get());
  }
  Append("gpu_power_watts", 2, t0_ + 120'000, 600);
  ASSERT_TRUE(db_->Flush().ok());  // the WAL segments holding them are deleted
  db_.reset();
  Open();  // the agent restarted
  Append("gpu_power_watts", 2, t0_ + 720'000, 60);
  auto q = MakeQueue(Options(), [&](const auto& b) { return rx.Take(b); });
  q->Notify(t0_ + 779'000);
  Drain(q.get());
  for (int g = 0; g < 2; ++g)
    ExpectSeries(rx.series["__name__=gpu_power_watts,gpu=" + std::to_string(g) + ","], t0_, 780,
                 g * 1000);
}

// 5xx / no answer: the same request again after a backoff until it is taken; 4xx: counted as
// failed, never resent, and the queue moves on.
TEST_F(QueueTest, RetriesRecoverableFailuresAndDropsRefusals) {
  Append("gpu_power_watts", 1, t0_, 100);
  Received rx;
  int failures_left = 5;
  auto q = MakeQueue(Options(), [&](const auto& b) -> SendResult {
    if (failures_left > 0) {
      --failures_left;
      return {.outcome = SendResult::kRetry, .status = 503, .error = "HTTP 503"};
    }
    return rx.Take(b);
  });
  q->Notify(t0_ + 99'000);
  Drain(q.get());
  ExpectSeries(rx.series["__name__=gpu_power_watts,gpu=0,"], t0_, 100, 0);
  Queue::Figures f = q->figures();
  EXPECT_EQ(f.samples_sent, 100u);
  EXPECT_EQ(f.samples_retried, 5u * 50);
  EXPECT_EQ(f.requests_failed, 5u);
  EXPECT_EQ(f.samples_failed, 0u);

  Append("gpu_power_watts", 1, t0_ + 100'000, 100);
  int refused = 0;
  auto q2 = MakeQueue(Options(), [&](const auto&) -> SendResult {
    ++refused;
    return {.outcome = SendResult::kDrop, .status = 400, .error = "HTTP 400: bad"};
  });
  q2->Notify(t0_ + 199'000);
  Drain(q2.get());
  EXPECT_EQ(refused, 2);  // two requests of 50, each tried once
  f = q2->figures();
  EXPECT_EQ(f.samples_failed, 100u);
  EXPECT_EQ(f.samples_sent, 0u);
  q2->Notify(t0_ + 200'000);
  Drain(q2.get());
  EXPECT_EQ(refused, 2);  // not again
}

// A receiver stopping mid-request acts on it and drops the connection; the resend is refused as
// out of order (Prometheus 2.42: a series' samples older than its newest). Those samples are
// stored — counted apart, not as failed. Without a lost answer the same refusal is a failure.
TEST_F(QueueTest, AResendRefusedAsOutOfOrderAfterALostAnswerWasStored) {
  Append("gpu_power_watts", 1, t0_, 100);
  Received rx;
  int attempts = 0;
  auto q = MakeQueue(Options(), [&](const auto& b) -> SendResult {
    if (++attempts == 1) {
      rx.Take(b);  // stored, then the connection dropped before the answer
      return {.outcome = SendResult::kRetry, .error = "no reply", .answer_lost = true};
    }
    if (attempts == 2)
      return {.outcome = SendResult::kRetry, .status = 503, .error = "HTTP 503: stopping"};
    if (attempts == 3)
      return {
          .outcome = SendResult::kDrop, .status = 400, .error = "HTTP 400: out of order sample"};
    return rx.Take(b);
  });
  q->Notify(t0_ + 99'000);
  Drain(q.get());
  ExpectSeries(rx.series["__name__=gpu_power_watts,gpu=0,"], t0_, 100, 0);
  EXPECT_EQ(rx.requests, 2u);
  Queue::Figures f = q->figures();
  EXPECT_EQ(f.samples_already_stored, 50u);
  EXPECT_EQ(f.samples_failed, 0u);
  EXPECT_EQ(f.samples_sent, 50u);
  EXPECT_EQ(f.samples_retried, 100u);
  EXPECT_EQ(f.highest_sent_ms, t0_ + 99'000);

  // No lost answer (the connection was refused before sending): the refusal is a failure, and so
  // is any other reason after a lost answer.
  Append("gpu_power_watts", 1, t0_ + 100'000, 100);
  attempts = 0;
  auto q2 = MakeQueue(Options(), [&](const auto&) -> SendResult {
    ++attempts;
    if (attempts == 1)
      return {.outcome = SendResult::kRetry, .error = "connection refused or unreachable"};
    if (attempts == 2)
      return {
          .outcome = SendResult::kDrop, .status = 400, .error = "HTTP 400: out of order sample"};
    if (attempts == 3)
      return {.outcome = SendResult::kRetry, .error = "no reply", .answer_lost = true};
    return {.outcome = SendResult::kDrop, .status = 400, .error = "HTTP 400: out of bounds"};
  });
  q2->Notify(t0_ + 199'000);
  Drain(q2.get());
  f = q2->figures();
  EXPECT_EQ(attempts, 4);
  EXPECT_EQ(f.samples_failed, 100u);
  EXPECT_EQ(f.samples_already_stored, 0u);
}

TEST_F(QueueTest, WriteRelabelKeepsAndDropsByRegexAndAddsExternalLabels) {
  Append("gpu_power_watts", 2, t0_, 10);
  Append("gpu_process_memory_bytes", 2, t0_, 10);
  QueueOptions o = Options();
  auto drop = tsdb::Matcher::Make(tsdb::MatchType::kRegexMatch, "r", "gpu_process_.*");
  auto keep = tsdb::Matcher::Make(tsdb::MatchType::kRegexMatch, "r", "gpu_.*;1");
  ASSERT_TRUE(drop.ok() && keep.ok());
  o.relabel.push_back({false, {"__name__"}, ";", *drop});
  o.relabel.push_back({true, {"__name__", "gpu"}, ";", *keep});
  o.external_labels = {{"node", "n7"}};
  Received rx;
  auto q = MakeQueue(o, [&](const auto& b) { return rx.Take(b); });
  q->Notify(t0_ + 9'000);
  Drain(q.get());
  ASSERT_EQ(rx.series.size(), 1u) << rx.series.begin()->first;
  ExpectSeries(rx.series["__name__=gpu_power_watts,gpu=1,node=n7,"], t0_, 10, 1000);
  EXPECT_EQ(q->figures().series_dropped, 3u);
  // prometheus_remote_storage_samples_dropped_total: the 3 dropped series' 10 samples each.
  EXPECT_EQ(q->figures().samples_dropped, 30u);
  EXPECT_EQ(q->figures().samples_sent, 10u);
  // Newer samples are counted once more pass, and a restarted queue counts only what is new.
  Append("gpu_power_watts", 2, t0_ + 10'000, 5);
  Append("gpu_process_memory_bytes", 2, t0_ + 10'000, 5);
  q->Notify(t0_ + 14'000);
  Drain(q.get());
  EXPECT_EQ(q->figures().samples_dropped, 45u);
  q->Notify(t0_ + 15'000);
  Drain(q.get());
  EXPECT_EQ(q->figures().samples_dropped, 45u);  // nothing new: not counted again
  q.reset();
  Append("gpu_power_watts", 2, t0_ + 15'000, 2);
  Append("gpu_process_memory_bytes", 2, t0_ + 15'000, 2);
  auto again = MakeQueue(o, [&](const auto& b) { return rx.Take(b); });
  again->Notify(t0_ + 16'000);
  Drain(again.get());
  EXPECT_EQ(again->figures().samples_dropped, 6u);
  EXPECT_EQ(again->figures().samples_sent, 2u);
  ExpectSeries(rx.series["__name__=gpu_power_watts,gpu=1,node=n7,"], t0_, 17, 1000);
}

// Windows (t - 15 s, t]: max and avg of the numeric samples, stamped t; stale markers ignored;
// a window is sent once the store is complete past its end.
TEST_F(QueueTest, DownsamplesToMaxAndAvgPerWindow) {
  const int64_t base = 1'700'000'010'000;  // a multiple of 15 s
  const tsdb::Labels l = SeriesLabels("gpu_power_watts", 0);
  for (int i = 1; i <= 45; ++i) ASSERT_TRUE(db_->Append(l, base + i * 1000, i).ok());
  ASSERT_TRUE(db_->Append(l, base + 46'000, tsdb::StaleNaN()).ok());
  ASSERT_TRUE(db_->Commit().ok());
  QueueOptions o = Options();
  o.downsample_ms = 15'000;
  o.aggregates = {Aggregate::kMax, Aggregate::kAvg};
  Received rx;
  auto q = MakeQueue(o, [&](const auto& b) { return rx.Take(b); });
  q->Notify(base + 44'000);  // the third window is not complete yet
  Drain(q.get());
  auto& mx = rx.series["__name__=gpu_power_watts,aggregate=max,gpu=0,"];
  auto& avg = rx.series["__name__=gpu_power_watts,aggregate=avg,gpu=0,"];
  ASSERT_EQ(mx.size(), 2u);
  ASSERT_EQ(avg.size(), 2u);
  EXPECT_EQ(mx[0].timestamp_ms, base + 15'000);
  EXPECT_EQ(mx[0].value, 15);
  EXPECT_EQ(avg[0].value, 8);  // (1 + ... + 15) / 15
  EXPECT_EQ(mx[1].timestamp_ms, base + 30'000);
  EXPECT_EQ(avg[1].value, 23);
  q->Notify(base + 60'000);
  Drain(q.get());
  ASSERT_EQ(mx.size(), 3u);
  EXPECT_EQ(mx[2].value, 45);
  EXPECT_EQ(avg[2].value, 38);
  ASSERT_EQ(avg.size(), 3u);  // the window with only the stale marker sends nothing
}

// The thread: Start, Notify, Stop; the progress file is what the next queue resumes from.
TEST_F(QueueTest, ThreadSendsAfterTheDeadlineAndStopsPromptly) {
  Append("gpu_power_watts", 1, t0_, 30);
  std::mutex mu;
  Received rx;
  QueueOptions o = Options();
  o.batch_send_deadline_s = 0.05;
  auto q = MakeQueue(o, [&](const auto& b) {
    std::lock_guard lock(mu);
    return rx.Take(b);
  });
  q->Start();
  q->Notify(t0_ + 29'000);
  ASSERT_TRUE(gw::testing::WaitFor([&] { return q->figures().samples_sent == 30; }, 10));
  q->Stop();
  std::lock_guard lock(mu);
  ExpectSeries(rx.series["__name__=gpu_power_watts,gpu=0,"], t0_, 30, 0);
}

}  // namespace
}  // namespace gw::remote
