// serve/jobs_series.h — where the task layer's families go: the /metrics page (text 0.0.4 or
// OpenMetrics) and the agent's own store, so that the task-layer rules (deploy/rules/task.yml)
// fire in gpuwarden's rule evaluation as they do in Prometheus.
//
// JobsService walks its families (jobs_metrics.cpp) once per use and hands each header and
// sample to a TaskFamilySink:
//
//   ExpositionSink text(collect::Format::kText, &out);    // RenderMetrics, for /metrics
//   walk(&text);
//
//   TaskSeriesRecorder series(appender);                  // OnSnapshot, for the store
//   series.BeginCycle(t_ms);  walk(&series);  series.EndCycle();  series.Commit();
//
// TaskSeriesRecorder keeps a series reference per series seen (keyed by its name and labels in a
// reused buffer), so that a steady state appends without hashing labels into the store or
// allocating; a series not emitted in a cycle gets a stale marker at that cycle's time (so rules
// and queries stop seeing a job that ended at once) and its reference is forgotten.
//
// Threading: neither sink is synchronised. TaskSeriesRecorder is driven from the store's writer
// thread (the recorder's). Errors from the store are counted (stats()), never thrown.
#ifndef GPUWARDEN_SERVE_JOBS_SERIES_H_
#define GPUWARDEN_SERVE_JOBS_SERIES_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/error.h"
#include "collect/exposition.h"
#include "collect/recorder.h"
#include "expo/expo.h"

namespace gw::serve {

struct TaskLabel {
  std::string_view name, value;
};

class TaskFamilySink {
 public:
  virtual ~TaskFamilySink() = default;
  // A family's header. `name` as its samples are named (counters with _total), `type` "gauge",
  // "counter" or "histogram", `unit` the unit suffix or "".
  virtual void Family(std::string_view name, std::string_view type, std::string_view unit,
                      std::string_view help) = 0;
  // One sample of the family last announced: the series' name (NAME, NAME_bucket, ...), its labels
  // in the order they are written.
  virtual void Sample(std::string_view name, std::span<const TaskLabel> labels, double value) = 0;
};

// Exposition text through expo::Writer, the one writer of every /metrics line (its rules for
// _total, # UNIT and escaping: docs/metrics.md, "Exposition rules"). Family names must stay valid
// until the next Family call (the walkers pass literals).
class ExpositionSink : public TaskFamilySink {
 public:
  ExpositionSink(expo::Format format, std::string* out) : writer_(format, out) {}
  void Family(std::string_view name, std::string_view type, std::string_view unit,
              std::string_view help) override;
  void Sample(std::string_view name, std::span<const TaskLabel> labels, double value) override;

 private:
  expo::Writer writer_;
  size_t family_size_ = 0;
};

struct TaskSeriesStats {
  std::uint64_t samples = 0, stale_markers = 0, errors = 0, series = 0;
};

class TaskSeriesRecorder : public TaskFamilySink {
 public:
  // `appender` must outlive this object.
  explicit TaskSeriesRecorder(tsdb::Appender* appender) : appender_(appender) {}

  void BeginCycle(std::int64_t t_ms);
  void Family(std::string_view, std::string_view, std::string_view, std::string_view) override {}
  void Sample(std::string_view name, std::span<const TaskLabel> labels, double value) override;
  // Stale markers for the series not emitted since BeginCycle.
  void EndCycle();
  // Makes the cycle durable (one WAL write); may do disk I/O, so callers hold no lock a request
  // waits on.
  Status Commit();
  const TaskSeriesStats& stats() const { return stats_; }

 private:
  struct Entry {
    tsdb::Appender::Ref ref = 0;
    std::uint64_t cycle = 0;  // the last cycle that emitted it
  };
  tsdb::Appender* appender_;
  std::unordered_map<std::string, Entry> series_;
  std::string key_;  // reused: name and labels, 0xff-separated
  std::uint64_t cycle_ = 0;
  std::int64_t t_ms_ = 0;
  TaskSeriesStats stats_;
};

}  // namespace gw::serve

#endif  // GPUWARDEN_SERVE_JOBS_SERIES_H_
