// top/top.h — `gpuwarden top`: a terminal view of a GPU node, like nvtop, plus what nvtop lacks:
// throttle reasons in words, ECC and XID counts, the job and team on each GPU, firing alerts.
//
//   gpuwarden top                              this machine's GPUs (NVML), full screen
//   gpuwarden top --simulate demo              a simulated fleet (as serve/snapshot)
//   gpuwarden top --url http://node1:9966      a running agent: its snapshot, jobs and alerts
//   gpuwarden top --once [--width 120]         one plain frame on stdout, for scripts
//   gpuwarden top --once --simulate power-cap --sim-time 90s   a stepped fault scenario at 90 s
//
// Interactive keys: q quit, j/k or the arrows select a GPU, s cycles the GPUs' sort order, o the
// process table's sort column, / opens a text filter of the process table (Enter keeps it, Esc
// clears it; Esc outside the prompt clears it too), h help.
// The screen is redrawn in place on each refresh, key and terminal resize; q, Ctrl-C and SIGTERM
// leave the alternate screen and restore the terminal's modes. When stdout is not a terminal,
// top prints one plain frame as with --once.
//
// Module map: sources.h (local collector or remote agent) -> poller.h (its own thread, immutable
// frames, frame.h) -> render.h (text, one line at a time through line_writer.h) -> terminal.h (the
// screen). Collection never runs on the UI thread: the UI only waits on keys, signals and the
// poller's wake pipe.
//
// Errors: exit 2 for bad arguments or no NVML (local); an unreachable agent is shown on screen
// and retried, and with --once it exits 1 with the reason on stderr.
//
// Wiring: the caller (gpuwarden's command line) fills `Options` from its flags and configuration
// and passes a `LocalFactory` that builds this machine's collector (top/sources.h `Collection`);
// top itself knows neither the configuration file nor how NVML is found.
#ifndef GPUWARDEN_TOP_TOP_H_
#define GPUWARDEN_TOP_TOP_H_

#include <functional>
#include <memory>
#include <string>

#include "base/log.h"
#include "jobs/teams.h"
#include "top/sources.h"

namespace gw::top {

struct Options {
  // The flags of `gpuwarden top`.
  std::string url;       // "" = this machine
  bool once = false;     // print one plain frame and exit
  std::string refresh;   // duration between readings, default 1s
  std::string sim_time;  // with --simulate: a stepped clock, moved this far before the first frame
  int width = 0;         // --once: columns (default: the terminal's, else 120)
  // What a local view takes from the configuration.
  std::string simulate;        // the simulated scenario; "" = this machine's NVML
  bool stepped_clock = false;  // the simulator's clock is stepped (simulate.clock)
  jobs::TeamConfig teams;      // Slurm account / user -> team, for the job and team columns
};

// Builds the collector of a local view, not yet started. `stepped_clock`: the simulator's clock
// must be stepped (--sim-time asks for it even when the configuration does not). A viewer needs
// no sub-sampled memory peaks. `logger` outlives the collection.
using LocalFactory = std::function<std::unique_ptr<Collection>(bool stepped_clock, Logger* logger)>;

// Runs `gpuwarden top`; returns the exit code. `local` is called only without --url.
int RunTop(const Options& options, const LocalFactory& local, Logger* logger);

}  // namespace gw::top

#endif  // GPUWARDEN_TOP_TOP_H_
