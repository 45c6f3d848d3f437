// Process details (collect/process_details.h): real child processes read through this machine's
// /proc — name, user, command line, host CPU and resident memory, checked against what the
// kernel says elsewhere (status' VmRSS, the passwd entry) — and a fake /proc tree for reused and
// vanished pids.
#include "collect/process_details.h"

#include <gtest/gtest.h>
#include <pwd.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "support/fake_proc.h"
#include "support/process.h"

namespace gw::collect {
namespace {

using gw::testing::FakeProcess;
using gw::testing::Process;
using gw::testing::ReadFile;
using gw::testing::TempDir;
using gw::testing::WaitFor;
using gw::testing::WriteFile;

std::vector<GpuSnapshot> GpusWith(std::vector<unsigned> pids) {
  std::vector<GpuSnapshot> gpus(1);
  for (unsigned pid : pids) {
    ProcessSample p;
    p.pid = pid;
    p.memory_bytes = 1 << 30;
    gpus[0].processes.push_back(p);
  }
  return gpus;
}

double SteadyNow() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// VmRSS from /proc/<pid>/status, bytes.
double StatusRss(pid_t pid) {
  const std::string status = ReadFile("/proc/" + std::to_string(pid) + "/status");
  size_t at = status.find("VmRSS:");
  if (at == std::string::npos) return -1;
  return std::stod(status.substr(at + 6)) * 1024;
}

// utime + stime from /proc/<pid>/stat, in clock ticks, through the parser tested below.
uint64_t CpuTicks(pid_t pid) {
  ProcStat st;
  if (!ParseProcStat(ReadFile("/proc/" + std::to_string(pid) + "/stat"), &st)) return 0;
  return st.utime + st.stime;
}

TEST(ProcStat, ParsesFieldsAfterACommWithSpacesAndParentheses) {
  ProcStat st;
  ASSERT_TRUE(ParseProcStat(
      "4242 (my (odd) name) R 1 4242 4242 0 -1 4194560 100 0 0 0 1500 250 0 0 20 0 1 0 98765 "
      "123456789 2048 18446744073709551615\n",
      &st));
  EXPECT_EQ(st.comm, "my (odd) name");
  EXPECT_EQ(st.utime, 1500u);
  EXPECT_EQ(st.stime, 250u);
  EXPECT_EQ(st.start_ticks, 98765u);
  EXPECT_EQ(st.rss_pages, 2048u);
  EXPECT_FALSE(ParseProcStat("4242 (cut) R 1 2 3", &st));
  EXPECT_FALSE(ParseProcStat("no parentheses at all", &st));
  EXPECT_FALSE(ParseProcStat("1 (x) R 1 1 1 0 -1 0 0 0 0 0 ten 0 0 0 20 0 1 0 5 6 7", &st));
}

TEST(ProcessEnricher, ReadsRealProcessesThroughProc) {
  TempDir dir;
  // A busy shell (about a core, less on a loaded machine), and a shell waiting on a sleep, with a
  // command line longer than kCommandBytes.
  Process busy({"sh", "-c", "while :; do :; done"}, dir / "busy.log");
  const std::string filler(300, 'x');
  Process idle({"sh", "-c", "sleep 60; :", filler}, dir / "idle.log");
  ASSERT_TRUE(busy.started() && idle.started());
  ASSERT_TRUE(WaitFor(
      [&] { return !ReadFile("/proc/" + std::to_string(idle.pid()) + "/cmdline").empty(); }, 10));
  const unsigned busy_pid = static_cast<unsigned>(busy.pid());
  const unsigned idle_pid = static_cast<unsigned>(idle.pid());

  ProcessEnricher enricher({.proc_root = "/proc", .interval_s = 0}, nullptr);
  std::vector<GpuSnapshot> gpus = GpusWith({busy_pid, idle_pid});
  // The loop's own CPU time, read by the test just before the enricher's first read and just
  // after its second: the enricher's reads fall between, so its tick difference is at most this.
  const uint64_t busy_ticks_before = CpuTicks(busy.pid());
  const double first_at = SteadyNow();
  enricher.Apply(first_at, gpus);
  const ProcessSample& first = gpus[0].processes[0];
  ASSERT_NE(first.details, nullptr);
  // CPU needs two reads; memory is there at once.
  EXPECT_TRUE(IsAbsent(first.host_cpu_ratio));
  EXPECT_GT(first.host_memory_bytes, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  gpus = GpusWith({busy_pid, idle_pid});
  const double second_at = SteadyNow();
  enricher.Apply(second_at, gpus);
  const uint64_t busy_ticks_after = CpuTicks(busy.pid());

  const passwd* me = getpwuid(getuid());
  ASSERT_NE(me, nullptr);
  const ProcessSample& b = gpus[0].processes[0];
  const ProcessSample& s = gpus[0].processes[1];
  ASSERT_NE(b.details, nullptr);
  ASSERT_NE(s.details, nullptr);
  EXPECT_EQ(b.details->name, "sh");
  EXPECT_EQ(b.details->user, me->pw_name);
  EXPECT_EQ(b.details->command, "sh -c while :; do :; done");
  EXPECT_EQ(s.details->name, "sh");
  EXPECT_EQ(s.details->user, me->pw_name);
  const std::string cmdline = ReadFile("/proc/" + std::to_string(idle_pid) + "/cmdline");
  std::string want = cmdline.substr(0, kCommandBytes);
  for (char& c : want)
    if (c == '\0') c = ' ';
  while (!want.empty() && want.back() == ' ') want.pop_back();
  EXPECT_EQ(s.details->command, want);
  EXPECT_EQ(s.details->command.size(), kCommandBytes);  // the filler makes it longer: cut
  // The busy loop used a real share of a core, the sleeper next to nothing.
  ASSERT_FALSE(IsAbsent(b.host_cpu_ratio));
  ASSERT_FALSE(IsAbsent(s.host_cpu_ratio));
  // How much of a core the loop gets depends on what else runs (ctest -j2 under ASan left it
  // under 0.1 once): a clear share, and far more than the sleeper's.
  EXPECT_GT(b.host_cpu_ratio, 0.02);
  EXPECT_GT(b.host_cpu_ratio, 4 * s.host_cpu_ratio);
  // The ratio is the CPU time between the enricher's two reads over the times it was given. The
  // reads can come late after those times on a loaded machine (so the ratio alone may pass 1.0),
  // but the CPU time in it cannot pass what the test saw around both reads (one tick of slack).
  const double ticks_per_s = static_cast<double>(sysconf(_SC_CLK_TCK));
  EXPECT_LE(b.host_cpu_ratio * (second_at - first_at),
            static_cast<double>(busy_ticks_after - busy_ticks_before + 1) / ticks_per_s);
  EXPECT_LT(s.host_cpu_ratio, 0.05);
  // Resident memory as the kernel's status file says it (within a few pages of change).
  EXPECT_NEAR(s.host_memory_bytes, StatusRss(idle.pid()), 64 * 1024);
  EXPECT_NEAR(b.host_memory_bytes, StatusRss(busy.pid()), 64 * 1024);
  // The details were read once per process, not at each Apply.
  EXPECT_EQ(enricher.detail_reads(), 2u);
}

TEST(ProcessEnricher, APidNotInProcGetsNoHostFigures) {
  TempDir root;
  ProcessEnricher enricher({.proc_root = root.path(), .interval_s = 0}, nullptr);
  std::vector<GpuSnapshot> gpus = GpusWith({31337});
  enricher.Apply(1, gpus);
  const ProcessSample& p = gpus[0].processes[0];
  ASSERT_NE(p.details, nullptr);
  EXPECT_EQ(p.details->name, "");  // no driver to ask either
  EXPECT_EQ(p.details->user, "");
  EXPECT_TRUE(IsAbsent(p.host_cpu_ratio));
  EXPECT_TRUE(IsAbsent(p.host_memory_bytes));
}

TEST(ProcessEnricher, AReusedPidIsReadAfreshAndAGonePidForgotten) {
  TempDir root;
  FakeProcess(root.path(), 100, 5000, "", {});
  FakeProcess(root.path(), 200, 6000, "", {});
  WriteFile(root / "100/cmdline", std::string("python3\0train.py\0", 17));
  ProcessEnricher enricher({.proc_root = root.path(), .interval_s = 5}, nullptr);
  std::vector<GpuSnapshot> gpus = GpusWith({100, 200});
  enricher.Apply(10, gpus);
  EXPECT_EQ(gpus[0].processes[0].details->name, "python3");
  EXPECT_EQ(gpus[0].processes[0].details->command, "python3 train.py");
  EXPECT_EQ(gpus[0].processes[0].details->user, "root");  // uid 0
  EXPECT_EQ(enricher.detail_reads(), 2u);
  // The fake status has no VmRSS: stat's rss (10 pages).
  EXPECT_DOUBLE_EQ(gpus[0].processes[0].host_memory_bytes, 10.0 * sysconf(_SC_PAGESIZE));

  // Before the interval: nothing is read, what is known is copied.
  WriteFile(root / "100/stat", "100 (other) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 7000 1 1\n");
  gpus = GpusWith({100, 200});
  enricher.Apply(12, gpus);
  EXPECT_EQ(gpus[0].processes[0].details->name, "python3");
  EXPECT_EQ(enricher.detail_reads(), 2u);
  // After it: pid 100 now names another process (another start time), pid 200 is gone.
  gpus = GpusWith({100});
  enricher.Apply(16, gpus);
  EXPECT_EQ(gpus[0].processes[0].details->name, "other");
  EXPECT_EQ(enricher.detail_reads(), 3u);
  EXPECT_EQ(enricher.cache_size(), 1u);
}

}  // namespace
}  // namespace gw::collect
