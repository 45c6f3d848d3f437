// top/render_datacenter.cpp — the parts of FrameRenderer (render.h) that draw datacenter GPUs:
// the bars per line (the SM active column), MIG mode on a GPU's title line, NVLink on its third
// line, its MIG instances as indented rows, and the selected GPU's profiling, busy-but-hollow,
// NVLink and MIG lines. Allocation-free like the rest of the renderer.
#include <algorithm>
#include <string_view>

#include "top/line_writer.h"
#include "top/render.h"

namespace gw::top {

using collect::IsAbsent;
using namespace sgr;  // the colours of top/line_writer.h

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

// "SM active 41%" (or "SM active -" when absent), with `label` first.
void Percent(std::string_view label, double ratio, LineWriter& line) {
  line.Text(label);
  if (IsAbsent(ratio))
    line.Text(" -");
  else
    line.Format(" %.0f%%", ratio * 100);
}

}  // namespace

// The bars of a GPU's block: utilization, memory, power, temperature, and SM active as a fifth
// where it fits on the same line (kSmBarWidth columns and up); narrower, SM active follows the
// utilization figure ("97% sm 41%").
// The five columns are kept for every GPU of a frame where one has SM active, so that the bars
// line up; a GPU without it leaves the fifth empty.
int FrameRenderer::BarsPerLine() const {
  if (width_ >= kSmBarWidth && frame_has_sm_) return 5;
  return width_ >= 120 ? 4 : width_ >= 70 ? 2 : 1;
}

// The selected GPU's detail: its title, its firing alerts and problems (or the line saying there
// are none), then the datacenter lines.
int FrameRenderer::DetailHeight(const Frame&, const GpuView& gpu) const {
  int extra = !IsAbsent(gpu.sm_active) + gpu.hollow + (gpu.nvlinks > 0) +
              (gpu.mig_current == 1 || gpu.mig_pending == 1);
  return 1 + std::max<int>(1, static_cast<int>(gpu.problems.size() + gpu.firing_alerts.size())) +
         extra;
}

// " sm 41%" after the utilization figure, where SM active has no bar of its own.
void FrameRenderer::SmAfterUtilization(const GpuView& g, LineWriter& line) {
  if (IsAbsent(g.sm_active)) return;
  line.Unstyle();
  if (g.hollow) line.Style(kYellow);
  line.Format(" sm%3.0f%%", g.sm_active * 100);
  line.Unstyle();
}

// "  nvlink: 17/18 err 4099" on a GPU's third line (nothing without NVLink).
void FrameRenderer::NvLinkBrief(const GpuView& g, LineWriter& line) {
  if (g.nvlinks == 0) return;
  line.Text("  nvlink: ");
  if (g.nvlinks_up < g.nvlinks) line.Style(kRed);
  line.Format("%.0f", static_cast<double>(g.nvlinks_up));
  line.Format("/%.0f", static_cast<double>(g.nvlinks));
  line.Unstyle();
  if (!IsAbsent(g.nvlink_errors) && g.nvlink_errors > 0) {
    line.Style(kYellow);
    line.Format(" err %.0f", g.nvlink_errors);
    line.Unstyle();
  }
}

// "  MIG 3 instances", "  MIG on, off after reset", "  MIG off, on after reset" (title line).
void FrameRenderer::MigMode(const GpuView& g, LineWriter& line) {
  const bool on = g.mig_current == 1, pending_on = g.mig_pending == 1;
  if (!on && !pending_on) return;
  line.Text("  MIG ");
  if (on && !g.mig.empty()) {
    line.Format("%.0f inst", static_cast<double>(g.mig.size()));
  } else {
    line.Text(on ? "on" : "off");
  }
  if (!IsAbsent(g.mig_pending) && pending_on != on) {
    line.Style(kYellow);
    line.Text(pending_on ? " (on after reset)" : " (off after reset)");
    line.Unstyle();
  }
}

// One MIG instance, indented under its GPU:
//   "       mig 1  3g.40gb   mem 20.0/39.5G  sm  83%  procs 2  MIG-1000…"
void FrameRenderer::MigRow(const MigView& m, LineWriter& line) {
  line.Format("       mig %-3.0f", m.gpu_instance_id);
  line.Text(m.profile);
  line.PadTo(std::max(line.col() + 1, 26));
  line.Text("mem ");
  if (IsAbsent(m.memory_used_bytes))
    line.Text("-");
  else
    line.Format("%.1f", m.memory_used_bytes / kGiB);
  if (IsAbsent(m.memory_total_bytes))
    line.Text("/-");
  else
    line.Format("/%.1fG", m.memory_total_bytes / kGiB);
  line.PadTo(std::max(line.col() + 1, 44));
  if (IsAbsent(m.sm_active))
    line.Text("sm   -");
  else
    line.Format("sm %3.0f%%", m.sm_active * 100);
  line.Format("  procs %.0f", static_cast<double>(m.processes));
  line.Text("  ");
  line.Text(m.uuid);
  line.End();
}
// The selected GPU's detail lines for profiling, busy but hollow, NVLink and MIG (none on a GPU
// that has none of them).
void FrameRenderer::DatacenterDetail(const GpuView& g, LineWriter& line) {
  if (!IsAbsent(g.sm_active)) {
    line.Text("  profiling: ");
    Percent("SM active", g.sm_active, line);
    Percent(", occupancy", g.sm_occupancy, line);
    Percent(", tensor", g.tensor_active, line);
    Percent(", DRAM", g.dram_active, line);
    line.End();
  }
  if (g.hollow) {
    line.Style(kYellow);
    line.Format("  busy but hollow: utilization %.0f%%", g.util * 100);
    line.Format(" but SM active %.0f%%", g.sm_active * 100);
    line.Unstyle();
    line.Text(
        " -> kernels run all the time on few SMs: launch-bound, small batches or a starved "
        "input pipeline");
    line.End();
  }
  if (g.nvlinks > 0) {
    line.Text("  nvlink: ");
    if (g.nvlinks_up < g.nvlinks) line.Style(kRed);
    line.Format("%.0f", static_cast<double>(g.nvlinks_up));
    line.Format(" of %.0f links up", static_cast<double>(g.nvlinks));
    if (!g.nvlinks_down.empty()) {
      line.Text(", down: ");
      line.Text(g.nvlinks_down);
    }
    line.Unstyle();
    if (!IsAbsent(g.nvlink_errors)) {
      if (g.nvlink_errors > 0) line.Style(kYellow);
      line.Format("; errors %.0f", g.nvlink_errors);
      line.Unstyle();
    }
    if (!IsAbsent(g.nvlink_tx_bps)) line.Format("; tx %.1f GB/s", g.nvlink_tx_bps / 1e9);
    if (!IsAbsent(g.nvlink_rx_bps)) line.Format(", rx %.1f GB/s", g.nvlink_rx_bps / 1e9);
    line.End();
  }
  if (g.mig_current == 1 || g.mig_pending == 1) {
    line.Text("  MIG: ");
    line.Text(g.mig_current == 1 ? "on" : "off");
    line.Format(", %.0f instance(s)", static_cast<double>(g.mig.size()));
    if (!IsAbsent(g.mig_pending) && (g.mig_pending == 1) != (g.mig_current == 1)) {
      line.Style(kYellow);
      line.Text(g.mig_pending == 1 ? "; on after the next GPU reset"
                                   : "; off after the next GPU reset");
      line.Unstyle();
    }
    line.End();
  }
}

}  // namespace gw::top
