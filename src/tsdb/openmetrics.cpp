#include "tsdb/openmetrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace gw::tsdb {

namespace {

bool IsNameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
bool IsNameChar(char c) {
  return IsNameStart(c) || (c >= '0' && c <= '9');
}

bool ParseNumber(std::string_view s, double* v) {
  if (s == "NaN") {
    *v = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (s == "+Inf" || s == "Inf") {
    *v = std::numeric_limits<double>::infinity();
    return true;
  }
  if (s == "-Inf") {
    *v = -std::numeric_limits<double>::infinity();
    return true;
  }
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && end == s.data() + s.size();
}

// Finds the end of the series text (name plus optional {labels}) starting at `line[0]`;
// npos if malformed.
size_t SeriesEnd(std::string_view line) {
  size_t i = 0;
  if (line.empty() || !IsNameStart(line[0])) return std::string_view::npos;
  while (i < line.size() && IsNameChar(line[i])) ++i;
  if (i < line.size() && line[i] == '{') {
    bool in_quotes = false;
    for (++i; i < line.size(); ++i) {
      char c = line[i];
      if (in_quotes) {
        if (c == '\\') {
          ++i;
        } else if (c == '"') {
          in_quotes = false;
        }
      } else if (c == '"') {
        in_quotes = true;
      } else if (c == '}') {
        return i + 1;
      }
    }
    return std::string_view::npos;
  }
  return i;
}

}  // namespace

Status ParseSeries(std::string_view series, Labels* out) {
  out->clear();
  size_t i = 0;
  while (i < series.size() && IsNameChar(series[i])) ++i;
  if (i == 0) return Error{"missing metric name"};
  out->push_back({"__name__", std::string(series.substr(0, i))});
  if (i == series.size()) return Status::Ok();
  if (series[i] != '{') return Error{"unexpected character after the metric name"};
  ++i;
  while (i < series.size() && series[i] != '}') {
    size_t start = i;
    while (i < series.size() && IsNameChar(series[i])) ++i;
    if (i == start || i >= series.size() || series[i] != '=')
      return Error{"malformed label name in " + std::string(series)};
    std::string name(series.substr(start, i - start));
    ++i;
    if (i >= series.size() || series[i] != '"') return Error{"label value must be quoted"};
    ++i;
    std::string value;
    while (i < series.size() && series[i] != '"') {
      char c = series[i];
      if (c == '\\' && i + 1 < series.size()) {
        char e = series[++i];
        value += e == 'n' ? '\n' : e;
      } else {
        value += c;
      }
      ++i;
    }
    if (i >= series.size()) return Error{"unterminated label value"};
    ++i;  // closing quote
    if (i < series.size() && series[i] == ',') ++i;
    if (!value.empty()) out->push_back({std::move(name), std::move(value)});
  }
  std::sort(out->begin(), out->end());
  for (size_t k = 1; k < out->size(); ++k)
    if ((*out)[k].name == (*out)[k - 1].name)
      return Error{"duplicate label name '" + (*out)[k].name + "'"};
  return Status::Ok();
}

Status ParseText(std::string_view text, const std::string& file_label, const TextOptions& options,
                 const SampleSink& sink) {
  size_t line_no = 0;
  size_t pos = 0;
  auto where = [&] { return file_label + ":" + std::to_string(line_no) + ": "; };
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? text.npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    if (line[0] == '#') {
      if (line == "# EOF") return Status::Ok();
      continue;
    }
    size_t end = SeriesEnd(line);
    if (end == std::string_view::npos)
      return Error{where() + "malformed series: " + std::string(line.substr(0, 80))};
    std::string_view series = line.substr(0, end);
    std::string_view rest = line.substr(end);
    if (rest.empty() || rest[0] != ' ') return Error{where() + "expected a space and a value"};
    rest.remove_prefix(1);
    size_t space = rest.find(' ');
    std::string_view value_text = rest.substr(0, space);
    double v = 0;
    if (!ParseNumber(value_text, &v))
      return Error{where() + "invalid value '" + std::string(value_text) + "'"};
    int64_t t_ms = options.default_t_ms;
    // OpenMetrics: an exemplar ("value # {labels} v") may follow the value with no timestamp.
    if (space != std::string_view::npos && rest.substr(space + 1, 1) == "#")
      space = std::string_view::npos;
    if (space != std::string_view::npos) {
      std::string_view ts = rest.substr(space + 1);
      size_t exemplar = ts.find(" #");
      if (exemplar != std::string_view::npos) ts = ts.substr(0, exemplar);
      double t = 0;
      const double ms = ParseNumber(ts, &t) ? (options.timestamps_in_seconds ? t * 1000 : t) : NAN;
      // Beyond int64 milliseconds (±292 million years) too: refused, never wrapped.
      if (!(std::fabs(ms) < 9.2e18))
        return Error{where() + "invalid timestamp '" + std::string(ts) + "'"};
      t_ms = static_cast<int64_t>(options.timestamps_in_seconds ? std::round(ms) : ms);
    }
    if (Status s = sink(series, t_ms, v); !s.ok()) return Error{where() + s.message()};
  }
  return Status::Ok();
}

void AppendOpenMetricsSeries(const SeriesData& series, std::string* out) {
  std::string head(LabelValue(series.labels, "__name__"));
  bool any = false;
  for (const Label& l : series.labels) {
    if (l.name == "__name__") continue;
    head += any ? "," : "{";
    any = true;
    head += l.name + "=\"";
    for (char c : l.value) {
      if (c == '\\' || c == '"') {
        head += '\\';
        head += c;
      } else if (c == '\n') {
        head += "\\n";
      } else {
        head += c;
      }
    }
    head += '"';
  }
  if (any) head += '}';
  char buffer[64];
  for (const Sample& s : series.samples) {
    if (IsStaleNaN(s.v)) continue;  // OpenMetrics cannot say "stale"
    *out += head;
    *out += ' ';
    if (std::isnan(s.v)) {
      *out += "NaN";
    } else if (std::isinf(s.v)) {
      *out += s.v > 0 ? "+Inf" : "-Inf";
    } else {
      auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, s.v);
      out->append(buffer, ec == std::errc() ? end : buffer);
    }
    std::snprintf(buffer, sizeof buffer, " %lld.%03lld\n", static_cast<long long>(s.t_ms / 1000),
                  static_cast<long long>(std::llabs(s.t_ms % 1000)));
    *out += buffer;
  }
}

}  // namespace gw::tsdb
