// jobs/outcome.cpp — the device event ring and the outcome classifier (jobs/outcome.h).
#include "jobs/outcome.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "jobs/gpu_unit.h"

namespace gw::jobs {

namespace {

// NVIDIA's XID catalogue, the codes after which the GPU's work is lost or the GPU needs a reset.
constexpr std::array<XidMeaning, 14> kFatalXids = {{
    {48, "double-bit ECC error"},
    {62, "internal micro-controller halt"},
    {63, "ECC page retirement or row remapping recorded"},
    {64, "ECC page retirement or row remapping failed"},
    {74, "NVLink error"},
    {79, "GPU has fallen off the bus"},
    {92, "high single-bit ECC error rate"},
    {94, "contained ECC error"},
    {95, "uncontained ECC error"},
    {119, "GSP RPC timeout"},
    {120, "GSP error"},
    {123, "SPI PMU RPC failure"},
    {140, "unrecovered ECC error"},
    {154, "GPU recovery action changed (reset or reboot needed)"},
}};

bool Matches(unsigned job_unit, unsigned event_unit) {
  if (job_unit == event_unit) return true;
  // A MIG instance sees its GPU's events; a whole GPU its instances' (memory).
  if (IsMigUnit(job_unit) && !IsMigUnit(event_unit)) return UnitGpu(job_unit) == event_unit;
  if (!IsMigUnit(job_unit) && IsMigUnit(event_unit)) return UnitGpu(event_unit) == job_unit;
  return false;
}

bool IsFatal(const DeviceEvent& e) {
  switch (e.kind) {
    case DeviceEventKind::kXid:
      return !FatalXidMeaning(static_cast<unsigned>(e.value)).empty();
    case DeviceEventKind::kEccUncorrected:
    case DeviceEventKind::kGpuLost:
      return true;
    case DeviceEventKind::kMemoryFull:
      return false;
  }
  return false;
}

std::string UnitName(unsigned unit) {
  return "GPU " + UnitText(unit);
}

std::string Num(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.0f", v);
  return buffer;
}

// "5 min", "90 s".
std::string Span(double seconds) {
  const double rounded = std::round(seconds);
  if (rounded >= 60 && std::fmod(rounded, 60) == 0) return Num(rounded / 60) + " min";
  return Num(rounded) + " s";
}

// ", 4 s before the job ended" relative to `end`.
std::string Relative(double t, std::int64_t end) {
  const double delta = static_cast<double>(end) - t;
  if (std::fabs(delta) < 0.5) return ", as the job ended";
  if (delta > 0) return ", " + Num(delta) + " s before the job ended";
  return ", " + Num(-delta) + " s after the job's recorded end";
}

// What one event says, without its time: "XID 79 (GPU has fallen off the bus) on GPU 3".
std::string Describe(const DeviceEvent& e) {
  switch (e.kind) {
    case DeviceEventKind::kXid: {
      const std::string_view meaning = FatalXidMeaning(static_cast<unsigned>(e.value));
      std::string text = "XID " + Num(e.value);
      if (!meaning.empty()) text += " (" + std::string(meaning) + ")";
      if (e.count > 1) text += " x" + std::to_string(e.count);
      return text + " on " + UnitName(e.unit);
    }
    case DeviceEventKind::kEccUncorrected:
      return Num(e.value) + " uncorrectable ECC error" + (e.value == 1 ? "" : "s") + " on " +
             UnitName(e.unit);
    case DeviceEventKind::kGpuLost:
      return UnitName(e.unit) + " lost (fell off the bus)";
    case DeviceEventKind::kMemoryFull:
      return "device memory full (" + Num(e.value * 100) + " % used) on " + UnitName(e.unit);
  }
  return "";
}

// The time an event is reported at: when first seen; memory full, when last seen full (clipped at
// the end: it is the spell's state just before the end that matters).
double ReportTime(const DeviceEvent& e, std::int64_t end) {
  if (e.kind != DeviceEventKind::kMemoryFull) return e.time_s;
  return std::max(e.time_s, std::min(e.until_s, static_cast<double>(end)));
}

std::string Capitalised(std::string text) {
  if (!text.empty() && text[0] >= 'a' && text[0] <= 'z') text[0] = static_cast<char>(text[0] - 32);
  return text;
}

std::string OutcomeOfState(const std::string& state, bool* known) {
  *known = true;
  if (state == "COMPLETED") return "completed";
  if (state == "FAILED") return "failed";
  if (state == "CANCELLED") return "cancelled";
  if (state == "TIMEOUT" || state == "DEADLINE") return "timeout";
  if (state == "OUT_OF_MEMORY") return "out_of_memory";
  if (state == "NODE_FAIL" || state == "BOOT_FAIL") return "node_fail";
  if (state == "PREEMPTED") return "preempted";
  if (state == "VANISHED") return "vanished";
  *known = false;
  return "failed";
}

}  // namespace

std::string_view DeviceEventKindName(DeviceEventKind kind) {
  switch (kind) {
    case DeviceEventKind::kXid:
      return "xid";
    case DeviceEventKind::kEccUncorrected:
      return "ecc_uncorrected";
    case DeviceEventKind::kGpuLost:
      return "gpu_lost";
    case DeviceEventKind::kMemoryFull:
      return "memory_full";
  }
  return "";
}

std::span<const XidMeaning> FatalXids() {
  return kFatalXids;
}

std::string_view FatalXidMeaning(unsigned code) {
  for (const XidMeaning& x : kFatalXids)
    if (x.code == code) return x.meaning;
  return {};
}

std::string OutcomeClock(double unix_s) {
  const std::time_t t = static_cast<std::time_t>(std::floor(unix_s));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%H:%M:%S UTC", &tm);
  return buffer;
}

std::size_t DeviceEventLog::Push(Unit* unit, const DeviceEvent& event) {
  const std::size_t capacity = std::max<std::size_t>(1, options_.per_unit);
  if (unit->ring.size() < capacity) {
    unit->ring.push_back(event);
    return unit->ring.size() - 1;
  }
  const std::size_t at = unit->next;
  unit->ring[at] = event;
  unit->next = (at + 1) % capacity;
  return at;
}

void DeviceEventLog::Observe(const DeviceReading& r) {
  Unit& u = units_[r.unit];
  if (u.ring.capacity() == 0) u.ring.reserve(std::max<std::size_t>(1, options_.per_unit));
  auto event = [&r](DeviceEventKind kind, double value, std::uint64_t count = 1) {
    DeviceEvent e;
    e.kind = kind;
    e.unit = r.unit;
    e.time_s = e.until_s = r.time_s;
    e.value = value;
    e.count = count;
    return e;
  };
  // A spell (lost, memory full) goes on in its event while that event is still in the ring.
  auto spell_alive = [&u](std::size_t index, DeviceEventKind kind, double since) {
    return index < u.ring.size() && u.ring[index].kind == kind && u.ring[index].time_s == since;
  };
  if (u.seen) {
    if (r.ecc_uncorrected_total && u.ecc && *r.ecc_uncorrected_total > *u.ecc)
      Push(&u, event(DeviceEventKind::kEccUncorrected,
                     static_cast<double>(*r.ecc_uncorrected_total - *u.ecc)));
    // Both lists are sorted by code.
    auto prev = u.xids.begin();
    for (const auto& [code, count] : r.xid_counts) {
      while (prev != u.xids.end() && prev->first < code) ++prev;
      const std::uint64_t before = prev != u.xids.end() && prev->first == code ? prev->second : 0;
      if (count > before) Push(&u, event(DeviceEventKind::kXid, code, count - before));
    }
  }
  u.seen = true;
  if (r.ecc_uncorrected_total) u.ecc = r.ecc_uncorrected_total;
  u.xids.assign(r.xid_counts.begin(), r.xid_counts.end());

  if (r.lost) {
    if (u.lost && spell_alive(u.lost_event, DeviceEventKind::kGpuLost, u.lost_since)) {
      u.ring[u.lost_event].until_s = r.time_s;
    } else {
      u.lost_event = Push(&u, event(DeviceEventKind::kGpuLost, 0));
      u.lost_since = r.time_s;
    }
  }
  u.lost = r.lost;

  const bool full = r.memory_used_ratio && *r.memory_used_ratio >= options_.memory_full_ratio;
  if (full) {
    if (u.memory_full &&
        spell_alive(u.memory_event, DeviceEventKind::kMemoryFull, u.memory_since)) {
      DeviceEvent& e = u.ring[u.memory_event];
      e.until_s = r.time_s;
      e.value = std::max(e.value, *r.memory_used_ratio);
    } else {
      u.memory_event = Push(&u, event(DeviceEventKind::kMemoryFull, *r.memory_used_ratio));
      u.memory_since = r.time_s;
    }
  }
  // A lost GPU reads no memory: its spell neither ends nor goes on.
  if (!r.lost) u.memory_full = full;
}

std::vector<DeviceEvent> DeviceEventLog::Collect(std::span<const unsigned> units, double from_s,
                                                 double to_s) const {
  std::vector<DeviceEvent> out;
  for (const auto& [unit, u] : units_) {
    bool wanted = false;
    for (unsigned j : units) wanted = wanted || Matches(j, unit);
    if (!wanted) continue;
    for (const DeviceEvent& e : u.ring)
      if (e.until_s >= from_s && e.time_s <= to_s) out.push_back(e);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const DeviceEvent& a, const DeviceEvent& b) { return a.time_s < b.time_s; });
  return out;
}

JobOutcomeRecord ClassifyOutcome(const OutcomeInput& in, const OutcomeOptions& options) {
  JobOutcomeRecord r;
  const std::int64_t end = in.end_time;
  const bool started = in.start_time > 0;
  const double to = static_cast<double>(end) + options.late_s;
  double from = static_cast<double>(end) - options.window_s;
  if (started) from = std::max(from, static_cast<double>(in.start_time));

  // The evidence in the window on the job's units.
  std::vector<DeviceEvent> fatal, memory;
  if (started) {
    for (const DeviceEvent& e : in.events) {
      if (e.until_s < from || e.time_s > to) continue;
      bool ours = false;
      for (unsigned j : in.units) ours = ours || Matches(j, e.unit);
      if (!ours) continue;
      if (IsFatal(e))
        fatal.push_back(e);
      else if (e.kind == DeviceEventKind::kMemoryFull)
        memory.push_back(e);
    }
  }
  auto by_time = [](const DeviceEvent& a, const DeviceEvent& b) { return a.time_s < b.time_s; };
  std::stable_sort(fatal.begin(), fatal.end(), by_time);
  std::stable_sort(memory.begin(), memory.end(), by_time);

  const bool exit_failed = in.exit_code && *in.exit_code != 0;
  bool known_state = true;
  std::string outcome = OutcomeOfState(in.state, &known_state);
  const bool process_job = in.state == "ENDED";
  if (process_job) outcome = fatal.empty() ? "completed" : "failed";
  // A process job "completes" for want of an exit status: our policy ending it is still ours.
  const bool reclaimed = in.reclaim && (outcome != "completed" || process_job) &&
                         (!started || in.reclaim->time_s >= static_cast<double>(in.start_time)) &&
                         in.reclaim->time_s <= to;
  if (reclaimed) outcome = "reclaimed";

  std::string cause;
  if (outcome == "completed") {
    cause = process_job ? "unknown" : "none";
  } else if (outcome == "reclaimed" || outcome == "preempted") {
    cause = "scheduler";
  } else if (!fatal.empty()) {
    cause = "gpu_fault";
  } else if (outcome == "timeout" || outcome == "node_fail") {
    cause = "scheduler";
  } else if ((outcome == "failed" || outcome == "out_of_memory") && !memory.empty()) {
    cause = "gpu_oom";
  } else if (outcome == "vanished") {
    cause = "unknown";
  } else if (outcome == "failed" || outcome == "out_of_memory" || outcome == "cancelled") {
    cause = known_state ? "user" : "unknown";
  } else {
    cause = "unknown";
  }
  r.outcome = outcome;
  r.cause = cause;

  // The summary: what happened, then why.
  const std::string window = Span(options.window_s);
  std::string what;
  if (outcome == "completed")
    what = process_job ? "Ended (no scheduler: exit status unknown)" : "Completed";
  else if (outcome == "failed")
    what = exit_failed ? "Failed with exit code " + std::to_string(*in.exit_code)
                       : (known_state   ? "Failed"
                          : process_job ? "Failed (no scheduler: exit status unknown)"
                                        : "Ended as " + in.state);
  else if (outcome == "cancelled")
    what = "Cancelled";
  else if (outcome == "timeout")
    what = "Hit its time limit (" + in.state + ")";
  else if (outcome == "out_of_memory")
    what = "Ran out of host memory (OUT_OF_MEMORY)";
  else if (outcome == "node_fail")
    what = "Its node failed (" + in.state + ")";
  else if (outcome == "preempted")
    what = "Preempted by the scheduler";
  else if (outcome == "reclaimed")
    what = "Reclaimed by our idle-GPU policy " + in.reclaim->policy + " (" + in.reclaim->action +
           ") at " + OutcomeClock(in.reclaim->time_s);
  else
    what = "Left the scheduler's job table without a final state";

  std::string why;
  if (cause == "gpu_fault") {
    const DeviceEvent& first = fatal.front();
    why = Describe(first) + " at " + OutcomeClock(first.time_s) + Relative(first.time_s, end);
    if (fatal.size() > 1)
      why += " (and " + std::to_string(fatal.size() - 1) + " more GPU fault event" +
             (fatal.size() == 2 ? ")" : "s)");
  } else if (cause == "gpu_oom") {
    const DeviceEvent& last = memory.back();
    const double t = ReportTime(last, end);
    why = Describe(last) + " at " + OutcomeClock(t) + Relative(t, end);
  } else if (cause == "user") {
    why = std::string(outcome == "cancelled" ? "by a user or an administrator; " : "") +
          "no GPU fault" + (outcome == "cancelled" ? "" : " or full device memory") +
          " on its GPUs in its last " + window;
  } else if (outcome == "reclaimed" && !in.reclaim->detail.empty()) {
    why = in.reclaim->detail;
  } else if (cause == "unknown" && outcome != "completed") {
    why = "no device evidence on its GPUs in its last " + window;
  } else if (process_job) {
    why = "no GPU fault on its GPUs in its last " + window;
  }
  if (why.empty())
    r.summary = what + ".";
  else if (cause == "user" && outcome == "cancelled")
    r.summary = what + " " + why + ".";
  else
    r.summary = what + ": " + why + ".";

  // The evidence: the device's (fatal first, then memory; each oldest first), our decision, and
  // the scheduler's word.
  std::vector<DeviceEvent> device = fatal;
  device.insert(device.end(), memory.begin(), memory.end());
  const std::size_t room = options.max_evidence > 3 ? options.max_evidence - 3 : 0;
  if (device.size() > room) device.resize(room);
  for (const DeviceEvent& e : device) {
    JobOutcomeEvidence item;
    item.time = static_cast<std::int64_t>(std::floor(ReportTime(e, end)));
    item.gpu = UnitGpu(e.unit);
    item.kind = std::string(DeviceEventKindName(e.kind));
    item.value = e.value;
    item.detail = Capitalised(Describe(e)) + " at " + OutcomeClock(ReportTime(e, end)) +
                  Relative(ReportTime(e, end), end) + ".";
    r.evidence.push_back(std::move(item));
  }
  if (reclaimed) {
    JobOutcomeEvidence item;
    item.time = static_cast<std::int64_t>(std::floor(in.reclaim->time_s));
    item.kind = "reclaim";
    item.detail = "Reclaim policy " + in.reclaim->policy + ": " + in.reclaim->action +
                  (in.reclaim->detail.empty() ? "" : " (" + in.reclaim->detail + ")") + ".";
    r.evidence.push_back(std::move(item));
  }
  if (in.exit_code) {
    JobOutcomeEvidence item;
    item.time = end;
    item.kind = "exit_code";
    item.value = *in.exit_code;
    item.detail = "Exit code " + std::to_string(*in.exit_code) + ".";
    r.evidence.push_back(std::move(item));
  }
  JobOutcomeEvidence state;
  state.time = end;
  state.kind = "state";
  state.detail = "Final state " + in.state + ".";
  r.evidence.push_back(std::move(state));
  std::stable_sort(
      r.evidence.begin(), r.evidence.end(),
      [](const JobOutcomeEvidence& a, const JobOutcomeEvidence& b) { return a.time < b.time; });
  return r;
}

}  // namespace gw::jobs
