#include "expo/expo.h"

#include <charconv>
#include <cmath>

namespace gw::expo {

namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Appends `text`, writing each character found in `special` as a backslash escape (newline as
// \n). Runs between special characters are appended whole.
void AppendEscaped(std::string* out, std::string_view text, const char* special) {
  size_t begin = 0;
  for (;;) {
    size_t at = text.find_first_of(special, begin);
    if (at == std::string_view::npos) {
      out->append(text.substr(begin));
      return;
    }
    out->append(text.substr(begin, at - begin));
    *out += '\\';
    *out += text[at] == '\n' ? 'n' : text[at];
    begin = at + 1;
  }
}

std::string_view TypeName(Type type, Format format) {
  switch (type) {
    case Type::kCounter:
      return "counter";
    case Type::kGauge:
      return "gauge";
    case Type::kHistogram:
      return "histogram";
    case Type::kSummary:
      return "summary";
    case Type::kInfo:
      return format == Format::kOpenMetrics ? "info" : "gauge";
    case Type::kUnknown:
      return format == Format::kOpenMetrics ? "unknown" : "untyped";
  }
  return "untyped";
}

// The suffix OpenMetrics keeps on the samples but not on the family name.
std::string_view SampleOnlySuffix(Type type) {
  if (type == Type::kCounter) return "_total";
  if (type == Type::kInfo) return "_info";
  return {};
}

void AppendTimestamp(std::string* out, Format format, int64_t ms) {
  char buffer[32];
  *out += ' ';
  if (format == Format::kText) {
    auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, ms);
    out->append(buffer, end);
    return;
  }
  // OpenMetrics: seconds, with the milliseconds as three decimals when there are any.
  if (ms < 0) *out += '-';
  const uint64_t magnitude = ms < 0 ? 0 - static_cast<uint64_t>(ms) : static_cast<uint64_t>(ms);
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, magnitude / 1000);
  out->append(buffer, end);
  const unsigned rest = static_cast<unsigned>(magnitude % 1000);
  if (rest != 0) {
    *out += '.';
    *out += static_cast<char>('0' + rest / 100);
    *out += static_cast<char>('0' + rest / 10 % 10);
    *out += static_cast<char>('0' + rest % 10);
  }
}

}  // namespace

Format NegotiateFormat(std::string_view accept) {
  return accept.find("application/openmetrics-text") != std::string_view::npos
             ? Format::kOpenMetrics
             : Format::kText;
}

std::string_view ContentType(Format format) {
  return format == Format::kOpenMetrics
             ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
             : "text/plain; version=0.0.4; charset=utf-8";
}

void AppendEscapedLabelValue(std::string* out, std::string_view value) {
  AppendEscaped(out, value, "\\\"\n");
}

void AppendValue(std::string* out, double value) {
  if (std::isnan(value)) {
    *out += "NaN";
    return;
  }
  if (std::isinf(value)) {
    *out += value > 0 ? "+Inf" : "-Inf";
    return;
  }
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  if (ec != std::errc()) {
    *out += "NaN";
    return;
  }
  out->append(buffer, end);
}

void EndPage(Format format, std::string* out) {
  if (format == Format::kOpenMetrics) *out += "# EOF\n";
}

void Writer::Family(std::string_view name, Type type, std::string_view help,
                    std::string_view unit) {
  name_ = name;
  family_prefix_ = prefix_;
  std::string_view family = name;
  const std::string_view sample_only = SampleOnlySuffix(type);
  if (format_ == Format::kOpenMetrics && !sample_only.empty() &&
      family.size() > sample_only.size() && EndsWith(family, sample_only))
    family.remove_suffix(sample_only.size());
  std::string& out = *out_;
  out += "# HELP ";
  out += prefix_;
  out += family;
  out += ' ';
  AppendEscaped(out_, help, format_ == Format::kOpenMetrics ? "\\\"\n" : "\\\n");
  out += "\n# TYPE ";
  out += prefix_;
  out += family;
  out += ' ';
  out += TypeName(type, format_);
  out += '\n';
  if (format_ == Format::kOpenMetrics && !unit.empty() && family.size() > unit.size() &&
      EndsWith(family, unit) && family[family.size() - unit.size() - 1] == '_') {
    out += "# UNIT ";
    out += prefix_;
    out += family;
    out += ' ';
    out += unit;
    out += '\n';
  }
}

Writer::Line Writer::Sample(std::string_view suffix) {
  *out_ += family_prefix_;
  *out_ += name_;
  *out_ += suffix;
  return Line(out_, format_);
}

Writer::Line& Writer::Line::Label(std::string_view name, std::string_view value) {
  *out_ += braces_ ? ',' : '{';
  braces_ = true;
  *out_ += name;
  *out_ += "=\"";
  AppendEscapedLabelValue(out_, value);
  *out_ += '"';
  return *this;
}

Writer::Line& Writer::Line::Labels(std::span<const expo::Label> labels) {
  for (const expo::Label& l : labels) Label(l.name, l.value);
  return *this;
}

Writer::Line& Writer::Line::Escaped(std::string_view label_text) {
  if (label_text.empty()) return *this;
  *out_ += braces_ ? ',' : '{';
  braces_ = true;
  *out_ += label_text;
  return *this;
}

void Writer::Line::Value(double value) {
  *out_ += braces_ ? "} " : " ";
  AppendValue(out_, value);
  *out_ += '\n';
}

void Writer::Line::Value(double value, int64_t timestamp_ms) {
  *out_ += braces_ ? "} " : " ";
  AppendValue(out_, value);
  AppendTimestamp(out_, format_, timestamp_ms);
  *out_ += '\n';
}

void Write(std::span<const FamilyData> families, Writer* writer) {
  for (const FamilyData& f : families) {
    if (f.samples.empty()) continue;
    writer->Family(f.name, f.type, f.help, f.unit);
    for (const SampleData& s : f.samples) {
      Writer::Line line = writer->Sample(s.suffix);
      for (const auto& [name, value] : s.labels) line.Label(name, value);
      if (s.timestamp_ms)
        line.Value(s.value, *s.timestamp_ms);
      else
        line.Value(s.value);
    }
  }
}

}  // namespace gw::expo
