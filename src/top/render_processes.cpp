// top/render_processes.cpp — the process table of FrameRenderer (render.h): its sort orders, the
// text filter, and the table itself (column headers with the sort column marked, one row per
// process, "↓ N more processes" when they do not all fit). Allocation-free like the rest of the
// renderer: the order is kept in a reused vector, numbers are formatted into stack buffers.
#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>

#include "top/line_writer.h"
#include "top/render.h"

namespace gw::top {

using collect::IsAbsent;
using namespace sgr;  // the colours of top/line_writer.h

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

// A byte count as "70.0G", "512M" or "12K" (binary units), into `out`.
void FormatBytes(double bytes, char* out, std::size_t size) {
  if (IsAbsent(bytes)) {
    std::snprintf(out, size, "-");
  } else if (bytes >= kGiB) {
    std::snprintf(out, size, "%.1fG", bytes / kGiB);
  } else if (bytes >= 1024.0 * 1024) {
    std::snprintf(out, size, "%.0fM", bytes / (1024.0 * 1024));
  } else {
    std::snprintf(out, size, "%.0fK", bytes / 1024.0);
  }
}

char Lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

bool Contains(std::string_view text, std::string_view needle) {
  if (needle.empty()) return true;
  if (needle.size() > text.size()) return false;
  for (size_t i = 0; i + needle.size() <= text.size(); ++i) {
    size_t k = 0;
    while (k < needle.size() && Lower(text[i + k]) == Lower(needle[k])) ++k;
    if (k == needle.size()) return true;
  }
  return false;
}

}  // namespace

std::string_view ProcessSortName(ProcessSort key) {
  switch (key) {
    case ProcessSort::kGpuMemory:
      return "gpu mem";
    case ProcessSort::kSm:
      return "sm";
    case ProcessSort::kHostCpu:
      return "cpu";
    case ProcessSort::kHostMemory:
      return "host mem";
    case ProcessSort::kPid:
      return "pid";
    case ProcessSort::kUser:
      return "user";
    case ProcessSort::kCommand:
      return "command";
  }
  return "gpu mem";
}

ProcessSort NextProcessSort(ProcessSort key) {
  return key == ProcessSort::kCommand ? ProcessSort::kGpuMemory
                                      : static_cast<ProcessSort>(static_cast<int>(key) + 1);
}

bool ProcessMatches(const ProcessView& p, std::string_view filter) {
  if (filter.empty()) return true;
  char pid[16];
  std::snprintf(pid, sizeof pid, "%u", p.pid);
  return Contains(p.name, filter) || Contains(p.command, filter) || Contains(p.user, filter) ||
         Contains(p.job, filter) || Contains(pid, filter);
}

const std::vector<size_t>& FrameRenderer::ProcessOrder(const Frame& frame, const ViewState& view) {
  process_order_.clear();
  for (size_t i = 0; i < frame.processes.size(); ++i)
    if (ProcessMatches(frame.processes[i], view.filter)) process_order_.push_back(i);
  const ProcessSort key = view.process_sort;
  auto number = [key](const ProcessView& p) -> double {
    double v = collect::kAbsent;
    switch (key) {
      case ProcessSort::kGpuMemory:
        v = p.memory_bytes;
        break;
      case ProcessSort::kSm:
        v = p.sm_ratio;
        break;
      case ProcessSort::kHostCpu:
        v = p.cpu_ratio;
        break;
      case ProcessSort::kHostMemory:
        v = p.host_memory_bytes;
        break;
      default:
        return 0;
    }
    return IsAbsent(v) ? -1 : v;
  };
  auto text = [key](const ProcessView& p) -> std::string_view {
    if (key == ProcessSort::kUser) return p.user;
    if (key == ProcessSort::kCommand) return p.command.empty() ? p.name : p.command;
    return {};
  };
  std::sort(process_order_.begin(), process_order_.end(), [&](size_t a, size_t b) {
    const ProcessView& x = frame.processes[a];
    const ProcessView& y = frame.processes[b];
    if (key == ProcessSort::kPid) {
      if (x.pid != y.pid) return x.pid < y.pid;
    } else if (key == ProcessSort::kUser || key == ProcessSort::kCommand) {
      std::string_view tx = text(x), ty = text(y);
      if (tx.empty() != ty.empty()) return !tx.empty();  // unknown last
      if (tx != ty) return tx < ty;
    } else {
      double nx = number(x), ny = number(y);
      if (nx != ny) return nx > ny;
    }
    if (x.gpu != y.gpu) return x.gpu < y.gpu;
    return x.pid < y.pid;
  });
  return process_order_;
}

void FrameRenderer::ProcessTable(const Frame& frame, const ViewState& view, size_t max_rows,
                                 LineWriter& line) {
  const std::vector<size_t>& order = ProcessOrder(frame, view);
  const bool screen = line.screen();
  if (!view.filter.empty() || view.editing_filter) {
    line.Text("  filter: ");
    line.Style(kBold);
    line.Text(view.filter);
    if (view.editing_filter) line.Text("_");
    line.Unstyle();
    line.Format("  %.0f", static_cast<double>(order.size()));
    line.Format(" of %.0f processes", static_cast<double>(frame.processes.size()));
    if (screen)
      line.Text(view.editing_filter ? "  (Enter keeps it, Esc clears it)"
                                    : "  (/ edits, Esc clears)");
    line.End();
  }
  if (!screen) {
    line.Text("Processes:");
    if (frame.processes.empty()) line.Text(" none");
    line.End();
    if (frame.processes.empty()) return;
  }
  const bool with_job = width_ >= 120;
  // Column headers, the sort column marked.
  struct Column {
    const char* label;
    int width;  // right-aligned in this many columns; 0 = left-aligned, what is left
    ProcessSort key;
    bool sortable;
  };
  const Column columns[] = {
      {"GPU", 5, ProcessSort::kGpuMemory, false},
      {"PID", 8, ProcessSort::kPid, true},
      {"USER", -10, ProcessSort::kUser, true},
      {"GPU-MEM", 9, ProcessSort::kGpuMemory, true},
      {"SM", 5, ProcessSort::kSm, true},
      {"CPU", 6, ProcessSort::kHostCpu, true},
      {"HOST-MEM", 10, ProcessSort::kHostMemory, true},
      {"JOB", -12, ProcessSort::kPid, false},
      {"COMMAND", 0, ProcessSort::kCommand, true},
  };
  if (screen) line.Style(kReverse);
  for (const Column& c : columns) {
    if (c.label[0] == 'J' && !with_job) continue;
    const bool sorted = c.sortable && c.key == view.process_sort;
    const std::string_view marker = !sorted ? "" : screen ? "▼" : "*";
    const int label_cols =
        static_cast<int>(std::char_traits<char>::length(c.label)) + (sorted ? 1 : 0);
    const int start = line.col();
    if (c.width > 0) line.PadTo(start + c.width - label_cols);
    if (c.width <= 0) line.Text(" ");
    line.Text(c.label);
    line.Text(marker);
    if (c.width < 0) line.PadTo(start + 1 - c.width);
  }
  if (screen) line.PadTo(width_);
  line.Unstyle();
  line.End();
  if (order.empty()) {
    line.Style(kDim);
    line.Text(frame.processes.empty() ? "  no GPU processes" : "  no process matches the filter");
    line.Unstyle();
    line.End();
    return;
  }
  const size_t shown = order.size() <= max_rows ? order.size() : max_rows - 1;
  for (size_t r = 0; r < shown; ++r) {
    const ProcessView& p = frame.processes[order[r]];
    const bool mine = screen && p.gpu == selected_index_;
    if (mine) line.Style(kBold);
    char cell[48];
    if (p.gpu_instance_id != collect::kNoMigInstance)
      std::snprintf(cell, sizeof cell, "%2u:%-2u", p.gpu, p.gpu_instance_id);
    else
      std::snprintf(cell, sizeof cell, "%5u", p.gpu);
    line.Text(cell);
    std::snprintf(cell, sizeof cell, "%8u", p.pid);
    line.Text(cell);
    line.Text(" ");
    const int user_at = line.col();
    line.Text(std::string_view(p.user).substr(0, 9));
    if (p.user.empty()) line.Text("-");
    line.PadTo(user_at + 10);
    FormatBytes(p.memory_bytes, cell, sizeof cell);
    line.PadTo(line.col() + 9 - static_cast<int>(std::char_traits<char>::length(cell)));
    line.Text(cell);
    if (IsAbsent(p.sm_ratio))
      std::snprintf(cell, sizeof cell, "%5s", "-");
    else
      std::snprintf(cell, sizeof cell, "%4.0f%%", p.sm_ratio * 100);
    line.Text(cell);
    if (IsAbsent(p.cpu_ratio))
      std::snprintf(cell, sizeof cell, "%6s", "-");
    else
      std::snprintf(cell, sizeof cell, "%5.0f%%", p.cpu_ratio * 100);
    line.Text(cell);
    FormatBytes(p.host_memory_bytes, cell, sizeof cell);
    line.PadTo(line.col() + 10 - static_cast<int>(std::char_traits<char>::length(cell)));
    line.Text(cell);
    if (with_job) {
      line.Text(" ");
      const int job_at = line.col();
      line.Text(std::string_view(p.job).substr(0, 11));
      if (p.job.empty()) line.Text("-");
      line.PadTo(job_at + 12);
    }
    line.Text(" ");
    line.Text(!p.command.empty() ? std::string_view(p.command)
              : !p.name.empty()  ? std::string_view(p.name)
                                 : std::string_view("-"));
    line.Unstyle();
    line.End();
  }
  if (shown < order.size()) {
    line.Style(kDim);
    line.Text("  ");
    line.Text(screen ? "↓ " : "v ");
    line.Format("%.0f more processes", static_cast<double>(order.size() - shown));
    line.Unstyle();
    line.End();
  }
}

}  // namespace gw::top
