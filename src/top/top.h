// top/top.h — `gpuwarden top`: a terminal view of a GPU node, like nvtop, plus what nvtop lacks:
// throttle reasons in words, ECC and XID counts, the job and team on each GPU, firing alerts.
//
//   gpuwarden top                              this machine's GPUs (NVML), full screen
//   gpuwarden top --simulate demo              a simulated fleet (as serve/snapshot)
//   gpuwarden top --url http://node1:9966      a running agent: its snapshot, jobs and alerts
//   gpuwarden top --once [--width 120]         one plain frame on stdout, for scripts
//   gpuwarden top --once --simulate power-cap --sim-time 90s   a stepped fault scenario at 90 s
//
// Interactive keys: q quit, j/k or the arrows select a GPU, s cycles the sort order, h help.
// The screen is redrawn in place on each refresh, key and terminal resize; q, Ctrl-C and SIGTERM
// leave the alternate screen and restore the terminal's modes. When stdout is not a terminal,
// top prints one plain frame as with --once.
//
// Module map: sources.h (local collector or remote agent) -> poller.h (its own thread, immutable
// frames, frame.h) -> render.h (text) -> terminal.h (the screen). Collection never runs on the UI
// thread: the UI only waits on keys, signals and the poller's wake pipe.
//
// Errors: exit 2 for bad arguments or no NVML (local); an unreachable agent is shown on screen
// and retried, and with --once it exits 1 with the reason on stderr.
#ifndef GPUWARDEN_TOP_TOP_H_
#define GPUWARDEN_TOP_TOP_H_

#include <string>

#include "base/log.h"
#include "config/config.h"

namespace gw::top {

struct TopArgs {
  std::string url;       // "" = this machine
  bool once = false;     // print one plain frame and exit
  std::string refresh;   // duration between readings, default 1s
  std::string sim_time;  // with --simulate: a stepped clock, moved this far before the first frame
  int width = 0;         // --once: columns (default: the terminal's, else 120)
};

int RunTop(const config::Config& config, const TopArgs& args, Logger* logger);

}  // namespace gw::top

#endif  // GPUWARDEN_TOP_TOP_H_
