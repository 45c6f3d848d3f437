// The report renders for the demo and for fault scenarios (recorded as `serve` records them), is
// valid HTML (parsed strictly by html5lib, python3-html5lib from Debian) and self-contained (no
// script, no external reference); its JSON carries the same content. Team, quota, cost and queue
// families come from other modules: the test imports them as OpenMetrics text written here.
#include "report/report.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>

#include "support/process.h"
#include "support/sim_store.h"

namespace gw::report {
namespace {

using testing::MemoryStore;
using testing::RecordScenario;

Report Make(MemoryStore& store, double period_s) {
  promql::Engine engine;
  Options options;
  options.time_ms = store.last_ms();
  options.period_s = period_s;
  auto r = Build(store.querier(), engine, options);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : Report{};
}

// Strict HTML5 parse (any parse error fails) with python3's html5lib; "" when valid.
std::string HtmlErrors(const std::string& html) {
  testing::TempDir dir;
  const std::string file = dir / "report.html";
  testing::WriteFile(file, html);
  const std::string script =
      "import sys, html5lib\n"
      "p = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False)\n"
      "try:\n"
      "    p.parse(open(sys.argv[1], 'rb').read())\n"
      "except Exception as e:\n"
      "    print('invalid:', e, p.errors[:5]); sys.exit(1)\n"
      "print('valid')\n";
  // Debian's python3 (python3-html5lib is installed for it), not one earlier on PATH.
  const std::string python =
      std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  std::string out;
  int rc = testing::RunCommand({python, "-c", script, file}, &out);
  return rc == 0 ? "" : "html5lib: " + out;
}

// What would make the page fetch something or run code.
std::string ExternalReferences(const std::string& html) {
  static const std::regex bad(
      R"((src|href|action|srcset|xlink:href)\s*=\s*["']?\s*(https?:|//|file:)|<script|<link|<iframe|<object|<embed|<img|@import|url\()",
      std::regex::icase);
  std::smatch m;
  return std::regex_search(html, m, bad) ? m.str() : "";
}

TEST(Report, DemoRendersAsValidSelfContainedHtml) {
  MemoryStore store;
  RecordScenario("demo", 40 * 60, 15, &store);
  Report r = Make(store, 2400);
  EXPECT_EQ(r.fleet.gpus, 8);
  EXPECT_EQ(r.fleet.gpus_up, 8);
  EXPECT_GT(r.fleet.utilization, 0.3);
  EXPECT_GT(r.fleet.energy_kwh, 0);
  EXPECT_EQ(r.gpus.size(), 8u);
  EXPECT_EQ(r.utilization.lines.size(), 8u);
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  // GPU 2's corrected-ECC trend (one every 5 min from 7 min) is in the history table and chart.
  ASSERT_EQ(r.gpus[2].gpu, "2");
  EXPECT_GE(r.gpus[2].ecc_corrected, 5);
  ASSERT_EQ(r.ecc.lines.size(), 1u);
  EXPECT_EQ(r.ecc.lines[0].label, "GPU 2");
  EXPECT_EQ(r.gpus[1].ecc_corrected, 0);
  // No task layer in a bare recording: said, not invented.
  EXPECT_TRUE(r.teams.empty());
  bool said = false;
  for (const std::string& n : r.notes) said |= n.find("task-layer") != std::string::npos;
  EXPECT_TRUE(said);
  const std::string html = ToHtml(r);
  EXPECT_EQ(HtmlErrors(html), "");
  EXPECT_EQ(ExternalReferences(html), "");
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("Capacity recommendation"), std::string::npos);
  EXPECT_NE(html.find("idle-allocation"), std::string::npos);  // GPU 7, among the problems
  auto j = nlohmann::json::parse(ToJson(r));
  EXPECT_EQ(j["fleet"]["gpus"], 8);
  EXPECT_EQ(j["gpus"].size(), 8u);
  EXPECT_EQ(j["findings"].size(), r.diagnosis.findings.size());
  EXPECT_FALSE(j["capacity"]["verdict"].get<std::string>().empty());
}

TEST(Report, FaultScenarioShowsTheFaultInProblemsAndHistory) {
  MemoryStore store;
  RecordScenario("ecc-uncorrectable", 30 * 60, 15, &store);
  Report r = Make(store, 1800);
  ASSERT_EQ(r.gpus.size(), 1u);
  EXPECT_EQ(r.gpus[0].xids.count("48"), 1u);
  EXPECT_EQ(r.gpus[0].xids.at("48"), 1);
  EXPECT_GE(r.fleet.findings[0], 1);  // critical: uncorrectable errors
  const std::string html = ToHtml(r);
  EXPECT_EQ(HtmlErrors(html), "");
  EXPECT_EQ(ExternalReferences(html), "");
  EXPECT_NE(html.find("XID 48"), std::string::npos);
  EXPECT_NE(html.find("uncorrectable ECC errors"), std::string::npos);
}

TEST(Report, ImportedTeamsQuotasCostAndQueueAreShownAndDriveTheRecommendation) {
  MemoryStore store;
  RecordScenario("power-cap", 60 * 60, 15, &store);
  const int64_t start_s = store.first_ms() / 1000;
  const int steps = 240, step_s = 15;
  // Imported: task layer (per-job counters, queue waits) and governance (quota, cost; names not
  // final). Team research: one job with 2 GPUs for the hour, a quarter of it idle. Queue: jobs of
  // partition "gpu" wait about 2 h.
  std::string text;
  const char* les[] = {"60", "3600", "14400", "+Inf"};
  for (int k = 0; k <= steps; ++k) {
    const std::string ts = " " + std::to_string(start_s + k * step_s) + "\n";
    const double t = double(k * step_s);
    text +=
        "gpu_job_gpu_seconds_total{job_id=\"7\",user=\"ann\",team=\"research\","
        "partition=\"gpu\"} " +
        std::to_string(2 * t) + ts;
    text +=
        "gpu_job_idle_gpu_seconds_total{job_id=\"7\",user=\"ann\",team=\"research\","
        "partition=\"gpu\"} " +
        std::to_string(0.5 * t) + ts;
    text +=
        "gpu_job_energy_joules_total{job_id=\"7\",user=\"ann\",team=\"research\","
        "partition=\"gpu\"} " +
        std::to_string(600 * 2 * t) + ts;
    text += "gpu_team_quota_gpus{team=\"research\"} 4" + ts;
    text +=
        "gpu_cost_allocation_total{team=\"research\"} " + std::to_string(2 * t / 3600 * 2.5) + ts;
    text += "gpu_cost_idle_allocated_total{team=\"research\"} " +
            std::to_string(0.5 * t / 3600 * 2.5) + ts;
    for (int b = 0; b < 4; ++b)
      text += "gpu_job_queue_wait_seconds_bucket{partition=\"gpu\",le=\"" + std::string(les[b]) +
              "\"} " + std::to_string(b >= 2 ? k / 8 : 0) + ts;
  }
  ASSERT_TRUE(store.Import(text + "# EOF\n").ok());
  Report r = Make(store, 3600);
  ASSERT_EQ(r.teams.size(), 1u);
  EXPECT_NEAR(r.teams[0].gpu_hours, 2, 0.01);
  EXPECT_NEAR(r.teams[0].idle_gpu_hours, 0.5, 0.01);
  ASSERT_TRUE(r.teams[0].quota_gpus.has_value());
  EXPECT_EQ(*r.teams[0].quota_gpus, 4);
  EXPECT_TRUE(r.has_cost);
  EXPECT_FALSE(r.queue_wait.lines.empty());
  EXPECT_GT(r.capacity.queue_wait_p95_s, 3600);
  EXPECT_NEAR(r.capacity.idle_ratio, 0.25, 0.01);
  EXPECT_EQ(r.capacity.verdict, "reclaim");  // jobs queue while a quarter of held time is idle
  const std::string html = ToHtml(r);
  EXPECT_EQ(HtmlErrors(html), "");
  EXPECT_EQ(ExternalReferences(html), "");
  EXPECT_NE(html.find("research"), std::string::npos);
  EXPECT_NE(html.find("quota (GPUs)"), std::string::npos);
  EXPECT_NE(html.find("Queue wait by partition"), std::string::npos);
}

// Cost per output: services with gpu_service_* families (imported as the agent writes them) get a
// row each — cost and outputs over the period and their ratio — in the HTML and the JSON.
TEST(Report, ServicesShowTheirCostPerOutput) {
  MemoryStore store;
  RecordScenario("demo", 60 * 60, 15, &store);
  const int64_t start_s = store.first_ms() / 1000;
  std::string text;
  for (int k = 0; k <= 240; ++k) {
    const std::string ts = " " + std::to_string(start_s + k * 15) + "\n";
    // llm: 0.02 per 15 s (4.8 per hour) for 300 requests per 15 s; idle: costs, serves nothing.
    text += "gpu_service_cost_total{target=\"llm\"} " + std::to_string(0.02 * k) + ts;
    text += "gpu_service_outputs_total{target=\"llm\"} " + std::to_string(300 * k) + ts;
    text += "gpu_service_output_info{target=\"llm\",unit=\"request\"} 1" + ts;
    text += "gpu_service_cost_total{target=\"idle\"} " + std::to_string(0.01 * k) + ts;
    text += "gpu_service_outputs_total{target=\"idle\"} 0" + ts;
  }
  ASSERT_TRUE(store.Import(text + "# EOF\n").ok());
  Report r = Make(store, 3600);
  ASSERT_EQ(r.services.size(), 2u);
  const ServiceRow& idle = r.services[0];
  const ServiceRow& llm = r.services[1];
  EXPECT_EQ(llm.target, "llm");
  EXPECT_EQ(llm.unit, "request");
  EXPECT_NEAR(llm.cost, 4.8, 0.05);
  EXPECT_NEAR(llm.outputs, 72000, 720);
  EXPECT_NEAR(llm.cost_per_output, 4.8 / 72000, 1e-9);
  EXPECT_EQ(idle.target, "idle");
  EXPECT_TRUE(std::isnan(idle.cost_per_output));
  const std::string html = ToHtml(r);
  EXPECT_EQ(HtmlErrors(html), "");
  EXPECT_NE(html.find("Services: cost per output"), std::string::npos);
  EXPECT_NE(html.find("0.0667"), std::string::npos) << html;  // per 1000 requests
  const nlohmann::json j = nlohmann::json::parse(ToJson(r));
  ASSERT_EQ(j["services"].size(), 2u);
  EXPECT_TRUE(j["services"][0]["cost_per_output"].is_null());
  EXPECT_EQ(j["services"][1]["unit"], "request");
  // Without the families there is no section.
  MemoryStore plain;
  RecordScenario("demo", 60 * 60, 15, &plain);
  Report none = Make(plain, 3600);
  EXPECT_TRUE(none.services.empty());
  EXPECT_EQ(ToHtml(none).find("Services: cost per output"), std::string::npos);
}

TEST(Report, TheSelfContainmentCheckCatchesExternalReferences) {
  EXPECT_NE(ExternalReferences("<img src=\"https://x/y.png\">"), "");
  EXPECT_NE(ExternalReferences("<a href='http://x'>x</a>"), "");
  EXPECT_NE(ExternalReferences("<script>fetch('/x')</script>"), "");
  EXPECT_NE(ExternalReferences("<style>@import 'x.css';</style>"), "");
  EXPECT_EQ(ExternalReferences("<p>see https://example.com in text</p>"), "");
  EXPECT_NE(HtmlErrors("<html><body><p>unclosed <b>bold</p></body></html>"), "");
}

TEST(Report, BadPeriodIsRefused) {
  tsdb::MemoryQuerier empty;
  promql::Engine engine;
  Options options;
  options.time_ms = 1700000000000;
  options.period_s = 60;
  EXPECT_FALSE(Build(empty, engine, options).ok());
  options.period_s = 3600;
  auto r = Build(empty, engine, options);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->capacity.verdict, "unknown");
  EXPECT_EQ(HtmlErrors(ToHtml(*r)), "");
}

}  // namespace
}  // namespace gw::report
