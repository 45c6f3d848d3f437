// OpenMetrics and Prometheus text, as `gpuwarden tsdb import` reads files and the scraper reads
// its targets' pages (both through tsdb::ParseText, then ParseSeries for each new series, as the
// importer and the scraper do). The first byte picks the dialect and how the sink behaves.
#include "fuzz_util.h"
#include "tsdb/openmetrics.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  gw::tsdb::TextOptions options;
  options.timestamps_in_seconds = (mode & 1) != 0;  // import: OpenMetrics; scrape: text 0.0.4
  options.default_t_ms = 1'700'000'000'000;
  const bool stop_early = (mode & 2) != 0;  // a sink that refuses (as the scraper's may)
  size_t samples = 0;
  gw::Status s =
      gw::tsdb::ParseText(gw::fuzz::AsText(data + 1, size - 1), "fuzz.om", options,
                          [&](std::string_view series, int64_t, double) -> gw::Status {
                            gw::tsdb::Labels labels;
                            if (gw::Status ps = gw::tsdb::ParseSeries(series, &labels); !ps.ok()) {
                              if (ps.message().empty())
                                gw::fuzz::Fail("series error without a message");
                              return ps;  // as the scraper and the importer do
                            }
                            for (const gw::tsdb::Label& l : labels) {
                              (void)(l.name == "__name__" ? gw::tsdb::IsValidMetricName(l.value)
                                                          : gw::tsdb::IsValidLabelName(l.name));
                            }
                            if (stop_early && ++samples > 3) return gw::Error{"enough"};
                            return gw::Status::Ok();
                          });
  if (!s.ok() && s.message().empty()) gw::fuzz::Fail("error without a message");
  return 0;
}
