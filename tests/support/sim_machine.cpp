// Linked into every test program: each test process is its own simulated machine.
//
// libnvml-sim.so's host processes (src/sim/host_processes.h) are real processes found by a scan
// of /proc, so a simulator with `host_processes: true` would see the workload processes of every
// other test running at the same time (ctest -j, or two checkouts' suites side by side) and load
// its GPUs with them. Setting GPUWARDEN_SIM_MACHINE to a name unique to this process, before
// main, gives every simulator this process loads, every agent it starts and every process or
// Slurm job it launches (they inherit the environment) the same machine, and no other. A value
// already set is kept (a test that wants two machines sets its own).
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace {

const bool kMachineSet = [] {
  const std::string name = "test-" + std::to_string(::getpid());
  ::setenv("GPUWARDEN_SIM_MACHINE", name.c_str(), 0);
  return true;
}();

}  // namespace
