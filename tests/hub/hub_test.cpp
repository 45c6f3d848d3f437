// hub/: the store client's cache, the Querier over HTTP, query scoping and the documents the
// console reads, against a stand-in store (an http::Server answering canned Prometheus API
// replies and counting what it is asked). The real stores: tests/web/hub_browser_test.mjs.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
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
        std::unique_lock<std::mutex> lock(mu_);
        queries_.push_back(req.param("query"));
        max_in_flight_ = std::max(max_in_flight_, ++in_flight_);
        // With a gate: hold the first `gate_` requests until all of them have come (or 3 s
        // passed), so that they are in flight together; later ones pass.
        if (++arrived_ <= gate_) {
          gate_cv_.notify_all();
          gate_cv_.wait_for(lock, std::chrono::seconds(3), [this] { return arrived_ >= gate_; });
        }
      }
      if (delay_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(delay_s));
      {
        std::lock_guard<std::mutex> lock(mu_);
        --in_flight_;
      }
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
  ~FakeStore() { server_->Stop(); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }
  int requests() const { return requests_; }
  std::vector<std::string> queries() {
    std::lock_guard<std::mutex> lock(mu_);
    return queries_;
  }
  std::string match() const { return match_; }
  void set_gate(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    gate_ = n;
    arrived_ = 0;
  }
  int max_in_flight() {
    std::lock_guard<std::mutex> lock(mu_);
    return max_in_flight_;
  }

 private:
  std::function<json(const std::string&, const std::string&)> reply_;
  std::unique_ptr<http::Server> server_;
  std::atomic<int> requests_{0};
  std::mutex mu_;
  std::vector<std::string> queries_;
  std::string match_;
  std::condition_variable gate_cv_;
  int gate_ = 0, arrived_ = 0, in_flight_ = 0, max_in_flight_ = 0;
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

TEST(FanOutTest, RunsEveryTaskAtMostThreadsPlusTheCallerAtOnce) {
  FanOut pool(2);
  std::atomic<int> running{0}, most{0}, ran{0};
  std::vector<std::function<void()>> tasks;
  for (int i = 0; i < 9; ++i)
    tasks.push_back([&] {
      const int now = ++running;
      for (int m = most; now > m && !most.compare_exchange_weak(m, now);) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      --running;
      ++ran;
    });
  pool.Run(tasks);
  EXPECT_EQ(ran, 9);
  EXPECT_LE(most, 3);
  // The caller takes tasks too: a batch completes while both threads are held by another.
  std::mutex m;
  std::condition_variable cv;
  bool release = false;
  std::thread other([&] {
    pool.Run({[&] {
                std::unique_lock<std::mutex> lock(m);
                cv.wait(lock, [&] { return release; });
              },
              [&] {
                std::unique_lock<std::mutex> lock(m);
                cv.wait(lock, [&] { return release; });
              },
              [&] {
                std::unique_lock<std::mutex> lock(m);
                cv.wait(lock, [&] { return release; });
              }});
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the other batch holds all three
  ran = 0;
  pool.Run(tasks);  // on this thread alone
  EXPECT_EQ(ran, 9);
  {
    std::lock_guard<std::mutex> lock(m);
    release = true;
  }
  cv.notify_all();
  other.join();
}

TEST(StoreTest, VectorsRunAtOnceBoundedAndStillShareOneRequest) {
  FakeStore fake([](const std::string& q, const std::string&) {
    return Vector({{{{"q", q}}, 1}});
  });
  auto store = Store::Create({fake.url(), 10, 30});
  ASSERT_TRUE(store.ok());
  // Each request is held until six are in flight: serial queries would never get there.
  fake.set_gate(6);
  std::vector<std::string> exprs;
  for (int i = 0; i < 12; ++i) exprs.push_back("q" + std::to_string(i));
  auto answers = (*store)->Vectors(exprs);
  ASSERT_EQ(answers.size(), 12u);
  for (int i = 0; i < 12; ++i) {
    ASSERT_TRUE(answers[i].ok()) << answers[i].error().message;
    ASSERT_EQ(answers[i]->size(), 1u);
    EXPECT_EQ((*answers[i])[0].labels.at("q"), exprs[i]);  // in their order
  }
  EXPECT_EQ(fake.max_in_flight(), 6);  // at once, and never more than max_parallel
  EXPECT_EQ(fake.requests(), 12);
  // The same query six times in one batch, and again: one request (in flight, then cached).
  fake.set_gate(0);
  auto same = (*store)->Vectors(std::vector<std::string>(6, "gpu_up"));
  for (const auto& a : same) EXPECT_TRUE(a.ok());
  EXPECT_TRUE((*store)->Vector("gpu_up").ok());
  EXPECT_EQ(fake.requests(), 13);
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
  json teams = json::parse(TeamsJson(team, jobs, "instance"));
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

// The cost families as each node exports them (serve/governance_metrics.cpp).
Samples CostSeries(const std::string& node, const std::string& team, double allocation,
                   double energy, double idle, double allocated_s, double idle_s, double efficiency,
                   const std::string& currency) {
  auto s = [&](const std::string& name, double v, bool partition = true) {
    std::map<std::string, std::string> labels = {{"__name__", name}, {"instance", node}};
    if (!team.empty()) labels["team"] = team;
    if (partition) labels["partition"] = "gpu";
    return Store::Sample{labels, 0, v};
  };
  Samples out = {s("gpu_cost_allocation_total", allocation),
                 s("gpu_cost_energy_total", energy),
                 s("gpu_cost_idle_allocated_total", idle),
                 s("gpu_allocated_gpu_seconds_total", allocated_s),
                 s("gpu_idle_allocated_gpu_seconds_total", idle_s),
                 s("gpu_team_efficiency_ratio", efficiency, false),
                 s("gpu_team_allocated_gpus", 2, false)};
  out.push_back(
      {{{"__name__", "gpu_cost_info"}, {"instance", node}, {"currency", currency}}, 0, 1});
  return out;
}

TEST(ViewsTest, TeamCostIsTheNodesTotalsSummedWithTheirCurrency) {
  Samples series = CostSeries("n1", "research", 10, 2, 1, 7200, 3600, 0.5, "EUR");
  for (auto& x : CostSeries("n2", "research", 30, 4, 3, 3600, 0, 0.8, "EUR")) series.push_back(x);
  json jobs = json::array({{{"team", "research"}, {"gpu", {{"energy_j", 3.6e6}}}}});
  json doc = json::parse(TeamsJson(series, jobs, "instance"));
  const json& d = doc["data"];
  EXPECT_EQ(d["currency"], "EUR");
  EXPECT_EQ(d["cost_nodes"], 2);
  EXPECT_FALSE(d.contains("cost_unavailable"));
  ASSERT_EQ(d["teams"].size(), 1u);
  const json& c = d["teams"][0]["cost"];
  EXPECT_DOUBLE_EQ(c["allocation_cost"].get<double>(), 40);
  EXPECT_DOUBLE_EQ(c["energy_cost"].get<double>(), 6);
  EXPECT_DOUBLE_EQ(c["idle_allocated_cost"].get<double>(), 4);
  EXPECT_DOUBLE_EQ(c["total_cost"].get<double>(), 46);
  EXPECT_DOUBLE_EQ(c["allocated_gpu_hours"].get<double>(), 3);
  EXPECT_DOUBLE_EQ(c["idle_gpu_hours"].get<double>(), 1);
  EXPECT_DOUBLE_EQ(c["used_gpu_hours"].get<double>(), 1 + 0.8);  // 0.5 x 2 h + 0.8 x 1 h
  EXPECT_DOUBLE_EQ(c["efficiency"].get<double>(), 1.8 / 3);
  EXPECT_DOUBLE_EQ(c["energy_kwh"].get<double>(), 1);  // the team's jobs
  EXPECT_DOUBLE_EQ(d["teams"][0]["idle_ratio"].get<double>(), 1.0 / 3);
  EXPECT_EQ(d["teams"][0]["allocated_gpus"], 4);
  ASSERT_EQ(d["partitions"].size(), 1u);
  EXPECT_DOUBLE_EQ(d["partitions"][0]["cost"]["total_cost"].get<double>(), 46);

  // Another currency on one node: no sum across currencies, and the answer says why.
  for (auto& x : CostSeries("n3", "vision", 5, 0, 0, 3600, 0, 1, "USD")) series.push_back(x);
  json mixed = json::parse(TeamsJson(series, jobs, "instance"))["data"];
  EXPECT_TRUE(mixed["currency"].is_null());
  EXPECT_TRUE(mixed["teams"][0]["cost"]["total_cost"].is_null());
  EXPECT_EQ(mixed["cost_unavailable"],
            "the nodes price in different currencies (EUR on 2 nodes, USD on 1 node): the hub "
            "does not add them up");

  // No cost family in the store (governance off on the nodes): null, never 0, and why.
  Samples plain = {{{{"__name__", "gpu_team_allocated_gpus"}, {"team", "research"}}, 0, 2}};
  json none = json::parse(TeamsJson(plain, jobs, "instance"))["data"];
  EXPECT_TRUE(none["currency"].is_null());
  EXPECT_TRUE(none["teams"][0]["cost"]["allocation_cost"].is_null());
  EXPECT_TRUE(none["teams"][0]["cost"]["total_cost"].is_null());
  EXPECT_NE(none["cost_unavailable"].get<std::string>().find("no gpu_cost_* series"),
            std::string::npos);
}

TEST(ViewsTest, MergeJobsTakesEachNodesAgentElseTheStoreAndNamesTheSilentOnes) {
  json store = json::array({{{"job_id", "1"}, {"node", "n1"}, {"state", "RUNNING"}},
                            {{"job_id", "2"}, {"node", "n2"}, {"state", "RUNNING"}},
                            {{"job_id", "3"}, {"node", "n3"}, {"state", "RUNNING"}}});
  std::vector<AgentJobs> agents = {
      {"n1",
       true,
       {{"data",
         {{"jobs", json::array({{{"job_id", "1"}, {"state", "RUNNING"}, {"name", "train"}},
                                {{"job_id", "9"}, {"state", "COMPLETED"}, {"end_time", 100}},
                                {{"job_id", "8"}, {"state", "FAILED"}, {"end_time", 200}}})}}}},
       ""},
      {"n2", false, nullptr, "the agent of n2 at http://x did not answer: connection refused"}};
  json d = MergeJobs(store, agents);
  std::vector<std::string> order;
  for (const auto& j : d["jobs"])
    order.push_back(j["node"].get<std::string>() + "/" + j["job_id"].get<std::string>());
  // n1's from its agent (its record, not the store's), n2's and n3's from the store; running
  // first, finished newest first.
  EXPECT_EQ(order, (std::vector<std::string>{"n1/1", "n2/2", "n3/3", "n1/8", "n1/9"}));
  EXPECT_EQ(d["jobs"][0]["name"], "train");
  EXPECT_EQ(d["nodes_unreachable"], json::array({"n2"}));
  EXPECT_EQ(d["agent_errors"]["n2"],
            "the agent of n2 at http://x did not answer: connection refused");
}

TEST(HubTest, JobsAndTeamsOverTheStoreAndTheAgents) {
  // The store: one running job on node-01 and node-02 each, and node-01's team cost.
  FakeStore fake([](const std::string& q, const std::string&) {
    auto alloc = [](const std::string& node, const std::string& id) {
      return std::pair<json, double>{{{"__name__", "gpu_allocation_info"},
                                      {"instance", node},
                                      {"gpu", "0"},
                                      {"job_id", id},
                                      {"team", "research"}},
                                     1};
    };
    if (q == "gpu_allocation_info") return Vector({alloc("node-01", "5"), alloc("node-02", "6")});
    if (q.find("gpu_cost_info") != std::string::npos) {
      json result = json::array();
      for (const auto& s : CostSeries("node-01", "research", 12, 3, 2, 7200, 1800, 0.5, "EUR")) {
        json labels = s.labels;
        result.push_back({{"metric", labels}, {"value", {1700000000, std::to_string(s.value)}}});
      }
      return json{{"status", "success"}, {"data", {{"resultType", "vector"}, {"result", result}}}};
    }
    return Vector({});
  });
  // node-01's agent: its running job and a finished one; node-02's agent does not listen.
  auto agent = http::Server::Create({.listen_address = "127.0.0.1:0"}, nullptr);
  ASSERT_TRUE(agent.ok());
  (*agent)->Get("/api/gw/v1/jobs", [](const http::Request&, http::Response& res) {
    res.content_type = "application/json";
    res.body = json{{"status", "success"},
                    {"data",
                     {{"jobs", json::array({{{"job_id", "5"}, {"state", "RUNNING"}},
                                            {{"job_id", "4"},
                                             {"state", "COMPLETED"},
                                             {"team", "research"},
                                             {"end_time", 1700000000},
                                             {"gpu", {{"energy_j", 7.2e6}}}}})}}}}
                   .dump();
  });
  (*agent)->GetPrefix("/api/gw/v1/jobs/", [](const http::Request& req, http::Response& res) {
    res.content_type = "application/json";
    if (req.path != "/api/gw/v1/jobs/4") {
      res.status = 404;
      res.body = R"({"status":"error","errorType":"not_found","error":"no such job"})";
      return;
    }
    res.body = R"({"status":"success","data":{"job_id":"4","state":"COMPLETED","name":"old"}})";
  });
  (*agent)->Get("/healthz", [](const http::Request&, http::Response& res) { res.body = "ok\n"; });
  ASSERT_TRUE((*agent)->Start().ok());
  std::string dead;
  {
    auto s = http::Server::Create({.listen_address = "127.0.0.1:0"}, nullptr);
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE((*s)->Start().ok());
    dead = "127.0.0.1:" + std::to_string((*s)->port());
  }
  const auto path = std::filesystem::temp_directory_path() /
                    ("gw-hub-jobs-" + std::to_string(::getpid()) + ".yml");
  {
    std::ofstream f(path);
    f << "- targets: ['127.0.0.1:" << (*agent)->port() << "']\n  labels: {instance: node-01}\n"
      << "- targets: ['" << dead << "']\n  labels: {instance: node-02}\n";
  }
  HubOptions o;
  o.store_url = fake.url();
  o.agents_file = path;
  o.listen_address = "127.0.0.1:0";
  o.findings_interval_s = 3600;
  auto hub = Hub::Create(o, nullptr);
  ASSERT_TRUE(hub.ok()) << hub.error().message;
  ASSERT_TRUE((*hub)->Start().ok());
  const std::string base = "http://127.0.0.1:" + std::to_string((*hub)->port());
  auto get = [&](const std::string& p) {
    auto r = http::GetUrl(base + p, 10);
    EXPECT_TRUE(r.ok());
    return r.ok() ? std::make_pair(r->status, json::parse(r->body, nullptr, false))
                  : std::make_pair(0, json());
  };

  auto [status, jobs] = get("/api/gw/v1/jobs");
  ASSERT_EQ(status, 200) << jobs.dump();
  std::vector<std::string> listed;
  for (const auto& j : jobs["data"]["jobs"])
    listed.push_back(j.value("node", "") + "/" + j.value("job_id", "") + "/" +
                     j.value("state", ""));
  EXPECT_EQ(listed, (std::vector<std::string>{"node-01/5/RUNNING", "node-02/6/RUNNING",
                                              "node-01/4/COMPLETED"}));
  EXPECT_EQ(jobs["data"]["nodes_unreachable"], json::array({"node-02"}));
  EXPECT_NE(jobs["data"]["agent_errors"]["node-02"].get<std::string>().find("node-02"),
            std::string::npos);
  // The shared refresh (running=1) asks no agent; a bad `since` is refused before any.
  EXPECT_EQ(get("/api/gw/v1/jobs?running=1").second["data"]["jobs"].size(), 2u);
  EXPECT_EQ(get("/api/gw/v1/jobs?since=soon").first, 400);
  // A finished job is found on its node's agent without a node given.
  auto [one_status, one] = get("/api/gw/v1/jobs/4");
  EXPECT_EQ(one_status, 200);
  EXPECT_EQ(one["data"]["name"], "old");
  EXPECT_EQ(one["data"]["node"], "node-01");
  EXPECT_EQ(get("/api/gw/v1/jobs/77").first, 404);

  auto [teams_status, teams] = get("/api/gw/v1/teams");
  ASSERT_EQ(teams_status, 200) << teams.dump();
  EXPECT_EQ(teams["data"]["currency"], "EUR");
  ASSERT_EQ(teams["data"]["teams"].size(), 1u);
  EXPECT_DOUBLE_EQ(teams["data"]["teams"][0]["cost"]["total_cost"].get<double>(), 15);
  EXPECT_DOUBLE_EQ(teams["data"]["teams"][0]["cost"]["energy_kwh"].get<double>(), 2);
  EXPECT_EQ(teams["data"]["nodes_unreachable"], json::array({"node-02"}));
  (*hub)->Stop();
  std::filesystem::remove(path);
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
