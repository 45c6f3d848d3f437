#include "top/frame.h"

#include <cstdio>
#include <initializer_list>

namespace gw::top {

using collect::IsAbsent;
using collect::Slot;

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

std::string Throttle(const collect::GpuSnapshot& gpu, bool* throttled) {
  std::string out;
  for (size_t r = 0; r < collect::kClockEventReasons.size(); ++r) {
    const collect::ClockEventReason& reason = collect::kClockEventReasons[r];
    if (!reason.is_throttle || gpu.value(collect::ClockEventActiveSlot(r)) != 1) continue;
    if (!out.empty()) out += ", ";
    out += reason.description;
  }
  *throttled = !out.empty();
  if (out.empty() && gpu.value(Slot::kEventGpuIdle) == 1) out = "idle";
  return out;
}

// The sum of the values present; NaN when none is.
double SumPresent(std::initializer_list<double> values) {
  double sum = collect::kAbsent;
  for (double v : values)
    if (!IsAbsent(v)) sum = IsAbsent(sum) ? v : sum + v;
  return sum;
}

void NvLinks(const collect::GpuSnapshot& gpu, GpuView& v) {
  v.nvlinks = gpu.nvlinks.size();
  for (const collect::NvLinkSnapshot& l : gpu.nvlinks) {
    if (l.up == 1) ++v.nvlinks_up;
    if (l.up == 0) {
      if (!v.nvlinks_down.empty()) v.nvlinks_down += ", ";
      v.nvlinks_down += std::to_string(l.link);
    }
  }
  // The GPU's totals where the driver gives them, else the links' own counters summed.
  v.nvlink_errors =
      SumPresent({gpu.value(Slot::kNvlinkReplayErrors), gpu.value(Slot::kNvlinkRecoveryErrors),
                  gpu.value(Slot::kNvlinkCrcFlitErrors), gpu.value(Slot::kNvlinkCrcDataErrors)});
  if (IsAbsent(v.nvlink_errors)) {
    for (const collect::NvLinkSnapshot& l : gpu.nvlinks) {
      double e = SumPresent({l.replay_errors, l.recovery_errors, l.crc_errors});
      if (!IsAbsent(e)) v.nvlink_errors = SumPresent({v.nvlink_errors, e});
    }
  }
  v.nvlink_tx_bps = gpu.value(Slot::kNvlinkTxRate);
  v.nvlink_rx_bps = gpu.value(Slot::kNvlinkRxRate);
}

}  // namespace

GpuView ViewOf(const collect::GpuSnapshot& gpu) {
  GpuView v;
  v.index = gpu.identity.index;
  v.name = gpu.identity.name;
  v.uuid = gpu.identity.uuid;
  v.lost = gpu.lost;
  v.util = gpu.value(Slot::kUtilization);
  v.memory_used_bytes = gpu.value(Slot::kMemoryUsed);
  v.memory_total_bytes = gpu.value(Slot::kMemoryTotal);
  v.power_w = gpu.value(Slot::kPower);
  v.power_limit_w = gpu.value(Slot::kPowerLimit);
  v.temperature_c = gpu.value(Slot::kTemperature);
  v.slowdown_c = gpu.value(Slot::kThresholdSlowdown);
  double sm = gpu.value(Slot::kSmClock);
  v.sm_clock_mhz = IsAbsent(sm) ? sm : sm / 1e6;
  v.pstate = gpu.value(Slot::kPerformanceState);
  v.ecc_corrected = gpu.value(Slot::kEccCorrectedVolatile);
  v.ecc_uncorrected = gpu.value(Slot::kEccUncorrectedVolatile);
  for (const auto& [xid, count] : gpu.xid_counts) {
    v.xid_events += count;
    if (!v.xids.empty()) v.xids += ' ';
    v.xids += std::to_string(xid) + "x" + std::to_string(count);
  }
  v.throttle = Throttle(gpu, &v.throttled);
  v.processes = gpu.processes.size();
  v.sm_active = gpu.value(Slot::kSmActive);
  v.sm_occupancy = gpu.value(Slot::kSmOccupancy);
  v.tensor_active = gpu.value(Slot::kTensorAny);
  v.dram_active = gpu.value(Slot::kDramActive);
  v.hollow = !IsAbsent(v.util) && !IsAbsent(v.sm_active) && v.util >= kHollowUtilization &&
             v.sm_active < kHollowSmActive;
  v.mig_current = gpu.value(Slot::kMigEnabledCurrent);
  v.mig_pending = gpu.value(Slot::kMigEnabledPending);
  for (const collect::MigInstanceSnapshot& m : gpu.mig) {
    MigView mv;
    mv.gpu_instance_id = m.gpu_instance_id;
    mv.profile = m.profile;
    mv.uuid = m.uuid;
    mv.memory_used_bytes = m.memory_used_bytes;
    mv.memory_total_bytes = m.memory_total_bytes;
    mv.sm_active = m.value(collect::Gpm::kSmActive);
    mv.processes = m.processes.size();
    v.mig.push_back(std::move(mv));
  }
  NvLinks(gpu, v);
  return v;
}

void AppendProcessViews(const collect::GpuSnapshot& gpu,
                        const std::map<unsigned, std::string>& jobs,
                        std::vector<ProcessView>* out) {
  const size_t first = out->size();
  auto add = [&](const collect::ProcessSample& p, unsigned instance) {
    for (size_t i = first; i < out->size(); ++i)
      if ((*out)[i].pid == p.pid) return;  // on the GPU's list and its instance's
    ProcessView v;
    v.gpu = gpu.identity.index;
    v.gpu_instance_id = instance;
    v.pid = p.pid;
    if (p.details) {
      v.name = p.details->name;
      v.user = p.details->user;
      v.command = p.details->command;
      v.job = p.details->job_id;
    }
    if (v.job.empty())
      if (auto j = jobs.find(p.pid); j != jobs.end()) v.job = j->second;
    v.memory_bytes = p.memory_bytes;
    v.sm_ratio = p.sm_utilization_ratio;
    v.cpu_ratio = p.host_cpu_ratio;
    v.host_memory_bytes = p.host_memory_bytes;
    out->push_back(std::move(v));
  };
  for (const collect::ProcessSample& p : gpu.processes) add(p, p.gpu_instance_id);
  for (const collect::MigInstanceSnapshot& m : gpu.mig)
    for (const collect::ProcessSample& p : m.processes) add(p, m.gpu_instance_id);
}

namespace {

collect::Severity AlertSeverity(const std::string& severity) {
  return severity == "critical"  ? collect::Severity::kCritical
         : severity == "warning" ? collect::Severity::kWarning
                                 : collect::Severity::kInfo;
}

float HistoryValue(double ratio) {
  return IsAbsent(ratio) ? -1.0f : static_cast<float>(ratio);
}

double RatioOf(double v, double limit) {
  return IsAbsent(v) || IsAbsent(limit) || limit <= 0 ? collect::kAbsent : v / limit;
}

}  // namespace

std::shared_ptr<const Frame> FrameBuilder::Build(const Reading& reading) {
  auto frame = std::make_shared<Frame>();
  const collect::Snapshot& snap = *reading.snapshot;
  frame->source = source_;
  frame->nvml_up = snap.stats.nvml_up;
  frame->nvml_error = snap.stats.nvml_error;
  frame->driver_version = snap.stats.driver_version;
  frame->taken_unix_seconds = snap.taken_unix_seconds;
  frame->generation = snap.generation;
  frame->alerts = reading.alerts;
  frame->alerts_note = reading.alerts_note;
  frame->jobs_note = reading.jobs_note;
  frame->queue = reading.queue;
  frame->services = reading.services;
  frame->gpus.reserve(snap.gpus.size());
  for (const collect::GpuSnapshot& gpu : snap.gpus) {
    GpuView v = ViewOf(gpu);
    if (auto h = reading.holders.find(v.index); h != reading.holders.end()) v.holder = h->second;
    if (reading.has_health) {
      if (auto h = reading.health.find(v.index); h != reading.health.end()) v.problems = h->second;
    } else {
      v.problems = collect::HealthProblems(gpu);
    }
    for (const collect::HealthProblem& p : v.problems) {
      if (!v.has_problem || static_cast<int>(p.severity) > static_cast<int>(v.worst))
        v.worst = p.severity;
      v.has_problem = true;
    }
    const std::string label = std::to_string(v.index);
    for (size_t i = 0; i < reading.alerts.size(); ++i) {
      const AlertView& a = reading.alerts[i];
      if (a.state != "firing" || a.gpu != label) continue;
      const collect::Severity severity = AlertSeverity(a.severity);
      if (v.firing_alerts.empty() || static_cast<int>(severity) > static_cast<int>(v.alert_worst))
        v.alert_worst = severity;
      v.firing_alerts.push_back(i);
    }
    Ring& ring = history_[v.uuid.empty() ? label : v.uuid];
    ring.util[ring.next] = HistoryValue(v.util);
    ring.memory[ring.next] = HistoryValue(RatioOf(v.memory_used_bytes, v.memory_total_bytes));
    ring.power[ring.next] = HistoryValue(RatioOf(v.power_w, v.power_limit_w));
    ring.temperature[ring.next] = HistoryValue(RatioOf(v.temperature_c, v.slowdown_c));
    ring.next = (ring.next + 1) % kHistoryLength;
    if (ring.count < kHistoryLength) ++ring.count;
    v.history_count = ring.count;
    // Oldest first, right-aligned: the newest sample is history[kHistoryLength - 1].
    for (size_t i = 0; i < ring.count; ++i) {
      size_t from = (ring.next + kHistoryLength - ring.count + i) % kHistoryLength;
      size_t to = kHistoryLength - ring.count + i;
      v.history[to] = ring.util[from];
      v.memory_history[to] = ring.memory[from];
      v.power_history[to] = ring.power[from];
      v.temperature_history[to] = ring.temperature[from];
    }
    AppendProcessViews(gpu, reading.process_jobs, &frame->processes);
    frame->gpus.push_back(std::move(v));
  }
  last_ = frame;
  return frame;
}

std::shared_ptr<const Frame> FrameBuilder::Failed(const std::string& error) {
  auto frame = last_ ? std::make_shared<Frame>(*last_) : std::make_shared<Frame>();
  frame->source = source_;
  frame->error = error;
  if (!last_) frame->nvml_up = true;  // nothing known yet: show the error, not "no GPUs"
  return frame;
}

}  // namespace gw::top
