// Outcomes (jobs/outcome.h): the classifier over every outcome x cause combination it can give,
// evidence just inside and just outside the window, several GPUs and MIG units; and the device
// event ring fed cycle by cycle.
#include "jobs/outcome.h"

#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "jobs/gpu_unit.h"

namespace gw::jobs {
namespace {

constexpr std::int64_t kStart = 1700000000;
constexpr std::int64_t kEnd = kStart + 3600;  // the job ran an hour

DeviceEvent Xid(unsigned unit, double t, unsigned code) {
  return {.kind = DeviceEventKind::kXid,
          .unit = unit,
          .time_s = t,
          .until_s = t,
          .value = static_cast<double>(code)};
}
DeviceEvent Ecc(unsigned unit, double t, double n) {
  return {.kind = DeviceEventKind::kEccUncorrected,
          .unit = unit,
          .time_s = t,
          .until_s = t,
          .value = n};
}
DeviceEvent Lost(unsigned unit, double t) {
  return {.kind = DeviceEventKind::kGpuLost, .unit = unit, .time_s = t, .until_s = t + 30};
}
DeviceEvent MemoryFull(unsigned unit, double from, double until, double ratio = 1.0) {
  return {.kind = DeviceEventKind::kMemoryFull,
          .unit = unit,
          .time_s = from,
          .until_s = until,
          .value = ratio};
}
ReclaimNote Reclaim(double t) {
  return {.time_s = t, .action = "cancel", .policy = "gpu/idle", .detail = "idle for 2h"};
}

// A job that ran an hour, ending at kEnd in `state`.
OutcomeInput Job(std::string state, std::optional<int> exit_code, std::vector<unsigned> units) {
  OutcomeInput in;
  in.state = std::move(state);
  in.exit_code = exit_code;
  in.start_time = kStart;
  in.end_time = kEnd;
  in.units = std::move(units);
  return in;
}

struct Case {
  std::string name;
  std::string state;
  std::optional<int> exit_code;
  std::vector<unsigned> units;
  std::vector<DeviceEvent> events;
  std::optional<ReclaimNote> reclaim;
  std::string outcome, cause;
};

// Before the end by `s` seconds.
double Before(double s) {
  return static_cast<double>(kEnd) - s;
}

// One row per case: name, final state, exit code, units, device events, reclaim decision, and
// the outcome and cause expected.
std::vector<Case> Cases() {
  const unsigned mig03 = MigUnit(0, 3), mig05 = MigUnit(0, 5), mig13 = MigUnit(1, 3);
  // clang-format off
  return {
      // completed
      {"completed", "COMPLETED", 0, {0}, {}, {}, "completed", "none"},
      {"completed_despite_fault", "COMPLETED", 0, {0}, {Xid(0, Before(10), 79)}, {}, "completed", "none"},
      {"completed_reclaim_ignored", "COMPLETED", 0, {0}, {}, Reclaim(Before(60)), "completed", "none"},
      {"process_job_ended", "ENDED", {}, {0}, {}, {}, "completed", "unknown"},
      // failed
      {"failed_xid79", "FAILED", 1, {0}, {Xid(0, Before(4), 79)}, {}, "failed", "gpu_fault"},
      {"failed_xid48", "FAILED", 1, {0}, {Xid(0, Before(60), 48)}, {}, "failed", "gpu_fault"},
      {"failed_ecc", "FAILED", 1, {0}, {Ecc(0, Before(30), 2)}, {}, "failed", "gpu_fault"},
      {"failed_lost", "FAILED", 1, {0}, {Lost(0, Before(3))}, {}, "failed", "gpu_fault"},
      {"failed_oom", "FAILED", 1, {0}, {MemoryFull(0, Before(40), Before(2))}, {}, "failed", "gpu_oom"},
      {"failed_fault_beats_oom", "FAILED", 1, {0}, {MemoryFull(0, Before(40), Before(2)), Xid(0, Before(20), 95)}, {}, "failed", "gpu_fault"},
      {"failed_user", "FAILED", 3, {0}, {}, {}, "failed", "user"},
      {"failed_benign_xid", "FAILED", 3, {0}, {Xid(0, Before(5), 13)}, {}, "failed", "user"},
      {"failed_memory_full_signal", "FAILED", {}, {0}, {MemoryFull(0, Before(9), Before(1))}, {}, "failed", "gpu_oom"},
      {"failed_unknown_state", "SPECIAL_EXIT", 1, {0}, {}, {}, "failed", "unknown"},
      {"process_job_fault", "ENDED", {}, {0}, {Xid(0, Before(5), 79)}, {}, "failed", "gpu_fault"},
      // the window: 300 s before the end .. 15 s after
      {"fault_just_inside_window", "FAILED", 1, {0}, {Xid(0, Before(299), 79)}, {}, "failed", "gpu_fault"},
      {"fault_just_outside_window", "FAILED", 1, {0}, {Xid(0, Before(301), 79)}, {}, "failed", "user"},
      {"fault_just_after_end", "FAILED", 1, {0}, {Xid(0, Before(-14), 79)}, {}, "failed", "gpu_fault"},
      {"fault_too_late", "FAILED", 1, {0}, {Xid(0, Before(-16), 79)}, {}, "failed", "user"},
      {"memory_spell_reaching_into_window", "FAILED", 1, {0}, {MemoryFull(0, Before(900), Before(299))}, {}, "failed", "gpu_oom"},
      {"memory_spell_ended_before_window", "FAILED", 1, {0}, {MemoryFull(0, Before(900), Before(301))}, {}, "failed", "user"},
      // several GPUs, and other GPUs' trouble
      {"fault_on_second_gpu", "FAILED", 1, {1, 3}, {Xid(3, Before(4), 79)}, {}, "failed", "gpu_fault"},
      {"fault_on_other_gpu", "FAILED", 1, {1, 3}, {Xid(2, Before(4), 79)}, {}, "failed", "user"},
      {"oom_on_other_gpu", "FAILED", 1, {1}, {MemoryFull(2, Before(4), Before(1))}, {}, "failed", "user"},
      // MIG units
      {"mig_sees_gpu_xid", "FAILED", 1, {mig03}, {Xid(0, Before(4), 79)}, {}, "failed", "gpu_fault"},
      {"mig_not_other_gpus_xid", "FAILED", 1, {mig13}, {Xid(0, Before(4), 79)}, {}, "failed", "user"},
      {"mig_own_memory", "FAILED", 1, {mig03}, {MemoryFull(mig03, Before(9), Before(1))}, {}, "failed", "gpu_oom"},
      {"mig_not_sibling_memory", "FAILED", 1, {mig03}, {MemoryFull(mig05, Before(9), Before(1))}, {}, "failed", "user"},
      {"whole_gpu_sees_instance_memory", "FAILED", 1, {0}, {MemoryFull(mig05, Before(9), Before(1))}, {}, "failed", "gpu_oom"},
      // cancelled
      {"cancelled_user", "CANCELLED", 0, {0}, {}, {}, "cancelled", "user"},
      {"cancelled_after_fault", "CANCELLED", 0, {0}, {Lost(0, Before(100))}, {}, "cancelled", "gpu_fault"},
      {"cancelled_memory_full_is_user", "CANCELLED", 0, {0}, {MemoryFull(0, Before(9), Before(1))}, {}, "cancelled", "user"},
      // timeout
      {"timeout", "TIMEOUT", 0, {0}, {}, {}, "timeout", "scheduler"},
      {"deadline", "DEADLINE", 0, {0}, {}, {}, "timeout", "scheduler"},
      {"timeout_after_fault", "TIMEOUT", 0, {0}, {Xid(0, Before(200), 79)}, {}, "timeout", "gpu_fault"},
      // out_of_memory (host memory)
      {"host_oom", "OUT_OF_MEMORY", 0, {0}, {}, {}, "out_of_memory", "user"},
      {"host_oom_with_device_memory_full", "OUT_OF_MEMORY", 1, {0}, {MemoryFull(0, Before(9), Before(1))}, {}, "out_of_memory", "gpu_oom"},
      {"host_oom_after_fault", "OUT_OF_MEMORY", 0, {0}, {Ecc(0, Before(9), 1)}, {}, "out_of_memory", "gpu_fault"},
      // node_fail
      {"node_fail", "NODE_FAIL", {}, {0}, {}, {}, "node_fail", "scheduler"},
      {"boot_fail", "BOOT_FAIL", {}, {0}, {}, {}, "node_fail", "scheduler"},
      {"node_fail_gpu_lost", "NODE_FAIL", {}, {0}, {Lost(0, Before(20))}, {}, "node_fail", "gpu_fault"},
      // preempted
      {"preempted", "PREEMPTED", 0, {0}, {}, {}, "preempted", "scheduler"},
      {"preempted_despite_fault", "PREEMPTED", 0, {0}, {Xid(0, Before(5), 79)}, {}, "preempted", "scheduler"},
      // reclaimed
      {"reclaimed", "CANCELLED", 0, {0}, {}, Reclaim(Before(2)), "reclaimed", "scheduler"},
      {"reclaimed_vanished", "VANISHED", {}, {0}, {}, Reclaim(Before(2)), "reclaimed", "scheduler"},
      {"process_job_reclaimed", "ENDED", {}, {0}, {}, Reclaim(Before(2)), "reclaimed", "scheduler"},
      {"reclaim_of_an_earlier_run", "CANCELLED", 0, {0}, {}, Reclaim(static_cast<double>(kStart) - 100), "cancelled", "user"},
      // vanished
      {"vanished", "VANISHED", {}, {0}, {}, {}, "vanished", "unknown"},
      {"vanished_gpu_lost", "VANISHED", {}, {0}, {Lost(0, Before(20))}, {}, "vanished", "gpu_fault"},
  };
  // clang-format on
}

class Classify : public ::testing::TestWithParam<Case> {};

TEST_P(Classify, OutcomeAndCause) {
  const Case& c = GetParam();
  OutcomeInput in = Job(c.state, c.exit_code, c.units);
  in.events = c.events;
  in.reclaim = c.reclaim;
  const JobOutcomeRecord r = ClassifyOutcome(in);
  EXPECT_EQ(r.outcome, c.outcome) << r.summary;
  EXPECT_EQ(r.cause, c.cause) << r.summary;
  EXPECT_FALSE(r.summary.empty());
  EXPECT_EQ(r.summary.back(), '.') << r.summary;
  // The scheduler's word is always among the evidence, at the end; the evidence is in time order.
  int states = 0;
  for (const JobOutcomeEvidence& e : r.evidence) {
    if (e.kind != "state") continue;
    ++states;
    EXPECT_EQ(e.time, kEnd);
    EXPECT_EQ(e.detail, "Final state " + c.state + ".");
  }
  EXPECT_EQ(states, 1);
  for (size_t i = 1; i < r.evidence.size(); ++i)
    EXPECT_LE(r.evidence[i - 1].time, r.evidence[i].time);
  bool device = false;
  for (const JobOutcomeEvidence& e : r.evidence)
    device = device || e.kind == "xid" || e.kind == "ecc_uncorrected" || e.kind == "gpu_lost" ||
             e.kind == "memory_full";
  if (c.cause == "gpu_fault" || c.cause == "gpu_oom") {
    EXPECT_TRUE(device) << r.summary;
  }
  if (c.cause == "user") {
    EXPECT_FALSE(device && c.outcome != "cancelled") << r.summary;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryCombination, Classify, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& param) {
                           return param.param.name;
                         });

TEST(ClassifyOutcome, CoversEveryOutcomeAndCause) {
  std::set<std::string> outcomes, causes;
  for (const Case& c : Cases()) {
    outcomes.insert(c.outcome);
    causes.insert(c.cause);
  }
  EXPECT_EQ(outcomes,
            (std::set<std::string>{"completed", "failed", "cancelled", "timeout", "out_of_memory",
                                   "node_fail", "preempted", "reclaimed", "vanished"}));
  EXPECT_EQ(causes, (std::set<std::string>{"none", "gpu_fault", "gpu_oom", "user", "scheduler",
                                           "unknown"}));
}

TEST(ClassifyOutcome, SummaryNamesTheFaultItsGpuAndWhen) {
  OutcomeInput in = Job("FAILED", 1, {1, 3});
  in.end_time = 1700003712;  // 23:15:12 UTC
  in.events = {Xid(3, 1700003708, 79), Lost(3, 1700003709), Xid(1, 1700003000, 79)};
  const JobOutcomeRecord r = ClassifyOutcome(in);
  EXPECT_EQ(r.summary,
            "Failed with exit code 1: XID 79 (GPU has fallen off the bus) on GPU 3 at 23:15:08 "
            "UTC, 4 s before the job ended (and 1 more GPU fault event).");
  // Evidence: the XID and the loss (time order), the exit code, the state; not the old XID on
  // GPU 1 (outside the window).
  ASSERT_EQ(r.evidence.size(), 4u);
  EXPECT_EQ(r.evidence[0].kind, "xid");
  EXPECT_EQ(r.evidence[0].gpu, 3u);
  EXPECT_EQ(r.evidence[0].value, 79);
  EXPECT_EQ(r.evidence[0].time, 1700003708);
  EXPECT_EQ(r.evidence[1].kind, "gpu_lost");
  EXPECT_EQ(r.evidence[2].kind, "exit_code");
  EXPECT_EQ(r.evidence[2].value, 1);
  EXPECT_EQ(r.evidence[3].kind, "state");
  EXPECT_EQ(r.evidence[3].detail, "Final state FAILED.");
}

TEST(ClassifyOutcome, OomSummaryAndMigEvidenceGpu) {
  OutcomeInput in = Job("FAILED", 1, {MigUnit(2, 3)});
  in.events = {MemoryFull(MigUnit(2, 3), Before(30), Before(-5), 0.991)};
  const JobOutcomeRecord r = ClassifyOutcome(in);
  EXPECT_EQ(r.cause, "gpu_oom");
  // Reported when last seen full, clipped at the end.
  EXPECT_NE(r.summary.find("device memory full (99 % used) on GPU 2/3 at " + OutcomeClock(kEnd) +
                           ", as the job ended"),
            std::string::npos)
      << r.summary;
  ASSERT_GE(r.evidence.size(), 1u);
  EXPECT_EQ(r.evidence[0].kind, "memory_full");
  EXPECT_EQ(r.evidence[0].gpu, 2u);  // the NVML index of the instance's GPU
  EXPECT_NEAR(r.evidence[0].value, 0.991, 1e-9);
}

TEST(ClassifyOutcome, WindowIsASettingAndClippedAtTheStart) {
  OutcomeInput in = Job("FAILED", 1, {0});
  in.events = {Xid(0, Before(500), 79)};
  OutcomeOptions options;
  EXPECT_EQ(ClassifyOutcome(in, options).cause, "user");
  options.window_s = 600;
  EXPECT_EQ(ClassifyOutcome(in, options).cause, "gpu_fault");
  EXPECT_NE(ClassifyOutcome(in, options).summary.find("500 s before the job ended"),
            std::string::npos);
  // A fault before the job started is not its evidence, whatever the window.
  in.start_time = kEnd - 100;
  EXPECT_EQ(ClassifyOutcome(in, options).cause, "user");
  EXPECT_NE(ClassifyOutcome(in, options).summary.find("in its last 10 min"), std::string::npos);
}

TEST(ClassifyOutcome, ReclaimedAndUserSummaries) {
  OutcomeInput in = Job("CANCELLED", 0, {0});
  EXPECT_EQ(ClassifyOutcome(in).summary,
            "Cancelled by a user or an administrator; no GPU fault on its GPUs in its last 5 min.");
  in.reclaim = Reclaim(1700003598);
  const JobOutcomeRecord r = ClassifyOutcome(in);
  EXPECT_EQ(r.summary,
            "Reclaimed by our idle-GPU policy gpu/idle (cancel) at 23:13:18 UTC: idle for 2h.");
  bool reclaim = false;
  for (const JobOutcomeEvidence& e : r.evidence) reclaim = reclaim || e.kind == "reclaim";
  EXPECT_TRUE(reclaim);
  in.state = "FAILED";
  in.exit_code = 3;
  in.reclaim.reset();
  EXPECT_EQ(ClassifyOutcome(in).summary,
            "Failed with exit code 3: no GPU fault or full device memory on its GPUs in its last "
            "5 min.");
}

TEST(ClassifyOutcome, EvidenceIsBoundedFatalFirst) {
  OutcomeInput in = Job("FAILED", 1, {0});
  for (int i = 0; i < 30; ++i) in.events.push_back(MemoryFull(0, Before(200 - i), Before(199 - i)));
  in.events.push_back(Xid(0, Before(1), 74));
  OutcomeOptions options;
  options.max_evidence = 6;
  const JobOutcomeRecord r = ClassifyOutcome(in, options);
  EXPECT_EQ(r.cause, "gpu_fault");
  ASSERT_EQ(r.evidence.size(), 5u);  // 3 device items + exit code + state
  bool xid = false;
  for (const JobOutcomeEvidence& e : r.evidence) xid = xid || (e.kind == "xid" && e.value == 74);
  EXPECT_TRUE(xid);
}

TEST(FatalXids, ListedWithMeanings) {
  for (unsigned code : {48u, 63u, 64u, 74u, 79u, 92u, 94u, 95u})
    EXPECT_FALSE(FatalXidMeaning(code).empty()) << code;
  for (unsigned code : {13u, 31u, 43u, 45u}) EXPECT_TRUE(FatalXidMeaning(code).empty()) << code;
  for (const XidMeaning& x : FatalXids()) EXPECT_FALSE(x.meaning.empty());
  EXPECT_EQ(FatalXidMeaning(79), "GPU has fallen off the bus");
}

// The ring, fed as the agent feeds it: one reading per unit and cycle.
TEST(DeviceEventLog, CountersFromTheSecondReadingOnXidsByCode) {
  DeviceEventLog log;
  std::vector<std::pair<unsigned, std::uint64_t>> xids = {{13, 2}, {79, 1}};
  DeviceReading r{.unit = 0, .time_s = 100, .ecc_uncorrected_total = 5, .xid_counts = xids};
  log.Observe(r);  // baseline: old counts are no events
  const unsigned gpu0[] = {0};
  EXPECT_TRUE(log.Collect(gpu0, 0, 1e12).empty());
  xids = {{13, 2}, {48, 1}, {79, 3}};
  r.time_s = 101;
  r.xid_counts = xids;
  r.ecc_uncorrected_total = 7;
  log.Observe(r);
  std::vector<DeviceEvent> events = log.Collect(gpu0, 0, 1e12);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].kind, DeviceEventKind::kEccUncorrected);
  EXPECT_EQ(events[0].value, 2);
  EXPECT_EQ(events[1].kind, DeviceEventKind::kXid);
  EXPECT_EQ(events[1].value, 48);
  EXPECT_EQ(events[1].count, 1u);
  EXPECT_EQ(events[2].value, 79);
  EXPECT_EQ(events[2].count, 2u);
  EXPECT_EQ(events[2].time_s, 101);
  // A counter going backwards (driver reload) is a new baseline, not an event.
  r.time_s = 102;
  r.ecc_uncorrected_total = 0;
  xids = {{79, 1}};
  r.xid_counts = xids;
  log.Observe(r);
  EXPECT_EQ(log.Collect(gpu0, 0, 1e12).size(), 3u);
  // Another GPU's events are not GPU 0's.
  DeviceReading other{.unit = 1, .time_s = 103, .lost = true};
  log.Observe(other);
  EXPECT_EQ(log.Collect(gpu0, 0, 1e12).size(), 3u);
  const unsigned gpu1[] = {1};
  EXPECT_EQ(log.Collect(gpu1, 0, 1e12).size(), 1u);
}

TEST(DeviceEventLog, SpellsAreOneEventEachUntilTheyEnd) {
  DeviceEventLog log;
  const unsigned gpu2[] = {2};
  for (int t = 0; t < 10; ++t)
    log.Observe({.unit = 2, .time_s = 100.0 + t, .memory_used_ratio = t < 6 ? 0.99 : 0.5});
  for (int t = 10; t < 13; ++t)
    log.Observe({.unit = 2, .time_s = 100.0 + t, .memory_used_ratio = 1});
  std::vector<DeviceEvent> events = log.Collect(gpu2, 0, 1e12);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind, DeviceEventKind::kMemoryFull);
  EXPECT_EQ(events[0].time_s, 100);
  EXPECT_EQ(events[0].until_s, 105);
  EXPECT_EQ(events[1].time_s, 110);
  EXPECT_EQ(events[1].until_s, 112);
  EXPECT_EQ(events[1].value, 1);
  // A window ending before the second spell sees only the first; one starting after the first
  // spell ended sees only the second.
  EXPECT_EQ(log.Collect(gpu2, 0, 109).size(), 1u);
  EXPECT_EQ(log.Collect(gpu2, 106, 1e12).size(), 1u);
  // Lost: one event from the first sight, lasting while it stays lost (no memory reading then).
  for (int t = 20; t < 25; ++t) log.Observe({.unit = 2, .time_s = 100.0 + t, .lost = true});
  events = log.Collect(gpu2, 119, 1e12);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, DeviceEventKind::kGpuLost);
  EXPECT_EQ(events[0].time_s, 120);
  EXPECT_EQ(events[0].until_s, 124);
}

TEST(DeviceEventLog, RingKeepsTheNewestAndMigMatching) {
  DeviceEventLog log(DeviceEventLogOptions{.per_unit = 4});
  std::vector<std::pair<unsigned, std::uint64_t>> xids;
  for (int i = 0; i <= 6; ++i) {
    xids = {{74, static_cast<std::uint64_t>(i)}};
    log.Observe({.unit = 0, .time_s = 100.0 + i, .xid_counts = xids});
  }
  const unsigned gpu0[] = {0};
  std::vector<DeviceEvent> events = log.Collect(gpu0, 0, 1e12);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events.front().time_s, 103);
  EXPECT_EQ(events.back().time_s, 106);
  // A MIG instance of GPU 0 sees GPU 0's XIDs; one of GPU 1 does not.
  const unsigned mig03[] = {MigUnit(0, 3)}, mig13[] = {MigUnit(1, 3)};
  EXPECT_EQ(log.Collect(mig03, 0, 1e12).size(), 4u);
  EXPECT_TRUE(log.Collect(mig13, 0, 1e12).empty());
  log.Observe({.unit = MigUnit(0, 5), .time_s = 200, .memory_used_ratio = 0.97});
  EXPECT_EQ(log.Collect(gpu0, 150, 1e12).size(), 1u);  // the whole GPU sees its instances
  EXPECT_TRUE(log.Collect(mig03, 150, 1e12).empty());  // a sibling instance does not
}

}  // namespace
}  // namespace gw::jobs
