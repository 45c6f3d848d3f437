// Fixed snapshots for the `gpuwarden top` tests: a healthy GPU, a power-capped one held by a job,
// a lost one, and one with uncorrectable ECC errors running hot.
#ifndef GPUWARDEN_TESTS_TOP_TEST_FRAMES_H_
#define GPUWARDEN_TESTS_TOP_TEST_FRAMES_H_

#include <memory>
#include <string>

#include "collect/snapshot.h"
#include "top/frame.h"

namespace gw::top {

inline collect::GpuSnapshot TestGpu(unsigned index, double util, double temperature_c) {
  using collect::Slot;
  collect::GpuSnapshot g;
  g.values.fill(collect::kAbsent);
  g.identity.index = index;
  g.identity.uuid = "GPU-0000000" + std::to_string(index) + "-aaaa-4bbb-cccc-dddddddddddd";
  g.identity.name = "NVIDIA H100 80GB HBM3";
  auto set = [&g](Slot s, double v) { g.values[static_cast<size_t>(s)] = v; };
  set(Slot::kUp, 1);
  set(Slot::kUtilization, util);
  set(Slot::kMemoryUsed, 30.0 * (1 << 30));
  set(Slot::kMemoryTotal, 80.0 * (1 << 30));
  set(Slot::kPower, 100 + 600 * util);
  set(Slot::kPowerLimit, 700);
  set(Slot::kTemperature, temperature_c);
  set(Slot::kThresholdSlowdown, 89);
  set(Slot::kSmClock, 1980e6);
  set(Slot::kPerformanceState, 0);
  set(Slot::kEccCorrectedVolatile, 0);
  set(Slot::kEccUncorrectedVolatile, 0);
  for (size_t r = 0; r < collect::kClockEventReasons.size(); ++r)
    g.values[static_cast<size_t>(collect::ClockEventActiveSlot(r))] = 0;
  return g;
}

inline std::shared_ptr<collect::Snapshot> TestSnapshot(unsigned extra_gpus = 0) {
  using collect::Slot;
  auto s = std::make_shared<collect::Snapshot>();
  s->generation = 3;
  s->taken_unix_seconds = 1700000090;
  s->stats.nvml_up = true;
  s->stats.driver_version = "550.127.08";
  // Processes with their details, as the collector's process details fill them.
  auto process = [](unsigned pid, double gib, double sm, const char* name, const char* user,
                    const char* command, double cpu, double rss_gib) {
    collect::ProcessSample p;
    p.pid = pid;
    p.memory_bytes = gib * (1 << 30);
    p.sm_utilization_ratio = sm;
    p.details = std::make_shared<const collect::ProcessDetails>(
        collect::ProcessDetails{name, user, command, ""});
    p.host_cpu_ratio = cpu;
    p.host_memory_bytes = rss_gib * (1 << 30);
    return p;
  };
  collect::GpuSnapshot busy = TestGpu(0, 0.95, 65);
  busy.processes = {
      process(5000, 10, 0.95, "torchrun", "carol", "torchrun --nproc 8 fit.py", 2.5, 12)};
  s->gpus.push_back(busy);
  collect::GpuSnapshot capped = TestGpu(1, 0.85, 60);
  capped.values[static_cast<size_t>(Slot::kEventSwPowerCap)] = 1;
  capped.values[static_cast<size_t>(Slot::kPowerLimit)] = 300;
  capped.values[static_cast<size_t>(Slot::kPower)] = 298;
  capped.processes = {
      process(4242, 30, 0.83, "python3", "alice", "python3 train.py --epochs 90", 1.5, 6),
      process(4243, 2, 0.02, "eval", "bob", "", 0.1, 0.5)};
  s->gpus.push_back(capped);
  collect::GpuSnapshot lost = TestGpu(2, 0, 0);
  lost.values.fill(collect::kAbsent);
  lost.values[static_cast<size_t>(Slot::kUp)] = 0;
  lost.lost = true;
  lost.xid_counts = {{79, 1}};
  s->gpus.push_back(lost);
  collect::GpuSnapshot sick = TestGpu(3, 0.9, 88);
  sick.values[static_cast<size_t>(Slot::kEccUncorrectedVolatile)] = 2;
  sick.values[static_cast<size_t>(Slot::kEccCorrectedVolatile)] = 5;
  sick.values[static_cast<size_t>(Slot::kEventSwThermal)] = 1;
  sick.xid_counts = {{48, 1}};
  s->gpus.push_back(sick);
  for (unsigned i = 0; i < extra_gpus; ++i) s->gpus.push_back(TestGpu(4 + i, 0.1 * (i % 10), 50));
  return s;
}

inline Reading TestReading(unsigned extra_gpus = 0) {
  Reading r;
  r.snapshot = TestSnapshot(extra_gpus);
  r.holders[1] = GpuHolder{"train-7", "vision", "alice"};
  r.alerts.push_back(
      {"GpuFellOffBus", "critical", "firing", "2", "GPU 2 fell off the bus (XID 79)"});
  r.alerts.push_back({"GpuTemperatureNearSlowdown", "warning", "pending", "3", "GPU 3 is hot"});
  return r;
}

}  // namespace gw::top

#endif  // GPUWARDEN_TESTS_TOP_TEST_FRAMES_H_
