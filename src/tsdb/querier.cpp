// DB::NewQuerier: the tsdb::Querier over a DB (head + SQLite), merged per series by DB::ReadSeries.
#include <algorithm>
#include <chrono>
#include <optional>
#include <set>

#include "tsdb/db.h"

namespace gw::tsdb {
namespace {

// One DB::ReadBatch per DB::kReadBatchSeries series read: call Next() before each read.
class ReadBatches {
 public:
  explicit ReadBatches(DB* db) : db_(db) {}
  void Next() {
    if (reads_++ % DB::kReadBatchSeries != 0) return;
    batch_.reset();
    batch_.emplace(db_);
  }

 private:
  DB* db_;
  size_t reads_ = 0;
  std::optional<DB::ReadBatch> batch_;
};

class DBQuerier : public Querier {
 public:
  explicit DBQuerier(DB* db) : db_(db) {}

  Status Select(const std::vector<Matcher>& matchers, int64_t mint_ms, int64_t maxt_ms,
                std::vector<SeriesData>* out) override {
    return Timed([&] {
      return Collect(
          matchers, out,
          [&](SeriesRef ref, SeriesData* sd) {
            return db_->ReadSeriesWithRollups(ref, mint_ms, maxt_ms, &sd->samples);
          },
          [](const SeriesData& sd) { return sd.samples.empty(); });
    });
  }

  Status SelectRuns(const std::vector<Matcher>& matchers, int64_t mint_ms, int64_t maxt_ms,
                    std::vector<SeriesRuns>* out) override {
    return Timed([&] {
      return Collect(
          matchers, out,
          [&](SeriesRef ref, SeriesRuns* sr) {
            return db_->ReadSeriesRunsWithRollups(ref, mint_ms, maxt_ms, sr);
          },
          [](const SeriesRuns& sr) { return sr.runs.empty(); });
    });
  }

  Status SelectRollups(const std::vector<Matcher>& matchers, int64_t mint_ms, int64_t maxt_ms,
                       std::vector<SeriesRollups>* out, bool* supported) override {
    *supported = true;
    return Collect(
        matchers, out,
        [&](SeriesRef ref, SeriesRollups* sr) {
          return db_->ReadCompleteRollups(ref, mint_ms, maxt_ms, &sr->rollups,
                                          &sr->complete_before_ms);
        },
        // Left out: series whose every window of the range is complete and empty.
        [maxt_ms](const SeriesRollups& sr) {
          return sr.rollups.empty() && sr.complete_before_ms > maxt_ms;
        });
  }

  Status LabelNames(const std::vector<std::vector<Matcher>>& matcher_sets, int64_t mint_ms,
                    int64_t maxt_ms, std::vector<std::string>* out) override {
    std::set<std::string> names;
    Status st = ForEachSeries(matcher_sets, mint_ms, maxt_ms, [&](const Labels& labels) {
      for (const Label& l : labels) names.insert(l.name);
    });
    out->assign(names.begin(), names.end());
    return st;
  }

  Status LabelValues(const std::string& name, const std::vector<std::vector<Matcher>>& matcher_sets,
                     int64_t mint_ms, int64_t maxt_ms, std::vector<std::string>* out) override {
    std::set<std::string> values;
    Status st = ForEachSeries(matcher_sets, mint_ms, maxt_ms, [&](const Labels& labels) {
      std::string_view v = LabelValue(labels, name);
      if (!v.empty()) values.emplace(v);
    });
    out->assign(values.begin(), values.end());
    return st;
  }

 private:
  // Runs `select` and counts it in the DB's stats.
  template <class Fn>
  Status Timed(Fn select) {
    const auto start = std::chrono::steady_clock::now();
    Status st = select();
    db_->RecordSelect(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return st;
  }

  // One T per series matching `matchers`, filled by `read(ref, &t)`, in label order; series
  // whose T is `empty` are left out.
  template <class T, class Read, class Empty>
  Status Collect(const std::vector<Matcher>& matchers, std::vector<T>* out, Read read,
                 Empty empty) {
    out->clear();
    ReadBatches batches(db_);
    for (SeriesRef ref : db_->head().Select(matchers)) {
      batches.Next();
      T one;
      if (Status st = read(ref, &one); !st.ok()) return st;
      if (empty(one)) continue;
      one.labels = db_->head().LabelsOf(ref);
      out->push_back(std::move(one));
    }
    std::sort(out->begin(), out->end(), [](const T& a, const T& b) { return a.labels < b.labels; });
    return Status::Ok();
  }

  // Calls `fn` with the labels of every series matching any set (all series when there is no
  // set) that has at least one sample in the range.
  template <class Fn>
  Status ForEachSeries(const std::vector<std::vector<Matcher>>& matcher_sets, int64_t mint_ms,
                       int64_t maxt_ms, Fn fn) {
    std::set<SeriesRef> refs;
    if (matcher_sets.empty()) {
      for (SeriesRef r : db_->head().Select({})) refs.insert(r);
    } else {
      for (const auto& set : matcher_sets)
        for (SeriesRef r : db_->head().Select(set)) refs.insert(r);
    }
    std::vector<Sample> samples;
    ReadBatches batches(db_);
    for (SeriesRef ref : refs) {
      batches.Next();
      Status st = db_->ReadSeries(ref, mint_ms, maxt_ms, &samples);
      if (!st.ok()) return st;
      if (!samples.empty()) fn(db_->head().LabelsOf(ref));
    }
    return Status::Ok();
  }

  DB* db_;
};

}  // namespace

std::unique_ptr<Querier> DB::NewQuerier() {
  return std::make_unique<DBQuerier>(this);
}

}  // namespace gw::tsdb
