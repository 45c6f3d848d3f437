// top/render.h — draws a Frame as text, for a terminal or for a script.
//
//   FrameRenderer renderer;
//   RenderOptions o{.width = 120, .height = 40, .screen = true};
//   renderer.Render(*frame, view, o);      // returns the whole screen, written with one write()
//
// Two modes:
//   screen (interactive): ANSI colours, Unicode sparkline, exactly `height` lines, each line
//     cleared to its end, cursor sent home first — the screen is redrawn in place without
//     flicker. The GPU list (a block per GPU, or one line per GPU when the blocks do not fit in
//     the lines left after the parts below) scrolls to keep the selected GPU visible and says
//     "↓ N more" when GPUs are left out; below it the selected GPU's detail (job, firing alerts
//     about it, health problems), its history (sparklines of utilization, memory, power and
//     temperature), the process table, the alerts, then a key line.
//   plain (--once, or stdout is not a terminal): no escape codes, ASCII only, every GPU, then
//     every GPU's problems (with what to do), every process, then the alerts.
// The header never runs past `width`: it drops the driver version, then the date, then shortens
// its labels before anything is cut.
// The process table: GPU (":id" for a MIG instance), pid, user, GPU memory, SM share, host CPU
// (100 % = one core), host memory, job (from 120 columns), command (its name when the command
// line is unknown); sorted by ViewState::process_sort (the column marked ▼), filtered by
// ViewState::filter. The selected GPU's processes are bold.
// Under the header line, one line per service of the agent (GET /api/gw/v1/services): its cost
// per 1k outputs and outputs per second over the agent's window (on screen at most
// kMaxServiceLines, then how many more).
// Datacenter GPUs: SM active (GPM) as a fifth bar from kSmBarWidth columns (the column kept, empty,
// for GPUs without it when another GPU of the frame has it), else after the
// utilization figure, yellow when the GPU is busy but hollow (frame.h); MIG mode on the title
// line and one indented row per MIG instance; NVLink links up/total on the third line, and the
// selected GPU's detail names the down links, the error count and the throughput.
// Problems stand out: a GPU's title line carries "!!" (critical) or "! " (warning) — from its
// health problems or the alerts firing about it, whichever is worse — and, on screen, is red or
// yellow; it says how many alerts fire about it ("2 alerts firing"; "A2" on a one-line row).
// The memory, power and temperature bars turn yellow from 80 % and red from 95 % of their limit
// (memory against the total, power against the enforced limit, temperature against the GPU's
// own slowdown threshold); utilization stays green (busy is what a GPU is for).
// No line is wider than `width` columns.
//
// Cost: Render reuses its buffers; once they have grown to a frame's size, drawing another frame
// of the same shape allocates nothing (tests/top/render_test.cpp checks).
//
// Threading: one FrameRenderer per thread (it holds scratch buffers).
#ifndef GPUWARDEN_TOP_RENDER_H_
#define GPUWARDEN_TOP_RENDER_H_

#include <string>
#include <string_view>
#include <vector>

#include "top/frame.h"

namespace gw::top {

class LineWriter;  // top/line_writer.h (the renderer's line writer)

enum class SortKey { kIndex, kUtilization, kMemory, kPower, kTemperature, kProblems };
std::string_view SortName(SortKey key);  // "index", "utilization", ...
SortKey NextSort(SortKey key);           // the order the s key cycles through

// The process table's sort column: numbers highest first (unknown last), text A-Z; ties by GPU
// index, then pid.
enum class ProcessSort { kGpuMemory, kSm, kHostCpu, kHostMemory, kPid, kUser, kCommand };
std::string_view ProcessSortName(ProcessSort key);  // "gpu mem", "sm", "cpu", ...
ProcessSort NextProcessSort(ProcessSort key);       // the order the o key cycles through

// Whether a process row contains `filter` (case-insensitive, ASCII) in its name, command, user,
// job or pid; an empty filter matches every row.
bool ProcessMatches(const ProcessView& process, std::string_view filter);

// What the person at the terminal chose.
struct ViewState {
  unsigned selected_gpu = 0;  // GPU index (not position) so that re-sorting keeps it
  SortKey sort = SortKey::kIndex;
  ProcessSort process_sort = ProcessSort::kGpuMemory;
  std::string filter;           // the process table shows the rows that contain it
  bool editing_filter = false;  // the / prompt is open (keys type into `filter`)
  bool help = false;
};

struct RenderOptions {
  int width = 100;  // columns; at least 40 are used
  int height = 0;   // screen mode: lines; 0 = plain, as many as needed
  bool screen = false;
};

inline constexpr size_t kMaxServiceLines = 3;
// From this width a GPU with profiling values gets SM active as a fifth bar on its bars' line.
inline constexpr int kSmBarWidth = 150;

class FrameRenderer {
 public:
  // The text to write; valid until the next call.
  const std::string& Render(const Frame& frame, const ViewState& view,
                            const RenderOptions& options);

  // Positions into frame.gpus in `key` order (ties by GPU index); valid until the next call.
  const std::vector<size_t>& Order(const Frame& frame, SortKey key);
  // Positions into frame.processes of the rows that match view.filter, in view.process_sort
  // order; valid until the next call.
  const std::vector<size_t>& ProcessOrder(const Frame& frame, const ViewState& view);

 private:
  void Header(const Frame& frame, const ViewState& view, LineWriter& line);
  void Services(const Frame& frame, LineWriter& line);
  void GpuBlock(const GpuView& gpu, bool selected, LineWriter& line);
  // One line per GPU, for screens too short for every GPU's block.
  void CompactRow(const GpuView& gpu, bool selected, LineWriter& line);
  // The GPU list in at most `budget` lines, scrolled to show `selected` (a position in `order`),
  // with a "↓ N more" line when GPUs are left out. Returns the lines written.
  int GpuList(const Frame& frame, const std::vector<size_t>& order, size_t selected, int budget,
              LineWriter& line);
  void Detail(const Frame& frame, const GpuView& gpu, LineWriter& line);
  // Sparklines of the selected GPU's utilization, memory, power and temperature (two lines).
  void History(const GpuView& gpu, LineWriter& line);
  // The process table: a filter line when one is set, the column headers, then the rows (at most
  // `max_rows`, the last saying how many more there are).
  void ProcessTable(const Frame& frame, const ViewState& view, size_t max_rows, LineWriter& line);
  void Problems(const Frame& frame, LineWriter& line);
  void Alerts(const Frame& frame, size_t max_lines, LineWriter& line);
  void Help(LineWriter& line);
  int BlockHeight(const GpuView& gpu) const;
  // Datacenter GPUs (render_datacenter.cpp): MIG, NVLink, SM active, the bars per line.
  void MigMode(const GpuView& gpu, LineWriter& line);
  void MigRow(const MigView& mig, LineWriter& line);
  void NvLinkBrief(const GpuView& gpu, LineWriter& line);
  void SmAfterUtilization(const GpuView& gpu, LineWriter& line);
  void DatacenterDetail(const GpuView& gpu, LineWriter& line);
  int BarsPerLine() const;
  int DetailHeight(const Frame& frame, const GpuView& gpu) const;

  int width_ = 100;
  bool frame_has_sm_ = false;  // some GPU of the frame being drawn has SM active
  std::string out_;
  std::vector<size_t> order_;
  std::vector<size_t> process_order_;
  unsigned selected_index_ = ~0u;  // the selected GPU's index while drawing a screen
};

}  // namespace gw::top

#endif  // GPUWARDEN_TOP_RENDER_H_
