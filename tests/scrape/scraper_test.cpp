#include "scrape/scraper.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <mutex>
#include <thread>

#include "http/server.h"
#include "support/process.h"
#include "tsdb/storage.h"

namespace gw::scrape {
namespace {

// tsdb::MemoryAppender over its own MemoryQuerier, which the tests read back.
class MemoryAppender : public tsdb::MemoryAppender {
 public:
  MemoryAppender() : tsdb::MemoryAppender(&store) {}
  // The samples of the one series matching `eq` (empty when none, failure when several).
  std::vector<tsdb::Sample> Samples(std::vector<std::pair<std::string, std::string>> eq) {
    std::vector<tsdb::Matcher> ms;
    for (auto& [n, v] : eq) ms.push_back(*tsdb::Matcher::Make(tsdb::MatchType::kEqual, n, v));
    std::vector<tsdb::SeriesData> out;
    EXPECT_TRUE(store.Select(ms, 0, INT64_MAX, &out).ok());
    EXPECT_LE(out.size(), 1u);
    return out.empty() ? std::vector<tsdb::Sample>{} : out[0].samples;
  }
  tsdb::MemoryQuerier store;
};

// A metrics page whose body, status and required Authorization header tests set.
class Page {
 public:
  Page() {
    server_ = http::Server::Create({.listen_address = "127.0.0.1:0"}, nullptr).value();
    server_->Get("/metrics", [this](const http::Request& req, http::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      ++requests_;
      if (!auth_.empty() && req.header("Authorization") != auth_) {
        res.status = 401;
        return;
      }
      res.status = status_;
      res.body = body_;
    });
    EXPECT_TRUE(server_->Start().ok());
  }
  std::string url() const {
    return "http://127.0.0.1:" + std::to_string(server_->port()) + "/metrics";
  }
  void Set(std::string body, int status = 200) {
    std::lock_guard<std::mutex> lock(mu_);
    body_ = std::move(body);
    status_ = status;
  }
  void RequireAuth(std::string header) {
    std::lock_guard<std::mutex> lock(mu_);
    auth_ = std::move(header);
  }
  int requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  std::unique_ptr<http::Server> server_;
  std::mutex mu_;
  std::string body_, auth_;
  int status_ = 200, requests_ = 0;
};

collect::Snapshot TwoGpus() {
  collect::Snapshot s;
  s.gpus.resize(2);
  s.gpus[0].identity.index = 0;
  s.gpus[0].identity.uuid = "GPU-aaaa";
  s.gpus[1].identity.index = 1;
  s.gpus[1].identity.uuid = "GPU-bbbb";
  return s;
}

TargetConfig Target(const std::string& name, const std::string& url) {
  TargetConfig t;
  t.name = name;
  t.url = url;
  t.interval_s = 15;
  t.timeout_s = 5;
  return t;
}

constexpr int64_t kT0 = 1'700'000'000'000;

TEST(ScraperTest, StoresEverySampleWithTheTargetLabelAtTheScrapeTime) {
  Page page;
  page.Set(
      "# HELP requests_total Requests.\n# TYPE requests_total counter\n"
      "requests_total{code=\"200\"} 17\nrequests_total{code=\"500\"} 2 1600000000000\n"
      "queue_depth 3\n");
  TargetConfig t = Target("llm", page.url());
  t.gpus = {1};
  Scraper scraper({t}, nullptr);
  MemoryAppender store;
  scraper.ScrapeDue(kT0);
  EXPECT_GT(scraper.Drain(&store, TwoGpus()), 0u);

  auto ok = store.Samples({{"__name__", "requests_total"}, {"code", "200"}, {"target", "llm"}});
  ASSERT_EQ(ok.size(), 1u);
  EXPECT_EQ(ok[0].t_ms, kT0);
  EXPECT_EQ(ok[0].v, 17);
  auto failed = store.Samples({{"__name__", "requests_total"}, {"code", "500"}});
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].t_ms, kT0) << "the page's own timestamp is ignored";
  EXPECT_EQ(store.Samples({{"__name__", "queue_depth"}, {"target", "llm"}}).size(), 1u);
  EXPECT_EQ(store.Samples({{"__name__", "gpuwarden_scrape_up"}, {"target", "llm"}})[0].v, 1);
  EXPECT_EQ(store.Samples({{"__name__", "gpuwarden_scrape_samples"}, {"target", "llm"}})[0].v, 3);
  EXPECT_EQ(store.Samples({{"__name__", "gpuwarden_scrape_duration_seconds"}}).size(), 1u);
  auto info = store.Samples(
      {{"__name__", "gpu_service_info"}, {"target", "llm"}, {"gpu", "1"}, {"uuid", "GPU-bbbb"}});
  ASSERT_EQ(info.size(), 1u);
  EXPECT_EQ(info[0].v, 1);
  EXPECT_TRUE(store.Samples({{"__name__", "gpu_service_info"}, {"gpu", "0"}}).empty());
}

TEST(ScraperTest, KeepsTheDescriptorLinesOfTheLastGoodPage) {
  Page page;
  page.Set(
      "# HELP q_seconds Queue time.\n# TYPE q_seconds gauge\n# UNIT q_seconds seconds\n"
      "q_seconds 1\n# comment\nother 2\n");
  Scraper scraper({Target("svc", page.url())}, nullptr);
  EXPECT_EQ(scraper.Descriptors(), std::vector<std::string>{""});  // nothing scraped yet
  scraper.ScrapeDue(kT0);
  const std::string first =
      "# HELP q_seconds Queue time.\n# TYPE q_seconds gauge\n# UNIT q_seconds seconds\n";
  EXPECT_EQ(scraper.Descriptors()[0], first);
  page.Set("oops", 500);  // a failed scrape keeps what the last good page said
  scraper.ScrapeDue(kT0 + 15'000);
  EXPECT_EQ(scraper.Descriptors()[0], first);
  page.Set("# TYPE q_seconds counter\nq_seconds 1\n");
  scraper.ScrapeDue(kT0 + 30'000);
  EXPECT_EQ(scraper.Descriptors()[0], "# TYPE q_seconds counter\n");
}

TEST(ScraperTest, AScrapedTargetLabelBecomesExportedTarget) {
  Page page;
  page.Set("up_like{target=\"inner\"} 1\nboth{target=\"a\",exported_target=\"b\"} 2\n");
  Scraper scraper({Target("outer", page.url())}, nullptr);
  MemoryAppender store;
  scraper.ScrapeDue(kT0);
  scraper.Drain(&store, TwoGpus());
  EXPECT_EQ(
      store.Samples({{"__name__", "up_like"}, {"target", "outer"}, {"exported_target", "inner"}})
          .size(),
      1u);
  EXPECT_EQ(store
                .Samples({{"__name__", "both"},
                          {"target", "outer"},
                          {"exported_target", "a"},
                          {"exported_exported_target", "b"}})
                .size(),
            1u);
}

TEST(ScraperTest, FollowsTheIntervalOnTheClockItIsGiven) {
  Page page;
  page.Set("x 1\n");
  Scraper scraper({Target("svc", page.url())}, nullptr);
  MemoryAppender store;
  EXPECT_EQ(scraper.Health()[0].last_scrape_ms, 0);  // never scraped (/api/v1/targets: unknown)
  for (int64_t dt : {0, 5'000, 14'999, 15'000, 16'000, 30'000}) scraper.ScrapeDue(kT0 + dt);
  EXPECT_EQ(scraper.Health()[0].last_scrape_ms, kT0 + 30'000);  // the last scrape's time
  scraper.Drain(&store, TwoGpus());
  auto samples = store.Samples({{"__name__", "x"}});
  ASSERT_EQ(samples.size(), 3u);
  EXPECT_EQ(samples[1].t_ms, kT0 + 15'000);
  EXPECT_EQ(samples[2].t_ms, kT0 + 30'000);
  EXPECT_EQ(page.requests(), 3);
}

TEST(ScraperTest, VanishedSeriesAndFailedScrapesGetStaleMarkers) {
  Page page;
  page.Set("a 1\nb 2\n");
  std::vector<std::string> lines;
  Logger log(LogLevel::kInfo, [&](LogLevel, const std::string& line) { lines.push_back(line); });
  Scraper scraper({Target("svc", page.url())}, &log);
  MemoryAppender store;
  scraper.ScrapeDue(kT0);
  page.Set("a 3\n");
  scraper.ScrapeDue(kT0 + 15'000);
  page.Set("oops", 500);
  scraper.ScrapeDue(kT0 + 30'000);
  scraper.ScrapeDue(kT0 + 45'000);  // still down: no second log line
  page.Set("a 4\nb 5\n");
  scraper.ScrapeDue(kT0 + 60'000);
  scraper.Drain(&store, TwoGpus());

  auto b_all = store.Samples({{"__name__", "b"}, {"target", "svc"}});
  ASSERT_EQ(b_all.size(), 3u);
  EXPECT_TRUE(tsdb::IsStaleNaN(b_all[1].v));  // missing from the second page
  EXPECT_EQ(b_all[1].t_ms, kT0 + 15'000);
  EXPECT_EQ(b_all[2].v, 5);  // back with the target (already stale: no marker at the failure)
  EXPECT_EQ(b_all[2].t_ms, kT0 + 60'000);
  auto a = store.Samples({{"__name__", "a"}});
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a[1].v, 3);
  EXPECT_TRUE(tsdb::IsStaleNaN(a[2].v));  // the failed scrape
  EXPECT_EQ(a[2].t_ms, kT0 + 30'000);
  EXPECT_EQ(a[3].v, 4);
  auto up = store.Samples({{"__name__", "gpuwarden_scrape_up"}});
  ASSERT_EQ(up.size(), 5u);
  EXPECT_EQ(up[2].v, 0);
  EXPECT_EQ(up[3].v, 0);
  EXPECT_EQ(up[4].v, 1);

  auto health = scraper.Health();
  ASSERT_EQ(health.size(), 1u);
  EXPECT_TRUE(health[0].up);
  EXPECT_EQ(health[0].errors, 2u);
  EXPECT_EQ(health[0].scrapes, 5u);
  // Once per change: up, down (with the reason), up again.
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[1].find("is down: HTTP 500"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("is up"), std::string::npos) << lines[2];
}

TEST(ScraperTest, AnUnparsablePageIsAFailedScrapeThatSaysWhere) {
  Page page;
  page.Set("good 1\nbad{label=\"x\" 2\n");
  Scraper scraper({Target("svc", page.url())}, nullptr);
  MemoryAppender store;
  scraper.ScrapeDue(kT0);
  scraper.Drain(&store, TwoGpus());
  EXPECT_TRUE(store.Samples({{"__name__", "good"}}).empty()) << "nothing of a bad page is kept";
  EXPECT_EQ(store.Samples({{"__name__", "gpuwarden_scrape_up"}})[0].v, 0);
  auto health = scraper.Health();
  EXPECT_FALSE(health[0].up);
  EXPECT_NE(health[0].last_error.find(page.url() + ":2: "), std::string::npos)
      << health[0].last_error;
}

TEST(ScraperTest, ReadsOpenMetricsWithExemplars) {
  Page page;
  page.Set(
      "# TYPE latency_seconds histogram\n"
      "latency_seconds_bucket{le=\"0.1\"} 5 # {trace_id=\"abc\"} 0.05 1700000000.5\n"
      "latency_seconds_bucket{le=\"+Inf\"} 7 # {trace_id=\"def\"} 3\n"
      "latency_seconds_count 7 1700000000.5\n# EOF\n");
  Scraper scraper({Target("svc", page.url())}, nullptr);
  MemoryAppender store;
  scraper.ScrapeDue(kT0);
  scraper.Drain(&store, TwoGpus());
  EXPECT_EQ(store.Samples({{"__name__", "latency_seconds_bucket"}, {"le", "+Inf"}})[0].v, 7);
  EXPECT_EQ(store.Samples({{"__name__", "latency_seconds_count"}})[0].v, 7);
}

TEST(ScraperTest, ADeadTargetIsDownAndSaysWhy) {
  TargetConfig t =
      Target("gone", "http://127.0.0.1:" + std::to_string(testing::FreePort()) + "/metrics");
  t.timeout_s = 1;
  Scraper scraper({t}, nullptr);
  MemoryAppender store;
  scraper.ScrapeDue(kT0);
  scraper.Drain(&store, TwoGpus());
  EXPECT_EQ(store.Samples({{"__name__", "gpuwarden_scrape_up"}})[0].v, 0);
  auto health = scraper.Health();
  EXPECT_FALSE(health[0].up);
  EXPECT_NE(health[0].last_error.find("cannot connect"), std::string::npos) << health[0].last_error;
  std::string metrics;
  scraper.RenderMetrics(expo::Format::kText, &metrics);
  EXPECT_NE(metrics.find("gpuwarden_scrape_up{target=\"gone\"} 0\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("gpuwarden_scrape_errors_total{target=\"gone\"} 1\n"), std::string::npos)
      << metrics;
}

TEST(ScraperTest, SendsBasicAuthAndBearerTokens) {
  testing::TempDir dir;
  testing::WriteFile(dir / "password", "s3cret\n");
  testing::WriteFile(dir / "token", "tok-123\n");
  Page basic, bearer;
  basic.Set("x 1\n");
  bearer.Set("y 1\n");
  basic.RequireAuth("Basic dXNlcjpzM2NyZXQ=");  // user:s3cret
  bearer.RequireAuth("Bearer tok-123");
  TargetConfig a = Target("basic", basic.url());
  a.basic_auth_username = "user";
  a.basic_auth_password_file = dir / "password";
  TargetConfig b = Target("bearer", bearer.url());
  b.bearer_token_file = dir / "token";
  TargetConfig c = Target("unauthorized", basic.url());
  Scraper scraper({a, b, c}, nullptr);
  scraper.ScrapeDue(kT0);
  auto health = scraper.Health();
  EXPECT_TRUE(health[0].up) << health[0].last_error;
  EXPECT_TRUE(health[1].up) << health[1].last_error;
  EXPECT_FALSE(health[2].up);
  EXPECT_EQ(health[2].last_error, "HTTP 401");
}

TEST(ScraperTest, SecretFilesAreTrimmedAtBothEndsAndAnUnreadableOneFailsTheTarget) {
  testing::TempDir dir;
  testing::WriteFile(dir / "token", "  tok-123 \r\n\n");  // Prometheus' rule: whitespace trimmed
  Page bearer;
  bearer.Set("y 1\n");
  bearer.RequireAuth("Bearer tok-123");
  TargetConfig a = Target("bearer", bearer.url());
  a.bearer_token_file = dir / "token";
  TargetConfig b = Target("missing", bearer.url());
  b.bearer_token_file = dir / "absent";
  Scraper scraper({a, b}, nullptr);
  scraper.ScrapeDue(kT0);
  auto health = scraper.Health();
  EXPECT_TRUE(health[0].up) << health[0].last_error;
  EXPECT_FALSE(health[1].up);
  EXPECT_EQ(health[1].last_error,
            "bearer_token_file " + (dir / "absent") + ": cannot read: No such file or directory");
}

TEST(ScraperTest, TheThreadScrapesOnItsOwnAndRendersMetrics) {
  Page page;
  page.Set("x 1\n");
  TargetConfig t = Target("svc", page.url());
  t.interval_s = 0.05;
  t.gpus = {0};
  Scraper scraper({t}, nullptr);
  scraper.Start();
  EXPECT_TRUE(testing::WaitFor([&] { return page.requests() >= 3; }, 30));
  scraper.Stop();
  MemoryAppender store;
  scraper.Drain(&store, TwoGpus());
  EXPECT_GE(store.Samples({{"__name__", "x"}}).size(), 3u);
  std::string metrics;
  scraper.RenderMetrics(expo::Format::kOpenMetrics, &metrics);
  EXPECT_NE(metrics.find("gpuwarden_scrape_up{target=\"svc\"} 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("# TYPE gpuwarden_scrape_errors counter\n"), std::string::npos);
  EXPECT_NE(metrics.find("gpu_service_info{target=\"svc\",gpu=\"0\",uuid=\"GPU-aaaa\"} 1\n"),
            std::string::npos)
      << metrics;
}

TEST(ScraperTest, StorelessScrapesOnlyUpdateHealth) {
  Page page;
  page.Set("x 1\n");
  Scraper scraper({Target("svc", page.url())}, nullptr);
  scraper.SetStoreless();
  for (int i = 0; i < 300; ++i) scraper.ScrapeDue(kT0 + i * 15'000);
  MemoryAppender store;
  EXPECT_EQ(scraper.Drain(&store, TwoGpus()), 0u);
  EXPECT_EQ(scraper.Health()[0].scrapes, 300u);
}

// Outputs: the selected series summed, reset-aware per series, from the first successful scrape.
TEST(ScraperTest, CountsOutputsResetAwareFromTheFirstScrape) {
  Page page;
  auto body = [](int ok, int failed, int other) {
    return "requests_total{code=\"200\"} " + std::to_string(ok) +
           "\nrequests_total{code=\"500\"} " + std::to_string(failed) + "\ntokens_total " +
           std::to_string(other) + "\n";
  };
  TargetConfig t = Target("llm", page.url());
  t.outputs = "requests_total{code=~\"2..\"}";
  t.output_matchers = {*tsdb::Matcher::Make(tsdb::MatchType::kEqual, "__name__", "requests_total"),
                       *tsdb::Matcher::Make(tsdb::MatchType::kRegexMatch, "code", "2.."),
                       *tsdb::Matcher::Make(tsdb::MatchType::kEqual, "target", "llm")};
  Scraper scraper({t}, nullptr);
  MemoryAppender store;
  double total = -1;
  EXPECT_FALSE(scraper.Outputs(0, &total));
  page.Set(body(100, 5, 9000));
  scraper.ScrapeDue(kT0);  // the baseline
  ASSERT_TRUE(scraper.Outputs(0, &total));
  EXPECT_EQ(total, 0);
  page.Set(body(160, 9, 9900));
  scraper.ScrapeDue(kT0 + 15'000);
  ASSERT_TRUE(scraper.Outputs(0, &total));
  EXPECT_EQ(total, 60);
  // A failed scrape counts nothing and keeps the total.
  page.Set("", 500);
  scraper.ScrapeDue(kT0 + 30'000);
  ASSERT_TRUE(scraper.Outputs(0, &total));
  EXPECT_EQ(total, 60);
  // The service restarted: its counter starts again from 0 and has reached 25.
  page.Set(body(25, 0, 10));
  scraper.ScrapeDue(kT0 + 45'000);
  ASSERT_TRUE(scraper.Outputs(0, &total));
  EXPECT_EQ(total, 85);
  // A new matching series counts from 0.
  page.Set(body(30, 0, 10) + "requests_total{code=\"201\"} 4\n");
  scraper.ScrapeDue(kT0 + 60'000);
  ASSERT_TRUE(scraper.Outputs(0, &total));
  EXPECT_EQ(total, 94);
  EXPECT_EQ(scraper.Health()[0].outputs_total, 94);
  EXPECT_GT(scraper.Drain(&store, TwoGpus()), 0u);
  // A target without outputs has none.
  Scraper plain({Target("chat", page.url())}, nullptr);
  plain.ScrapeDue(kT0);
  EXPECT_FALSE(plain.Outputs(0, &total));
  EXPECT_FALSE(plain.Outputs(5, &total));
}

// A target bound to a job (job_id) is scraped only while its job runs here: neither before nor
// after, and never "down" because the job ended (docs/jobs.md, "Training throughput").
TEST(ScraperTest, AJobBoundTargetLivesWithItsJob) {
  Page page;
  page.Set("training_samples_total 40\ntraining_gpus 2\n");
  TargetConfig t = Target("train-7", page.url());
  t.job_id = "train-7";
  t.outputs = "training_samples_total";
  t.output_matchers = {
      *tsdb::Matcher::Make(tsdb::MatchType::kEqual, "__name__", "training_samples_total")};
  Scraper scraper({t, Target("svc", page.url())}, nullptr);
  MemoryAppender store;
  auto up_line = [&scraper] {
    std::string m;
    scraper.RenderMetrics(expo::Format::kText, &m);
    return m.find("gpuwarden_scrape_up{target=\"train-7\"}") != std::string::npos;
  };
  // Before its job runs: only the other target is scraped.
  scraper.ScrapeDue(kT0);
  EXPECT_EQ(page.requests(), 1);
  EXPECT_TRUE(scraper.Health()[0].waiting_for_job);
  EXPECT_FALSE(scraper.Health()[0].scraped);
  EXPECT_FALSE(up_line());
  double total = -1;
  EXPECT_FALSE(scraper.Outputs(0, &total));

  // The job runs: scraped at once, its counter counted from 0 (it started with the job).
  scraper.SetJobRunning(0, true);
  scraper.ScrapeDue(kT0 + 1'000);
  EXPECT_EQ(page.requests(), 2);
  ASSERT_TRUE(scraper.Outputs(0, &total));
  EXPECT_EQ(total, 40);
  EXPECT_TRUE(up_line());
  // The process exits a moment before the agent learns that the job ended: one failed scrape.
  page.Set("", 503);
  scraper.ScrapeDue(kT0 + 16'000);
  EXPECT_FALSE(scraper.Health()[0].up);

  // The job ended: stale markers for everything of the target, no more scrapes, off /metrics,
  // and the count so far kept for the job's record.
  scraper.SetJobRunning(0, false);
  scraper.SetJobRunning(0, false);  // told again every cycle: nothing more happens
  const int before = page.requests();
  scraper.ScrapeDue(kT0 + 17'000);
  scraper.ScrapeDue(kT0 + 60'000);
  EXPECT_EQ(page.requests(), before + 1) << "only the other target is scraped again";
  EXPECT_GT(scraper.Drain(&store, TwoGpus()), 0u);
  for (const char* name :
       {"gpuwarden_scrape_up", "gpuwarden_scrape_duration_seconds", "gpuwarden_scrape_samples"}) {
    const auto samples = store.Samples({{"__name__", name}, {"target", "train-7"}});
    ASSERT_EQ(samples.size(), 3u) << name;
    EXPECT_TRUE(tsdb::IsStaleNaN(samples.back().v)) << name;
    EXPECT_EQ(samples.back().t_ms, kT0 + 17'000) << name;
  }
  const auto counter =
      store.Samples({{"__name__", "training_samples_total"}, {"target", "train-7"}});
  ASSERT_FALSE(counter.empty());
  EXPECT_TRUE(tsdb::IsStaleNaN(counter.back().v));
  EXPECT_FALSE(up_line());
  EXPECT_TRUE(scraper.Health()[0].waiting_for_job);
  ASSERT_TRUE(scraper.Outputs(0, &total));
  EXPECT_EQ(total, 40);
  // Stale markers are written once.
  scraper.ScrapeDue(kT0 + 120'000);
  scraper.Drain(&store, TwoGpus());
  EXPECT_EQ(store.Samples({{"__name__", "gpuwarden_scrape_up"}, {"target", "train-7"}}).size(), 3u);
}

// On the scrape thread: a job starting wakes it (scraped at once, not at the next interval); its
// end is noticed there too.
TEST(ScraperTest, TheThreadFollowsAJobStartingAndEnding) {
  Page page;
  page.Set("training_samples_total 1\n");
  TargetConfig t = Target("train-7", page.url());
  t.interval_s = 3600;
  t.job_id = "train-7";
  t.outputs = "training_samples_total";
  t.output_matchers = {
      *tsdb::Matcher::Make(tsdb::MatchType::kEqual, "__name__", "training_samples_total")};
  Scraper scraper({t}, nullptr);
  scraper.Start();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(page.requests(), 0);
  scraper.SetJobRunning(0, true);
  EXPECT_TRUE(testing::WaitFor([&] { return page.requests() == 1; }, 10));
  scraper.SetJobRunning(0, false);
  EXPECT_TRUE(testing::WaitFor([&] { return scraper.Health()[0].waiting_for_job; }, 10));
  scraper.Stop();
  MemoryAppender store;
  scraper.Drain(&store, TwoGpus());
  const auto up = store.Samples({{"__name__", "gpuwarden_scrape_up"}, {"target", "train-7"}});
  ASSERT_EQ(up.size(), 2u);
  EXPECT_EQ(up[0].v, 1);
  EXPECT_TRUE(tsdb::IsStaleNaN(up[1].v));
}

// Job endpoints found at run time take a slot after the configured targets: scraped while
// claimed, stale once released, the slot then free for the next job.
TEST(ScraperTest, JobTargetSlotsAreClaimedScrapedReleasedAndReused) {
  Page a, b;
  a.Set("# TYPE training_samples_total counter\ntraining_samples_total 10\n");
  b.Set("# TYPE training_tokens_total counter\ntraining_tokens_total 7\n");
  ScraperOptions options;
  options.job_target_slots = 1;
  Scraper scraper({}, nullptr, options);
  EXPECT_FALSE(scraper.empty());
  std::string m;
  scraper.RenderMetrics(expo::Format::kText, &m);
  EXPECT_EQ(m, "") << "no target, no claimed slot: no families";
  auto found = [](const std::string& name, const std::string& url) {
    TargetConfig t = Target(name, url);
    t.job_id = name.substr(4);
    t.outputs = "{__name__=~\"training_(samples|tokens|steps)_total\"}";
    t.output_matchers = {*tsdb::Matcher::Make(tsdb::MatchType::kRegexMatch, "__name__",
                                              "training_(samples|tokens|steps)_total")};
    return t;
  };
  const size_t slot = scraper.ClaimJobTarget(found("job:a", a.url()));
  ASSERT_EQ(slot, 0u);
  EXPECT_EQ(scraper.ClaimJobTarget(found("job:b", b.url())), Scraper::kNoSlot) << "one slot";
  MemoryAppender store;
  scraper.ScrapeDue(kT0);
  EXPECT_EQ(a.requests(), 1);
  double total = 0;
  ASSERT_TRUE(scraper.Outputs(slot, &total));
  EXPECT_EQ(total, 10) << "a job's counter counts from 0";
  EXPECT_NE(scraper.Descriptors()[slot].find("# TYPE training_samples_total counter"),
            std::string::npos);
  m.clear();
  scraper.RenderMetrics(expo::Format::kText, &m);
  EXPECT_NE(m.find("gpuwarden_scrape_up{target=\"job:a\"} 1"), std::string::npos) << m;

  scraper.ReleaseJobTarget(slot);
  EXPECT_EQ(scraper.ClaimJobTarget(found("job:b", b.url())), Scraper::kNoSlot)
      << "free only once its stale markers are drained";
  scraper.ScrapeDue(kT0 + 1'000);
  EXPECT_EQ(a.requests(), 1);
  scraper.Drain(&store, TwoGpus());
  const auto up = store.Samples({{"__name__", "gpuwarden_scrape_up"}, {"target", "job:a"}});
  ASSERT_EQ(up.size(), 2u);
  EXPECT_TRUE(tsdb::IsStaleNaN(up[1].v));
  EXPECT_TRUE(tsdb::IsStaleNaN(store.Samples({{"__name__", "training_samples_total"}}).back().v));
  m.clear();
  scraper.RenderMetrics(expo::Format::kText, &m);
  EXPECT_EQ(m.find("job:a"), std::string::npos) << m;

  // The slot again, for another job: a fresh target (its own series, its own count).
  ASSERT_EQ(scraper.ClaimJobTarget(found("job:b", b.url())), slot);
  scraper.ScrapeDue(kT0 + 2'000);
  EXPECT_EQ(b.requests(), 1);
  ASSERT_TRUE(scraper.Outputs(slot, &total));
  EXPECT_EQ(total, 7);
  scraper.Drain(&store, TwoGpus());
  const auto up_b = store.Samples({{"__name__", "gpuwarden_scrape_up"}, {"target", "job:b"}});
  ASSERT_EQ(up_b.size(), 1u);
  EXPECT_EQ(up_b[0].v, 1);
  EXPECT_EQ(store.Samples({{"__name__", "training_tokens_total"}, {"target", "job:b"}}).size(), 1u);
  // job:b ends (free once drained); job:c ends before its first scrape: free at once.
  scraper.ReleaseJobTarget(slot);
  scraper.ScrapeDue(kT0 + 3'000);
  scraper.Drain(&store, TwoGpus());
  const size_t again = scraper.ClaimJobTarget(found("job:c", a.url()));
  EXPECT_EQ(again, slot);
  scraper.ReleaseJobTarget(again);
  EXPECT_EQ(scraper.ClaimJobTarget(found("job:d", a.url())), slot);
}

}  // namespace
}  // namespace gw::scrape
