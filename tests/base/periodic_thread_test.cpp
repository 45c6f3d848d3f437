// PeriodicThread (base/periodic_thread.h): the first run is immediate, runs repeat at the
// interval, Stop interrupts the wait (no full interval), Start twice starts one thread, and Stop
// lets a run in progress finish. GlobMatch (base/glob.h) on the cases configuration uses.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "base/glob.h"
#include "base/periodic_thread.h"

namespace gw {
namespace {

template <typename Pred>
bool WaitUntil(Pred pred) {
  for (int i = 0; i < 5000; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return pred();
}

TEST(PeriodicThread, RunsAtOnceThenRepeatsAndStopsWithoutWaitingTheInterval) {
  std::atomic<int> runs{0};
  PeriodicThread thread;
  thread.Start(0.001, [&] { ++runs; });
  EXPECT_TRUE(WaitUntil([&] { return runs.load() >= 3; }));
  thread.Stop();
  const int after_stop = runs.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(runs.load(), after_stop);

  // An hour's interval: one run, and Stop still returns (it wakes the wait).
  std::atomic<int> slow{0};
  PeriodicThread hourly;
  hourly.Start(3600, [&] { ++slow; });
  hourly.Start(3600, [&] { slow += 100; });  // already running: ignored
  EXPECT_TRUE(WaitUntil([&] { return slow.load() >= 1; }));
  hourly.Stop();
  EXPECT_EQ(slow.load(), 1);
  hourly.Stop();  // idempotent
}

TEST(PeriodicThread, StopLetsTheRunInProgressFinish) {
  std::atomic<bool> inside{false}, finished{false};
  PeriodicThread thread;
  thread.Start(3600, [&] {
    inside = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    finished = true;
  });
  ASSERT_TRUE(WaitUntil([&] { return inside.load(); }));
  thread.Stop();
  EXPECT_TRUE(finished.load());
}

TEST(Glob, StarQuestionAndLiterals) {
  EXPECT_TRUE(GlobMatch("nvidia.com/mig-*", "nvidia.com/mig-3g.40gb"));
  EXPECT_TRUE(GlobMatch("*", ""));
  EXPECT_TRUE(GlobMatch("a*b*c", "aXXbYYc"));
  EXPECT_TRUE(GlobMatch("notebook-?", "notebook-1"));
  EXPECT_FALSE(GlobMatch("notebook-?", "notebook-12"));
  EXPECT_FALSE(GlobMatch("nvidia.com/gpu", "nvidia.com/gpu.shared"));
  EXPECT_FALSE(GlobMatch("A*", "a"));  // case-sensitive
  EXPECT_TRUE(GlobMatch("*a*a*a*a*b", std::string(60, 'a') + "b"));
  EXPECT_FALSE(GlobMatch("*a*a*a*a*b", std::string(60, 'a')));
}

}  // namespace
}  // namespace gw
