// The command line as a new user meets it: the real gpuwarden binary, its stdout, stderr and exit
// code, run in a working directory of the test's own and with the environment the test chooses.
// Each message here was once wrong (issue 17): an unknown command or flag, an agent that cannot be
// reached, no data directory, a year asked of four minutes of data, a GPU that is not there, a
// long job name, energy units, relative times.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>

#include <gtest/gtest.h>

#include "jobs/job_records.h"
#include "support/agent_process.h"

namespace gw::testing {
namespace {

struct Result {
  int code = -1;
  std::string out, err;
};

// Runs gpuwarden ARGS in `cwd` with the environment less GPUWARDEN_URL plus `env` ("NAME=value").
Result Gpuwarden(std::vector<std::string> args, const std::string& cwd,
                 const std::vector<std::string>& env = {}, double timeout_s = 120) {
  TempDir logs;
  const std::string out = logs / "out", err = logs / "err";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  std::vector<std::string> argv = {GpuwardenBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  std::vector<std::string> environment;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::string_view(*e).rfind("GPUWARDEN_URL=", 0) != 0) environment.push_back(*e);
  environment.insert(environment.end(), env.begin(), env.end());
  std::vector<char*> cenv;
  for (std::string& e : environment) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  pid_t pid = -1;
  Result r;
  if (posix_spawn(&pid, cargv[0], &actions, nullptr, cargv.data(), cenv.data()) != 0) return r;
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  const bool exited = WaitFor([&] { return waitpid(pid, &status, WNOHANG) == pid; }, timeout_s);
  if (!exited) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  r.code = exited && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = ReadFile(out);
  r.err = ReadFile(err);
  return r;
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(Cli, AnUnknownCommandIsNamedWithTheClosestOne) {
  TempDir cwd;
  Result r = Gpuwarden({"frobnicate"}, cwd.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Has(r.err, "unknown command 'frobnicate'")) << r.err;
  EXPECT_FALSE(Has(r.err, "A subcommand is required")) << r.err;
  EXPECT_TRUE(Has(r.err, "the commands are: serve, snapshot, query")) << r.err;
  r = Gpuwarden({"diagnos", "--since", "1h"}, cwd.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Has(r.err, "unknown command 'diagnos' (did you mean 'diagnose'?)")) << r.err;
  r = Gpuwarden({"jobs", "shwo", "42"}, cwd.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Has(r.err, "unknown command 'shwo' for 'gpuwarden jobs' (did you mean 'show'?)"))
      << r.err;
}

TEST(Cli, AnUnknownFlagIsNamedWithTheClosestOne) {
  TempDir cwd;
  Result r = Gpuwarden({"--bogus"}, cwd.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Has(r.err, "unknown flag '--bogus' for 'gpuwarden'")) << r.err;
  EXPECT_FALSE(Has(r.err, "A subcommand is required")) << r.err;
  r = Gpuwarden({"query", "--jsno", "up"}, cwd.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Has(r.err, "unknown flag '--jsno' for 'gpuwarden query' (did you mean --json?)"))
      << r.err;
  r = Gpuwarden({"report", "--perod=7d"}, cwd.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Has(r.err, "unknown flag '--perod' for 'gpuwarden report' (did you mean --period?)"))
      << r.err;
}

TEST(Cli, AnUnreachableAgentIsSaidInWordsWithTheUrl) {
  TempDir cwd;
  const std::string url = "http://127.0.0.1:" + std::to_string(FreePort());
  Result r = Gpuwarden({"query", "up", "--url", url}, cwd.path());
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(Has(r.err, "GET " + url + "/api/v1/query?query=up: connection refused")) << r.err;
  // The same from $GPUWARDEN_URL, for jobs and diagnose.
  r = Gpuwarden({"jobs"}, cwd.path(), {"GPUWARDEN_URL=" + url});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(Has(r.err, "GET " + url + "/api/gw/v1/jobs: connection refused")) << r.err;
  r = Gpuwarden({"diagnose"}, cwd.path(), {"GPUWARDEN_URL=" + url});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(Has(r.err, "connection refused: nothing listens on 127.0.0.1:")) << r.err;
  // A name that cannot resolve (.invalid never does, RFC 6761).
  r = Gpuwarden({"query", "up", "--url", "http://no-such-host.invalid:9966"}, cwd.path());
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(Has(r.err,
                  "GET http://no-such-host.invalid:9966/api/v1/query?query=up: cannot "
                  "resolve host 'no-such-host.invalid'"))
      << r.err;
}

TEST(Cli, WithoutAnAgentOrADataDirectoryReadCommandsSayWhereTheyLookedAndCreateNothing) {
  TempDir cwd;
  const std::vector<std::vector<std::string>> commands = {
      {"query", "up"}, {"jobs"},   {"jobs", "show", "7"},
      {"diagnose"},    {"report"}, {"tsdb", "export"}};
  for (const auto& command : commands) {
    Result r = Gpuwarden(command, cwd.path());
    EXPECT_EQ(r.code, 1) << command[0] << ": " << r.out << r.err;
    EXPECT_TRUE(Has(r.err, "no data directory at " + cwd.path() + "/data")) << r.err;
    EXPECT_TRUE(Has(r.err, "--url http://HOST:9966")) << r.err;
    EXPECT_TRUE(Has(r.err, "GPUWARDEN_URL")) << r.err;
    EXPECT_TRUE(Has(r.err, "--data-dir DIR")) << r.err;
    EXPECT_FALSE(Has(r.out, "(no data)")) << r.out;
    EXPECT_FALSE(Has(r.out, "no jobs")) << r.out;
    EXPECT_FALSE(std::filesystem::exists(cwd / "data")) << command[0] << " created ./data";
  }
  // A named directory that is not there: the same, with its path.
  Result r = Gpuwarden({"query", "up", "--data-dir", cwd / "nowhere"}, cwd.path());
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(Has(r.err, "no data directory at " + cwd.path() + "/nowhere")) << r.err;
  EXPECT_FALSE(std::filesystem::exists(cwd / "nowhere"));
}

TEST(Cli, RelativeTimesAreReadAndBadTimesNameTheFlagAndValue) {
  TempDir cwd;
  std::filesystem::create_directory(cwd / "data");
  // An empty store: the query runs (no series), over the last five minutes.
  Result r = Gpuwarden({"query", "vector(1)", "--data-dir", cwd / "data", "--start", "-5m", "--end",
                        "now", "--step", "1m"},
                       cwd.path());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "{} =>")) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '@'), 6) << r.out;  // -5m … now, each minute
  r = Gpuwarden({"query", "vector(time())", "--data-dir", cwd / "data", "--time", "now-1h"},
                cwd.path());
  EXPECT_EQ(r.code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(=> ([0-9.e+]+) @)"))) << r.out;
  EXPECT_NEAR(std::stod(m[1]), double(std::time(nullptr)) - 3600, 30) << r.out;
  r = Gpuwarden(
      {"query", "vector(1)", "--data-dir", cwd / "data", "--time", "2026-01-02T03:04:05Z"},
      cwd.path());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "@1767323045")) << r.out;
  r = Gpuwarden(
      {"query", "up", "--data-dir", cwd / "data", "--start", "-5x", "--end", "now", "--step", "1m"},
      cwd.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Has(r.err, "--start: cannot read '-5x' as a time")) << r.err;
  EXPECT_TRUE(Has(r.err, "-5m or now-1h")) << r.err;
  r = Gpuwarden({"diagnose", "--data-dir", cwd / "data", "--time", "yesterday"}, cwd.path());
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Has(r.err, "--time: cannot read 'yesterday' as a time")) << r.err;
}

// A data directory with four minutes of a power-capped GPU, recorded by a real `serve`.
class FourMinutes : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    AgentProcess agent({"--simulate", "power-cap", "--sim-clock", "stepped", "--interval", "15s",
                        "--slow-interval", "15s", "--data-dir", *dir_ / "data"});
    ASSERT_NE(agent.port(), 0);
    HttpReply advanced = HttpPost(agent.port(), "/-/sim/advance?seconds=240");
    ASSERT_EQ(advanced.status, 200) << advanced.body;
    end_ = new std::string(std::to_string(
        static_cast<long long>(nlohmann::json::parse(advanced.body)["taken_at"].get<double>())));
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete end_;
  }
  static std::string data() { return *dir_ / "data"; }
  static TempDir* dir_;
  static std::string* end_;
};
TempDir* FourMinutes::dir_ = nullptr;
std::string* FourMinutes::end_ = nullptr;

TEST_F(FourMinutes, AYearAskedOfFourMinutesHasDurationsFromTheData) {
  Result r =
      Gpuwarden({"diagnose", "--data-dir", data(), "--time", *end_, "--since", "1y"}, dir_->path());
  ASSERT_EQ(r.code, 0) << r.err;
  // Four minutes recorded: samples from 0 to 3m45s (one every 15 s).
  EXPECT_TRUE(std::regex_search(r.out, std::regex("Findings over the (3m45s|4m) of data in the "
                                                  "last 1y up to ")))
      << r.out;
  EXPECT_TRUE(Has(r.out, "power cap")) << r.out;
  // Every held time is within the four minutes.
  const std::regex held(R"(\(held ([0-9hms]+)\))");
  int n = 0;
  for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), held);
       it != std::sregex_iterator(); ++it, ++n) {
    double s = 0;
    ASSERT_TRUE(ParseDurationSeconds((*it)[1], &s)) << (*it)[1];
    EXPECT_LE(s, 240) << (*it)[0];
    EXPECT_GE(s, 60) << (*it)[0];
  }
  EXPECT_GE(n, 1) << r.out;
  EXPECT_FALSE(Has(r.out, "73h")) << r.out;
}

TEST_F(FourMinutes, AGpuThatIsNotThereIsSaid) {
  Result r =
      Gpuwarden({"diagnose", "--data-dir", data(), "--time", *end_, "--gpu", "42"}, dir_->path());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(Has(r.err, "no such GPU: 42 (GPUs with data in")) << r.err;
  EXPECT_TRUE(Has(r.err, ": 0, 1")) << r.err;
  EXPECT_FALSE(Has(r.out, "none")) << r.out;
  // A GPU that is there (by index or UUID): its findings, exit 0.
  r = Gpuwarden({"diagnose", "--data-dir", data(), "--time", *end_, "--gpu", "0"}, dir_->path());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "power cap")) << r.out;
}

// `jobs` and `jobs show` over records written here: columns fit the content, energy in kWh, the
// outcome and throughput of a record.
TEST(Cli, JobsTableFitsItsContentAndJobsShowRendersOutcomeAndThroughput) {
  TempDir cwd;
  const std::string records = cwd / "data/jobs";
  std::filesystem::create_directories(records);
  auto store = jobs::JobRecordStore::Open(records);
  ASSERT_TRUE(store.ok());
  auto record = [](const std::string& id, const std::string& name, const std::string& user) {
    jobs::JobRecord r;
    r.job_id = id;
    r.source = "slurm";
    r.name = name;
    r.user = user;
    r.team = "research-platform-ml";
    r.partition = "gpu";
    r.state = "COMPLETED";
    r.submit_time = 1764660000;
    r.start_time = 1764660060;
    r.end_time = 1764663660;
    jobs::JobGpuStats g;
    g.gpus = {0, 1};
    g.gpu_seconds = 7200;
    g.energy_j = 2.5 * 3.6e6;  // 2.5 kWh
    g.util_avg = 0.8;
    g.util_max = 1;
    g.memory_peak_bytes = 40ULL << 30;
    r.gpu = g;
    return r;
  };
  jobs::JobRecord a = record("1234", "train", "ann");
  jobs::JobRecord b = record("k8s-ns/llama-finetune-job-worker-0", "ft", "bartholomew-longname");
  b.outcome =
      jobs::JobOutcomeRecord{"failed",
                             "gpu_fault",
                             "XID 79 (GPU fell off the bus) on GPU 1",
                             {{1764663600, 1u, "xid", 79, "XID 79: GPU has fallen off the bus"},
                              {1764663650, std::nullopt, "exit_code", 1, "exit code 1"}}};
  b.throughput =
      jobs::JobThroughputRecord{"samples", "train_samples_total", 5.4e6, 1500, 2.7e6, 2.16e6, {}};
  ASSERT_TRUE((*store)->Append(a).ok());
  ASSERT_TRUE((*store)->Append(b).ok());
  Result r = Gpuwarden({"jobs", "--data-dir", cwd / "data"}, cwd.path());
  ASSERT_EQ(r.code, 0) << r.err;
  // Header and rows: each left-aligned column starts at the same character in every line, after
  // two spaces (no cell runs into the next). "…" is one character: counted as one here.
  std::string shown = std::regex_replace(r.out, std::regex("…"), "~");
  std::vector<std::string> lines;
  for (size_t p = 0, n; (n = shown.find('\n', p)) != std::string::npos; p = n + 1)
    lines.push_back(shown.substr(p, n - p));
  ASSERT_EQ(lines.size(), 3u) << r.out;
  const std::vector<std::pair<const char*, std::vector<const char*>>> starts = {
      {"USER", {"bartholomew-lon~", "ann"}},
      {"TEAM", {"research-platform-ml", "research-platform-ml"}},
      {"STATE", {"COMPLETED", "COMPLETED"}},
      {"GPUS", {"0,1", "0,1"}},
      {"OUTCOME", {"failed (gpu_fault)", "-"}}};
  for (const auto& [column, cells] : starts) {
    const size_t at = lines[0].find(column);
    ASSERT_NE(at, std::string::npos) << column;
    for (size_t i = 1; i < lines.size(); ++i) {
      EXPECT_EQ(lines[i].substr(at - 2, 2), "  ") << column << "\n" << r.out;
      EXPECT_EQ(lines[i].compare(at, std::strlen(cells[i - 1]), cells[i - 1]), 0) << column << "\n"
                                                                                  << r.out;
    }
  }
  // Right-aligned numbers end where their header ends.
  const size_t energy_end = lines[0].find("ENERGY") + 6;
  EXPECT_EQ(lines[1].substr(energy_end - 8, 8), "2.50 kWh") << r.out;
  EXPECT_TRUE(Has(r.out, "k8s-ns/llama-finetune-job-worker-0")) << r.out;  // under the cap: whole
  EXPECT_TRUE(Has(r.out, "bartholomew-lon…")) << r.out;                    // over it: cut
  EXPECT_TRUE(Has(r.out, "2.50 kWh")) << r.out;
  EXPECT_FALSE(Has(r.out, "kJ")) << r.out;
  EXPECT_TRUE(Has(r.out, "failed (gpu_fault)")) << r.out;

  r = Gpuwarden({"jobs", "show", "k8s-ns/llama-finetune-job-worker-0", "--data-dir", cwd / "data"},
                cwd.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "\nOutcome    failed (cause: gpu_fault)\n")) << r.out;
  EXPECT_TRUE(Has(r.out, "\n           XID 79 (GPU fell off the bus) on GPU 1\n")) << r.out;
  EXPECT_TRUE(Has(r.out, "2025-12-02 08:20:00Z  GPU 1    XID 79: GPU has fallen off the bus"))
      << r.out;
  EXPECT_TRUE(Has(r.out, "2025-12-02 08:20:50Z  -        exit code 1")) << r.out;
  EXPECT_TRUE(Has(r.out,
                  "\nThroughput 1500 samples/s, 2700000 samples/GPU-h, 2160000 "
                  "samples/kWh, 5400000 samples in all (train_samples_total)\n"))
      << r.out;
  EXPECT_TRUE(Has(r.out, "2.50 kWh")) << r.out;
  r = Gpuwarden({"jobs", "show", "1234", "--data-dir", cwd / "data"}, cwd.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(Has(r.out, "Outcome")) << r.out;  // none recorded: no line
  // On disk, unset times are null (the API serves the records as written).
  const std::string text = ReadFile(records + "/jobs.jsonl");
  EXPECT_FALSE(Has(text, "\"eligible_time\":0")) << text;
  EXPECT_TRUE(Has(text, "\"eligible_time\":null")) << text;
}

// `tsdb import` into a new directory picks 24 h blocks for data 10 s or more apart and says so;
// 1 s data keeps 6 h (no word); storage.block_range names a range of its own; an existing
// directory keeps its range, with a warning when the configuration asks for another; and the
// imported samples read back the same whatever the range.
TEST(Cli, ImportPicksTheBlockRangeFromTheDataSpacing) {
  TempDir cwd;
  auto om = [&](const std::string& name, int step_s, int n) {
    std::string text = "# TYPE temp gauge\n";
    for (int gpu = 0; gpu < 2; ++gpu)
      for (int k = 0; k < n; ++k)
        text += "temp{gpu=\"" + std::to_string(gpu) + "\"} " +
                std::to_string(40 + (k * 7 + gpu) % 23) + " " +
                std::to_string(1'700'000'000 + static_cast<int64_t>(k) * step_s) + "\n";
    text += "# EOF\n";
    WriteFile(cwd / name, text);
  };
  om("sparse.om", 15, 2 * 5760);  // two days at 15 s
  om("dense.om", 1, 7200);        // two hours at 1 s
  Result r = Gpuwarden({"tsdb", "import", "sparse.om", "--data-dir", "a"}, cwd.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(Has(r.err, "new data directory: 24h blocks (samples ~15s apart)")) << r.err;
  EXPECT_TRUE(Has(r.err, "imported 23040 samples of 2 series")) << r.err;
  // Imported again into the same directory (now existing): no choice made, nothing new.
  r = Gpuwarden({"tsdb", "import", "sparse.om", "--data-dir", "a"}, cwd.path());
  EXPECT_FALSE(Has(r.err, "new data directory")) << r.err;
  EXPECT_TRUE(Has(r.err, "23040 refused as out of order")) << r.err;
  WriteFile(cwd / "six.yaml", "storage:\n  block_range: 6h\n");
  r = Gpuwarden({"tsdb", "import", "sparse.om", "--data-dir", "a", "--config", "six.yaml"},
                cwd.path());
  EXPECT_TRUE(Has(r.err,
                  "storage.block_range 6h applies to new data directories; a keeps the 24h "
                  "it was created with"))
      << r.err;
  r = Gpuwarden({"tsdb", "import", "dense.om", "--data-dir", "b"}, cwd.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(Has(r.err, "new data directory")) << r.err;
  WriteFile(cwd / "two.yaml", "storage:\n  block_range: 2h\n");
  r = Gpuwarden({"tsdb", "import", "sparse.om", "--data-dir", "c", "--config", "two.yaml"},
                cwd.path());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(Has(r.err, "new data directory")) << r.err;
  // The same data under 24 h and 2 h blocks: every sample back, the same answers.
  auto answer = [&](const std::string& dir, const std::string& expr) {
    Result q =
        Gpuwarden({"query", "--json", "--data-dir", dir, "--time", "1700172795", expr}, cwd.path());
    EXPECT_EQ(q.code, 0) << q.err;
    auto j = nlohmann::json::parse(q.out, nullptr, false);
    return j.is_discarded() || j["data"]["result"].empty()
               ? std::string("none: ") + q.out
               : j["data"]["result"][0]["value"][1].get<std::string>();
  };
  for (const char* expr : {"sum(count_over_time(temp[3d]))", "max(max_over_time(temp[3d]))",
                           "sum(sum_over_time(temp{gpu=\"1\"}[1d]))"}) {
    EXPECT_EQ(answer("a", expr), answer("c", expr)) << expr;
  }
  EXPECT_EQ(answer("a", "sum(count_over_time(temp[3d]))"), "23040");
}

}  // namespace
}  // namespace gw::testing
