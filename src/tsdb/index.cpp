#include "tsdb/index.h"

#include <algorithm>
#include <iterator>

namespace gw::tsdb {
namespace {

void InsertSorted(std::vector<SeriesRef>* list, SeriesRef ref) {
  if (list->empty() || list->back() < ref)
    list->push_back(ref);  // the common case: ids grow
  else
    list->insert(std::lower_bound(list->begin(), list->end(), ref), ref);
}

std::vector<SeriesRef> Intersect(const std::vector<SeriesRef>& a, const std::vector<SeriesRef>& b) {
  std::vector<SeriesRef> out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

}  // namespace

uint64_t HashLabels(const Labels& labels) {
  uint64_t h = 14695981039346656037ULL;
  auto mix = [&h](std::string_view s) {
    for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ULL;
    h = (h ^ 0xff) * 1099511628211ULL;  // separator: no valid UTF-8 byte
  };
  for (const Label& l : labels) mix(l.name), mix(l.value);
  return h;
}

bool LabelsAreValid(const Labels& labels) {
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i].name.empty()) return false;
    if (i > 0 && !(labels[i - 1].name < labels[i].name)) return false;
  }
  return true;
}

void SeriesIndex::Add(SeriesRef ref, const Labels& labels) {
  by_hash_[HashLabels(labels)].push_back(ref);
  labels_.emplace(ref, labels);
  for (const Label& l : labels) InsertSorted(&postings_[l.name][l.value], ref);
  InsertSorted(&all_, ref);
}

SeriesRef SeriesIndex::Find(const Labels& labels) const {
  auto it = by_hash_.find(HashLabels(labels));
  if (it == by_hash_.end()) return 0;
  for (SeriesRef ref : it->second)
    if (labels_.at(ref) == labels) return ref;
  return 0;
}

const Labels* SeriesIndex::LabelsOf(SeriesRef ref) const {
  auto it = labels_.find(ref);
  return it == labels_.end() ? nullptr : &it->second;
}

std::vector<SeriesRef> SeriesIndex::Select(const std::vector<Matcher>& matchers) const {
  // Narrow the candidates with postings where a matcher allows it, then check every matcher on
  // the candidates' full label sets (which also covers `!=`, `!~` and matchers of "").
  bool narrowed = false;
  std::vector<SeriesRef> candidates;
  auto narrow = [&](std::vector<SeriesRef> list) {
    candidates = narrowed ? Intersect(candidates, list) : std::move(list);
    narrowed = true;
  };
  for (const Matcher& m : matchers) {
    if (m.Matches("")) continue;  // series without the label match too: no narrowing
    auto name_it = postings_.find(m.name());
    if (name_it == postings_.end()) return {};
    if (m.type() == MatchType::kEqual) {
      auto value_it = name_it->second.find(m.value());
      if (value_it == name_it->second.end()) return {};
      narrow(value_it->second);
    } else if (m.type() == MatchType::kRegexMatch) {
      std::vector<SeriesRef> merged;
      for (const auto& [value, refs] : name_it->second) {
        if (!m.Matches(value)) continue;
        std::vector<SeriesRef> next;
        std::set_union(merged.begin(), merged.end(), refs.begin(), refs.end(),
                       std::back_inserter(next));
        merged.swap(next);
      }
      narrow(std::move(merged));
    }
    if (narrowed && candidates.empty()) return {};
  }
  const std::vector<SeriesRef>& pool = narrowed ? candidates : all_;
  std::vector<SeriesRef> out;
  for (SeriesRef ref : pool) {
    const Labels& labels = labels_.at(ref);
    bool ok = true;
    for (const Matcher& m : matchers)
      if (!m.Matches(LabelValue(labels, m.name()))) {
        ok = false;
        break;
      }
    if (ok) out.push_back(ref);
  }
  return out;
}

}  // namespace gw::tsdb
