// The simulated training run (sim/training/run.h), the state-file words it reads (xid,
// nvlink_down, lost), and gw-training-sim end to end against state files a StateWriter publishes.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <regex>

#include "sim/state_file.h"
#include "sim/training/run.h"
#include "support/http_client.h"
#include "support/process.h"

namespace gw::sim {
namespace {

GpuState Gpu(double clock_ratio, std::uint64_t virtual_ms = 0) {
  GpuState s;
  s.virtual_ms = virtual_ms;
  s.max_sm_clock_mhz = 1980;
  s.sm_clock_mhz = static_cast<std::uint64_t>(1980 * clock_ratio);
  s.memory_total_bytes = 81'559ULL << 20;
  s.memory_reserved_bytes = 579ULL << 20;
  s.memory_used_bytes = 10'000ULL << 20;
  s.alive = true;
  return s;
}

TrainingProfile Profile() {
  TrainingProfile p;
  p.samples_per_s_per_gpu = 400;
  p.batch_per_gpu = 32;
  p.comm_share = 0.2;
  return p;
}

TEST(TrainingRunTest, FullClockRunsAtTheProfileRateOnEveryGpu) {
  TrainingRun run(Profile(), {"0", "1", "2", "3"});
  std::vector<GpuState> gpus(4, Gpu(1.0));
  run.AdvanceTo(0, gpus);
  run.AdvanceTo(60'000, gpus);
  EXPECT_DOUBLE_EQ(run.rate(), 1600);
  EXPECT_NEAR(run.units(), 96'000, 1e-6);
  EXPECT_EQ(run.status(), TrainingStatus::kRunning);
}

TEST(TrainingRunTest, TheSlowestGpuSetsThePace) {
  TrainingRun run(Profile(), {"0", "1", "2", "3"});
  std::vector<GpuState> gpus(4, Gpu(1.0));
  gpus[3] = Gpu(0.5);  // power-capped to half its clock
  gpus[1] = Gpu(0.8);
  std::size_t slowest = 9;
  double ratio = 0;
  const double rate = run.RateFor(gpus, &slowest, &ratio);
  EXPECT_EQ(slowest, 3u);
  EXPECT_DOUBLE_EQ(ratio, 0.5);
  // step at full speed 0.08 s: compute 0.064 s / 0.5 + all-reduce 0.016 s = 0.144 s
  EXPECT_NEAR(rate, 4 * 32 / 0.144, 1e-9);
  // One slow GPU costs as much as all four slow.
  EXPECT_DOUBLE_EQ(rate, run.RateFor(std::vector<GpuState>(4, Gpu(0.5))));
}

TEST(TrainingRunTest, ANvLinkDownSlowsTheAllReduceOnly) {
  TrainingRun run(Profile(), {"0", "1"});
  std::vector<GpuState> gpus(2, Gpu(1.0));
  gpus[0].nvlink_down = 2;
  // compute 0.064 s + all-reduce 0.016 s x 4
  EXPECT_NEAR(run.RateFor(gpus), 2 * 32 / (0.064 + 0.064), 1e-9);
  // A single GPU has nothing to all-reduce.
  TrainingRun single(Profile(), {"0"});
  EXPECT_DOUBLE_EQ(single.RateFor({gpus[0]}), 400);
}

TEST(TrainingRunTest, TokensAndStepsCountTheSameProgress) {
  TrainingProfile tokens = Profile();
  tokens.unit = TrainingUnit::kTokens;
  tokens.tokens_per_sample = 1000;
  TrainingProfile steps = Profile();
  steps.unit = TrainingUnit::kSteps;
  std::vector<GpuState> gpus(2, Gpu(0.7));
  const double samples = TrainingRun(Profile(), {"0", "1"}).RateFor(gpus);
  EXPECT_DOUBLE_EQ(TrainingRun(tokens, {"0", "1"}).RateFor(gpus), samples * 1000);
  EXPECT_DOUBLE_EQ(TrainingRun(steps, {"0", "1"}).RateFor(gpus), samples / 64);
  TrainingUnit unit;
  EXPECT_TRUE(ParseTrainingUnit("tokens", &unit));
  EXPECT_EQ(unit, TrainingUnit::kTokens);
  EXPECT_FALSE(ParseTrainingUnit("images", &unit));
}

TEST(TrainingRunTest, ProgressDoesNotDependOnHowOftenItIsStepped) {
  TrainingRun once(Profile(), {"0", "1"}), often(Profile(), {"0", "1"});
  const std::vector<GpuState> gpus(2, Gpu(0.65));
  once.AdvanceTo(1'000, gpus);
  once.AdvanceTo(31'000, gpus);
  often.AdvanceTo(1'000, gpus);
  for (std::uint64_t t = 1'100; t <= 31'000; t += 100) often.AdvanceTo(t, gpus);
  EXPECT_NEAR(once.units(), often.units(), 1e-6);
  EXPECT_GT(once.units(), 0);
}

TEST(TrainingRunTest, CompletesAfterItsUnitsOrItsDuration) {
  TrainingProfile p = Profile();
  p.stop_after_units = 10'000;
  TrainingRun run(p, {"0"});
  run.AdvanceTo(0, {Gpu(1)});
  run.AdvanceTo(20'000, {Gpu(1)});
  EXPECT_EQ(run.status(), TrainingStatus::kRunning);  // 8000 of 10000
  run.AdvanceTo(30'000, {Gpu(1)});
  EXPECT_EQ(run.status(), TrainingStatus::kCompleted);
  EXPECT_DOUBLE_EQ(run.units(), 10'000);
  EXPECT_DOUBLE_EQ(run.elapsed_s(), 25) << "it got there at 25 s, 400 samples/s";
  run.AdvanceTo(90'000, {Gpu(1)});
  EXPECT_DOUBLE_EQ(run.units(), 10'000) << "an ended run does not count on";

  TrainingProfile timed = Profile();
  timed.stop_after_s = 5;
  TrainingRun t(timed, {"0"});
  t.AdvanceTo(0, {Gpu(1)});
  t.AdvanceTo(4'900, {Gpu(1)});
  EXPECT_EQ(t.status(), TrainingStatus::kRunning);
  t.AdvanceTo(8'000, {Gpu(1)});
  EXPECT_EQ(t.status(), TrainingStatus::kCompleted);
  EXPECT_DOUBLE_EQ(t.elapsed_s(), 5);
  EXPECT_NEAR(t.units(), 2'000, 1e-9);
}

TEST(TrainingRunTest, AFatalXidDuringTheRunFailsItNamingTheGpu) {
  TrainingRun run(Profile(), {"0", "GPU-bbbb"});
  std::vector<GpuState> gpus(2, Gpu(1));
  gpus[0].xid = 48;  // before the run started: history, not this run's
  run.AdvanceTo(0, gpus);
  run.AdvanceTo(10'000, gpus);
  EXPECT_EQ(run.status(), TrainingStatus::kRunning);
  gpus[1].xid = 74;  // NVLink error: not fatal
  run.AdvanceTo(20'000, gpus);
  EXPECT_EQ(run.status(), TrainingStatus::kRunning);
  gpus[1].xid = 48;
  run.AdvanceTo(30'000, gpus);
  EXPECT_EQ(run.status(), TrainingStatus::kFailed);
  EXPECT_EQ(run.failure(),
            "RuntimeError: CUDA error: uncorrectable ECC error encountered (Xid 48 on GPU "
            "GPU-bbbb)");
  EXPECT_NEAR(run.units(), 16'000, 1e-6) << "counted up to the last good state";
  EXPECT_EQ(run.rate(), 0);
}

TEST(TrainingRunTest, AGpuLostFailsTheRun) {
  TrainingRun run(Profile(), {"0", "1"});
  std::vector<GpuState> gpus(2, Gpu(1));
  run.AdvanceTo(0, gpus);
  gpus[0].lost = true;
  run.AdvanceTo(1'000, gpus);
  EXPECT_EQ(run.status(), TrainingStatus::kFailed);
  EXPECT_NE(run.failure().find("GPU is lost"), std::string::npos) << run.failure();
  EXPECT_NE(run.failure().find("Xid 79 on GPU 0"), std::string::npos) << run.failure();
}

TEST(TrainingRunTest, MemoryThatDoesNotFitIsCudaOutOfMemory) {
  std::vector<GpuState> gpus = {Gpu(1), Gpu(1)};
  gpus[1].memory_used_bytes = 60'000ULL << 20;  // 20 980 MiB free
  EXPECT_FALSE(MemoryShortfall(20'000, gpus, {"0", "1"}));
  const auto oom = MemoryShortfall(30'720, gpus, {"0", "1"});
  ASSERT_TRUE(oom);
  EXPECT_EQ(*oom,
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 30720 MiB. GPU 1 has a "
            "total capacity of 81559 MiB of which 20980 MiB is free.");
  EXPECT_FALSE(MemoryShortfall(1e6, {GpuState{}}, {"0"})) << "unknown memory fits";
}

TEST(TrainingRunTest, RendersTheCounterNamedForItsUnit) {
  TrainingProfile p = Profile();
  p.unit = TrainingUnit::kTokens;
  p.tokens_per_sample = 10;
  TrainingRun run(p, {"0", "1"});
  run.AdvanceTo(0, {Gpu(1), Gpu(0.5)});
  run.AdvanceTo(1'000, {Gpu(1), Gpu(0.5)});
  std::string text;
  run.Render(&text);
  EXPECT_NE(text.find("# TYPE training_tokens_total counter\ntraining_tokens_total 4444\n"),
            std::string::npos)
      << text;  // 2 x 32 x 10 tokens per 0.144 s step
  EXPECT_NE(text.find("training_gpus 2\n"), std::string::npos);
  EXPECT_NE(text.find("training_slowest_gpu_clock_ratio 0.5\n"), std::string::npos);
}

TEST(StateFileTest, XidNvLinkAndLostTravelInTheRecord) {
  gw::testing::TempDir dir;
  StateWriter writer(dir.path(), {"GPU-aaaa", "GPU-bbbb"});
  GpuState s = Gpu(0.9, 12'000);
  s.index = 1;
  s.xid = 48;
  s.nvlink_down = 3;
  writer.Publish(s);
  StateReader reader;
  ASSERT_TRUE(OpenGpuState(dir.path(), "GPU-bb", &reader));
  GpuState read;
  ASSERT_TRUE(reader.Read(&read));
  EXPECT_EQ(read.index, 1u);
  EXPECT_EQ(read.xid, 48u);
  EXPECT_EQ(read.nvlink_down, 3u);
  EXPECT_FALSE(read.lost);
  writer.PublishLost(1, 15'000);
  ASSERT_TRUE(reader.Read(&read));
  EXPECT_TRUE(read.lost);
  EXPECT_EQ(read.xid, 79u);
  EXPECT_EQ(read.virtual_ms, 15'000u);
  EXPECT_EQ(read.sm_clock_mhz, s.sm_clock_mhz) << "the rest of the record stays";
  EXPECT_FALSE(OpenGpuState(dir.path(), "GPU-cc", &reader));
  EXPECT_TRUE(OpenGpuState(dir.path(), "0", &reader));
}

// gw-training-sim against state files this test publishes as the simulator would.
class TrainingSimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    writer_ = std::make_unique<StateWriter>(dir_ / "state",
                                            std::vector<std::string>{"GPU-aaaa", "GPU-bbbb"});
  }
  void Publish(unsigned index, GpuState s) {
    s.index = index;
    writer_->Publish(s);
  }
  std::unique_ptr<gw::testing::Process> Start(std::vector<std::string> flags) {
    std::vector<std::string> argv = {"env", "-u", "GPUWARDEN_SIM_WORKLOAD",
                                     "GPUWARDEN_SIM_STATE_DIR=" + dir_ / "state",
                                     std::string(GW_BINARY_DIR) + "/bin/gw-training-sim"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    return std::make_unique<gw::testing::Process>(argv, dir_ / "sim.log");
  }
  // The counter's value on /metrics at `port`; -1 when unreadable.
  static double Counter(int port, const std::string& name = "training_samples_total") {
    const auto res = gw::testing::HttpGet(port, "/metrics");
    std::smatch m;
    if (res.status != 200 || !std::regex_search(res.body, m, std::regex("\n" + name + " (\\S+)")))
      return -1;
    return std::stod(m[1]);
  }

  gw::testing::TempDir dir_;
  std::unique_ptr<StateWriter> writer_;
};

TEST_F(TrainingSimTest, CountsAtTheRateItsSlowestGpuAllows) {
  const int port = gw::testing::FreePort();
  Publish(0, Gpu(1, 1'000));
  Publish(1, Gpu(1, 1'000));
  auto sim = Start({"--gpus", "0,1", "--listen", "127.0.0.1:" + std::to_string(port), "--rate",
                    "100", "--batch", "10", "--comm-share", "0"});
  ASSERT_TRUE(gw::testing::WaitFor([&] { return Counter(port) >= 0; }, 20)) << sim->Output();
  // Ten virtual seconds at full clock: 2 GPUs x 100 samples/s.
  Publish(0, Gpu(1, 11'000));
  Publish(1, Gpu(1, 11'000));
  ASSERT_TRUE(gw::testing::WaitFor([&] { return Counter(port) >= 2'000; }, 10));
  EXPECT_EQ(Counter(port), 2'000);
  // GPU 1 at 40 % clock for ten more: 2 x 40 samples/s.
  Publish(1, Gpu(0.4, 11'000));
  Publish(0, Gpu(1, 21'000));
  Publish(1, Gpu(0.4, 21'000));
  ASSERT_TRUE(gw::testing::WaitFor([&] { return Counter(port) >= 2'800; }, 10));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(Counter(port), 2'800);
  EXPECT_TRUE(sim->Running());
  // The environment it declared for the simulator and gpuwarden.
  const std::string environ =
      gw::testing::ReadFile("/proc/" + std::to_string(sim->pid()) + "/environ");
  // `env` exec'd the simulator in place, which re-executed itself: same pid.
  EXPECT_NE(environ.find(std::string("GPUWARDEN_METRICS_PORT=") + std::to_string(port) + '\0'),
            std::string::npos);
  EXPECT_NE(environ.find(std::string("GPUWARDEN_SIM_WORKLOAD=training") + '\0'), std::string::npos);
  EXPECT_NE(environ.find(std::string("GPUWARDEN_SIM_MEMORY_MIB=30720") + '\0'), std::string::npos);
  const int status = sim->Stop();
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
}

TEST_F(TrainingSimTest, CompletesWithExitZero) {
  Publish(0, Gpu(1, 0));
  auto sim = Start({"--gpus", "0", "--total", "500", "--rate", "100", "--batch", "10"});
  ASSERT_TRUE(gw::testing::WaitFor(
      [&] { return sim->Output().find("training on") != std::string::npos; }, 20))
      << sim->Output();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE(sim->Running()) << "virtual time has not moved";
  Publish(0, Gpu(1, 6'000));
  EXPECT_EQ(sim->Wait(20), 0) << sim->Output();
  EXPECT_NE(sim->Output().find("training complete: 500 samples in 5 s"), std::string::npos)
      << sim->Output();
}

TEST_F(TrainingSimTest, OutOfMemoryWhenItsMemoryDoesNotFit) {
  GpuState full = Gpu(1, 0);
  full.memory_used_bytes = 70'000ULL << 20;
  Publish(0, Gpu(1, 0));
  Publish(1, full);
  auto sim = Start({"--gpus", "0,1", "--memory-mib", "20000"});
  EXPECT_EQ(sim->Wait(20), 1);
  EXPECT_NE(sim->Output().find("CUDA out of memory"), std::string::npos) << sim->Output();
  EXPECT_NE(sim->Output().find("GPU 1 has a total capacity"), std::string::npos);
  auto fits = Start({"--gpus", "0,1", "--memory-mib", "8000"});
  ASSERT_TRUE(gw::testing::WaitFor(
      [&] { return fits->Output().find("training on") != std::string::npos; }, 20))
      << fits->Output();
  EXPECT_TRUE(fits->Running());
}

TEST_F(TrainingSimTest, DiesOnAnXidOnOneOfItsGpus) {
  Publish(0, Gpu(1, 1'000));
  Publish(1, Gpu(1, 1'000));
  auto sim = Start({"--gpus", "GPU-aaaa,GPU-bbbb"});
  ASSERT_TRUE(gw::testing::WaitFor(
      [&] { return sim->Output().find("training on") != std::string::npos; }, 20))
      << sim->Output();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  GpuState dbe = Gpu(1, 2'000);
  dbe.xid = 48;
  Publish(1, dbe);
  EXPECT_EQ(sim->Wait(20), 1);
  EXPECT_NE(sim->Output().find(
                "CUDA error: uncorrectable ECC error encountered (Xid 48 on GPU GPU-bbbb)"),
            std::string::npos)
      << sim->Output();
}

TEST_F(TrainingSimTest, RefusesBadFlags) {
  for (std::vector<std::string> flags : {std::vector<std::string>{"--unit", "images"},
                                         {"--rate", "-3"},
                                         {"--total"},
                                         {"--comm-share", "2"}}) {
    auto sim = Start(flags);
    EXPECT_EQ(sim->Wait(20), 2) << flags[0];
    EXPECT_NE(sim->Output().find("usage: gw-training-sim"), std::string::npos);
  }
}

}  // namespace
}  // namespace gw::sim
