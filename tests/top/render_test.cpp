// The frame renderer on fixed snapshots: layout at several widths, decoding, problem
// highlighting, screen mode, scrolling, sorting, and no allocation once warmed up.
#include "top/render.h"

#include <gtest/gtest.h>

#include <sstream>

#include "alloc_count.h"
#include "datacenter_snapshot.h"
#include "test_frames.h"
#include "top/terminal.h"

namespace gw::top {
namespace {

std::vector<std::string> Lines(const std::string& text, const std::string& separator = "\n") {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t end = text.find(separator, start);
    out.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + separator.size();
  }
  return out;
}

// Visible columns: escape sequences (ESC [ ... letter) take none, a UTF-8 sequence one.
int Columns(const std::string& line) {
  int cols = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b') {
      ++i;
      if (i < line.size() && line[i] == '[') {
        while (i + 1 < line.size() && !std::isalpha(static_cast<unsigned char>(line[i + 1]))) ++i;
        ++i;
      }
      continue;
    }
    if ((static_cast<unsigned char>(line[i]) & 0xC0) != 0x80) ++cols;
  }
  return cols;
}

// `text` without its escape sequences (what a person reads on the screen).
std::string Visible(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\x1b' && i + 1 < text.size() && text[i + 1] == '[') {
      i += 2;
      while (i < text.size() && !std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
      continue;
    }
    out.push_back(text[i]);
  }
  return out;
}

std::string LineWith(const std::string& text, const std::string& needle,
                     const std::string& separator = "\n") {
  for (const std::string& l : Lines(text, separator))
    if (l.find(needle) != std::string::npos) return l;
  return "";
}

class TopRender : public ::testing::Test {
 protected:
  std::shared_ptr<const Frame> Build(unsigned extra = 0) {
    FrameBuilder builder("test");
    return builder.Build(TestReading(extra));
  }
  FrameRenderer renderer_;
};

TEST_F(TopRender, PlainFrameFitsEveryWidthAndHasNoEscapes) {
  auto frame = Build();
  for (int width : {40, 60, 80, 100, 132, 200}) {
    RenderOptions o;
    o.width = width;
    const std::string text = renderer_.Render(*frame, ViewState{}, o);
    SCOPED_TRACE("width " + std::to_string(width));
    EXPECT_EQ(text.find('\x1b'), std::string::npos);
    for (const std::string& l : Lines(text)) EXPECT_LE(Columns(l), width) << l;
    for (unsigned char c : text) EXPECT_LT(c, 0x80) << "plain output is ASCII";
    EXPECT_NE(text.find("GPU 3"), std::string::npos);
  }
}

TEST_F(TopRender, BarsShareALineWhenThereIsRoom) {
  auto frame = Build();
  auto bars_with_util = [&](int width) {
    RenderOptions o;
    o.width = width;
    return LineWith(renderer_.Render(*frame, ViewState{}, o), "util [");
  };
  const std::string wide = bars_with_util(132);
  EXPECT_NE(wide.find("temp ["), std::string::npos) << wide;
  const std::string medium = bars_with_util(80);
  EXPECT_NE(medium.find("mem  ["), std::string::npos) << medium;
  EXPECT_EQ(medium.find("temp ["), std::string::npos) << medium;
  const std::string narrow = bars_with_util(40);
  EXPECT_EQ(narrow.find("mem  ["), std::string::npos) << narrow;
}

TEST_F(TopRender, DecodesThrottleEccXidJobAndAlerts) {
  auto frame = Build();
  RenderOptions o;
  o.width = 160;
  const std::string text = renderer_.Render(*frame, ViewState{}, o);
  // GPU 1: power cap, held by a job.
  EXPECT_NE(LineWith(text, "GPU 1 ").find("job train-7  team vision  user alice"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("throttle: power cap"), std::string::npos) << text;
  EXPECT_NE(text.find("298/300W"), std::string::npos) << text;
  // GPU 2: lost, with its XID.
  EXPECT_NE(LineWith(text, "GPU 2 ").find("LOST: fell off the bus"), std::string::npos) << text;
  EXPECT_NE(text.find("XIDs: 79x1"), std::string::npos) << text;
  // GPU 3: ECC counts, XID 48, thermal throttling, temperature against its own slowdown.
  EXPECT_NE(text.find("ecc: 5 corr 2 uncorr"), std::string::npos) << text;
  EXPECT_NE(text.find("xid: 48x1"), std::string::npos) << text;
  EXPECT_NE(text.find("SW thermal slowdown"), std::string::npos) << text;
  EXPECT_NE(text.find("88/89C"), std::string::npos) << text;
  // Problems with what to do, and the alerts.
  EXPECT_NE(text.find("GPU 3 [critical] 2 uncorrectable ECC error(s)"), std::string::npos) << text;
  EXPECT_NE(text.find("GPU 2 [critical] GPU is lost"), std::string::npos) << text;
  EXPECT_NE(text.find("Alerts: 1 firing, 1 pending"), std::string::npos) << text;
  EXPECT_NE(LineWith(text, "GpuFellOffBus").find("FIRING  critical"), std::string::npos) << text;
  EXPECT_NE(LineWith(text, "GpuFellOffBus").find("fell off the bus (XID 79)"), std::string::npos);
  EXPECT_NE(LineWith(text, "GpuTemperatureNearSlowdown").find("pending"), std::string::npos);
  // GPU 0 is healthy and idle of problems.
  const std::string gpu0 =
      text.substr(text.find("GPU 0 "), text.find("GPU 1 ") - text.find("GPU 0 "));
  EXPECT_NE(gpu0.find("throttle: none  ecc: 0 corr 0 uncorr  xid: none"), std::string::npos)
      << gpu0;
}

TEST_F(TopRender, ProblemsStandOut) {
  auto frame = Build();
  RenderOptions o;
  o.width = 120;
  const std::string plain = renderer_.Render(*frame, ViewState{}, o);
  EXPECT_EQ(LineWith(plain, "GPU 2 ").substr(0, 4), " !!G") << plain;  // lost: critical
  EXPECT_EQ(LineWith(plain, "GPU 3 ").substr(0, 4), " !!G");           // uncorrectable ECC
  EXPECT_EQ(LineWith(plain, "GPU 0 ").substr(0, 4), "   G");           // healthy
  // On screen: critical lines red, the hot GPU's temperature bar red (88 of 89 C).
  o.height = 60;
  o.screen = true;
  const std::string screen = renderer_.Render(*frame, ViewState{}, o);
  EXPECT_EQ(LineWith(screen, "GPU 2 ", "\r\n").rfind("\x1b[1;31m", 0), 0u) << screen;
  const std::string gpu3 = screen.substr(screen.find("GPU 3 "));
  const std::string temp = gpu3.substr(gpu3.find("temp ["), 20);
  EXPECT_NE(temp.find("\x1b[1;31m|"), std::string::npos) << temp;
  const std::string gpu0 = screen.substr(screen.find("GPU 0 "));
  EXPECT_NE(gpu0.substr(gpu0.find("temp ["), 20).find("\x1b[32m|"), std::string::npos);
}

TEST_F(TopRender, ScreenIsExactlyTheTerminalsSize) {
  auto frame = Build();
  for (auto [w, h] : {std::pair{80, 24}, std::pair{132, 43}, std::pair{40, 10}}) {
    SCOPED_TRACE(std::to_string(w) + "x" + std::to_string(h));
    RenderOptions o{w, h, true};
    ViewState view;
    view.selected_gpu = 1;
    const std::string text = renderer_.Render(*frame, view, o);
    ASSERT_EQ(text.rfind("\x1b[H", 0), 0u);
    std::vector<std::string> lines = Lines(text.substr(3), "\r\n");
    EXPECT_EQ(static_cast<int>(lines.size()), h);
    for (const std::string& l : lines) EXPECT_LE(Columns(l), w) << l;
    EXPECT_NE(lines.back().find("q quit"), std::string::npos) << lines.back();
    EXPECT_EQ(text.find('\n', 0) == std::string::npos || text.find("\r\n") != std::string::npos,
              true);
  }
  // Tall enough: the selected GPU's title carries the marker, its detail lists its process.
  RenderOptions o{120, 50, true};
  ViewState view;
  view.selected_gpu = 1;
  const std::string text = renderer_.Render(*frame, view, o);
  EXPECT_NE(LineWith(text, "GPU 1 NVIDIA", "\r\n").find(">"), std::string::npos) << text;
  EXPECT_EQ(LineWith(text, "GPU 0 NVIDIA", "\r\n").find(">"), std::string::npos);
  EXPECT_NE(LineWith(text, "4242", "\r\n").find("python3 train.py --epochs 90"), std::string::npos)
      << text;
  EXPECT_NE(text.find("sort: index"), std::string::npos);
}

TEST_F(TopRender, ScrollsToTheSelectedGpu) {
  auto frame = Build(12);  // 16 GPUs
  RenderOptions o{100, 24, true};
  ViewState view;
  view.selected_gpu = 15;
  const std::string text = renderer_.Render(*frame, view, o);
  EXPECT_NE(LineWith(text, "GPU 15 ", "\r\n").find(">"), std::string::npos) << text;
  EXPECT_EQ(text.find("GPU 0 "), std::string::npos);  // scrolled past
  EXPECT_NE(Visible(text).find("above (j/k)"), std::string::npos) << text;
  view.selected_gpu = 0;
  const std::string top = renderer_.Render(*frame, view, o);
  EXPECT_NE(top.find("GPU 0 "), std::string::npos);
  EXPECT_EQ(top.find("GPU 15 "), std::string::npos);
  EXPECT_NE(Visible(top).find("more (j/k)"), std::string::npos) << top;
}

TEST_F(TopRender, SortsByTheChosenKey) {
  auto frame = Build();
  auto first = [&](SortKey key) { return frame->gpus[renderer_.Order(*frame, key)[0]].index; };
  EXPECT_EQ(first(SortKey::kIndex), 0u);
  EXPECT_EQ(first(SortKey::kUtilization), 0u);  // 95 %
  EXPECT_EQ(first(SortKey::kTemperature), 3u);  // 88 C
  EXPECT_EQ(first(SortKey::kProblems), 2u);     // lost beats everything
  const std::vector<size_t>& by_power = renderer_.Order(*frame, SortKey::kPower);
  EXPECT_EQ(frame->gpus[by_power.back()].index, 2u);  // no reading sorts last
  SortKey k = SortKey::kIndex;
  for (int i = 0; i < 6; ++i) k = NextSort(k);
  EXPECT_EQ(k, SortKey::kIndex);
}

TEST_F(TopRender, SparklineFollowsTheHistory) {
  FrameBuilder builder("test");
  std::shared_ptr<const Frame> frame;
  for (double util : {0.0, 0.5, 1.0}) {
    Reading r = TestReading();
    auto snap = std::make_shared<collect::Snapshot>(*r.snapshot);
    snap->gpus[0].values[static_cast<size_t>(collect::Slot::kUtilization)] = util;
    r.snapshot = snap;
    frame = builder.Build(r);
  }
  const GpuView& g = frame->gpus[0];
  ASSERT_EQ(g.history_count, 3u);
  EXPECT_FLOAT_EQ(g.history[kHistoryLength - 1], 1.0f);
  EXPECT_FLOAT_EQ(g.history[kHistoryLength - 3], 0.0f);
  RenderOptions o;
  o.width = 120;
  const std::string line = LineWith(renderer_.Render(*frame, ViewState{}, o), "procs:");
  EXPECT_NE(line.find("_-#"), std::string::npos) << line;  // low, middle, full; newest right
  o.height = 40;
  o.screen = true;
  EXPECT_NE(renderer_.Render(*frame, ViewState{}, o).find("▁▄█"), std::string::npos);
}

TEST_F(TopRender, AFailedReadKeepsTheDataAndSaysWhy) {
  FrameBuilder builder("http://node1:9966");
  builder.Build(TestReading());
  auto failed = builder.Failed("http://node1:9966/api/snapshot: connection refused");
  EXPECT_EQ(failed->gpus.size(), 4u);
  RenderOptions o;
  const std::string text = renderer_.Render(*failed, ViewState{}, o);
  EXPECT_NE(text.find("! http://node1:9966/api/snapshot: connection refused"), std::string::npos);
  Reading local = TestReading();
  local.alerts.clear();
  local.alerts_note = "alerts are evaluated by a running agent";
  const std::string note = renderer_.Render(*builder.Build(local), ViewState{}, o);
  EXPECT_NE(note.find("Alerts: alerts are evaluated by a running agent"), std::string::npos);
}

TEST_F(TopRender, HeaderShowsTheQueueOfARemoteAgent) {
  FrameBuilder builder("http://node1:9966");
  RenderOptions o;
  o.width = 160;
  Reading r = TestReading();
  EXPECT_EQ(renderer_.Render(*builder.Build(r), ViewState{}, o).find("queued"), std::string::npos);
  r.queue = QueueSummary{true, true, 3, 3723};
  std::string header = Lines(renderer_.Render(*builder.Build(r), ViewState{}, o))[0];
  EXPECT_NE(header.find(" | queued 3, longest wait 1h 02m"), std::string::npos) << header;
  EXPECT_EQ(header.find("not answering"), std::string::npos) << header;
  r.queue = QueueSummary{true, false, 1, 90061};
  header = Lines(renderer_.Render(*builder.Build(r), ViewState{}, o))[0];
  EXPECT_NE(header.find(" | queued 1, longest wait 1d 1h (Slurm not answering)"), std::string::npos)
      << header;
  r.queue = QueueSummary{true, true, 0, 0};
  header = Lines(renderer_.Render(*builder.Build(r), ViewState{}, o))[0];
  EXPECT_NE(header.find(" | queued 0, longest wait -"), std::string::npos) << header;
}

// Services of a remote agent: one line each under the header, or why there is no figure; on
// screen at most kMaxServiceLines and how many more.
std::vector<ServiceView> TestServices() {
  ServiceView llm{"llm", "request", "EUR", true, true, 0.012847222222222223, 80, 1800};
  ServiceView embed{"embed", "token", "EUR", true, false, collect::kAbsent, collect::kAbsent, 1800};
  ServiceView web{"web", "page", "EUR", true, true, collect::kAbsent, 0, 1800};
  ServiceView batch{"batch", "", "EUR", false, false, collect::kAbsent, collect::kAbsent, 0};
  ServiceView tts{"tts", "clips", "EUR", true, true, 1.5, 2.3, 3600};
  return {llm, embed, web, batch, tts};
}

TEST_F(TopRender, ServicesGetOneLineEachUnderTheHeader) {
  FrameBuilder builder("http://node1:9966");
  Reading r = TestReading();
  EXPECT_EQ(renderer_.Render(*builder.Build(r), ViewState{}, RenderOptions{}).find("service "),
            std::string::npos);
  r.services = TestServices();
  auto frame = builder.Build(r);
  RenderOptions o;
  o.width = 120;
  const std::vector<std::string> lines = Lines(renderer_.Render(*frame, ViewState{}, o));
  ASSERT_GE(lines.size(), 6u);
  EXPECT_EQ(lines[1], "  service llm: 0.01285 EUR per 1k requests, 80.0 requests/s (last 30m 00s)");
  EXPECT_EQ(lines[2], "  service embed: no cost per output (outputs not counted yet)");
  EXPECT_EQ(lines[3],
            "  service web: no cost per output (no pages in the last 30m 00s), 0.0 pages/s");
  EXPECT_EQ(lines[4], "  service batch: no cost per output (no GPUs configured)");
  EXPECT_EQ(lines[5], "  service tts: 1.5 EUR per 1k clips, 2.3 clips/s (last 1h 00m)");

  // On screen: three, then the count of the rest; the screen keeps its size.
  RenderOptions s{120, 40, true};
  const std::string screen = renderer_.Render(*frame, ViewState{}, s);
  const std::vector<std::string> rows = Lines(screen.substr(3), "\r\n");
  EXPECT_EQ(rows.size(), 40u);
  EXPECT_NE(rows[1].find("service \x1b[1mllm"), std::string::npos) << rows[1];
  EXPECT_NE(rows[3].find("service \x1b[1mweb"), std::string::npos) << rows[3];
  EXPECT_NE(rows[4].find("... 2 more services"), std::string::npos) << rows[4];
  EXPECT_EQ(screen.find("tts"), std::string::npos);
  for (auto [w, h] : {std::pair{40, 10}, std::pair{80, 24}}) {
    RenderOptions small{w, h, true};
    const std::string text = renderer_.Render(*frame, ViewState{}, small);
    const std::vector<std::string> all = Lines(text.substr(3), "\r\n");
    EXPECT_EQ(static_cast<int>(all.size()), h);
    for (const std::string& l : all) EXPECT_LE(Columns(l), w) << l;
    EXPECT_NE(all.back().find("q quit"), std::string::npos) << all.back();
  }
}

TEST_F(TopRender, SteadyStateRenderingDoesNotAllocate) {
  Reading reading = TestReading(12);
  reading.services = TestServices();
  auto frame = FrameBuilder("test").Build(reading);
  for (bool screen : {false, true}) {
    RenderOptions o{132, screen ? 50 : 0, screen};
    ViewState view;
    view.selected_gpu = 3;
    renderer_.Render(*frame, view, o);  // buffers grow to the frame's size
    StartCountingAllocations();
    for (int i = 0; i < 3; ++i) renderer_.Render(*frame, view, o);
    EXPECT_EQ(StopCountingAllocations(), 0) << (screen ? "screen" : "plain");
  }
}

// Datacenter GPUs (datacenter_snapshot.h): profiling, MIG instances and NVLink, at the two
// terminal sizes top is drawn for (80x24 and 160x50) and in plain text.
class TopRenderDatacenter : public TopRender {
 protected:
  std::shared_ptr<const Frame> BuildDatacenter() {
    Reading r;
    r.snapshot = DatacenterSnapshot();
    return FrameBuilder("test").Build(r);
  }
  std::string Plain(const Frame& frame, int width) {
    RenderOptions o;
    o.width = width;
    return renderer_.Render(frame, ViewState{}, o);
  }
  // The full screen of `w` x `h` with GPU `selected` selected, checked to be exactly that size
  // with the key line last.
  std::string Screen(const Frame& frame, unsigned selected, int w, int h) {
    ViewState view;
    view.selected_gpu = selected;
    const std::string screen = renderer_.Render(frame, view, RenderOptions{w, h, true});
    std::vector<std::string> lines = Lines(screen.substr(3), "\r\n");
    EXPECT_EQ(static_cast<int>(lines.size()), h);
    for (const std::string& l : lines) EXPECT_LE(Columns(l), w) << l;
    EXPECT_NE(lines.back().find("q quit"), std::string::npos) << lines.back();
    return screen;
  }
  // GPU `index`'s block in plain text: from its title to the next GPU's (or the end).
  static std::string Block(const std::string& text, unsigned index) {
    const size_t from = text.find("GPU " + std::to_string(index) + " NVIDIA");
    const size_t to = text.find("GPU " + std::to_string(index + 1) + " NVIDIA");
    if (from == std::string::npos) return "";
    return text.substr(from, to == std::string::npos ? std::string::npos : to - from);
  }
};

TEST_F(TopRenderDatacenter, SmActiveIsAFifthBarAt160ColumnsAndFollowsUtilizationAt80) {
  auto frame = BuildDatacenter();
  const std::string wide = Plain(*frame, 160);
  const std::string hgx = LineWith(Block(wide, 1), "util [");
  EXPECT_NE(hgx.find("temp ["), std::string::npos) << hgx;
  EXPECT_NE(hgx.find("sm   ["), std::string::npos) << hgx;
  EXPECT_NE(hgx.find("]   4%"), std::string::npos) << hgx;
  EXPECT_LE(Columns(hgx), 160);
  // No GPM on the A100: no SM bar and no SM figure (absent, never 0); its bars line up with the
  // others' all the same.
  const std::string a100 = Block(wide, 2);
  EXPECT_EQ(a100.find("sm "), std::string::npos) << a100;
  EXPECT_NE(LineWith(a100, "util [").find("temp ["), std::string::npos) << a100;
  EXPECT_EQ(LineWith(a100, "util [").find("temp ["), hgx.find("temp [")) << wide;
  // A frame without any GPM keeps four wider bars.
  Reading old;
  old.snapshot = TestSnapshot();
  const std::string plain = Plain(*FrameBuilder("test").Build(old), 160);
  EXPECT_EQ(plain.find("sm "), std::string::npos) << plain;
  EXPECT_GT(LineWith(plain, "util [").find("temp ["), hgx.find("temp [")) << plain;

  const std::string narrow = Plain(*frame, 80);
  const std::string util = LineWith(Block(narrow, 1), "util [");
  EXPECT_NE(util.find(" 99% sm  4% "), std::string::npos) << util;
  EXPECT_EQ(Block(narrow, 1).find("sm   ["), std::string::npos) << narrow;
  EXPECT_EQ(Block(narrow, 2).find(" sm"), std::string::npos) << narrow;
  for (int width : {40, 80, 120, 149, 150, 160, 200}) {
    for (const std::string& l : Lines(Plain(*frame, width)))
      EXPECT_LE(Columns(l), width) << width << ": " << l;
  }
}

TEST_F(TopRenderDatacenter, MigInstancesAreIndentedRowsUnderTheirGpu) {
  auto frame = BuildDatacenter();
  for (int width : {80, 160}) {
    SCOPED_TRACE(width);
    const std::string text = Plain(*frame, width);
    const std::string gpu0 = Block(text, 0);
    EXPECT_NE(LineWith(gpu0, "GPU 0 ").find("MIG 3 inst (off after reset)"), std::string::npos)
        << gpu0;
    const std::string big = LineWith(gpu0, "mig 1 ");
    EXPECT_EQ(big.rfind("       mig 1", 0), 0u) << big;
    EXPECT_NE(big.find("3g.40gb"), std::string::npos) << big;
    EXPECT_NE(big.find("mem 20.0/39.5G"), std::string::npos) << big;
    EXPECT_NE(big.find("sm  83%"), std::string::npos) << big;
    EXPECT_NE(big.find("procs 2"), std::string::npos) << big;
    // The UUID in full where it fits; plain text wraps it rather than cut it.
    EXPECT_NE(gpu0.find(width >= 160 ? "MIG-10000000-1111-5222-8333-444444444444" : "MIG-1000"),
              std::string::npos)
        << gpu0;
    // The 1g instance: its failed memory read and missing profiling values show as "-".
    const std::string small = LineWith(gpu0, "mig 13");
    EXPECT_NE(small.find("mem -/9.8G"), std::string::npos) << small;
    EXPECT_NE(small.find("sm   -"), std::string::npos) << small;
    // Rows follow the GPU's own lines, before the next GPU.
    EXPECT_LT(gpu0.find("throttle:"), gpu0.find("mig 1 "));
    EXPECT_EQ(Block(text, 1).find("mig "), std::string::npos);
  }
}

TEST_F(TopRenderDatacenter, NvLinkStateIsOnTheGpuLineAndTheDetailNamesDownLinks) {
  auto frame = BuildDatacenter();
  const std::string text = Plain(*frame, 160);
  EXPECT_NE(Block(text, 1).find("throttle: none  nvlink: 17/18 err 4099  ecc:"), std::string::npos)
      << text;
  EXPECT_EQ(Block(text, 0).find("nvlink"), std::string::npos);  // no NVLink: nothing said
  for (auto [w, h] : {std::pair{80, 24}, std::pair{160, 50}}) {
    SCOPED_TRACE(std::to_string(w) + "x" + std::to_string(h));
    const std::string screen = Screen(*frame, 1, w, h);
    std::string nvlink;  // the detail's line (the GPU's own line has "throttle: ... nvlink:")
    for (const std::string& l : Lines(Visible(screen), "\r\n"))
      if (l.rfind("  nvlink: ", 0) == 0) nvlink = l;
    EXPECT_NE(nvlink.find("17 of 18 links up, down: 3"), std::string::npos) << screen;
    if (w >= 160) {
      EXPECT_NE(nvlink.find("errors 4099"), std::string::npos) << nvlink;
      EXPECT_NE(nvlink.find("tx 120.0 GB/s, rx 118.0 GB/s"), std::string::npos) << nvlink;
    }
    // Busy but hollow: said in the detail, the SM figure yellow.
    EXPECT_NE(Visible(screen).find("busy but hollow: utilization 99% but SM active 4%"),
              std::string::npos)
        << screen;
    EXPECT_NE(LineWith(screen, "GPU 1 ", "\r\n").find(">"), std::string::npos);
    EXPECT_NE(screen.find(w >= kSmBarWidth ? "\x1b[33m  4%" : "\x1b[33m sm  4%"), std::string::npos)
        << screen;
  }
}

TEST_F(TopRenderDatacenter, FitsBothTerminalSizesWithTheMigGpuSelected) {
  auto frame = BuildDatacenter();
  for (auto [w, h] : {std::pair{80, 24}, std::pair{160, 50}}) {
    SCOPED_TRACE(std::to_string(w) + "x" + std::to_string(h));
    const std::string screen = Screen(*frame, 0, w, h);
    EXPECT_NE(screen.find("mig 13"), std::string::npos) << screen;
    EXPECT_NE(Visible(screen).find("MIG: on, 3 instance(s); off after the next GPU reset"),
              std::string::npos)
        << screen;
    EXPECT_NE(screen.find("profiling: SM active 41%, occupancy 22%, tensor 30%, DRAM 35%"),
              std::string::npos)
        << screen;
  }
  // A GPU without GPM has no profiling line.
  ViewState view;
  view.selected_gpu = 2;
  const std::string screen = renderer_.Render(*frame, view, RenderOptions{160, 50, true});
  EXPECT_EQ(screen.find("profiling:"), std::string::npos) << screen;
}

TEST_F(TopRenderDatacenter, SteadyStateRenderingDoesNotAllocate) {
  auto frame = BuildDatacenter();
  for (bool screen : {false, true}) {
    RenderOptions o{160, screen ? 50 : 0, screen};
    ViewState view;
    view.selected_gpu = 1;
    renderer_.Render(*frame, view, o);
    StartCountingAllocations();
    for (int i = 0; i < 3; ++i) renderer_.Render(*frame, view, o);
    EXPECT_EQ(StopCountingAllocations(), 0) << (screen ? "screen" : "plain");
  }
}

TEST(TopKeys, DecodesLettersAndArrows) {
  std::vector<Key> keys = DecodeKeys("jk\x1b[A\x1b[B\x1bOBqs?hxo/\x1b");
  std::vector<Key> want = {Key::kDown,        Key::kUp,     Key::kUp,    Key::kDown, Key::kDown,
                           Key::kQuit,        Key::kSort,   Key::kHelp,  Key::kHelp, Key::kOther,
                           Key::kProcessSort, Key::kFilter, Key::kEscape};
  EXPECT_EQ(keys, want);
}

// ---- issue 17: colours, alerts, the 80x24 layout, the header, processes, history ----------

// The screen line (escape codes kept) whose visible text starts with `prefix`.
std::string LineStarting(const std::string& screen, const std::string& prefix) {
  for (const std::string& l : Lines(screen, "\r\n"))
    if (Visible(l).rfind(prefix, 0) == 0) return l;
  return "";
}

// The bar of `label` ("mem  [") on the screen line that has it: the colour code its filling
// starts with.
std::string BarColour(const std::string& screen, const std::string& label) {
  const std::string line = LineWith(screen, label, "\r\n");
  const size_t at = line.find(label);
  if (at == std::string::npos) return "";
  const size_t code = at + label.size();
  const size_t end = line.find('m', code);
  return end == std::string::npos ? "" : line.substr(code, end - code + 1);
}

TEST_F(TopRender, TheMemoryBarTurnsYellowFrom80AndRedFrom95Percent) {
  for (auto [used_gib, colour] :
       {std::pair{40.0, "\x1b[32m"}, std::pair{68.0, "\x1b[33m"}, std::pair{79.2, "\x1b[1;31m"}}) {
    SCOPED_TRACE(used_gib);
    Reading r;
    auto snap = TestSnapshot();
    snap->gpus.resize(1);
    snap->gpus[0].values[static_cast<size_t>(collect::Slot::kMemoryUsed)] = used_gib * (1 << 30);
    r.snapshot = snap;
    auto frame = FrameBuilder("test").Build(r);
    // Blocks (120 columns) and one-line rows (80x24 with many GPUs use them) alike.
    const std::string wide = renderer_.Render(*frame, ViewState{}, RenderOptions{120, 40, true});
    EXPECT_EQ(BarColour(wide, "mem  ["), colour) << wide;
    for (int i = 0; i < 15; ++i) snap->gpus.push_back(TestGpu(1 + i, 0.5, 50));
    auto many = FrameBuilder("test").Build(r);
    const std::string narrow = renderer_.Render(*many, ViewState{}, RenderOptions{80, 24, true});
    EXPECT_EQ(BarColour(narrow, " mem ["), colour) << narrow;
    // The history panel's memory figure has the same colour.
    EXPECT_NE(LineStarting(wide, "  util ").find(std::string(colour) + " "), std::string::npos)
        << wide;
  }
}

TEST_F(TopRender, FiringAlertsMarkTheirGpuAndFillItsDetail) {
  Reading r = TestReading();
  // GPU 0 has no health problem; two alerts fire about it, one is only pending.
  r.alerts.push_back({"GpuMemoryNearlyFull", "warning", "firing", "0", "GPU 0 memory 99% used"});
  r.alerts.push_back({"GpuJobIdle", "critical", "firing", "0", "job holds GPU 0 and does nothing"});
  r.alerts.push_back({"GpuHot", "warning", "pending", "0", "GPU 0 warms up"});
  auto frame = FrameBuilder("test").Build(r);
  ASSERT_EQ(frame->gpus[0].firing_alerts.size(), 2u);
  ViewState view;  // GPU 0 selected
  const std::string screen = renderer_.Render(*frame, view, RenderOptions{120, 50, true});
  const std::string title = Visible(LineWith(screen, "GPU 0 NVIDIA", "\r\n"));
  EXPECT_EQ(title.rfind(">!!GPU 0", 0), 0u) << title;  // the worse alert: critical
  EXPECT_NE(title.find("2 alerts firing"), std::string::npos) << title;
  EXPECT_EQ(LineWith(screen, "GPU 0 NVIDIA", "\r\n").rfind("\x1b[1;31m", 0), 0u);
  const std::string visible = Visible(screen);
  EXPECT_EQ(visible.find("no problems found"), std::string::npos) << visible;
  EXPECT_NE(visible.find("  [FIRING warning] GpuMemoryNearlyFull: GPU 0 memory 99% used"),
            std::string::npos)
      << visible;
  EXPECT_NE(visible.find("  [FIRING critical] GpuJobIdle"), std::string::npos) << visible;
  EXPECT_EQ(visible.find("[FIRING warning] GpuHot"), std::string::npos) << visible;
  // Sorting by problems puts it right after the lost GPU.
  EXPECT_EQ(frame->gpus[renderer_.Order(*frame, SortKey::kProblems)[1]].index, 0u);
  // A one-line row says how many fire.
  Reading many = r;
  auto snap = TestSnapshot(12);
  many.snapshot = snap;
  auto big = FrameBuilder("test").Build(many);
  const std::string rows = Visible(renderer_.Render(*big, view, RenderOptions{80, 24, true}));
  EXPECT_NE(LineWith(rows, "GPU 0 ").find(" A2"), std::string::npos) << rows;
  // A GPU without alerts or problems says so.
  view.selected_gpu = 4;
  const std::string calm = Visible(renderer_.Render(*big, view, RenderOptions{120, 60, true}));
  EXPECT_NE(calm.find("no problems found, no alerts firing"), std::string::npos) << calm;
}

// Eight GPUs on an 80x24 terminal: one line each, all of them, no GPU cut; sixteen: the list
// scrolls and says how many are left out.
TEST_F(TopRender, EightGpusFitAn80x24ScreenAndMoreScrollWithAHint) {
  for (unsigned extra : {4u, 12u}) {
    SCOPED_TRACE(extra);
    auto frame = Build(extra);
    const std::string screen = renderer_.Render(*frame, ViewState{}, RenderOptions{80, 24, true});
    std::vector<std::string> lines = Lines(screen.substr(3), "\r\n");
    ASSERT_EQ(lines.size(), 24u);
    for (const std::string& l : lines) EXPECT_LE(Columns(l), 80) << l;
    const std::string visible = Visible(screen);
    size_t shown = 0;
    for (unsigned i = 0; i < 4 + extra; ++i)
      shown += LineWith(visible, "GPU " + std::to_string(i) + " ").empty() ? 0 : 1;
    if (extra == 4) {
      EXPECT_EQ(shown, 8u) << visible;
      EXPECT_EQ(visible.find("more (j/k)"), std::string::npos) << visible;
    } else {
      EXPECT_LT(shown, 16u);
      EXPECT_NE(visible.find("↓ " + std::to_string(16 - shown) + " more (j/k)"), std::string::npos)
          << visible;
    }
    // The parts under the list are there too: the detail, the process table, the alerts.
    EXPECT_NE(visible.find("GPU 0 GPU-00000000"), std::string::npos) << visible;
    EXPECT_NE(visible.find("GPU-MEM"), std::string::npos) << visible;
    EXPECT_NE(visible.find("Alerts: 1 firing"), std::string::npos) << visible;
  }
}

TEST_F(TopRender, TheHeaderShortensInsteadOfBeingCut) {
  Reading r = TestReading();
  r.queue = QueueSummary{true, false, 3, 3720};
  FrameBuilder builder("http://gpu-node-17.example.org:9966");
  auto frame = builder.Build(r);
  for (int width : {80, 100, 132, 200}) {
    SCOPED_TRACE(width);
    const std::string screen =
        renderer_.Render(*frame, ViewState{}, RenderOptions{width, 30, true});
    const std::string header = Visible(Lines(screen.substr(3), "\r\n")[0]);
    EXPECT_LE(Columns(header), width) << header;
    // Whatever the width: the source, the GPU count, the time and the sort orders; the queue
    // in words, in brief, or (80 columns, with this long a source) not at all.
    EXPECT_NE(header.find("http://gpu-node-17.example.org:9966 | 4 GPUs"), std::string::npos)
        << header;
    EXPECT_NE(header.find("22:14:50Z"), std::string::npos) << header;
    if (width >= 200) {
      EXPECT_NE(header.find("queued 3, longest wait 1h 02m (Slurm not answering)"),
                std::string::npos)
          << header;
    } else if (width >= 100) {
      EXPECT_NE(header.find("q 3/1h 02m?"), std::string::npos) << header;
    } else {
      EXPECT_EQ(header.find("q 3"), std::string::npos) << header;
    }
    EXPECT_TRUE(header.find("sort: index, procs: gpu mem") != std::string::npos ||
                header.find("index/gpu mem") != std::string::npos)
        << header;
    if (width >= 200) {
      EXPECT_NE(header.find("driver 550.127.08 | 2023-11-14 22:14:50Z"), std::string::npos)
          << header;
    }
  }
}

TEST_F(TopRender, TheProcessTableNamesSortsAndFilters) {
  auto frame = Build();
  ASSERT_EQ(frame->processes.size(), 3u);
  ViewState view;
  view.selected_gpu = 1;
  auto rows = [&](int width) {
    const std::string screen = renderer_.Render(*frame, view, RenderOptions{width, 50, true});
    std::vector<std::string> out;
    bool in_table = false;
    for (const std::string& l : Lines(Visible(screen), "\r\n")) {
      if (l.find("PID") != std::string::npos && l.find("COMMAND") != std::string::npos) {
        in_table = true;
        out.push_back(l);
        continue;
      }
      if (in_table && (l.empty() || l.rfind("Alerts", 0) == 0)) break;
      if (in_table) out.push_back(l);
    }
    return out;
  };
  std::vector<std::string> t = rows(160);
  ASSERT_EQ(t.size(), 4u) << ::testing::PrintToString(t);
  // Sorted by GPU memory (the marked column), largest first; every column filled.
  EXPECT_NE(t[0].find("GPU-MEM▼"), std::string::npos) << t[0];
  EXPECT_NE(t[0].find("JOB"), std::string::npos) << t[0];
  EXPECT_NE(t[1].find("    1    4242 alice"), std::string::npos) << t[1];
  EXPECT_NE(t[1].find("30.0G  83%  150%      6.0G"), std::string::npos) << t[1];
  EXPECT_NE(t[1].find("python3 train.py --epochs 90"), std::string::npos) << t[1];
  EXPECT_NE(t[2].find("    0    5000 carol"), std::string::npos) << t[2];
  EXPECT_NE(t[3].find("    1    4243 bob"), std::string::npos) << t[3];
  EXPECT_NE(t[3].find(" eval"), std::string::npos) << t[3];  // no command line: its name
  // The columns line up under their headers.
  // (Numbers right-aligned: the marker takes the header's last column.)
  auto column = [](const std::string& l, const char* what) {
    return Columns(l.substr(0, l.find(what)));
  };
  EXPECT_EQ(column(t[0], "GPU-MEM") + 8, column(t[1], "30.0G") + 5) << t[0] << "\n" << t[1];
  EXPECT_EQ(column(t[0], "HOST-MEM") + 8, column(t[1], "6.0G") + 4) << t[0] << "\n" << t[1];
  EXPECT_EQ(column(t[0], "COMMAND"), column(t[1], "python3")) << t[0] << "\n" << t[1];
  EXPECT_EQ(column(t[0], "USER"), column(t[1], "alice")) << t[0] << "\n" << t[1];
  // o cycles the sort column: SM, then host CPU.
  view.process_sort = NextProcessSort(view.process_sort);
  EXPECT_NE(rows(160)[1].find("5000"), std::string::npos);  // 95 % SM
  view.process_sort = NextProcessSort(view.process_sort);
  t = rows(160);
  EXPECT_NE(t[0].find("CPU▼"), std::string::npos) << t[0];
  EXPECT_NE(t[1].find("5000"), std::string::npos);  // 2.5 cores
  EXPECT_NE(t[1].find("250%"), std::string::npos) << t[1];
  view.process_sort = ProcessSort::kUser;
  t = rows(80);
  EXPECT_NE(t[1].find("alice"), std::string::npos);
  EXPECT_NE(t[2].find("bob"), std::string::npos);
  EXPECT_NE(t[3].find("carol"), std::string::npos);
  EXPECT_EQ(t[0].find("JOB"), std::string::npos) << t[0];  // no room at 80 columns
  for (const std::string& l : t) EXPECT_LE(Columns(l), 80) << l;
  // A filter keeps the rows that contain it (any case), and says how many.
  view.filter = "EPOCHS";
  const std::string filtered =
      Visible(renderer_.Render(*frame, view, RenderOptions{160, 50, true}));
  EXPECT_NE(filtered.find("filter: EPOCHS  1 of 3 processes"), std::string::npos) << filtered;
  EXPECT_NE(filtered.find("4242 alice"), std::string::npos) << filtered;
  EXPECT_EQ(filtered.find("5000 carol"), std::string::npos) << filtered;
  view.filter = "nothing like it";
  EXPECT_NE(Visible(renderer_.Render(*frame, view, RenderOptions{160, 50, true}))
                .find("no process matches the filter"),
            std::string::npos);
  // Plain text lists every process.
  const std::string plain = renderer_.Render(*frame, ViewState{}, RenderOptions{120, 0, false});
  EXPECT_NE(plain.find("Processes:"), std::string::npos) << plain;
  EXPECT_NE(LineWith(plain, "4243").find("bob"), std::string::npos) << plain;
}

TEST_F(TopRender, TheHistoryPanelFollowsTheSelectedGpusReadings) {
  FrameBuilder builder("test");
  std::shared_ptr<const Frame> frame;
  for (double gib : {8.0, 40.0, 80.0}) {
    Reading r = TestReading();
    auto snap = TestSnapshot();
    snap->gpus[0].values[static_cast<size_t>(collect::Slot::kMemoryUsed)] = gib * (1 << 30);
    r.snapshot = snap;
    frame = builder.Build(r);
  }
  const GpuView& g = frame->gpus[0];
  ASSERT_EQ(g.history_count, 3u);
  EXPECT_FLOAT_EQ(g.memory_history[kHistoryLength - 3], 0.1f);
  EXPECT_FLOAT_EQ(g.memory_history[kHistoryLength - 1], 1.0f);
  EXPECT_FLOAT_EQ(g.power_history[kHistoryLength - 1], (100 + 600 * 0.95f) / 700);
  EXPECT_FLOAT_EQ(g.temperature_history[kHistoryLength - 1], 65.0f / 89);
  const std::string screen = renderer_.Render(*frame, ViewState{}, RenderOptions{160, 50, true});
  const std::string mem = Visible(LineStarting(screen, "  util "));
  EXPECT_NE(mem.find("mem  "), std::string::npos) << mem;
  EXPECT_NE(mem.find("▁▄█ 80.0G"), std::string::npos) << mem;  // 10 %, 50 %, 100 %
  EXPECT_NE(Visible(LineStarting(screen, "  pwr  ")).find("temp "), std::string::npos) << screen;
}

// The two terminal sizes top is drawn for, with everything on them.
TEST_F(TopRender, At160x50EveryPartHasItsPlace) {
  auto frame = Build(4);  // 8 GPUs
  ViewState view;
  view.selected_gpu = 1;
  const std::string screen = renderer_.Render(*frame, view, RenderOptions{160, 50, true});
  std::vector<std::string> lines = Lines(screen.substr(3), "\r\n");
  ASSERT_EQ(lines.size(), 50u);
  for (const std::string& l : lines) EXPECT_LE(Columns(l), 160) << l;
  const std::string visible = Visible(screen);
  for (unsigned i = 0; i < 8; ++i)  // every GPU as a block with its bars
    EXPECT_NE(LineWith(visible, "GPU " + std::to_string(i) + " NVIDIA").size(), 0u) << i;
  EXPECT_NE(visible.find("temp ["), std::string::npos);
  EXPECT_EQ(visible.find("more (j/k)"), std::string::npos) << visible;
  EXPECT_NE(LineStarting(screen, "  util ").find("mem "), std::string::npos);  // the history
  EXPECT_NE(visible.find("GPU-MEM▼"), std::string::npos);                      // the process table
  EXPECT_NE(visible.find("python3 train.py"), std::string::npos);
  EXPECT_NE(visible.find("Alerts: 1 firing, 1 pending"), std::string::npos);
  EXPECT_NE(lines.back().find("o procs sort"), std::string::npos) << lines.back();
}

}  // namespace
}  // namespace gw::top
