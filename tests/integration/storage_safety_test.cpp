// The data directory on a bad day, against the real binary: a full disk while serving (then
// kill -9), a second writer (another agent, `tsdb import`) and readers beside a running agent.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "support/agent_process.h"
#include "support/tmpfs.h"

namespace gw::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// count_over_time(gpu_up{gpu="0"}[2h]) an hour from now: every sample of one series.
double CountGpu0(const AgentProcess& agent) {
  HttpReply r =
      agent.Get("/api/v1/query?query=" + UrlEncode("count_over_time(gpu_up{gpu=\"0\"}[2h])") +
                "&time=" + std::to_string(time(nullptr) + 3600));
  try {
    const json j = json::parse(r.body);
    const auto& result = j["data"]["result"];
    if (result.size() != 1) return std::nan("");
    return std::stod(result[0]["value"][1].get<std::string>());
  } catch (...) {
    return std::nan("");
  }
}

double Metric(const AgentProcess& agent, const std::string& name) {
  return Value(ParseExposition(agent.Get("/metrics").body), name);
}

// Steps the simulated clock `steps` times by 2 s and waits for each snapshot to be recorded.
void Step(AgentProcess& agent, int steps) {
  for (int i = 0; i < steps; ++i) {
    const double before = Metric(agent, "gpuwarden_recorder_snapshots_recorded_total");
    agent.Advance(2);
    ASSERT_TRUE(WaitFor(
        [&] { return Metric(agent, "gpuwarden_recorder_snapshots_recorded_total") > before; }, 30));
  }
}

// Names and sizes of the WAL segments.
std::map<std::string, uintmax_t> WalFiles(const std::string& data) {
  std::map<std::string, uintmax_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(data + "/wal", ec))
    out[e.path().filename().string()] = fs::file_size(e.path(), ec);
  return out;
}

size_t CountLines(const std::string& log, const std::string& needle) {
  size_t n = 0;
  for (size_t at = log.find(needle); at != std::string::npos; at = log.find(needle, at + 1)) ++n;
  return n;
}

// Issue 16, failure 2: after a full disk, samples committed once the disk had room again were
// lost at the next kill -9 (replay stopped at the torn record the full disk left). Now every one
// is back, the failure is on /metrics while it lasts, and the log has a line at its start and
// one at its end instead of several a second.
TEST(StorageSafety, DiskFullThenRecoveryThenKill9LosesNoCommittedSample) {
  TempDir dir;
  Tmpfs disk(dir / "disk", "8m");
  if (!disk.mounted())
    GTEST_SKIP() << "cannot mount a tmpfs here (" << disk.error()
                 << "): this test needs root or CAP_SYS_ADMIN to make a real full disk";
  const std::string data = dir / "disk/data";
  WriteFile(dir / "gpuwarden.yaml", "storage:\n  flush_interval: 2s\n");
  double recorded = 0, failures = 0;
  std::string log;
  {
    AgentProcess agent({"--simulate", "demo", "--sim-clock", "stepped", "--interval", "2s",
                        "--slow-interval", "10s", "--config", dir / "gpuwarden.yaml", "--data-dir",
                        data});
    ASSERT_NE(agent.port(), 0);
    Step(agent, 6);
    const std::string filler = FillUp(dir / "disk");
    Step(agent, 10);
    EXPECT_EQ(Metric(agent, "gpuwarden_tsdb_wal_writes_failing"), 1);
    failures = Metric(agent, "gpuwarden_tsdb_wal_write_failures_total");
    EXPECT_GE(failures, 10);  // at least one a step
    fs::remove(filler);
    Step(agent, 10);
    EXPECT_EQ(Metric(agent, "gpuwarden_tsdb_wal_writes_failing"), 0);
    recorded = CountGpu0(agent);
    EXPECT_EQ(recorded, 27);  // t = 0, 2, ..., 52 s: the full disk cost nothing in memory
    kill(agent.process().pid(), SIGKILL);
    agent.process().Wait(10);
    log = agent.Log();
  }
  // A line when it started and one when it ended, not one per failure (other writers on the
  // full disk may free a page for a moment: a second episode is allowed).
  EXPECT_GE(CountLines(log, "tsdb: WAL write failed"), 1u) << log;
  EXPECT_LE(CountLines(log, "tsdb: WAL write failed"), 2u) << log;
  EXPECT_GE(CountLines(log, "tsdb: WAL write works again"), 1u) << log;
  EXPECT_EQ(CountLines(log, "store: commit failed"), 0u) << log;
  EXPECT_EQ(CountLines(log, "rules: evaluating rule failed"), 0u) << log;

  AgentProcess again({"--nvml-lib", "/nonexistent/libnvml.so", "--data-dir", data});
  ASSERT_NE(again.port(), 0);
  EXPECT_EQ(CountGpu0(again), recorded) << again.Log();
  EXPECT_EQ(Metric(again, "gpuwarden_tsdb_wal_corruptions_total"), 0) << again.Log();
}

// Issue 16, failure 7: `tsdb import` into a running agent's directory deleted its live WAL
// segment, and two agents could share a directory. Now both are refused, naming the agent's pid,
// without touching the directory, and the agent loses nothing.
TEST(StorageSafety, ASecondWriterIsRefusedWithTheHoldersPidAndTheAgentLosesNothing) {
  TempDir dir;
  const std::string data = dir / "data";
  double recorded = 0;
  {
    AgentProcess agent({"--simulate", "demo", "--sim-clock", "stepped", "--interval", "2s",
                        "--slow-interval", "10s", "--data-dir", data});
    ASSERT_NE(agent.port(), 0);
    Step(agent, 8);
    const auto wal_before = WalFiles(data);
    ASSERT_FALSE(wal_before.empty());
    const std::string holder = "data directory " + data + " is in use by gpuwarden pid " +
                               std::to_string(agent.process().pid()) + " (serve)";

    std::string out;
    EXPECT_NE(RunCommand({GpuwardenBinary(), "serve", "--listen", "127.0.0.1:0", "--simulate",
                          "demo", "--data-dir", data},
                         &out, 30),
              0);
    EXPECT_NE(out.find(holder), std::string::npos) << out;

    WriteFile(dir / "in.om",
              "# TYPE imported gauge\nimported{a=\"1\"} 1 1000\nimported{a=\"1\"} 2 2000\n# EOF\n");
    EXPECT_EQ(
        RunCommand({GpuwardenBinary(), "tsdb", "import", dir / "in.om", "--data-dir", data}, &out),
        1);
    EXPECT_NE(out.find(holder), std::string::npos) << out;
    EXPECT_EQ(WalFiles(data), wal_before);  // nothing deleted, nothing added

    Step(agent, 8);
    recorded = CountGpu0(agent);
    EXPECT_EQ(recorded, 17);
    kill(agent.process().pid(), SIGKILL);
    agent.process().Wait(10);
  }
  AgentProcess again({"--nvml-lib", "/nonexistent/libnvml.so", "--data-dir", data});
  ASSERT_NE(again.port(), 0);
  EXPECT_EQ(CountGpu0(again), recorded) << again.Log();
}

// Issue 16, failure 8: with tsdb.sqlite gone and the WAL still there, the WAL's samples were
// dropped without a word (its segments named no series: they were all in the lost database). Now
// they are replayed into a new database, and the log says what happened.
TEST(StorageSafety, AMissingDatabaseKeepsTheWalsSamplesAndSaysSo) {
  TempDir dir;
  const std::string data = dir / "data";
  const std::vector<std::string> args = {"--simulate", "demo", "--sim-clock",     "stepped",
                                         "--interval", "2s",   "--slow-interval", "10s",
                                         "--data-dir", data};
  double first_count = 0, recorded = 0;
  {
    AgentProcess first(args);  // its series reach tsdb.sqlite at the final flush
    ASSERT_NE(first.port(), 0);
    Step(first, 1);
    first_count = CountGpu0(first);
    ASSERT_EQ(first_count, 2);
    first.process().Stop();
  }
  {
    // The same series: only samples go to the WAL. (Its simulated clock starts at the wall
    // clock again, so its first samples may not be newer than the first agent's: those are
    // refused, and not in the WAL either.)
    AgentProcess second(args);
    ASSERT_NE(second.port(), 0);
    Step(second, 10);
    recorded = CountGpu0(second);
    ASSERT_GE(recorded, first_count + 8);
    kill(second.process().pid(), SIGKILL);
    second.process().Wait(10);
  }
  for (const char* f : {"tsdb.sqlite", "tsdb.sqlite-wal", "tsdb.sqlite-shm"})
    fs::remove(data + "/" + f);
  AgentProcess again({"--nvml-lib", "/nonexistent/libnvml.so", "--data-dir", data});
  ASSERT_NE(again.port(), 0);
  // Every sample the second agent wrote (the first's were only in the lost database).
  EXPECT_EQ(CountGpu0(again), recorded - first_count) << again.Log();
  EXPECT_NE(again.Log().find("tsdb.sqlite was missing; created a new, empty one and replayed"),
            std::string::npos)
      << again.Log();
}

// Readers (query, export) work beside a running agent and change nothing in its directory (they
// used to start a WAL segment of their own in it, and could cut a tail being written).
TEST(StorageSafety, ReadersBesideARunningAgentChangeNothing) {
  TempDir dir;
  const std::string data = dir / "data";
  AgentProcess agent({"--simulate", "demo", "--sim-clock", "stepped", "--interval", "2s",
                      "--slow-interval", "10s", "--data-dir", data});
  ASSERT_NE(agent.port(), 0);
  Step(agent, 5);
  const auto wal_before = WalFiles(data);
  std::string out;
  ASSERT_EQ(
      RunCommand({GpuwardenBinary(), "query", "--json", "--data-dir", data, "--time",
                  std::to_string(time(nullptr) + 3600), "count_over_time(gpu_up{gpu=\"0\"}[2h])"},
                 &out),
      0)
      << out;
  EXPECT_NE(out.find("\"6\""), std::string::npos) << out;
  ASSERT_EQ(RunCommand({GpuwardenBinary(), "tsdb", "export", "--match", "gpu_up{gpu=\"0\"}",
                        "--data-dir", data},
                       &out),
            0)
      << out;
  EXPECT_EQ(CountLines(out, "gpu_up{"), 6u) << out;
  EXPECT_EQ(WalFiles(data), wal_before);
  EXPECT_TRUE(agent.process().Running());
}

}  // namespace
}  // namespace gw::testing
