// top/frame.h — what `gpuwarden top` shows, as immutable frames built off the UI thread.
//
// A `Reading` is what a source (top/sources.h) got in one poll: the snapshot, who holds each GPU,
// the alerts. `FrameBuilder` turns readings into `Frame`s: it decodes everything a person reads
// (throttle reasons, ECC/XID counts, health problems, job/team, firing alerts per GPU, the process
// table's rows) and keeps each GPU's utilization, memory, power and temperature history for the
// sparklines, so that drawing a frame (top/render.h) only formats numbers and
// copies text. A Frame never changes once built; the UI holds a shared_ptr<const Frame>.
//
// Threading: a FrameBuilder belongs to one thread (the poller's). Frames may be read from any.
#ifndef GPUWARDEN_TOP_FRAME_H_
#define GPUWARDEN_TOP_FRAME_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "collect/health.h"
#include "collect/snapshot.h"

namespace gw::top {

// Samples kept per GPU for the sparkline: at the default 1 s refresh, the last 4 minutes.
inline constexpr size_t kHistoryLength = 240;

// Who holds one GPU now (several jobs on one GPU are joined with ",").
struct GpuHolder {
  std::string job;   // job id, "" if none known
  std::string team;  // "" if unknown
  std::string user;  // "" if unknown
};

// One alert as the agent's /api/v1/alerts lists it.
struct AlertView {
  std::string name;      // alertname
  std::string severity;  // "critical", "warning", "info" or ""
  std::string state;     // "firing" or "pending"
  std::string gpu;       // the gpu label, "" if the alert is not about one GPU
  std::string summary;   // the summary annotation, "" if none
};

// One poll of a source.
// The scheduler's queue as an agent reports it (GET /api/gw/v1/queue): remote sources only.
struct QueueSummary {
  bool shown = false;  // the agent knows a queue (it polls Slurm and a poll has succeeded)
  bool up = true;      // its last poll succeeded; else these are the last known figures
  std::size_t jobs = 0;
  double longest_wait_s = 0;
};

// One application target with a cost per output, as the agent's GET /api/gw/v1/services reports
// it (remote sources only). Figures are over the agent's window (the last hour).
struct ServiceView {
  std::string target;
  std::string unit;      // what one output is ("request", "token"); "" = no outputs configured
  std::string currency;  // governance.prices.currency
  bool has_gpus = false;
  bool outputs_known = false;               // the agent has counted the target's outputs
  double cost_per_1k = collect::kAbsent;    // NaN: no outputs in the window (or no GPUs)
  double outputs_per_s = collect::kAbsent;  // window outputs / window seconds
  double window_s = 0;
};

struct Reading {
  std::shared_ptr<const collect::Snapshot> snapshot;  // never null
  // The agent's health verdict per GPU index when the source has one (remote); else computed
  // from the snapshot (collect/health.h).
  std::map<unsigned, std::vector<collect::HealthProblem>> health;
  bool has_health = false;
  std::map<unsigned, GpuHolder> holders;  // by GPU index
  std::vector<AlertView> alerts;          // firing and pending
  // Why alerts (or jobs) are not shown, e.g. "alerts come from an agent: use --url"; "" if shown.
  std::string alerts_note;
  std::string jobs_note;
  QueueSummary queue;
  std::vector<ServiceView> services;  // empty: the agent has none (or no services API)
  // The job of each GPU process by pid, as a local view attributes it from /proc (a remote
  // snapshot carries its own per-process "job_id").
  std::map<unsigned, std::string> process_jobs;
};

// Busy but hollow: utilization at least kHollowUtilization while SM active stays under
// kHollowSmActive — kernels run all the time but few SMs do the work (launch-bound, tiny
// batches, a starved input pipeline). The console's GPU page warns at the same values, and
// they are the diagnosis's busy-but-hollow defaults (diagnose::Thresholds).
inline constexpr double kHollowUtilization = 0.8;
inline constexpr double kHollowSmActive = 0.25;

// One MIG instance of a GPU, as top shows it under its GPU.
struct MigView {
  unsigned gpu_instance_id = 0;
  std::string profile, uuid;
  double memory_used_bytes = collect::kAbsent, memory_total_bytes = collect::kAbsent;
  double sm_active = collect::kAbsent;  // the instance's own (GPM), ratio
  size_t processes = 0;
};

// One GPU process as the process table shows it. Numbers are NaN where unknown, text "".
struct ProcessView {
  unsigned gpu = 0;                                    // GPU index
  unsigned gpu_instance_id = collect::kNoMigInstance;  // its MIG instance, if any
  unsigned pid = 0;
  std::string name, user, command, job;
  double memory_bytes = collect::kAbsent;       // device memory
  double sm_ratio = collect::kAbsent;           // its share of the GPU's SMs (0..1)
  double cpu_ratio = collect::kAbsent;          // host CPU cores used (1.0 = one core)
  double host_memory_bytes = collect::kAbsent;  // resident set size
};

struct GpuView {
  unsigned index = 0;
  std::string name, uuid;
  bool lost = false;
  // Readings; NaN (collect::kAbsent) when absent.
  double util = collect::kAbsent;  // ratio 0..1
  double memory_used_bytes = collect::kAbsent, memory_total_bytes = collect::kAbsent;
  double power_w = collect::kAbsent, power_limit_w = collect::kAbsent;
  double temperature_c = collect::kAbsent;
  double slowdown_c = collect::kAbsent;  // this GPU's own slowdown threshold
  double sm_clock_mhz = collect::kAbsent;
  double pstate = collect::kAbsent;
  double ecc_corrected = collect::kAbsent;    // volatile (since the last reset)
  double ecc_uncorrected = collect::kAbsent;  // volatile
  uint64_t xid_events = 0;
  std::string xids;      // "48x1 79x1", "" if none
  std::string throttle;  // "power cap, HW slowdown", "idle", or "" (running free)
  bool throttled = false;
  size_t processes = 0;
  // Profiling (GPM), ratios; NaN where the GPU has none (older GPUs, drivers without GPM).
  double sm_active = collect::kAbsent, sm_occupancy = collect::kAbsent;
  double tensor_active = collect::kAbsent, dram_active = collect::kAbsent;
  bool hollow = false;  // busy but hollow (kHollowUtilization, kHollowSmActive)
  // MIG mode now and after the next reset (1 on, 0 off, NaN unknown), and its instances.
  double mig_current = collect::kAbsent, mig_pending = collect::kAbsent;
  std::vector<MigView> mig;
  // NVLink: links, how many are up, the down ones ("3, 7"), errors over all links (replay,
  // recovery, CRC), throughput over all links in bytes per second. nvlinks 0: no NVLink.
  size_t nvlinks = 0, nvlinks_up = 0;
  std::string nvlinks_down;
  double nvlink_errors = collect::kAbsent;
  double nvlink_tx_bps = collect::kAbsent, nvlink_rx_bps = collect::kAbsent;
  GpuHolder holder;
  std::vector<collect::HealthProblem> problems;  // most severe first
  bool has_problem = false;
  collect::Severity worst = collect::Severity::kInfo;  // of `problems` when has_problem
  // The frame's firing alerts about this GPU (their gpu label is its index): positions in
  // Frame::alerts, and the most severe of them ("critical" > "warning" > anything else).
  std::vector<size_t> firing_alerts;
  collect::Severity alert_worst = collect::Severity::kInfo;
  // Histories, oldest first; the last `history_count` entries of each are valid; -1 = no
  // reading. `history` is the utilization (ratio); memory, power and temperature are ratios of
  // their limits (total memory, enforced power limit, slowdown threshold).
  std::array<float, kHistoryLength> history{};
  std::array<float, kHistoryLength> memory_history{};
  std::array<float, kHistoryLength> power_history{};
  std::array<float, kHistoryLength> temperature_history{};
  size_t history_count = 0;
};

struct Frame {
  std::string source;  // "local NVML", "simulated 'demo'", "http://node1:9966"
  bool nvml_up = true;
  std::string nvml_error;
  std::string driver_version;
  double taken_unix_seconds = 0;
  uint64_t generation = 0;
  std::vector<GpuView> gpus;  // in the snapshot's order (by index)
  // Every GPU's processes (a MIG instance's included), GPU by GPU in the snapshot's order.
  std::vector<ProcessView> processes;
  std::vector<AlertView> alerts;
  std::string alerts_note, jobs_note;
  QueueSummary queue;
  std::vector<ServiceView> services;
  // The last poll failed (an unreachable agent): the frame shows the previous data and this.
  std::string error;
};

class FrameBuilder {
 public:
  explicit FrameBuilder(std::string source) : source_(std::move(source)) {}

  // A frame from a fresh reading; appends each GPU's readings to its history (by UUID).
  std::shared_ptr<const Frame> Build(const Reading& reading);
  // The previous frame with `error` set (the data is kept, the history does not move).
  std::shared_ptr<const Frame> Failed(const std::string& error);

 private:
  struct Ring {
    std::array<float, kHistoryLength> util{}, memory{}, power{}, temperature{};
    size_t next = 0, count = 0;
  };
  std::string source_;
  std::map<std::string, Ring> history_;  // by GPU UUID
  std::shared_ptr<const Frame> last_;
};

// The GPU view of one snapshot entry (no history, no holder); exposed for tests.
GpuView ViewOf(const collect::GpuSnapshot& gpu);
// The process rows of one GPU (its MIG instances' included, each pid once); `jobs` names a
// process's job where its details do not.
void AppendProcessViews(const collect::GpuSnapshot& gpu,
                        const std::map<unsigned, std::string>& jobs, std::vector<ProcessView>* out);

}  // namespace gw::top

#endif  // GPUWARDEN_TOP_FRAME_H_
