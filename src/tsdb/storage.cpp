#include "tsdb/storage.h"

#include "tsdb/rollup.h"

#include <re2/re2.h>

#include <algorithm>
#include <set>

namespace gw::tsdb {

bool IsValidLabelName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

bool IsValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

std::string_view LabelValue(const Labels& labels, std::string_view name) {
  for (const Label& l : labels)
    if (l.name == name) return l.value;
  return {};
}

Expected<Matcher> Matcher::Make(MatchType type, std::string name, std::string value) {
  Matcher m;
  m.type_ = type;
  m.name_ = std::move(name);
  m.value_ = std::move(value);
  if (type == MatchType::kRegexMatch || type == MatchType::kRegexNoMatch) {
    // Prometheus anchors every label regex: "^(?:" + re + ")$".
    RE2::Options options;
    options.set_log_errors(false);
    options.set_dot_nl(true);
    auto re = std::make_shared<RE2>("^(?:" + m.value_ + ")$", options);
    if (!re->ok()) return Error{"invalid regular expression \"" + m.value_ + "\": " + re->error()};
    m.regex_ = re;
  }
  return m;
}

bool Matcher::Matches(std::string_view value) const {
  switch (type_) {
    case MatchType::kEqual:
      return value == value_;
    case MatchType::kNotEqual:
      return value != value_;
    case MatchType::kRegexMatch:
      return RE2::FullMatch(re2::StringPiece(value.data(), value.size()),
                            *static_cast<const RE2*>(regex_.get()));
    case MatchType::kRegexNoMatch:
      return !RE2::FullMatch(re2::StringPiece(value.data(), value.size()),
                             *static_cast<const RE2*>(regex_.get()));
  }
  return false;
}

namespace {

bool MatchesAll(const Labels& labels, const std::vector<Matcher>& matchers) {
  for (const Matcher& m : matchers)
    if (!m.Matches(LabelValue(labels, m.name()))) return false;
  return true;
}

bool HasSampleIn(const SeriesData& s, int64_t mint, int64_t maxt) {
  auto it = std::lower_bound(s.samples.begin(), s.samples.end(), mint,
                             [](const Sample& a, int64_t t) { return a.t_ms < t; });
  return it != s.samples.end() && it->t_ms <= maxt;
}

bool MatchesAnySet(const Labels& labels, const std::vector<std::vector<Matcher>>& sets) {
  if (sets.empty()) return true;
  for (const auto& set : sets)
    if (MatchesAll(labels, set)) return true;
  return false;
}

}  // namespace

Status MemoryQuerier::Append(const Labels& labels, int64_t t_ms, double v) {
  auto it = std::lower_bound(series_.begin(), series_.end(), labels,
                             [](const SeriesData& s, const Labels& l) { return s.labels < l; });
  if (it == series_.end() || it->labels != labels) it = series_.insert(it, SeriesData{labels, {}});
  if (!it->samples.empty() && it->samples.back().t_ms >= t_ms) return Error{"out of order sample"};
  it->samples.push_back({t_ms, v});
  return Status::Ok();
}

void SeriesRuns::Own(std::vector<Sample> samples) {
  runs.clear();
  owners.clear();
  if (samples.empty()) return;
  auto owned = std::make_shared<const std::vector<Sample>>(std::move(samples));
  runs.emplace_back(owned->data(), owned->size());
  owners.push_back(std::move(owned));
}

Status Querier::SelectRuns(const std::vector<Matcher>& matchers, int64_t mint_ms, int64_t maxt_ms,
                           std::vector<SeriesRuns>* out) {
  out->clear();
  std::vector<SeriesData> data;
  Status st = Select(matchers, mint_ms, maxt_ms, &data);
  if (!st.ok()) return st;
  out->resize(data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    (*out)[i].labels = std::move(data[i].labels);
    (*out)[i].Own(std::move(data[i].samples));
  }
  return Status::Ok();
}

Status Querier::SelectRollups(const std::vector<Matcher>&, int64_t, int64_t,
                              std::vector<SeriesRollups>* out, bool* supported) {
  out->clear();
  *supported = false;
  return Status::Ok();
}

Status MemoryQuerier::SelectRollups(const std::vector<Matcher>& matchers, int64_t mint_ms,
                                    int64_t maxt_ms, std::vector<SeriesRollups>* out,
                                    bool* supported) {
  out->clear();
  *supported = rollups_;
  if (!rollups_) return Status::Ok();
  // The newest window start whose window ends by maxt_ms + 1 (written to avoid overflow).
  const int64_t last_start =
      maxt_ms > INT64_MIN + kRollupWindowMs ? maxt_ms - kRollupWindowMs + 1 : INT64_MIN;
  std::vector<Rollup> all;
  for (const SeriesData& s : series_) {
    if (!MatchesAll(s.labels, matchers)) continue;
    all.clear();
    AddToRollups(s.samples, &all);
    SeriesRollups one{s.labels, {}};
    for (const Rollup& r : all)
      if (r.t_ms >= mint_ms && r.t_ms <= last_start) one.rollups.push_back(r);
    if (!one.rollups.empty()) out->push_back(std::move(one));
  }
  return Status::Ok();
}

Status MemoryQuerier::Select(const std::vector<Matcher>& matchers, int64_t mint_ms, int64_t maxt_ms,
                             std::vector<SeriesData>* out) {
  out->clear();
  for (const SeriesData& s : series_) {
    if (!MatchesAll(s.labels, matchers)) continue;
    SeriesData copy{s.labels, {}};
    for (const Sample& sample : s.samples)
      if (sample.t_ms >= mint_ms && sample.t_ms <= maxt_ms) copy.samples.push_back(sample);
    if (!copy.samples.empty()) out->push_back(std::move(copy));
  }
  return Status::Ok();
}

Status MemoryQuerier::LabelNames(const std::vector<std::vector<Matcher>>& matcher_sets,
                                 int64_t mint_ms, int64_t maxt_ms, std::vector<std::string>* out) {
  std::set<std::string> names;
  for (const SeriesData& s : series_)
    if (MatchesAnySet(s.labels, matcher_sets) && HasSampleIn(s, mint_ms, maxt_ms))
      for (const Label& l : s.labels) names.insert(l.name);
  out->assign(names.begin(), names.end());
  return Status::Ok();
}

Status MemoryQuerier::LabelValues(const std::string& name,
                                  const std::vector<std::vector<Matcher>>& matcher_sets,
                                  int64_t mint_ms, int64_t maxt_ms, std::vector<std::string>* out) {
  std::set<std::string> values;
  for (const SeriesData& s : series_) {
    if (!MatchesAnySet(s.labels, matcher_sets) || !HasSampleIn(s, mint_ms, maxt_ms)) continue;
    std::string_view v = LabelValue(s.labels, name);
    if (!v.empty()) values.emplace(v);
  }
  out->assign(values.begin(), values.end());
  return Status::Ok();
}

}  // namespace gw::tsdb
