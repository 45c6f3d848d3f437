// The trailing-window peaks (collect/peak_window.h, docs/metrics.md "Peaks over a window"): the
// queue against a brute-force maximum, what scrapers at any phase and interval up to the window
// see of single spikes, and the collector over the simulator's one-spike scenario.
#include "collect/peak_window.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "collect/exposition.h"
#include "support/sim_fixture.h"

namespace gw::collect {
namespace {

TEST(PeakWindow, OffWithoutAWindowAndAbsentInAbsentOut) {
  PeakWindow off(0, 1);
  EXPECT_FALSE(off.enabled());
  EXPECT_TRUE(std::isnan(off.Add(1, 5)));
  PeakWindow w(15, 1);
  EXPECT_TRUE(w.enabled());
  EXPECT_DOUBLE_EQ(w.span_s(), 16.5);
  EXPECT_EQ(w.Add(1, 5), 5);
  EXPECT_TRUE(std::isnan(w.Add(2, std::nan(""))));  // absent now: no window value either
  EXPECT_EQ(w.Add(3, 1), 5);                        // ... but the peak before it is kept
}

TEST(PeakWindow, ASpikeStaysForTheWindowPlusACycleAndAHalf) {
  PeakWindow w(15, 1);
  for (int t = 0; t <= 20; ++t) EXPECT_EQ(w.Add(t, 0.2), 0.2) << t;
  EXPECT_EQ(w.Add(21, 1.0), 1.0);
  // The entry of 21 s leaves once it is 16.5 s old or older: seen up to 37 s, gone at 38 s.
  for (int t = 22; t <= 37; ++t) EXPECT_EQ(w.Add(t, 0.2), 1.0) << t;
  EXPECT_EQ(w.Add(38, 0.2), 0.2);
}

TEST(PeakWindow, EqualsTheMaximumOverTheSpanOnRandomInput) {
  std::mt19937 rng(18);
  std::uniform_real_distribution<double> value(0, 100), late(0, 0.02);
  PeakWindow w(10, 1);
  std::vector<std::pair<double, double>> all;
  for (int k = 0; k < 5000; ++k) {
    const double t = k + late(rng), v = std::floor(value(rng));
    all.push_back({t, v});
    double want = -1;
    for (const auto& [ti, vi] : all)
      if (ti > t - w.span_s()) want = std::max(want, vi);
    ASSERT_EQ(w.Add(t, v), want) << "cycle " << k;
    ASSERT_LE(w.size(), 13u);  // ceil(11.5) + 2: never more than it was sized for
  }
}

// Every scraper whose interval is at most the window sees every single spike, whatever its phase,
// however many scrapers read, with cycles that read their clock up to 50 ms late and publish up
// to 0.9 s after that (the reads take time): a spike in one cycle, scrapers at 400 phases of each
// interval. Without the window's extra cycle a scraper whose scrape falls between a cycle's clock
// reading and its publication misses the spike (checked below with a window of exactly 15 s).
TEST(PeakWindow, EveryScraperUpToTheWindowSeesEverySpike) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> late(0, 0.05), publish(0, 0.9);
  const double window = 15;
  int scrapers = 0;
  for (int spike_at = 40; spike_at < 43; ++spike_at) {
    for (int draw = 0; draw < 5; ++draw) {
      PeakWindow w(window, 1);
      std::vector<double> cycle_t, shown;  // cycle_t: when the snapshot is published
      for (int k = 0; k < 100; ++k) {
        const double clock = k + late(rng);
        cycle_t.push_back(clock + publish(rng));
        shown.push_back(w.Add(clock, k == spike_at ? 1000 : 0));
      }
      for (double interval : {5.0, 10.0, 14.0, 15.0}) {
        for (int j = 0; j < 400; ++j, ++scrapers) {
          // A scraper reads the snapshot published last before its scrape time.
          bool seen = false;
          for (double s = interval * j / 400; s < 99; s += interval) {
            size_t i = 0;
            while (i + 1 < cycle_t.size() && cycle_t[i + 1] <= s) ++i;
            seen |= cycle_t[i] <= s && shown[i] == 1000;
          }
          ASSERT_TRUE(seen) << "a " << interval << " s scraper at phase " << interval * j / 400
                            << " missed the spike of cycle " << spike_at << ", draw " << draw;
        }
      }
    }
  }
  EXPECT_EQ(scrapers, 3 * 5 * 4 * 400);
}

// The same with a window of exactly the scrape interval (what the extra cycle is for): the spike
// cycle publishes late (0.8 s after its clock; the others 0.1 s), a scrape in between sees the
// snapshot before it, and the next scrape 15 s later sees a window that has just let it go.
TEST(PeakWindow, AWindowOfExactlyTheScrapeIntervalMissesSomeSpikes) {
  // PeakWindow(window, interval) covers window + 1.5 intervals: ask for 15 s - 1.5 s.
  PeakWindow w(13.5, 1);
  ASSERT_DOUBLE_EQ(w.span_s(), 15);
  std::vector<double> published, shown;
  for (int k = 0; k < 100; ++k) {
    published.push_back(k + (k == 40 ? 0.8 : 0.1));
    shown.push_back(w.Add(k, k == 40 ? 1000 : 0));
  }
  bool seen = false;
  for (double s = 40.5; s < 99; s += 15) {  // 40.5: after cycle 40 began, before it published
    size_t i = 0;
    while (i + 1 < published.size() && published[i + 1] <= s) ++i;
    seen |= shown[i] == 1000;
  }
  EXPECT_FALSE(seen);
}

// A longer scrape interval than the window misses spikes: the reason for the setting.
TEST(PeakWindow, AScraperSlowerThanTheWindowMissesSpikes) {
  PeakWindow w(15, 1);
  std::vector<double> shown;
  for (int k = 0; k < 600; ++k) shown.push_back(w.Add(k, k % 37 == 5 ? 1000 + k : 0));
  int seen = 0;
  for (int s = 0; s < 600; s += 60) seen += shown[s] > 0;
  EXPECT_LT(seen, 17);  // 17 spikes in the run; a 60 s scraper reads 10 times
}

TEST(PeakWindow, TimeGoingBackStartsAfreshAndCyclesTooCloseNeverLoseAPeak) {
  PeakWindow w(5, 1);
  EXPECT_EQ(w.Add(100, 9), 9);
  EXPECT_EQ(w.Add(50, 1), 1);  // clock went back: the old peak is forgotten
  // Cycles every 10 ms into a window sized for 1 s cycles: the peak holds for at least its span.
  PeakWindow dense(2, 1);
  EXPECT_EQ(dense.Add(0, 50), 50);
  double t = 0;
  for (int k = 1; k <= 300; ++k) {
    t = k * 0.01;
    ASSERT_EQ(dense.Add(t, 50 - k * 0.1), 50) << t;  // strictly falling: every entry kept
  }
  EXPECT_LE(dense.size(), 6u);
}

TEST(PeakWindow, RenderedAsItsOwnFamiliesNextToThePerCycleOnes) {
  Snapshot snap;
  snap.gpus.resize(2);
  for (unsigned i = 0; i < 2; ++i) {
    GpuSnapshot& g = snap.gpus[i];
    g.values.fill(kAbsent);
    g.identity.index = i;
    g.identity.uuid = "GPU-" + std::to_string(i);
    g.identity.label_text =
        "gpu=\"" + std::to_string(i) + "\",uuid=\"GPU-" + std::to_string(i) + "\"";
    g.values[static_cast<size_t>(Slot::kUp)] = 1;
    g.values[static_cast<size_t>(Slot::kMemoryUsedPeak)] = 6.5e10;
  }
  snap.gpus[0].peak_window[3] = 83886080000;  // GPU 1's window is absent (off, or no peak)
  std::string text;
  Render(snap, Format::kText, RenderOptions{}, ProcessFigures{}, &text);
  EXPECT_NE(text.find("# TYPE gpu_memory_used_peak_window_bytes gauge\n"
                      "gpu_memory_used_peak_window_bytes{gpu=\"0\",uuid=\"GPU-0\"} 83886080000\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("gpu_memory_used_peak_window_bytes{gpu=\"1\""), std::string::npos);
  EXPECT_EQ(text.find("gpu_utilization_peak_window_ratio"), std::string::npos);  // none at all
  EXPECT_NE(text.find("gpu_memory_used_peak_bytes{gpu=\"1\",uuid=\"GPU-1\"} 6.5e+10"),
            std::string::npos);
}

// The collector over scenarios/one-spike.yaml (docs/scenarios.md): one 300 ms spike at 20.3 s on
// GPU 2, between two whole-second reads. The cycle ending at 21 s has it in its per-cycle peaks;
// the window peaks hold it until the cycle of 37 s and let it go at 38 s; the 1 s gauges never
// show it.
TEST(PeakWindowCollector, OneSpikeIsHeldForTheWindowAndTheGaugesNeverSeeIt) {
  CollectorOptions o;
  o.fast_interval_s = 1;
  o.slow_interval_s = 10;
  o.memory_peak_interval_s = 0.25;
  o.peak_window_s = 15;
  gw::testing::SimCollector sim("one-spike", o);
  ASSERT_TRUE(sim.ok());
  constexpr double kMiB = 1048576;
  auto gpu2 = [&] { return sim.Latest()->gpus.at(2); };
  auto window = [](const GpuSnapshot& g, Slot s) {
    for (size_t k = 0; k < kPeakWindowCount; ++k)
      if (kPeakWindows[k].first == s) return g.peak_window[k];
    return kAbsent;
  };
  sim.Advance(20);
  GpuSnapshot g = gpu2();
  EXPECT_LT(window(g, Slot::kUtilizationPeak), 0.3);
  EXPECT_EQ(window(g, Slot::kMemoryUsedPeak), 62000 * kMiB);
  double max_util = 0, max_used = 0;
  for (int t = 21; t <= 40; ++t) {
    sim.Advance(1);
    g = gpu2();
    max_util = std::max(max_util, g.value(Slot::kUtilization));
    max_used = std::max(max_used, g.value(Slot::kMemoryUsed));
    const bool held = t <= 37;
    EXPECT_EQ(window(g, Slot::kUtilizationPeak) == 1.0, held) << "t=" << t;
    EXPECT_EQ(window(g, Slot::kMemoryUsedPeak) == 80000 * kMiB, held) << "t=" << t;
    EXPECT_EQ(window(g, Slot::kMemoryUtilizationPeak) >= 0.95, held) << "t=" << t;
    EXPECT_EQ(g.value(Slot::kUtilizationPeak) == 1.0, t == 21) << "t=" << t;
    EXPECT_EQ(g.value(Slot::kMemoryUsedPeak) == 80000 * kMiB, t == 21) << "t=" << t;
    // The window never shows less than the cycle's own peak.
    EXPECT_GE(window(g, Slot::kPowerPeak), g.value(Slot::kPowerPeak)) << "t=" << t;
  }
  EXPECT_LT(max_util, 0.3);
  EXPECT_EQ(max_used, 62000 * kMiB);
  // The other GPUs' windows follow their own steady peaks.
  const GpuSnapshot& g0 = sim.Latest()->gpus.at(0);
  EXPECT_EQ(window(g0, Slot::kMemoryUsedPeak), 40000 * kMiB);
}

TEST(PeakWindowCollector, ZeroTurnsTheFamiliesOff) {
  CollectorOptions o;
  o.memory_peak_interval_s = 0.25;
  o.peak_window_s = 0;
  gw::testing::SimCollector sim("one-spike", o);
  ASSERT_TRUE(sim.ok());
  sim.Advance(3);
  for (const GpuSnapshot& g : sim.Latest()->gpus) {
    EXPECT_FALSE(IsAbsent(g.value(Slot::kUtilizationPeak)));
    for (double v : g.peak_window) EXPECT_TRUE(IsAbsent(v));
  }
  std::string text;
  Render(*sim.Latest(), Format::kText, RenderOptions{}, ProcessFigures{}, &text);
  EXPECT_EQ(text.find("_peak_window_"), std::string::npos);
}

}  // namespace
}  // namespace gw::collect
