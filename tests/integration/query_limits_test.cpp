// Query limits of `gpuwarden serve` (issue 16, items 3 and 4), against the real binary on
// loopback: costly queries cannot take every HTTP thread (concurrency limit and bounded queue),
// time out where asked and stop evaluating, answer Prometheus' errors for too many samples (also
// in rules), and the memory a large query took is given back when the agent is idle.
#include <gnu/libc-version.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/agent_process.h"
#include "support/metrics_doc.h"

namespace gw::testing {
namespace {

using nlohmann::json;

// Every subquery step over 30 days at 1 ms: billions of steps, almost none with a sample, so it
// runs until its timeout without holding many samples.
constexpr const char* kCostly = "count_over_time(gpu_up[30d:1ms])";

std::string QueryPath(const std::string& expr, const std::string& extra = "") {
  return "/api/v1/query?query=" + UrlEncode(expr) + extra;
}

double ResidentBytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) * 1024;
  }
  return -1;
}

TEST(QueryLimits, CostlyQueriesLeaveTheAgentAnswering) {
  // Default limits: the regression is that 8 such queries (the HTTP server's thread count) made
  // /metrics, /healthz and every other route wait for them.
  AgentProcess agent({"--simulate", "demo"});
  ASSERT_NE(agent.port(), 0);
  const int port = agent.port();
  ASSERT_TRUE(WaitFor([&] { return agent.Get("/readyz").status == 200; }, 30));

  constexpr int kQueries = 8;
  std::vector<HttpReply> replies(kQueries);
  std::vector<std::thread> threads;
  for (int i = 0; i < kQueries; ++i) {
    threads.emplace_back([&, i] {
      // Each asks for at most 20 s (the API's timeout parameter), so the test is bounded with or
      // without the limits.
      replies[i] = HttpGet(port, QueryPath(kCostly, "&timeout=20s"), "", 90);
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));  // let all of them arrive
  // While they run, the agent answers monitoring and its other routes.
  for (const char* path : {"/metrics", "/healthz", "/api/snapshot", "/api/v1/labels"}) {
    HttpReply r = HttpGet(port, path, "", 5);
    EXPECT_EQ(r.status, 200) << path << " was not answered within 5 s while " << kQueries
                             << " costly queries ran";
  }
  for (auto& t : threads) t.join();

  int evaluation_timeouts = 0, queue_timeouts = 0, refused = 0;
  std::string all;
  for (const HttpReply& r : replies) all += std::to_string(r.status) + " " + r.body + "\n";
  for (const HttpReply& r : replies) {
    ASSERT_EQ(r.status, 503) << r.body;
    json doc = json::parse(r.body);
    EXPECT_EQ(doc["status"], "error");
    const std::string type = doc["errorType"], error = doc["error"];
    if (type == "timeout" && error == "query timed out in expression evaluation") {
      ++evaluation_timeouts;
    } else if (type == "timeout" && error == "query timed out in query queue") {
      ++queue_timeouts;
    } else if (type == "unavailable") {
      ++refused;
      EXPECT_NE(error.find("query queue is full"), std::string::npos) << error;
    } else {
      ADD_FAILURE() << "unexpected reply " << r.body;
    }
  }
  // Defaults: 2 evaluate and 4 wait for a slot on the query workers; the other 2 wait in the
  // server's query queue, holding no thread, and run when workers are free. None is refused. A
  // waiting query whose deadline falls just after the slot holders' may get a slot and time out
  // in evaluation instead.
  EXPECT_EQ(refused, 0) << all;
  EXPECT_GE(evaluation_timeouts, 2) << all;
  EXPECT_EQ(evaluation_timeouts + queue_timeouts, kQueries) << all;

  // Evaluation stopped: nothing runs or waits any more, and the refusals were counted.
  auto samples = ParseExposition(agent.Get("/metrics").body);
  EXPECT_EQ(Value(samples, "gpuwarden_queries", {{"state", "running"}}), 0);
  EXPECT_EQ(Value(samples, "gpuwarden_queries", {{"state", "queued"}}), 0);
  EXPECT_EQ(Value(samples, "gpuwarden_query_concurrency_max"), 2);
  EXPECT_EQ(Value(samples, "gpuwarden_queries_refused_total", {{"reason", "queue_full"}}), 0);
  EXPECT_EQ(Value(samples, "gpuwarden_queries_refused_total", {{"reason", "queue_timeout"}}),
            queue_timeouts);
  // A cheap query is evaluated again.
  HttpReply ok = agent.Get(QueryPath("1+1"));
  EXPECT_EQ(ok.status, 200) << ok.body;
}

TEST(QueryLimits, QueryTimeoutFlagStopsEvaluation) {
  AgentProcess agent({"--simulate", "demo", "--query.timeout", "2s"});
  ASSERT_NE(agent.port(), 0);
  HttpReply r = HttpGet(agent.port(), QueryPath(kCostly), "", 60);
  ASSERT_EQ(r.status, 503) << r.body;
  json doc = json::parse(r.body);
  EXPECT_EQ(doc["errorType"], "timeout");
  EXPECT_EQ(doc["error"], "query timed out in expression evaluation");
  auto samples = ParseExposition(agent.Get("/metrics").body);
  EXPECT_EQ(Value(samples, "gpuwarden_queries", {{"state", "running"}}), 0);
}

TEST(QueryLimits, TooManySamplesIsPrometheusError) {
  AgentProcess agent(
      {"--simulate", "demo", "--sim-clock", "stepped", "--query.max-samples", "1000"});
  ASSERT_NE(agent.port(), 0);
  const std::string too_many =
      "query processing would load too many samples into memory in query execution";
  // A subquery of 3,600 points.
  HttpReply r = agent.Get(QueryPath("count_over_time(vector(1)[1h:1s])", "&time=100000"));
  ASSERT_EQ(r.status, 422) << r.body;
  json doc = json::parse(r.body);
  EXPECT_EQ(doc["errorType"], "execution");
  EXPECT_EQ(doc["error"], too_many);
  // A range query whose result holds 5,001 points.
  r = agent.Get("/api/v1/query_range?query=vector(1)&start=0&end=5000&step=1");
  ASSERT_EQ(r.status, 422) << r.body;
  EXPECT_EQ(json::parse(r.body)["error"], too_many);
  // Below the limit: answered.
  r = agent.Get(QueryPath("count_over_time(vector(1)[10m:1s])", "&time=100000"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["data"]["result"][0]["value"][1], "601");
  // Every family of docs/metrics.md's "Queries and memory" section is on /metrics.
  const std::string page = agent.Get("/metrics").body;
  const std::vector<std::string> families = DocumentedFamilies("## Queries and memory");
  EXPECT_EQ(families.size(), 7u);
  for (const std::string& family : families)
    EXPECT_TRUE(HasSampleOf(page, family)) << family << " is documented but not on /metrics";
}

TEST(QueryLimits, RuleThatLoadsTooManySamplesFailsWithTheError) {
  TempDir dir;
  WriteFile(dir / "rules.yml", R"(groups:
  - name: heavy
    interval: 1s
    rules:
      - record: heavy:count
        expr: count_over_time(vector(1)[1h:1s])
      - record: light:count
        expr: count_over_time(vector(1)[10m:1s])
)");
  WriteFile(dir / "config.yml", "rules:\n  builtin: false\n  files: [" + (dir / "rules.yml") +
                                    "]\nquery:\n  max_samples: 1000\n");
  AgentProcess agent(
      {"--simulate", "demo", "--sim-clock", "stepped", "--config", dir / "config.yml"});
  ASSERT_NE(agent.port(), 0);
  agent.Advance(5);
  HttpReply r = agent.Get("/api/v1/rules");
  ASSERT_EQ(r.status, 200) << r.body;
  json rules = json::parse(r.body)["data"]["groups"][0]["rules"];
  ASSERT_EQ(rules.size(), 2u) << r.body;
  EXPECT_EQ(rules[0]["health"], "err") << rules[0];
  EXPECT_EQ(rules[0]["lastError"],
            "query processing would load too many samples into memory in query execution");
  EXPECT_EQ(rules[1]["health"], "ok") << rules[1];
  EXPECT_EQ(agent.Get("/healthz").status, 200);
}

// A wide query (many series selectors joined by `or`, grouped so no part nests deeper than 50):
// ~30 KB of text, 5,000 selectors.
std::string WideQuery() {
  std::string q;
  for (int group = 0; group < 100; ++group) {
    if (group) q += " or ";
    q += "(";
    for (int i = 0; i < 50; ++i) {
      if (i) q += " or ";
      q += "gpu_up{gpu=\"" + std::to_string(i % 8) + "\"}";
    }
    q += ")";
  }
  return q;
}

TEST(QueryLimits, MemoryOfLargeQueriesIsGivenBackWhenIdle) {
  AgentProcess agent({"--simulate", "demo"});
  ASSERT_NE(agent.port(), 0);
  const int port = agent.port();
  ASSERT_TRUE(WaitFor([&] { return agent.Get("/readyz").status == 200; }, 30));
  const pid_t pid = agent.process().pid();
  const std::string query = WideQuery();
  ASSERT_GT(query.size(), 25000u);
  // Warm up (first queries, first arenas), then measure the idle baseline.
  ASSERT_EQ(HttpGet(port, QueryPath("sum(gpu_up)"), "", 30).status, 200);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const double before = ResidentBytes(pid);
  ASSERT_GT(before, 0);

  // 4 clients × 30 repeats: the requests spread over the HTTP server's threads (and arenas).
  std::atomic<int> failures{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&] {
      for (int i = 0; i < 30; ++i) {
        httplib::Client client("127.0.0.1", port);
        client.set_read_timeout(60);
        auto res = client.Post("/api/v1/query", "query=" + UrlEncode(query),
                               "application/x-www-form-urlencoded");
        if (!res || res->status != 200) ++failures;
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(failures.load(), 0);
  const double peak = ResidentBytes(pid);

  // Idle: the resident size comes back within 64 MB of where it started.
  const double bound = before + 64.0 * (1 << 20);
  bool settled = WaitFor([&] { return ResidentBytes(pid) < bound; }, 30);
  EXPECT_TRUE(settled) << "RSS before " << before / 1e6 << " MB, after the queries " << peak / 1e6
                       << " MB, 30 s idle later " << ResidentBytes(pid) / 1e6 << " MB";
  auto samples = ParseExposition(agent.Get("/metrics").body);
  EXPECT_GE(Value(samples, "gpuwarden_process_heap_bytes", {{"state", "in_use"}}), 0);
}

// Whether this system lets glibc's malloc ask for transparent huge pages: THP "always" or
// "madvise", glibc 2.35 or later (glibc.malloc.hugetlb).
bool SystemHasHugePageHeap() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes;
  std::getline(in, modes);
  if (modes.find("[always]") == std::string::npos && modes.find("[madvise]") == std::string::npos) {
    return false;
  }
  int major = 0, minor = 0;
  if (std::sscanf(gnu_get_libc_version(), "%d.%d", &major, &minor) != 2) return false;
  return major > 2 || (major == 2 && minor >= 35);
}

// The agent runs itself again with GLIBC_TUNABLES=glibc.malloc.hugetlb=1 where the system has
// huge pages (same pid: exec keeps it) and says so on /metrics; GLIBC_TUNABLES naming
// glibc.malloc.hugetlb opts out. (That the environment is put back for the agent's children is
// Heap.ExecWithHugePageHeapRunsAgainAndPutsTheEnvironmentBack.)
TEST(QueryLimits, TheHeapAsksForHugePagesUnlessTheEnvironmentSaysOtherwise) {
  struct Case {
    const char* tunables;  // GLIBC_TUNABLES the agent starts with (nullptr: unset)
    bool huge;             // expected where the system has them
  };
  for (const Case& c : {Case{nullptr, true}, Case{"glibc.malloc.tcache_count=7", true},
                        Case{"glibc.malloc.hugetlb=0", false}}) {
    SCOPED_TRACE(c.tunables ? c.tunables : "(unset)");
    if (c.tunables) {
      setenv("GLIBC_TUNABLES", c.tunables, 1);
    } else {
      unsetenv("GLIBC_TUNABLES");
    }
    AgentProcess agent({"--simulate", "demo"});
    unsetenv("GLIBC_TUNABLES");
    ASSERT_NE(agent.port(), 0);
    ASSERT_TRUE(WaitFor([&] { return agent.Get("/readyz").status == 200; }, 30));
    // A query runs, so the heap has grown since the start.
    ASSERT_EQ(agent.Get(QueryPath("sum(gpu_up)")).status, 200);
    auto samples = ParseExposition(agent.Get("/metrics").body);
    EXPECT_EQ(Value(samples, "gpuwarden_process_heap_huge_pages", {}),
              c.huge && SystemHasHugePageHeap() ? 1 : 0);
    EXPECT_TRUE(agent.process().Running());
  }
}

}  // namespace
}  // namespace gw::testing
