// The local view over a collection of the test's own (no NVML, no agent, nothing of cli/): it
// starts the collection and waits for the first cycle, moves a stepped clock by the refresh
// interval on each read after the first, names the job and team of the process holding a GPU, and
// the poller builds frames from it.
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "test_frames.h"
#include "top/poller.h"
#include "top/sources.h"

namespace gw::top {
namespace {

// What the fake was told to answer, and what LocalSource asked of it.
struct FakeState {
  Status start;
  bool first_cycle = true;
  std::shared_ptr<const collect::Snapshot> snapshot = TestSnapshot();
  std::vector<double> advanced;  // seconds, one entry per Advance call
  bool destroyed = false;
};

class FakeCollection : public Collection {
 public:
  explicit FakeCollection(FakeState* state) : state_(state) {}
  ~FakeCollection() override { state_->destroyed = true; }

  Status Start() override { return state_->start; }
  bool WaitForFirstCycle(double) override { return state_->first_cycle; }
  Status Advance(double seconds, double) override {
    state_->advanced.push_back(seconds);
    return Status();
  }
  std::shared_ptr<const collect::Snapshot> Latest() override { return state_->snapshot; }

 private:
  FakeState* state_;
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

LocalSource MakeSource(FakeState* state, LocalSettings settings = {}) {
  return LocalSource(std::make_unique<FakeCollection>(state), std::move(settings));
}

TEST(TopLocalSource, StartFailsWithTheReasonOfTheCollection) {
  FakeState state;
  state.start = Status(Error{"libnvidia-ml.so.1: cannot open shared object file"});
  LocalSource source = MakeSource(&state);
  Status s = source.Start(0);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "libnvidia-ml.so.1: cannot open shared object file");

  FakeState silent;
  silent.first_cycle = false;
  LocalSource waiting = MakeSource(&silent);
  Status late = waiting.Start(0);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.message(), "no collection cycle completed within 60 s");
}

TEST(TopLocalSource, SteppedClockMovesByTheRefreshOnEachReadAfterTheFirst) {
  FakeState state;
  LocalSettings settings;
  settings.scenario = "power-cap";
  settings.stepped = true;
  settings.step_s = 2;
  {
    LocalSource source = MakeSource(&state, settings);
    EXPECT_EQ(source.Describe(), "simulated 'power-cap' (stepped clock)");
    ASSERT_TRUE(source.Start(90).ok());
    EXPECT_EQ(state.advanced, std::vector<double>({90}));
    for (int i = 0; i < 3; ++i) {
      auto reading = source.Read();
      ASSERT_TRUE(reading.ok()) << reading.error().message;
      EXPECT_EQ(reading->snapshot, state.snapshot);
    }
    EXPECT_EQ(state.advanced, std::vector<double>({90, 2, 2}));
    EXPECT_FALSE(state.destroyed);
  }
  EXPECT_TRUE(state.destroyed);  // the source owns its collection
}

TEST(TopLocalSource, RealTimeNeverAdvancesAndHasNoAlerts) {
  FakeState state;
  LocalSettings settings;
  settings.step_s = 1;
  LocalSource source = MakeSource(&state, settings);
  EXPECT_EQ(source.Describe(), "local NVML");
  ASSERT_TRUE(source.Start(90).ok());
  ASSERT_TRUE(source.Read().ok());
  auto reading = source.Read();
  ASSERT_TRUE(reading.ok());
  EXPECT_TRUE(state.advanced.empty());
  EXPECT_TRUE(reading->alerts.empty());
  EXPECT_NE(reading->alerts_note.find("--url"), std::string::npos);
}

// A real process stands behind GPU 1: its GPUWARDEN_JOB names the job, and its user the team
// through the teams settings.
TEST(TopLocalSource, NamesTheJobAndTeamOfTheProcessHoldingAGpu) {
  passwd* me = getpwuid(getuid());
  ASSERT_NE(me, nullptr);
  const std::string user = me->pw_name;

  std::string job_env = "GPUWARDEN_JOB=train-7";
  std::vector<char*> env = {job_env.data(), nullptr};
  std::string program = "sleep", seconds = "30";
  std::vector<char*> argv = {program.data(), seconds.data(), nullptr};
  pid_t child = -1;
  ASSERT_EQ(posix_spawnp(&child, "sleep", nullptr, nullptr, argv.data(), env.data()), 0);
  // posix_spawn may return while the kernel is still setting up the new program's environment:
  // wait until /proc shows it (the attributor caches what it read first).
  const std::string environ_path = "/proc/" + std::to_string(child) + "/environ";
  for (int i = 0; i < 500 && ReadAll(environ_path).find(job_env) == std::string::npos; ++i)
    usleep(10000);

  auto snap = TestSnapshot();
  for (collect::GpuSnapshot& g : snap->gpus) g.processes.clear();
  snap->gpus[1].processes = {{static_cast<unsigned>(child), 30.0 * (1 << 30), collect::kAbsent}};
  FakeState state;
  state.snapshot = snap;
  LocalSettings settings;
  settings.teams.users[user] = "vision";
  LocalSource source = MakeSource(&state, settings);
  ASSERT_TRUE(source.Start(0).ok());
  auto reading = source.Read();
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);

  ASSERT_TRUE(reading.ok()) << reading.error().message;
  ASSERT_EQ(reading->holders.size(), 1u);
  const GpuHolder& holder = reading->holders.at(1);
  EXPECT_EQ(holder.job, "train-7");
  EXPECT_EQ(holder.team, "vision");
  EXPECT_EQ(holder.user, user);
}

TEST(TopLocalSource, ThePollerBuildsFramesFromIt) {
  FakeState state;
  LocalSource source = MakeSource(&state);
  ASSERT_TRUE(source.Start(0).ok());
  Poller poller(&source, 1);
  std::shared_ptr<const Frame> frame = poller.PollNow();
  ASSERT_NE(frame, nullptr);
  EXPECT_EQ(frame, poller.Latest());
  EXPECT_TRUE(frame->error.empty()) << frame->error;
  EXPECT_EQ(frame->source, "local NVML");
  EXPECT_EQ(frame->driver_version, "550.127.08");
  ASSERT_EQ(frame->gpus.size(), state.snapshot->gpus.size());
  EXPECT_EQ(frame->gpus[1].throttle, "power cap");
}

}  // namespace
}  // namespace gw::top
