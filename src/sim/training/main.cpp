// gw-training-sim: a simulated data-parallel training run for the simulated fleet (docs/jobs.md,
// "Training throughput"). It runs as a job on simulated GPUs (a Slurm job or a plain host
// process), counts the samples (or tokens, or steps) it trains on its /metrics as
// training_<unit>_total, at a rate the slowest of its GPUs sets, and ends the way a real run ends:
//
//   exit 0  after --total units or --duration seconds (virtual time);
//   exit 1  "CUDA out of memory" on stderr when --memory-mib does not fit a GPU's free memory;
//   exit 1  "CUDA error: ..." on stderr when one of its GPUs falls off the bus or raises a fatal
//           XID while it runs;
//   SIGINT/SIGTERM end it by that signal (as an unhandled one ends a real run).
//
//   GPUWARDEN_SIM_STATE_DIR=/tmp/gw-state CUDA_VISIBLE_DEVICES=0,1 gw-training-sim --total 1e6
//
// Before it starts it re-executes itself declaring GPUWARDEN_SIM_WORKLOAD=training,
// GPUWARDEN_SIM_MEMORY_MIB=<--memory-mib> (libnvml-sim then lists it on its GPUs holding that
// memory; sim/host_processes.h) and GPUWARDEN_METRICS_PORT=<its /metrics port> (the port it
// picked, carried across the re-execution; gpuwarden does not read it — a job's counter is bound
// to the job by scrape.targets[].job_id, docs/jobs.md). Its GPUs' state comes from the
// simulator's state files (sim/state_file.h); without them it runs on the wall clock with healthy
// GPUs.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/log.h"
#include "http/server.h"
#include "sim/metrics_server.h"
#include "sim/state_file.h"
#include "sim/training/run.h"

namespace {

using gw::sim::GpuState;
using gw::sim::StateReader;

struct Args {
  std::string listen;             // "" = 127.0.0.1:$GPUWARDEN_METRICS_PORT, else a free port
  std::vector<std::string> gpus;  // "" = CUDA_VISIBLE_DEVICES, else SLURM_JOB_GPUS
  std::string state_dir;
  gw::sim::TrainingProfile profile;
};

void Usage() {
  std::fprintf(stderr,
               "usage: gw-training-sim [--listen HOST:PORT] [--gpus LIST] [--state-dir DIR]\n"
               "                       [--unit samples|tokens|steps] [--total UNITS]\n"
               "                       [--duration SECONDS] [--rate SAMPLES_PER_S_PER_GPU]\n"
               "                       [--batch SAMPLES_PER_GPU] [--tokens-per-sample N]\n"
               "                       [--comm-share 0..0.9] [--memory-mib MIB]\n");
}

bool ParseNumber(const char* text, double* out, bool zero_ok = false) {
  char* end = nullptr;
  errno = 0;
  *out = std::strtod(text, &end);
  return end != text && *end == '\0' && errno == 0 && std::isfinite(*out) &&
         (*out > 0 || (zero_ok && *out == 0));
}

std::vector<std::string> SplitList(const std::string& list) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    std::string item = list.substr(start, comma - start);
    while (!item.empty() && item.front() == ' ') item.erase(0, 1);
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (!item.empty()) out.push_back(item);
    start = comma + 1;
  }
  return out;
}

bool ParseArgs(int argc, char** argv, Args* args) {
  gw::sim::TrainingProfile& p = args->profile;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) return false;
    const char* value = argv[++i];
    double number = 0;
    if (flag == "--listen") {
      args->listen = value;
    } else if (flag == "--gpus") {
      args->gpus = SplitList(value);
      if (args->gpus.empty()) return false;
    } else if (flag == "--state-dir") {
      args->state_dir = value;
    } else if (flag == "--unit") {
      if (!gw::sim::ParseTrainingUnit(value, &p.unit)) return false;
    } else if (flag == "--total" && ParseNumber(value, &number, true)) {
      p.stop_after_units = number;
    } else if (flag == "--duration" && ParseNumber(value, &number, true)) {
      p.stop_after_s = number;
    } else if (flag == "--rate" && ParseNumber(value, &number)) {
      p.samples_per_s_per_gpu = number;
    } else if (flag == "--batch" && ParseNumber(value, &number)) {
      p.batch_per_gpu = number;
    } else if (flag == "--tokens-per-sample" && ParseNumber(value, &number)) {
      p.tokens_per_sample = number;
    } else if (flag == "--comm-share" && ParseNumber(value, &number, true) && number <= 0.9) {
      p.comm_share = number;
    } else if (flag == "--memory-mib" && ParseNumber(value, &number, true) && number < 1 << 24) {
      p.memory_mib = std::floor(number);
    } else {
      return false;
    }
  }
  return true;
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// A free loopback port (bound and released), 0 when none could be had.
int PickPort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

// The port in "HOST:PORT" (0 when absent or not a number).
int PortOf(const std::string& listen) {
  const std::size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return 0;
  const std::string text = listen.substr(colon + 1);
  if (text.empty() || text.size() > 5 || text.find_first_not_of("0123456789") != std::string::npos)
    return 0;
  return std::stoi(text);
}

// The run and where its clock and GPU states come from.
class Runner {
 public:
  explicit Runner(const Args& args)
      : args_(args),
        run_(args.profile, args.gpus),
        readers_(args.gpus.size()),
        start_(std::chrono::steady_clock::now()) {
    for (std::size_t i = 0; i < readers_.size(); ++i) readers_[i] = std::make_unique<StateReader>();
  }

  // States of the run's GPUs now; false when the simulation is not (or no longer) there.
  bool ReadStates(std::vector<GpuState>* states, std::uint64_t* virtual_ms) {
    states->assign(readers_.size(), GpuState{});
    bool any_alive = false;
    *virtual_ms = 0;
    for (std::size_t i = 0; i < readers_.size(); ++i) {
      StateReader& r = *readers_[i];
      if (!r.is_open() && !args_.state_dir.empty())
        gw::sim::OpenGpuState(args_.state_dir, args_.gpus[i], &r);
      GpuState s;
      if (!r.is_open() || !r.Read(&s)) continue;
      (*states)[i] = s;
      if (s.alive) any_alive = true;
      if (s.virtual_ms > *virtual_ms) *virtual_ms = s.virtual_ms;
    }
    return any_alive;
  }

  // Trains up to now; the run's status after.
  gw::sim::TrainingStatus CatchUp() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<GpuState> states;
    std::uint64_t virtual_ms = 0;
    const bool simulated = ReadStates(&states, &virtual_ms);
    if (simulated != simulated_) {
      simulated_ = simulated;
      run_.Rebase();
      log_.Info(simulated ? "following the simulated GPUs through " + args_.state_dir
                          : "no simulation: training on the wall clock");
    }
    if (!simulated) {
      virtual_ms = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                  std::chrono::steady_clock::now() - start_)
                                                  .count());
      states.assign(readers_.size(), GpuState{});
    }
    run_.AdvanceTo(virtual_ms, states);
    return run_.status();
  }

  // Catches up first: a scrape sees the run as of the GPUs' state at that moment (with a stepped
  // clock, the simulated time of the scrape).
  void Render(std::string* out) {
    CatchUp();
    std::lock_guard<std::mutex> lock(mu_);
    run_.Render(out);
  }

  std::string Summary() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::to_string(static_cast<long long>(run_.units())) + " " +
           gw::sim::TrainingUnitName(args_.profile.unit) + " in " +
           std::to_string(static_cast<long long>(run_.elapsed_s())) + " s";
  }
  std::string Failure() {
    std::lock_guard<std::mutex> lock(mu_);
    return run_.failure();
  }

 private:
  Args args_;
  gw::Logger log_;
  std::mutex mu_;
  gw::sim::TrainingRun run_;
  std::vector<std::unique_ptr<StateReader>> readers_;
  bool simulated_ = false;
  std::chrono::steady_clock::time_point start_;
};

// Before declaring itself: does the run's memory fit its GPUs? (Declared, the simulator would
// count the run's own memory as used.)
bool MemoryFits(const Args& args) {
  std::vector<GpuState> states;
  std::vector<std::string> names;
  for (const std::string& gpu : args.gpus) {
    StateReader reader;
    GpuState s;
    if (!gw::sim::OpenGpuState(args.state_dir, gpu, &reader) || !reader.Read(&s) || !s.alive)
      continue;
    states.push_back(s);
    names.push_back(gpu);
  }
  if (auto oom = gw::sim::MemoryShortfall(args.profile.memory_mib, states, names)) {
    std::fprintf(stderr, "gw-training-sim: %s\n", oom->c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!ParseArgs(argc, argv, &args)) {
    Usage();
    return 2;
  }
  if (args.gpus.empty()) {
    const std::string visible = Env("CUDA_VISIBLE_DEVICES");
    args.gpus = SplitList(visible.empty() ? Env("SLURM_JOB_GPUS") : visible);
  }
  if (args.gpus.empty()) args.gpus = {"0"};
  if (args.state_dir.empty()) args.state_dir = Env(gw::sim::kStateDirEnv);

  // The simulator and gpuwarden find the run by its environment at exec time: declare it.
  const std::string memory = std::to_string(static_cast<long long>(args.profile.memory_mib));
  const int listen_port = PortOf(args.listen);
  const std::string metrics_port = Env("GPUWARDEN_METRICS_PORT");
  if (Env("GPUWARDEN_SIM_WORKLOAD") != "training" || Env("GPUWARDEN_SIM_MEMORY_MIB") != memory ||
      metrics_port.empty() || (listen_port != 0 && std::to_string(listen_port) != metrics_port)) {
    if (!MemoryFits(args)) return 1;
    const int port = listen_port != 0 ? listen_port : PickPort();
    if (port == 0) {
      std::fprintf(stderr, "gw-training-sim: no free loopback port for /metrics\n");
      return 1;
    }
    setenv("GPUWARDEN_SIM_WORKLOAD", "training", 1);
    setenv("GPUWARDEN_SIM_MEMORY_MIB", memory.c_str(), 1);
    setenv("GPUWARDEN_METRICS_PORT", std::to_string(port).c_str(), 1);
    execv("/proc/self/exe", argv);
    std::fprintf(stderr, "gw-training-sim: cannot re-execute itself: %s\n", std::strerror(errno));
    return 1;
  }
  if (args.listen.empty()) args.listen = "127.0.0.1:" + metrics_port;

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGUSR1);  // the run ended
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  gw::Logger log;
  Runner runner(args);
  auto server = gw::sim::StartMetricsServer("gw-training-sim", args.listen, &log,
                                            [&runner](std::string* out) { runner.Render(out); });
  if (!server) return 1;
  std::string gpu_list;
  for (const std::string& g : args.gpus) gpu_list += (gpu_list.empty() ? "" : ",") + g;
  log.Info("gw-training-sim training on GPUs " + gpu_list + " (" +
           gw::sim::TrainingUnitName(args.profile.unit) + "), /metrics on " + args.listen +
           ", state dir '" + args.state_dir + "'");

  std::atomic<bool> stopping{false};
  std::atomic<gw::sim::TrainingStatus> ended{gw::sim::TrainingStatus::kRunning};
  std::thread ticker([&] {
    while (!stopping) {
      const gw::sim::TrainingStatus s = runner.CatchUp();
      if (s != gw::sim::TrainingStatus::kRunning) {
        ended = s;
        kill(getpid(), SIGUSR1);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  stopping = true;
  ticker.join();
  server->Stop();
  if (signal_number != SIGUSR1) {  // ended by a signal, as an unhandled one ends a real run
    std::fprintf(stderr, "gw-training-sim: stopped by signal %d after %s\n", signal_number,
                 runner.Summary().c_str());
    signal(signal_number, SIG_DFL);
    pthread_sigmask(SIG_UNBLOCK, &signals, nullptr);
    raise(signal_number);
    return 128 + signal_number;
  }
  if (ended == gw::sim::TrainingStatus::kFailed) {
    std::fprintf(stderr, "gw-training-sim: %s\n", runner.Failure().c_str());
    return 1;
  }
  std::printf("gw-training-sim: training complete: %s\n", runner.Summary().c_str());
  return 0;
}
