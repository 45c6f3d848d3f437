#include "sim/training/run.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace gw::sim {

namespace {

// Shortest text that reads back as `v`.
void AppendNumber(std::string* out, double v) {
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
  out->append(buffer, ec == std::errc() ? end : buffer);
}

void AppendMetric(std::string* out, const std::string& name, const char* type, const char* help,
                  double value) {
  out->append("# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name + " ");
  AppendNumber(out, value);
  out->append("\n");
}

}  // namespace

bool ParseTrainingUnit(const std::string& text, TrainingUnit* out) {
  if (text == "samples")
    *out = TrainingUnit::kSamples;
  else if (text == "tokens")
    *out = TrainingUnit::kTokens;
  else if (text == "steps")
    *out = TrainingUnit::kSteps;
  else
    return false;
  return true;
}

const char* TrainingUnitName(TrainingUnit unit) {
  switch (unit) {
    case TrainingUnit::kTokens:
      return "tokens";
    case TrainingUnit::kSteps:
      return "steps";
    case TrainingUnit::kSamples:
      break;
  }
  return "samples";
}

bool IsFatalXid(std::uint64_t xid) {
  switch (xid) {
    case 13:
    case 31:
    case 43:
    case 45:
    case 48:
    case 61:
    case 62:
    case 64:
    case 68:
    case 69:
    case 79:
    case 94:
    case 95:
    case 119:
    case 120:
      return true;
    default:
      return false;
  }
}

std::string CudaErrorForXid(std::uint64_t xid) {
  switch (xid) {
    case 48:
    case 94:
    case 95:
      return "uncorrectable ECC error encountered";
    case 79:
      return "GPU is lost (the device fell off the bus)";
    case 31:
      return "an illegal memory access was encountered";
    case 13:
    case 43:
    case 68:
    case 69:
      return "unspecified launch failure";
    default:
      return "unknown error";
  }
}

TrainingRun::TrainingRun(TrainingProfile profile, std::vector<std::string> gpu_names)
    : profile_(profile), names_(std::move(gpu_names)) {}

double TrainingRun::RateFor(const std::vector<GpuState>& gpus, std::size_t* slowest,
                            double* slowest_ratio) const {
  const std::size_t n = std::max<std::size_t>(1, names_.size());
  double ratio = 1;
  std::size_t at = 0;
  bool nvlink_down = false;
  for (std::size_t i = 0; i < gpus.size() && i < n; ++i) {
    const double r = gpus[i].clock_ratio();
    if (r < ratio) ratio = r, at = i;
    nvlink_down = nvlink_down || gpus[i].nvlink_down > 0;
  }
  if (slowest) *slowest = at;
  if (slowest_ratio) *slowest_ratio = ratio;
  const double full_step_s = profile_.batch_per_gpu / profile_.samples_per_s_per_gpu;
  const double comm_share = n > 1 ? profile_.comm_share : 0;  // one GPU has no all-reduce
  const double compute_s = full_step_s * (1 - comm_share) / std::max(0.01, ratio);
  const double comm_s = full_step_s * comm_share * (nvlink_down ? profile_.nvlink_down_factor : 1);
  const double steps_per_s = 1 / (compute_s + comm_s);
  switch (profile_.unit) {
    case TrainingUnit::kSteps:
      return steps_per_s;
    case TrainingUnit::kTokens:
      return steps_per_s * static_cast<double>(n) * profile_.batch_per_gpu *
             profile_.tokens_per_sample;
    case TrainingUnit::kSamples:
      break;
  }
  return steps_per_s * static_cast<double>(n) * profile_.batch_per_gpu;
}

void TrainingRun::AdvanceTo(std::uint64_t virtual_ms, const std::vector<GpuState>& gpus) {
  if (status_ != TrainingStatus::kRunning) return;
  rate_ = RateFor(gpus, &slowest_, &slowest_ratio_);
  if (!started_ || virtual_ms < last_ms_) {
    started_ = true;
    last_ms_ = virtual_ms;
    start_xid_.assign(names_.size(), 0);
    for (std::size_t i = 0; i < gpus.size() && i < names_.size(); ++i) start_xid_[i] = gpus[i].xid;
    return;
  }
  // Faults first: a GPU that failed ends the run where the failure was seen.
  for (std::size_t i = 0; i < gpus.size() && i < names_.size(); ++i) {
    const GpuState& g = gpus[i];
    const std::uint64_t xid = g.lost ? 79 : g.xid;
    if (g.lost || (xid != start_xid_[i] && IsFatalXid(xid))) {
      status_ = TrainingStatus::kFailed;
      failure_ = "RuntimeError: CUDA error: " + CudaErrorForXid(xid) + " (Xid " +
                 std::to_string(xid) + " on GPU " + names_[i] + ")";
      rate_ = 0;
      return;
    }
  }
  double dt_ms = static_cast<double>(virtual_ms - last_ms_);
  last_ms_ = virtual_ms;
  if (profile_.stop_after_s > 0)
    dt_ms = std::min(dt_ms, profile_.stop_after_s * 1000 - elapsed_ms_);
  double done = rate_ * dt_ms / 1000;
  if (profile_.stop_after_units > 0 && done > profile_.stop_after_units - units_) {
    done = profile_.stop_after_units - units_;  // ends within this interval: when it got there
    dt_ms = rate_ > 0 ? done * 1000 / rate_ : dt_ms;
  }
  units_ += std::max(0.0, done);
  elapsed_ms_ += std::max(0.0, dt_ms);
  if ((profile_.stop_after_units > 0 && units_ >= profile_.stop_after_units) ||
      (profile_.stop_after_s > 0 && elapsed_ms_ >= profile_.stop_after_s * 1000))
    status_ = TrainingStatus::kCompleted;
}

void TrainingRun::Render(std::string* out) const {
  const std::string unit = TrainingUnitName(profile_.unit);
  AppendMetric(out, "training_" + unit + "_total", "counter",
               ("Training " + unit + " processed by this run (all its GPUs together).").c_str(),
               std::floor(units_));
  AppendMetric(out, "training_gpus", "gauge", "GPUs this data-parallel run trains on.",
               static_cast<double>(names_.size()));
  AppendMetric(out, "training_slowest_gpu_clock_ratio", "gauge",
               "SM clock over its maximum of the GPU that set the pace of the last step.",
               slowest_ratio_);
  AppendMetric(out, "training_elapsed_seconds", "gauge",
               "Time the run has trained (the simulation's virtual time).", elapsed_s());
}

std::optional<std::string> MemoryShortfall(double memory_mib, const std::vector<GpuState>& gpus,
                                           const std::vector<std::string>& names) {
  const double need = memory_mib * 1024 * 1024;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const GpuState& g = gpus[i];
    if (g.memory_total_bytes == 0) continue;
    const double free = static_cast<double>(g.free_memory_bytes());
    if (need <= free) continue;
    auto mib = [](double bytes) { return std::to_string(static_cast<long long>(bytes / 1048576)); };
    return "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate " + mib(need) +
           " MiB. GPU " + (i < names.size() ? names[i] : std::to_string(i)) +
           " has a total capacity of " + mib(static_cast<double>(g.memory_total_bytes)) +
           " MiB of which " + mib(free) + " MiB is free.";
  }
  return std::nullopt;
}

}  // namespace gw::sim
