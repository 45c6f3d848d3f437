// hub/: the store client's cache, the Querier over HTTP, query scoping and the documents the
// console reads, against a stand-in store (an http::Server answering canned Prometheus API
// replies and counting what it is asked). The hub's own alert rules and /metrics also over a real
// VictoriaMetrics 1.79 (HubOverVictoriaMetrics). The console over the real stores:
// tests/web/hub_browser_test.mjs.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "base/clock.h"
#include "http/server.h"
#include "hub/hub.h"
#include "hub/remote_querier.h"
#include "hub/rules_eval.h"
#include "hub/store.h"
#include "hub/views.h"
#include "support/metrics_doc.h"
#include "support/process.h"

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

// A started hub over the store at `store_url` and the agents of `agents_file` on a free loopback
// port, its fleet findings left for an hour; nullptr (the test has failed) when it does not start.
std::unique_ptr<Hub> StartHub(const std::string& store_url,
                              const std::filesystem::path& agents_file,
                              double last_known_jobs_s = 300) {
  HubOptions o;
  o.last_known_jobs_s = last_known_jobs_s;
  o.store_url = store_url;
  o.agents_file = agents_file;
  o.listen_address = "127.0.0.1:0";
  o.findings_interval_s = 3600;
  auto hub = Hub::Create(o, nullptr);
  if (!hub.ok()) {
    ADD_FAILURE() << hub.error().message;
    return nullptr;
  }
  if (Status s = (*hub)->Start(); !s.ok()) {
    ADD_FAILURE() << s.message();
    return nullptr;
  }
  return std::move(*hub);
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
    // (node-01's cost series: none for a query of node-02's alone)
    if (q.find("gpu_cost_info") != std::string::npos &&
        q.find("instance=\"node-02\"") == std::string::npos) {
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
  std::unique_ptr<Hub> hub = StartHub(fake.url(), path);
  ASSERT_TRUE(hub);
  const std::string base = "http://127.0.0.1:" + std::to_string(hub->port());
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
  // One node's teams: the store asked for its series alone, its jobs alone.
  auto [node_status, node_teams] = get("/api/gw/v1/teams?node=node-02");
  ASSERT_EQ(node_status, 200) << node_teams.dump();
  EXPECT_EQ(node_teams["data"]["teams"].size(), 0u) << node_teams.dump();  // no cost series there
  bool scoped = false;
  for (const std::string& q : fake.queries())
    scoped |= q.find("gpu_cost_info") != std::string::npos &&
              q.find("instance=\"node-02\"") != std::string::npos;
  EXPECT_TRUE(scoped);
  hub->Stop();
  std::filesystem::remove(path);
}

// A stopped agent's series end in the store at its next failed scrape (staleness markers): the
// store lists nothing for its node now, and the hub asks it for the node's jobs at the time the
// agent last answered — for the full list and for the console's refresh (running=1).
TEST(HubTest, AStoppedAgentsJobsAreTheStoresAtItsLastAnswer) {
  std::mutex mu;
  std::vector<std::string> asked_at;  // the time= of each query for node-02's allocations
  FakeStore fake([&](const std::string& q, const std::string& time) {
    if (q == "gpu_allocation_info{instance=\"node-02\"}") {
      std::lock_guard<std::mutex> lock(mu);
      asked_at.push_back(time);
      if (time.empty()) return Vector({});  // now: ended by the staleness marker
      return Vector({{{{"__name__", "gpu_allocation_info"},
                       {"instance", "node-02"},
                       {"gpu", "3"},
                       {"job_id", "6"},
                       {"team", "research"}},
                      1}});
    }
    return Vector({});  // the whole fleet now: nothing running anywhere
  });
  auto agent = http::Server::Create({.listen_address = "127.0.0.1:0"}, nullptr);
  ASSERT_TRUE(agent.ok());
  (*agent)->Get("/api/gw/v1/jobs", [](const http::Request&, http::Response& res) {
    res.content_type = "application/json";
    res.body = R"({"status":"success","data":{"jobs":[{"job_id":"6","state":"RUNNING"}]}})";
  });
  (*agent)->Get("/healthz", [](const http::Request&, http::Response& res) { res.body = "ok\n"; });
  ASSERT_TRUE((*agent)->Start().ok());
  const auto path = std::filesystem::temp_directory_path() /
                    ("gw-hub-lastknown-" + std::to_string(::getpid()) + ".yml");
  {
    std::ofstream f(path);
    f << "- targets: ['127.0.0.1:" << (*agent)->port() << "']\n  labels: {instance: node-02}\n";
  }
  // Last known jobs for 5 s after the agent's last answer (300 by default).
  std::unique_ptr<Hub> hub = StartHub(fake.url(), path, 5);
  ASSERT_TRUE(hub);
  const std::string base = "http://127.0.0.1:" + std::to_string(hub->port());
  auto jobs = [&] {
    auto r = http::GetUrl(base + "/api/gw/v1/jobs", 10);
    EXPECT_TRUE(r.ok() && r->status == 200);
    return r.ok() ? json::parse(r->body, nullptr, false)["data"] : json();
  };

  // The agent answers: its record, and the store is not asked about the node's past.
  json up = jobs();
  ASSERT_EQ(up["jobs"].size(), 1u) << up.dump();
  EXPECT_FALSE(up["jobs"][0].contains("source"));
  const double before_stop = SystemClock().NowSeconds();
  (*agent)->Stop();
  // The hub's own /healthz probes may still reach the agent until Stop returns, and the hub
  // notes the time when it has read the answer, a moment later (under load up to tens of ms after
  // Stop returned: this failed 1 in 4 against before_stop, then 1 in ~10 against Stop's return).
  // What matters is that as_of is that last answer, not the time of the request 2 s later.
  const double stopped = SystemClock().NowSeconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));  // past the agent cache

  json down = jobs();
  EXPECT_EQ(down["nodes_unreachable"], json::array({"node-02"}));
  ASSERT_EQ(down["jobs"].size(), 1u) << down.dump();
  const json& j = down["jobs"][0];
  EXPECT_EQ(j["job_id"], "6");
  EXPECT_EQ(j["node"], "node-02");
  EXPECT_EQ(j["source"], "store");
  EXPECT_EQ(j["state"], "RUNNING");
  ASSERT_TRUE(j["as_of"].is_number()) << j.dump();
  EXPECT_LE(j["as_of"].get<double>(), stopped + 1)  // not the time of this request, 2 s later
      << std::fixed << j["as_of"].get<double>() - stopped << " s after Stop returned";
  EXPECT_GT(j["as_of"].get<double>(), before_stop - 60);
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_FALSE(asked_at.empty());
    EXPECT_NEAR(std::stod(asked_at.back()), j["as_of"].get<double>(), 0.001);
  }
  // The console's shared refresh asks no agent, but the agent was found silent: the same.
  auto r = http::GetUrl(base + "/api/gw/v1/jobs?running=1", 10);
  ASSERT_TRUE(r.ok());
  json refreshed = json::parse(r->body)["data"]["jobs"];
  ASSERT_EQ(refreshed.size(), 1u) << r->body;
  EXPECT_EQ(refreshed[0]["as_of"], j["as_of"]);
  // A team filter keeps only that team's last known jobs.
  r = http::GetUrl(base + "/api/gw/v1/jobs?running=1&team=vision", 10);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(json::parse(r->body)["data"]["jobs"].size(), 0u) << r->body;
  // Past last_known_jobs_s the node is named silent and lists no job.
  std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  json later = jobs();
  EXPECT_EQ(later["nodes_unreachable"], json::array({"node-02"}));
  EXPECT_EQ(later["jobs"].size(), 0u) << later.dump();
  hub->Stop();
  std::filesystem::remove(path);
}

// Three nodes whose agents stop together (a rack losing power): their last known jobs are read
// from the store in one round, the three nodes' queries in flight at once (each held until the
// other two have come, at most 3 s, so that read one after another they are not).
TEST(HubTest, SilentNodesLastKnownJobsAreReadTogether) {
  const std::vector<std::string> nodes = {"node-02", "node-03", "node-04"};
  std::mutex mu;
  std::condition_variable cv;
  int past_queries = 0;
  bool together = true;
  FakeStore fake([&](const std::string& q, const std::string& time) {
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (q != "gpu_allocation_info{instance=\"" + nodes[i] + "\"}" || time.empty()) continue;
      {
        std::unique_lock<std::mutex> lock(mu);
        ++past_queries;
        cv.notify_all();
        if (!cv.wait_for(lock, std::chrono::seconds(3), [&] { return past_queries >= 3; }))
          together = false;
      }
      return Vector({{{{"__name__", "gpu_allocation_info"},
                       {"instance", nodes[i]},
                       {"gpu", "0"},
                       {"job_id", std::to_string(10 + i)},
                       {"team", "research"}},
                      1}});
    }
    return Vector({});  // now: nothing running anywhere
  });
  std::vector<std::unique_ptr<http::Server>> agents;
  const auto path = std::filesystem::temp_directory_path() /
                    ("gw-hub-rack-" + std::to_string(::getpid()) + ".yml");
  {
    std::ofstream f(path);
    for (const std::string& n : nodes) {
      auto agent = http::Server::Create({.listen_address = "127.0.0.1:0"}, nullptr);
      ASSERT_TRUE(agent.ok());
      (*agent)->Get("/api/gw/v1/jobs", [](const http::Request&, http::Response& res) {
        res.content_type = "application/json";
        res.body = R"({"status":"success","data":{"jobs":[]}})";
      });
      (*agent)->Get("/healthz",
                    [](const http::Request&, http::Response& res) { res.body = "ok\n"; });
      ASSERT_TRUE((*agent)->Start().ok());
      f << "- targets: ['127.0.0.1:" << (*agent)->port() << "']\n  labels: {instance: " << n
        << "}\n";
      agents.push_back(std::move(*agent));
    }
  }
  std::unique_ptr<Hub> hub = StartHub(fake.url(), path);
  ASSERT_TRUE(hub);
  const std::string base = "http://127.0.0.1:" + std::to_string(hub->port());
  ASSERT_TRUE(http::GetUrl(base + "/api/gw/v1/jobs", 10).ok());  // every agent answers
  for (auto& a : agents) a->Stop();
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));  // past the agent cache
  auto r = http::GetUrl(base + "/api/gw/v1/jobs", 20);
  ASSERT_TRUE(r.ok() && r->status == 200);
  const json data = json::parse(r->body)["data"];
  EXPECT_EQ(data["nodes_unreachable"].size(), 3u) << data.dump();
  std::set<std::string> ids;
  for (const json& j : data["jobs"]) {
    EXPECT_TRUE(j["as_of"].is_number()) << j.dump();
    ids.insert(j.value("job_id", ""));
  }
  EXPECT_EQ(ids, (std::set<std::string>{"10", "11", "12"})) << data.dump();
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(past_queries, 3);
    EXPECT_TRUE(together) << "the silent nodes' store queries were not in flight at once";
  }
  hub->Stop();
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

// --- the hub's own rules (rules_eval.h) ---

constexpr const char* kRuleFile = R"(groups:
  - name: faults
    interval: 10s
    rules:
      - alert: EccHeld
        expr: gpu_ecc_errors_total{type="uncorrected"} > 0
        for: 20s
        labels: {severity: critical}
        annotations:
          summary: 'GPU {{ $labels.gpu }} of {{ $labels.instance }}: {{ $value }} error(s)'
      - record: node:ecc:sum
        expr: sum by (instance) (gpu_ecc_errors_total)
)";

std::string WriteTemp(const gw::testing::TempDir& dir, const std::string& name,
                      const std::string& text) {
  gw::testing::WriteFile(dir / name, text);
  return dir / name;
}

const json* FindRule(const json& rules, const std::string& name) {
  for (const json& g : rules["groups"])
    for (const json& r : g["rules"])
      if (r["name"] == name) return &r;
  return nullptr;
}

TEST(HubRulesTest, EvaluatesEachRuleAsOneStoreQueryPendingThenFiringAndKeepsStateWhenItFails) {
  std::atomic<bool> down{false};
  std::mutex mu;
  std::vector<std::pair<std::string, std::string>> asked;  // query, time
  FakeStore store([&](const std::string& q, const std::string& time) -> json {
    {
      std::lock_guard<std::mutex> lock(mu);
      asked.emplace_back(q, time);
    }
    if (down) return {{"__status", 503}, {"status", "error"}, {"error", "storage is read-only"}};
    if (q.starts_with("sum by"))
      return {{"status", "success"}, {"data", {{"resultType", "scalar"}, {"result", {1, "2"}}}}};
    return Vector({{{{"__name__", "gpu_ecc_errors_total"},
                     {"instance", "node-07"},
                     {"gpu", "2"},
                     {"type", "uncorrected"}},
                    3}});
  });
  auto client = Store::Create({store.url(), 2, 1.5});
  ASSERT_TRUE(client.ok());
  gw::testing::TempDir dir;
  auto bad = RuleEvaluator::Create({{WriteTemp(dir, "bad.yml",
                                               "groups: [{name: x, rules: "
                                               "[{alert: A, expr: 'sum('}]}]\n")}},
                                   client->get(), nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("--rules: "), std::string::npos) << bad.error().message;
  auto none = RuleEvaluator::Create({{dir / "nothing-*.yml"}}, client->get(), nullptr);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("matches no file"), std::string::npos)
      << none.error().message;

  auto rules = RuleEvaluator::Create({{WriteTemp(dir, "rules.yml", kRuleFile)}, 15, "instance"},
                                     client->get(), nullptr);
  ASSERT_TRUE(rules.ok()) << rules.error().message;
  RuleEvaluator& r = **rules;
  const int64_t t0 = 1'800'000'000'000;
  auto state = [&] {
    json a = r.AlertsApi("")["alerts"];
    return a.size() == 1 ? a[0]["state"].get<std::string>() : "none:" + a.dump();
  };
  r.EvalDue(t0);
  EXPECT_EQ(state(), "pending");
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(asked.size(), 2u);  // one query per rule, at the evaluation's time
    EXPECT_EQ(asked[0].first, "gpu_ecc_errors_total{type=\"uncorrected\"} > 0");
    EXPECT_EQ(asked[1].first, "sum by (instance) (gpu_ecc_errors_total)");
    EXPECT_NEAR(std::stod(asked[0].second), double(t0) / 1000, 10.0);
  }
  r.EvalDue(t0 + 10'000);
  EXPECT_EQ(state(), "pending");
  r.EvalDue(t0 + 20'000);
  EXPECT_EQ(state(), "firing");
  json alert = r.AlertsApi("node-07")["alerts"][0];
  EXPECT_EQ(alert["labels"], json({{"alertname", "EccHeld"},
                                   {"gpu", "2"},
                                   {"instance", "node-07"},
                                   {"severity", "critical"},
                                   {"type", "uncorrected"}}));
  EXPECT_EQ(alert["annotations"]["summary"], "GPU 2 of node-07: 3 error(s)");
  EXPECT_EQ(r.AlertsApi("node-03")["alerts"].size(), 0u);
  EXPECT_EQ(r.FiringByNode()["node-07"]["critical"], 1);
  json scoped = r.RulesApi("", "node-03");
  ASSERT_NE(FindRule(scoped, "EccHeld"), nullptr);
  EXPECT_EQ((*FindRule(scoped, "EccHeld"))["state"], "inactive");
  EXPECT_EQ((*FindRule(r.RulesApi("alert", "node-07"), "EccHeld"))["state"], "firing");
  EXPECT_EQ(FindRule(r.RulesApi("alert", ""), "node:ecc:sum"), nullptr);
  EXPECT_TRUE(r.RulesApi("bogus", "").is_null());

  // The store fails: both rules unhealthy with the store's words, the alert still firing.
  down = true;
  r.EvalDue(t0 + 30'000);
  json all = r.RulesApi("", "");
  for (const char* name : {"EccHeld", "node:ecc:sum"}) {
    const json* rule = FindRule(all, name);
    ASSERT_NE(rule, nullptr) << name;
    EXPECT_EQ((*rule)["health"], "err") << name;
    EXPECT_NE((*rule)["lastError"].get<std::string>().find("storage is read-only"),
              std::string::npos)
        << (*rule)["lastError"];
  }
  EXPECT_EQ(state(), "firing");
  EXPECT_EQ(r.stats().evaluation_failures, 2u);
  down = false;
  r.EvalDue(t0 + 40'000);
  EXPECT_EQ((*FindRule(r.RulesApi("", ""), "EccHeld"))["health"], "ok");
  EXPECT_EQ(state(), "firing");
}

TEST(HubRulesTest, SendsItsFiringAlertsToTheAlertmanager) {
  FakeStore store([](const std::string&, const std::string&) {
    return Vector(
        {{{{"__name__", "gpu_ecc_errors_total"}, {"instance", "node-07"}, {"gpu", "2"}}, 1}});
  });
  std::mutex mu;
  std::string received;
  auto am = http::Server::Create({.listen_address = "127.0.0.1:0"}, nullptr);
  ASSERT_TRUE(am.ok());
  (*am)->Post("/api/v2/alerts", [&](const http::Request& req, http::Response&) {
    std::lock_guard<std::mutex> lock(mu);
    received += req.body;
  });
  ASSERT_TRUE((*am)->Start().ok());
  auto client = Store::Create({store.url(), 2, 1.5});
  ASSERT_TRUE(client.ok());
  gw::testing::TempDir dir;
  const std::string am_url = "http://127.0.0.1:" + std::to_string((*am)->port());
  auto rules = RuleEvaluator::Create(
      {{WriteTemp(dir, "rules.yml", kRuleFile)}, 15, "instance", {am_url}}, client->get(), nullptr);
  ASSERT_TRUE(rules.ok()) << rules.error().message;
  const int64_t t0 = 1'800'000'000'000;
  (*rules)->EvalDue(t0);  // pending: nothing is sent
  (*rules)->EvalDue(t0 + 10'000);
  (*rules)->EvalDue(t0 + 20'000);  // firing
  ASSERT_TRUE(gw::testing::WaitFor(
      [&] {
        std::lock_guard<std::mutex> lock(mu);
        return !received.empty();
      },
      20));
  std::lock_guard<std::mutex> lock(mu);
  json body = json::parse(received);
  ASSERT_EQ(body.size(), 1u) << received;
  EXPECT_EQ(body[0]["labels"]["alertname"], "EccHeld");
  EXPECT_EQ(body[0]["labels"]["instance"], "node-07");
  EXPECT_EQ(body[0]["annotations"]["summary"], "GPU 2 of node-07: 1 error(s)");
  ASSERT_TRUE((*rules)->notify_stats().has_value());
  (*rules)->Stop();
}

TEST(HubRulesTest, SeriesFromStoreDataTakesVectorsAndScalarsOnly) {
  auto v = SeriesFromStoreData(json::parse(
      R"({"resultType":"vector","result":[{"metric":{"z":"1","a":"2"},"value":[1700000000.25,"4.5"]}]})"));
  ASSERT_TRUE(v.ok()) << v.error().message;
  ASSERT_EQ(v->size(), 1u);
  EXPECT_EQ((*v)[0].labels, (tsdb::Labels{{"a", "2"}, {"z", "1"}}));
  EXPECT_EQ((*v)[0].points[0].t_ms, 1700000000250);
  EXPECT_EQ((*v)[0].points[0].v, 4.5);
  auto m = SeriesFromStoreData(json::parse(R"({"resultType":"matrix","result":[]})"));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().message, "rule result is not a vector or scalar");
}

// --- over a real VictoriaMetrics: the rule pack, a fault on node-07, the store going down,
// the hub's /metrics ---

class VictoriaMetrics {
 public:
  VictoriaMetrics(const std::string& dir, int port) : dir_(dir), port_(port) { Start(); }
  void Start() {
    process_ = std::make_unique<gw::testing::Process>(
        std::vector<std::string>{"victoria-metrics", "-storageDataPath=" + dir_ + "/vm",
                                 "-httpListenAddr=127.0.0.1:" + std::to_string(port_),
                                 "-search.latencyOffset=1s", "-search.disableCache",
                                 "-loggerLevel=ERROR"},
        dir_ + "/vm.log");
  }
  void Stop() { process_->Stop(); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string Log() const { return process_->Output(); }

 private:
  std::string dir_;
  int port_;
  std::unique_ptr<gw::testing::Process> process_;
};

json GetJson(const std::string& url) {
  auto r = http::GetUrl(url, 10);
  if (!r.ok()) return {{"error", r.error().message}};
  return json::parse(r->body, nullptr, false);
}

TEST(HubOverVictoriaMetrics, RulePackFiresTheNodesFaultSurvivesTheStoreDownAndCountsOnMetrics) {
  if (::access("/usr/bin/victoria-metrics", X_OK) != 0)
    GTEST_SKIP() << "/usr/bin/victoria-metrics missing";
  gw::testing::TempDir dir;
  VictoriaMetrics vm(dir.path(), gw::testing::FreePort());
  ASSERT_TRUE(gw::testing::WaitFor([&] { return http::GetUrl(vm.url() + "/health", 2).ok(); }, 30))
      << vm.Log();
  // 16 nodes, one GPU each; node-07's GPU 2 has an uncorrectable ECC error.
  std::string lines;
  for (int n = 1; n <= 16; ++n) {
    char node[16];
    std::snprintf(node, sizeof node, "node-%02d", n);
    const std::string gpu = n == 7 ? "2" : "0";
    lines += "gpu_up{instance=\"" + std::string(node) + "\",gpu=\"" + gpu + "\"} 1\n";
    lines += "gpu_ecc_errors_total{instance=\"" + std::string(node) + "\",gpu=\"" + gpu +
             "\",uuid=\"GPU-" + node + "\",type=\"uncorrected\",scope=\"volatile\"} " +
             (n == 7 ? "1" : "0") + "\n";
  }
  auto importer = http::PostClient::Create(vm.url() + "/api/v1/import/prometheus", {});
  ASSERT_TRUE(importer.ok());
  auto imported = (*importer)->Post(lines, "text/plain");
  ASSERT_TRUE(imported.ok() && imported->status == 204) << (imported.ok() ? imported->body : "");
  (void)http::GetUrl(vm.url() + "/internal/force_flush", 5);  // searchable now, not in seconds
  ASSERT_TRUE(gw::testing::WaitFor(
      [&] {
        json r = GetJson(vm.url() + "/api/v1/query?query=count(gpu_up)");
        return r.contains("data") && !r["data"]["result"].empty();
      },
      30));

  const std::string held = WriteTemp(dir, "held.yml", R"(groups:
  - name: held
    interval: 1s
    rules:
      - alert: EccHeldOnNode
        expr: gpu_ecc_errors_total{type="uncorrected", scope="volatile"} > 0
        for: 3s
        labels: {severity: warning}
)");
  HubOptions o;
  o.store_url = vm.url();
  o.listen_address = "127.0.0.1:0";
  o.cache_ttl_s = 0.5;
  o.store_timeout_s = 2;
  o.findings_interval_s = 3600;
  o.rules_files = {std::string(GW_SOURCE_DIR) + "/deploy/rules/*.yml", held};
  o.rules_interval_s = 2;
  o.version = "test";
  auto hub = Hub::Create(o, nullptr);
  ASSERT_TRUE(hub.ok()) << hub.error().message;
  ASSERT_TRUE((*hub)->Start().ok());
  const std::string base = "http://127.0.0.1:" + std::to_string((*hub)->port());
  int alert_requests = 0;
  auto alerts = [&](const std::string& query = "") {
    ++alert_requests;
    json r = GetJson(base + "/api/v1/alerts" + query);
    return r.contains("data") ? r["data"]["alerts"] : json::array();
  };
  auto find = [](const json& list, const std::string& name) -> json {
    for (const json& a : list)
      if (a["labels"]["alertname"] == name) return a;
    return nullptr;
  };
  // Pending first (for: 3s), then firing; with node-07's label.
  bool seen_pending = false;
  json firing;
  ASSERT_TRUE(gw::testing::WaitFor(
      [&] {
        json a = find(alerts(), "EccHeldOnNode");
        if (a.is_object() && a["state"] == "pending") seen_pending = true;
        if (a.is_object() && a["state"] == "firing") firing = a;
        return firing.is_object();
      },
      30));
  EXPECT_TRUE(seen_pending) << "EccHeldOnNode fired without being pending first";
  EXPECT_EQ(firing["labels"]["instance"], "node-07");
  EXPECT_EQ(firing["labels"]["gpu"], "2");
  json pack = find(alerts("?node=node-07"), "GpuUncorrectableEccError");
  ASSERT_TRUE(pack.is_object());
  EXPECT_EQ(pack["state"], "firing");
  EXPECT_EQ(pack["labels"]["instance"], "node-07");
  EXPECT_EQ(pack["annotations"]["summary"], "GPU 2 has uncorrectable ECC errors");
  EXPECT_EQ(alerts("?node=node-03"), json::array());
  // Every rule of the pack evaluated over VictoriaMetrics without an error.
  json rules = GetJson(base + "/api/v1/rules");
  ASSERT_TRUE(rules.contains("data")) << rules.dump();
  size_t count = 0;
  double cycle_s = 0;  // for docs/benchmarks.md: the pack's cost per evaluation cycle
  for (const json& g : rules["data"]["groups"]) {
    cycle_s += g["evaluationTime"].get<double>();
    for (const json& r : g["rules"]) {
      ++count;
      EXPECT_NE(r["health"], "err") << g["name"] << "/" << r["name"] << ": " << r["lastError"];
    }
  }
  EXPECT_GT(count, 60u);
  std::printf("# the rule pack (%zu rules) over VictoriaMetrics at 16 nodes: %.1f ms per cycle\n",
              count, cycle_s * 1000);
  EXPECT_EQ(GetJson(base + "/api/v1/rules?type=x")["errorType"], "bad_data");

  // The store goes down: the rules say so, the alerts keep their state, the hub keeps serving.
  vm.Stop();
  auto held_rule = [&] {
    json r = GetJson(base + "/api/v1/rules?type=alert&node=node-07");
    const json* rule = r.contains("data") ? FindRule(r["data"], "EccHeldOnNode") : nullptr;
    return rule ? *rule : json();
  };
  ASSERT_TRUE(gw::testing::WaitFor([&] { return held_rule().value("health", "") == "err"; }, 30));
  EXPECT_NE(held_rule()["lastError"].get<std::string>().find("did not answer"), std::string::npos)
      << held_rule().dump();
  EXPECT_EQ(find(alerts(), "EccHeldOnNode")["state"], "firing");
  EXPECT_TRUE(http::GetUrl(base + "/healthz", 5).ok());
  vm.Start();
  ASSERT_TRUE(gw::testing::WaitFor([&] { return held_rule().value("health", "") == "ok"; }, 30))
      << held_rule().dump() << vm.Log();
  EXPECT_EQ(find(alerts(), "EccHeldOnNode")["state"], "firing");

  // /metrics: promtool accepts it, every family docs/metrics.md lists for the hub is there, and
  // it counted the requests above.
  auto page = http::GetUrl(base + "/metrics", 5);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->status, 200);
  const std::string text = page->body;
  gw::testing::WriteFile(dir / "metrics.txt", text);
  if (::access("/usr/bin/promtool", X_OK) == 0) {
    std::string out;
    EXPECT_EQ(gw::testing::RunCommand({"/usr/bin/promtool", "check", "metrics"}, &out, 60,
                                      dir / "metrics.txt"),
              0)
        << out << text;
  }
  const auto documented = gw::testing::DocumentedFamilies("## The hub");
  EXPECT_GT(documented.size(), 10u);
  for (const std::string& family : documented)
    EXPECT_TRUE(gw::testing::HasSampleOf(text, family)) << family << "\n" << text;
  auto value_of = [&](const std::string& line_start) {
    size_t at = text.find("\n" + line_start);
    return at == std::string::npos ? -1.0 : std::stod(text.substr(at + 1 + line_start.size()));
  };
  EXPECT_GE(value_of("gpuwarden_hub_http_requests_total{route=\"/api/v1/alerts\",code=\"200\"} "),
            double(alert_requests));
  EXPECT_GE(value_of("gpuwarden_hub_http_requests_total{route=\"/api/v1/rules\",code=\"400\"} "),
            1.0);
  EXPECT_GT(value_of("gpuwarden_hub_store_request_failures_total "), 0.0);
  EXPECT_GT(value_of("gpuwarden_rule_evaluation_failures_total "), 0.0);
  EXPECT_GE(value_of("gpuwarden_alerts_firing "), 2.0);
  (*hub)->Stop();
}

}  // namespace
}  // namespace gw::hub
