// `gpuwarden top` as a person or a script meets it: the real binary on simulated faults, locally
// (--once --simulate) and against a running `gpuwarden serve` (--once --url) whose fault raises an
// alert in stepped time, with a job named by a host process; and an interactive run inside tmux
// that draws, selects with j, quits with q and leaves the terminal as it found it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>
#include <regex>

#include "support/agent_process.h"
#include "support/inference_service.h"

namespace gw::testing {
namespace {

using nlohmann::json;

std::string Top(std::vector<std::string> args, int* code) {
  std::vector<std::string> argv = {GpuwardenBinary(), "top", "--once", "--width", "140"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string out;
  *code = RunCommand(argv, &out, 120);
  return out;
}

std::string LineWith(const std::string& text, const std::string& needle) {
  size_t at = text.find(needle);
  if (at == std::string::npos) return "";
  size_t start = text.rfind('\n', at);
  start = start == std::string::npos ? 0 : start + 1;
  return text.substr(start, text.find('\n', at) - start);
}

// 2 x H100 driven by host processes: GPU 0 capped at 300 W from 10 s and hit by two
// uncorrectable ECC errors at 20 s, GPU 1 falls off the bus at 30 s.
constexpr const char* kFaultHost =
    "name: top-faults\nseed: 5\nclock: stepped\nhost_processes: true\nhost_scan_interval: 50ms\n"
    "gpus:\n"
    "  - model: H100\n    workload:\n      - {type: training}\n    faults:\n"
    "      - {type: power_cap, at: 10s, limit_w: 300}\n"
    "      - {type: ecc_uncorrectable, at: 20s, count: 2}\n"
    "  - model: H100\n    workload:\n      - {type: training}\n    faults:\n"
    "      - {type: fall_off_bus, at: 30s}\n";

Process StartJob(const TempDir& dir) {
  return Process({"env", "GPUWARDEN_SIM_WORKLOAD=training", "CUDA_VISIBLE_DEVICES=0",
                  "GPUWARDEN_JOB=train-7", "GPUWARDEN_TEAM=vision", "sleep", "600"},
                 dir / "job.log");
}

TEST(TopOnce, NamesEachFaultOfTheBuiltInScenarios) {
  struct Case {
    const char* scenario;
    const char* sim_time;
    std::vector<std::string> wanted;
  } cases[] = {
      {"power-cap", "90s", {"throttle: power cap", "/300W"}},
      {"power-brake", "60s", {"HW slowdown, HW power brake slowdown"}},
      {"cooling-failure", "100s", {"SW thermal slowdown"}},
      {"ecc-uncorrectable",
       "60s",
       {"ecc: 2 corr 2 uncorr", "xid: 48x1", "[critical] 2 uncorrectable ECC error(s)"}},
      {"fall-off-bus", "60s", {"LOST: fell off the bus", "XIDs: 79x1", "GPU 1 [critical]"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.scenario);
    int code = -1;
    const std::string out = Top({"--simulate", c.scenario, "--sim-time", c.sim_time}, &code);
    ASSERT_EQ(code, 0) << out;
    EXPECT_EQ(out.find('\x1b'), std::string::npos) << "escape codes in --once output";
    for (const std::string& w : c.wanted)
      EXPECT_NE(out.find(w), std::string::npos) << w << "\n" << out;
    EXPECT_NE(out.find("Alerts: alerts are evaluated by a running agent"), std::string::npos);
  }
  // Before the fault there is nothing to report.
  int code = -1;
  const std::string calm = Top({"--simulate", "power-cap", "--sim-time", "30s"}, &code);
  ASSERT_EQ(code, 0) << calm;
  EXPECT_EQ(calm.find("power cap"), std::string::npos) << calm;
}

TEST(TopOnce, LocalShowsTheJobAndTeamOfAHostProcess) {
  TempDir dir;
  WriteFile(dir / "faults.yaml", kFaultHost);
  Process job = StartJob(dir);
  ASSERT_TRUE(job.started());
  std::string out;
  // The simulator finds the process on a scan (real time), the collector on a slow cycle.
  ASSERT_TRUE(WaitFor(
      [&] {
        int code = -1;
        out = Top({"--simulate", dir / "faults.yaml", "--sim-time", "40s"}, &code);
        return code == 0 && out.find("job train-7") != std::string::npos;
      },
      60))
      << out;
  const std::string gpu0 = LineWith(out, "GPU 0 NVIDIA");
  EXPECT_NE(gpu0.find("job train-7  team vision"), std::string::npos) << out;
  EXPECT_NE(out.find("throttle: power cap"), std::string::npos) << out;
  EXPECT_NE(LineWith(out, "GPU 1 NVIDIA").find("LOST"), std::string::npos) << out;
}

TEST(TopOnce, RemoteShowsFaultJobAndFiringAlertOfAnAgent) {
  TempDir dir;
  WriteFile(dir / "faults.yaml", kFaultHost);
  // A stand-in squeue (Slurm 22.05's shape) with one job waiting for five hours.
  const long now = static_cast<long>(std::time(nullptr));
  WriteFile(dir / "squeue.json",
            R"js({"meta":{},"errors":[],"jobs":[{"job_id":12,"name":"wait","job_state":"PENDING",
            "state_reason":"Resources","user_name":"bob","account":"bio","partition":"gpu",
            "nodes":"","submit_time":)js" +
                std::to_string(now - 18000) + R"js(,"eligible_time":)js" +
                std::to_string(now - 18000) + R"js(,"start_time":0,"end_time":0}]})js");
  WriteFile(dir / "squeue", "#!/bin/sh\ncat '" + (dir / "squeue.json") + "'\n");
  chmod((dir / "squeue").c_str(), 0755);
  WriteFile(dir / "gpuwarden.yaml",
            "rules:\n  evaluation_interval: 15s\njobs:\n  scheduler: slurm\n"
            "  squeue_command: [" +
                (dir / "squeue") + ", --json]\n  poll_interval: 200ms\n");
  Process job = StartJob(dir);
  ASSERT_TRUE(job.started());
  AgentProcess agent({"--simulate", dir / "faults.yaml", "--sim-clock", "stepped", "--config",
                      dir / "gpuwarden.yaml"});
  ASSERT_NE(agent.port(), 0);
  // Step simulated time until the fall-off-bus alert fires and the job is attributed.
  auto firing = [&] {
    HttpReply r = agent.Get("/api/v1/alerts");
    json j = json::parse(r.body, nullptr, false);
    if (!j.is_object()) return false;
    for (const json& a : j["data"]["alerts"])
      if (a["labels"].value("alertname", "") == "GpuFellOffBus" && a.value("state", "") == "firing")
        return true;
    return false;
  };
  auto held = [&] {
    return agent.Get("/api/gw/v1/jobs?running=1").body.find("train-7") != std::string::npos;
  };
  ASSERT_TRUE(WaitFor(
      [&] {
        agent.Advance(10);
        return firing() && held() &&
               agent.Get("/api/gw/v1/queue").body.find("\"known\":true") != std::string::npos;
      },
      90))
      << agent.Log();

  const std::string url = "http://127.0.0.1:" + std::to_string(agent.port());
  int code = -1;
  const std::string out = Top({"--url", url}, &code);
  ASSERT_EQ(code, 0) << out;
  EXPECT_EQ(out.find('\x1b'), std::string::npos);
  EXPECT_NE(out.find(url), std::string::npos) << out;
  // The header: the agent's queue (GET /api/gw/v1/queue).
  EXPECT_TRUE(
      std::regex_search(LineWith(out, url), std::regex(" \\| queued 1, longest wait 5h 0[0-9]m")))
      << out;
  const std::string gpu0 = LineWith(out, "GPU 0 NVIDIA");
  EXPECT_NE(gpu0.find("job train-7"), std::string::npos) << out;
  EXPECT_NE(gpu0.find("team vision"), std::string::npos) << out;
  EXPECT_NE(out.find("throttle: power cap"), std::string::npos) << out;
  EXPECT_NE(out.find("2 uncorr"), std::string::npos) << out;
  EXPECT_NE(LineWith(out, "GPU 1 NVIDIA").find("LOST: fell off the bus"), std::string::npos) << out;
  const std::string alert = LineWith(out, "GpuFellOffBus");
  EXPECT_NE(alert.find("FIRING  critical"), std::string::npos) << out;
  EXPECT_NE(alert.find("gpu 1"), std::string::npos) << out;
  EXPECT_NE(out.find("GpuUncorrectableEccError"), std::string::npos) << out;

  // The agent goes away: --once says so and fails.
  agent.process().Stop();
  const std::string gone = Top({"--url", url}, &code);
  EXPECT_EQ(code, 1) << gone;
  EXPECT_NE(gone.find(url + "/api/snapshot"), std::string::npos) << gone;
}

// An agent with a priced service (gw-inference-sim on GPU 0 of the inference-thermal scenario,
// scraped with its 2xx requests as outputs): top shows its cost per 1k requests and requests per
// second under the header, as the agent's /api/gw/v1/services says them (stepped time stands
// still between the two readings).
TEST(TopOnce, RemoteShowsTheCostPerOutputOfAService) {
  TempDir dir;
  const std::string state = dir / "state";
  InferenceService service(dir / "llm.log", 0, state);
  ASSERT_TRUE(service.ready()) << service.process().Output();
  WriteFile(dir / "gpuwarden.yaml",
            service.ScrapeConfig() +
                "governance:\n  prices:\n    gpu_hour: {default: 3.6}\n    currency: EUR\n");
  setenv("GPUWARDEN_SIM_STATE_DIR", state.c_str(), 1);
  AgentProcess agent({"--simulate", "inference-thermal", "--sim-clock", "stepped", "--config",
                      dir / "gpuwarden.yaml", "--data-dir", dir / "data"});
  unsetenv("GPUWARDEN_SIM_STATE_DIR");
  ASSERT_NE(agent.port(), 0);
  json llm;
  ASSERT_TRUE(WaitFor(
      [&] {
        agent.Advance(30);
        json api = json::parse(agent.Get("/api/gw/v1/services").body, nullptr, false);
        if (!api.is_object() || api["data"]["services"].size() != 1) return false;
        llm = api["data"]["services"][0];
        return llm["cost_per_1k_outputs"].is_number() && llm["window"]["seconds"] >= 60;
      },
      120))
      << llm.dump() << agent.Log();

  const std::string url = "http://127.0.0.1:" + std::to_string(agent.port());
  int code = -1;
  const std::string out = Top({"--url", url}, &code);
  ASSERT_EQ(code, 0) << out;
  json api = json::parse(agent.Get("/api/gw/v1/services").body);
  llm = api["data"]["services"][0];
  char want[160];
  std::snprintf(want, sizeof want, "  service llm: %.4g EUR per 1k requests, %.1f requests/s",
                llm["cost_per_1k_outputs"].get<double>(),
                llm["window"]["outputs"].get<double>() / llm["window"]["seconds"].get<double>());
  const std::string line = LineWith(out, "service llm");
  EXPECT_EQ(line.rfind(want, 0), 0u) << want << "\n" << out;
  EXPECT_GT(llm["cost"].get<double>(), 0);
  // Right under the header line.
  EXPECT_EQ(out.find(line), out.find('\n') + 1) << out;
}

TEST(TopOnce, RefusesBadArguments) {
  int code = -1;
  std::string out = Top({"--refresh", "often"}, &code);
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("--refresh"), std::string::npos) << out;
  out = Top({"--sim-time", "10s"}, &code);
  EXPECT_EQ(code, 2) << out;
  out = Top({"--url", "http://127.0.0.1:1", "--simulate", "demo"}, &code);
  EXPECT_EQ(code, 2) << out;
}

// tmux on a private socket: a real terminal for the interactive mode.
class Tmux {
 public:
  explicit Tmux(const TempDir& dir) : socket_(dir / "tmux.sock") {}
  ~Tmux() { Run({"kill-server"}); }
  static bool Available() {
    std::string out;
    return RunCommand({"tmux", "-V"}, &out, 10) == 0;
  }
  int Run(std::vector<std::string> args, std::string* out = nullptr) const {
    std::vector<std::string> argv = {"tmux", "-S", socket_};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string ignored;
    return RunCommand(argv, out ? out : &ignored, 20);
  }
  std::string Screen() const {
    std::string out;
    Run({"capture-pane", "-p", "-t", "top"}, &out);
    return out;
  }
  std::string Display(const std::string& format) const {
    std::string out;
    Run({"display-message", "-p", "-t", "top", format}, &out);
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    return out;
  }

 private:
  std::string socket_;
};

TEST(TopInteractive, DrawsSelectsQuitsAndRestoresTheTerminal) {
  if (!Tmux::Available()) GTEST_SKIP() << "no tmux (scripts/setup.sh installs it)";
  TempDir dir;
  Tmux tmux(dir);
  // After top exits the shell records the terminal's modes and says so.
  const std::string script =
      "'" + GpuwardenBinary() +
      "' top --simulate demo --refresh 300ms; echo \"exit=$?\"; stty -a > '" + (dir / "stty.txt") +
      "'; echo TOP-DONE; sleep 60";
  ASSERT_EQ(
      tmux.Run({"new-session", "-d", "-s", "top", "-x", "132", "-y", "45", "sh", "-c", script}), 0);
  std::string screen;
  ASSERT_TRUE(WaitFor(
      [&] {
        screen = tmux.Screen();
        return screen.find("GPU 0 NVIDIA H100") != std::string::npos &&
               screen.find("q quit") != std::string::npos;
      },
      60))
      << screen;
  EXPECT_EQ(tmux.Display("#{alternate_on}"), "1");
  EXPECT_NE(screen.find("simulated 'demo'"), std::string::npos) << screen;
  EXPECT_NE(LineWith(screen, "GPU 0 NVIDIA").find(">"), std::string::npos) << screen;
  EXPECT_NE(screen.find("Alerts:"), std::string::npos) << screen;

  tmux.Run({"send-keys", "-t", "top", "j"});
  ASSERT_TRUE(WaitFor(
      [&] {
        screen = tmux.Screen();
        return LineWith(screen, "GPU 1 NVIDIA").find(">") != std::string::npos;
      },
      20))
      << screen;
  EXPECT_EQ(LineWith(screen, "GPU 0 NVIDIA").find(">"), std::string::npos) << screen;
  // Sorting by the next key keeps GPU 1 selected; help comes and goes.
  tmux.Run({"send-keys", "-t", "top", "s"});
  ASSERT_TRUE(
      WaitFor([&] { return tmux.Screen().find("sort: utilization") != std::string::npos; }, 20))
      << tmux.Screen();
  tmux.Run({"send-keys", "-t", "top", "h"});
  ASSERT_TRUE(
      WaitFor([&] { return tmux.Screen().find("Reading the screen") != std::string::npos; }, 20))
      << tmux.Screen();
  tmux.Run({"send-keys", "-t", "top", "x"});
  ASSERT_TRUE(
      WaitFor([&] { return tmux.Screen().find("Reading the screen") == std::string::npos; }, 20));
  // A resize redraws at the new width.
  tmux.Run({"resize-window", "-t", "top", "-x", "90", "-y", "30"});
  ASSERT_TRUE(WaitFor(
      [&] {
        screen = tmux.Screen();
        return LineWith(screen, "util [").find("temp [") == std::string::npos &&
               screen.find("q quit") != std::string::npos;
      },
      20))
      << screen;

  tmux.Run({"send-keys", "-t", "top", "q"});
  ASSERT_TRUE(WaitFor([&] { return tmux.Screen().find("TOP-DONE") != std::string::npos; }, 30))
      << tmux.Screen();
  screen = tmux.Screen();
  EXPECT_NE(screen.find("exit=0"), std::string::npos) << screen;
  EXPECT_EQ(tmux.Display("#{alternate_on}"), "0");
  EXPECT_EQ(tmux.Display("#{cursor_flag}"), "1");  // the cursor is shown again
  const std::string modes = ReadFile(dir / "stty.txt");
  EXPECT_TRUE(std::regex_search(modes, std::regex(R"((^|\s)icanon(\s|$))"))) << modes;
  EXPECT_TRUE(std::regex_search(modes, std::regex(R"((^|\s)echo(\s|$))"))) << modes;
}

// Ctrl-C (SIGINT from the terminal) or SIGTERM (from kill) while top runs: it stops and the
// terminal is restored all the same.
class TopSignal : public ::testing::TestWithParam<std::string> {};

TEST_P(TopSignal, RestoresTheTerminal) {
  if (!Tmux::Available()) GTEST_SKIP() << "no tmux (scripts/setup.sh installs it)";
  TempDir dir;
  Tmux tmux(dir);
  // The shell survives the Ctrl-C (a trap) to report what top left behind.
  const std::string script = "trap : INT; '" + GpuwardenBinary() +
                             "' top --simulate power-cap --sim-time 70s --refresh 200ms; "
                             "echo \"exit=$?\"; stty -a > '" +
                             (dir / "stty.txt") + "'; echo TOP-DONE; sleep 60";
  ASSERT_EQ(
      tmux.Run({"new-session", "-d", "-s", "top", "-x", "100", "-y", "30", "sh", "-c", script}), 0);
  std::string screen;
  ASSERT_TRUE(WaitFor(
      [&] {
        screen = tmux.Screen();
        return screen.find("throttle: power cap") != std::string::npos;
      },
      60))
      << screen;
  EXPECT_NE(screen.find("stepped clock"), std::string::npos) << screen;
  if (GetParam() == "SIGINT") {
    tmux.Run({"send-keys", "-t", "top", "C-c"});
  } else {
    // top is the shell's only child.
    std::string children;
    RunCommand({"pgrep", "-P", tmux.Display("#{pane_pid}")}, &children, 10);
    ASSERT_GT(std::atoi(children.c_str()), 0) << children;
    kill(std::atoi(children.c_str()), SIGTERM);
  }
  ASSERT_TRUE(WaitFor([&] { return tmux.Screen().find("TOP-DONE") != std::string::npos; }, 30))
      << tmux.Screen();
  EXPECT_NE(tmux.Screen().find("exit=0"), std::string::npos) << tmux.Screen();
  EXPECT_EQ(tmux.Display("#{alternate_on}"), "0");
  const std::string modes = ReadFile(dir / "stty.txt");
  EXPECT_TRUE(std::regex_search(modes, std::regex(R"((^|\s)icanon(\s|$))"))) << modes;
  EXPECT_TRUE(std::regex_search(modes, std::regex(R"((^|\s)echo(\s|$))"))) << modes;
}

INSTANTIATE_TEST_SUITE_P(Signals, TopSignal, ::testing::Values("SIGINT", "SIGTERM"));

// ---- issue 17: what a person sees at 80x24 and 160x50 ------------------------------------

// Runs `top_args` in a tmux window of w x h; the Tmux stays up until the test ends.
void StartTop(const Tmux& tmux, const std::string& top_args, int w, int h) {
  const std::string script = "'" + GpuwardenBinary() + "' top " + top_args + "; sleep 60";
  ASSERT_EQ(tmux.Run({"new-session", "-d", "-s", "top", "-x", std::to_string(w), "-y",
                      std::to_string(h), "sh", "-c", script}),
            0);
}

std::string ScreenWithEscapes(const Tmux& tmux) {
  std::string out;
  tmux.Run({"capture-pane", "-e", "-p", "-t", "top"}, &out);
  return out;
}

std::vector<std::string> ScreenLines(const std::string& screen) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < screen.size()) {
    size_t end = screen.find('\n', start);
    if (end == std::string::npos) end = screen.size();
    lines.push_back(screen.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// Columns of a captured line (UTF-8 sequences count one).
size_t Columns(const std::string& line) {
  size_t cols = 0;
  for (unsigned char c : line) cols += (c & 0xC0) != 0x80;
  return cols;
}

// The demo's eight GPUs at 80x24: one line each, all there; a header that is shortened, not cut;
// the process table with the scenario's names, sorted by GPU memory; o re-sorts, / filters.
TEST(TopInteractive, At80x24TheDemoFitsAndItsProcessesSortAndFilter) {
  if (!Tmux::Available()) GTEST_SKIP() << "no tmux (scripts/setup.sh installs it)";
  TempDir dir;
  Tmux tmux(dir);
  StartTop(tmux, "--simulate demo --refresh 300ms", 80, 24);
  std::string screen;
  ASSERT_TRUE(WaitFor(
      [&] {
        screen = tmux.Screen();
        return screen.find("GPU 7 ") != std::string::npos &&
               screen.find("spark-rapids") != std::string::npos;
      },
      60))
      << screen;
  std::vector<std::string> lines = ScreenLines(screen);
  ASSERT_EQ(lines.size(), 24u) << screen;
  for (const std::string& l : lines) EXPECT_LE(Columns(l), 80u) << l;
  for (int i = 0; i < 8; ++i)
    EXPECT_NE(LineWith(screen, "GPU " + std::to_string(i) + " ").find("util ["), std::string::npos)
        << i << "\n"
        << screen;
  EXPECT_EQ(screen.find("more (j/k)"), std::string::npos) << screen;
  // The header: shortened to fit, ending with the sort orders.
  EXPECT_NE(lines[0].find("simulated 'demo' | 8 GPUs"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("index/gpu mem"), std::string::npos) << lines[0];
  // Processes by GPU memory: the H200's 96 GiB Spark job first, named as the scenario names it.
  const size_t table = screen.find("GPU-MEM▼");
  ASSERT_NE(table, std::string::npos) << screen;
  const std::string first_row = ScreenLines(screen.substr(table))[1];
  EXPECT_NE(first_row.find("52000"), std::string::npos) << screen;
  EXPECT_NE(first_row.find("96.0G"), std::string::npos) << first_row;
  EXPECT_NE(first_row.find("spark-rapids"), std::string::npos) << first_row;
  EXPECT_NE(first_row.find("%"), std::string::npos) << first_row;  // its SM share

  // o: sorted by SM share; the header row marks the column.
  tmux.Run({"send-keys", "-t", "top", "o"});
  ASSERT_TRUE(WaitFor([&] { return tmux.Screen().find(" SM▼") != std::string::npos; }, 20))
      << tmux.Screen();
  // /triton Enter: only the two tritonservers.
  tmux.Run({"send-keys", "-t", "top", "/triton", "Enter"});
  ASSERT_TRUE(WaitFor(
      [&] {
        screen = tmux.Screen();
        return screen.find("filter: triton  2 of 8 processes") != std::string::npos;
      },
      20))
      << screen;
  EXPECT_NE(screen.find("41000"), std::string::npos) << screen;
  EXPECT_NE(screen.find("41001"), std::string::npos) << screen;
  EXPECT_EQ(screen.find("spark-rapids"), std::string::npos) << screen;
  EXPECT_EQ(screen.find("jupyter-kernel"), std::string::npos) << screen;
  // Keys work again after Enter; Esc clears the filter.
  tmux.Run({"send-keys", "-t", "top", "Escape"});
  ASSERT_TRUE(WaitFor([&] { return tmux.Screen().find("spark-rapids") != std::string::npos; }, 20))
      << tmux.Screen();
  tmux.Run({"send-keys", "-t", "top", "q"});
}

// Sixteen GPUs at 80x24 do not fit: the list scrolls with the selection and says how many GPUs
// are above and below.
TEST(TopInteractive, At80x24SixteenGpusScrollWithAHint) {
  if (!Tmux::Available()) GTEST_SKIP() << "no tmux (scripts/setup.sh installs it)";
  TempDir dir;
  WriteFile(dir / "sixteen.yaml",
            "name: sixteen\nseed: 1\ngpus:\n  - model: H100\n    count: 16\n    workload:\n"
            "      - {type: training}\n");
  Tmux tmux(dir);
  StartTop(tmux, "--simulate " + (dir / "sixteen.yaml") + " --refresh 300ms", 80, 24);
  std::string screen;
  ASSERT_TRUE(WaitFor(
      [&] {
        screen = tmux.Screen();
        return std::regex_search(screen, std::regex("↓ [0-9]+ more \\(j/k\\)"));
      },
      60))
      << screen;
  EXPECT_EQ(screen.find("GPU 15 "), std::string::npos) << screen;
  for (int i = 0; i < 15; ++i) tmux.Run({"send-keys", "-t", "top", "j"});
  ASSERT_TRUE(WaitFor(
      [&] {
        screen = tmux.Screen();
        return LineWith(screen, "GPU 15 ").find(">") != std::string::npos;
      },
      20))
      << screen;
  EXPECT_TRUE(std::regex_search(screen, std::regex("↑ [0-9]+ above \\(j/k\\)"))) << screen;
  EXPECT_EQ(screen.find("GPU 0 "), std::string::npos) << screen;
  tmux.Run({"send-keys", "-t", "top", "q"});
}

// The memory bar against the thresholds the help gives: 85 % used is yellow, 99 % red.
TEST(TopInteractive, MemoryBarsAreYellowFrom80AndRedFrom95Percent) {
  if (!Tmux::Available()) GTEST_SKIP() << "no tmux (scripts/setup.sh installs it)";
  TempDir dir;
  // H100: 81,559 MiB total (579 reserved). 85 % and 99 % of the total.
  WriteFile(dir / "memory.yaml",
            "name: memory\nseed: 1\ngpus:\n"
            "  - model: H100\n    workload:\n      - {type: training}\n"
            "    processes:\n      - {pid: 4194401, name: fits, memory_mib: 69325}\n"
            "  - model: H100\n    workload:\n      - {type: training}\n"
            "    processes:\n      - {pid: 4194402, name: full, memory_mib: 80743}\n");
  Tmux tmux(dir);
  StartTop(tmux, "--simulate " + (dir / "memory.yaml") + " --refresh 300ms", 80, 24);
  std::string screen;
  ASSERT_TRUE(WaitFor(
      [&] {
        screen = tmux.Screen();
        // 69,325 and 80,743 MiB of 79.6 GiB.
        return screen.find("67.7/80G") != std::string::npos &&
               screen.find("78.9/80G") != std::string::npos;
      },
      60))
      << screen;
  const std::string colours = ScreenWithEscapes(tmux);
  // The filling of each GPU's memory bar (the block's "mem  [" on its bars line).
  auto bar_colour = [&](int gpu) {
    const size_t block = colours.find("GPU " + std::to_string(gpu) + " NVIDIA");
    const size_t bar = colours.find("mem  [", block);
    if (block == std::string::npos || bar == std::string::npos) return std::string();
    return colours.substr(bar + 6, colours.find('|', bar) - bar - 6);
  };
  EXPECT_NE(bar_colour(0).find("33m"), std::string::npos) << bar_colour(0) << "\n" << colours;
  EXPECT_NE(bar_colour(1).find("31m"), std::string::npos) << bar_colour(1) << "\n" << colours;
  EXPECT_EQ(bar_colour(0).find("32m"), std::string::npos) << bar_colour(0);
  tmux.Run({"send-keys", "-t", "top", "q"});
}

// An agent whose GPU 1 fell off the bus (GpuFellOffBus fires): top --url marks the GPU's row
// and, once it is selected, lists the alert in its detail — at 80x24 and at 160x50.
TEST(TopInteractive, FiringAlertsMarkTheGpuAndFillItsDetail) {
  if (!Tmux::Available()) GTEST_SKIP() << "no tmux (scripts/setup.sh installs it)";
  TempDir dir;
  WriteFile(dir / "faults.yaml", kFaultHost);
  WriteFile(dir / "gpuwarden.yaml", "rules:\n  evaluation_interval: 15s\n");
  AgentProcess agent({"--simulate", dir / "faults.yaml", "--sim-clock", "stepped", "--config",
                      dir / "gpuwarden.yaml"});
  ASSERT_NE(agent.port(), 0);
  ASSERT_TRUE(WaitFor(
      [&] {
        agent.Advance(10);
        json j = json::parse(agent.Get("/api/v1/alerts").body, nullptr, false);
        if (!j.is_object()) return false;
        for (const json& a : j["data"]["alerts"])
          if (a["labels"].value("alertname", "") == "GpuFellOffBus" &&
              a.value("state", "") == "firing")
            return true;
        return false;
      },
      90))
      << agent.Log();
  const std::string url = "http://127.0.0.1:" + std::to_string(agent.port());
  for (auto [w, h] : {std::pair{80, 24}, std::pair{160, 50}}) {
    SCOPED_TRACE(std::to_string(w) + "x" + std::to_string(h));
    Tmux tmux(dir);
    StartTop(tmux, "--url " + url + " --refresh 300ms", w, h);
    std::string screen;
    ASSERT_TRUE(WaitFor(
        [&] {
          screen = tmux.Screen();
          return screen.find("GPU 1 ") != std::string::npos &&
                 screen.find("q quit") != std::string::npos;
        },
        60))
        << screen;
    const std::string row = LineWith(screen, "GPU 1 ");
    EXPECT_NE(row.find("!!GPU 1"), std::string::npos) << screen;
    tmux.Run({"send-keys", "-t", "top", "j"});
    ASSERT_TRUE(WaitFor(
        [&] {
          screen = tmux.Screen();
          return LineWith(screen, "GPU 1 ").find(">") != std::string::npos;
        },
        20))
        << screen;
    EXPECT_NE(screen.find("[FIRING critical] GpuFellOffBus"), std::string::npos) << screen;
    EXPECT_EQ(screen.find("no problems found"), std::string::npos) << screen;
    tmux.Run({"send-keys", "-t", "top", "q"});
    tmux.Run({"kill-server"});
  }
}

// 160x50: every GPU as a block with all its bars, the selected GPU's history, the process table
// with every demo process, the alerts' line and the keys.
TEST(TopInteractive, At160x50EveryPartHasItsPlace) {
  if (!Tmux::Available()) GTEST_SKIP() << "no tmux (scripts/setup.sh installs it)";
  TempDir dir;
  Tmux tmux(dir);
  StartTop(tmux, "--simulate demo --refresh 300ms", 160, 50);
  std::string screen;
  ASSERT_TRUE(WaitFor(
      [&] {
        screen = tmux.Screen();
        return screen.find("jupyter-kernel") != std::string::npos &&
               screen.find("GPU 7 NVIDIA") != std::string::npos;
      },
      60))
      << screen;
  std::vector<std::string> lines = ScreenLines(screen);
  ASSERT_EQ(lines.size(), 50u) << screen;
  for (const std::string& l : lines) EXPECT_LE(Columns(l), 160u) << l;
  EXPECT_NE(lines[0].find("driver "), std::string::npos) << lines[0];
  for (int i = 0; i < 8; ++i)
    EXPECT_NE(LineWith(screen, "GPU " + std::to_string(i) + " NVIDIA").size(), 0u) << i;
  EXPECT_NE(screen.find("temp ["), std::string::npos) << screen;
  // The selected GPU's history: two lines, each starting with its first sparkline's label.
  EXPECT_TRUE(std::regex_search(screen, std::regex("\n  util .+%.+mem  .+G"))) << screen;
  EXPECT_TRUE(std::regex_search(screen, std::regex("\n  pwr  .+W.+temp .+C"))) << screen;
  for (const char* name : {"python3 train.py", "tritonserver", "spark-rapids", "jupyter-kernel"})
    EXPECT_NE(screen.find(name), std::string::npos) << name << "\n" << screen;
  EXPECT_NE(screen.find("Alerts:"), std::string::npos) << screen;
  EXPECT_NE(lines.back().find("q quit"), std::string::npos) << lines.back();
  tmux.Run({"send-keys", "-t", "top", "q"});
}

}  // namespace
}  // namespace gw::testing
