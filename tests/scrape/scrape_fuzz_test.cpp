// Mutated scrape pages and scrape.targets configurations: every mutant is accepted or refused with
// a located error; the scraper never crashes and always reports the target's state.
#include <gtest/gtest.h>

#include <mutex>

#include "collect/recorder.h"
#include "config/config.h"
#include "http/server.h"
#include "scrape/scraper.h"
#include "support/mutate.h"
#include "support/process.h"

namespace gw::scrape {
namespace {

class CountingAppender : public tsdb::Appender {
 public:
  Expected<Ref> GetRef(const tsdb::Labels& labels) override {
    for (const tsdb::Label& l : labels) EXPECT_FALSE(l.name.empty());
    return refs++;
  }
  Status Append(Ref, int64_t, double) override {
    ++samples;
    return Status::Ok();
  }
  Status Commit() override { return Status::Ok(); }
  uint64_t refs = 0, samples = 0;
};

constexpr const char* kPage =
    "# HELP inference_requests_total Requests.\n"
    "# TYPE inference_requests_total counter\n"
    "inference_requests_total{code=\"200\",model=\"llama\\\"3\\\"\"} 1027\n"
    "inference_requests_total{code=\"503\"} 3 1700000000000\n"
    "# TYPE inference_request_duration_seconds histogram\n"
    "inference_request_duration_seconds_bucket{le=\"0.1\"} 900\n"
    "inference_request_duration_seconds_bucket{le=\"+Inf\"} 1030\n"
    "inference_request_duration_seconds_sum 51.5\n"
    "inference_request_duration_seconds_count 1030\n"
    "queue_depth{target=\"inner\"} NaN\n";

TEST(ScrapeFuzz, MutatedPagesAreScrapedOrRefused) {
  std::mutex mu;
  std::string body;
  auto server = http::Server::Create({.listen_address = "127.0.0.1:0"}, nullptr).value();
  server->Get("/metrics", [&](const http::Request&, http::Response& res) {
    std::lock_guard<std::mutex> lock(mu);
    res.body = body;
  });
  ASSERT_TRUE(server->Start().ok());
  TargetConfig t;
  t.name = "svc";
  t.url = "http://127.0.0.1:" + std::to_string(server->port()) + "/metrics";
  t.gpus = {0};
  t.outputs = "inference_requests_total";  // outputs counted from every mutant, never backwards
  t.output_matchers = {
      *tsdb::Matcher::Make(tsdb::MatchType::kEqual, "__name__", "inference_requests_total")};
  Scraper scraper({t}, nullptr);
  double outputs = 0;
  CountingAppender store;
  collect::Snapshot snapshot;
  testing::Mutator mutator(7);
  int refused = 0;
  for (int i = 0; i < 400; ++i) {
    {
      std::lock_guard<std::mutex> lock(mu);
      body = mutator.Mutate(kPage);
    }
    scraper.ScrapeDue(1'700'000'000'000 + i * 15'000);
    scraper.Drain(&store, snapshot);
    TargetHealth h = scraper.Health()[0];
    EXPECT_EQ(h.scrapes, static_cast<uint64_t>(i + 1));
    double now = 0;
    if (scraper.Outputs(0, &now)) {
      EXPECT_GE(now, outputs) << body;
      outputs = now;
    }
    if (!h.up) {
      ++refused;
      EXPECT_EQ(h.last_error.rfind(t.url + ":", 0), 0u) << h.last_error;
    }
  }
  EXPECT_GT(refused, 0);
  EXPECT_LT(refused, 400);
  EXPECT_GT(store.samples, 0u);
}

TEST(ScrapeFuzz, MutatedConfigsAreAcceptedOrRefusedWithTheLine) {
  const std::string config =
      "scrape:\n  targets:\n"
      "    - name: llm\n      url: http://127.0.0.1:8000/metrics\n      interval: 15s\n"
      "      timeout: 5s\n      gpus: [0, 1]\n"
      "      outputs: 'inference_requests_total{code=~\"2..\",model!=\"x\"}'\n"
      "      output_unit: request\n"
      "    - name: chat\n      url: https://chat:9000/metrics\n"
      "      basic_auth: {username: u, password_file: /etc/pw}\n";
  testing::TempDir dir;
  const std::string path = dir / "gpuwarden.yaml";
  testing::Mutator mutator(11);
  for (int i = 0; i < 400; ++i) {
    testing::WriteFile(path, mutator.Mutate(config));
    config::Config c;
    Status s = config::LoadConfigFile(path, &c);
    if (!s.ok()) {
      EXPECT_EQ(s.message().rfind(path + ":", 0), 0u) << s.message();
    }
  }
}

}  // namespace
}  // namespace gw::scrape
