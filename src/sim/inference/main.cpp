// gw-inference-sim: a simulated inference service for the simulated fleet (docs/scenarios.md,
// "The simulated inference service"). It serves /metrics on a loopback port and generates its own
// request stream, whose latency and success follow the simulated GPU it runs on.
//
//   GPUWARDEN_SIM_STATE_DIR=/tmp/gw-state CUDA_VISIBLE_DEVICES=0 gw-inference-sim --listen :8000
//
// It declares itself a host process (GPUWARDEN_SIM_WORKLOAD=inference, re-executing itself with
// it when the variable is missing), so libnvml-sim lists it on its GPU and runs that GPU with the
// inference workload. It learns its GPU's state (clocks, memory, virtual time) from the
// simulator's state file (sim/state_file.h); without one it runs on the wall clock with a
// healthy GPU.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/log.h"
#include "http/server.h"
#include "sim/inference/service.h"
#include "sim/metrics_server.h"
#include "sim/state_file.h"

namespace {

using gw::sim::GpuState;
using gw::sim::StateReader;

struct Args {
  std::string listen = "127.0.0.1:0";
  std::string gpu;  // an index or a UUID (prefix); "" = CUDA_VISIBLE_DEVICES' first
  std::string state_dir;
  gw::sim::ServiceProfile profile;
};

void Usage() {
  std::fprintf(stderr,
               "usage: gw-inference-sim [--listen HOST:PORT] [--gpu INDEX|UUID] [--state-dir DIR]\n"
               "                        [--rate REQ_PER_S] [--service-ms MS] [--seed N]\n");
}

bool ParseNumber(const char* text, double* out) {
  char* end = nullptr;
  *out = std::strtod(text, &end);
  return end != text && *end == '\0' && *out > 0;
}

bool ParseArgs(int argc, char** argv, Args* args) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) return false;
    const char* value = argv[++i];
    double number = 0;
    if (flag == "--listen") {
      args->listen = value;
    } else if (flag == "--gpu") {
      args->gpu = value;
    } else if (flag == "--state-dir") {
      args->state_dir = value;
    } else if (flag == "--rate" && ParseNumber(value, &number)) {
      args->profile.requests_per_s = number;
    } else if (flag == "--service-ms" && ParseNumber(value, &number)) {
      args->profile.service_ms = number;
    } else if (flag == "--seed" && ParseNumber(value, &number)) {
      args->profile.seed = static_cast<std::uint64_t>(number);
    } else {
      return false;
    }
  }
  return true;
}

// The service and where its clock and GPU state come from.
class Runner {
 public:
  Runner(const Args& args) : args_(args), service_(args.profile) {
    start_ = std::chrono::steady_clock::now();
  }

  // Serves every request due by now. With the simulator's state: its virtual time and GPU;
  // otherwise the wall clock and a GPU at full speed.
  void CatchUp() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!reader_.is_open() && !args_.state_dir.empty()) {
      if (gw::sim::OpenGpuState(args_.state_dir, args_.gpu, &reader_))
        log_.Info("following the simulated GPU " + args_.gpu + " through " + args_.state_dir);
    }
    GpuState gpu;
    if (reader_.is_open() && reader_.Read(&gpu) && gpu.alive) {
      if (!simulated_) service_ = gw::sim::InferenceService(args_.profile);  // new time base
      simulated_ = true;
      service_.AdvanceTo(gpu.virtual_ms, gpu);
      return;
    }
    if (simulated_) {  // the simulation ended: back to the wall clock
      simulated_ = false;
      reader_.Close();
      service_ = gw::sim::InferenceService(args_.profile);
    }
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - start_)
                        .count();
    service_.AdvanceTo(static_cast<std::uint64_t>(ms), GpuState{});
  }

  void Render(std::string* out) {
    CatchUp();
    std::lock_guard<std::mutex> lock(mu_);
    service_.Render(out);
  }

 private:
  Args args_;
  gw::Logger log_;
  std::mutex mu_;
  gw::sim::InferenceService service_;
  StateReader reader_;
  bool simulated_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!ParseArgs(argc, argv, &args)) {
    Usage();
    return 2;
  }
  // The simulator finds host processes by their environment at exec time.
  const char* workload = std::getenv("GPUWARDEN_SIM_WORKLOAD");
  if (workload == nullptr || *workload == '\0') {
    setenv("GPUWARDEN_SIM_WORKLOAD", "inference", 1);
    execv("/proc/self/exe", argv);
    std::fprintf(stderr, "gw-inference-sim: cannot re-execute itself: %s\n", std::strerror(errno));
    return 1;
  }
  if (args.gpu.empty()) {
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    std::string list = visible ? visible : "";
    args.gpu = list.substr(0, list.find(','));
  }
  if (args.state_dir.empty()) {
    const char* dir = std::getenv(gw::sim::kStateDirEnv);
    args.state_dir = dir ? dir : "";
  }

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  gw::Logger log;
  Runner runner(args);
  auto server = gw::sim::StartMetricsServer("gw-inference-sim", args.listen, &log,
                                            [&runner](std::string* out) { runner.Render(out); });
  if (!server) return 1;
  log.Info("gw-inference-sim serving /metrics on " + args.listen + " (port " +
           std::to_string(server->port()) + "), GPU '" + args.gpu + "', state dir '" +
           args.state_dir + "'");
  std::atomic<bool> stopping{false};
  std::thread ticker([&] {
    while (!stopping) {
      runner.CatchUp();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  stopping = true;
  ticker.join();
  server->Stop();
  return 0;
}
