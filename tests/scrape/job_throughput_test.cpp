// A job's throughput from its scraped progress counter (scrape/job_throughput.h), and the
// `job_id` key that binds a scrape target to a job.
#include <gtest/gtest.h>

#include "config/config.h"
#include "scrape/job_throughput.h"
#include "support/process.h"

namespace gw::scrape {
namespace {

TEST(JobThroughputTest, RateOverTheLastMinuteOfScrapes) {
  JobThroughput t;
  double per_s = -1;
  EXPECT_FALSE(t.Rate(0, &per_s));
  t.Observe(10'000, 500);
  EXPECT_FALSE(t.Rate(10'000, &per_s)) << "one scrape is no rate";
  t.Observe(10'000, 500);  // the same scrape seen again
  t.Observe(25'000, 2'000);
  ASSERT_TRUE(t.Rate(25'000, &per_s));
  EXPECT_DOUBLE_EQ(per_s, 100);
  // A minute at 100/s, then 30 s at 40/s: the minute ending at the newest scrape spans both.
  for (std::int64_t ms = 40'000; ms <= 85'000; ms += 15'000)
    t.Observe(ms, 2'000 + (ms - 25'000) / 10);
  for (std::int64_t ms = 100'000; ms <= 115'000; ms += 15'000)
    t.Observe(ms, 8'000 + (ms - 85'000) * 0.04);
  ASSERT_TRUE(t.Rate(115'000, &per_s));
  // from t = 55 s (5 000) to 115 s (9 200)
  EXPECT_DOUBLE_EQ(per_s, (9'200.0 - 5'000) / 60);
  EXPECT_DOUBLE_EQ(t.total(), 8'700);
  EXPECT_EQ(t.first_ms(), 10'000);
  EXPECT_EQ(t.last_ms(), 115'000);
  EXPECT_FALSE(t.Rate(200'000, &per_s)) << "the job stopped answering over a minute ago";
}

TEST(JobThroughputTest, AClockGoingBackStartsOver) {
  JobThroughput t;
  t.Observe(50'000, 100);
  t.Observe(60'000, 200);
  t.Observe(1'000, 7);
  double per_s = 0;
  EXPECT_FALSE(t.Rate(1'000, &per_s));
  EXPECT_EQ(t.total(), 0);
  t.Observe(3'000, 17);
  ASSERT_TRUE(t.Rate(3'000, &per_s));
  EXPECT_DOUBLE_EQ(per_s, 5);
}

TEST(JobThroughputTest, KeepsTheNewestCountsWhenFull) {
  JobThroughput t;
  for (std::int64_t i = 0; i < 1000; ++i) t.Observe(i * 100, static_cast<double>(i * 3));
  double per_s = 0;
  ASSERT_TRUE(t.Rate(99'900, &per_s));
  EXPECT_DOUBLE_EQ(per_s, 30);
  EXPECT_DOUBLE_EQ(t.total(), 2'997) << "the first count stays the baseline";
}

Status Load(const std::string& text, config::Config* config) {
  gw::testing::TempDir dir;
  gw::testing::WriteFile(dir / "gpuwarden.yaml", text);
  return config::LoadConfigFile(dir / "gpuwarden.yaml", config);
}

TEST(JobThroughputTest, JobIdBindsATargetToAJob) {
  config::Config c;
  ASSERT_TRUE(Load("scrape:\n  targets:\n"
                   "    - name: train\n      url: http://127.0.0.1:9400/metrics\n"
                   "      outputs: training_samples_total\n      output_unit: samples\n"
                   "      job_id: '4711'\n",
                   &c)
                  .ok());
  ASSERT_EQ(c.scrape.targets.size(), 1u);
  EXPECT_EQ(c.scrape.targets[0].job_id, "4711");
  Status s = Load(
      "scrape:\n  targets:\n"
      "    - name: train\n      url: http://127.0.0.1:9400/metrics\n"
      "      job_id: '4711'\n",
      &c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("job_id needs outputs"), std::string::npos) << s.message();
  s = Load(
      "scrape:\n  targets:\n"
      "    - name: train\n      url: http://127.0.0.1:9400/metrics\n"
      "      outputs: training_samples_total\n      job_id: ''\n",
      &c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("job_id: expected the job's id"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace gw::scrape
