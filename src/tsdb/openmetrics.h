// tsdb/openmetrics.h — reading and writing samples as OpenMetrics / Prometheus text, for
// `gpuwarden tsdb import` and `export` (moving data, feeding benchmarks and the compatibility
// suite with exactly what Prometheus' `promtool tsdb create-blocks-from openmetrics` reads).
//
// Reading is streaming and allocation-light: the callback gets each sample's series text
// (`name{a="b"}`, exactly as written) so the caller can cache series by it, and parses the labels
// with ParseSeries only for series it has not seen.
#ifndef GPUWARDEN_TSDB_OPENMETRICS_H_
#define GPUWARDEN_TSDB_OPENMETRICS_H_

#include <functional>
#include <string>
#include <string_view>

#include "base/error.h"
#include "tsdb/storage.h"

namespace gw::tsdb {

// Called once per sample. Returning a failed Status stops the parse with that error.
using SampleSink = std::function<Status(std::string_view series, int64_t t_ms, double v)>;

struct TextOptions {
  // OpenMetrics timestamps are float seconds; Prometheus text 0.0.4 timestamps are integer
  // milliseconds.
  bool timestamps_in_seconds = true;
  // The time given to samples without a timestamp.
  int64_t default_t_ms = 0;
};

// Parses `text`. Errors read "FILE:LINE: what is wrong" with `file_label` as FILE. Comment lines
// (# TYPE, # HELP, # UNIT) are checked for shape and otherwise skipped; "# EOF" ends the input.
Status ParseText(std::string_view text, const std::string& file_label, const TextOptions& options,
                 const SampleSink& sink);

// Parses a series text as handed to the sink into sorted labels (with __name__).
Status ParseSeries(std::string_view series, Labels* out);

// Appends one series' samples as OpenMetrics sample lines (float-second timestamps).
void AppendOpenMetricsSeries(const SeriesData& series, std::string* out);

}  // namespace gw::tsdb

#endif  // GPUWARDEN_TSDB_OPENMETRICS_H_
