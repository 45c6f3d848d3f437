// The report as one self-contained HTML5 page: inline CSS, inline SVG charts, no script, no
// external reference.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iterator>

#include "base/html.h"
#include "diagnose/checks.h"
#include "report/report.h"

namespace gw::report {

namespace {

std::string Fmt(const char* format, double v) {
  char b[64];
  std::snprintf(b, sizeof b, format, v);
  return b;
}

std::string Clock(int64_t ms, const char* format = "%Y-%m-%d %H:%M UTC") {
  std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char b[40];
  std::strftime(b, sizeof b, format, &tm);
  return b;
}

// "the last 7d", or "the 5m of data in the last 7d" when the store covers part of the period.
std::string Coverage(const Report& r) {
  return diagnose::CoverageText(r.period_s, r.data_start_ms, r.data_end_ms);
}

std::string Value(double v, std::string_view unit) {
  return std::isfinite(v) ? HtmlEscape(diagnose::FormatValue(v, unit)) : "–";
}

constexpr const char* kCss = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2330;margin:0;background:#f4f6f9}
main{max-width:1100px;margin:0 auto;padding:24px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 10px;border-bottom:2px solid #d8dde6;padding-bottom:4px}
h3{font-size:15px;margin:16px 0 6px}
.sub{color:#5b6475}
.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{background:#fff;border:1px solid #d8dde6;border-radius:6px;padding:10px 14px;min-width:130px}
.card b{display:block;font-size:20px}
.scroll{overflow-x:auto;max-width:100%;margin:6px 0}
table{border-collapse:collapse;width:100%;background:#fff}
th,td{border:1px solid #d8dde6;padding:5px 8px;text-align:left;vertical-align:top}
th{background:#eef1f6}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.sev{display:inline-block;border-radius:3px;padding:0 6px;color:#fff;font-size:12px;font-weight:600}
.critical{background:#c0392b}.warning{background:#d68910}.info{background:#2e86c1}
.verdict{font-size:18px;font-weight:700;text-transform:uppercase}
.note{color:#5b6475;font-style:italic}
code{font-size:12px;background:#eef1f6;padding:1px 3px;border-radius:3px;word-break:break-all}
svg{background:#fff;border:1px solid #d8dde6;border-radius:6px;max-width:100%;height:auto}
svg text{font:11px sans-serif;fill:#5b6475}
.legend span{display:inline-block;margin-right:12px;font-size:12px}
.legend i{display:inline-block;width:12px;height:3px;margin-right:4px;vertical-align:middle}
.coverage{background:#fff6e0;border:1px solid #e8c76a;border-radius:6px;padding:6px 10px}
@media (max-width:640px){main{padding:12px}h1{font-size:20px}.card{min-width:0;flex:1 1 40%}
th,td{padding:4px 5px}.card b{font-size:17px}}
)";

constexpr const char* kPalette[] = {"#2e86c1", "#c0392b", "#27ae60", "#d68910", "#8e44ad",
                                    "#16a085", "#7f8c8d", "#e67e22", "#2c3e50", "#c2185b"};

// A nice upper bound for an axis.
double NiceMax(double v) {
  if (!(v > 0)) return 1;
  const double p = std::pow(10, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * p >= v) return m * p;
  return 10 * p;
}

std::string LineChart(const Chart& chart, int64_t start_ms, int64_t end_ms) {
  if (chart.lines.empty()) return "";
  const double w = 760, h = 240, left = 64, right = 16, top = 14, bottom = 28;
  double ymax = chart.unit == "ratio" ? 1 : 0;
  for (const ChartLine& l : chart.lines)
    for (const promql::Point& p : l.points)
      if (std::isfinite(p.v)) ymax = std::max(ymax, p.v);
  ymax = NiceMax(ymax);
  auto x = [&](int64_t t) {
    return left + (w - left - right) * double(t - start_ms) /
                      double(std::max<int64_t>(1, end_ms - start_ms));
  };
  auto y = [&](double v) { return top + (h - top - bottom) * (1 - v / ymax); };
  std::string svg =
      "<svg viewBox=\"0 0 760 240\" width=\"760\" height=\"240\" role=\"img\" "
      "aria-label=\"" +
      HtmlEscape(chart.title) + "\">";
  for (int i = 0; i <= 4; ++i) {
    const double v = ymax * i / 4;
    svg += "<line x1=\"" + Fmt("%.1f", left) + "\" x2=\"" + Fmt("%.1f", w - right) + "\" y1=\"" +
           Fmt("%.1f", y(v)) + "\" y2=\"" + Fmt("%.1f", y(v)) + "\" stroke=\"#e3e7ee\"/>";
    svg += "<text x=\"" + Fmt("%.1f", left - 6) + "\" y=\"" + Fmt("%.1f", y(v) + 4) +
           "\" text-anchor=\"end\">" + Value(v, chart.unit) + "</text>";
  }
  for (int i = 0; i <= 4; ++i) {
    const int64_t t = start_ms + (end_ms - start_ms) * i / 4;
    // The last label ends at the plot's right edge (centred it would run past the picture).
    const char* anchor = i == 4 ? "end" : "middle";
    svg += "<text x=\"" + Fmt("%.1f", x(t)) + "\" y=\"" + Fmt("%.1f", h - 8) + "\" text-anchor=\"" +
           anchor + "\">" + HtmlEscape(Clock(t, "%m-%d %H:%M")) + "</text>";
  }
  for (size_t i = 0; i < chart.lines.size(); ++i) {
    std::string points;
    for (const promql::Point& p : chart.lines[i].points) {
      if (!std::isfinite(p.v)) continue;
      points += Fmt("%.1f", x(p.t_ms)) + "," + Fmt("%.1f", y(p.v)) + " ";
    }
    if (points.empty()) continue;
    points.pop_back();
    svg += "<polyline fill=\"none\" stroke-width=\"1.6\" stroke=\"" +
           std::string(kPalette[i % std::size(kPalette)]) + "\" points=\"" + points + "\"/>";
  }
  svg += "</svg>";
  std::string legend = "<div class=\"legend\">";
  for (size_t i = 0; i < chart.lines.size(); ++i)
    legend += "<span><i style=\"background:" + std::string(kPalette[i % std::size(kPalette)]) +
              "\"></i>" + HtmlEscape(chart.lines[i].label) + "</span>";
  legend += "</div>";
  return "<h3>" + HtmlEscape(chart.title) + "</h3>" + svg + legend +
         "<p class=\"sub\">Query: <code>" + HtmlEscape(chart.query) + "</code></p>";
}

void FleetSection(const Report& r, std::string* out) {
  const Fleet& f = r.fleet;
  auto card = [out](const std::string& label, const std::string& value) {
    *out += "<div class=\"card\"><b>" + value + "</b>" + HtmlEscape(label) + "</div>";
  };
  *out += "<h2>Fleet health</h2><div class=\"cards\">";
  card("GPUs seen (up at the end)", Fmt("%.0f", f.gpus) + " (" + Fmt("%.0f", f.gpus_up) + ")");
  card("average GPU utilization", Value(f.utilization, "ratio"));
  card("average memory-controller utilization", Value(f.memory_utilization, "ratio"));
  card("energy used", std::isfinite(f.energy_kwh) ? Fmt("%.2f kWh", f.energy_kwh) : "–");
  card("time clocks were held down (avg per GPU)", Value(f.throttled_share, "ratio"));
  card("findings: critical / warning / info", std::to_string(f.findings[0]) + " / " +
                                                  std::to_string(f.findings[1]) + " / " +
                                                  std::to_string(f.findings[2]));
  int active = 0;
  for (const AlertRow& a : r.alerts) active += a.active;
  card("alerts that fired (still firing)",
       std::to_string(r.alerts.size()) + " (" + std::to_string(active) + ")");
  *out += "</div>";
  *out += LineChart(r.utilization, r.time_ms - static_cast<int64_t>(r.period_s * 1000), r.time_ms);
}

void ProblemsSection(const Report& r, std::string* out) {
  *out += "<h2>Top problems by layer</h2>";
  if (r.diagnosis.findings.empty()) {
    *out += "<p>No findings in the period.</p>";
    return;
  }
  for (int layer = 0; layer <= static_cast<int>(diagnose::Layer::kBusiness); ++layer) {
    std::string rows;
    int n = 0;
    for (const diagnose::Finding& f : r.diagnosis.findings) {
      if (static_cast<int>(f.layer) != layer || n >= 10) continue;
      ++n;
      const std::string sev(diagnose::SeverityName(f.severity));
      std::string evidence;
      for (size_t i = 0; i < f.evidence.size() && i < 3; ++i)
        evidence += HtmlEscape(f.evidence[i].what) + ": " +
                    Value(f.evidence[i].value, f.evidence[i].unit) + "<br>";
      rows += "<tr><td><span class=\"sev " + sev + "\">" + sev + "</span></td><td><b>" +
              HtmlEscape(f.title) + "</b><br><span class=\"sub\">" + HtmlEscape(f.kind) +
              (f.cause.empty() ? "" : " — " + HtmlEscape(f.cause)) + "</span></td><td>" + evidence +
              "<code>" + HtmlEscape(f.evidence.empty() ? "" : f.evidence[0].query) +
              "</code></td><td>" + HtmlEscape(Clock(f.since_ms)) +
              (f.active ? "<br>still active" : "<br>until " + HtmlEscape(Clock(f.last_ms))) +
              "</td><td>" + HtmlEscape(f.action) + "</td></tr>";
    }
    if (n == 0) continue;
    std::string name(diagnose::LayerName(static_cast<diagnose::Layer>(layer)));
    *out += "<h3>" + HtmlEscape(name) +
            " layer</h3><div class=\"scroll\"><table><thead><tr><th>severity</th><th>finding</th>"
            "<th>evidence</th><th>when</th><th>action</th></tr></thead><tbody>" +
            rows + "</tbody></table></div>";
  }
}

void TeamsSection(const Report& r, std::string* out) {
  *out += "<h2>Teams: usage, idle, quota, cost</h2>";
  if (r.teams.empty()) {
    *out += "<p class=\"note\">No per-team data in the period.</p>";
    return;
  }
  *out +=
      "<div class=\"scroll\"><table><thead><tr><th>team</th><th>GPU-hours</th><th>idle "
      "GPU-hours</th>"
      "<th>idle share</th><th>energy</th>";
  if (r.has_quota) *out += "<th>quota (GPUs)</th><th>avg GPUs held / quota</th>";
  if (r.has_cost) *out += "<th>cost</th><th>idle cost</th>";
  *out += "</tr></thead><tbody>";
  for (const TeamRow& t : r.teams) {
    const double idle_share = t.gpu_hours > 0 ? t.idle_gpu_hours / t.gpu_hours : NAN;
    *out += "<tr><td>" + HtmlEscape(t.team) + "</td><td class=\"n\">" +
            (std::isfinite(t.gpu_hours) ? Fmt("%.1f", t.gpu_hours) : "–") +
            "</td><td class=\"n\">" +
            (std::isfinite(t.idle_gpu_hours) ? Fmt("%.1f", t.idle_gpu_hours) : "–") +
            "</td><td class=\"n\">" + Value(idle_share, "ratio") + "</td><td class=\"n\">" +
            (std::isfinite(t.energy_kwh) ? Fmt("%.2f kWh", t.energy_kwh) : "–") + "</td>";
    if (r.has_quota) {
      const bool quota = t.quota_gpus && *t.quota_gpus > 0;
      *out += "<td class=\"n\">" + (quota ? Fmt("%.0f", *t.quota_gpus) : "none") +
              "</td><td class=\"n\">" +
              (quota && std::isfinite(t.avg_gpus_held)
                   ? Fmt("%.1f", t.avg_gpus_held) + " / " + Fmt("%.0f", *t.quota_gpus) + " = " +
                         Value(t.avg_gpus_held / *t.quota_gpus, "ratio")
                   : "–") +
              "</td>";
    }
    if (r.has_cost) {
      *out += "<td class=\"n\">" + (t.cost ? Fmt("%.2f", *t.cost) : "–") + "</td><td class=\"n\">" +
              (t.idle_cost ? Fmt("%.2f", *t.idle_cost) : "–") + "</td>";
    }
    *out += "</tr>";
  }
  *out += "</tbody></table></div>";
  if (r.has_quota)
    *out += "<p class=\"sub\">GPUs held on average over " + HtmlEscape(Coverage(r)) +
            " (GPU-hours / hours of data).</p>";
}

// Cost per output: shown only when services are configured with gpus (gpu_service_cost_total).
void ServicesSection(const Report& r, std::string* out) {
  if (r.services.empty()) return;
  *out +=
      "<h2>Services: cost per output</h2><div "
      "class=\"scroll\"><table><thead><tr><th>service</th><th>GPU cost</th>"
      "<th>outputs</th><th>cost per 1000 outputs</th></tr></thead><tbody>";
  for (const ServiceRow& s : r.services) {
    const std::string unit = s.unit.empty() ? "" : " " + HtmlEscape(s.unit) + "s";
    *out += "<tr><td>" + HtmlEscape(s.target) + "</td><td class=\"n\">" +
            (std::isfinite(s.cost) ? Fmt("%.2f", s.cost) : "–") + "</td><td class=\"n\">" +
            (std::isfinite(s.outputs) ? Fmt("%.0f", s.outputs) + unit : "–") +
            "</td><td class=\"n\">" +
            (std::isfinite(s.cost_per_output) ? Fmt("%.4f", s.cost_per_output * 1000) : "–") +
            "</td></tr>";
  }
  *out += "</tbody></table></div>";
}

// The alerts of the agent's rules that fired in the period, with their firing time from the data.
void AlertsSection(const Report& r, std::string* out) {
  *out += "<h2>Alerts that fired</h2>";
  if (r.alerts.empty()) {
    *out += "<p>No alert fired in the period (ALERTS{alertstate=\"firing\"} in the store).</p>";
    return;
  }
  *out +=
      "<div class=\"scroll\"><table><thead><tr><th>alert</th><th>severity</th><th>on</th>"
      "<th>first fired</th><th>last firing</th><th>firing for</th></tr></thead><tbody>";
  for (const AlertRow& a : r.alerts) {
    const std::string sev =
        a.severity == "critical" || a.severity == "warning" ? a.severity : "info";
    *out += "<tr><td><b>" + HtmlEscape(a.alertname) + "</b></td><td>" +
            (a.severity.empty()
                 ? std::string("–")
                 : "<span class=\"sev " + sev + "\">" + HtmlEscape(a.severity) + "</span>") +
            "</td><td>" + (a.labels.empty() ? "–" : HtmlEscape(a.labels)) + "</td><td>" +
            HtmlEscape(Clock(a.first_ms)) + "</td><td>" +
            (a.active ? std::string("still firing") : HtmlEscape(Clock(a.last_ms))) +
            "</td><td class=\"n\">" +
            (a.firing_s > 0 ? HtmlEscape(FormatDuration(std::round(a.firing_s)))
                            : std::string("one evaluation")) +
            (a.episodes > 1 ? " in " + std::to_string(a.episodes) + " episodes" : "") +
            "</td></tr>";
  }
  *out += "</tbody></table></div>";
}

// Outcomes and throughput per team from the job records that ended in the period.
void OutcomesSection(const Report& r, std::string* out) {
  *out += "<h2>Teams: job outcomes and throughput</h2>";
  int with_outcome = 0;
  for (const TeamOutcomeRow& o : r.outcomes) with_outcome += o.with_outcome;
  if (r.outcomes.empty()) {
    *out += std::string("<p class=\"note\">No outcome data: ") +
            (r.has_outcome_records ? "no job record ended in the period."
                                   : "no job records were read for this report.") +
            "</p>";
    return;
  }
  *out +=
      "<div class=\"scroll\"><table><thead><tr><th>team</th><th>jobs ended</th>"
      "<th>success rate</th><th>GPU-caused failures</th><th>throughput per GPU-hour</th>"
      "<th>throughput per cost unit</th></tr></thead><tbody>";
  for (const TeamOutcomeRow& o : r.outcomes) {
    std::string per_hour, per_cost;
    for (const auto& [unit, t] : o.throughput) {
      if (t.gpu_hours > 0)
        per_hour += Fmt("%.4g ", t.total / t.gpu_hours) + HtmlEscape(unit) + "<br>";
      if (t.cost > 0)
        per_cost += Fmt("%.4g ", t.total / t.cost) + HtmlEscape(unit) + " per " +
                    HtmlEscape(t.currency.empty() ? "cost unit" : t.currency) + "<br>";
    }
    *out += "<tr><td>" + HtmlEscape(o.team) + "</td><td class=\"n\">" + std::to_string(o.jobs) +
            "</td><td class=\"n\">" +
            (o.with_outcome > 0 ? Value(double(o.completed) / o.with_outcome, "ratio") + " of " +
                                      std::to_string(o.with_outcome)
                                : std::string("no outcome data")) +
            "</td><td class=\"n\">" +
            (o.with_outcome > 0 ? std::to_string(o.gpu_failures) : std::string("–")) +
            "</td><td class=\"n\">" + (per_hour.empty() ? "–" : per_hour) +
            "</td><td class=\"n\">" + (per_cost.empty() ? "–" : per_cost) + "</td></tr>";
  }
  *out += "</tbody></table></div>";
  if (with_outcome == 0)
    *out +=
        "<p class=\"note\">No outcome data in these jobs' records (outcomes are recorded by "
        "agents that classify job ends).</p>";
}

void GpusSection(const Report& r, std::string* out) {
  *out += "<h2>ECC and XID history per GPU</h2>";
  if (r.gpus.empty()) {
    *out += "<p class=\"note\">No GPU in the period.</p>";
    return;
  }
  *out +=
      "<div class=\"scroll\"><table><thead><tr><th>GPU</th><th>model</th><th>avg util</th><th>max "
      "temp</th>"
      "<th>clocks held down</th><th>corrected ECC (new)</th><th>uncorrectable ECC (new)</th>"
      "<th>remapped rows</th><th>repair pending</th><th>XIDs</th></tr></thead><tbody>";
  for (const GpuRow& g : r.gpus) {
    std::string xids;
    for (const auto& [code, n] : g.xids)
      xids += "XID " + HtmlEscape(code) + " × " + Fmt("%.0f", n) + "<br>";
    *out += "<tr><td>" + HtmlEscape(g.gpu) + "<br><span class=\"sub\">" + HtmlEscape(g.uuid) +
            "</span></td><td>" + HtmlEscape(g.name) + "</td><td class=\"n\">" +
            Value(g.utilization, "ratio") + "</td><td class=\"n\">" +
            Value(g.temperature_max, "celsius") + "</td><td class=\"n\">" +
            Value(g.throttled_share, "ratio") + "</td><td class=\"n\">" +
            Value(g.ecc_corrected, "count") + "</td><td class=\"n\">" +
            Value(g.ecc_uncorrected, "count") + "</td><td class=\"n\">" +
            Value(g.remapped_rows, "count") + "</td><td>" + (g.repair_pending ? "yes" : "no") +
            "</td><td>" + (xids.empty() ? "none" : xids) + "</td></tr>";
  }
  *out += "</tbody></table></div>";
  *out += LineChart(r.ecc, r.time_ms - static_cast<int64_t>(r.period_s * 1000), r.time_ms);
}

}  // namespace

std::string ToHtml(const Report& r) {
  const int64_t start = r.time_ms - static_cast<int64_t>(r.period_s * 1000);
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<title>gpuwarden report " +
      HtmlEscape(Clock(start)) + " – " + HtmlEscape(Clock(r.time_ms)) + "</title><style>" + kCss +
      "</style></head><body><main>";
  out += "<h1>GPU fleet report</h1><p class=\"sub\">" + HtmlEscape(Clock(start)) + " – " +
         HtmlEscape(Clock(r.time_ms)) + " (" + HtmlEscape(FormatDuration(r.period_s)) +
         "), generated by gpuwarden from its history store.</p>";
  if (r.data_end_ms <= 0) {
    out += "<p class=\"coverage\">No GPU data in this period.</p>";
  } else if (Coverage(r).rfind("the last ", 0) != 0) {
    out += "<p class=\"coverage\">Figures are over " + HtmlEscape(Coverage(r)) + " (" +
           HtmlEscape(Clock(r.data_start_ms)) + " – " + HtmlEscape(Clock(r.data_end_ms)) +
           "): averages and rates count only the time with data.</p>";
  }
  FleetSection(r, &out);
  AlertsSection(r, &out);
  ProblemsSection(r, &out);
  TeamsSection(r, &out);
  OutcomesSection(r, &out);
  ServicesSection(r, &out);
  out += "<h2>Queue-wait trend</h2>";
  if (r.queue_wait.lines.empty()) {
    out += "<p class=\"note\">No queue-wait data in the period.</p>";
  } else {
    out += LineChart(r.queue_wait, start, r.time_ms);
  }
  GpusSection(r, &out);
  out += "<h2>Capacity recommendation</h2><p><span class=\"verdict\">" +
         HtmlEscape(r.capacity.verdict) + "</span></p><p>" + HtmlEscape(r.capacity.reason) + "</p>";
  if (!r.notes.empty() || !r.errors.empty()) {
    out += "<h2>Notes</h2><ul>";
    for (const std::string& n : r.notes) out += "<li>" + HtmlEscape(n) + "</li>";
    for (const std::string& e : r.errors) out += "<li>query failed: " + HtmlEscape(e) + "</li>";
    out += "</ul>";
  }
  out += "</main></body></html>\n";
  return out;
}

}  // namespace gw::report
