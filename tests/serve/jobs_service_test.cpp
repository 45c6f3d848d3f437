// The serve command's task layer without a GPU or Slurm: snapshots built by hand, a fake /proc
// tree (with a planted secret in a process' environment), and a stand-in squeue script. Also the
// jobs.* / teams.* configuration keys and the `gpuwarden jobs` table.
#include "serve/jobs_service.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/jobs_commands.h"
#include "support/fake_proc.h"
#include "support/process.h"
#include "tsdb/storage.h"

namespace gw::serve {
namespace {

using gw::testing::FakeProcess;
using gw::testing::ReadFile;
using gw::testing::TempDir;
using gw::testing::WriteFile;

constexpr const char* kSecret = "hunter2-AKIAIOSFODNN7EXAMPLE-do-not-leak";

collect::GpuSnapshot Gpu(unsigned index, double util_ratio, double memory_used,
                         std::vector<unsigned> pids = {}) {
  collect::GpuSnapshot g;
  g.values.fill(collect::kAbsent);
  g.identity.index = index;
  g.identity.uuid = "GPU-" + std::to_string(index);
  auto set = [&g](collect::Slot s, double v) { g.values[static_cast<size_t>(s)] = v; };
  set(collect::Slot::kUtilization, util_ratio);
  set(collect::Slot::kMemoryUsed, memory_used);
  set(collect::Slot::kMemoryTotal, 80e9);
  set(collect::Slot::kPower, 300);
  set(collect::Slot::kEventHwThermal, 0);
  for (unsigned pid : pids) g.processes.push_back({pid, 1e9, collect::kAbsent});
  return g;
}

collect::Snapshot Snap(double t, std::vector<collect::GpuSnapshot> gpus) {
  collect::Snapshot s;
  s.taken_unix_seconds = t;
  s.gpus = std::move(gpus);
  return s;
}

std::string Metrics(const JobsService& jobs, collect::Format f = collect::Format::kText) {
  std::string out;
  jobs.RenderMetrics(f, &out);
  return out;
}

bool Has(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

// The store as the recorder's appender sees it, in memory, counting GetRef and Commit calls.
class MemoryAppender : public tsdb::MemoryAppender {
 public:
  MemoryAppender() : tsdb::MemoryAppender(&store) {}
  Expected<Ref> GetRef(const tsdb::Labels& labels) override {
    ++get_refs;
    return tsdb::MemoryAppender::GetRef(labels);
  }
  Status Append(Ref ref, int64_t t_ms, double v) override {
    ++appends;
    return tsdb::MemoryAppender::Append(ref, t_ms, v);
  }
  Status Commit() override {
    ++commits;
    return Status::Ok();
  }
  // The samples of the series with these label values (and the name), time-ordered.
  std::vector<tsdb::Sample> Samples(const std::string& name,
                                    std::initializer_list<std::pair<const char*, const char*>> eq) {
    std::vector<tsdb::Matcher> ms = {
        *tsdb::Matcher::Make(tsdb::MatchType::kEqual, "__name__", name)};
    for (auto& [n, v] : eq) ms.push_back(*tsdb::Matcher::Make(tsdb::MatchType::kEqual, n, v));
    std::vector<tsdb::SeriesData> out;
    EXPECT_TRUE(store.Select(ms, 0, INT64_MAX, &out).ok());
    EXPECT_LE(out.size(), 1u);
    return out.empty() ? std::vector<tsdb::Sample>{} : out[0].samples;
  }
  tsdb::MemoryQuerier store;
  int get_refs = 0, appends = 0, commits = 0;
};

TEST(JobsConfig, KeysParseAndErrorsNameTheLine) {
  TempDir dir;
  WriteFile(dir / "c.yaml",
            "jobs:\n  scheduler: slurm\n  squeue_command: /opt/slurm/bin/squeue --json\n"
            "  poll_interval: 30s\n  records_dir: /var/lib/gw/jobs\n  idle_threshold: 0.1\n"
            "  idle_window: 1h\nteams:\n  accounts: {physics: sim, ML-Research: research}\n"
            "  users:\n    alice: vision\n");
  config::Config c;
  ASSERT_TRUE(config::LoadConfigFile(dir / "c.yaml", &c).ok());
  EXPECT_EQ(c.jobs.scheduler, "slurm");
  EXPECT_EQ(c.jobs.squeue_command, (std::vector<std::string>{"/opt/slurm/bin/squeue", "--json"}));
  EXPECT_DOUBLE_EQ(c.jobs.poll_interval_s, 30);
  EXPECT_EQ(c.jobs.records_dir, "/var/lib/gw/jobs");
  EXPECT_DOUBLE_EQ(c.jobs.idle_threshold, 0.1);
  EXPECT_DOUBLE_EQ(c.jobs.idle_window_s, 3600);
  EXPECT_EQ(c.teams.accounts.at("physics"), "sim");
  EXPECT_EQ(c.teams.users.at("alice"), "vision");
  EXPECT_TRUE(Validate(c).ok());
  EXPECT_EQ(JobRecordsDir(c), "/var/lib/gw/jobs");
  config::Config d;
  EXPECT_EQ(JobRecordsDir(d), "data/jobs");
  EXPECT_EQ(d.jobs.squeue_command, (std::vector<std::string>{"squeue", "--json"}));

  WriteFile(dir / "bad.yaml", "jobs:\n  scheduler: pbs\n");
  Status s = config::LoadConfigFile(dir / "bad.yaml", &c);
  EXPECT_EQ(s.message(), (dir / "bad.yaml") +
                             ":2: jobs.scheduler: expected none, slurm or kubernetes, got 'pbs'");
  WriteFile(dir / "bad2.yaml", "jobs:\n  idle_threshold: 5\n");
  EXPECT_NE(config::LoadConfigFile(dir / "bad2.yaml", &c).message().find(":2: jobs.idle_threshold"),
            std::string::npos);
  WriteFile(dir / "bad3.yaml", "teams:\n  users: [alice]\n");
  EXPECT_NE(config::LoadConfigFile(dir / "bad3.yaml", &c).message().find(":2: teams.users"),
            std::string::npos);
  WriteFile(dir / "bad4.yaml", "jobs:\n  squeue_command: [squeue, --json]\n  poll_interval: 0s\n");
  EXPECT_NE(config::LoadConfigFile(dir / "bad4.yaml", &c).message().find(":3: jobs.poll_interval"),
            std::string::npos);
}

// A process naming its job (no scheduler): attributed, accounted, recorded when it goes; the
// secret in its environment reaches nothing.
TEST(JobsService, ProcessJobFromFakeProcTree) {
  TempDir dir;
  const std::string proc = dir / "proc";
  FakeProcess(proc, 4242, 777, "0::/user.slice\n",
              {"GPUWARDEN_JOB=train-7", "GPUWARDEN_TEAM=vision", "CUDA_VISIBLE_DEVICES=1",
               std::string("AWS_SECRET_ACCESS_KEY=") + kSecret});
  FakeProcess(proc, 5151, 888, "0::/user.slice\n", {"HOME=/root"});  // no job
  config::Config config;
  config.storage.path = dir / "data";
  config.jobs.idle_window_s = 60;
  std::vector<std::string> logs;
  Logger logger(LogLevel::kDebug, [&](LogLevel, const std::string& l) { logs.push_back(l); });
  JobsService jobs(config, &logger, JobsServiceOptions{proc, "testnode"});
  jobs.Start();

  jobs.OnSnapshot(Snap(1000, {Gpu(0, 0, 1e9, {5151}), Gpu(1, 0.9, 40e9, {4242})}));
  jobs.OnSnapshot(Snap(1010, {Gpu(0, 0, 1e9, {5151}), Gpu(1, 0.5, 78e9, {4242})}));
  std::string m = Metrics(jobs);
  EXPECT_TRUE(Has(m,
                  "gpu_allocation_info{gpu=\"1\",uuid=\"GPU-1\",job_id=\"train-7\",user=\"root\","
                  "team=\"vision\",partition=\"\"} 1\n"))
      << m;
  EXPECT_FALSE(Has(m, "gpu_allocation_info{gpu=\"0\""));  // GPU 0's process names no job
  const std::string l = "{job_id=\"train-7\",user=\"root\",team=\"vision\",partition=\"\"";
  EXPECT_TRUE(Has(m, "gpu_job_gpus" + l + "} 1\n")) << m;
  EXPECT_TRUE(Has(m, "gpu_job_gpu_seconds_total" + l + "} 10\n")) << m;
  EXPECT_TRUE(Has(m, "gpu_job_sm_utilization_ratio" + l + ",stat=\"max\"} 0.5\n")) << m;
  EXPECT_TRUE(Has(m, "gpu_job_memory_peak_bytes" + l + "} 7.8e+10\n")) << m;
  EXPECT_TRUE(Has(m, "gpu_job_memory_used_ratio" + l + "} 0.975\n")) << m;
  EXPECT_TRUE(Has(m, "gpu_job_energy_joules_total" + l + "} 3000\n")) << m;  // 300 W x 10 s
  EXPECT_TRUE(Has(m, "gpu_jobs{state=\"RUNNING\"} 1\n")) << m;
  EXPECT_FALSE(Has(m, "gpuwarden_slurm_up"));  // no scheduler configured
  // Device series never carry job labels: only allocation info and gpu_job_* do.
  for (size_t at = m.find("job_id="); at != std::string::npos; at = m.find("job_id=", at + 1)) {
    size_t line = m.rfind('\n', at) + 1;
    EXPECT_TRUE(
        m.compare(line, 4, "gpu_") == 0 &&
        (m.compare(line, 8, "gpu_job_") == 0 || m.compare(line, 19, "gpu_allocation_info") == 0))
        << m.substr(line, 60);
  }
  // The API while it runs.
  nlohmann::json running = nlohmann::json::parse(jobs.JobsJson({.running_only = true}));
  ASSERT_EQ(running["data"]["jobs"].size(), 1u);
  EXPECT_EQ(running["data"]["jobs"][0]["state"], "RUNNING");
  EXPECT_EQ(running["data"]["jobs"][0]["gpu"]["gpus"], nlohmann::json::array({1}));
  EXPECT_TRUE(nlohmann::json::parse(jobs.JobsJson({.team = "nlp"}))["data"]["jobs"].empty());

  // Idle for over the window while allocated.
  jobs.OnSnapshot(Snap(1020, {Gpu(0, 0, 1e9, {5151}), Gpu(1, 0, 78e9, {4242})}));
  jobs.OnSnapshot(Snap(1090, {Gpu(0, 0, 1e9, {5151}), Gpu(1, 0, 78e9, {4242})}));
  m = Metrics(jobs);
  EXPECT_TRUE(Has(m, "gpu_idle_allocated_gpus 1\n")) << m;
  EXPECT_TRUE(Has(m, "gpu_job_idle_streak_seconds" + l + "} 70\n")) << m;
  EXPECT_TRUE(Has(m, "gpu_idle_streak_seconds{gpu=\"1\",uuid=\"GPU-1\"} 70\n")) << m;

  // The process is gone: the record is written, the series go.
  jobs.OnSnapshot(Snap(1100, {Gpu(0, 0, 1e9, {5151}), Gpu(1, 0, 0)}));
  m = Metrics(jobs);
  EXPECT_FALSE(Has(m, "gpu_allocation_info{")) << m;
  EXPECT_FALSE(Has(m, "gpu_job_gpus{")) << m;
  EXPECT_TRUE(Has(m, "gpu_job_run_seconds_count{partition=\"\"} 1\n")) << m;
  EXPECT_TRUE(Has(m, "gpu_job_start_latency_seconds_count{partition=\"\"} 1\n")) << m;
  auto one = jobs.JobJson("train-7");
  ASSERT_TRUE(one.has_value());
  nlohmann::json record = nlohmann::json::parse(*one)["data"];
  EXPECT_EQ(record["state"], "ENDED");
  EXPECT_EQ(record["source"], "process");
  EXPECT_EQ(record["team"], "vision");
  EXPECT_EQ(record["start_time"], 1000);
  EXPECT_EQ(record["end_time"], 1100);
  EXPECT_FALSE(jobs.JobJson("nope").has_value());
  nlohmann::json since = nlohmann::json::parse(jobs.JobsJson({.since_s = 60}));
  EXPECT_EQ(since["data"]["jobs"].size(), 1u);

  const std::string file = ReadFile(dir / "data/jobs/jobs.jsonl");
  EXPECT_TRUE(Has(file, "\"train-7\""));
  for (const std::string& text :
       {file, m, jobs.JobsJson({}), Metrics(jobs, collect::Format::kOpenMetrics)})
    EXPECT_FALSE(Has(text, kSecret));
  for (const std::string& line : logs) EXPECT_FALSE(Has(line, kSecret));

  // `gpuwarden jobs` reads the same record.
  const std::string table = cli::JobsTable({*jobs::JobRecordFromJson(record.dump())});
  EXPECT_TRUE(Has(table, "train-7")) << table;
  EXPECT_TRUE(Has(table, "ENDED")) << table;
  EXPECT_TRUE(Has(cli::JobDetail(*jobs::JobRecordFromJson(record.dump())), "vision"));
}

// Counter families end in _total; OpenMetrics names the family without it.
TEST(JobsService, OpenMetricsFamilyNames) {
  TempDir dir;
  config::Config config;
  config.storage.path = dir / "data";
  Logger logger(LogLevel::kError);
  JobsService jobs(config, &logger, JobsServiceOptions{dir / "proc", "testnode"});
  const std::string om = Metrics(jobs, collect::Format::kOpenMetrics);
  EXPECT_TRUE(Has(om, "# TYPE gpu_job_gpu_seconds counter\n")) << om;
  EXPECT_TRUE(Has(
      om,
      "# TYPE gpu_job_queue_wait_seconds histogram\n# UNIT gpu_job_queue_wait_seconds seconds\n"));
  const std::string text = Metrics(jobs);
  EXPECT_TRUE(Has(text, "# TYPE gpu_job_gpu_seconds_total counter\n")) << text;
  EXPECT_FALSE(Has(text, "# UNIT"));
}

// Five jobs: 11 runs here on GPUs 0-1, 12 waits, 13 finished here, 21 runs on another node.
std::string Squeue(const std::string& node) {
  return R"js({"meta": {}, "errors": [], "jobs": [
  {"job_id": 11, "name": "train", "job_state": "RUNNING", "user_name": "alice",
   "account": "Physics", "partition": "gpu", "nodes": ")js" +
         node + R"js(",
   "submit_time": 1000, "eligible_time": 1030, "start_time": 1100, "end_time": 99999999,
   "gres_detail": ["gpu:2(IDX:0-1)"], "tres_per_node": "gres:gpu:2"},
  {"job_id": 12, "name": "wait", "job_state": "PENDING", "state_reason": "Resources",
   "user_name": "bob", "account": "bio", "partition": "gpu", "nodes": "",
   "submit_time": 1001, "eligible_time": 1001, "start_time": 0, "end_time": 0, "gres_detail": []},
  {"job_id": 13, "name": "done", "job_state": "COMPLETED", "user_name": "carol",
   "account": "ml", "partition": "debug", "nodes": ")js" +
         node + R"js(",
   "submit_time": 900, "eligible_time": 900, "start_time": 905, "end_time": 1205,
   "exit_code": 0, "gres_detail": ["gpu:1(IDX:2)"], "tres_per_node": "gres:gpu:1"},
  {"job_id": 21, "name": "elsewhere", "job_state": "RUNNING", "user_name": "dan",
   "account": "bio", "partition": "gpu", "nodes": "othernode",
   "submit_time": 1000, "eligible_time": 1000, "start_time": 1010, "end_time": 99999999,
   "gres_detail": ["gpu:1(IDX:3)"], "tres_per_node": "gres:gpu:1"}
  ]})js";
}

// A stand-in squeue printing DIR/answer.json (`answer`; it fails while the file is absent), and
// `config` polling it every 50 ms with its data under DIR/data.
void StandInSqueue(const TempDir& dir, const std::string& answer, config::Config* config) {
  const std::string script = dir / "squeue";
  WriteFile(dir / "answer.json", answer);
  WriteFile(script, "#!/bin/sh\n[ -f '" + (dir / "answer.json") + "' ] || exit 1\ncat '" +
                        (dir / "answer.json") + "'\n");
  chmod(script.c_str(), 0755);
  config->storage.path = dir / "data";
  config->jobs.scheduler = "slurm";
  config->jobs.squeue_command = {script, "--json"};
  config->jobs.poll_interval_s = 0.05;
}

TEST(JobsService, SlurmJobsFromAStandInSqueue) {
  TempDir dir;
  config::Config config;
  StandInSqueue(dir, Squeue("node[1-3]"), &config);
  config.teams.accounts = {{"physics", "sim"}};
  Logger logger(LogLevel::kError);
  JobsService jobs(config, &logger, JobsServiceOptions{dir / "proc", "node2"});
  jobs.Start();
  ASSERT_TRUE(
      gw::testing::WaitFor([&] { return Has(Metrics(jobs), "gpuwarden_slurm_up 1\n"); }, 30));
  jobs.OnSnapshot(Snap(1200, {Gpu(0, 0.9, 1e9), Gpu(1, 0.8, 1e9), Gpu(2, 0, 0), Gpu(3, 0, 0)}));
  jobs.OnSnapshot(Snap(1210, {Gpu(0, 0.9, 1e9), Gpu(1, 0.8, 1e9), Gpu(2, 0, 0), Gpu(3, 0, 0)}));
  std::string m = Metrics(jobs);
  const std::string l = "job_id=\"11\",user=\"alice\",team=\"sim\",partition=\"gpu\"";
  EXPECT_TRUE(Has(m, "gpu_allocation_info{gpu=\"0\",uuid=\"GPU-0\"," + l + "} 1\n")) << m;
  EXPECT_TRUE(Has(m, "gpu_allocation_info{gpu=\"1\",uuid=\"GPU-1\"," + l + "} 1\n")) << m;
  EXPECT_FALSE(Has(m, "job_id=\"21\"")) << m;  // runs on another node
  EXPECT_TRUE(Has(m, "gpu_job_gpus{" + l + "} 2\n")) << m;
  EXPECT_TRUE(Has(m, "gpu_jobs{state=\"PENDING\"} 1\n")) << m;
  EXPECT_TRUE(Has(m, "gpu_jobs{state=\"RUNNING\"} 2\n")) << m;
  EXPECT_TRUE(Has(m, "gpu_jobs{state=\"COMPLETED\"} 1\n")) << m;
  // Queue waits (start - eligible): 11 waited 70 s, 13 5 s, 21 10 s; since submit 100, 5, 10.
  EXPECT_TRUE(Has(m, "gpu_job_queue_wait_seconds_bucket{partition=\"gpu\",le=\"60.0\"} 1\n")) << m;
  EXPECT_TRUE(Has(m, "gpu_job_queue_wait_seconds_bucket{partition=\"gpu\",le=\"120.0\"} 2\n")) << m;
  EXPECT_TRUE(Has(m, "gpu_job_queue_wait_seconds_sum{partition=\"gpu\"} 80\n")) << m;
  EXPECT_TRUE(Has(m, "gpu_job_submit_wait_seconds_sum{partition=\"gpu\"} 110\n")) << m;
  EXPECT_TRUE(Has(m, "gpu_job_run_seconds_sum{partition=\"debug\"} 300\n")) << m;
  EXPECT_TRUE(Has(m, "gpuwarden_slurm_last_success_timestamp_seconds ")) << m;
  // Job 13 finished on this node: its record is there.
  auto done = jobs.JobJson("13");
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(nlohmann::json::parse(*done)["data"]["state"], "COMPLETED");
  auto running = jobs.JobJson("11");
  ASSERT_TRUE(running.has_value());
  nlohmann::json r = nlohmann::json::parse(*running)["data"];
  EXPECT_EQ(r["state"], "RUNNING");
  EXPECT_EQ(r["queue_wait_s"], 70);
  EXPECT_EQ(r["team"], "sim");

  // The agent restarts while squeue still lists job 13 as finished: it is not recorded twice.
  {
    JobsService restarted(config, &logger, JobsServiceOptions{dir / "proc", "node2"});
    restarted.Start();
    ASSERT_TRUE(gw::testing::WaitFor(
        [&] { return Has(Metrics(restarted), "gpuwarden_slurm_up 1\n"); }, 30));
    restarted.OnSnapshot(Snap(1220, {Gpu(0, 0.9, 1e9), Gpu(1, 0.8, 1e9), Gpu(2, 0, 0)}));
    restarted.Stop();
    const std::string file = ReadFile(dir / "data/jobs/jobs.jsonl");
    size_t records_of_13 = 0;
    for (size_t at = file.find("\"job_id\":\"13\""); at != std::string::npos;
         at = file.find("\"job_id\":\"13\"", at + 1))
      ++records_of_13;
    EXPECT_EQ(records_of_13, 1u) << file;
  }

  // squeue fails: the last known jobs stay, slurm_up drops.
  std::filesystem::remove(dir / "answer.json");
  ASSERT_TRUE(
      gw::testing::WaitFor([&] { return Has(Metrics(jobs), "gpuwarden_slurm_up 0\n"); }, 30));
  jobs.OnSnapshot(Snap(1220, {Gpu(0, 0.9, 1e9), Gpu(1, 0.8, 1e9), Gpu(2, 0, 0), Gpu(3, 0, 0)}));
  EXPECT_TRUE(Has(Metrics(jobs), "gpu_allocation_info{gpu=\"0\",uuid=\"GPU-0\"," + l + "} 1\n"));
  jobs.Stop();
}

// GET /api/gw/v1/queue's document: the last poll's pending jobs with their team, known/up, and
// the last known queue kept (marked stale) while squeue fails.
TEST(JobsService, QueueFromTheLastPoll) {
  TempDir dir;
  config::Config config;
  StandInSqueue(dir, Squeue("node[1-3]"), &config);
  config.teams.accounts = {{"bio", "biology"}};
  Logger logger(LogLevel::kError);
  JobsService jobs(config, &logger, JobsServiceOptions{dir / "proc", "node2"});
  // Before the first poll: not known, which is not an empty queue.
  nlohmann::json q = nlohmann::json::parse(jobs.QueueJson(""));
  EXPECT_EQ(q["status"], "success");
  EXPECT_FALSE(q["data"]["known"].get<bool>());
  EXPECT_TRUE(q["data"]["polled_at"].is_null());
  EXPECT_FALSE(q["data"]["error"].get<std::string>().empty());
  jobs.Start();
  ASSERT_TRUE(gw::testing::WaitFor(
      [&] {
        q = nlohmann::json::parse(jobs.QueueJson(""));
        return q["data"]["known"].get<bool>();
      },
      30));
  EXPECT_EQ(q["data"]["scheduler"], "slurm");
  EXPECT_TRUE(q["data"]["up"].get<bool>());
  EXPECT_EQ(q["data"]["error"], "");
  EXPECT_GT(q["data"]["polled_at"].get<double>(), 1.7e9);  // the wall clock, as Slurm's times
  ASSERT_EQ(q["data"]["jobs"].size(), 1u) << q.dump();
  const nlohmann::json& w = q["data"]["jobs"][0];
  EXPECT_EQ(w["job_id"], "12");
  EXPECT_EQ(w["name"], "wait");
  EXPECT_EQ(w["user"], "bob");
  EXPECT_EQ(w["account"], "bio");
  EXPECT_EQ(w["team"], "biology");
  EXPECT_EQ(w["partition"], "gpu");
  EXPECT_EQ(w["reason"], "Resources");
  EXPECT_EQ(w["position"], 1);
  EXPECT_EQ(w["submit_time"], 1001);
  EXPECT_EQ(w["eligible_time"], 1001);
  EXPECT_TRUE(w["start_estimate"].is_null());
  EXPECT_EQ(w["wait_s"].get<std::int64_t>(),
            static_cast<std::int64_t>(q["data"]["polled_at"].get<double>()) - 1001);
  // The team filter.
  EXPECT_EQ(nlohmann::json::parse(jobs.QueueJson("biology"))["data"]["jobs"].size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(jobs.QueueJson("physics"))["data"]["jobs"].size(), 0u);

  // squeue fails: down, stale, the error said, the last known queue kept.
  std::filesystem::remove(dir / "answer.json");
  ASSERT_TRUE(gw::testing::WaitFor(
      [&] {
        q = nlohmann::json::parse(jobs.QueueJson(""));
        return !q["data"]["up"].get<bool>() && q["data"]["staleness_s"].get<double>() > 0;
      },
      30));
  EXPECT_TRUE(q["data"]["known"].get<bool>());
  EXPECT_NE(q["data"]["error"].get<std::string>().find("exit code 1"), std::string::npos)
      << q.dump();
  ASSERT_EQ(q["data"]["jobs"].size(), 1u);
  EXPECT_EQ(q["data"]["jobs"][0]["job_id"], "12");

  // Back with job 12 started: it leaves the queue.
  nlohmann::json answer = nlohmann::json::parse(Squeue("node[1-3]"));
  answer["jobs"][1]["job_state"] = "RUNNING";
  answer["jobs"][1]["start_time"] = 1300;
  WriteFile(dir / "answer.json", answer.dump());
  ASSERT_TRUE(gw::testing::WaitFor(
      [&] {
        q = nlohmann::json::parse(jobs.QueueJson(""));
        return q["data"]["up"].get<bool>();
      },
      30));
  EXPECT_EQ(q["data"]["staleness_s"], 0);
  EXPECT_TRUE(q["data"]["jobs"].empty()) << q.dump();
  jobs.Stop();
}

TEST(JobsService, QueueWithoutAScheduler) {
  TempDir dir;
  config::Config config;
  config.storage.path = dir / "data";
  Logger logger(LogLevel::kError);
  JobsService jobs(config, &logger, JobsServiceOptions{dir / "proc", "node2"});
  nlohmann::json q = nlohmann::json::parse(jobs.QueueJson(""));
  EXPECT_EQ(q["status"], "success");
  EXPECT_EQ(q["data"]["scheduler"], "none");
  EXPECT_FALSE(q["data"]["known"].get<bool>());
  EXPECT_FALSE(q["data"]["up"].get<bool>());
  EXPECT_NE(q["data"]["error"].get<std::string>().find("jobs.scheduler"), std::string::npos);
  EXPECT_TRUE(q["data"]["jobs"].empty());
}

// The task-layer families go into the store at each snapshot's time (so the rules see them in
// the agent), with references reused in a steady state and stale markers when a job goes.
TEST(JobsService, SeriesIntoTheStoreAtSnapshotTime) {
  TempDir dir;
  const std::string proc = dir / "proc";
  FakeProcess(proc, 4242, 777, "0::/user.slice\n",
              {"GPUWARDEN_JOB=train-7", "GPUWARDEN_TEAM=vision", "CUDA_VISIBLE_DEVICES=1"});
  config::Config config;
  config.storage.path = dir / "data";
  Logger logger(LogLevel::kError);
  MemoryAppender appender;
  JobsService jobs(config, &logger, JobsServiceOptions{proc, "testnode"});
  jobs.RecordSeriesInto(&appender);

  jobs.OnSnapshot(Snap(1000, {Gpu(0, 0, 1e9), Gpu(1, 0.9, 40e9, {4242})}));
  jobs.OnSnapshot(Snap(1010, {Gpu(0, 0, 1e9), Gpu(1, 0.5, 78e9, {4242})}));
  const int refs_after_two = appender.get_refs;
  const int appends_before = appender.appends;
  jobs.OnSnapshot(Snap(1020, {Gpu(0, 0, 1e9), Gpu(1, 0.7, 78e9, {4242})}));
  EXPECT_EQ(appender.get_refs, refs_after_two);  // steady state: no new series, no label hashing
  EXPECT_GT(appender.appends, appends_before);
  EXPECT_EQ(appender.commits, 3);

  auto info = appender.Samples("gpu_allocation_info", {{"gpu", "1"},
                                                       {"uuid", "GPU-1"},
                                                       {"job_id", "train-7"},
                                                       {"user", "root"},
                                                       {"team", "vision"},
                                                       {"partition", ""}});
  ASSERT_EQ(info.size(), 3u);
  EXPECT_EQ(info[0].t_ms, 1000000);
  EXPECT_EQ(info[2].t_ms, 1020000);
  EXPECT_EQ(info[2].v, 1);
  auto seconds = appender.Samples("gpu_job_gpu_seconds_total", {{"job_id", "train-7"}});
  ASSERT_EQ(seconds.size(), 3u);
  EXPECT_EQ(seconds[2].v, 20);
  auto throttled = appender.Samples("gpu_job_throttle_seconds_total",
                                    {{"job_id", "train-7"}, {"reason", "hw_thermal_slowdown"}});
  ASSERT_EQ(throttled.size(), 3u);
  EXPECT_EQ(throttled[2].v, 0);
  auto ratio = appender.Samples("gpu_job_memory_used_ratio", {{"job_id", "train-7"}});
  ASSERT_EQ(ratio.size(), 3u);
  EXPECT_DOUBLE_EQ(ratio[2].v, 0.975);
  auto running = appender.Samples("gpu_jobs", {{"state", "RUNNING"}});
  ASSERT_EQ(running.size(), 3u);
  EXPECT_EQ(running[2].v, 1);
  EXPECT_EQ(appender.Samples("gpu_idle_allocated_gpus", {}).size(), 3u);

  // The process is gone: its series end with a stale marker at that snapshot; the histogram of
  // run times appears.
  jobs.OnSnapshot(Snap(1030, {Gpu(0, 0, 1e9), Gpu(1, 0, 0)}));
  info = appender.Samples("gpu_allocation_info", {{"job_id", "train-7"}});
  ASSERT_EQ(info.size(), 4u);
  EXPECT_EQ(info[3].t_ms, 1030000);
  EXPECT_TRUE(tsdb::IsStaleNaN(info[3].v));
  seconds = appender.Samples("gpu_job_gpu_seconds_total", {{"job_id", "train-7"}});
  ASSERT_EQ(seconds.size(), 4u);
  EXPECT_TRUE(tsdb::IsStaleNaN(seconds[3].v));
  auto runs = appender.Samples("gpu_job_run_seconds_count", {{"partition", ""}});
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].v, 1);
  auto le = appender.Samples("gpu_job_run_seconds_bucket", {{"partition", ""}, {"le", "60.0"}});
  ASSERT_EQ(le.size(), 1u);
  EXPECT_EQ(le[0].v, 1);
  // Nothing more after the stale marker.
  jobs.OnSnapshot(Snap(1040, {Gpu(0, 0, 1e9), Gpu(1, 0, 0)}));
  EXPECT_EQ(appender.Samples("gpu_allocation_info", {{"job_id", "train-7"}}).size(), 4u);
}

// The API serves finished jobs from memory (no disk read per request), and a restarted service
// loads them back from the file.
TEST(JobsService, RecordsServedFromMemoryAndReloadedAfterRestart) {
  TempDir dir;
  const std::string proc = dir / "proc";
  FakeProcess(proc, 4242, 777, "0::/user.slice\n",
              {"GPUWARDEN_JOB=train-7", "GPUWARDEN_TEAM=vision", "CUDA_VISIBLE_DEVICES=1"});
  config::Config config;
  config.storage.path = dir / "data";
  Logger logger(LogLevel::kError);
  {
    JobsService jobs(config, &logger, JobsServiceOptions{proc, "testnode"});
    jobs.OnSnapshot(Snap(1000, {Gpu(1, 0.9, 40e9, {4242})}));
    jobs.OnSnapshot(Snap(1010, {Gpu(1, 0.9, 40e9, {4242})}));
    jobs.OnSnapshot(Snap(1020, {Gpu(1, 0, 0)}));
    ASSERT_TRUE(jobs.JobJson("train-7").has_value());
    // Moved away: the API still answers from memory.
    std::filesystem::rename(dir / "data/jobs/jobs.jsonl", dir / "saved.jsonl");
    auto one = jobs.JobJson("train-7");
    ASSERT_TRUE(one.has_value());
    EXPECT_EQ(nlohmann::json::parse(*one)["data"]["end_time"], 1020);
    nlohmann::json list = nlohmann::json::parse(jobs.JobsJson({.team = "vision"}));
    ASSERT_EQ(list["data"]["jobs"].size(), 1u);
    EXPECT_EQ(list["data"]["jobs"][0]["state"], "ENDED");
    EXPECT_EQ(list["status"], "success");
    EXPECT_TRUE(nlohmann::json::parse(jobs.JobsJson({.team = "nlp"}))["data"]["jobs"].empty());
    std::filesystem::rename(dir / "saved.jsonl", dir / "data/jobs/jobs.jsonl");
  }
  // The agent restarts: the record is loaded from the file once.
  JobsService restarted(config, &logger, JobsServiceOptions{proc + "-none", "testnode"});
  auto one = restarted.JobJson("train-7");
  ASSERT_TRUE(one.has_value());
  nlohmann::json record = nlohmann::json::parse(*one)["data"];
  EXPECT_EQ(record["team"], "vision");
  EXPECT_EQ(record["gpu"]["gpu_seconds"], 20);
}

// jobs.node_name: the agent takes the jobs of the node the configuration names, not of its host
// name (one machine running agents for several nodes; a container's host name).
TEST(JobsService, NodeNameFromTheConfiguration) {
  TempDir dir;
  WriteFile(dir / "c.yaml", "jobs:\n  node_name: othernode\n");
  config::Config config;
  ASSERT_TRUE(config::LoadConfigFile(dir / "c.yaml", &config).ok());
  EXPECT_EQ(config.jobs.node_name, "othernode");
  StandInSqueue(dir, Squeue("node[1-3]"), &config);
  Logger logger(LogLevel::kError);
  JobsService jobs(config, &logger, JobsServiceOptions{dir / "proc", ""});
  jobs.Start();
  ASSERT_TRUE(
      gw::testing::WaitFor([&] { return Has(Metrics(jobs), "gpuwarden_slurm_up 1\n"); }, 30));
  jobs.OnSnapshot(Snap(1200, {Gpu(0, 0.9, 1e9), Gpu(1, 0.8, 1e9), Gpu(2, 0, 0), Gpu(3, 0, 0)}));
  const std::string m = Metrics(jobs);
  EXPECT_TRUE(Has(m, "gpu_allocation_info{gpu=\"3\",uuid=\"GPU-3\",job_id=\"21\"")) << m;
  EXPECT_FALSE(Has(m, "job_id=\"11\"")) << m;  // runs on node[1-3]
  jobs.Stop();
}

}  // namespace
}  // namespace gw::serve
