// tsdb/index.h — the series index: label set <-> series id, and label postings.
//
// A series id (`SeriesRef`) is a small positive integer, assigned densely from 1 and stable for the
// life of the data directory (it is the key in the WAL and in SQLite). Postings map each
// (label name, label value) to the sorted ids of the series carrying it, so `=` matchers select
// by list intersection; regex matchers scan the values of their label name.
//
// Not thread-safe: the Head guards it (one writer, readers under a shared lock).
#ifndef GPUWARDEN_TSDB_INDEX_H_
#define GPUWARDEN_TSDB_INDEX_H_

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "tsdb/storage.h"

namespace gw::tsdb {

using SeriesRef = uint64_t;

// A 64-bit hash of a label set (FNV-1a over names and values with separators). Collisions are
// harmless: the index compares full label sets.
uint64_t HashLabels(const Labels& labels);

// True if `labels` is sorted by name with unique, non-empty names.
bool LabelsAreValid(const Labels& labels);

class SeriesIndex {
 public:
  // Adds a series under `ref` (ref > 0, not yet used; labels valid and not yet present).
  void Add(SeriesRef ref, const Labels& labels);
  // The id of the series with exactly these labels, 0 if none.
  SeriesRef Find(const Labels& labels) const;
  // The labels of `ref`, nullptr if unknown. Valid until the index is destroyed.
  const Labels* LabelsOf(SeriesRef ref) const;
  // Ids of every series matching all `matchers` (all series if empty), ascending.
  std::vector<SeriesRef> Select(const std::vector<Matcher>& matchers) const;
  size_t size() const { return labels_.size(); }

 private:
  std::unordered_map<uint64_t, std::vector<SeriesRef>> by_hash_;
  std::unordered_map<SeriesRef, Labels> labels_;
  std::map<std::string, std::map<std::string, std::vector<SeriesRef>>> postings_;
  std::vector<SeriesRef> all_;  // ascending
};

}  // namespace gw::tsdb

#endif  // GPUWARDEN_TSDB_INDEX_H_
