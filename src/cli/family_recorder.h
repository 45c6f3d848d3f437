// cli/family_recorder.h — records into the history the families /metrics renders outside the
// collector's snapshot (the task layer's jobs, allocations and queue figures), so that the
// agent's own PromQL API, its rule engine (the pack's task alerts) and dashboards pointed at the
// agent see what a Prometheus scraping /metrics sees.
//
// Usage: after each recorded snapshot (collect::Recorder::SetAfterRecord), call Record(t_ms). It
// renders the families as Prometheus text into a buffer it keeps, appends every sample at t_ms
// through the store's appender and commits. A series recorded last time and absent now gets a
// stale marker at t_ms, as Prometheus writes for a series gone from a scrape (a job that ended).
//
// Threading: Record and the counters are for one thread, the recorder's (the appender's only
// writer). Errors: a sample the store refuses, or text that does not parse, is counted
// (append_errors) and logged once per cycle; the other samples are recorded and the next cycle
// starts afresh.
#ifndef GPUWARDEN_CLI_FAMILY_RECORDER_H_
#define GPUWARDEN_CLI_FAMILY_RECORDER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "base/log.h"
#include "collect/recorder.h"

namespace gw::cli {

class FamilyRecorder {
 public:
  // Appends the families, as Prometheus text 0.0.4 without timestamps, to `out`.
  using Render = std::function<void(std::string* out)>;

  // `appender` and `log` must outlive this object.
  FamilyRecorder(collect::SampleAppender* appender, Render render, Logger* log);
  FamilyRecorder(const FamilyRecorder&) = delete;
  FamilyRecorder& operator=(const FamilyRecorder&) = delete;

  void Record(int64_t t_ms);

  uint64_t samples_appended() const { return samples_appended_; }
  uint64_t append_errors() const { return append_errors_; }
  size_t series() const { return series_.size(); }

 private:
  struct Series {
    collect::SampleAppender::Ref ref = 0;
    uint64_t cycle = 0;  // the last cycle that had a sample of it
  };

  collect::SampleAppender* appender_;
  Render render_;
  Logger* log_;
  std::string text_;  // reused: no allocation per cycle once grown
  // Keyed by the series text as rendered (name{labels}); looked up without copying it.
  std::map<std::string, Series, std::less<>> series_;
  uint64_t cycle_ = 0;
  uint64_t samples_appended_ = 0, append_errors_ = 0;
};

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_FAMILY_RECORDER_H_
