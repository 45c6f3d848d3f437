// remote/client.h against the real receivers users run, started on loopback by the test:
// Prometheus 2.42 with --web.enable-remote-write-receiver and VictoriaMetrics 1.79 (Debian's
// packages). Every sample sent is stored (counted back per series through each one's query API,
// values and timestamps checked), and a batch a receiver refuses (Prometheus: out of order) is a
// kDrop with its reason, not a retry.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "remote/client.h"
#include "support/http_client.h"
#include "support/process.h"

namespace gw::remote {
namespace {

using gw::testing::FreePort;
using gw::testing::HttpGet;
using gw::testing::Process;
using gw::testing::TempDir;
using gw::testing::UrlEncode;
using gw::testing::WaitFor;

constexpr int kSeries = 3;
constexpr int kSamples = 600;  // 10 minutes at 1 s

std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double Value(int s, int i) {
  return 100 * s + std::sin(i / 10.0) * 50 + i * 0.001;
}

// Ten minutes of 1 s samples ending a minute ago, per series, sent in batches of 100 samples.
std::int64_t SendAll(Client* client, std::int64_t end_ms) {
  const std::int64_t start = end_ms - (kSamples - 1) * 1000;
  for (int from = 0; from < kSamples; from += 100) {
    std::vector<TimeSeries> batch(kSeries);
    for (int s = 0; s < kSeries; ++s) {
      batch[s].labels = {
          {"__name__", "gw_remote_test_watts"}, {"gpu", std::to_string(s)}, {"instance", "node-1"}};
      for (int i = from; i < from + 100; ++i)
        batch[s].samples.push_back({Value(s, i), start + i * 1000});
    }
    SendResult r = client->Send(batch);
    EXPECT_EQ(r.outcome, SendResult::kSent) << r.error;
  }
  return start;
}

nlohmann::json Query(int port, const std::string& promql, std::int64_t at_ms) {
  auto r = HttpGet(port, "/api/v1/query?query=" + UrlEncode(promql) +
                             "&time=" + std::to_string(static_cast<double>(at_ms) / 1000));
  if (r.status != 200) return nlohmann::json::array();
  return nlohmann::json::parse(r.body)["data"]["result"];
}

void ExpectEverySampleStored(int port, std::int64_t start_ms, std::int64_t end_ms) {
  // count_over_time over a window holding exactly the ten minutes sent.
  const std::string window = std::to_string((end_ms - start_ms) / 1000 + 1) + "s";
  nlohmann::json result;
  ASSERT_TRUE(WaitFor(
      [&] {
        result = Query(port, "count_over_time(gw_remote_test_watts[" + window + "])", end_ms);
        if (result.size() != kSeries) return false;
        for (const auto& r : result)
          if (std::stod(r["value"][1].get<std::string>()) != kSamples) return false;
        return true;
      },
      60))
      << result.dump();
  // Values and timestamps: a sample in the middle of each series, read back exactly.
  for (int s = 0; s < kSeries; ++s) {
    const int i = 321;
    auto v =
        Query(port, "gw_remote_test_watts{gpu=\"" + std::to_string(s) + "\"}", start_ms + i * 1000);
    ASSERT_EQ(v.size(), 1u) << v.dump();
    EXPECT_NEAR(std::stod(v[0]["value"][1].get<std::string>()), Value(s, i), 1e-9);
  }
}

TEST(RemotePeers, Prometheus242ReceiverStoresEverySampleAndRefusesOutOfOrder) {
  TempDir dir;
  const int port = FreePort();
  Process prom({"prometheus", "--config.file=/dev/null", "--web.enable-remote-write-receiver",
                "--storage.tsdb.path=" + (dir / "data"),
                "--web.listen-address=127.0.0.1:" + std::to_string(port)},
               dir / "prometheus.log");
  ASSERT_TRUE(WaitFor([&] { return HttpGet(port, "/-/ready").status == 200; }, 60))
      << prom.Output();
  auto client =
      Client::Create({.url = "http://127.0.0.1:" + std::to_string(port) + "/api/v1/write"});
  ASSERT_TRUE(client.ok()) << client.error().message;
  const std::int64_t end = NowMs() - 60'000;
  const std::int64_t start = SendAll(client->get(), end);
  ExpectEverySampleStored(port, start, end);

  // A sample older than the series' newest: Prometheus answers 400, and resending cannot help.
  std::vector<TimeSeries> late(1);
  late[0].labels = {{"__name__", "gw_remote_test_watts"}, {"gpu", "0"}, {"instance", "node-1"}};
  late[0].samples = {{1.0, start + 10'000}};
  SendResult r = (*client)->Send(late);
  EXPECT_EQ(r.outcome, SendResult::kDrop) << r.status << " " << r.error;
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.error.find("out of order"), std::string::npos) << r.error;
}

TEST(RemotePeers, VictoriaMetricsStoresEverySample) {
  TempDir dir;
  const int port = FreePort();
  Process vm(
      {"victoria-metrics", "-httpListenAddr=127.0.0.1:" + std::to_string(port),
       "-storageDataPath=" + (dir / "vm"), "-search.latencyOffset=0s", "-search.disableCache"},
      dir / "vm.log");
  ASSERT_TRUE(WaitFor([&] { return HttpGet(port, "/health").status == 200; }, 60)) << vm.Output();
  auto client =
      Client::Create({.url = "http://127.0.0.1:" + std::to_string(port) + "/api/v1/write"});
  ASSERT_TRUE(client.ok()) << client.error().message;
  const std::int64_t end = NowMs() - 60'000;
  const std::int64_t start = SendAll(client->get(), end);
  ExpectEverySampleStored(port, start, end);
}

}  // namespace
}  // namespace gw::remote
