#include "serve/jobs_series.h"

#include <algorithm>

#include "tsdb/storage.h"

namespace gw::serve {

namespace {

// Separates the parts of a series key; never part of a valid UTF-8 name or value.
constexpr char kKeySeparator = '\xff';

}  // namespace

namespace {

expo::Type TypeOf(std::string_view type) {
  if (type == "counter") return expo::Type::kCounter;
  if (type == "histogram") return expo::Type::kHistogram;
  if (type == "gauge") return expo::Type::kGauge;
  return expo::Type::kUnknown;
}

}  // namespace

void ExpositionSink::Family(std::string_view name, std::string_view type, std::string_view unit,
                            std::string_view help) {
  family_size_ = name.size();
  writer_.Family(name, TypeOf(type), help, unit);
}

void ExpositionSink::Sample(std::string_view name, std::span<const TaskLabel> labels,
                            double value) {
  // The writer names the sample after its family; what this sample adds is the suffix
  // (_bucket, _sum, _count for a histogram, nothing otherwise).
  expo::Writer::Line line =
      writer_.Sample(name.size() > family_size_ ? name.substr(family_size_) : std::string_view());
  for (const TaskLabel& l : labels) line.Label(l.name, l.value);
  line.Value(value);
}

void TaskSeriesRecorder::BeginCycle(std::int64_t t_ms) {
  ++cycle_;
  t_ms_ = t_ms;
}

void TaskSeriesRecorder::Sample(std::string_view name, std::span<const TaskLabel> labels,
                                double value) {
  key_.clear();
  key_.append(name);
  for (const TaskLabel& l : labels) {
    key_ += kKeySeparator;
    key_.append(l.name);
    key_ += kKeySeparator;
    key_.append(l.value);
  }
  auto it = series_.find(key_);
  if (it == series_.end()) {
    // A new series: the only place labels are built and the store hashes them.
    tsdb::Labels set;
    set.reserve(labels.size() + 1);
    set.push_back({"__name__", std::string(name)});
    for (const TaskLabel& l : labels) set.push_back({std::string(l.name), std::string(l.value)});
    std::sort(set.begin(), set.end());
    auto ref = appender_->GetRef(set);
    if (!ref.ok()) {
      ++stats_.errors;
      return;
    }
    it = series_.emplace(key_, Entry{*ref, 0}).first;
    stats_.series = series_.size();
  }
  if (it->second.cycle == cycle_) return;  // the same series twice in one cycle: keep the first
  it->second.cycle = cycle_;
  if (appender_->Append(it->second.ref, t_ms_, value).ok()) {
    ++stats_.samples;
  } else {
    ++stats_.errors;
  }
}

void TaskSeriesRecorder::EndCycle() {
  for (auto it = series_.begin(); it != series_.end();) {
    if (it->second.cycle == cycle_) {
      ++it;
      continue;
    }
    if (appender_->Append(it->second.ref, t_ms_, tsdb::StaleNaN()).ok()) {
      ++stats_.stale_markers;
    } else {
      ++stats_.errors;
    }
    it = series_.erase(it);
  }
  stats_.series = series_.size();
}

Status TaskSeriesRecorder::Commit() {
  Status s = appender_->Commit();
  if (!s.ok()) ++stats_.errors;
  return s;
}

}  // namespace gw::serve
