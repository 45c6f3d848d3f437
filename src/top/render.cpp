#include "top/render.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "top/line_writer.h"

namespace gw::top {

using collect::IsAbsent;
using collect::Severity;
using namespace sgr;  // the colours of top/line_writer.h

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

// Eight levels plus blank; screen mode uses block elements, plain mode ASCII.
constexpr std::string_view kSparkUnicode[9] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
constexpr std::string_view kSparkAscii[9] = {" ", "_", ".", ",", "-", "=", "+", "*", "#"};

double Ratio(double v, double limit) {
  if (IsAbsent(v) || IsAbsent(limit) || limit <= 0) return collect::kAbsent;
  return v / limit;
}

const char* SeverityColour(Severity s) {
  return s == Severity::kCritical ? kRed : s == Severity::kWarning ? kYellow : kCyan;
}

// `text`, or `fallback` when it is empty, without copying either.
std::string_view OrElse(const std::string& text, std::string_view fallback) {
  return text.empty() ? fallback : std::string_view(text);
}

const char* Mark(const GpuView& g) {
  if (!g.has_problem) return "  ";
  return g.worst == Severity::kCritical ? "!!" : g.worst == Severity::kWarning ? "! " : "  ";
}

// A wait as "2d 3h", "1h 05m", "4m 09s" or "12s", into `out` (no allocation).
void FormatWait(double seconds, char* out, std::size_t size) {
  const long long s = seconds > 0 ? std::llround(seconds) : 0;
  if (s >= 86400) {
    std::snprintf(out, size, "%lldd %lldh", s / 86400, s % 86400 / 3600);
  } else if (s >= 3600) {
    std::snprintf(out, size, "%lldh %02lldm", s / 3600, s % 3600 / 60);
  } else if (s >= 60) {
    std::snprintf(out, size, "%lldm %02llds", s / 60, s % 60);
  } else {
    std::snprintf(out, size, "%llds", s);
  }
}

}  // namespace

std::string_view SortName(SortKey key) {
  switch (key) {
    case SortKey::kIndex:
      return "index";
    case SortKey::kUtilization:
      return "utilization";
    case SortKey::kMemory:
      return "memory";
    case SortKey::kPower:
      return "power";
    case SortKey::kTemperature:
      return "temperature";
    case SortKey::kProblems:
      return "problems";
  }
  return "index";
}

SortKey NextSort(SortKey key) {
  return key == SortKey::kProblems ? SortKey::kIndex
                                   : static_cast<SortKey>(static_cast<int>(key) + 1);
}

const std::vector<size_t>& FrameRenderer::Order(const Frame& frame, SortKey key) {
  order_.resize(frame.gpus.size());
  for (size_t i = 0; i < order_.size(); ++i) order_[i] = i;
  auto metric = [key](const GpuView& g) -> double {
    double v = collect::kAbsent;
    switch (key) {
      case SortKey::kIndex:
        return 0;
      case SortKey::kUtilization:
        v = g.util;
        break;
      case SortKey::kMemory:
        v = g.memory_used_bytes;
        break;
      case SortKey::kPower:
        v = g.power_w;
        break;
      case SortKey::kTemperature:
        v = g.temperature_c;
        break;
      case SortKey::kProblems:
        if (g.lost) return 10;
        return g.has_problem ? 1 + static_cast<int>(g.worst) : 0;
    }
    return IsAbsent(v) ? -1 : v;
  };
  // Highest first (the busiest or sickest GPU on top), ties by GPU index.
  std::sort(order_.begin(), order_.end(), [&](size_t a, size_t b) {
    const GpuView& x = frame.gpus[a];
    const GpuView& y = frame.gpus[b];
    double mx = metric(x), my = metric(y);
    if (mx != my) return mx > my;
    return x.index < y.index;
  });
  return order_;
}

int FrameRenderer::BlockHeight(const GpuView& gpu) const {
  if (gpu.lost) return 2;
  const int per_line = BarsPerLine();
  return 1 + (4 + per_line - 1) / per_line + 1 + static_cast<int>(gpu.mig.size());
}

void FrameRenderer::Header(const Frame& frame, const ViewState& view, LineWriter& line) {
  line.Style(kBold);
  line.Text("gpuwarden top");
  line.Unstyle();
  line.Text(" | ");
  line.Text(frame.source);
  if (frame.nvml_up) {
    char buffer[96];
    std::snprintf(buffer, sizeof buffer, " | %zu GPU(s)", frame.gpus.size());
    line.Text(buffer);
    if (!frame.driver_version.empty()) {
      line.Text(" | driver ");
      line.Text(frame.driver_version);
    }
    if (frame.taken_unix_seconds > 0) {
      std::time_t t = static_cast<std::time_t>(frame.taken_unix_seconds);
      std::tm tm{};
      gmtime_r(&t, &tm);
      std::strftime(buffer, sizeof buffer, " | %Y-%m-%d %H:%M:%SZ", &tm);
      line.Text(buffer);
    }
  }
  if (frame.queue.shown) {
    char wait[32];
    FormatWait(frame.queue.longest_wait_s, wait, sizeof wait);
    char buffer[96];
    std::snprintf(buffer, sizeof buffer, " | queued %zu, longest wait %s%s", frame.queue.jobs,
                  frame.queue.jobs ? wait : "-", frame.queue.up ? "" : " (Slurm not answering)");
    line.Text(buffer);
  }
  if (line.screen()) {
    line.Text(" | sort: ");
    line.Text(SortName(view.sort));
  }
  line.End();
  Services(frame, line);
  if (!frame.error.empty()) {
    line.Style(kRed);
    line.Text("! ");
    line.Text(frame.error);
    line.End();
  } else if (!frame.nvml_up) {
    line.Style(kRed);
    line.Text("no GPUs: ");
    line.Text(frame.nvml_error);
    line.End();
  } else if (line.screen()) {
    line.End();
  }
}

// "service llm: 0.0125 EUR per 1k requests, 80.0 requests/s (last 27m 00s)", or why there is
// no figure.
void FrameRenderer::Services(const Frame& frame, LineWriter& line) {
  const size_t n = frame.services.size();
  const size_t shown = line.screen() ? std::min(n, kMaxServiceLines) : n;
  for (size_t i = 0; i < shown; ++i) {
    const ServiceView& s = frame.services[i];
    const bool plural_s = s.unit.empty() || s.unit.back() != 's';
    auto units = [&] {
      line.Text(OrElse(s.unit, "output"));
      if (plural_s) line.Text("s");
    };
    char window[32];
    FormatWait(s.window_s, window, sizeof window);
    line.Text("  service ");
    line.Style(kBold);
    line.Text(s.target);
    line.Unstyle();
    line.Text(": ");
    if (!IsAbsent(s.cost_per_1k)) {
      line.Format("%.4g", s.cost_per_1k);
      if (!s.currency.empty()) {
        line.Text(" ");
        line.Text(s.currency);
      }
      line.Text(" per 1k ");
      units();
    } else {
      line.Style(kDim);
      if (!s.has_gpus) {
        line.Text("no cost per output (no GPUs configured)");
      } else if (s.unit.empty()) {
        line.Text("no cost per output (no outputs configured)");
      } else if (!s.outputs_known) {
        line.Text("no cost per output (outputs not counted yet)");
      } else {
        line.Text("no cost per output (no ");
        units();
        line.Text(" in the last ");
        line.Text(window);
        line.Text(")");
      }
      line.Unstyle();
    }
    if (!IsAbsent(s.outputs_per_s)) {
      line.Format(", %.1f ", s.outputs_per_s);
      units();
      line.Text("/s");
    }
    if (!IsAbsent(s.cost_per_1k)) {
      line.Text(" (last ");
      line.Text(window);
      line.Text(")");
    }
    line.End();
  }
  if (shown < n) {
    line.Format("  ... %.0f more services", static_cast<double>(n - shown));
    line.Text(" (all of them: the console's Teams page, or top --once)");
    line.End();
  }
}

void FrameRenderer::GpuBlock(const GpuView& g, bool selected, LineWriter& line) {
  // Title: selection, problem mark, index, name, state, holder.
  if (g.has_problem) line.Style(SeverityColour(g.worst));
  if (selected && line.screen()) line.Style(kReverse);
  line.Text(selected ? ">" : " ");
  line.Text(Mark(g));
  line.Format("GPU %.0f ", g.index);
  line.Text(g.name);
  if (g.lost) {
    line.Text("  LOST: fell off the bus");
    line.End();
    line.Text("     no readings; XIDs: ");
    line.Text(OrElse(g.xids, "none"));
    line.End();
    return;
  }
  if (!IsAbsent(g.pstate)) line.Format("  P%.0f", g.pstate);
  if (!IsAbsent(g.sm_clock_mhz)) line.Format(" %.0f MHz", g.sm_clock_mhz);
  MigMode(g, line);
  if (!g.holder.job.empty()) {
    line.Text("  job ");
    line.Text(g.holder.job);
  }
  if (!g.holder.team.empty()) {
    line.Text("  team ");
    line.Text(g.holder.team);
  }
  if (!g.holder.user.empty()) {
    line.Text("  user ");
    line.Text(g.holder.user);
  }
  line.End();

  // Bars: utilization, memory, power against its limit, temperature against slowdown, and SM
  // active (GPM) where it fits; else SM active follows the utilization figure.
  const int per_line = BarsPerLine();
  const int bars = per_line == 5 && !IsAbsent(g.sm_active) ? 5 : 4;
  const int item = (width_ - 4) / per_line;
  // Room for the label, the brackets and the figure ("30.0/80G"; below five a line, "97% sm 41%").
  const int bar = std::max(4, item - 4 - 3 - (per_line == 5 ? 12 : 14));
  struct Item {
    const char* label;
    double ratio;
    bool warn;  // colours against the limit (power, temperature)
  } items[5] = {
      {"util", g.util, false},
      {"mem ", Ratio(g.memory_used_bytes, g.memory_total_bytes), false},
      {"pwr ", Ratio(g.power_w, g.power_limit_w), true},
      {"temp", Ratio(g.temperature_c, g.slowdown_c), true},
      {"sm  ", g.sm_active, false},
  };
  for (int i = 0; i < bars; ++i) {
    if (i % per_line == 0) line.Text("     ");
    const Item& it = items[i];
    line.Text(it.label);
    line.Text(" [");
    double r = IsAbsent(it.ratio) ? 0 : std::clamp(it.ratio, 0.0, 1.0);
    int filled = static_cast<int>(std::lround(r * bar));
    const char* colour = i == 4 && g.hollow ? kYellow
                         : !it.warn         ? kGreen
                         : r >= 0.95        ? kRed
                         : r >= 0.8         ? kYellow
                                            : kGreen;
    line.Style(colour);
    for (int b = 0; b < filled; ++b) line.Text("|");
    line.Unstyle();
    if (g.has_problem) line.Style(SeverityColour(g.worst));
    for (int b = filled; b < bar; ++b) line.Text(" ");
    line.Text("] ");
    char value[32];
    switch (i) {
      case 0:
      case 4:
        if (IsAbsent(it.ratio))
          std::snprintf(value, sizeof value, "-");
        else
          std::snprintf(value, sizeof value, "%3.0f%%", it.ratio * 100);
        break;
      case 1:
        std::snprintf(value, sizeof value, "%.1f/%.0fG", g.memory_used_bytes / kGiB,
                      g.memory_total_bytes / kGiB);
        break;
      case 2:
        std::snprintf(value, sizeof value, "%.0f/%.0fW", g.power_w, g.power_limit_w);
        break;
      default:
        std::snprintf(value, sizeof value, "%.0f/%.0fC", g.temperature_c, g.slowdown_c);
        break;
    }
    if (i == 4 && g.hollow) line.Style(kYellow);
    line.Text(value);
    if (i == 4) line.Unstyle();
    if (i == 0 && bars == 4) SmAfterUtilization(g, line);
    if (i % per_line == per_line - 1 || i == bars - 1) {
      line.End();
    } else {
      line.PadTo(5 + (i % per_line + 1) * item);
    }
  }

  // Throttle, ECC, XIDs, processes, then the utilization history in the space left.
  line.Text("     ");
  line.Text("throttle: ");
  if (g.throttled) line.Style(kYellow);
  line.Text(OrElse(g.throttle, "none"));
  line.Unstyle();
  NvLinkBrief(g, line);
  line.Text("  ecc: ");
  bool ecc_bad = !IsAbsent(g.ecc_uncorrected) && g.ecc_uncorrected > 0;
  if (ecc_bad) line.Style(kRed);
  if (IsAbsent(g.ecc_corrected) && IsAbsent(g.ecc_uncorrected)) {
    line.Text("-");
  } else {
    line.Format("%.0f corr ", IsAbsent(g.ecc_corrected) ? 0 : g.ecc_corrected);
    line.Format("%.0f uncorr", IsAbsent(g.ecc_uncorrected) ? 0 : g.ecc_uncorrected);
  }
  line.Unstyle();
  line.Text("  xid: ");
  if (!g.xids.empty()) line.Style(kRed);
  line.Text(OrElse(g.xids, "none"));
  line.Unstyle();
  line.Format("  procs: %.0f", static_cast<double>(g.processes));
  int spark = std::min<int>(line.remaining() - 3, static_cast<int>(kHistoryLength));
  if (spark >= 8) {
    line.Text("  ");
    line.Style(kCyan);
    const auto& levels = line.screen() ? kSparkUnicode : kSparkAscii;
    for (int i = 0; i < spark; ++i) {
      float v = g.history[kHistoryLength - spark + i];
      size_t age = static_cast<size_t>(spark - i);
      if (age > g.history_count || v < 0) {
        line.Text(levels[0]);
        continue;
      }
      line.Text(levels[1 + std::clamp(static_cast<int>(v * 7.999f), 0, 7)]);
    }
    line.Unstyle();
  }
  line.End();
  for (const MigView& m : g.mig) MigRow(m, line);
}

void FrameRenderer::Detail(const GpuView& g, LineWriter& line) {
  line.Style(kBold);
  line.Format("GPU %.0f", g.index);
  line.Unstyle();
  line.Text(" ");
  line.Text(g.uuid);
  if (!g.holder.job.empty() || !g.holder.team.empty()) {
    line.Text("  job ");
    line.Text(OrElse(g.holder.job, "-"));
    line.Text(" team ");
    line.Text(OrElse(g.holder.team, "-"));
  }
  line.End();
  line.Text("  processes: ");
  line.Text(OrElse(g.process_text, "none"));
  line.End();
  DatacenterDetail(g, line);
  if (g.problems.empty()) {
    line.Text("  no problems found");
    line.End();
  }
  for (const collect::HealthProblem& p : g.problems) {
    line.Text("  ");
    line.Style(SeverityColour(p.severity));
    line.Text("[");
    line.Text(collect::SeverityName(p.severity));
    line.Text("] ");
    line.Text(p.what);
    line.Unstyle();
    if (!p.action.empty()) {
      line.Text(" -> ");
      line.Text(p.action);
    }
    line.End();
  }
}

void FrameRenderer::Problems(const Frame& frame, LineWriter& line) {
  bool any = false;
  for (const GpuView& g : frame.gpus) {
    if (g.problems.empty()) continue;
    if (!any) {
      line.Text("Problems:");
      line.End();
    }
    any = true;
    for (const collect::HealthProblem& p : g.problems) {
      line.Format("  GPU %.0f [", g.index);
      line.Text(collect::SeverityName(p.severity));
      line.Text("] ");
      line.Text(p.what);
      if (!p.action.empty()) {
        line.Text(" -> ");
        line.Text(p.action);
      }
      line.End();
    }
  }
  if (!any && frame.nvml_up) {
    line.Text("Problems: none found.");
    line.End();
  }
}

void FrameRenderer::Alerts(const Frame& frame, size_t max_lines, LineWriter& line) {
  size_t firing = 0;
  for (const AlertView& a : frame.alerts) firing += a.state == "firing";
  line.Style(kBold);
  line.Text("Alerts: ");
  line.Unstyle();
  if (!frame.alerts_note.empty()) {
    line.Text(frame.alerts_note);
    line.End();
    return;
  }
  line.Format("%.0f firing", static_cast<double>(firing));
  line.Format(", %.0f pending", static_cast<double>(frame.alerts.size() - firing));
  line.End();
  size_t shown = 0;
  // Firing before pending, each in the agent's order.
  for (int pass = 0; pass < 2; ++pass) {
    for (const AlertView& a : frame.alerts) {
      if ((a.state == "firing") != (pass == 0)) continue;
      if (shown == max_lines) {
        line.Format("  ... %.0f more", static_cast<double>(frame.alerts.size() - shown));
        line.End();
        return;
      }
      ++shown;
      line.Text("  ");
      const char* colour = a.severity == "critical"  ? kRed
                           : a.severity == "warning" ? kYellow
                                                     : kCyan;
      if (pass == 0) line.Style(colour);
      line.Text(pass == 0 ? "FIRING  " : "pending ");
      line.Text(OrElse(a.severity, "-"));
      line.PadTo(19);
      line.Text(" ");
      line.Text(a.name);
      if (!a.gpu.empty()) {
        line.Text(" gpu ");
        line.Text(a.gpu);
      }
      line.Unstyle();
      if (!a.summary.empty()) {
        line.Text("  ");
        line.Text(a.summary);
      }
      line.End();
    }
  }
}

void FrameRenderer::Help(LineWriter& line) {
  static constexpr std::string_view kLines[] = {
      "Keys",
      "  q, Ctrl-C        quit",
      "  j, Down          select the next GPU",
      "  k, Up            select the previous GPU",
      "  s                sort by index, utilization, memory, power, temperature, problems",
      "  h, ?             this help (any key returns)",
      "",
      "Reading the screen",
      "  !! / ! before a GPU: it has a critical / warning health problem (red / yellow)",
      "  pwr is against the enforced power limit, temp against the GPU's slowdown threshold",
      "  bars turn yellow from 80 % and red from 95 % of their limit",
      "  throttle: why the clocks are held down (idle and clock settings are not throttling)",
      "  ecc: volatile corrected/uncorrected errors since the last reset; xid: code x count",
      "  the sparkline is the GPU's utilization, one column per refresh, newest on the right",
      "  sm: SM active (GPM): how much of the chip worked; util only says a kernel",
      "      ran. Yellow when util >= 80 % and SM active < 25 %: busy but hollow",
      "  mig rows: MIG instances (id, profile, memory, SM active, processes, UUID)",
      "  nvlink: links up / links, errors; the detail names the down links",
  };
  for (std::string_view l : kLines) {
    line.Text(l);
    line.End();
  }
}

const std::string& FrameRenderer::Render(const Frame& frame, const ViewState& view,
                                         const RenderOptions& options) {
  width_ = std::max(40, options.width);
  frame_has_sm_ = std::any_of(frame.gpus.begin(), frame.gpus.end(),
                              [](const GpuView& g) { return !IsAbsent(g.sm_active); });
  const bool screen = options.screen && options.height > 0;
  out_.clear();
  if (screen) out_.append("\x1b[H");
  const int height = screen ? std::max(5, options.height) : 0;
  LineWriter line(&out_, width_, screen, screen ? height - 1 : 0);
  Header(frame, view, line);
  const std::vector<size_t>& order = Order(frame, view.sort);

  if (!screen) {
    for (size_t pos : order) GpuBlock(frame.gpus[pos], false, line);
    line.End();
    Problems(frame, line);
    line.End();
    Alerts(frame, frame.alerts.size(), line);
    if (!frame.jobs_note.empty()) {
      line.Text("Jobs: ");
      line.Text(frame.jobs_note);
      line.End();
    }
    return out_;
  }

  if (view.help) {
    Help(line);
  } else if (!order.empty()) {
    size_t selected = 0;
    for (size_t i = 0; i < order.size(); ++i)
      if (frame.gpus[order[i]].index == view.selected_gpu) selected = i;
    const GpuView& sel = frame.gpus[order[selected]];
    // Budget: the detail and the alerts get their lines first, the GPU list the rest.
    const int detail = DetailHeight(sel);
    const int alerts =
        frame.alerts_note.empty() ? 1 + std::min<int>(static_cast<int>(frame.alerts.size()), 4) : 1;
    const int body = height - 1 - line.lines();
    const int list = std::max(BlockHeight(sel), body - std::min(detail, 6) - alerts - 2);
    // Scroll so that the selected GPU's block is inside the list's lines.
    size_t first = 0;
    for (;;) {
      int used = 0;
      size_t last = first;
      while (last < order.size() && used + BlockHeight(frame.gpus[order[last]]) <= list)
        used += BlockHeight(frame.gpus[order[last++]]);
      if (selected < last || first == selected) break;
      ++first;
    }
    int used = 0;
    for (size_t i = first; i < order.size(); ++i) {
      const GpuView& g = frame.gpus[order[i]];
      if (used + BlockHeight(g) > list) break;
      used += BlockHeight(g);
      GpuBlock(g, i == selected, line);
    }
    line.End();
    const int limit_before_alerts = height - 1 - alerts - 1;
    line.set_max_lines(std::min(height - 1, std::max(line.lines() + 1, limit_before_alerts)));
    Detail(sel, line);
    line.set_max_lines(height - 1);
    line.End();
    Alerts(frame, static_cast<size_t>(std::max(0, height - 2 - line.lines())), line);
  }
  // Blank lines down to the key line, which sits on the last row.
  while (line.lines() < height - 1) line.End();
  line.set_max_lines(height);
  line.Style(kReverse);
  line.Text(" q quit  j/k select  s sort: ");
  line.Text(SortName(view.sort));
  line.Text("  h help ");
  line.Unstyle();
  line.End();
  return out_;
}

}  // namespace gw::top
