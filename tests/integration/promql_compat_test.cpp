// The PromQL compatibility suite: the same data set in gpuwarden and in Prometheus 2.42, every
// expression of tests/compat/expressions.txt asked of both HTTP APIs as instant queries at several
// times and as range queries; results must agree series by series (same label sets, values equal
// within 1e-9 relative, NaN = NaN, same errorType on errors). Every disagreement is printed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "support/agent_process.h"

namespace gw::testing {
namespace {

using nlohmann::json;

constexpr int64_t kStart = 1700000000;  // the data set's first sample (seconds)

std::vector<std::string> Expressions() {
  std::ifstream in(std::string(GW_SOURCE_DIR) + "/tests/compat/expressions.txt");
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) {
    size_t a = line.find_first_not_of(" \t");
    if (a == std::string::npos || line[a] == '#') continue;
    out.push_back(line.substr(a));
  }
  return out;
}

std::string Key(const json& metric) {
  std::map<std::string, std::string> sorted;
  for (auto it = metric.begin(); it != metric.end(); ++it) sorted[it.key()] = it.value();
  std::string k = "{";
  for (auto& [n, v] : sorted) k += n + "=\"" + v + "\",";
  return k + "}";
}

bool SameValue(const std::string& a, const std::string& b) {
  if (a == b) return true;
  // strtod, not stod: subnormal values are out of range for stod, which throws.
  const double x = std::strtod(a.c_str(), nullptr), y = std::strtod(b.c_str(), nullptr);
  if (std::isnan(x) && std::isnan(y)) return true;
  if (std::isinf(x) || std::isinf(y)) return x == y;
  return std::fabs(x - y) <= 1e-9 * std::max(std::fabs(x), std::fabs(y));
}

// Compares two API replies; returns "" when they agree, else what differs.
std::string Compare(const json& ours, const json& theirs, bool ordered) {
  if (theirs["status"] != ours["status"])
    return "status " + ours["status"].dump() + " vs " + theirs["status"].dump() +
           (ours.contains("error") ? " ours: " + ours["error"].dump() : "") +
           (theirs.contains("error") ? " theirs: " + theirs["error"].dump() : "");
  if (theirs["status"] == "error")
    return ours["errorType"] == theirs["errorType"]
               ? ""
               : "errorType " + ours["errorType"].dump() + " vs " + theirs["errorType"].dump();
  const json& a = ours["data"];
  const json& b = theirs["data"];
  if (a["resultType"] != b["resultType"])
    return "resultType " + a["resultType"].dump() + " vs " + b["resultType"].dump();
  const std::string type = b["resultType"];
  if (type == "scalar" || type == "string") {
    if (a["result"][0] != b["result"][0]) return "time differs";
    return type == "string" ? (a["result"][1] == b["result"][1] ? "" : "string differs")
                            : (SameValue(a["result"][1], b["result"][1]) ? "" : "scalar differs");
  }
  const json& ra = a["result"];
  const json& rb = b["result"];
  if (ra.size() != rb.size())
    return std::to_string(ra.size()) + " series vs " + std::to_string(rb.size());
  std::map<std::string, const json*> by_key;
  for (const json& s : ra) by_key[Key(s["metric"])] = &s;
  for (size_t i = 0; i < rb.size(); ++i) {
    const json& s = rb[i];
    std::string key = Key(s["metric"]);
    if (ordered && Key(ra[i]["metric"]) != key) return "order differs at " + std::to_string(i);
    auto it = by_key.find(key);
    if (it == by_key.end()) return "missing series " + key;
    const json& o = *it->second;
    if (type == "vector") {
      if (o["value"][0] != s["value"][0]) return key + " time differs";
      if (!SameValue(o["value"][1], s["value"][1]))
        return key + " " + o["value"][1].dump() + " vs " + s["value"][1].dump();
    } else {
      if (o["values"].size() != s["values"].size())
        return key + " " + std::to_string(o["values"].size()) + " points vs " +
               std::to_string(s["values"].size());
      for (size_t p = 0; p < s["values"].size(); ++p)
        if (o["values"][p][0] != s["values"][p][0] ||
            !SameValue(o["values"][p][1], s["values"][p][1]))
          return key + " point " + std::to_string(p) + ": " + o["values"][p].dump() + " vs " +
                 s["values"][p].dump();
    }
  }
  return "";
}

json Ask(int port, const std::string& path) {
  HttpReply r = HttpGet(port, path);
  if (r.status == 0) return json{{"status", "no answer"}};
  try {
    return json::parse(r.body);
  } catch (...) {
    return json{{"status", "unparsable"}, {"body", r.body}};
  }
}

TEST(PromqlCompat, AgreesWithPrometheus242) {
  TempDir dir;
  std::string out;
  ASSERT_EQ(RunCommand({std::string(GW_BINARY_DIR) + "/bin/make_dataset", "--scenario", "demo",
                        "--duration", "1h", "--step", "15s", "--edits", "--start",
                        std::to_string(kStart), "--out", dir / "data.om"},
                       &out),
            0)
      << out;
  // The data set is from 2023: keep it, as Prometheus is told to below.
  WriteFile(dir / "gpuwarden.yaml", "storage:\n  retention: 100y\n  rollup_retention: 100y\n");
  ASSERT_EQ(RunCommand({"promtool", "tsdb", "create-blocks-from", "openmetrics", dir / "data.om",
                        dir / "prom"},
                       &out, 300),
            0)
      << out;
  ASSERT_EQ(RunCommand({GpuwardenBinary(), "tsdb", "import", dir / "data.om", "--data-dir",
                        dir / "gw", "--config", dir / "gpuwarden.yaml"},
                       &out, 300),
            0)
      << out;

  int prom_port = FreePort();
  Process prom({"prometheus", "--config.file=/dev/null", "--storage.tsdb.path=" + (dir / "prom"),
                "--storage.tsdb.retention.time=100y",
                "--web.listen-address=127.0.0.1:" + std::to_string(prom_port)},
               dir / "prometheus.log");
  ASSERT_TRUE(WaitFor([&] { return HttpGet(prom_port, "/-/ready").status == 200; }, 60));
  AgentProcess agent({"--data-dir", dir / "gw", "--config", dir / "gpuwarden.yaml", "--nvml-lib",
                      "/nonexistent/libnvml.so"});
  ASSERT_NE(agent.port(), 0);

  const std::vector<std::string> times = {std::to_string(kStart + 600),
                                          std::to_string(kStart + 1807) + ".5",
                                          std::to_string(kStart + 3540)};
  const std::vector<std::string> ranges = {
      "&start=" + std::to_string(kStart + 300) + "&end=" + std::to_string(kStart + 3300) +
          "&step=60",
      "&start=" + std::to_string(kStart + 1000) + "&end=" + std::to_string(kStart + 1600) +
          "&step=15",
      // Steps of whole rollup windows, past the data's end.
      "&start=" + std::to_string(kStart + 1000) + "&end=" + std::to_string(kStart + 5500) +
          "&step=300",
      // Unaligned steps longer than 5 minutes.
      "&start=" + std::to_string(kStart + 617) + "&end=" + std::to_string(kStart + 3600) +
          "&step=420"};
  int asked = 0, disagreements = 0;
  for (const std::string& expr : Expressions()) {
    const bool ordered = expr.rfind("sort", 0) == 0;
    std::vector<std::string> queries;
    for (const std::string& t : times)
      queries.push_back("/api/v1/query?query=" + UrlEncode(expr) + "&time=" + t);
    for (const std::string& r : ranges)
      queries.push_back("/api/v1/query_range?query=" + UrlEncode(expr) + r);
    for (const std::string& q : queries) {
      ++asked;
      std::string diff = Compare(Ask(agent.port(), q), Ask(prom_port, q),
                                 ordered && q.find("query_range") == std::string::npos);
      if (diff.empty()) continue;
      ++disagreements;
      ADD_FAILURE() << expr << "\n  " << q << "\n  " << diff;
    }
  }
  std::printf("promql compatibility: %d queries, %d disagreements\n", asked, disagreements);
  EXPECT_EQ(disagreements, 0);
}

}  // namespace
}  // namespace gw::testing
