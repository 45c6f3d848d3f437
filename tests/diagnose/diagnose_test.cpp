// Findings from scenarios: each fault scenario of scenarios/ is recorded as `serve` records it
// (collector over libnvml-sim.so in stepped time → Recorder → store), then diagnosed; the expected
// finding must appear with the right layer, cause and subject, and the healthy GPUs of the same
// run must have none. Task-layer, scheduling, governance and business families come from other
// modules; their tests below import those series as OpenMetrics text written in the test
// (marked "imported") beside simulated device data.
#include "diagnose/diagnose.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <cstdio>
#include <set>
#include <tuple>

#include "findings_util.h"
#include "support/sim_store.h"

namespace gw::diagnose {
namespace {

using testing::MemoryStore;
using testing::RecordScenario;

using testutil::EvidenceValue;
using testutil::Find;
using testutil::Key;
using testutil::Keys;

Diagnosis Diag(MemoryStore& store, double window_s) {
  return testutil::DiagnoseStore(store.querier(), store.last_ms(), window_s);
}

std::set<std::string> GpusWithFindings(const Diagnosis& d) {
  std::set<std::string> gpus;
  for (const Finding& f : d.findings)
    if (!f.subject.gpu.empty()) gpus.insert(f.subject.gpu);
  return gpus;
}

TEST(Diagnose, PowerCapIsBusyButThrottledByThePowerCapOnGpu0Only) {
  MemoryStore store;
  RecordScenario("power-cap", 30 * 60, 15, &store);
  Diagnosis d = Diag(store, 1800);
  EXPECT_EQ(Keys(d), (std::set<Key>{{"busy-but-throttled", "power cap", "0"}})) << ToText(d);
  const Finding* f = Find(d, "busy-but-throttled", "power cap", "0");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->layer, Layer::kDevice);
  EXPECT_EQ(f->severity, Severity::kWarning);  // the limit was lowered: 300 W of 700 W
  EXPECT_TRUE(f->active);
  EXPECT_NEAR(EvidenceValue(*f, "enforced power limit"), 300, 1);
  EXPECT_NEAR(EvidenceValue(*f, "default power limit"), 700, 1);
  EXPECT_GT(EvidenceValue(*f, "share of time"), 0.9);
  EXPECT_LT(EvidenceValue(*f, "SM clock"), 0.7);
  EXPECT_NE(f->title.find("300 W"), std::string::npos) << f->title;
  // The cap started at 60 s: the first step with a whole 5-minute sub-window above 10 %.
  EXPECT_LE(f->since_ms, store.first_ms() + 3 * 60 * 1000);
  for (const Evidence& e : f->evidence) EXPECT_FALSE(e.query.empty()) << e.what;
}

// A year asked of four minutes of data: the checks run over the data present, so steps, held
// times and the text come from those minutes (not "held 73h", one year / 120 steps); data that
// ended a day before the evaluation time makes nothing "still active".
TEST(Diagnose, AYearAskedOfFourMinutesOfDataIsFourMinutes) {
  MemoryStore store;
  RecordScenario("power-cap", 4 * 60, 15, &store);
  promql::Engine engine;
  Options options;
  options.time_ms = store.last_ms();
  options.window_s = 365 * 86400;
  auto d = Diagnose(store.querier(), engine, options);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->data_start_ms, store.first_ms());
  EXPECT_EQ(d->data_end_ms, store.last_ms());
  EXPECT_EQ(d->step_s, 15);
  const Finding* f = Find(*d, "busy-but-throttled", "power cap", "0");
  ASSERT_NE(f, nullptr) << ToText(*d);
  EXPECT_LE(f->held_s, 240);
  EXPECT_TRUE(f->active);
  const std::string text = ToText(*d);
  EXPECT_NE(text.find("Findings over the 4m of data in the last 1y"), std::string::npos) << text;
  EXPECT_EQ(text.find("73h"), std::string::npos) << text;
  EXPECT_NE(std::find(d->gpus.begin(), d->gpus.end(), "0"), d->gpus.end());
  EXPECT_NE(std::find(d->gpus.begin(), d->gpus.end(), store.Uuid("0")), d->gpus.end());
  // Evaluated a day after the data ended: the same finding, no longer active.
  options.time_ms = store.last_ms() + 86400 * 1000LL;
  auto later = Diagnose(store.querier(), engine, options);
  ASSERT_TRUE(later.ok());
  const Finding* old = Find(*later, "busy-but-throttled", "power cap", "0");
  ASSERT_NE(old, nullptr) << ToText(*later);
  EXPECT_FALSE(old->active);
  // The JSON carries the data's bounds and the GPUs, and reads back.
  auto back = FromJson(ToJson(*d));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->data_start_ms, d->data_start_ms);
  EXPECT_EQ(back->data_end_ms, d->data_end_ms);
  EXPECT_EQ(back->gpus, d->gpus);
}

TEST(Diagnose, CoolingFailureIsThermalThrottlingNearTheSlowdownThreshold) {
  MemoryStore store;
  RecordScenario("cooling-failure", 20 * 60, 15, &store);
  Diagnosis d = Diag(store, 1200);
  const Finding* hot = Find(d, "busy-but-throttled", "thermal", "0");
  ASSERT_NE(hot, nullptr) << ToText(d);
  EXPECT_EQ(hot->severity, Severity::kWarning);
  EXPECT_GE(EvidenceValue(*hot, "temperature (max)"), 87);
  const Finding* near = Find(d, "near-thermal-limit", "", "0");
  ASSERT_NE(near, nullptr) << ToText(d);
  EXPECT_EQ(near->layer, Layer::kDevice);
  EXPECT_EQ(near->severity, Severity::kWarning);  // it reached 89 °C, its slowdown threshold
  EXPECT_NEAR(EvidenceValue(*near, "slowdown threshold"), 89, 0.5);
  EXPECT_EQ(Find(d, "busy-but-throttled", "power cap", "0"), nullptr) << ToText(d);
  EXPECT_EQ(Find(d, "busy-but-throttled", "power brake", "0"), nullptr) << ToText(d);
}

TEST(Diagnose, PowerBrakeIsCriticalAndOverWhenTheBrakeIsReleased) {
  MemoryStore store;
  RecordScenario("power-brake", 20 * 60, 15, &store);
  Diagnosis d = Diag(store, 1200);
  EXPECT_EQ(Keys(d), (std::set<Key>{{"busy-but-throttled", "power brake", "0"}})) << ToText(d);
  const Finding* f = Find(d, "busy-but-throttled", "power brake", "0");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kCritical);
  EXPECT_FALSE(f->active);  // released at 90 s
  EXPECT_LT(f->last_ms, store.first_ms() + 8 * 60 * 1000);
}

TEST(Diagnose, EccScenariosAreTrendsHeadingForReplacement) {
  {
    MemoryStore store;
    RecordScenario("ecc-uncorrectable", 30 * 60, 15, &store);
    Diagnosis d = Diag(store, 1800);
    const Finding* dbe = Find(d, "ecc-trend", "uncorrectable errors", "0");
    ASSERT_NE(dbe, nullptr) << ToText(d);
    EXPECT_EQ(dbe->severity, Severity::kCritical);
    EXPECT_EQ(EvidenceValue(*dbe, "uncorrectable errors since"), 2);
    EXPECT_NE(dbe->title.find(" has 2 uncorrectable ECC errors since"), std::string::npos)
        << dbe->title;
    const Finding* trend = Find(d, "ecc-trend", "corrected-error trend", "0");
    ASSERT_NE(trend, nullptr) << ToText(d);
    EXPECT_EQ(trend->severity, Severity::kWarning);
    EXPECT_NEAR(EvidenceValue(*trend, "corrected errors per hour"), 120, 15);
    EXPECT_EQ(GpusWithFindings(d), std::set<std::string>{"0"});
  }
  {
    MemoryStore store;
    RecordScenario("row-remap", 10 * 60, 15, &store);
    Diagnosis d = Diag(store, 600);
    EXPECT_EQ(Keys(d), (std::set<Key>{{"ecc-trend", "row remap pending", "0"},
                                      {"ecc-trend", "row remap failed", "0"}}))
        << ToText(d);
    EXPECT_EQ(Find(d, "ecc-trend", "row remap failed", "0")->severity, Severity::kCritical);
  }
  {
    MemoryStore store;
    RecordScenario("page-retirement", 10 * 60, 15, &store);
    Diagnosis d = Diag(store, 600);
    EXPECT_NE(Find(d, "ecc-trend", "page retirement pending", "0"), nullptr) << ToText(d);
    EXPECT_NE(Find(d, "ecc-trend", "uncorrectable errors", "0"), nullptr) << ToText(d);
  }
}

TEST(Diagnose, MemoryPressureSustainedAndSpikesNearOom) {
  MemoryStore store;
  RecordScenario("memory-pressure", 20 * 60, 15, &store);
  Diagnosis d = Diag(store, 1200);
  EXPECT_EQ(Keys(d), (std::set<Key>{{"memory-pressure", "sustained", "0"},
                                    {"memory-pressure", "spikes near OOM", "1"}}))
      << ToText(d);
  const Finding* spikes = Find(d, "memory-pressure", "spikes near OOM", "1");
  ASSERT_NE(spikes, nullptr);
  EXPECT_EQ(spikes->layer, Layer::kTask);
  EXPECT_GT(EvidenceValue(*spikes, "highest memory in use / total"), 0.95);
  EXPECT_LT(EvidenceValue(*spikes, "memory in use (avg)"), 0.85 * 81559.0 * 1024 * 1024);
}

// A store that scraped /metrics every 15 s: the per-cycle peak is one 1 s cycle in fifteen, so a
// spike between two scrapes is only in gpu_memory_used_peak_window_bytes (the highest per-cycle
// peak of the last collect.peak_window). Here the per-cycle peak and the gauge stay where the
// power-cap scenario has them (no memory finding), and the window family, with the same labels,
// has one scrape at 98 % of GPU 1's memory: the spike check must read it.
TEST(Diagnose, ScrapedEvery15sTheSpikeOnlyTheWindowPeakHoldsIsFound) {
  MemoryStore store;
  RecordScenario("power-cap", 10 * 60, 15, &store);
  ASSERT_EQ(Find(Diag(store, 600), "memory-pressure", "spikes near OOM", "1"), nullptr);
  auto select = [&](const std::string& name) {
    std::vector<tsdb::SeriesData> out;
    auto m = tsdb::Matcher::Make(tsdb::MatchType::kEqual, "__name__", name);
    EXPECT_TRUE(store.querier().Select({*m}, 0, INT64_MAX / 2, &out).ok());
    return out;
  };
  double total1 = 0;
  for (const tsdb::SeriesData& s : select("gpu_memory_total_bytes"))
    if (tsdb::LabelValue(s.labels, "gpu") == "1") total1 = s.samples.back().v;
  ASSERT_GT(total1, 0);
  const double spike = 0.98 * total1;
  std::string text;
  int64_t spike_ms = 0;
  const std::vector<tsdb::SeriesData> peaks = select("gpu_memory_used_peak_bytes");
  ASSERT_FALSE(peaks.empty());
  for (const tsdb::SeriesData& s : peaks) {
    std::string labels;
    for (const tsdb::Label& l : s.labels)
      if (l.name != "__name__")
        labels += (labels.empty() ? "" : ",") + l.name + "=\"" + l.value + "\"";
    const bool gpu1 = tsdb::LabelValue(s.labels, "gpu") == "1";
    for (size_t i = 0; i < s.samples.size(); ++i) {
      const tsdb::Sample& x = s.samples[i];
      ASSERT_LT(x.v, 0.9 * total1);  // the scraped per-cycle peak never saw it
      const bool at_spike = gpu1 && i == s.samples.size() / 2;
      if (at_spike) spike_ms = x.t_ms;
      char line[64];
      std::snprintf(line, sizeof line, " %.17g %lld.%03lld\n", at_spike ? spike : x.v,
                    static_cast<long long>(x.t_ms / 1000), static_cast<long long>(x.t_ms % 1000));
      text += "gpu_memory_used_peak_window_bytes{" + labels + "}" + line;
    }
  }
  ASSERT_TRUE(store.Import(text + "# EOF\n").ok());
  Diagnosis d = Diag(store, 600);
  EXPECT_EQ(Keys(d), (std::set<Key>{{"busy-but-throttled", "power cap", "0"},
                                    {"memory-pressure", "spikes near OOM", "1"}}))
      << ToText(d);
  const Finding* f = Find(d, "memory-pressure", "spikes near OOM", "1");
  ASSERT_NE(f, nullptr) << ToText(d);
  EXPECT_NEAR(EvidenceValue(*f, "highest memory in use / total"), 0.98, 1e-9);
  const Evidence* peak = nullptr;
  for (const Evidence& e : f->evidence)
    if (e.what == "highest memory in use") peak = &e;
  ASSERT_NE(peak, nullptr) << ToText(d);
  EXPECT_EQ(peak->value, spike);
  EXPECT_NE(peak->query.find("gpu_memory_used_peak_window_bytes"), std::string::npos);
  EXPECT_LE(f->since_ms, spike_ms);
  EXPECT_GE(f->last_ms, spike_ms);
}

TEST(Diagnose, InefficientJobsStarvedMemoryBoundAndIdleAllocated) {
  MemoryStore store;
  RecordScenario("inefficient-jobs", 40 * 60, 15, &store);
  Diagnosis d = Diag(store, 2400);
  EXPECT_EQ(Keys(d), (std::set<Key>{{"data-starved", "", "0"},
                                    {"memory-bound", "", "1"},
                                    {"idle-allocation", "", "2"}}))
      << ToText(d);
  EXPECT_EQ(Find(d, "data-starved", "", "0")->layer, Layer::kTask);
  EXPECT_EQ(Find(d, "memory-bound", "", "1")->layer, Layer::kTask);
  const Finding* idle = Find(d, "idle-allocation", "", "2");
  EXPECT_EQ(idle->layer, Layer::kGovernance);
  EXPECT_EQ(idle->severity, Severity::kWarning);  // idle for more than 30 minutes
  EXPECT_NEAR(EvidenceValue(*idle, "memory in use"), 20480.0 * 1024 * 1024, 64.0 * 1024 * 1024);
}

TEST(Diagnose, IdleAllocatedScenarioFlagsTheGpuHeldByAProcessNotTheFreeOne) {
  MemoryStore store;
  RecordScenario("idle-allocated", 120, 15, &store);
  Diagnosis d = Diag(store, 120);
  EXPECT_EQ(Keys(d), (std::set<Key>{{"idle-allocation", "", "0"}})) << ToText(d);
}

// The demo's script (its first two hours): GPU 0 pinned at its (default) power cap, GPU 3's airflow
// degrading from 20 to 32 min, GPU 6 memory-bound, GPU 7 idle but allocated. GPUs 1, 2 (an ECC
// trend well under the review threshold), 4 and 5 (bursty inference) are healthy and must have no
// finding.
TEST(Diagnose, DemoFindsWhatItsScriptShowsAndNothingOnTheHealthyGpus) {
  MemoryStore store;
  // Two hours: the hourly checkpoint (55–57 min) and GPU 6's six spiky phases included.
  RecordScenario("demo", 2 * 3600, 15, &store);
  Diagnosis d = Diag(store, 2 * 3600);
  const std::set<std::string> gpus = GpusWithFindings(d);
  for (const char* healthy : {"1", "2", "4", "5"}) EXPECT_EQ(gpus.count(healthy), 0u) << ToText(d);
  EXPECT_EQ(Keys(d),
            (std::set<Key>{{"busy-but-throttled", "power cap", "0"},
                           {"busy-but-throttled", "thermal (held at its temperature target)", "3"},
                           {"near-thermal-limit", "", "3"},
                           {"memory-bound", "", "6"},
                           {"idle-allocation", "", "7"}}))
      << ToText(d);
  const Finding* cap = Find(d, "busy-but-throttled", "power cap", "0");
  ASSERT_NE(cap, nullptr) << ToText(d);
  EXPECT_EQ(cap->severity, Severity::kInfo);  // at its default limit: power-bound, not capped
  for (const Finding& f : d.findings) {
    EXPECT_NE(f.severity, Severity::kCritical) << f.title;
    if (f.severity == Severity::kWarning) {
      EXPECT_EQ(f.kind, "idle-allocation") << f.title;
    }
  }
}

// --- Families from other modules, imported as OpenMetrics text written here. ---

// A latency histogram for `target`: `rps` requests per second, all under 100 ms, except from
// `slow_from_s` on, when 60 % take 250–500 ms; 1 % fail with code 500 once slow.
std::string ImportedLatency(const std::string& target, int64_t start_s, int steps, int step_s,
                            int slow_from_s) {
  const double bounds[] = {0.05, 0.1, 0.25, 0.5, 1};
  const char* les[] = {"0.05", "0.1", "0.25", "0.5", "1", "+Inf"};
  double cum[6] = {0, 0, 0, 0, 0, 0};
  double ok = 0, failed = 0;
  std::string buckets[6], codes[2];
  const double per_step = 10.0 * step_s;
  for (int k = 0; k <= steps; ++k) {
    const bool slow = k * step_s >= slow_from_s;
    if (k > 0) {
      // per step: fast requests land in le=0.1, slow ones in le=0.5
      const double fast_n = slow ? 0.4 * per_step : per_step, slow_n = per_step - fast_n;
      for (int b = 0; b < 6; ++b) {
        if (b == 5 || bounds[b] >= 0.1) cum[b] += fast_n;
        if (b == 5 || (b < 5 && bounds[b] >= 0.5)) cum[b] += slow_n;
      }
      ok += slow ? 0.99 * per_step : per_step;
      failed += slow ? 0.01 * per_step : 0;
    }
    const std::string ts = " " + std::to_string(start_s + k * step_s) + "\n";
    for (int b = 0; b < 6; ++b)
      buckets[b] += "inference_request_duration_seconds_bucket{target=\"" + target + "\",le=\"" +
                    les[b] + "\"} " + std::to_string(cum[b]) + ts;
    codes[0] += "inference_requests_total{target=\"" + target + "\",code=\"200\"} " +
                std::to_string(ok) + ts;
    codes[1] += "inference_requests_total{target=\"" + target + "\",code=\"500\"} " +
                std::to_string(failed) + ts;
  }
  std::string out;
  for (const std::string& b : buckets) out += b;
  return out + codes[0] + codes[1];
}

std::string Constant(const std::string& series, double v, int64_t start_s, int steps, int step_s) {
  std::string out;
  for (int k = 0; k <= steps; ++k)
    out += series + " " + std::to_string(v) + " " + std::to_string(start_s + k * step_s) + "\n";
  return out;
}

TEST(Diagnose, ImportedBusinessLatencyIsLinkedToTheThrottledGpuServingIt) {
  MemoryStore store;
  RecordScenario("power-cap", 20 * 60, 15, &store);
  const int64_t start_s = store.first_ms() / 1000;
  const int steps = 80;
  // "chat" runs on GPU 0 (capped at 60 s) and slows down at 75 s; "search" runs on GPU 1
  // (healthy) and slows down at 10 min: not a device problem.
  std::string text =
      ImportedLatency("chat", start_s, steps, 15, 75) +
      ImportedLatency("search", start_s, steps, 15, 600) +
      Constant("gpu_service_info{target=\"chat\",gpu=\"0\",uuid=\"" + store.Uuid("0") + "\"}", 1,
               start_s, steps, 15) +
      Constant("gpu_service_info{target=\"search\",gpu=\"1\",uuid=\"" + store.Uuid("1") + "\"}", 1,
               start_s, steps, 15) +
      "# EOF\n";
  ASSERT_TRUE(store.Import(text).ok());
  Diagnosis d = Diag(store, 1200);
  const Finding* chat = nullptr;
  const Finding* search = nullptr;
  for (const Finding& f : d.findings) {
    if (f.kind != "business-latency") continue;
    if (f.subject.target == "chat") chat = &f;
    if (f.subject.target == "search") search = &f;
  }
  ASSERT_NE(chat, nullptr) << ToText(d);
  EXPECT_EQ(chat->layer, Layer::kBusiness);
  EXPECT_EQ(chat->severity, Severity::kWarning);
  EXPECT_NE(chat->cause.find("power cap"), std::string::npos) << chat->cause;
  EXPECT_NE(chat->cause.find("GPU 0"), std::string::npos) << chat->cause;
  EXPECT_EQ(chat->related_gpus, std::vector<std::string>{"0"});
  EXPECT_GT(EvidenceValue(*chat, "request latency, 95th percentile (max"), 0.2);
  EXPECT_GT(EvidenceValue(*chat, "failed requests"), 0.005);
  ASSERT_NE(search, nullptr) << ToText(d);
  EXPECT_EQ(search->cause, "not the GPUs");
  EXPECT_EQ(search->severity, Severity::kInfo);
  // --gpu 1 shows the search finding (served by GPU 1) and nothing of GPU 0's.
  Diagnosis only1 = Filter(d, {.gpu = "1"});
  ASSERT_EQ(only1.findings.size(), 1u) << ToText(only1);
  EXPECT_EQ(only1.findings[0].subject.target, "search");
}

TEST(Diagnose, ImportedThermalThrottlingExplainsTheLatencyOfTheServiceOnIt) {
  MemoryStore store;
  RecordScenario("cooling-failure", 20 * 60, 15, &store);
  const int64_t start_s = store.first_ms() / 1000;
  std::string text =
      ImportedLatency("chat", start_s, 80, 15, 90) +
      Constant("gpu_service_info{target=\"chat\",gpu=\"0\",uuid=\"" + store.Uuid("0") + "\"}", 1,
               start_s, 80, 15) +
      "# EOF\n";
  ASSERT_TRUE(store.Import(text).ok());
  Diagnosis d = Diag(store, 1200);
  const Finding* chat = nullptr;
  for (const Finding& f : d.findings)
    if (f.kind == "business-latency") chat = &f;
  ASSERT_NE(chat, nullptr) << ToText(d);
  EXPECT_NE(chat->cause.find("thermal"), std::string::npos) << chat->cause;
  EXPECT_NE(chat->cause.find("GPU 0"), std::string::npos) << chat->cause;
}

TEST(Diagnose, ImportedQueueWaitAndPoolCongestionArePerPartition) {
  // Task layer: gpu_job_queue_wait_seconds per partition; "gpu" jobs wait ~2 h, "debug" ones a
  // minute. Governance (name not final): gpu_pool_congestion_ratio.
  const int64_t start_s = 1700000000;
  const int steps = 240, step_s = 15;  // one hour
  std::string text;
  const char* les[] = {"60", "600", "3600", "14400", "+Inf"};
  for (int k = 0; k <= steps; ++k) {
    const std::string ts = " " + std::to_string(start_s + k * step_s) + "\n";
    const int started = k / 8;  // a job starts every 2 minutes in each partition
    for (int b = 0; b < 5; ++b) {
      text += "gpu_job_queue_wait_seconds_bucket{partition=\"gpu\",le=\"" + std::string(les[b]) +
              "\"} " + std::to_string(b >= 3 ? started : 0) + ts;
    }
  }
  for (int k = 0; k <= steps; ++k) {
    const std::string ts = " " + std::to_string(start_s + k * step_s) + "\n";
    for (int b = 0; b < 5; ++b)
      text += "gpu_job_queue_wait_seconds_bucket{partition=\"debug\",le=\"" + std::string(les[b]) +
              "\"} " + std::to_string(k / 8) + ts;
  }
  text += Constant("gpu_jobs{state=\"PENDING\"}", 12, start_s, steps, step_s);
  text += Constant("gpu_idle_allocated_gpus", 0, start_s, steps, step_s);
  text += Constant("gpu_pool_congestion_ratio{partition=\"gpu\"}", 2.5, start_s, steps, step_s);
  text += Constant("gpu_pool_congestion_ratio{partition=\"debug\"}", 0.2, start_s, steps, step_s);
  text += "# EOF\n";
  MemoryStore store;
  ASSERT_TRUE(store.Import(text).ok()) << store.Import(text).message();
  promql::Engine engine;
  Options options;
  options.time_ms = (start_s + steps * step_s) * 1000;
  options.window_s = 3600;
  auto d = Diagnose(store.querier(), engine, options);
  ASSERT_TRUE(d.ok());
  std::set<std::pair<std::string, std::string>> got;
  for (const Finding& f : d->findings) {
    EXPECT_EQ(f.kind, "queue-congestion") << f.title;
    EXPECT_EQ(f.layer, Layer::kScheduling);
    got.insert({f.cause, f.subject.partition});
  }
  EXPECT_EQ(got, (std::set<std::pair<std::string, std::string>>{{"queue wait", "gpu"},
                                                                {"pool congested", "gpu"}}))
      << ToText(*d);
}

TEST(Diagnose, ImportedQuotaDriftOverAndUnderButNotOnQuota) {
  // Task layer gpu_job_gpus per job; governance gpu_team_quota_gpus (name not final).
  const int64_t start_s = 1700000000;
  const int steps = 240, step_s = 15;
  std::string text;
  text += Constant("gpu_team_quota_gpus{team=\"research\"}", 4, start_s, steps, step_s);
  text += Constant("gpu_team_quota_gpus{team=\"vision\"}", 8, start_s, steps, step_s);
  text += Constant("gpu_team_quota_gpus{team=\"nlp\"}", 4, start_s, steps, step_s);
  text += Constant("gpu_job_gpus{job_id=\"1\",user=\"ann\",team=\"research\",partition=\"gpu\"}", 4,
                   start_s, steps, step_s);
  text += Constant("gpu_job_gpus{job_id=\"2\",user=\"bob\",team=\"research\",partition=\"gpu\"}", 2,
                   start_s, steps, step_s);
  text += Constant("gpu_job_gpus{job_id=\"3\",user=\"cid\",team=\"vision\",partition=\"gpu\"}", 1,
                   start_s, steps, step_s);
  text += Constant("gpu_job_gpus{job_id=\"4\",user=\"dee\",team=\"nlp\",partition=\"gpu\"}", 4,
                   start_s, steps, step_s);
  text += "# EOF\n";
  MemoryStore store;
  ASSERT_TRUE(store.Import(text).ok());
  promql::Engine engine;
  Options options;
  options.time_ms = (start_s + steps * step_s) * 1000;
  options.window_s = 3600;
  auto d = Diagnose(store.querier(), engine, options);
  ASSERT_TRUE(d.ok());
  std::set<std::pair<std::string, std::string>> got;
  for (const Finding& f : d->findings) {
    EXPECT_EQ(f.layer, Layer::kGovernance);
    got.insert({f.cause, f.subject.team});
  }
  EXPECT_EQ(got, (std::set<std::pair<std::string, std::string>>{{"over quota", "research"},
                                                                {"under-used quota", "vision"}}))
      << ToText(*d);
  Diagnosis research = Filter(*d, {.team = "research"});
  ASSERT_EQ(research.findings.size(), 1u);
  EXPECT_NEAR(research.findings[0].evidence[0].value, 1.5, 1e-9);
}

TEST(Diagnose, ImportedAllocationsNameTheJobAndTheJobFilterKeepsItsGpus) {
  MemoryStore store;
  RecordScenario("power-cap", 20 * 60, 15, &store);
  const int64_t start_s = store.first_ms() / 1000;
  ASSERT_TRUE(store
                  .Import(Constant("gpu_allocation_info{gpu=\"0\",uuid=\"" + store.Uuid("0") +
                                       "\",job_id=\"42\",user=\"ann\",team=\"research\","
                                       "partition=\"gpu\"}",
                                   1, start_s, 80, 15) +
                          "# EOF\n")
                  .ok());
  Diagnosis d = Diag(store, 1200);
  const Finding* f = Find(d, "busy-but-throttled", "power cap", "0");
  ASSERT_NE(f, nullptr) << ToText(d);
  EXPECT_EQ(f->subject.job, "42");
  EXPECT_EQ(f->subject.team, "research");
  EXPECT_EQ(Filter(d, {.job = "42"}).findings.size(), 1u);
  EXPECT_EQ(Filter(d, {.job = "7"}).findings.size(), 0u);
  EXPECT_EQ(Filter(d, {.team = "research"}).findings.size(), 1u);
  EXPECT_EQ(Filter(d, {.gpu = "1"}).findings.size(), 0u);
  EXPECT_EQ(Filter(d, {.gpu = f->subject.uuid}).findings.size(), 1u);
}

TEST(Diagnose, JsonRoundTripAndReadableText) {
  MemoryStore store;
  RecordScenario("power-brake", 10 * 60, 15, &store);
  Diagnosis d = Diag(store, 600);
  ASSERT_FALSE(d.findings.empty());
  auto back = FromJson(ToJson(d));
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->findings.size(), d.findings.size());
  EXPECT_EQ(ToText(*back), ToText(d));
  const std::string text = ToText(d);
  EXPECT_NE(text.find("DEVICE LAYER"), std::string::npos) << text;
  EXPECT_NE(text.find("CRITICAL"), std::string::npos) << text;
  EXPECT_NE(text.find("action:"), std::string::npos) << text;
  EXPECT_NE(text.find("rate(gpu_clock_event_seconds_total"), std::string::npos) << text;
  EXPECT_FALSE(FromJson("{\"status\":\"error\",\"error\":\"boom\"}").ok());
  EXPECT_FALSE(FromJson("not json").ok());
  EXPECT_FALSE(FromJson("{\"status\":\"success\",\"data\":{}}").ok());
}

TEST(Diagnose, BadOptionsAreRefusedAndAnEmptyStoreHasNoFindings) {
  tsdb::MemoryQuerier empty;
  promql::Engine engine;
  Options options;
  options.time_ms = 1700000000000;
  options.window_s = 10;
  EXPECT_FALSE(Diagnose(empty, engine, options).ok());
  options.window_s = 3600;
  auto d = Diagnose(empty, engine, options);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->findings.empty());
  EXPECT_TRUE(d->errors.empty()) << d->errors.front();
  EXPECT_NE(ToText(*d).find("none"), std::string::npos);
}

}  // namespace
}  // namespace gw::diagnose
