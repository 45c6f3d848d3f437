// collect/collector.h — the sampling loop.
//
// One worker thread owns every NVML call that reads a GPU. It runs three schedules:
//   fast  (default 1 s):  utilization, memory, temperatures, power, energy, clocks, clock-event
//                         reasons, pstate, fan, and the peaks of NVML's sample buffers;
//                         T.Limit temperature margins, GPM profiling counters (per GPU and per
//                         MIG instance), MIG instances' memory;
//   slow  (default 10 s): thresholds, limits, ECC, retired pages, remapped rows, PCIe, processes,
//                         MIG mode and instances (also right after a MigConfigChange event),
//                         NVLink links, states and counters;
//   peak  (default 250 ms, 0 = off): memory used, sub-sampled so a transient spike between two
//                         fast cycles still shows in gpu_memory_used_peak_bytes.
// XID and ECC events arrive through NVML's event API on a second thread that only waits for
// events (in stepped mode the worker drains them itself after each step, so tests are exact).
//
// A GPU that falls off the bus (GPU_IS_LOST) is reported with gpu_up 0 while the others keep
// being collected. A call that does not return within `call_timeout` trips the watchdog: that
// call on that GPU is marked hung (and skipped from then on), the stuck worker is abandoned, and
// a fresh worker carries on. If the stuck call ever returns, the abandoned worker exits at once
// and the call is tried again.
//
// Readers call `Latest()` from any thread; it never blocks on NVML.
#ifndef GPUWARDEN_COLLECT_COLLECTOR_H_
#define GPUWARDEN_COLLECT_COLLECTOR_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "collect/snapshot.h"
#include "nvml/library.h"

namespace gw::collect {

struct CollectorOptions {
  double fast_interval_s = 1.0;
  double slow_interval_s = 10.0;
  double memory_peak_interval_s = 0.25;  // 0 disables the sub-sampler
  double call_timeout_s = 5.0;           // watchdog: a call slower than this is "hung"
  bool per_process_metrics = false;      // per-pid series (cardinality: opt-in)
  // The gpu_*_peak_window_* families on /metrics: the per-cycle peaks' maximum over this
  // trailing window (collect/peak_window.h). Set it to the longest scrape interval of any
  // scraper; 0 leaves the families out.
  double peak_window_s = 15.0;
  // Each GPU process's name, user, command line, host CPU and memory (collect/process_details.h),
  // read from `proc_root` at most every `process_details_interval_s`. false: pid and GPU figures
  // only.
  bool process_details = true;
  double process_details_interval_s = 2.0;
  std::string proc_root = "/proc";
  // Per-link NVLink error counters and rates on /metrics and in the store (18 links × 5 series
  // per GPU on an HGX board: opt-in). gpu_nvlink_link_up is always there.
  bool nvlink_link_metrics = false;
  // GPM profiling counters (SM activity, tensor pipes, …) where nvmlGpmQueryDeviceSupport says
  // the GPU has them; false never samples GPM.
  bool gpm = true;
  // Stepped mode (simulator only): time moves only through Collector::Advance.
  bool stepped = false;
  // Stepped mode: the Unix time of virtual t = 0 in snapshots; 0 = the wall clock at discovery.
  double sim_start_unix = 0;
  // The wall clock that stamps snapshots (taken_unix_seconds); must outlive the collector.
  const Clock* clock = &SystemClock();
};

class Collector {
 public:
  // `library` may be null (no NVML on this machine): the collector then publishes only its own
  // state, with stats.nvml_up = false and stats.nvml_error saying why. `library` must outlive
  // the collector. `logger` must outlive it too.
  Collector(nvml::Library* library, std::string nvml_error, CollectorOptions options,
            Logger* logger);
  ~Collector();  // Stop()s
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  // Called on the worker thread after every publish (e.g. Recorder::Offer). It must return at
  // once. Set before Start().
  using PublishListener = std::function<void(std::shared_ptr<const Snapshot>)>;
  void OnPublish(PublishListener listener);

  // Discovers the GPUs and starts the threads. The first snapshot (one slow and one fast cycle)
  // is published before the first sleep; WaitForFirstCycle blocks until then.
  void Start();

  // What Stop() left behind: threads still inside an NVML call when it gave up waiting.
  struct StopOutcome {
    std::vector<std::string>
        abandoned;  // e.g. "the NVML worker (GPU 1, nvmlDeviceGetPowerUsage, …)"
    bool clean() const { return abandoned.empty(); }
  };
  // Stops collecting within `timeout_s` whatever NVML does: a thread that may be inside NVML is
  // never joined; one that has not finished by then is left behind (it unwinds without touching
  // anything if its call ever returns), the library is then neither shut down nor unloaded, and
  // the outcome names it. After Stop no listener call is in progress or will start, and
  // Advance() callers return. Later calls return the first call's outcome.
  StopOutcome Stop(double timeout_s = 2.0);
  bool WaitForFirstCycle(double timeout_s);

  // The latest published snapshot; never null after construction (an empty one at first).
  std::shared_ptr<const Snapshot> Latest() const;

  // Stepped mode only: advances the simulator's clock by `seconds`, running every fast, slow and
  // peak cycle that falls due on the way, then publishes. Blocks until done (or until
  // `timeout_s` of real time passes, e.g. while a hung call is being detected).
  Status Advance(double seconds, double timeout_s = 60);

  const CollectorOptions& options() const { return options_; }

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;  // shared with worker threads that may outlive a hung call
  CollectorOptions options_;
};

}  // namespace gw::collect

#endif  // GPUWARDEN_COLLECT_COLLECTOR_H_
