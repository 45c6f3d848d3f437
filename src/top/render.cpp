// The frame renderer of `gpuwarden top` (top/render.h). One piece: the layout pass that shares the
// rows between the GPU list, detail, history, processes and alerts, and the block and one-line
// renderers it sizes, depend on each other's measurements line by line; the process table is
// render_processes.cpp, the datacenter parts render_datacenter.cpp.
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

// The worse of a GPU's health problems and the alerts firing about it; false when it has none.
bool Worst(const GpuView& g, Severity* worst) {
  bool any = false;
  if (g.has_problem) {
    *worst = g.worst;
    any = true;
  }
  if (!g.firing_alerts.empty() &&
      (!any || static_cast<int>(g.alert_worst) > static_cast<int>(*worst))) {
    *worst = g.alert_worst;
    any = true;
  }
  return any;
}

const char* Mark(const GpuView& g) {
  Severity worst = Severity::kInfo;
  if (!Worst(g, &worst)) return "  ";
  return worst == Severity::kCritical ? "!!" : worst == Severity::kWarning ? "! " : "  ";
}

// The colour of a bar filled to `r` of its limit: green below 80 %, yellow from 80 %, red from
// 95 % (the thresholds the help text gives).
const char* LimitColour(double r) {
  return r >= 0.95 ? kRed : r >= 0.8 ? kYellow : kGreen;
}

// `name` without a leading "NVIDIA " (the one-line rows have no room for it).
std::string_view ShortName(const std::string& name) {
  std::string_view n = name;
  if (n.rfind("NVIDIA ", 0) == 0) n.remove_prefix(7);
  return n;
}

// The last `cols` samples of `history` (`count` valid) as a sparkline.
void Spark(const std::array<float, kHistoryLength>& history, size_t count, int cols,
           LineWriter& line) {
  const auto& levels = line.screen() ? kSparkUnicode : kSparkAscii;
  cols = std::min<int>(cols, static_cast<int>(kHistoryLength));
  for (int i = 0; i < cols; ++i) {
    float v = history[kHistoryLength - static_cast<size_t>(cols) + static_cast<size_t>(i)];
    size_t age = static_cast<size_t>(cols - i);
    if (age > count || v < 0) {
      line.Text(levels[0]);
      continue;
    }
    line.Text(levels[1 + std::clamp(static_cast<int>(v * 7.999f), 0, 7)]);
  }
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
      case SortKey::kProblems: {
        if (g.lost) return 10;
        Severity worst = Severity::kInfo;
        return Worst(g, &worst) ? 1 + static_cast<int>(worst) : 0;
      }
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
  // The fullest header that fits: level 0 says everything; each level drops or shortens one
  // thing (the driver, the date, the queue's words, the sort labels, the title, then the queue
  // and the title altogether) — never the source, the GPU count or the time.
  char date[40] = "", clock[24] = "";
  if (frame.taken_unix_seconds > 0) {
    std::time_t t = static_cast<std::time_t>(frame.taken_unix_seconds);
    std::tm tm{};
    gmtime_r(&t, &tm);
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M:%SZ", &tm);
    std::strftime(clock, sizeof clock, "%H:%M:%SZ", &tm);
  }
  char wait[32];
  FormatWait(frame.queue.longest_wait_s, wait, sizeof wait);
  char text[640];
  for (int level = 0;; ++level) {
    const bool last = level >= 7;
    int n = level >= 7 ? std::snprintf(text, sizeof text, "%s", frame.source.c_str())
            : level >= 5
                ? std::snprintf(text, sizeof text, "gw top | %s", frame.source.c_str())
                : std::snprintf(text, sizeof text, "gpuwarden top | %s", frame.source.c_str());
    auto add = [&](const char* format, auto... args) {
      if (n >= 0 && static_cast<size_t>(n) < sizeof text)
        n += std::snprintf(text + n, sizeof text - static_cast<size_t>(n), format, args...);
    };
    if (frame.nvml_up) {
      add(" | %zu GPU%s", frame.gpus.size(), frame.gpus.size() == 1 ? "" : "s");
      if (level < 1 && !frame.driver_version.empty())
        add(" | driver %s", frame.driver_version.c_str());
      if (frame.taken_unix_seconds > 0) add(" | %s", level < 2 ? date : clock);
    }
    if (frame.queue.shown && level < 6) {
      if (level < 3)
        add(" | queued %zu, longest wait %s%s", frame.queue.jobs, frame.queue.jobs ? wait : "-",
            frame.queue.up ? "" : " (Slurm not answering)");
      else
        add(" | q %zu/%s%s", frame.queue.jobs, frame.queue.jobs ? wait : "-",
            frame.queue.up ? "" : "?");
    }
    if (line.screen()) {
      const std::string_view sort = SortName(view.sort);
      const std::string_view procs = ProcessSortName(view.process_sort);
      if (level < 4)
        add(" | sort: %.*s, procs: %.*s", static_cast<int>(sort.size()), sort.data(),
            static_cast<int>(procs.size()), procs.data());
      else
        add(" | %.*s/%.*s", static_cast<int>(sort.size()), sort.data(),
            static_cast<int>(procs.size()), procs.data());
    }
    if (n < 0) n = 0;
    const int shown = std::min<int>(n, static_cast<int>(sizeof text) - 1);
    if (!last && shown > width_) continue;
    std::string_view all(text, static_cast<size_t>(shown));
    const size_t title = level >= 7 ? 0 : all.find(" | ");
    line.Style(kBold);
    line.Text(all.substr(0, title));
    line.Unstyle();
    if (title != std::string_view::npos) line.Text(all.substr(title));
    break;
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
  // Title: selection, problem mark, index, name, state, holder, alerts firing.
  Severity worst = Severity::kInfo;
  const bool marked = Worst(g, &worst);
  if (marked) line.Style(SeverityColour(worst));
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
  if (!g.firing_alerts.empty()) {
    line.Unstyle();
    line.Style(SeverityColour(g.alert_worst));
    line.Format("  %.0f alert", static_cast<double>(g.firing_alerts.size()));
    line.Text(g.firing_alerts.size() == 1 ? " firing" : "s firing");
    line.Unstyle();
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
      {"mem ", Ratio(g.memory_used_bytes, g.memory_total_bytes), true},
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
    const char* colour = i == 4 && g.hollow ? kYellow : !it.warn ? kGreen : LimitColour(r);
    line.Style(colour);
    for (int b = 0; b < filled; ++b) line.Text("|");
    line.Unstyle();
    if (marked) line.Style(SeverityColour(worst));
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
    Spark(g.history, g.history_count, spark, line);
    line.Unstyle();
  }
  line.End();
  for (const MigView& m : g.mig) MigRow(m, line);
}

void FrameRenderer::CompactRow(const GpuView& g, bool selected, LineWriter& line) {
  Severity worst = Severity::kInfo;
  const bool marked = Worst(g, &worst);
  // The row's own style (its problem's colour, reverse when selected), taken up again after each
  // figure with a colour of its own.
  auto row_style = [&] {
    if (marked) line.Style(SeverityColour(worst));
    if (selected && line.screen()) line.Style(kReverse);
  };
  row_style();
  line.Text(selected ? ">" : " ");
  line.Text(Mark(g));
  line.Format("GPU %-2.0f ", g.index);
  // The name gets what the figures leave: "util [..] 99% mem [..] 88% 699W  71C A2".
  const int name_cols = std::clamp(width_ - 66, 10, 24);
  const int start = line.col();
  const std::string_view name = ShortName(g.name);
  line.Text(name.substr(0, static_cast<size_t>(name_cols)));
  line.PadTo(start + name_cols + 1);
  if (g.lost) {
    line.Text("LOST: fell off the bus; XIDs: ");
    line.Text(OrElse(g.xids, "none"));
    line.End();
    return;
  }
  // SM active (GPM) follows the utilization figure where some GPU of the frame has it.
  const int sm_cols = frame_has_sm_ ? 7 : 0;
  const int bar = std::clamp((width_ - line.col() - 38 - sm_cols) / 2, 3, 30);
  const double ratios[2] = {g.util, Ratio(g.memory_used_bytes, g.memory_total_bytes)};
  for (int i = 0; i < 2; ++i) {
    line.Text(i == 0 ? "util [" : " mem [");
    const double r = IsAbsent(ratios[i]) ? 0 : std::clamp(ratios[i], 0.0, 1.0);
    const int filled = static_cast<int>(std::lround(r * bar));
    line.Style(i == 0 ? kGreen : LimitColour(r));
    for (int b = 0; b < filled; ++b) line.Text("|");
    line.Unstyle();
    row_style();
    for (int b = filled; b < bar; ++b) line.Text(" ");
    line.Text("]");
    if (IsAbsent(ratios[i]))
      line.Text("    -");
    else
      line.Format("%4.0f%%", ratios[i] * 100);
    if (i == 0 && sm_cols > 0) {
      const int at = line.col();
      SmAfterUtilization(g, line);
      row_style();
      line.PadTo(at + sm_cols);
    }
  }
  const double power = Ratio(g.power_w, g.power_limit_w);
  if (!IsAbsent(power)) line.Style(LimitColour(power));
  if (IsAbsent(g.power_w))
    line.Text("     -");
  else
    line.Format(" %4.0fW", g.power_w);
  line.Unstyle();
  row_style();
  const double temp = Ratio(g.temperature_c, g.slowdown_c);
  if (!IsAbsent(temp)) line.Style(LimitColour(temp));
  if (IsAbsent(g.temperature_c))
    line.Text("    -");
  else
    line.Format(" %3.0fC", g.temperature_c);
  line.Unstyle();
  row_style();
  if (!g.firing_alerts.empty()) {
    line.Style(SeverityColour(g.alert_worst));
    line.Format(" A%.0f", static_cast<double>(g.firing_alerts.size()));
    line.Unstyle();
    row_style();
  }
  if (!g.holder.job.empty() && line.remaining() > 8) {
    line.Text("  job ");
    line.Text(g.holder.job);
  }
  line.End();
  // The selected GPU's MIG instances under its row.
  if (selected)
    for (const MigView& m : g.mig) MigRow(m, line);
}

int FrameRenderer::GpuList(const Frame& frame, const std::vector<size_t>& order, size_t selected,
                           int budget, LineWriter& line) {
  const int before = line.lines();
  int full = 0;
  for (size_t pos : order) full += BlockHeight(frame.gpus[pos]);
  // Blocks when every GPU's fits, else one line per GPU; scrolled when even those do not fit.
  const bool compact = full > budget;
  int compact_total = 0;
  for (size_t i = 0; i < order.size(); ++i)
    compact_total += 1 + (i == selected ? static_cast<int>(frame.gpus[order[i]].mig.size()) : 0);
  auto height = [&](size_t i) {
    const GpuView& g = frame.gpus[order[i]];
    if (!compact) return BlockHeight(g);
    return 1 + (i == selected ? static_cast<int>(g.mig.size()) : 0);
  };
  const int total = compact ? compact_total : full;
  const int rows = total > budget ? std::max(1, budget - 1) : budget;  // a line for the hint
  size_t first = 0;
  for (;;) {
    int used = 0;
    size_t last = first;
    while (last < order.size() && used + height(last) <= rows) used += height(last++);
    if (selected < last || first == selected) break;
    ++first;
  }
  int used = 0;
  size_t shown_end = first;
  for (size_t i = first; i < order.size(); ++i) {
    if (used + height(i) > rows && i != first) break;
    used += height(i);
    shown_end = i + 1;
    if (compact)
      CompactRow(frame.gpus[order[i]], i == selected, line);
    else
      GpuBlock(frame.gpus[order[i]], i == selected, line);
  }
  const size_t below = order.size() - shown_end;
  if (first > 0 || below > 0) {
    line.Style(kDim);
    line.Text("  ");
    if (below > 0) {
      line.Text(line.screen() ? "↓ " : "v ");
      line.Format("%.0f more", static_cast<double>(below));
    }
    if (first > 0) {
      line.Text(below > 0 ? ", " : "");
      line.Text(line.screen() ? "↑ " : "^ ");
      line.Format("%.0f above", static_cast<double>(first));
    }
    line.Text(" (j/k)");
    line.Unstyle();
    line.End();
  }
  return line.lines() - before;
}

void FrameRenderer::Detail(const Frame& frame, const GpuView& g, LineWriter& line) {
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
  line.Format("  processes: %.0f", static_cast<double>(g.processes));
  line.End();
  for (size_t i : g.firing_alerts) {
    const AlertView& a = frame.alerts[i];
    line.Text("  ");
    line.Style(a.severity == "critical" ? kRed : a.severity == "warning" ? kYellow : kCyan);
    line.Text("[FIRING ");
    line.Text(OrElse(a.severity, "-"));
    line.Text("] ");
    line.Text(a.name);
    line.Unstyle();
    if (!a.summary.empty()) {
      line.Text(": ");
      line.Text(a.summary);
    }
    line.End();
  }
  if (g.problems.empty() && g.firing_alerts.empty()) {
    line.Text(frame.alerts_note.empty() ? "  no problems found, no alerts firing"
                                        : "  no problems found");
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
  DatacenterDetail(g, line);
}

void FrameRenderer::History(const GpuView& g, LineWriter& line) {
  // Two sparklines a line, each "label spark value" in half the width.
  const int half = (width_ - 2) / 2;
  const int spark = std::max(4, half - 13);
  struct Item {
    const char* label;
    const std::array<float, kHistoryLength>* history;
    double now;    // the value shown after the sparkline
    double ratio;  // against its limit, for the colour
    const char* format;
    bool warn;
  } items[4] = {
      {"util ", &g.history, IsAbsent(g.util) ? g.util : g.util * 100, g.util, "%4.0f%%", false},
      {"mem  ", &g.memory_history, g.memory_used_bytes / kGiB,
       Ratio(g.memory_used_bytes, g.memory_total_bytes), "%5.1fG", true},
      {"pwr  ", &g.power_history, g.power_w, Ratio(g.power_w, g.power_limit_w), "%5.0fW", true},
      {"temp ", &g.temperature_history, g.temperature_c, Ratio(g.temperature_c, g.slowdown_c),
       "%4.0fC", true},
  };
  for (int i = 0; i < 4; ++i) {
    const Item& it = items[i];
    if (i % 2 == 0) line.Text("  ");
    line.Text(it.label);
    line.Style(kCyan);
    Spark(*it.history, g.history_count, spark, line);
    line.Unstyle();
    if (it.warn && !IsAbsent(it.ratio)) line.Style(LimitColour(it.ratio));
    if (IsAbsent(it.now))
      line.Text("     -");
    else
      line.Format(it.format, it.now);
    line.Unstyle();
    if (i % 2 == 1)
      line.End();
    else
      line.PadTo(2 + half);
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
      "  j, Down          select the next GPU (the list scrolls)",
      "  k, Up            select the previous GPU",
      "  s                sort GPUs by index, utilization, memory, power, temperature, problems",
      "  o                sort processes by gpu mem, sm, cpu, host mem, pid, user, command",
      "  /                filter processes by text (name, command, user, job, pid);",
      "                   Enter keeps the filter, Esc clears it",
      "  h, ?             this help (any key returns)",
      "",
      "Reading the screen",
      "  !! / ! before a GPU: a critical / warning health problem or alert (red / yellow);",
      "      \"2 alerts firing\" (A2 on a one-line row): alerts about it that fire now",
      "  mem is against total memory, pwr against the enforced power limit, temp against",
      "      the GPU's slowdown threshold: yellow from 80 %, red from 95 %; util stays green",
      "  throttle: why the clocks are held down (idle and clock settings are not throttling)",
      "  ecc: volatile corrected/uncorrected errors since the last reset; xid: code x count",
      "  sparklines: one column per refresh, newest on the right; under the selected GPU,",
      "      its utilization, memory, power and temperature over the last minutes",
      "  processes: GPU, pid, user, GPU memory, SM share, host CPU (100 % = one core),",
      "      host memory (RSS), command; the selected GPU's are bold, the sort column has ▼",
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
  selected_index_ = ~0u;
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
    ProcessTable(frame, view, frame.processes.size(), line);
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
    selected_index_ = sel.index;
    // Lines between the header and the key line, shared out: the parts under the GPU list get
    // their least first (detail, history, a few process rows, the alerts' line), the list what
    // is left; what the list does not use goes to the process rows and the alerts.
    const int avail = height - 1 - line.lines();
    const size_t processes = ProcessOrder(frame, view).size();
    const int filter_line = !view.filter.empty() || view.editing_filter ? 1 : 0;
    const int detail_want = DetailHeight(frame, sel);
    const int history = avail >= 17 ? 2 : 0;
    const int procs_min =
        filter_line + 1 + std::min<int>(std::max<int>(1, static_cast<int>(processes)), 3);
    const int alerts_min = 1;
    const int detail_min = std::min(detail_want, 3);
    const int list_budget = std::max(1, avail - detail_min - history - procs_min - alerts_min);
    GpuList(frame, order, selected, list_budget, line);
    int left = height - 1 - line.lines();
    const int procs_want = filter_line + 1 + std::max<int>(1, static_cast<int>(processes));
    const int detail_lines =
        std::max(std::min(detail_want, left - history - procs_min - alerts_min), std::min(1, left));
    line.set_max_lines(line.lines() + detail_lines);
    Detail(frame, sel, line);
    line.set_max_lines(height - 1);
    left = height - 1 - line.lines();
    if (history > 0 && left >= history + procs_min + alerts_min) History(sel, line);
    left = height - 1 - line.lines();
    // The process rows first (one line stays for the alerts), then the alerts.
    const int procs_lines = std::clamp(left - alerts_min, 0, procs_want);
    if (procs_lines > filter_line + 1) {
      line.set_max_lines(line.lines() + procs_lines);
      ProcessTable(frame, view, static_cast<size_t>(procs_lines - filter_line - 1), line);
      line.set_max_lines(height - 1);
    }
    if (line.lines() < height - 1)
      Alerts(frame, static_cast<size_t>(std::max(0, height - 2 - line.lines())), line);
  }
  // Blank lines down to the key line, which sits on the last row.
  while (line.lines() < height - 1) line.End();
  line.set_max_lines(height);
  line.Style(kReverse);
  if (view.editing_filter) {
    line.Text(" filter: type text, Enter keeps it, Esc clears it ");
  } else {
    line.Text(" q quit  j/k select  s sort  o procs sort  / filter  h help ");
  }
  line.Unstyle();
  line.End();
  return out_;
}

}  // namespace gw::top
