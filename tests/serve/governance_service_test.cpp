// The serve command's platform layer without a GPU or Slurm: snapshots built by hand, a stand-in
// squeue, a memory store, and reclaim commands that are real child processes (scripts that write
// down how they were called). Also the governance.* configuration keys.
#include "serve/governance_service.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/process.h"

namespace gw::serve {
namespace {

using gw::testing::ReadFile;
using gw::testing::TempDir;
using gw::testing::WaitFor;
using gw::testing::WriteFile;

constexpr double kT0 = 1700000000;

collect::GpuSnapshot Gpu(unsigned index, double util_ratio) {
  collect::GpuSnapshot g;
  g.values.fill(collect::kAbsent);
  g.identity.index = index;
  g.identity.uuid = "GPU-" + std::to_string(index);
  g.identity.name = "NVIDIA A100-SXM4-80GB";
  auto set = [&g](collect::Slot s, double v) { g.values[static_cast<size_t>(s)] = v; };
  set(collect::Slot::kUtilization, util_ratio);
  set(collect::Slot::kMemoryUsed, 1e8);
  set(collect::Slot::kMemoryTotal, 80e9);
  set(collect::Slot::kPower, 60);
  return g;
}

collect::Snapshot Snap(double t, double util0) {
  collect::Snapshot s;
  s.taken_unix_seconds = t;
  s.gpus = {Gpu(0, util0), Gpu(1, 0.9)};
  return s;
}

// Keeps every appended sample by series.
class MemoryAppender : public tsdb::Appender {
 public:
  Expected<Ref> GetRef(const tsdb::Labels& labels) override {
    for (size_t i = 0; i < series.size(); ++i)
      if (series[i] == labels) return Ref(i);
    series.push_back(labels);
    samples.emplace_back();
    return Ref(series.size() - 1);
  }
  Status Append(Ref ref, int64_t t_ms, double v) override {
    samples[ref].push_back({t_ms, v});
    return Status::Ok();
  }
  Status Commit() override {
    ++commits;
    return Status::Ok();
  }
  // The samples of the series named `name` whose labels include `label`=`value`.
  std::vector<tsdb::Sample> Of(const std::string& name, const std::string& label = "",
                               const std::string& value = "") const {
    for (size_t i = 0; i < series.size(); ++i) {
      if (tsdb::LabelValue(series[i], "__name__") != name) continue;
      if (!label.empty() && tsdb::LabelValue(series[i], label) != value) continue;
      return samples[i];
    }
    return {};
  }
  std::vector<tsdb::Labels> series;
  std::vector<std::vector<tsdb::Sample>> samples;
  int commits = 0;
};

struct Fixture {
  TempDir dir;
  config::Config config;
  Logger log;

  // squeue answers with `jobs_json`; `cancel` is the cancel command's script body.
  Fixture(const std::string& jobs_json, const std::string& cancel_body) : log(LogLevel::kError) {
    WriteFile(dir / "answer.json", R"({"meta": {}, "errors": [], "jobs": [)" + jobs_json + "]}");
    WriteFile(dir / "squeue", "#!/bin/sh\ncat '" + (dir / "answer.json") + "'\n");
    WriteFile(dir / "cancel", "#!/bin/sh\n" + cancel_body);
    chmod((dir / "squeue").c_str(), 0755);
    chmod((dir / "cancel").c_str(), 0755);
    config.storage.path = dir / "data";
    config.jobs.scheduler = "slurm";
    config.jobs.squeue_command = {dir / "squeue"};
    config.jobs.poll_interval_s = 0.1;
    config.governance.capacity_command.clear();
    config.governance.cancel_command = {dir / "cancel"};
    governance::ReclaimPolicy p;
    p.idle_for_s = 10;
    p.grace_s = 5;
    p.action = governance::ReclaimAction::kCancel;
    config.governance.settings.reclaim = {p};
    config.governance.settings.prices.default_gpu_hour = 3.6;  // 0.001 per GPU-second
  }
};

std::string RunningJob(const std::string& id, const std::string& gpus) {
  return R"js({"job_id": )js" + id + R"js(, "name": "nb", "job_state": "RUNNING",
    "user_name": "alice", "account": "physics", "partition": "gpu", "nodes": "n1",
    "submit_time": 1, "eligible_time": 1, "start_time": 2, "end_time": 9999999999,
    "gres_detail": ["gpu:1(IDX:)js" +
         gpus + R"js()"], "tres_alloc_str": "cpu=1,gres/gpu=1"})js";
}

std::vector<nlohmann::json> Decisions(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::istringstream in(ReadFile(path));
  for (std::string l; std::getline(in, l);) out.push_back(nlohmann::json::parse(l));
  return out;
}

TEST(GovernanceService, CancelsAfterNoticeAndGraceRecordsAndAppendsToTheStore) {
  Fixture f(RunningJob("5", "0"), "exit 0\n");
  // The cancel command writes down its arguments and the job facts it was given.
  WriteFile(f.dir / "cancel",
            "#!/bin/sh\necho \"$@ $GPUWARDEN_JOB_ID $GPUWARDEN_JOB_GPUS "
            "$GPUWARDEN_RECLAIM_STAGE\" >> '" +
                (f.dir / "called") + "'\n");
  JobsService jobs(f.config, &f.log, JobsServiceOptions{"/nonexistent", "n1"});
  jobs.Start();
  ASSERT_TRUE(WaitFor([&] { return !jobs.SlurmJobs().empty(); }, 10));
  MemoryAppender store;
  GovernanceService gov(f.config, &jobs, &store, &f.log);
  gov.Start();
  for (int t = 0; t <= 16; ++t) {
    collect::Snapshot s = Snap(kT0 + t, 0.0);
    jobs.OnSnapshot(s);
    gov.OnSnapshot(s, static_cast<int64_t>((kT0 + t) * 1000));
  }
  // The shell creates the file before it writes the line: wait for the whole line, not the file.
  ASSERT_TRUE(WaitFor(
      [&] {
        return std::filesystem::exists(f.dir / "called") &&
               ReadFile(f.dir / "called").find('\n') != std::string::npos;
      },
      10));
  EXPECT_EQ(ReadFile(f.dir / "called"), "5 5 0 action\n");
  const std::string log = DecisionsLogPath(f.config);
  ASSERT_TRUE(WaitFor([&] { return Decisions(log).size() == 3; }, 10)) << ReadFile(log);
  auto d = Decisions(log);
  EXPECT_EQ(d[0]["stage"], "notice");
  EXPECT_DOUBLE_EQ(d[0]["time"].get<double>(), kT0 + 10);
  EXPECT_EQ(d[1]["stage"], "action");
  EXPECT_DOUBLE_EQ(d[1]["time"].get<double>(), kT0 + 15);
  EXPECT_EQ(d[2]["stage"], "done");

  std::string text;
  gov.RenderMetrics(collect::Format::kText, &text);
  EXPECT_NE(
      text.find("gpu_reclaim_actions_total{action=\"cancel\",reason=\"idle_memory_free\"} 1\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("gpu_reclaim_failures_total{action=\"cancel\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("gpu_cost_allocation_total{partition=\"gpu\",team=\"unassigned\"} "),
            std::string::npos)
      << text;
  std::string om;
  gov.RenderMetrics(collect::Format::kOpenMetrics, &om);
  EXPECT_NE(om.find("# TYPE gpu_reclaim_actions counter\n"), std::string::npos);
  EXPECT_NE(om.find("# UNIT gpu_idle_allocated_ratio ratio\n"), std::string::npos) << om;

  // The same figures went into the store at each snapshot's time. Cost: 16 s of one A100 at
  // 3.6 per hour.
  auto cost = store.Of("gpu_cost_allocation_total");
  ASSERT_EQ(cost.size(), 17u);
  EXPECT_EQ(cost.back().t_ms, static_cast<int64_t>((kT0 + 16) * 1000));
  EXPECT_NEAR(cost.back().v, 0.016, 1e-12);
  EXPECT_GE(store.commits, 17);

  // The job ends: its per-job series gets a stale marker; nothing more is run.
  WriteFile(f.dir / "answer.json", R"({"meta": {}, "errors": [], "jobs": []})");
  ASSERT_TRUE(WaitFor([&] { return jobs.SlurmJobs().empty(); }, 10));
  collect::Snapshot s = Snap(kT0 + 17, 0.0);
  jobs.OnSnapshot(s);
  gov.OnSnapshot(s, static_cast<int64_t>((kT0 + 17) * 1000));
  auto job_cost = store.Of("gpu_job_cost_total", "job_id", "5");
  ASSERT_FALSE(job_cost.empty());
  EXPECT_TRUE(tsdb::IsStaleNaN(job_cost.back().v));
  gov.Stop();
  jobs.Stop();
  EXPECT_EQ(ReadFile(f.dir / "called"), "5 5 0 action\n");
}

TEST(GovernanceService, AFailedCommandIsReportedAndNeverRetried) {
  Fixture f(RunningJob("8", "0"), "echo 'scancel: error: Access/permission denied' >&2\nexit 1\n");
  JobsService jobs(f.config, &f.log, JobsServiceOptions{"/nonexistent", "n1"});
  jobs.Start();
  ASSERT_TRUE(WaitFor([&] { return !jobs.SlurmJobs().empty(); }, 10));
  GovernanceService gov(f.config, &jobs, nullptr, &f.log);
  gov.Start();
  auto step = [&](int t) {
    collect::Snapshot s = Snap(kT0 + t, 0.0);
    jobs.OnSnapshot(s);
    gov.OnSnapshot(s, static_cast<int64_t>((kT0 + t) * 1000));
  };
  for (int t = 0; t <= 16; ++t) step(t);
  const std::string log = DecisionsLogPath(f.config);
  ASSERT_TRUE(WaitFor([&] { return Decisions(log).size() == 3; }, 10)) << ReadFile(log);
  auto d = Decisions(log);
  EXPECT_EQ(d[2]["stage"], "failed");
  EXPECT_NE(d[2]["detail"].get<std::string>().find("permission denied"), std::string::npos)
      << d[2].dump();
  for (int t = 17; t <= 100; ++t) step(t);
  EXPECT_EQ(Decisions(log).size(), 3u);
  std::string text;
  gov.RenderMetrics(collect::Format::kText, &text);
  EXPECT_NE(text.find("gpu_reclaim_failures_total{action=\"cancel\"} 1\n"), std::string::npos)
      << text;
  // The API.
  nlohmann::json r = nlohmann::json::parse(gov.ReclaimJson(10));
  EXPECT_EQ(r["status"], "success");
  ASSERT_EQ(r["data"]["decisions"].size(), 3u);
  EXPECT_EQ(r["data"]["decisions"][0]["stage"], "failed");
  nlohmann::json teams = nlohmann::json::parse(gov.TeamsJson());
  EXPECT_EQ(teams["data"]["teams"][0]["team"], "unassigned");
  EXPECT_NEAR(teams["data"]["teams"][0]["cost"]["allocation_cost"].get<double>(), 0.1, 1e-9);
  EXPECT_NEAR(teams["data"]["node"]["idle_cost_ratio"].get<double>(), 0.5, 1e-9);
  gov.Stop();
  jobs.Stop();
}

// GET /api/gw/v1/reclaim for one job, team or GPU (the console's job, team and GPU pages), and the
// notices still in their grace period with the time it ends; all from memory.
TEST(GovernanceService, ReclaimApiFiltersByJobTeamAndGpuAndListsOpenNotices) {
  Fixture f(RunningJob("5", "0") + "," + RunningJob("6", "1"), "exit 0\n");
  JobsService jobs(f.config, &f.log, JobsServiceOptions{"/nonexistent", "n1"});
  jobs.Start();
  ASSERT_TRUE(WaitFor([&] { return jobs.SlurmJobs().size() == 2; }, 10));
  GovernanceService gov(f.config, &jobs, nullptr, &f.log);
  gov.Start();
  auto step = [&](int t) {
    collect::Snapshot s = Snap(kT0 + t, 0.0);  // GPU 0 (job 5) idle, GPU 1 (job 6) busy
    jobs.OnSnapshot(s);
    gov.OnSnapshot(s, static_cast<int64_t>((kT0 + t) * 1000));
  };
  for (int t = 0; t <= 12; ++t) step(t);
  auto get = [&](ReclaimQuery q) { return nlohmann::json::parse(gov.ReclaimJson(q))["data"]; };
  nlohmann::json all = get({});
  EXPECT_DOUBLE_EQ(all["time"].get<double>(), kT0 + 12);
  ASSERT_EQ(all["decisions"].size(), 1u) << all.dump();
  EXPECT_EQ(all["decisions"][0]["stage"], "notice");
  ASSERT_EQ(all["notices"].size(), 1u) << all.dump();
  const nlohmann::json& n = all["notices"][0];
  EXPECT_EQ(n["job_id"], "5");
  EXPECT_EQ(n["team"], "unassigned");
  EXPECT_DOUBLE_EQ(n["noticed_at"].get<double>(), kT0 + 10);
  EXPECT_DOUBLE_EQ(n["grace_ends_at"].get<double>(), kT0 + 15);
  EXPECT_EQ(n["evidence"]["gpus"][0]["gpu"], 0);

  EXPECT_EQ(get({100, "5", "", {}})["decisions"].size(), 1u);
  EXPECT_EQ(get({100, "6", "", {}})["decisions"].size(), 0u);
  EXPECT_EQ(get({100, "6", "", {}})["notices"].size(), 0u);
  EXPECT_EQ(get({100, "", "unassigned", {}})["notices"].size(), 1u);
  EXPECT_EQ(get({100, "", "physics", {}})["decisions"].size(), 0u);
  EXPECT_EQ(get({100, "", "", 0u})["decisions"].size(), 1u);
  EXPECT_EQ(get({100, "", "", 1u})["decisions"].size(), 0u);
  EXPECT_EQ(get({100, "", "", 1u})["idle_gpus"].size(), 0u);
  EXPECT_EQ(get({100, "", "", 0u})["idle_gpus"].size(), 1u);

  // The grace period ends: the action is taken and the notice is no longer open.
  for (int t = 13; t <= 16; ++t) step(t);
  ASSERT_TRUE(WaitFor([&] { return get({}).at("decisions").size() == 3; }, 10));
  nlohmann::json after = get({100, "5", "", {}});
  EXPECT_EQ(after["notices"].size(), 0u) << after.dump();
  EXPECT_EQ(after["decisions"][0]["stage"], "done");
  EXPECT_EQ(get({1, "", "", {}})["decisions"].size(), 1u);
  gov.Stop();
  jobs.Stop();
}

// The cost totals and reclaim counters survive a restart (STORAGE_PATH/governance/usage.json);
// an unreadable checkpoint is set aside and the figures start from zero.
TEST(GovernanceService, RunningTotalsSurviveARestartAndABadCheckpointIsSetAside) {
  Fixture f(RunningJob("8", "0"), "echo 'scancel: error: Access/permission denied' >&2\nexit 1\n");
  JobsService jobs(f.config, &f.log, JobsServiceOptions{"/nonexistent", "n1"});
  jobs.Start();
  ASSERT_TRUE(WaitFor([&] { return !jobs.SlurmJobs().empty(); }, 10));
  auto step = [&](GovernanceService& gov, int t) {
    collect::Snapshot s = Snap(kT0 + t, 0.0);
    jobs.OnSnapshot(s);
    gov.OnSnapshot(s, static_cast<int64_t>((kT0 + t) * 1000));
  };
  auto line = [](const std::string& text, const std::string& prefix) {
    const size_t at = text.find(prefix);
    return at == std::string::npos ? std::string() : text.substr(at, text.find('\n', at) - at);
  };
  const std::string path = UsageCheckpointPath(f.config);
  std::string before;
  {
    GovernanceService gov(f.config, &jobs, nullptr, &f.log);
    gov.Start();
    for (int t = 0; t <= 100; ++t) step(gov, t);
    const std::string log = DecisionsLogPath(f.config);
    ASSERT_TRUE(WaitFor([&] { return Decisions(log).size() == 3; }, 10)) << ReadFile(log);
    step(gov, 101);  // the failure is in the figures from here on
    gov.RenderMetrics(collect::Format::kText, &before);
  }  // Stop writes the last checkpoint
  ASSERT_TRUE(std::filesystem::exists(path));
  EXPECT_NE(line(before, "gpu_cost_allocation_total{"), "");
  {
    GovernanceService gov(f.config, &jobs, nullptr, &f.log);
    step(gov, 102);  // one second later: charged as any interval
    std::string after;
    gov.RenderMetrics(collect::Format::kText, &after);
    EXPECT_EQ(line(after, "gpu_reclaim_failures_total{"),
              line(before, "gpu_reclaim_failures_total{"));
    EXPECT_EQ(line(after, "gpu_reclaim_actions_total{action=\"cancel\""),
              line(before, "gpu_reclaim_actions_total{action=\"cancel\""));
    // 102 s of one A100 at 0.001 per GPU-second, across the restart.
    nlohmann::json teams = nlohmann::json::parse(gov.TeamsJson());
    EXPECT_NEAR(teams["data"]["teams"][0]["cost"]["allocation_cost"].get<double>(), 0.102, 1e-9)
        << teams.dump();
    gov.Stop();
  }
  WriteFile(path, "{\"format\": \"gpuwarden-governance-state\", \"usage\": {\"version\": 9}}");
  {
    GovernanceService gov(f.config, &jobs, nullptr, &f.log);
    EXPECT_TRUE(std::filesystem::exists(path + ".corrupt"));
    step(gov, 103);
    nlohmann::json teams = nlohmann::json::parse(gov.TeamsJson());
    EXPECT_NEAR(teams["data"]["teams"][0]["cost"]["allocation_cost"].get<double>(), 0, 1e-12);
    gov.Stop();
    EXPECT_TRUE(std::filesystem::exists(path)) << "a new checkpoint replaces the bad one";
  }
  jobs.Stop();
}

TEST(GovernanceConfig, KeysParseAndErrorsNameTheLine) {
  TempDir dir;
  WriteFile(
      dir / "g.yaml",
      "governance:\n"
      "  reclaim:\n"
      "    - partition: gpu\n      idle_for: 45m\n      grace: 10m\n      memory: held\n"
      "      action: requeue\n      notify_command: /usr/bin/logger idle job\n"
      "      exempt: {users: [root], qos: [interactive], names: ['nb-*'], comment_tag: keep}\n"
      "    - team: nlp\n      action: command\n      command: [/opt/reclaim, --soft]\n"
      "  decisions_log: /var/log/gw/decisions.jsonl\n"
      "  cancel_command: /usr/bin/scancel --signal=TERM\n"
      "  command_timeout: 10s\n"
      "  pools:\n    capacity: {gpu: 16}\n    windows: [30m, 7d]\n"
      "    scale_out_ratio: 1.2\n    scale_out_for: 1h\n    shrink_free_ratio: 0.6\n"
      "    shrink_for: 2d\n"
      "  quotas:\n    vision: {gpus: 4}\n    nlp: {gpu_hours: 500, period: 7d}\n"
      "  under_use_ratio: 0.25\n  under_use_for: 3d\n"
      "  prices:\n    gpu_hour: {A100: 3.2, default: 1.5}\n    energy_kwh: 0.2\n"
      "    currency: EUR\n");
  config::Config c;
  Status s = config::LoadConfigFile(dir / "g.yaml", &c);
  ASSERT_TRUE(s.ok()) << s.message();
  const config::GovernanceConfig& g = c.governance;
  ASSERT_EQ(g.settings.reclaim.size(), 2u);
  const governance::ReclaimPolicy& p = g.settings.reclaim[0];
  EXPECT_EQ(p.partition, "gpu");
  EXPECT_DOUBLE_EQ(p.idle_for_s, 2700);
  EXPECT_DOUBLE_EQ(p.grace_s, 600);
  EXPECT_EQ(p.memory, governance::MemoryFilter::kHeld);
  EXPECT_EQ(p.action, governance::ReclaimAction::kRequeue);
  EXPECT_EQ(p.notify_command, (std::vector<std::string>{"/usr/bin/logger", "idle", "job"}));
  EXPECT_EQ(p.exempt.names, (std::vector<std::string>{"nb-*"}));
  EXPECT_EQ(p.exempt.comment_tag, "keep");
  EXPECT_EQ(g.settings.reclaim[1].team, "nlp");
  EXPECT_EQ(g.settings.reclaim[1].action, governance::ReclaimAction::kCommand);
  EXPECT_EQ(g.settings.reclaim[1].command, (std::vector<std::string>{"/opt/reclaim", "--soft"}));
  EXPECT_EQ(g.cancel_command, (std::vector<std::string>{"/usr/bin/scancel", "--signal=TERM"}));
  EXPECT_DOUBLE_EQ(g.command_timeout_s, 10);
  EXPECT_DOUBLE_EQ(g.settings.pool.capacity_gpus.at("gpu"), 16);
  EXPECT_EQ(g.settings.pool.windows_s, (std::vector<double>{1800, 7 * 86400}));
  EXPECT_DOUBLE_EQ(g.settings.pool.scale_out_ratio, 1.2);
  EXPECT_DOUBLE_EQ(g.settings.pool.shrink_for_s, 2 * 86400);
  EXPECT_DOUBLE_EQ(g.settings.quotas.teams.at("vision").gpus, 4);
  EXPECT_DOUBLE_EQ(g.settings.quotas.teams.at("nlp").gpu_hours, 500);
  EXPECT_DOUBLE_EQ(g.settings.quotas.under_use_for_s, 3 * 86400);
  EXPECT_DOUBLE_EQ(g.settings.prices.GpuHourPrice("NVIDIA A100-SXM4-80GB"), 3.2);
  EXPECT_DOUBLE_EQ(g.settings.prices.GpuHourPrice("NVIDIA L40S"), 1.5);
  EXPECT_EQ(g.settings.prices.currency, "EUR");

  const std::pair<std::string, std::string> bad[] = {
      {"governance:\n  reclaim:\n    - action: kill\n",
       ":3: governance.reclaim[0].action: expected dry-run, requeue, cancel or command, got "
       "'kill'"},
      {"governance:\n  reclaim:\n    - action: command\n",
       ":3: governance.reclaim[0]: action command needs a command"},
      {"governance:\n  reclaim:\n    - idle_for: soon\n",
       ":3: governance.reclaim[0].idle_for: expected a duration"},
      {"governance:\n  reclaim:\n    - exempt: {groups: [x]}\n",
       ":3: governance.reclaim[0].exempt: unknown key 'groups'"},
      {"governance:\n  quotas:\n    vision: {gpus: -1}\n",
       ":3: governance.quotas.vision.gpus: expected a number >= 0, got '-1'"},
      {"governance:\n  quotas:\n    vision: {}\n",
       ":3: governance.quotas.vision: a quota needs gpus or gpu_hours above 0"},
      {"governance:\n  prices:\n    gpu_hour: {A100: cheap}\n",
       ":3: governance.prices.gpu_hour.A100: expected a number"},
      {"governance:\n  pools:\n    windows: [1h, never]\n",
       ":3: governance.pools.windows: expected durations"},
      {"governance:\n  reclaims: []\n", ":2: unknown key 'governance.reclaims'"},
  };
  for (const auto& [text, message] : bad) {
    WriteFile(dir / "b.yaml", text);
    config::Config b;
    Status st = config::LoadConfigFile(dir / "b.yaml", &b);
    ASSERT_FALSE(st.ok()) << text;
    EXPECT_NE(st.message().find(message), std::string::npos) << st.message();
  }
  for (const std::string& key : config::GovernanceKeys())
    EXPECT_NE(std::find(config::ConfigKeys().begin(), config::ConfigKeys().end(), key),
              config::ConfigKeys().end())
        << key;
}

}  // namespace
}  // namespace gw::serve
