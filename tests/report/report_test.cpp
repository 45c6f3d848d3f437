// The report renders for the demo and for fault scenarios (recorded as `serve` records them), is
// valid HTML (parsed strictly by html5lib, python3-html5lib from Debian) and self-contained (no
// script, no external reference); its JSON carries the same content. Team, quota, cost and queue
// families come from other modules: the test imports them as OpenMetrics text written here.
#include "report/report.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>

#include "diagnose/checks.h"
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

// Team research holds 2 GPUs (quota 4) for the one hour the store has, in a 7-day report: the
// average is over that hour (2 GPUs, 50 % of the quota), not over 168 hours (1 %), and the report
// says the figures cover 1h of the period.
TEST(Report, AveragesAreOverTheDataPresentAndPartialCoverageIsSaid) {
  MemoryStore store;
  RecordScenario("power-cap", 60 * 60, 15, &store);
  const int64_t start_s = store.first_ms() / 1000;
  std::string text;
  for (int k = 0; k <= 240; ++k) {
    const std::string ts = " " + std::to_string(start_s + k * 15) + "\n";
    text +=
        "gpu_job_gpu_seconds_total{job_id=\"7\",user=\"ann\",team=\"research\",partition=\"gpu\"}"
        " " +
        std::to_string(2 * 15 * k) + ts;
    text += "gpu_team_quota_gpus{team=\"research\"} 4" + ts;
  }
  ASSERT_TRUE(store.Import(text + "# EOF\n").ok());
  Report r = Make(store, 7 * 86400);
  EXPECT_NEAR(double(r.data_end_ms - r.data_start_ms) / 1000, 3600, 2);
  ASSERT_EQ(r.teams.size(), 1u);
  EXPECT_NEAR(r.teams[0].avg_gpus_held, 2, 0.01);
  const std::string html = ToHtml(r);
  EXPECT_EQ(HtmlErrors(html), "");
  EXPECT_NE(html.find("Figures are over the 1h of data in the last 7d"), std::string::npos) << html;
  EXPECT_NE(html.find("2.0 / 4 = " + diagnose::FormatValue(0.5, "ratio")), std::string::npos)
      << html;
  const nlohmann::json j = nlohmann::json::parse(ToJson(r));
  EXPECT_EQ(j["coverage"], "the 1h of data in the last 7d");
  EXPECT_NEAR(j["teams"][0]["avg_gpus_held"].get<double>(), 2, 0.01);
  // The whole period covered: no coverage note.
  Report full = Make(store, 3600);
  EXPECT_EQ(ToHtml(full).find("Figures are over"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(ToJson(full))["coverage"], "the last 1h");
}

// Alerts of the agent's rules that fired (ALERTS series in the store, as the rule evaluation writes
// them): listed with their firing time measured from the samples, pending ones left out; the
// fleet cards count them beside the findings.
TEST(Report, AlertsThatFiredAreListedWithTheirFiringTime) {
  MemoryStore store;
  RecordScenario("demo", 60 * 60, 15, &store);
  const int64_t start_s = store.first_ms() / 1000;
  std::string text;
  const std::string power =
      "ALERTS{alertname=\"GpuPowerAtLimit\",alertstate=\"firing\",gpu=\"0\",layer=\"device\","
      "severity=\"warning\"} 1 ";
  // Fired for 10 minutes from minute 20 (41 evaluations 15 s apart), and again for the last
  // 2 minutes (still firing at the end).
  for (int k = 0; k <= 40; ++k) text += power + std::to_string(start_s + 1200 + 15 * k) + "\n";
  for (int k = 0; k <= 8; ++k) text += power + std::to_string(start_s + 3480 + 15 * k) + "\n";
  for (int k = 0; k <= 4; ++k)
    text += "ALERTS{alertname=\"GpuMemoryHigh\",alertstate=\"pending\",gpu=\"1\"} 1 " +
            std::to_string(start_s + 600 + 15 * k) + "\n";
  ASSERT_TRUE(store.Import(text + "# EOF\n").ok());
  Report r = Make(store, 3600);
  ASSERT_EQ(r.alerts.size(), 1u);
  const AlertRow& a = r.alerts[0];
  EXPECT_EQ(a.alertname, "GpuPowerAtLimit");
  EXPECT_EQ(a.severity, "warning");
  EXPECT_EQ(a.labels, "gpu=0, layer=device");
  EXPECT_EQ(a.episodes, 2);
  EXPECT_DOUBLE_EQ(a.firing_s, 615 + 135);  // each episode: last - first + one interval
  EXPECT_TRUE(a.active);
  const std::string html = ToHtml(r);
  EXPECT_EQ(HtmlErrors(html), "");
  EXPECT_NE(html.find("<h2>Alerts that fired</h2>"), std::string::npos);
  EXPECT_NE(html.find("12m30s in 2 episodes"), std::string::npos) << html;
  EXPECT_NE(html.find("<b>1 (1)</b>alerts that fired (still firing)"), std::string::npos) << html;
  EXPECT_EQ(html.find("GpuMemoryHigh"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(ToJson(r))["alerts"][0]["firing_seconds"], 750);
  // None fired: said.
  MemoryStore plain;
  RecordScenario("demo", 30 * 60, 15, &plain);
  const std::string none = ToHtml(Make(plain, 1800));
  EXPECT_NE(none.find("No alert fired in the period"), std::string::npos);
}

// Outcomes and throughput per team from job records that ended in the period; records outside
// it are not counted; without outcome data the report says so.
TEST(Report, OutcomesAndThroughputPerTeamFromJobRecords) {
  MemoryStore store;
  RecordScenario("demo", 60 * 60, 15, &store);
  const int64_t end_s = store.last_ms() / 1000;
  auto job = [&](const std::string& id, const std::string& team, int64_t ended_ago_s,
                 const char* outcome, const char* cause) {
    jobs::JobRecord r;
    r.job_id = id;
    r.team = team;
    r.state = "COMPLETED";
    r.start_time = end_s - ended_ago_s - 600;
    r.end_time = end_s - ended_ago_s;
    jobs::JobGpuStats g;
    g.gpu_seconds = 3600;  // one GPU-hour
    r.gpu = g;
    if (outcome) r.outcome = jobs::JobOutcomeRecord{outcome, cause, "", {}};
    return r;
  };
  std::vector<jobs::JobRecord> records = {
      job("1", "nlp", 100, "completed", "none"), job("2", "nlp", 200, "completed", "none"),
      job("3", "nlp", 300, "failed", "gpu_fault"), job("4", "nlp", 7200, "failed", "gpu_fault"),
      job("5", "vision", 100, nullptr, nullptr)};
  records[0].throughput = jobs::JobThroughputRecord{"samples", "m", 7200, 2, 7200, {}, {}};
  records[0].cost = jobs::JobCostRecord{"EUR", 1, 0, 2.0, 0, 0};
  promql::Engine engine;
  Options options;
  options.time_ms = store.last_ms();
  options.period_s = 3600;
  options.records = &records;
  auto r = Build(store.querier(), engine, options);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->outcomes.size(), 2u);
  const TeamOutcomeRow& nlp = r->outcomes[0];
  EXPECT_EQ(nlp.team, "nlp");
  EXPECT_EQ(nlp.jobs, 3);  // job 4 ended two hours ago
  EXPECT_EQ(nlp.completed, 2);
  EXPECT_EQ(nlp.gpu_failures, 1);
  const std::string html = ToHtml(*r);
  EXPECT_EQ(HtmlErrors(html), "");
  EXPECT_NE(html.find("Teams: job outcomes and throughput"), std::string::npos);
  EXPECT_NE(html.find(diagnose::FormatValue(2.0 / 3, "ratio") + " of 3"), std::string::npos)
      << html;
  EXPECT_NE(html.find("7200 samples<br>"), std::string::npos) << html;      // per GPU-hour
  EXPECT_NE(html.find("3600 samples per EUR"), std::string::npos) << html;  // per cost
  EXPECT_NE(html.find("no outcome data"), std::string::npos) << html;       // vision
  const nlohmann::json j = nlohmann::json::parse(ToJson(*r));
  EXPECT_NEAR(j["outcomes"][0]["success_ratio"].get<double>(), 2.0 / 3, 1e-9);
  EXPECT_TRUE(j["outcomes"][1]["success_ratio"].is_null());
  // No records at all: said.
  Report none = Make(store, 3600);
  EXPECT_NE(ToHtml(none).find("No outcome data"), std::string::npos);
}

// On a phone (420 px wide, Debian's chromium) the page does not scroll sideways: wide tables
// scroll in their own box; and no chart's axis label runs past its picture.
TEST(Report, FitsAPhoneScreenAndKeepsChartLabelsInside) {
  const std::string node = "/usr/bin/node";
  const std::string script = std::string(GW_SOURCE_DIR) + "/tests/report/phone_width.mjs";
  if (!std::filesystem::exists(node) || !std::filesystem::exists("/usr/bin/chromium") ||
      !std::filesystem::exists(std::string(GW_SOURCE_DIR) + "/tests/web/node_modules"))
    GTEST_SKIP() << "needs node, chromium and tests/web/node_modules (scripts/setup.sh)";
  MemoryStore store;
  RecordScenario("demo", 60 * 60, 15, &store);
  Report r = Make(store, 3600);
  ASSERT_EQ(r.gpus.size(), 8u);  // the wide per-GPU table with UUIDs
  testing::TempDir dir;
  const std::string file = dir / "report.html";
  testing::WriteFile(file, ToHtml(r));
  std::string out;
  ASSERT_EQ(testing::RunCommand({node, script, file, "420"}, &out, 120), 0) << out;
  const nlohmann::json j = nlohmann::json::parse(out.substr(out.find('{')));
  EXPECT_LE(j["scrollWidth"].get<int>(), 420) << out;
  EXPECT_EQ(j["labelsOutside"], nlohmann::json::array()) << out;
  EXPECT_GE(j["charts"].get<int>(), 1) << out;
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
