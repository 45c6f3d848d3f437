// The hub's routes and its background thread (hub.h). The documents are built in views.cpp and
// fleet.cpp; this file asks the store and the agents and answers. One piece past 600 lines: every
// route is a member of Hub::Impl and shares its private state (the agents, their reachability and
// cache, the last findings) under one mutex; splitting it would put that state in a header.
#include "hub/hub.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "base/clock.h"
#include "http/client.h"
#include "http/prom_api.h"
#include "http/prom_format.h"
#include "http/server.h"
#include "hub/fleet.h"
#include "hub/hub_metrics.h"
#include "hub/remote_querier.h"
#include "hub/rules_eval.h"
#include "hub/store.h"
#include "hub/views.h"
#include "web/assets.h"
#include "web/chart.h"
#include "web/console.h"

namespace gw::hub {

using nlohmann::json;

namespace {

constexpr double kAgentTimeoutS = 2;
constexpr double kAgentCacheS = 2;

void Json(http::Response& res, std::string body, int status = 200) {
  res.status = status;
  res.content_type = "application/json";
  res.body = std::move(body);
}

// {"status":"success","data":…}, strings not in UTF-8 replaced.
void Success(http::Response& res, nlohmann::json data) {
  Json(res, nlohmann::json{{"status", "success"}, {"data", std::move(data)}}.dump(
                -1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void Unavailable(http::Response& res, const std::string& why) {
  http::WriteApiError(res, 503, "unavailable", why);
}

// `name="value"` for a PromQL selector.
std::string Matcher(const std::string& name, const std::string& value) {
  return name + "=" + json(value).dump();
}

}  // namespace

Expected<std::map<std::string, std::string>> ReadAgentsFile(const std::string& path,
                                                            const std::string& node_label) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    return Error{path + ": " + e.what()};
  }
  if (!root.IsSequence())
    return Error{path + ": expected a list of target groups (Prometheus file_sd format)"};
  std::map<std::string, std::string> out;
  for (const YAML::Node& group : root) {
    if (!group.IsMap() || !group["targets"] || !group["targets"].IsSequence())
      return Error{path + ": line " + std::to_string(group.Mark().line + 1) +
                   ": a target group needs a `targets` list"};
    std::string node;
    if (group["labels"] && group["labels"].IsMap() && group["labels"][node_label])
      node = group["labels"][node_label].as<std::string>();
    for (const YAML::Node& t : group["targets"]) {
      const std::string target = t.as<std::string>();
      const std::string base = target.starts_with("http://") || target.starts_with("https://")
                                   ? target
                                   : "http://" + target;
      out[node.empty() ? target : node] = base;
    }
  }
  return out;
}

struct Hub::Impl {
  HubOptions options;
  Logger* log = nullptr;
  HubMetrics metrics;
  std::unique_ptr<Store> store;
  std::unique_ptr<RuleEvaluator> rules;  // with --rules
  std::unique_ptr<http::Server> server;
  web::AssetCatalog assets{web::EmbeddedAssets()};

  std::mutex mu;
  std::condition_variable wake;
  bool stopping = false;
  std::thread worker;
  std::map<std::string, std::string> agents;  // node -> base URL
  std::string agents_error;
  std::shared_ptr<const FleetFindings> findings;
  std::string findings_error;
  double findings_at = 0;
  struct AgentAnswer {
    double at = 0;
    Expected<json> doc = Error{""};
  };
  std::map<std::string, AgentAnswer> agent_cache;  // URL -> answer
  std::map<std::string, bool> reachable;           // node -> last answer came
  std::map<std::string, double> answered_at;       // node -> when its agent last answered
  std::mutex report_mu;
  FanOut agent_fanout{16};  // the nodes' agents asked at once for one request (jobs)

  double Now() const { return SystemClock().NowSeconds(); }

  std::string Scope(const http::Request& req) const { return req.param("node"); }
  std::string Selector(const std::string& node) const {
    return node.empty() ? "" : Matcher(options.node_label, node);
  }

  std::map<std::string, std::string> Agents() {
    std::lock_guard<std::mutex> lock(mu);
    return agents;
  }

  // GET `path` of the node's agent, cached kAgentCacheS; an Error when it is not listed or
  // did not answer.
  Expected<json> AgentGet(const std::string& node, const std::string& path) {
    std::string base;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = agents.find(node);
      if (it == agents.end()) return Error{"no agent is listed for node " + node};
      base = it->second;
      auto c = agent_cache.find(base + path);
      if (c != agent_cache.end() && Now() - c->second.at < kAgentCacheS) return c->second.doc;
    }
    Expected<json> doc = Error{""};
    auto reply = http::GetUrl(base + path, kAgentTimeoutS);
    if (!reply.ok()) {
      doc = Error{"the agent of " + node + " at " + base +
                  " did not answer: " + reply.error().message};
    } else {
      json j = json::parse(reply->body, nullptr, false);
      if (reply->status != 200 || !j.is_object())
        doc = Error{"the agent of " + node + " answered HTTP " + std::to_string(reply->status)};
      else
        doc = std::move(j);
    }
    std::lock_guard<std::mutex> lock(mu);
    reachable[node] = reply.ok();
    if (reply.ok()) answered_at[node] = Now();
    if (agent_cache.size() > 1024) agent_cache.clear();
    agent_cache[base + path] = AgentAnswer{Now(), doc};
    return doc;
  }

  // --- routes ---

  void Snapshot(const http::Request& req, http::Response& res) {
    const std::string node = Scope(req);
    const double now = Now();
    auto figures = NodeFiguresNow();
    if (!figures.ok()) return Unavailable(res, figures.error().message);
    if (rules) CountOwnAlerts(&*figures);
    json names = json::array();
    for (const auto& f : *figures) names.push_back(f.node);
    if (node.empty()) {
      double newest = 0;
      for (const auto& f : *figures) newest = std::max(newest, f.newest_s);
      json root = {{"nvml_up", true},
                   {"taken_at", newest > 0 ? newest : now},
                   {"driver_version", ""},
                   {"nvml_version", ""},
                   {"cuda_driver_version", ""},
                   {"hub", true},
                   {"node", ""},
                   {"node_names", names},
                   {"nodes", NodeSummaries(*figures)},
                   {"gpus", json::array()}};
      return Json(res, root.dump());
    }
    auto series = store->Vector("{__name__=~\"gpu_.+\"," + Selector(node) + "}");
    if (!series.ok()) return Unavailable(res, series.error().message);
    json agent = nullptr;
    if (auto a = AgentGet(node, "/api/snapshot"); a.ok()) agent = std::move(*a);
    json root = NodeSnapshot(node, *series, agent, now);
    root["hub"] = true;
    root["node_names"] = std::move(names);
    Json(res, root.dump(-1, ' ', false, json::error_handler_t::replace));
  }

  Expected<std::vector<NodeFigures>> NodeFiguresNow() {
    const std::string& l = options.node_label;
    std::map<std::string, NodeFigures> by;
    using S = Store::Sample;
    const std::pair<std::string, std::function<void(NodeFigures&, const S&)>> queries[] = {
        {"count by (" + l + ") (gpu_up)", [](NodeFigures& f, const S& s) { f.gpus = s.value; }},
        {"sum by (" + l + ") (gpu_up)", [](NodeFigures& f, const S& s) { f.gpus_up = s.value; }},
        {"avg by (" + l + ") (gpu_utilization_ratio)",
         [](NodeFigures& f, const S& s) { f.utilization = s.value; }},
        {"sum by (" + l + ") (gpu_power_watts)",
         [](NodeFigures& f, const S& s) { f.power_w = s.value; }},
        {"max by (" + l + ") (timestamp(gpu_up))",
         [](NodeFigures& f, const S& s) { f.newest_s = s.value; }},
        {"count by (" + l + ", severity) (ALERTS{alertstate=\"firing\"})",
         [](NodeFigures& f, const S& s) {
           auto sev = s.labels.find("severity");
           if (sev == s.labels.end()) return;
           if (sev->second == "critical") f.alerts_critical += int(s.value);
           if (sev->second == "warning") f.alerts_warning += int(s.value);
         }},
    };
    // All six at once (docs/hub.md "Load on the store"), then applied in order.
    std::vector<std::string> exprs;
    for (const auto& q : queries) exprs.push_back(q.first);
    auto answers = store->Vectors(exprs);
    for (size_t i = 0; i < answers.size(); ++i) {
      if (!answers[i].ok()) return answers[i].error();
      for (const auto& s : *answers[i]) {
        auto it = s.labels.find(l);
        if (it == s.labels.end()) continue;
        NodeFigures& f = by[it->second];
        f.node = it->second;
        queries[i].second(f, s);
      }
    }
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& [node, url] : agents) {
      NodeFigures& f = by[node];
      f.node = node;
      f.agent_known = true;
      auto r = reachable.find(node);
      f.agent_reachable = r == reachable.end() ? -1 : int(r->second);
    }
    std::vector<NodeFigures> out;
    for (auto& [node, f] : by) out.push_back(std::move(f));
    return out;
  }

  // With --rules the fleet tiles count the hub's own firing alerts, not the store's ALERTS.
  void CountOwnAlerts(std::vector<NodeFigures>* figures) const {
    const auto firing = rules->FiringByNode();
    auto count = [&firing](const std::string& node, const char* severity) {
      auto n = firing.find(node);
      if (n == firing.end()) return 0;
      auto c = n->second.find(severity);
      return c == n->second.end() ? 0 : c->second;
    };
    for (NodeFigures& f : *figures) {
      f.alerts_critical = count(f.node, "critical");
      f.alerts_warning = count(f.node, "warning");
    }
  }

  void Alerts(const http::Request& req, http::Response& res) {
    const std::string node = Scope(req);
    if (rules) return Success(res, rules->AlertsApi(node));
    auto v = store->Vector(node.empty() ? "ALERTS" : "ALERTS{" + Selector(node) + "}");
    if (!v.ok()) return Unavailable(res, v.error().message);
    Json(res, AlertsJson(*v));
  }

  void Query(const http::Request& req, http::Response& res, const std::string& path) {
    std::string query = req.param("query");
    const std::string node = Scope(req);
    if (!node.empty() && !query.empty()) {
      auto scoped = ScopeQuery(query, options.node_label, node);
      if (!scoped.ok()) return http::WriteApiError(res, 400, "bad_data", scoped.error().message);
      query = *scoped;
    }
    std::vector<std::pair<std::string, std::string>> fields = {{"query", query}};
    for (const char* name : {"time", "start", "end", "step", "timeout"})
      if (std::string v = req.param(name); !v.empty()) fields.emplace_back(name, v);
    auto reply = store->Post(path, Form(fields));
    if (!reply.ok()) return Unavailable(res, reply.error().message);
    Json(res, reply->body, reply->status);
  }

  void Rules(const http::Request& req, http::Response& res) {
    if (!rules) return Proxy("/api/v1/rules", res);
    const std::string type = req.param("type");
    json data = rules->RulesApi(type, Scope(req));
    if (data.is_null())
      return http::WriteApiError(
          res, 400, "bad_data", "invalid parameter \"type\": not supported value \"" + type + "\"");
    Success(res, std::move(data));
  }

  void Metrics(const http::Request& req, http::Response& res) {
    HubFigures f;
    f.version = options.version;
    {
      std::lock_guard<std::mutex> lock(mu);
      f.agents_known = agents.size();
      for (const auto& [node, url] : agents)
        if (auto r = reachable.find(node); r != reachable.end() && r->second) ++f.agents_reachable;
    }
    if (rules) f.rules = rules->stats();
    if (rules) f.notify = rules->notify_stats();
    const expo::Format format = expo::NegotiateFormat(req.header("accept"));
    metrics.Render(f, format, &res.body);
    expo::EndPage(format, &res.body);
    res.content_type = std::string(expo::ContentType(format));
  }

  void Proxy(const std::string& path, http::Response& res) {
    auto reply = http::GetUrl(store->url() + path, options.store_timeout_s);
    if (!reply.ok())
      return Unavailable(
          res, "the store at " + store->url() + " did not answer: " + reply.error().message);
    Json(res, reply->body, reply->status);
  }

  void Chart(const http::Request& req, http::Response& res) {
    auto q = web::ParseChartQuery(req, static_cast<int64_t>(Now() * 1000));
    if (!q.ok()) return http::WriteApiError(res, 400, "bad_data", q.error().message);
    std::vector<tsdb::Matcher> scope;
    if (const std::string node = Scope(req); !node.empty()) {
      auto m = tsdb::Matcher::Make(tsdb::MatchType::kEqual, options.node_label, node);
      if (!m.ok()) return http::WriteApiError(res, 400, "bad_data", m.error().message);
      scope.push_back(std::move(*m));
    }
    RemoteQuerier querier(store.get(), std::move(scope));
    std::string body;
    if (Status st = web::ChartJson(&querier, *q, &body); !st.ok())
      return Unavailable(res, st.message());
    Json(res, std::move(body));
  }

  // Running jobs from the store's samples at `time_s` (0: now), of `node` (empty: every node).
  // The two store queries that list the jobs on `node` (every node when empty): allocations,
  // then the jobs' figures.
  std::vector<std::string> JobQueries(const std::string& node) const {
    const std::string sel = Selector(node);
    return {sel.empty() ? "gpu_allocation_info" : "gpu_allocation_info{" + sel + "}",
            "{__name__=~\"gpu_job_(sm_utilization_ratio|memory_peak_bytes|energy_joules_total|"
            "gpu_seconds_total|idle_gpu_seconds_total)\"" +
                (sel.empty() ? "" : "," + sel) + "}"};
  }

  Expected<json> StoreJobs(const std::string& node, double time_s = 0) {
    auto answers = store->Vectors(JobQueries(node), time_s);
    for (const auto& a : answers)
      if (!a.ok()) return a.error();
    return JobsFromStore(*answers[0], *answers[1], options.node_label);
  }

  // `path` of every listed agent (of `node` only, when given), at once. An agent that did not
  // answer its last request or /healthz probe is not asked again until a probe finds it back.
  std::vector<AgentJobs> AskAgents(const std::string& node, const std::string& path) {
    std::vector<AgentJobs> out;
    std::map<std::string, bool> known;
    {
      std::lock_guard<std::mutex> lock(mu);
      for (const auto& [n, url] : agents)
        if (node.empty() || n == node) out.push_back({n, false, nullptr, ""});
      known = reachable;
    }
    std::vector<std::function<void()>> tasks;
    for (AgentJobs& a : out) {
      if (auto r = known.find(a.node); r != known.end() && !r->second) {
        a.error = "the agent of " + a.node + " did not answer its last request or probe";
        continue;
      }
      tasks.push_back([this, &a, &path] {
        auto doc = AgentGet(a.node, path);
        a.answered = doc.ok();
        if (doc.ok())
          a.doc = std::move(*doc);
        else
          a.error = doc.error().message;
      });
    }
    agent_fanout.Run(std::move(tasks));
    return out;
  }

  // Running jobs from the store and every node's records from its agent (views.h MergeJobs);
  // `running_only`: the store's alone (the console's shared refresh, every few seconds).
  Expected<json> FleetJobs(const http::Request& req, bool running_only) {
    const std::string node = Scope(req);
    auto jobs = StoreJobs(node);
    if (!jobs.ok()) return jobs.error();
    const std::string team = req.param("team");
    json list = json::array();
    for (auto& j : *jobs)
      if (team.empty() || j.value("team", "") == team) list.push_back(std::move(j));
    std::vector<AgentJobs> agent_jobs;
    std::vector<std::string> silent;  // nodes whose agents did not answer
    if (running_only) {
      // No agent is asked: those the last request or probe found silent.
      std::lock_guard<std::mutex> lock(mu);
      for (const auto& [n, ok] : reachable)
        if (!ok && (node.empty() || n == node)) silent.push_back(n);
    } else {
      agent_jobs = AskAgents(node, "/api/gw/v1/jobs" + Forwarded(req));
      for (const AgentJobs& a : agent_jobs)
        if (!HasJobsList(a)) silent.push_back(a.node);
    }
    AddLastKnownJobs(silent, team, &list);
    return MergeJobs(list, agent_jobs);
  }

  // A stopped agent's series end in the store at its first failed scrape (staleness markers),
  // so seconds after it stops the store lists no running job on its node. For each node of
  // `silent` (agents that did not answer) that has none in `list`: the jobs the store held when
  // its agent last answered this hub, each with "as_of" (that time), for
  // options.last_known_jobs_s after it. A node whose agent never answered this hub, or whose
  // store query fails, keeps what `list` has.
  void AddLastKnownJobs(const std::vector<std::string>& silent, const std::string& team,
                        json* list) {
    if (silent.empty()) return;
    std::map<std::string, double> known;
    {
      std::lock_guard<std::mutex> lock(mu);
      known = answered_at;
    }
    std::set<std::string> listed;
    for (const json& j : *list) listed.insert(j.value("node", ""));
    // Every node's two queries at once (each at its own time; the store's max_parallel at a
    // time): a rack that loses its agents together costs one round of queries, not one per node.
    struct Ask {
      std::string node;
      double at;
      std::vector<std::string> queries;
      std::vector<Expected<std::vector<Store::Sample>>> answers;
    };
    std::vector<Ask> asks;
    for (const std::string& n : silent) {
      auto at = known.find(n);
      if (listed.count(n) || at == known.end() || Now() - at->second > options.last_known_jobs_s)
        continue;
      asks.push_back({n, at->second, JobQueries(n), {}});
    }
    std::vector<std::function<void()>> tasks;
    for (Ask& a : asks) {
      a.answers.assign(a.queries.size(), Error{"not run"});
      for (size_t i = 0; i < a.queries.size(); ++i)
        tasks.push_back([this, &a, i] { a.answers[i] = store->Vector(a.queries[i], a.at); });
    }
    store->RunAll(std::move(tasks));
    for (Ask& a : asks) {
      if (!a.answers[0].ok() || !a.answers[1].ok()) continue;
      for (json& j : JobsFromStore(*a.answers[0], *a.answers[1], options.node_label)) {
        if (!team.empty() && j.value("team", "") != team) continue;
        j["as_of"] = a.at;
        list->push_back(std::move(j));
      }
    }
  }

  void Jobs(const http::Request& req, http::Response& res) {
    double since_s = 0;
    if (const std::string since = req.param("since");
        !since.empty() && (!ParseDurationSeconds(since, &since_s) || since_s <= 0))
      return http::WriteApiError(
          res, 400, "bad_data",
          "since: expected a duration such as 1h or 30m, got '" + since + "'");
    const std::string running = req.param("running");
    auto data = FleetJobs(req, running == "1" || running == "true");
    if (!data.ok()) return Unavailable(res, data.error().message);
    Json(res, json{{"data", std::move(*data)}, {"status", "success"}}.dump(
                  -1, ' ', false, json::error_handler_t::replace));
  }

  void Job(const http::Request& req, http::Response& res) {
    const std::string id = req.path.substr(std::string_view("/api/gw/v1/jobs/").size());
    auto jobs = StoreJobs(Scope(req));
    if (!jobs.ok()) return Unavailable(res, jobs.error().message);
    json found = nullptr;
    for (auto& j : *jobs)
      if (j.value("job_id", "") == id) found = j;
    // The node's agent has the job's whole record (name, times, cost, outcome); a job the store
    // does not list as running (finished) is asked of every agent, the newest record kept.
    const std::string node = found.is_object() ? found.value("node", "") : Scope(req);
    json best = nullptr;
    for (const AgentJobs& a : AskAgents(node, "/api/gw/v1/jobs/" + http::UrlEncode(id))) {
      if (!a.answered || !a.doc.contains("data") || !a.doc["data"].is_object()) continue;
      auto end = [](const json& d) {
        return d["data"].contains("end_time") && d["data"]["end_time"].is_number()
                   ? d["data"]["end_time"].get<double>()
                   : 0.0;
      };
      if (best.is_null() || end(a.doc) > end(best)) {
        best = a.doc;
        best["data"]["node"] = a.node;
      }
    }
    if (best.is_object())
      return Json(res, best.dump(-1, ' ', false, json::error_handler_t::replace));
    if (!found.is_object()) return http::WriteApiError(res, 404, "not_found", "no such job: " + id);
    Json(res, json{{"data", found}, {"status", "success"}}.dump());
  }

  // Every node's teams, or with node= that node's (as its agent's console shows them): the
  // team pages' figures, charts and job lists then all speak of the scope chosen.
  void Teams(const http::Request& req, http::Response& res) {
    const std::string node = Scope(req), sel = Selector(node);
    auto series = store->Vector(
        "{__name__=~\"gpu_team_(allocated|used|quota|idle)_gpus|gpu_team_efficiency_ratio|"
        "gpu_cost_(allocation|energy|idle_allocated)_total|gpu_cost_info|"
        "gpu_(idle_)?allocated_gpu_seconds_total\"" +
        (sel.empty() ? "" : "," + sel) + "}");
    if (!series.ok()) return Unavailable(res, series.error().message);
    http::Request all;  // every job on record of the scope (the Jobs page's request: one fetch)
    all.path = req.path;
    if (!node.empty()) all.params.emplace("node", node);
    auto jobs = FleetJobs(all, false);
    if (!jobs.ok()) return Unavailable(res, jobs.error().message);
    json doc = json::parse(TeamsJson(*series, (*jobs)["jobs"], options.node_label));
    doc["data"]["nodes_unreachable"] = (*jobs)["nodes_unreachable"];
    Json(res, doc.dump(-1, ' ', false, json::error_handler_t::replace));
  }

  void Findings(const http::Request& req, http::Response& res) {
    std::shared_ptr<const FleetFindings> latest;
    std::string error;
    {
      std::lock_guard<std::mutex> lock(mu);
      latest = findings;
      error = findings_error;
    }
    if (!latest)
      return Unavailable(res, error.empty()
                                  ? "the first evaluation of the fleet's findings over the "
                                    "store has not finished yet"
                                  : error);
    Json(res, FleetFindingsJson(*latest, Scope(req),
                                {req.param("gpu"), req.param("job"), req.param("team")}));
  }

  void Report(const http::Request& req, http::Response& res) {
    const std::string time = req.param("time");
    auto asked = report::ParseReportRequest(req.param("period"), req.param("format"));
    if (!asked.ok()) return http::WriteApiError(res, 400, "bad_data", asked.error().message);
    int64_t t_ms = static_cast<int64_t>(Now() * 1000);
    if (!time.empty() && !http::ParsePromTime(time, &t_ms))
      return http::WriteApiError(res, 400, "bad_data",
                                 "time: expected Unix seconds or RFC 3339, got '" + time + "'");
    std::unique_lock<std::mutex> busy(report_mu, std::try_to_lock);
    if (!busy.owns_lock())
      return Unavailable(res, "another report is being built; try again when it is done");
    report::Options o;
    o.time_ms = t_ms;
    o.period_s = asked->period_s;
    o.thresholds = options.thresholds;
    auto r = FleetReport(store.get(), o, asked->json, options.node_label);
    if (!r.ok()) return Unavailable(res, r.error().message);
    res.body = std::move(*r);
    res.content_type = asked->json ? "application/json" : "text/html; charset=utf-8";
  }

  // The query string of `req` without `node`.
  static std::string Forwarded(const http::Request& req) {
    std::string q;
    for (const auto& [k, v] : req.params) {
      if (k == "node") continue;
      q += (q.empty() ? "?" : "&") + http::UrlEncode(k) + "=" + http::UrlEncode(v);
    }
    return q;
  }

  void Reclaim(const http::Request& req, http::Response& res) {
    const std::string node = Scope(req);
    const std::string path = "/api/gw/v1/reclaim" + Forwarded(req);
    std::vector<std::string> nodes;
    if (!node.empty()) {
      nodes.push_back(node);
    } else {
      for (const auto& [n, url] : Agents()) nodes.push_back(n);
    }
    std::vector<std::future<Expected<json>>> answers;
    for (const std::string& n : nodes)
      answers.push_back(
          std::async(std::launch::async, [this, n, path] { return AgentGet(n, path); }));
    json merged = {{"time", nullptr},
                   {"policies", json::array()},
                   {"noticed_jobs", 0},
                   {"notices", json::array()},
                   {"idle_gpus", json::array()},
                   {"decisions", json::array()},
                   {"nodes_unreachable", json::array()}};
    for (size_t i = 0; i < answers.size(); ++i) {
      auto a = answers[i].get();
      if (!a.ok() || !a->contains("data")) {
        merged["nodes_unreachable"].push_back(nodes[i]);
        continue;
      }
      const json& d = (*a)["data"];
      if (merged["policies"].empty() && d.contains("policies")) merged["policies"] = d["policies"];
      if (d.contains("time") && !d["time"].is_null()) merged["time"] = d["time"];
      merged["noticed_jobs"] = merged["noticed_jobs"].get<int>() + d.value("noticed_jobs", 0);
      for (const char* list : {"notices", "idle_gpus", "decisions"})
        for (json item : d.value(list, json::array())) {
          if (item.is_object()) item["node"] = nodes[i];
          merged[list].push_back(std::move(item));
        }
    }
    auto newest_first = [](const json& a, const json& b) {
      return a.value("time", 0.0) > b.value("time", 0.0);
    };
    std::stable_sort(merged["decisions"].begin(), merged["decisions"].end(), newest_first);
    Json(res, json{{"status", "success"}, {"data", std::move(merged)}}.dump(
                  -1, ' ', false, json::error_handler_t::replace));
  }

  void Queue(const http::Request& req, http::Response& res) {
    const std::string path = "/api/gw/v1/queue" + Forwarded(req);
    std::vector<std::string> nodes;
    if (!Scope(req).empty()) nodes.push_back(Scope(req));
    for (const auto& [n, url] : Agents()) nodes.push_back(n);
    for (const std::string& n : nodes)
      if (auto a = AgentGet(n, path); a.ok()) return Json(res, a->dump());
    Unavailable(res, "no agent answered for the queue (it comes from the nodes' agents)");
  }

  void Exposition(const http::Request& req, http::Response& res) {
    const std::string node = Scope(req);
    const std::string sel = Selector(node);
    const std::string in = sel.empty() ? "" : "{" + sel + "}";
    // Cluster-wide families (every node polls the same squeue): the largest, not the sum.
    const std::string expr = "max by (state) (gpu_jobs" + in + ") or min(gpuwarden_slurm_up" + in +
                             ") or max by (le, partition) (gpu_job_queue_wait_seconds_bucket" + in +
                             ") or gpu_allocation_info" + in +
                             " or max by (team) (gpu_team_quota_gpus" + in + ")";
    auto v = store->Vector(expr);
    if (!v.ok()) return Unavailable(res, v.error().message);
    // `min(gpuwarden_slurm_up)` and the max by aggregations lose their names: put them back.
    for (auto& s : *v) {
      if (s.labels.count("__name__")) continue;
      if (s.labels.count("state"))
        s.labels["__name__"] = "gpu_jobs";
      else if (s.labels.count("le"))
        s.labels["__name__"] = "gpu_job_queue_wait_seconds_bucket";
      else if (s.labels.count("team"))
        s.labels["__name__"] = "gpu_team_quota_gpus";
      else
        s.labels["__name__"] = "gpuwarden_slurm_up";
    }
    res.content_type = "text/plain; version=0.0.4; charset=utf-8";
    res.body = ExpositionText(*v);
  }

  void HubStatus(http::Response& res) {
    json agents_json = json::object();
    json f = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu);
      for (const auto& [node, url] : agents) {
        auto r = reachable.find(node);
        agents_json[node] = {{"url", url},
                             {"reachable", r == reachable.end() ? json(nullptr) : json(r->second)}};
      }
      if (findings)
        f = {{"evaluated_at", findings_at},
             {"took_seconds", findings->took_s},
             {"findings", findings->diagnosis.findings.size()},
             {"nodes", findings->nodes.size()}};
      if (!findings_error.empty()) f["error"] = findings_error;
    }
    const std::string err = store->LastError();
    Json(res, json{{"status", "success"},
                   {"data",
                    {{"store", store->url()},
                     {"store_error", err.empty() ? json(nullptr) : json(err)},
                     {"store_requests", store->requests_sent()},
                     {"node_label", options.node_label},
                     {"agents_file", options.agents_file},
                     {"agents_error", agents_error.empty() ? json(nullptr) : json(agents_error)},
                     {"agents", agents_json},
                     {"findings", f}}}}
                  .dump());
  }

  // --- the background thread ---

  void LoadAgents() {
    if (options.agents_file.empty()) return;
    auto read = ReadAgentsFile(options.agents_file, options.node_label);
    std::lock_guard<std::mutex> lock(mu);
    if (!read.ok()) {
      if (agents_error != read.error().message && log) log->Warn("hub: " + read.error().message);
      agents_error = read.error().message;
      return;  // the last good list stays
    }
    agents_error.clear();
    agents = std::move(*read);
  }

  // Whether each listed agent answers /healthz, asked in parallel batches (the fleet tiles
  // show it without a request fanning out to every agent).
  void ProbeAgents() {
    const auto listed = Agents();
    std::vector<std::pair<std::string, std::string>> all(listed.begin(), listed.end());
    std::map<std::string, bool> answered;
    constexpr size_t kBatch = 32;
    for (size_t i = 0; i < all.size(); i += kBatch) {
      std::vector<std::future<bool>> batch;
      for (size_t j = i; j < std::min(all.size(), i + kBatch); ++j)
        batch.push_back(std::async(std::launch::async, [url = all[j].second] {
          auto r = http::GetUrl(url + "/healthz", kAgentTimeoutS);
          return r.ok() && r->status == 200;
        }));
      for (size_t j = 0; j < batch.size(); ++j) answered[all[i + j].first] = batch[j].get();
    }
    const double now = Now();
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& [node, ok] : answered) {
      reachable[node] = ok;
      if (ok) answered_at[node] = now;
    }
  }

  void EvaluateFindings() {
    diagnose::Options o;
    o.time_ms = static_cast<int64_t>(Now() * 1000);
    o.window_s = options.findings_window_s;
    o.thresholds = options.thresholds;
    auto f = DiagnoseFleet(store.get(), o, options.node_label);
    std::lock_guard<std::mutex> lock(mu);
    if (!f.ok()) {
      findings_error = "findings: " + f.error().message;
      return;
    }
    findings_error.clear();
    findings_at = double(o.time_ms) / 1000;
    findings = std::make_shared<const FleetFindings>(std::move(*f));
  }

  void Run() {
    double next_agents = 0, next_findings = 0;
    std::unique_lock<std::mutex> lock(mu);
    while (!stopping) {
      const double now = Now();
      if (now >= next_agents) {
        lock.unlock();
        LoadAgents();
        ProbeAgents();
        lock.lock();
        next_agents = now + options.agents_reload_s;
      }
      if (now >= next_findings && !stopping) {
        lock.unlock();
        EvaluateFindings();
        lock.lock();
        next_findings = Now() + options.findings_interval_s;
      }
      const double wait = std::max(0.05, std::min(next_agents, next_findings) - Now());
      // The predicate: a Stop() that came while the lock was released is not missed.
      wake.wait_for(lock, std::chrono::duration<double>(wait), [this] { return stopping; });
    }
  }

  void Register() {
    web::ConsoleOptions console;
    console.version = options.version;
    Store* s = store.get();
    console.queriers = [s] { return std::make_unique<RemoteQuerier>(s); };
    console.now_ms = [] { return SystemClock().NowMs(); };
    web::RegisterConsole(server.get(), std::move(console));
    CountedRoutes counted(server.get(), &metrics);  // every route below counted on /metrics
    CountedRoutes* srv = &counted;
    auto get = [this, srv](const std::string& path,
                           void (Impl::*fn)(const http::Request&, http::Response&)) {
      srv->Get(path, [this, fn](const http::Request& req, http::Response& res) {
        (this->*fn)(req, res);
      });
    };
    get("/api/snapshot", &Impl::Snapshot);
    get("/api/v1/alerts", &Impl::Alerts);
    get("/api/v1/rules", &Impl::Rules);
    get("/metrics", &Impl::Metrics);
    get("/api/gw/v1/chart", &Impl::Chart);
    get("/api/gw/v1/jobs", &Impl::Jobs);
    get("/api/gw/v1/teams", &Impl::Teams);
    get("/api/gw/v1/findings", &Impl::Findings);
    get("/api/gw/v1/report", &Impl::Report);
    get("/api/gw/v1/reclaim", &Impl::Reclaim);
    get("/api/gw/v1/queue", &Impl::Queue);
    get("/api/gw/v1/hub/exposition", &Impl::Exposition);
    srv->GetPrefix("/api/gw/v1/jobs/",
                   [this](const http::Request& req, http::Response& res) { Job(req, res); });
    for (const char* path : {"/api/v1/query", "/api/v1/query_range"}) {
      const std::string p = path;
      auto handler = [this, p](const http::Request& req, http::Response& res) {
        Query(req, res, p);
      };
      srv->Get(p, handler);
      srv->Post(p, handler);
    }
    srv->Get("/api/gw/v1/hub",
             [this](const http::Request&, http::Response& res) { HubStatus(res); });
    std::string info = json{
        {"status", "success"},
        {"data",
         {{"version", options.version},
          {"history", true},
          {"ui_version", assets.version()},
          {"rule_interval_s", 15},
          {"hub", true},
          {"node_label", options.node_label},
          {"store",
           store->url()}}}}.dump();
    srv->Get("/api/gw/v1/console", [info](const http::Request&, http::Response& res) {
      res.headers.emplace_back("Cache-Control", "no-cache");
      Json(res, info);
    });
    for (const char* path : {"/healthz", "/readyz"})
      srv->Get(path, [](const http::Request&, http::Response& res) { res.body = "ok\n"; });
  }
};

Hub::Hub(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Hub::~Hub() {
  Stop();
}

Expected<std::unique_ptr<Hub>> Hub::Create(HubOptions options, Logger* log) {
  if (!tsdb::IsValidLabelName(options.node_label))
    return Error{"--node-label: not a label name: '" + options.node_label + "'"};
  auto impl = std::make_unique<Impl>();
  HubMetrics* metrics = &impl->metrics;
  auto store = Store::Create(
      {.url = options.store_url,
       .timeout_s = options.store_timeout_s,
       .cache_ttl_s = options.cache_ttl_s,
       .on_lookup = [metrics](bool hit) { metrics->CacheLookup(hit); },
       .on_request = [metrics](double s, bool failed) { metrics->StoreRequest(s, failed); }});
  if (!store.ok()) return store.error();
  impl->store = std::move(*store);
  if (!options.alertmanagers.empty() && options.rules_files.empty())
    return Error{"--alertmanager: the hub sends the alerts of its own --rules; none are given"};
  if (!options.rules_files.empty()) {
    auto rules = RuleEvaluator::Create(
        {options.rules_files, options.rules_interval_s, options.node_label, options.alertmanagers},
        impl->store.get(), log);
    if (!rules.ok()) return rules.error();
    impl->rules = std::move(*rules);
  }
  if (!options.agents_file.empty()) {
    auto agents = ReadAgentsFile(options.agents_file, options.node_label);
    if (!agents.ok()) return Error{"--agents: " + agents.error().message};
    impl->agents = std::move(*agents);
  }
  http::ServerOptions so;
  so.listen_address = options.listen_address;
  so.web_config_file = options.web_config_file;
  so.worker_threads = 16;  // most of a request's time is waiting for the store
  auto server = http::Server::Create(std::move(so), log);
  if (!server.ok()) return server.error();
  impl->server = std::move(*server);
  impl->options = std::move(options);
  impl->log = log;
  impl->Register();
  return std::unique_ptr<Hub>(new Hub(std::move(impl)));
}

Status Hub::Start() {
  if (Status st = impl_->server->Start(); !st.ok()) return st;
  impl_->worker = std::thread([this] { impl_->Run(); });
  if (impl_->rules) impl_->rules->Start();
  return Status::Ok();
}

void Hub::Stop() {
  if (!impl_) return;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->wake.notify_all();
  if (impl_->worker.joinable()) impl_->worker.join();
  if (impl_->rules) impl_->rules->Stop();
  impl_->server->Stop();
}

int Hub::port() const {
  return impl_->server->port();
}

}  // namespace gw::hub
