// hub/: the store client's cache, the Querier over HTTP, query scoping and the documents the
// console reads, against a stand-in store (an http::Server answering canned Prometheus API
// replies and counting what it is asked). The real stores: tests/web/hub_browser_test.mjs.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "http/server.h"
#include "hub/hub.h"
#include "hub/remote_querier.h"
#include "hub/store.h"
#include "hub/views.h"

namespace gw::hub {
namespace {

using nlohmann::json;

// A stand-in store: /api/v1/query answers `reply(query, time)`; counts requests.
class FakeStore {
 public:
  explicit FakeStore(std::function<json(const std::string&, const std::string&)> reply,
                     double delay_s = 0)
      : reply_(std::move(reply)) {
    auto server = http::Server::Create({.listen_address = "127.0.0.1:0"}, nullptr);
    EXPECT_TRUE(server.ok());
    server_ = std::move(*server);
    auto handler = [this, delay_s](const http::Request& req, http::Response& res) {
      ++requests_;
      {
        std::lock_guard<std::mutex> lock(mu_);
        queries_.push_back(req.param("query"));
      }
      if (delay_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(delay_s));
      res.content_type = "application/json";
      json j = reply_(req.param("query"), req.param("time"));
      if (j.contains("__status")) {
        res.status = j["__status"].get<int>();
        j.erase("__status");
      }
      res.body = j.dump();
    };
    server_->Get("/api/v1/query", handler);
    server_->Post("/api/v1/query", handler);
    server_->Get("/api/v1/label/gpu/values", [this](const http::Request& req, http::Response& res) {
      ++requests_;
      match_ = req.param("match[]");
      res.content_type = "application/json";
      res.body = R"({"status":"success","data":["1","0"]})";
    });
    EXPECT_TRUE(server_->Start().ok());
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }
  int requests() const { return requests_; }
  std::vector<std::string> queries() {
    std::lock_guard<std::mutex> lock(mu_);
    return queries_;
  }
  std::string match() const { return match_; }

 private:
  std::function<json(const std::string&, const std::string&)> reply_;
  std::unique_ptr<http::Server> server_;
  std::atomic<int> requests_{0};
  std::mutex mu_;
  std::vector<std::string> queries_;
  std::string match_;
};

json Vector(std::vector<std::pair<json, double>> series) {
  json result = json::array();
  for (auto& [labels, v] : series)
    result.push_back({{"metric", labels}, {"value", {1700000000.5, std::to_string(v)}}});
  return {{"status", "success"}, {"data", {{"resultType", "vector"}, {"result", result}}}};
}

TEST(ScopeQueryTest, AddsTheNodeToEverySelectorAndReplacesOne) {
  auto q = ScopeQuery(
      "sum by (gpu) (rate(gpu_energy_joules_total{gpu=\"1\"}[5m])) / on(gpu) "
      "gpu_power_watts{instance=\"other\"}",
      "instance", "node-07");
  ASSERT_TRUE(q.ok()) << q.error().message;
  EXPECT_EQ(*q,
            "sum by (gpu) (rate(gpu_energy_joules_total{gpu=\"1\",instance=\"node-07\"}[5m])) / "
            "on (gpu) gpu_power_watts{instance=\"node-07\"}");
  auto sub = ScopeQuery("max_over_time(up[10m:1m]) or vector(1)", "node", "a\"b");
  ASSERT_TRUE(sub.ok()) << sub.error().message;
  EXPECT_EQ(*sub, "max_over_time(up{node=\"a\\\"b\"}[10m:1m]) or vector(1)");
  auto bad = ScopeQuery("sum(", "instance", "x");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("parse error"), std::string::npos) << bad.error().message;
}

TEST(StoreTest, RefusesUrlsThatAreNotHttp) {
  EXPECT_FALSE(Store::Create({"vm:8428"}).ok());
  EXPECT_FALSE(Store::Create({"http://vm:8428/?x=1"}).ok());
  auto ok = Store::Create({"http://127.0.0.1:8428/"});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ((*ok)->url(), "http://127.0.0.1:8428");
}

TEST(StoreTest, ConcurrentSameQueriesAreOneRequestAndAnswersExpire) {
  FakeStore fake(
      [](const std::string&, const std::string&) {
        return Vector({{{{"a", "1"}}, 2}});
      },
      /*delay_s=*/0.3);
  auto store = Store::Create({fake.url(), 5, 0.5});
  ASSERT_TRUE(store.ok());
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int i = 0; i < 12; ++i)
    threads.emplace_back([&] {
      auto v = (*store)->Vector("gpu_up");
      if (v.ok() && v->size() == 1 && (*v)[0].value == 2 && (*v)[0].labels.at("a") == "1") ++good;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(good, 12);
  EXPECT_EQ(fake.requests(), 1);
  EXPECT_TRUE((*store)->Vector("gpu_up").ok());
  EXPECT_EQ(fake.requests(), 1);  // still fresh
  EXPECT_TRUE((*store)->Vector("other").ok());
  EXPECT_EQ(fake.requests(), 2);  // another query
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  EXPECT_TRUE((*store)->Vector("gpu_up").ok());
  EXPECT_EQ(fake.requests(), 3);  // expired
}

TEST(StoreTest, ErrorsNameTheStoreAndItsReason) {
  FakeStore fake([](const std::string&, const std::string&) {
    return json{{"__status", 400},
                {"status", "error"},
                {"errorType", "bad_data"},
                {"error", "unknown function foo"}};
  });
  auto store = Store::Create({fake.url()});
  ASSERT_TRUE(store.ok());
  auto refused = (*store)->Query("foo(x)");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("unknown function foo"), std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().message.find(fake.url()), std::string::npos);

  // Nothing listens: a port that was free a moment ago.
  std::string down_url;
  {
    auto s = http::Server::Create({.listen_address = "127.0.0.1:0"}, nullptr);
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE((*s)->Start().ok());
    down_url = "http://127.0.0.1:" + std::to_string((*s)->port());
  }
  auto down = Store::Create({down_url, 2, 1});
  ASSERT_TRUE(down.ok());
  auto r = (*down)->Query("gpu_up");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("the store at " + down_url + " did not answer"),
            std::string::npos)
      << r.error().message;
  EXPECT_EQ((*down)->LastError(), r.error().message);
}

TEST(RemoteQuerierTest, SelectSendsARangeSelectorAndKeepsTheWindow) {
  FakeStore fake([](const std::string& query, const std::string&) {
    json values = json::array();
    for (int t = 100; t <= 110; ++t) values.push_back({double(t), std::to_string(t * 2)});
    json result = json::array({
        {{"metric", {{"__name__", "gpu_up"}, {"gpu", "1"}, {"instance", "n2"}}},
         {"values", values}},
        {{"metric", {{"__name__", "gpu_up"}, {"gpu", "0"}, {"instance", "n2"}}},
         {"values", values}},
    });
    if (query.find("[") == std::string::npos) return json{{"status", "error"}};
    return json{{"status", "success"}, {"data", {{"resultType", "matrix"}, {"result", result}}}};
  });
  auto store = Store::Create({fake.url()});
  ASSERT_TRUE(store.ok());
  auto scope = tsdb::Matcher::Make(tsdb::MatchType::kEqual, "instance", "n2");
  ASSERT_TRUE(scope.ok());
  RemoteQuerier q(store->get(), {*scope});
  auto m = tsdb::Matcher::Make(tsdb::MatchType::kRegexMatch, "__name__", "gpu_up|x");
  ASSERT_TRUE(m.ok());
  std::vector<tsdb::SeriesData> out;
  ASSERT_TRUE(q.Select({*m}, 103000, 107000, &out).ok());
  ASSERT_EQ(fake.queries().size(), 1u);
  EXPECT_EQ(fake.queries()[0], "{__name__=~\"gpu_up|x\",instance=\"n2\"}[4001ms]");
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(tsdb::LabelValue(out[0].labels, "gpu"), "0");  // in label order
  ASSERT_EQ(out[0].samples.size(), 5u);                    // 103 .. 107
  EXPECT_EQ(out[0].samples.front().t_ms, 103000);
  EXPECT_EQ(out[0].samples.back().v, 214);

  std::vector<std::string> values;
  ASSERT_TRUE(q.LabelValues("gpu", {{*m}}, 0, 1000, &values).ok());
  EXPECT_EQ(values, (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(fake.match(), "{__name__=~\"gpu_up|x\",instance=\"n2\"}");
}

TEST(ViewsTest, NodeSnapshotKeysMetricsAsTheAgentDoes) {
  auto s = [](std::map<std::string, std::string> labels, double v) {
    labels["instance"] = "node-07";
    labels["job"] = "gpuwarden";
    labels["rack"] = "r2";
    return Store::Sample{labels, 1700000000, v};
  };
  Samples series = {
      s({{"__name__", "gpu_up"}, {"gpu", "1"}, {"uuid", "GPU-b"}}, 1),
      s({{"__name__", "gpu_up"}, {"gpu", "0"}, {"uuid", "GPU-a"}}, 0),
      s({{"__name__", "gpu_info"},
         {"gpu", "1"},
         {"uuid", "GPU-b"},
         {"name", "H100"},
         {"driver_version", "550.1"}},
        1),
      s({{"__name__", "gpu_utilization_ratio"}, {"gpu", "1"}, {"uuid", "GPU-b"}}, 0.5),
      s({{"__name__", "gpu_clock_event_active"},
         {"gpu", "1"},
         {"uuid", "GPU-b"},
         {"reason", "sw_power_cap"}},
        1),
      s({{"__name__", "gpu_xid_errors_total"}, {"gpu", "1"}, {"uuid", "GPU-b"}, {"xid", "79"}}, 2),
      s({{"__name__", "gpu_allocation_info"}, {"gpu", "1"}, {"uuid", "GPU-b"}, {"job_id", "7"}}, 1),
  };
  json agent = {{"gpus", json::array({{{"uuid", "GPU-b"},
                                       {"processes", json::array({{{"pid", 42}}})},
                                       {"health", json::array()}}})}};
  json snap = NodeSnapshot("node-07", series, agent, 1);
  EXPECT_EQ(snap["node"], "node-07");
  EXPECT_EQ(snap["driver_version"], "");  // GPU 0 has no gpu_info: the first GPU's is read
  ASSERT_EQ(snap["gpus"].size(), 2u);
  const json& g0 = snap["gpus"][0];
  EXPECT_EQ(g0["index"], 0);
  EXPECT_EQ(g0["lost"], true);
  EXPECT_EQ(g0["details"], "store");
  const json& g1 = snap["gpus"][1];
  EXPECT_EQ(g1["name"], "H100");
  EXPECT_EQ(g1["up"], true);
  EXPECT_EQ(g1["metrics"]["gpu_utilization_ratio"], 0.5);
  EXPECT_EQ(g1["metrics"]["gpu_clock_event_active{reason=\"sw_power_cap\"}"], 1);
  EXPECT_FALSE(g1["metrics"].contains("gpu_allocation_info"));
  EXPECT_EQ(g1["xid_counts"]["79"], 2);
  EXPECT_EQ(g1["processes"][0]["pid"], 42);
  EXPECT_EQ(g1["details"], "agent");
}

TEST(ViewsTest, JobsTeamsAndAlertsFromTheStore) {
  auto a = [](const std::string& node, const std::string& gpu, const std::string& job,
              const std::string& team) {
    return Store::Sample{{{"__name__", "gpu_allocation_info"},
                          {"instance", node},
                          {"gpu", gpu},
                          {"job_id", job},
                          {"team", team},
                          {"user", "u"}},
                         0,
                         1};
  };
  Samples alloc = {a("n1", "0", "10", "research"), a("n1", "1", "10", "research"),
                   a("n2", "0", "10", "vision")};  // the same id on another node: another job
  Samples figures = {{{{"__name__", "gpu_job_sm_utilization_ratio"},
                       {"instance", "n1"},
                       {"job_id", "10"},
                       {"stat", "avg"}},
                      0,
                      0.75}};
  json jobs = JobsFromStore(alloc, figures, "instance");
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0]["node"], "n1");
  EXPECT_EQ(jobs[0]["gpu"]["gpus"], json::array({0, 1}));
  EXPECT_EQ(jobs[0]["gpu"]["util_avg"], 0.75);
  EXPECT_TRUE(jobs[1]["gpu"]["util_avg"].is_null());

  Samples team = {{{{"__name__", "gpu_team_allocated_gpus"}, {"team", "research"}}, 0, 2},
                  {{{"__name__", "gpu_team_allocated_gpus"}, {"team", "research"}}, 0, 3},
                  {{{"__name__", "gpu_team_idle_gpus"}, {"team", "research"}}, 0, 1},
                  {{{"__name__", "gpu_team_quota_gpus"}, {"team", "research"}}, 0, 4}};
  json teams = json::parse(TeamsJson(team, jobs));
  ASSERT_EQ(teams["data"]["teams"].size(), 2u);  // research, and vision from its job
  EXPECT_EQ(teams["data"]["teams"][0]["allocated_gpus"], 5);
  EXPECT_EQ(teams["data"]["teams"][0]["idle_ratio"], 0.2);
  EXPECT_EQ(teams["data"]["teams"][0]["quota"]["gpus"], 4);
  EXPECT_EQ(teams["data"]["teams"][1]["team"], "vision");

  json alerts = json::parse(AlertsJson({{{{"__name__", "ALERTS"},
                                          {"alertname", "GpuFellOffBus"},
                                          {"alertstate", "firing"},
                                          {"instance", "n7"}},
                                         0,
                                         1}}));
  ASSERT_EQ(alerts["data"]["alerts"].size(), 1u);
  EXPECT_EQ(alerts["data"]["alerts"][0]["state"], "firing");
  EXPECT_EQ(alerts["data"]["alerts"][0]["labels"]["instance"], "n7");
  EXPECT_FALSE(alerts["data"]["alerts"][0]["labels"].contains("alertstate"));
}

TEST(AgentsFileTest, ReadsFileSdGroups) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("gw-hub-agents-" + std::to_string(::getpid()) + ".yml");
  {
    std::ofstream f(path);
    f << "- targets: ['127.0.0.1:9001']\n  labels: {instance: node-01, rack: r1}\n"
         "- targets: ['10.0.0.2:9966', 'https://10.0.0.3:9966']\n";
  }
  auto agents = ReadAgentsFile(path, "instance");
  ASSERT_TRUE(agents.ok()) << agents.error().message;
  EXPECT_EQ(agents->at("node-01"), "http://127.0.0.1:9001");
  EXPECT_EQ(agents->at("10.0.0.2:9966"), "http://10.0.0.2:9966");
  EXPECT_EQ(agents->at("https://10.0.0.3:9966"), "https://10.0.0.3:9966");
  {
    std::ofstream f(path);
    f << "targets: [a]\n";
  }
  auto bad = ReadAgentsFile(path, "instance");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("file_sd"), std::string::npos) << bad.error().message;
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace gw::hub
