// sim/training/run.h — the simulated training run behind gw-training-sim: a data-parallel job on
// one or more simulated GPUs whose progress (samples, tokens or steps) follows those GPUs' state,
// and which ends the way a real run ends (docs/jobs.md, "Training throughput").
//
// Model (time is the simulation's virtual time, so a stepped simulation gives the same numbers
// however fast it is stepped):
//   * every GPU processes `batch_per_gpu` samples per step; at full SM clock a step's compute
//     takes batch_per_gpu / samples_per_s_per_gpu seconds, of which `comm_share` is the gradient
//     all-reduce (with more than one GPU);
//   * a step ends when the slowest GPU ends it: compute time / min(clock ratio) over the GPUs
//     (power capping, thermal slowdown and the power brake all lower the clock);
//   * the all-reduce runs `nvlink_down_factor` times slower while any GPU of the job has an
//     NVLink down (the traffic falls back to PCIe);
//   * the counter grows by n_gpus * batch_per_gpu samples per step (or tokens: x
//     tokens_per_sample; or steps), continuously (fractional steps count);
//   * the run fails when a GPU falls off the bus or raises a fatal XID after the run started
//     (IsFatalXid), and completes once `stop_after_units` units are done or `stop_after_s`
//     virtual seconds have passed (0 = never).
// The start check (MemoryShortfall) says whether `memory_mib` per GPU fits each GPU's free
// memory: a run that does not fit fails at once with CUDA out of memory.
//
// Thread-safety: none; gw-training-sim serialises calls with its mutex.
#ifndef GPUWARDEN_SIM_TRAINING_RUN_H_
#define GPUWARDEN_SIM_TRAINING_RUN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/state_file.h"

namespace gw::sim {

enum class TrainingUnit { kSamples, kTokens, kSteps };
// "samples", "tokens", "steps"; false for anything else.
bool ParseTrainingUnit(const std::string& text, TrainingUnit* out);
const char* TrainingUnitName(TrainingUnit unit);

struct TrainingProfile {
  TrainingUnit unit = TrainingUnit::kSamples;
  double samples_per_s_per_gpu = 400;  // at full clock, NVLink up
  double batch_per_gpu = 32;
  double tokens_per_sample = 2048;
  double comm_share = 0.15;       // share of a full-speed step spent in the all-reduce
  double nvlink_down_factor = 4;  // all-reduce slowdown with an NVLink down
  double memory_mib = 30'720;     // device memory held on each GPU
  double stop_after_units = 0;    // 0 = no limit
  double stop_after_s = 0;        // virtual seconds; 0 = no limit
};

// XIDs that end a CUDA process on that GPU (13 graphics engine exception, 31 MMU fault, 43 GPU
// stopped processing, 45 preemptive cleanup, 48 double-bit ECC, 61/62 internal micro-controller
// halt, 64 row-remap failure, 68 video processor exception, 69 graphics engine class error, 79
// fallen off the bus, 94/95 contained/uncontained ECC, 119/120 GSP errors). 63 (row remapped)
// and 74 (NVLink error) are not fatal here.
bool IsFatalXid(std::uint64_t xid);
// What the CUDA runtime reports to the process for that XID (e.g. "uncorrectable ECC error
// encountered").
std::string CudaErrorForXid(std::uint64_t xid);

enum class TrainingStatus { kRunning, kCompleted, kFailed };

class TrainingRun {
 public:
  // `gpu_names`: the run's GPUs as it names them in messages (an index or a UUID), in order.
  TrainingRun(TrainingProfile profile, std::vector<std::string> gpu_names);

  // Advances to `virtual_ms` under `gpus`' states (one per GPU of the run, in the run's order;
  // a GpuState{} is a healthy GPU at full clock). The first call only sets the clock and
  // remembers each GPU's latest XID (older XIDs are history, not this run's). A clock that goes
  // backwards restarts the time base. Does nothing once the run ended.
  void AdvanceTo(std::uint64_t virtual_ms, const std::vector<GpuState>& gpus);

  // Forgets the time base (the next AdvanceTo only sets the clock, as the first did); the units
  // done stay. For a switch between the simulation's clock and the wall clock.
  void Rebase() { started_ = false; }

  TrainingStatus status() const { return status_; }
  // Why the run failed, as a PyTorch run reports it on stderr: "RuntimeError: CUDA error: <the
  // CUDA error> (Xid N on GPU <name>)" (empty unless kFailed).
  const std::string& failure() const { return failure_; }
  // Units done (fractional).
  double units() const { return units_; }
  // Units per second at the GPUs' last state.
  double rate() const { return rate_; }
  // The GPU (position in the run) that set the last step's pace, and its clock ratio.
  std::size_t slowest_gpu() const { return slowest_; }
  double slowest_clock_ratio() const { return slowest_ratio_; }
  double elapsed_s() const { return elapsed_ms_ / 1000.0; }

  // Units per second for these states (the formula above).
  double RateFor(const std::vector<GpuState>& gpus, std::size_t* slowest = nullptr,
                 double* slowest_ratio = nullptr) const;

  // The exposition in Prometheus text format 0.0.4.
  void Render(std::string* out) const;

 private:
  TrainingProfile profile_;
  std::vector<std::string> names_;
  bool started_ = false;
  std::uint64_t last_ms_ = 0;
  double elapsed_ms_ = 0;
  std::vector<std::uint64_t> start_xid_;
  TrainingStatus status_ = TrainingStatus::kRunning;
  std::string failure_;
  double units_ = 0;
  double rate_ = 0;
  std::size_t slowest_ = 0;
  double slowest_ratio_ = 1;
};

// The CUDA out-of-memory message when `memory_mib` does not fit one of `gpus` (free memory per
// GpuState::free_memory_bytes; a GPU with total 0 is unknown and fits), else nothing. `names` are
// the GPUs as the run knows them (index or UUID), parallel to `gpus`.
std::optional<std::string> MemoryShortfall(double memory_mib, const std::vector<GpuState>& gpus,
                                           const std::vector<std::string>& names);

}  // namespace gw::sim

#endif  // GPUWARDEN_SIM_TRAINING_RUN_H_
