#include "cli/family_recorder.h"

#include <utility>

#include "tsdb/openmetrics.h"
#include "tsdb/storage.h"

namespace gw::cli {

FamilyRecorder::FamilyRecorder(collect::SampleAppender* appender, Render render, Logger* log)
    : appender_(appender), render_(std::move(render)), log_(log) {}

void FamilyRecorder::Record(int64_t t_ms) {
  ++cycle_;
  text_.clear();
  render_(&text_);
  std::string first_error;
  uint64_t errors = 0;
  auto note = [&](const std::string& what) {
    if (errors++ == 0) first_error = what;
  };
  tsdb::TextOptions options;
  options.timestamps_in_seconds = false;
  options.default_t_ms = t_ms;
  Status parsed = tsdb::ParseText(
      text_, "/metrics", options, [&](std::string_view text, int64_t t, double v) -> Status {
        auto it = series_.find(text);
        if (it == series_.end()) {
          tsdb::Labels labels;
          if (Status s = tsdb::ParseSeries(text, &labels); !s.ok()) {
            note(s.message());
            return Status::Ok();
          }
          auto ref = appender_->GetRef(labels);
          if (!ref.ok()) {
            note(ref.error().message);
            return Status::Ok();
          }
          it = series_.emplace(std::string(text), Series{*ref, 0}).first;
        }
        it->second.cycle = cycle_;
        if (Status s = appender_->Append(it->second.ref, t, v); !s.ok()) {
          note(s.message());
        } else {
          ++samples_appended_;
        }
        return Status::Ok();
      });
  if (!parsed.ok()) note(parsed.message());
  // Series not rendered this cycle have ended: mark them stale once and forget them.
  for (auto it = series_.begin(); it != series_.end();) {
    if (it->second.cycle == cycle_) {
      ++it;
      continue;
    }
    if (Status s = appender_->Append(it->second.ref, t_ms, tsdb::StaleNaN()); !s.ok())
      note(s.message());
    it = series_.erase(it);
  }
  if (Status s = appender_->Commit(); !s.ok()) note(s.message());
  append_errors_ += errors;
  if (errors > 0) {
    log_->Error("store: recording the task layer's families: " + std::to_string(errors) +
                " error(s), the first: " + first_error);
  }
}

}  // namespace gw::cli
