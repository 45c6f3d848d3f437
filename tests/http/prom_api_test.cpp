#include "http/prom_api.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "test_util.h"

namespace gw::http {
namespace {

using nlohmann::json;

TEST(WriteApiErrorTest, WritesPrometheusErrorShape) {
  Response res;
  WriteApiError(res, 400, "bad_data", "x \"y\"\n");
  EXPECT_EQ(res.status, 400);
  EXPECT_EQ(res.content_type, "application/json");
  EXPECT_EQ(res.body, R"({"status":"error","errorType":"bad_data","error":"x \"y\"\n"})");
  const json doc = json::parse(res.body);
  EXPECT_EQ(doc["error"], "x \"y\"\n");
}

TEST(PromApiTest, AnInstantQueryWithoutTimeIsEvaluatedAtTheClocksTime) {
  Logger logger(LogLevel::kError, [](LogLevel, const std::string&) {});
  ServerOptions server_options;
  server_options.listen_address = "127.0.0.1:0";
  server_options.worker_threads = 2;
  auto server = Server::Create(server_options, &logger);
  ASSERT_TRUE(server.ok()) << server.error().message;
  ManualClock clock(1'700'000'000'500);
  PromApiOptions options;
  options.clock = &clock;
  RegisterPromApi(
      server->get(), [] { return std::make_unique<tsdb::MemoryQuerier>(); }, options);
  ASSERT_TRUE((*server)->Start().ok());

  httplib::Client client("127.0.0.1", (*server)->port());
  client.set_read_timeout(10);
  auto Time = [&client]() {
    auto res = client.Get("/api/v1/query?query=time()");
    EXPECT_TRUE(res) << "no answer";
    if (!res) return json();
    EXPECT_EQ(res->status, 200) << res->body;
    return json::parse(res->body)["data"]["result"];
  };
  EXPECT_EQ(Time(), json::parse(R"([1700000000.5, "1700000000.5"])"));
  clock.AdvanceMs(60'000);
  EXPECT_EQ(Time(), json::parse(R"([1700000060.5, "1700000060.5"])"));
  // An explicit time wins over the clock.
  auto res = client.Get("/api/v1/query?query=time()&time=42");
  ASSERT_TRUE(res);
  EXPECT_EQ(json::parse(res->body)["data"]["result"], json::parse(R"([42, "42"])"));
  (*server)->Stop();
}

}  // namespace
}  // namespace gw::http
