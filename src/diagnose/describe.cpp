// Severity, title and suggested action of each finding kind, from its cause and evidence.
#include <cmath>
#include <cstdio>

#include "diagnose/checks.h"

namespace gw::diagnose {

namespace {

// The value of `key`, NaN when the evidence query returned nothing.
double Get(const EvidenceValues& v, std::string_view key) {
  auto it = v.find(key);
  return it == v.end() ? std::nan("") : it->second;
}

std::string Percent(double ratio) {
  char b[32];
  std::snprintf(b, sizeof b, "%.0f %%", ratio * 100);
  return b;
}

std::string GpuName(const Finding& f) {
  return "GPU " + f.subject.gpu;
}

}  // namespace

void DescribeThrottled(Finding* f, const EvidenceValues& v, const Thresholds& t) {
  const std::string reason = f->cause;  // the raw clock-event reason until renamed here
  const double share = Get(v, "share");
  const std::string how_long = Percent(share) + " of the time";
  if (reason == "hw_power_brake_slowdown") {
    f->cause = "power brake";
    f->severity = Severity::kCritical;
    f->title =
        GpuName(*f) + " is busy but the external power brake cut its clocks (" + how_long + ")";
    f->action =
        "Check the node's power supplies and PDU on the BMC (ipmitool sdr type \"Power Supply\"): "
        "the brake is asserted when PSU redundancy is lost or the rack exceeds its power budget. "
        "Check the node's other GPUs; drain the node if the brake does not clear.";
  } else if (reason == "hw_thermal_slowdown") {
    f->cause = "thermal";
    f->severity = Severity::kWarning;
    f->title = GpuName(*f) +
               " is busy but reached its slowdown temperature: hardware thermal "
               "slowdown cut its clocks (" +
               how_long + ")";
    f->action =
        "Treat it as a cooling failure: check fans, heatsink, inlet temperature and airflow on "
        "the node's BMC; compare with the node's other GPUs. Drain the GPU if it persists; its "
        "jobs run at a fraction of their speed.";
  } else if (reason == "sw_thermal_slowdown") {
    f->cause = "thermal (held at its temperature target)";
    f->severity = Severity::kInfo;
    f->title = GpuName(*f) +
               " is busy but the firmware lowers its clocks to hold it at its "
               "temperature target (" +
               how_long + ")";
    f->action =
        "Check its airflow and inlet temperature against its neighbours; nothing urgent unless it "
        "reaches hardware slowdown.";
  } else {
    f->cause = "power cap";
    const double limit = Get(v, "limit"), def = Get(v, "default_limit");
    const bool lowered =
        std::isfinite(limit) && std::isfinite(def) && limit < t.power_cap_lowered * def;
    char b[160] = "";
    if (lowered) {
      std::snprintf(b, sizeof b, " (limit lowered to %.0f W from %.0f W)", limit, def);
      f->severity = Severity::kWarning;
      f->title = GpuName(*f) + " is busy but slowed by its power cap" + b + ", " + how_long;
      f->action =
          "Find who lowered the limit (nvidia-smi -q -d POWER; a node power-capping policy, DCGM, "
          "a facility power budget) and restore it if unintended (nvidia-smi -i " +
          f->subject.gpu +
          " -pl <default watts>); otherwise move throughput-sensitive work to "
          "uncapped GPUs.";
    } else {
      if (std::isfinite(limit)) std::snprintf(b, sizeof b, " (%.0f W, its default)", limit);
      f->severity = Severity::kInfo;
      f->title = GpuName(*f) + " is busy and pinned at its power limit" +
                 (std::isfinite(limit) ? std::string(b) : std::string()) + ", " + how_long;
      f->action =
          "Normal for heavy training: the work is power-bound. Use it for capacity planning "
          "(rack power budget); if the GPU also runs hot, check cooling before it throttles.";
    }
  }
}

void DescribeNearThermal(Finding* f, const EvidenceValues& v, const Thresholds&) {
  const double temp = Get(v, "temp"), slowdown = Get(v, "slowdown");
  const bool reached = std::isfinite(slowdown) && temp >= slowdown;
  f->severity = reached ? Severity::kWarning : Severity::kInfo;
  char b[160] = "";
  std::snprintf(b, sizeof b, " reached %.0f °C, %s its slowdown threshold of %.0f °C", temp,
                reached ? "at" : "close to", slowdown);
  f->title = GpuName(*f) + b;
  f->action =
      "Compare with the node's other GPUs: one hot GPU points at its heatsink, fan or airflow "
      "path, all of them at the node or rack (inlet temperature, failed fans, blocked filters). "
      "Check the BMC; drain the GPU before it reaches its shutdown threshold.";
}

void DescribeEcc(Finding* f, const EvidenceValues& v, const Thresholds& t) {
  char b[200] = "";
  if (f->cause == "uncorrectable errors") {
    f->severity = Severity::kCritical;
    const double n = Get(v, "uncorrected");
    std::snprintf(b, sizeof b, " has %.0f uncorrectable ECC error%s since its last reset", n,
                  n == 1 ? "" : "s");
    f->title = GpuName(*f) + b;
    f->action =
        "Drain it and requeue its job (results since the error are suspect); check XID 48/63/64 "
        "and pending row remaps; reset the GPU; open an RMA if it recurs.";
  } else if (f->cause == "corrected-error trend") {
    f->severity = Severity::kWarning;
    std::snprintf(b, sizeof b,
                  ": corrected ECC errors at %.0f/h will take its lifetime count to %.0f within "
                  "%.0f days (review threshold %.0f)",
                  Get(v, "rate"), Get(v, "projected"), t.ecc_horizon_s / 86400, t.ecc_review_count);
    f->title = GpuName(*f) + b;
    f->action =
        "Confirm the trend on a 7-day graph, schedule a drain and reset in the next window, check "
        "remapped rows afterwards, and raise the replacement ticket early (serial from gpu_info).";
  } else if (f->cause == "row remap failed") {
    f->severity = Severity::kCritical;
    f->title = GpuName(*f) + " has no spare memory rows left: a row remap failed";
    f->action = "Drain it now, collect nvidia-bug-report with the serial, and RMA the board.";
  } else if (f->cause == "row remap pending") {
    f->severity = Severity::kWarning;
    f->title = GpuName(*f) + " has a memory row remap waiting for a reset; the bad row is in use";
    f->action =
        "Drain at the next job boundary and reset the GPU; check that pending is 0 and "
        "no failure is reported afterwards.";
  } else {
    f->severity = Severity::kWarning;
    f->title = GpuName(*f) + " has a memory page retirement waiting for a reset";
    f->action =
        "Drain and reset; check that nothing is pending afterwards; RMA at about 60 "
        "retired pages or on XID 64.";
  }
}

void DescribeMemoryBound(Finding* f, const EvidenceValues& v, const Thresholds&) {
  f->severity = Severity::kInfo;
  f->title = GpuName(*f) + " is memory-bound: memory controller " + Percent(Get(v, "mem_util")) +
             " busy, SMs " + Percent(Get(v, "util"));
  f->action =
      "The work waits on memory bandwidth, not compute: profile it (Nsight Compute memory "
      "workload analysis); fuse kernels, use lower-precision or more cache-friendly layouts; a "
      "GPU with more bandwidth (HBM3/H200) helps more than more SMs.";
}

void DescribeMemoryPressure(Finding* f, const EvidenceValues& v, const Thresholds&) {
  f->severity = Severity::kWarning;
  if (f->cause == "sustained") {
    f->title = GpuName(*f) + " has " + Percent(Get(v, "ratio")) +
               " of its memory in use: the next allocation peak may end in an out-of-memory error";
    f->action =
        "Tell the job's owner: reduce the batch size, enable activation checkpointing, or move "
        "to a GPU with more memory; if nothing runs, a leaked context holds it.";
  } else {
    f->title = GpuName(*f) + "'s memory use spiked to " + Percent(Get(v, "ratio")) +
               " of its total: transient peaks are near out-of-memory";
    f->action =
        "Find the moment (gpu_memory_used_peak_bytes): cap the allocator, lower the peak batch, "
        "stagger model loads, and do not co-locate other work on this GPU.";
  }
}

void DescribeDataStarved(Finding* f, const EvidenceValues& v, const Thresholds&) {
  f->severity = Severity::kWarning;
  f->title = GpuName(*f) + " runs a process but is mostly idle (" + Percent(Get(v, "util")) +
             " utilization): the job is starved of data or waiting on something else";
  f->action =
      "Look at the job's input pipeline (data loader workers, storage throughput, CPU "
      "preprocessing), host-device copies and communication; for inference, batch requests. "
      "If it cannot be fed faster, give it fewer or smaller GPUs.";
}

void DescribeIdleAllocation(Finding* f, const EvidenceValues& v, const Thresholds& t) {
  f->severity = f->held_s >= 1800 ? Severity::kWarning : Severity::kInfo;
  const double mem = Get(v, "mem_used");
  char b[120] = "";
  if (std::isfinite(mem) && mem > 0)
    std::snprintf(b, sizeof b, ", %.1f GiB of memory held", mem / (1024.0 * 1024 * 1024));
  f->title = GpuName(*f) + " is allocated but idle (utilization at or below " +
             Percent(t.idle_utilization) + " for " + FormatValue(f->held_s, "seconds") + b + ")" +
             (f->subject.job.empty() ? "" : " by job " + f->subject.job);
  f->action =
      "Check the job (data stall, hung collective, an open notebook) and tell its owner; if it "
      "stays idle, apply the site's reclaim policy so that queued work can use the GPU.";
}

void DescribeQueueCongestion(Finding* f, const EvidenceValues& v, const Thresholds&) {
  f->severity = Severity::kWarning;
  const double idle = Get(v, "idle_allocated");
  if (f->cause == "queue wait") {
    f->title = "Partition " + f->subject.partition + ": jobs wait " +
               FormatValue(Get(v, "p90"), "seconds") + " in the queue (90th percentile)";
  } else {
    f->title = "Partition " + f->subject.partition +
               " is congested: allocated and pending GPUs are " +
               FormatValue(Get(v, "ratio"), "count") + "× its capacity";
  }
  if (std::isfinite(idle) && idle > 0) {
    f->action =
        "Allocated GPUs sat idle while jobs queued: win them back first (reclaim "
        "policy, idle-allocation findings), then look at capacity.";
  } else {
    f->action =
        "Look at the pending reasons (squeue -t PD -o %r): limits and priorities "
        "first; if demand exceeds the pool for days, grow the partition (see the "
        "report's capacity recommendation).";
  }
}

void DescribeQuotaDrift(Finding* f, const EvidenceValues& v, const Thresholds&) {
  f->severity = f->cause == "over quota" ? Severity::kWarning : Severity::kInfo;
  char b[160] = "";
  std::snprintf(b, sizeof b, " (allocated %s of a quota of %.0f GPUs)",
                Percent(Get(v, "ratio")).c_str(), Get(v, "quota"));
  if (f->cause == "over quota") {
    f->title = "Team " + f->subject.team + " holds more GPUs than its quota" + b;
    f->action =
        "Check whether the quota is enforced (Slurm QOS GrpTRES) and whether the team's "
        "demand has grown: enforce it or raise the quota deliberately.";
  } else {
    f->title = "Team " + f->subject.team + " uses far less than its quota" + b;
    f->action =
        "Lower the quota or lend it (a shared or preemptible partition) so that the "
        "GPUs serve other teams' queued work.";
  }
}

namespace {

// " (job 4711)" when the task layer knew who held the GPU, else "".
std::string JobSuffix(const Finding& f) {
  return f.subject.job.empty() ? std::string() : " (job " + f.subject.job + ")";
}

}  // namespace

void DescribeNvLink(Finding* f, const EvidenceValues& v, const Thresholds&) {
  const double xid74 = Get(v, "xid74");
  const bool xid = std::isfinite(xid74) && xid74 > 0;
  f->severity = xid ? Severity::kCritical : Severity::kWarning;
  const std::string gpu = f->subject.gpu;
  if (f->cause == "error storm") {
    f->title = "NVLink degraded on GPU " + gpu + ": link errors at " +
               FormatValue(Get(v, "rate"), "per_second") + (xid ? ", XID 74 reported" : "");
    f->action = std::string(xid ? "Jobs using NVLink through this GPU have likely failed: drain "
                                  "it now and requeue them. "
                                : "Drain the GPU at the next job boundary. ") +
                "Find the link (rate(gpu_nvlink_link_errors_total{gpu=\"" + gpu +
                "\"}[5m]), nvidia-smi nvlink -e -i " + gpu +
                ") and the GPU at its other end (nvidia-smi topo -m); reset the GPU. Errors that "
                "come back after the reset point at the bridge, cable or baseboard: open a "
                "hardware ticket.";
    return;
  }
  std::string what;
  if (f->cause == "links down") {  // only the GPU's count is known
    char b[64];
    std::snprintf(b, sizeof b, "%.0f link%s down", Get(v, "links_down"),
                  Get(v, "links_down") == 1 ? "" : "s");
    what = b;
  } else {  // the raw cause is the link's number
    f->cause = "link " + f->cause + " down";
    what = f->cause;
  }
  f->title = "NVLink degraded on GPU " + gpu + ": " + what + (xid ? " (XID 74 reported)" : "");
  f->action = std::string(xid ? "Jobs using NVLink through this GPU have likely failed: drain it "
                                "now and requeue them. "
                              : "Drain the GPU at the next job boundary. ") +
              "Confirm with nvidia-smi nvlink -s -i " + gpu +
              ", reset the GPU or reboot the node (on NVSwitch systems check the fabric "
              "manager's log). A link still down after the reset needs the board, bridge or "
              "baseboard looked at: open a hardware ticket with the serial (gpu_info).";
}

void DescribeHollow(Finding* f, const EvidenceValues& v, const Thresholds&) {
  f->severity = Severity::kWarning;
  if (f->cause == "low occupancy") {
    f->title = GpuName(*f) + " is busy but hollow: SMs " + Percent(Get(v, "sm_active")) +
               " active with only " + Percent(Get(v, "occupancy")) + " occupancy" + JobSuffix(*f);
    f->action =
        "Kernels run on the SMs with very few warps each, so memory latency is not hidden: "
        "blocks too small, or registers / shared memory per block limiting the warps per SM. "
        "Profile the top kernels (Nsight Compute, occupancy section): larger blocks or batches, "
        "fewer registers per thread (launch bounds), or library kernels tuned for this GPU.";
    return;
  }
  f->title = GpuName(*f) + " is busy but hollow: " + Percent(Get(v, "util")) +
             " utilization, only " + Percent(Get(v, "sm_active")) + " SM activity" + JobSuffix(*f);
  f->action =
      "A kernel is always running but it keeps few SMs busy: kernels launched with too few "
      "blocks, tiny batches, or a launch-bound loop of many small kernels with the host "
      "synchronizing between them (often a job fed one sample at a time). Profile a few steps "
      "(Nsight Systems: kernel durations, gaps, grid sizes); raise the batch size, fuse small "
      "kernels or capture them in CUDA graphs, and keep the input pipeline ahead. If the work "
      "cannot fill the GPU, give it a MIG slice or share the GPU.";
}

void DescribeTensorIdle(Finding* f, const EvidenceValues& v, const Thresholds&) {
  f->severity = Severity::kInfo;
  std::string name = GpuName(*f);
  if (!f->cause.empty()) {  // a MIG instance: raw cause "<GPU instance id> <profile>"
    const size_t space = f->cause.find(' ');
    const std::string id = f->cause.substr(0, space);
    const std::string profile = space == std::string::npos ? "" : f->cause.substr(space + 1);
    f->cause = "MIG instance " + id + (profile.empty() ? "" : " (" + profile + ")");
    name += " " + f->cause;
  }
  f->title = name + " computes without its tensor cores: SMs " + Percent(Get(v, "sm_active")) +
             " active, tensor pipes " + Percent(Get(v, "tensor")) + JobSuffix(*f);
  f->action =
      "If this is a training job, its math runs on the FP32 pipes: enable mixed precision "
      "(PyTorch torch.autocast with bfloat16 or AMP, Keras mixed_float16) or at least TF32 "
      "(torch.backends.cuda.matmul.allow_tf32 = True); tensor cores do matrix math several times "
      "faster. Keep matrix dimensions multiples of 8 so that the libraries pick tensor-core "
      "kernels. Work without matrix math (or inference that is fine as it is) can be left alone.";
}

}  // namespace gw::diagnose
