// expo/expo.h — the one writer of metric families: /metrics is written through it, in both formats.
//
// A family is begun with its name, type, help and unit; its samples follow; the next family (or
// the end of the page) ends it. Output is Prometheus text 0.0.4 or OpenMetrics 1.0, chosen by
// `Format`; the rules that differ between the two live only in expo.cpp (docs/metrics.md,
// "Exposition rules"):
//   - names: a family is named as its samples are (`x_total` for a counter, `x_info` for an info
//     family). Text 0.0.4 writes that name in # HELP / # TYPE; OpenMetrics drops `_total` /
//     `_info` from the family name and keeps it on the samples. Info is a gauge in text 0.0.4,
//     unknown is untyped.
//   - # UNIT: OpenMetrics only, and only when the family name ends in `_<unit>`.
//   - # HELP escaping: `\` and newline in both formats, `"` too in OpenMetrics. Label values:
//     `\`, `"` and newline in both.
//   - values: shortest round-trip decimal, `NaN`, `+Inf`, `-Inf`; timestamps (milliseconds) are
//     written as milliseconds in text 0.0.4 and as seconds in OpenMetrics.
//   - `# EOF`: written once by whoever owns the page (EndPage), never by a family's writer.
//
// Streaming (allocation-free: everything is appended to a caller-owned string, which keeps its
// capacity between renders):
//
//   expo::Writer w(format, &out);
//   w.Family("gpuwarden_scrape_errors_total", expo::Type::kCounter, "Failed scrapes.");
//   w.Sample().Label("target", name).Value(errors);
//   w.Family("gpuwarden_scrape_duration_seconds", expo::Type::kGauge, "Scrape time.", "seconds");
//   w.Sample().Label("target", name).Value(seconds);
//   w.Family("x_seconds", expo::Type::kHistogram, "...", "seconds");
//   w.Sample("_bucket").Label("le", "0.5").Value(3);   // suffixes after the family's name
//   ...
//   expo::EndPage(format, &out);                       // the page's owner, once
//
// Families built as data (one part collects them, another exposes them, possibly under a prefix,
// possibly merged with its own) are written with Write: nobody re-parses text.
//
//   std::vector<expo::FamilyData> families = part.Families();
//   w.SetPrefix("gpuwarden_");   // optional; names of families begun from here on
//   expo::Write(families, &w);
//   w.SetPrefix("");
//
// How a part of the agent exposes its families: it offers a function that takes an `expo::Writer*`
// and writes its families into it (never `# EOF`, never a format check of its own); the /metrics
// page (collect::MetricsPage::SetExtra hands a format and the page's string) builds one Writer
// over them and passes it on: `[&](Format f, std::string* out) { expo::Writer w(f, out);
// service.WriteFamilies(&w); }`.
#ifndef GPUWARDEN_EXPO_EXPO_H_
#define GPUWARDEN_EXPO_EXPO_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gw::expo {

enum class Format { kText, kOpenMetrics };

// OpenMetrics when the Accept header asks for application/openmetrics-text, else text 0.0.4.
Format NegotiateFormat(std::string_view accept_header);
// The Content-Type of a page in `format`.
std::string_view ContentType(Format format);

enum class Type { kCounter, kGauge, kHistogram, kSummary, kInfo, kUnknown };

struct Label {
  std::string_view name, value;
};

// Appends `value` escaped for a label value (\\, \", \n).
void AppendEscapedLabelValue(std::string* out, std::string_view value);
// Appends a sample value: shortest round-trip decimal, NaN, +Inf, -Inf.
void AppendValue(std::string* out, double value);
// Appends `# EOF` in OpenMetrics, nothing in text 0.0.4: the last line of a page.
void EndPage(Format format, std::string* out);

class Writer {
 public:
  Writer(Format format, std::string* out) : format_(format), out_(out) {}
  Format format() const { return format_; }

  // Names of the families begun after this call start with `prefix` (which must outlive them).
  void SetPrefix(std::string_view prefix) { prefix_ = prefix; }

  // Begins a family: writes # HELP, # TYPE (and # UNIT). `name` is its samples' name (counters
  // with `_total`, info families with `_info`); it must stay valid until the next Family call.
  // `unit` is a unit suffix such as "seconds", or empty.
  void Family(std::string_view name, Type type, std::string_view help, std::string_view unit = {});

  // One sample line of the current family. Build it with the calls below and finish it with
  // Value (nothing is valid until then):
  //   w.Sample().Label("gpu", "0").Value(1);
  class Line {
   public:
    // One label; `value` is escaped here.
    Line& Label(std::string_view name, std::string_view value);
    Line& Labels(std::span<const expo::Label> labels);
    // Labels already in exposition syntax and escaped: `a="x",b="y"` (empty: nothing).
    Line& Escaped(std::string_view label_text);
    void Value(double value);
    void Value(double value, int64_t timestamp_ms);

   private:
    friend class Writer;
    Line(std::string* out, Format format) : out_(out), format_(format) {}
    std::string* out_;
    Format format_;
    bool braces_ = false;
  };
  // A sample named after the family plus `suffix` (`_bucket`, `_sum`, `_count`, or empty).
  Line Sample(std::string_view suffix = {});
  // Shorthands for the common shapes.
  void Sample(double value) { Sample().Value(value); }
  void Sample(std::span<const expo::Label> labels, double value) {
    Sample().Labels(labels).Value(value);
  }

 private:
  Format format_;
  std::string* out_;
  std::string_view prefix_, family_prefix_, name_;
};

// A family as data, for parts that build their families before someone else writes them.
struct SampleData {
  std::string suffix;  // after the family's name: "", "_bucket", "_sum", "_count"
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0;
  std::optional<int64_t> timestamp_ms;
};
struct FamilyData {
  std::string name;  // as its samples are named (counters with _total)
  Type type = Type::kGauge;
  std::string help, unit;
  std::vector<SampleData> samples;
};

// Writes `families` in order; a family without samples is left out.
void Write(std::span<const FamilyData> families, Writer* writer);

}  // namespace gw::expo

#endif  // GPUWARDEN_EXPO_EXPO_H_
